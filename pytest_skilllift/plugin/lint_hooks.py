"""``pytest --skill-lint``: every skill is collected, every check is a test.

    pytest --skill-lint                  # the skills root (ini skill_lift_skills, else "skills")
    pytest --skill-lint --skill-lint-path=DIR
    pytest --skill-lint skills/other     # directories holding skills, given as arguments

Test ids: ``<root>/<skill>::<CHECK>``, e.g. ``skills/qdrant-edge::ORPHAN_REFERENCE``. Checks per
skill: PluginEval's six anti-patterns, FRONTMATTER_RULES (Claude Code's and the Agent Skills
specification's frontmatter rules; warnings such as Claude-Code-only keys are pytest warnings,
not failures), SKILL_FILE (unreadable, binary, empty, huge, symlink loops), LINKS (ordinary
dead relative links), SECURITY (the security scan of the skill's files: a critical
finding fails it, the others are pytest warnings; docs/security-scan.md), DEPTH when the ini
``skill_lint_depth`` is standard or deep (the model layers ran, or the test says which did
not) and, when the ini ``skill_lint_threshold`` is set,
COMPOSITE (at the configured depth). A failing check prints its evidence and fix, without a
traceback.

The skills are found from the session (in ``pytest_collection_modifyitems``), not through
``pytest_collect_file``, so they are linted whatever ``testpaths`` or arguments select. This is
the only module of ``lint/`` that imports pytest; all the judging is done by the pure modules.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_skilllift.config import LINT, LintSettings, SettingsError
from pytest_skilllift.plugin.options import add_options, lint_settings_from_pytest

if TYPE_CHECKING:  # the model layers (numpy, scipy, the SDK) load only when a depth test runs
    from _pytest._code.code import TerminalRepr, TracebackStyle

    from pytest_skilllift.lint.analyze import SkillReport
    from pytest_skilllift.lint.depth import DepthContext, DepthReport
    from pytest_skilllift.skill.skillfile import Finding

# The analysis modules (YAML, the checks) are imported only when --skill-lint is on: every
# pytest process loads this plugin, and each module it imports is one more for pytest's
# assertion rewriter to compile in every xdist worker.


def _checks() -> tuple[str, ...]:
    """The checks every skill gets a test for."""
    from pytest_skilllift.lint.antipatterns import (
        ANTI_PATTERN_FLAGS,
        FRONTMATTER_CHECK,
        LINKS_CHECK,
    )
    from pytest_skilllift.skill.security.findings import SECURITY_CHECK

    return (*ANTI_PATTERN_FLAGS, FRONTMATTER_CHECK, "SKILL_FILE", LINKS_CHECK, SECURITY_CHECK)


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--skill-lint`` and its family of ``config.OPTIONS`` (``--skill-lint-path``, the
    ``skill_lint_threshold`` and ``skill_lint_depth`` ini keys)."""
    add_options(parser, LINT)


LINT_KEY: pytest.StashKey[LintSettings] = pytest.StashKey()


def pytest_configure(config: pytest.Config) -> None:
    """Read the settings once; register the marker every lint test carries."""
    config.addinivalue_line("markers", "skill_lint: a static SKILL.md check (pytest --skill-lint)")
    try:
        config.stash[LINT_KEY] = lint_settings_from_pytest(config)
    except SettingsError as exc:
        raise pytest.UsageError(str(exc)) from None


