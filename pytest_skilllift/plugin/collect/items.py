"""The pytest nodes: a prompt file → model → condition → rep (one run) → rubric items.

Test ids: ``evals/test-prompts/<name>.json::<model>::<condition>::r<rep>::<type>-<i>``, and
``…::with-skill::r<rep>::invoked`` (the trajectory audit: passes only for VERIFIED). The
nesting makes every level addressable by node id and ``-k``, and makes the run the unit that
xdist's ``loadscope`` keeps on one worker (the scope is the id up to the last ``::``).
"""

from __future__ import annotations

import types
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

from pytest_skilllift.model import (
    WITH_ALL,
    WITH_SKILL,
    PromptSpec,
    RubricItem,
    RunSpec,
    split_agent,
)
from pytest_skilllift.plugin.collect.invoked import INVOKED, InvokedTest, graded_or_skip
from pytest_skilllift.plugin.findings import Finding
from pytest_skilllift.plugin.hookcalls import HookError
from pytest_skilllift.report.terminal_text import terminal_safe
from pytest_skilllift.run.engine import GradedRun
from pytest_skilllift.run.matrix import keywords_of, prompt_runs
from pytest_skilllift.run.prompt_names import (
    check_unique,
    declared_names,
    file_name_mismatch,
    prompt_files,
)
from pytest_skilllift.run.prompts import PromptError, load_prompt
from pytest_skilllift.run.revisions import settings_revision
from pytest_skilllift.run.triggers import skill_families
from pytest_skilllift.week.columns import ITEM_TYPES
from pytest_skilllift.week.files import OK

if TYPE_CHECKING:
    from _pytest._code.code import ExceptionInfo, TerminalRepr, TracebackStyle

    from pytest_skilllift.plugin.session import SkillLiftSession

SESSION_KEY: pytest.StashKey[SkillLiftSession] = pytest.StashKey()
#: name → files declaring it, over the whole prompts directory (read once per process).
NAMES_KEY: pytest.StashKey[dict[str, list[Path]]] = pytest.StashKey()


class PromptNameWarning(pytest.PytestWarning):
    """A prompt file that loads but looks wrong: its ``name`` differs from its file name, or
    it holds a key no prompt file has (a likely misspelling, named with a "did you mean")."""


def declared_prompt_names(config: pytest.Config) -> dict[str, list[Path]]:
    """Prompt name → the prompt files declaring it (the whole prompts directory)."""
    return _declared_names(config)


def _declared_names(config: pytest.Config) -> dict[str, list[Path]]:
    names = config.stash.get(NAMES_KEY, None)
    if names is None:
        state = config.stash[SESSION_KEY]
        # The session's matrix has read every prompt file's name already.
        names = config.stash[NAMES_KEY] = dict(state.matrix().owners) or declared_names(
            prompt_files(state.settings.prompts_dir, state.settings.heldout))
    return names


class RubricFailure(Finding):
    """A must item missing or an avoid item violated: a real finding, shown without traceback."""

    @property
    def category(self) -> str:
        """The verdict: ``missing`` or ``violated``."""
        return str(self.args[0])  # the verdict: "missing" or "violated"


class SkillLiftHookWarning(pytest.PytestWarning):
    """A ``pytest_skilllift_*`` hook implementation raised (the message names it)."""


#: user_properties key carrying a hook error from the item that triggered it to the
#: controller (through xdist), which names it in the summary and exits 1.
HOOK_ERROR_PROP = "skilllift_hook_error"


def report_hook_errors(item: pytest.Item) -> None:
    """Attach the hook errors raised while this item's run was generated or graded."""
    state = item.config.stash[SESSION_KEY]
    for message in state.drain_hook_errors():
        item.user_properties.append((HOOK_ERROR_PROP, message))
        warnings.warn(SkillLiftHookWarning(message), stacklevel=1)


