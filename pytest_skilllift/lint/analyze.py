"""One skill in, one report out: sub-checks, findings, composite (and the measured layer).

Shared by ``skilllift score`` / ``compare`` and by ``pytest --skill-lint`` so the three never
disagree about a skill.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_skilllift.lint.antipatterns import detect_anti_patterns, frontmatter_rule_findings
from pytest_skilllift.lint.checks import SubScore, run_checks
from pytest_skilllift.lint.composite import (
    STATIC_TO_DIMENSION,
    Composite,
    compute_composite,
)
from pytest_skilllift.lint.measured import Measured, measured_for_family
from pytest_skilllift.skill.security.findings import security_findings
from pytest_skilllift.skill.skillfile import (
    SKILL_FILENAME,
    Finding,
    SkillFile,
    find_skill_dirs,
    load_skill,
)


class LintUsageError(Exception):
    """The path given cannot be scored at all (missing, not a skill, no skills inside)."""


@dataclass
class SkillReport:
    """Everything the linter knows about one skill."""

    skill: SkillFile
    sub_scores: dict[str, SubScore]
    anti_patterns: list[Finding]
    findings: list[Finding]  # everything else: file, frontmatter-rule and link findings
    static: Composite  # layer 1 alone (its score is the "Layer 1 score" of PluginEval)
    composite: Composite  # all present layers
    measured: Measured | None = None
    week: str | None = None

    @property
    def all_findings(self) -> list[Finding]:
        """Anti-patterns first, then the other findings."""
        return [*self.anti_patterns, *self.findings]

    def to_json(self) -> dict[str, Any]:
        """The per-skill JSON object of ``skilllift score --output json``."""
        static_layer: dict[str, Any] = {
            "layer": "static",
            "score": round(self.static.score / 100.0, 4),
            "penalty": round(self.static.penalty, 4),
            "sub_scores": {k: v.to_json() for k, v in self.sub_scores.items()},
            "anti_patterns": [f.to_json() for f in self.anti_patterns],
            "findings": [f.to_json() for f in self.findings],
        }
        layers: list[dict[str, Any]] = [static_layer]
        if self.week is not None:
            layers.append(
                {
                    "layer": "measured",
                    "week": self.week,
                    "blend_column": "monte_carlo",
                    "detail": None if self.measured is None else self.measured.to_json(),
                    "note": None
                    if self.measured is not None
                    else f"no runs of family {self.skill.family!r} in this week",
                }
            )
        s = self.skill
        return {
            "skill": s.name or s.rel_id,
            "id": s.rel_id,
            "family": s.family,
            "path": str(s.dir),
            "line_count": s.line_count,
            "depth": "quick",
            "composite": self.composite.to_json(),
            "layers": layers,
        }


def analyze(
    skill: SkillFile, week_data: dict[str, Any] | None = None, week: str | None = None
) -> SkillReport:
    """Run every check on a loaded skill; with ``week_data`` add the measured layer."""
    subs = run_checks(skill)
    anti = detect_anti_patterns(skill)
    others = [f for f in skill.findings] + frontmatter_rule_findings(skill)
    others += security_findings(skill)  # never an anti-pattern: no penalty, see findings.py
    others += [f for f in anti if not f.anti_pattern]
    anti = [f for f in anti if f.anti_pattern]
    static_scores: dict[str, dict[str, float]] = {
        STATIC_TO_DIMENSION[name]: {"static": sub.score} for name, sub in subs.items()
    }
    static = compute_composite(static_scores, len(anti))
    measured = None
    layer_scores = {k: dict(v) for k, v in static_scores.items()}
    if week_data is not None:
        measured = measured_for_family(week_data, skill.family)
        if measured is not None:
            for dim, value in measured.layer_scores().items():
                # The measured runs stand in for PluginEval's simulated (Monte Carlo) layer.
                layer_scores.setdefault(dim, {})["measured"] = value
    composite = compute_composite(layer_scores, len(anti)) if measured else static
    return SkillReport(
        skill=skill,
        sub_scores=subs,
        anti_patterns=anti,
        findings=others,
        static=static,
        composite=composite,
        measured=measured,
        week=week,
    )


@dataclass
class ScoreRun:
    """Result of scoring a path: one report per skill plus problems met while walking."""

    root: Path
    single: bool
    reports: list[SkillReport] = field(default_factory=list)
    walk_findings: list[Finding] = field(default_factory=list)


def resolve_skills(path: Path) -> tuple[Path, bool, list[Path], list[Finding]]:
    """``(root, single, skill_dirs, walk_findings)`` for a SKILL.md, a skill dir or a tree."""
    path = Path(path)
    try:
        exists = path.exists()
        is_file = path.is_file()
    except OSError as exc:
        raise LintUsageError(f"{path}: {exc.strerror or exc}") from exc
    if not exists:
        if path.is_symlink():
            raise LintUsageError(f"{path}: broken or looping symlink")
        raise LintUsageError(f"{path}: no such file or directory")
    if is_file:
        if path.name != SKILL_FILENAME:
            raise LintUsageError(f"{path}: expected a SKILL.md, a skill directory or a tree")
        return path.parent, True, [path.parent], []
    if (path / SKILL_FILENAME).exists() or (path / SKILL_FILENAME).is_symlink():
        return path, True, [path], []
    findings: list[Finding] = []
    dirs = find_skill_dirs(path, findings)
    if not dirs:
        raise LintUsageError(f"{path}: no {SKILL_FILENAME} found under it")
    return path, False, dirs, findings


def score_path(
    path: Path, week_data: dict[str, Any] | None = None, week: str | None = None
) -> ScoreRun:
    """Score every skill at ``path``; raises LintUsageError only when nothing is scorable."""
    root, single, dirs, walk = resolve_skills(path)
    run = ScoreRun(root=root, single=single, walk_findings=walk)
    fs_cache: dict[str, bool] = {}  # one run sees one filesystem state
    for d in dirs:
        # root = parent of the top-most SKILL.md: family + cross-refs
        skill = load_skill(d, fs_cache=fs_cache)
        run.reports.append(analyze(skill, week_data, week))
    return run