@pytest.hookimpl(tryfirst=True)  # before -k/-m deselection, so those apply to lint tests too
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Append one collector's items per skill to the session's items."""
    settings = config.stash[LINT_KEY]
    if not settings.enabled:
        return
    for root, label in zip(settings.roots, settings.labels, strict=True):
        if not root.is_dir():
            raise pytest.UsageError(
                f"--skill-lint: skills root {root} is not a directory. Name the skills root "
                "with --skill-lint-path=DIR (or the ini skill_lift_skills), or give skills "
                "directories as arguments: pytest --skill-lint skills/other")
        _collect_root(session, items, root, label, settings.threshold, settings.depth)


def _collect_root(session: pytest.Session, items: list[pytest.Item], root: Path, label: str,
                  threshold: float | None, depth: str) -> None:
    """Append one collector's items per skill under ``root``."""
    from pytest_skilllift.skill.skillfile import find_skill_dirs

    walk: list[Finding] = []
    for skill_dir in find_skill_dirs(root, walk):
        rel = skill_dir.relative_to(root).as_posix()
        nodeid = label if rel == "." else f"{label}/{rel}"
        collector = SkillCollector.from_parent(
            session, name=nodeid, path=skill_dir, nodeid=nodeid, threshold=threshold,
            depth=depth,
        )
        # Through the hooks, so the terminal counts these items and a crash would show as a
        # collection error rather than a traceback out of this hook.
        rep = collector.ihook.pytest_make_collect_report(collector=collector)
        collector.ihook.pytest_collectreport(report=rep)
        if rep.passed:
            items.extend(x for x in rep.result if isinstance(x, pytest.Item))
    if walk:
        # Loops and unreadable directories met while looking for skills: one test reports them.
        walker = WalkCollector.from_parent(session, name=label, path=root, nodeid=label)
        items.append(
            SkillCheckItem.from_parent(walker, name="SKILLS_TREE", findings=walk, report=None)
        )


class SkillCollector(pytest.Collector):
    """One skill directory; yields one test per check."""

    def __init__(
        self, *, threshold: float | None = None, depth: str = "quick", **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.threshold = threshold
        self.depth = depth
        self._depth_report: DepthReport | None = None

    def collect(self) -> Iterator[pytest.Item]:
        """Analyse once; every check's item carries its own findings."""
        from pytest_skilllift.lint.analyze import analyze
        from pytest_skilllift.skill.skillfile import load_skill

        report = analyze(load_skill(self.path))
        by_check: dict[str, list[Finding]] = {c: [] for c in _checks()}
        for f in report.all_findings:
            by_check.setdefault(f.check, []).append(f)
        for check, findings in by_check.items():
            yield SkillCheckItem.from_parent(self, name=check, findings=findings, report=report)
        if self.depth != "quick":
            yield DepthItem.from_parent(self, name="DEPTH", findings=[], report=report)
        if self.threshold is not None:
            yield CompositeItem.from_parent(
                self, name="COMPOSITE", report=report, threshold=self.threshold
            )

    def depth_report(self) -> DepthReport:
        """The skill at ``skill_lint_depth``, evaluated once (model layers run here, in a
        test, never at collection)."""
        if self._depth_report is None:
            from pytest_skilllift.lint.depth import evaluate
            from pytest_skilllift.skill.skillfile import load_skill

            ctx = _depth_context(self.config, self.depth)
            self._depth_report = evaluate(load_skill(self.path), ctx)
        return self._depth_report


class WalkCollector(pytest.Collector):
    """Parent of the SKILLS_TREE item (problems met while walking the skills root)."""

    def collect(self) -> Iterator[pytest.Item]:  # pragma: no cover - items are made directly
        return iter(())


class SkillLintWarning(UserWarning):
    """A lint finding that is reported but fails nothing (e.g. Claude-Code-only keys)."""


class SkillLintFailure(Exception):
    """Raised by a lint test; ``repr_failure`` prints ``text`` instead of a traceback."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class SkillCheckItem(pytest.Item):
    """One check of one skill: fails when the check has findings."""

    def __init__(
        self, *, findings: list[Finding], report: SkillReport | None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.findings = findings
        self.report = report
        self.add_marker("skill_lint")

    def runtest(self) -> None:
        """Fail with every error finding's evidence and fix; warnings only warn."""
        for w in self.findings:
            if w.is_warning:
                # Reported in pytest's warnings summary; a warning never fails the check.
                warnings.warn(SkillLintWarning(f"{self.nodeid}: {w.flag}: {w.evidence}"),
                              stacklevel=1)
        errors = [f for f in self.findings if not f.is_warning]
        if not errors:
            return
        # First line = first finding: it is what `-rA`/the short summary shows.
        lines: list[str] = []
        for f in errors:
            lines.append(f"{f.flag}: {f.evidence}")
            lines.append(f"  fix: {f.fix}")
            if f.source:
                lines.append(f"  rule: {f.source}")
        if self.report is not None and any(f.anti_pattern for f in errors):
            c = self.report.composite
            lines.append(
                f"  (anti-pattern penalty x{c.penalty:.2f}; composite {c.score:.1f}, "
                f"grade {c.grade_text()})"
            )
        raise SkillLintFailure("\n".join(lines))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: TracebackStyle | None = None) -> str | TerminalRepr:
        """The finding text alone: a lint failure is not a crash, so no traceback."""
        if isinstance(excinfo.value, SkillLintFailure):
            return excinfo.value.text
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        """Location shown in reports: the skill's SKILL.md."""
        return self.path / "SKILL.md", None, self.nodeid