class PromptFile(pytest.File):
    """A prompt JSON file: validated on collection, one child per model."""

    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
        state = self.config.stash[SESSION_KEY]
        # The session's matrix read and checked the file already (once per process); a file
        # it could not use is read again here, so the error is this node's.
        spec = state.matrix().prompt_at(self.path)
        if spec is None:
            spec = load_prompt(self.path, state.settings.skills_root, state.settings.site)
            check_unique(self.path.resolve(), spec.name, _declared_names(self.config))
        mismatch = file_name_mismatch(self.path, spec.name)
        if mismatch:
            self.warn(PromptNameWarning(mismatch))
        for warning in spec.warnings:  # unknown keys, each with a "did you mean"
            self.warn(PromptNameWarning(warning))
        # `-k <family>` selects the skill, not prompt names that happen to contain it; the
        # marker's arguments match exactly (`-m "skill_lift(family='qdrant-edge')"`).
        family, leaf = keywords_of(spec)
        self.extra_keyword_matches.update((family, leaf))
        self.add_marker(pytest.mark.skill_lift(family=family, skill=leaf, prompt=spec.name))
        yield from model_nodes(self, spec)

    def repr_failure(self, excinfo: ExceptionInfo[BaseException],
                     style: TracebackStyle | None = None) -> str | TerminalRepr:
        # A bad prompt file is the user's input, not our bug: name file, field and fix only.
        if isinstance(excinfo.value, PromptError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


def model_nodes(parent: pytest.Collector, spec: PromptSpec) -> Iterator[ModelNode]:
    """A prompt's children, one per model, holding its runs as ``run.matrix.prompt_runs``
    derives them (the matrix's runs of the prompt, which checks are parametrized over)."""
    state = parent.config.stash[SESSION_KEY]
    settings = state.settings
    revision = settings_revision(settings)
    runs = prompt_runs(spec, settings, revision_root=revision.root if revision else None,
                       families=(skill_families(settings.skills_root)
                                 if WITH_ALL in settings.conditions else ()))
    for label, model_id in settings.models:
        yield ModelNode.from_parent(parent, name=label, spec=spec, model_id=model_id,
                                    runs=tuple(r for r in runs if r.model_label == label))


class ModelNode(pytest.Collector):
    """One model of a prompt (file or eval): a child per condition, its runs given."""

    def __init__(self, *, spec: PromptSpec, model_id: str, runs: tuple[RunSpec, ...],
                 **kw: Any) -> None:
        super().__init__(**kw)
        self.spec, self.model_id, self.runs = spec, model_id, runs
        # `-k codex` selects a label's agent; the marker repeats the prompt's arguments so
        # `-m "skill_lift(family='x', agent='codex')"` matches one marker.
        agent = split_agent(model_id)[0]
        family, leaf = keywords_of(spec)
        self.extra_keyword_matches.add(agent)
        self.add_marker(pytest.mark.skill_lift(family=family, skill=leaf, prompt=spec.name,
                                               agent=agent))

    def collect(self) -> Iterator[pytest.Collector]:
        for condition in self.config.stash[SESSION_KEY].settings.conditions:
            yield ConditionNode.from_parent(
                self, name=condition, condition=condition,
                runs=tuple(r for r in self.runs if r.condition == condition))


class ConditionNode(pytest.Collector):
    """One arm of a model: a child per rep."""

    def __init__(self, *, condition: str, runs: tuple[RunSpec, ...], **kw: Any) -> None:
        super().__init__(**kw)
        self.condition, self.runs = condition, runs

    def collect(self) -> Iterator[pytest.Collector]:
        for run in self.runs:
            yield RunNode.from_parent(self, name=f"r{run.rep}", run=run)


class RunNode(pytest.Collector):
    """One (prompt, model, condition, rep): generated once, judged once, for all its items."""

    def __init__(self, *, run: RunSpec, **kw: Any) -> None:
        super().__init__(**kw)
        self.run = run

    def collect(self) -> Iterator[pytest.Item]:
        # Every rubric item of a prompt file requests the same fixtures from the same place:
        # resolve them once per file, not once per item (thousands in a real week).
        # (The invoked item takes the same one fixture, so it shares them too.)
        prompt_file = self.getparent(PromptFile)
        for item in self.run.prompt.rubric:
            test = RubricTest.from_parent(
                self, name=item.key, run=self.run, item=item,
                fixtureinfo=getattr(prompt_file, "_skilllift_fixtureinfo", None))
            if prompt_file is not None:
                prompt_file._skilllift_fixtureinfo = test._fixtureinfo  # type: ignore[attr-defined]
            yield test
        if self.run.condition == WITH_SKILL:  # ``-k invoked``: which skills are never reached
            yield InvokedTest.from_parent(
                self, name=INVOKED, run=self.run, state=self.config.stash[SESSION_KEY],
                fixtureinfo=getattr(prompt_file, "_skilllift_fixtureinfo", None))


def _graded_through(skill_lift_judge: Any) -> None:
    """What a rubric item "calls": naming the fixture makes pytest resolve it per item, so a
    conftest.py override of ``skill_lift_judge`` grades every rubric item (also under -n).
    ``RubricTest.runtest`` does the work."""


def _marked(item_type: str) -> Callable[..., None]:
    """``_graded_through`` marked with the item's type (``-m must``): pytest reads a test
    function's marks as it makes the item, so a week's ~10^5 rubric items need no
    ``add_marker`` call each."""
    fn = types.FunctionType(_graded_through.__code__, globals(), _graded_through.__name__)
    fn.__doc__ = _graded_through.__doc__
    return cast("Callable[..., None]", getattr(pytest.mark, item_type)(fn))


#: The function each rubric item of a type "calls", with its ``must``/``bonus``/``avoid`` mark.
_GRADED_AS = {t: _marked(t) for t in ITEM_TYPES}


class RubricTest(pytest.Function):
    """One rubric item of one run. must missing / avoid violated fail; bonus never fails.

    A ``pytest.Function`` only so that it takes fixtures: its run is graded through the
    ``skill_lift_judge`` fixture the item receives.
    """

    def __init__(self, *, run: RunSpec, item: RubricItem, **kw: Any) -> None:
        super().__init__(callobj=_GRADED_AS[item.type], **kw)
        self.run, self.item = run, item
        #: The run's result once runtest has it (the progress line reads it).
        self.graded: GradedRun | None = None

    def runtest(self) -> None:
        state = self.config.stash[SESSION_KEY]
        # spend cap, breaker: reported, counted, not a failure
        graded = self.graded = graded_or_skip(state, self.run, self.funcargs["skill_lift_judge"],
                                              self.user_properties)
        status = "ungraded" if graded.judge_error else graded.status
        self.user_properties.append(("skilllift_run", f"{graded.run_id}|{status}"))
        if graded.status != OK:
            pytest.skip(terminal_safe(f"run excluded ({graded.status}): {graded.reason}"))
        row = graded.rows.get(self.item.key)
        if row is None:
            why = graded.judge_error or "the judge gave no usable verdict for this item"
            pytest.skip(terminal_safe(f"ungraded: {why}"))
        verdict, evidence = row["verdict"], row.get("evidence_quote", "")
        self.user_properties += [("verdict", verdict), ("evidence", evidence)]
        if (self.item.type, verdict) in (("must", "missing"), ("avoid", "violated")):
            raise RubricFailure(verdict, evidence)

    def repr_failure(self, excinfo: ExceptionInfo[BaseException],
                     style: TracebackStyle | None = None) -> str | TerminalRepr:
        if isinstance(excinfo.value, HookError):
            return str(excinfo.value)  # the user's hook, named; our call stack is noise
        if isinstance(excinfo.value, RubricFailure):
            verdict, evidence = excinfo.value.args
            # Model text is data: no escape sequence or workflow command reaches the log.
            lines = [f"{self.item.key} {verdict}: {terminal_safe(self.item.text)}"]
            if evidence:
                lines.append(f"  evidence: \"{terminal_safe(evidence)}\"")
            lines.append(f"  transcript: {self.config.stash[SESSION_KEY].settings.out_dir}"
                         f"/{self.run.run_id}/stdout.txt")
            return "\n".join(lines)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.run.prompt.name}::{self.nodeid.split('::', 1)[1]}"