class CompositeItem(SkillCheckItem):
    """Fails when the skill's composite is under ``skill_lint_threshold``."""

    def __init__(self, *, threshold: float, report: SkillReport, **kwargs: Any) -> None:
        super().__init__(findings=[], report=report, **kwargs)
        self.threshold = threshold

    def runtest(self) -> None:
        """Compare the composite with the threshold; name the weakest dimensions."""
        assert self.report is not None
        c = self.report.composite
        parent = self.parent
        if isinstance(parent, SkillCollector) and parent.depth != "quick":
            c = parent.depth_report().composite  # the composite of every layer that ran
        if c.score >= self.threshold:
            return
        weakest = sorted(c.dimensions.items(), key=lambda kv: kv[1]["score"])[:3]
        dims = ", ".join(f"{k} {v['score']:.2f} ({v['grade']})" for k, v in weakest)
        subs = self.report.sub_scores
        reasons = [f"    {name}: {why}" for name, s in subs.items() for why in s.reasons][:8]
        raise SkillLintFailure(
            "\n".join(
                [
                    f"{self.nodeid}: composite {c.score:.1f} < threshold {self.threshold:g} "
                    f"(grade {c.grade_text()}, {c.anti_pattern_count} anti-pattern(s))",
                    f"  weakest: {dims}",
                    "  what lowered it:",
                    *reasons,
                    "  fix: run `skilllift score <skill>` for the full breakdown",
                ]
            )
        )


class DepthItem(SkillCheckItem):
    """``skill_lint_depth`` above quick: runs the model layers; fails when a layer the depth
    asks for produced no score (the reason is shown), never on the score itself (that is
    COMPOSITE's job with ``skill_lint_threshold``)."""

    def runtest(self) -> None:
        """Evaluate the skill at the configured depth."""
        parent = self.parent
        assert isinstance(parent, SkillCollector)
        r = parent.depth_report()
        unscored = r.unscored_layers()
        if unscored:
            raise SkillLintFailure("\n".join(
                [f"{self.nodeid}: depth {r.depth}: {len(unscored)} layer(s) unscored"]
                + [f"  {u['layer']}: {u['reason']}" for u in unscored]
                + [f"  composite {r.composite.score:.1f} over the layers that ran: "
                   f"{', '.join(r.layers_ran)}"]))


_DEPTH_KEY: pytest.StashKey[DepthContext] = pytest.StashKey()


def _depth_context(config: pytest.Config, depth: str) -> DepthContext:
    """One depth context per process (judge client, spend, store under the rootdir)."""
    ctx = config.stash.get(_DEPTH_KEY, None)
    if ctx is None:
        from pytest_skilllift.lint.depth_context import make_context

        try:
            ctx = make_context(depth, out=config.rootpath / ".skilllift" / "depth",
                               progress=None)
        except ValueError as exc:
            raise SkillLintFailure(f"skill_lint_depth = {depth}: {exc}") from None
        config.stash[_DEPTH_KEY] = ctx
    return ctx


def pytest_unconfigure(config: pytest.Config) -> None:
    """Close the judge client of a depth run."""
    ctx = config.stash.get(_DEPTH_KEY, None)
    if ctx is not None:
        ctx.close()

