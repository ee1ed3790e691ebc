"""The pytest nodes of a Harbor task: task directory → model → condition → rep → items.

Test ids: ``evals/tasks/<task>::<model>::<condition>::r<rep>::<file>::<test>`` — one item per
verifier test found in the task's ``tests/`` — and ``…::r<rep>::reward`` (the primary reward
against the pass threshold), plus ``…::with-skill::r<rep>::invoked`` as for prompts, and for a
task with a ``rubric.json`` one item per rubric item (``…::r<rep>::must-1``), judged as a
prompt's are (``RubricTest``). A verifier
test that did not pass is a finding (``unmet``), like a missing must item, never a failed
test; a run without a reward (``verifier_error``) skips its items with the cause.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from pytest_skilllift.model import WITH_SKILL, PromptSpec, RunSpec
from pytest_skilllift.plugin.collect.invoked import INVOKED, InvokedTest
from pytest_skilllift.plugin.collect.items import (
    SESSION_KEY,
    ConditionNode,
    ModelNode,
    RubricTest,
    RunNode,
)
from pytest_skilllift.plugin.findings import Finding
from pytest_skilllift.plugin.hookcalls import HookError
from pytest_skilllift.report.terminal_text import terminal_safe
from pytest_skilllift.run.engine import NotStarted
from pytest_skilllift.run.matrix import keywords_of, task_runs
from pytest_skilllift.run.tasks.reader import TaskError, load_task
from pytest_skilllift.run.tasks.record import REWARD_ITEM
from pytest_skilllift.run.tasks.results import PASSED
from pytest_skilllift.week.files import OK

if TYPE_CHECKING:
    from pathlib import Path

    from _pytest._code.code import ExceptionInfo, TerminalRepr, TracebackStyle


class TaskDir(pytest.Directory):
    """A task directory: validated on collection, one child per model. Nothing inside it is
    collected as tests of its own (``tests/`` is the verifier's, run in the container)."""

    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
        state = self.config.stash[SESSION_KEY]
        settings = state.settings
        spec = state.matrix().prompt_at(self.path)
        if spec is None:  # the matrix could not use it: read again so the error is ours
            spec = load_task(self.path, settings.skills_root)
        family, leaf = keywords_of(spec)
        self.extra_keyword_matches.update((family, leaf, spec.name))
        self.add_marker(pytest.mark.skill_lift(family=family, skill=leaf, prompt=spec.name))
        runs = task_runs(spec, settings)
        for label, model_id in settings.models:
            if not any(r.model_label == label for r in runs):
                continue  # a label the narrowing left out
            yield TaskModelNode.from_parent(
                self, name=label, spec=spec, model_id=model_id,
                runs=tuple(r for r in runs if r.model_label == label))

    def repr_failure(self, excinfo: ExceptionInfo[BaseException],
                     style: TracebackStyle | None = None) -> str | TerminalRepr:
        if isinstance(excinfo.value, TaskError):
            return str(excinfo.value)  # the user's input: file, field and fix only
        return super().repr_failure(excinfo)


class TaskModelNode(ModelNode):
    """One model of a task: a child per arm a task runs (``run/tasks/plan.py``)."""

    def collect(self) -> Iterator[pytest.Collector]:
        for condition in dict.fromkeys(r.condition for r in self.runs):
            yield TaskConditionNode.from_parent(
                self, name=condition, condition=condition,
                runs=tuple(r for r in self.runs if r.condition == condition))


class TaskConditionNode(ConditionNode):
    """One arm of a task's model: a child per rep."""

    def collect(self) -> Iterator[pytest.Collector]:
        for run in self.runs:
            yield TaskRunNode.from_parent(self, name=f"r{run.rep}", run=run)


class TaskRunNode(RunNode):
    """One task run: generated once, verified once, for all its items."""

    def collect(self) -> Iterator[pytest.Item]:
        yield from task_items(self, self.run)


def task_items(parent: pytest.Collector, run: RunSpec) -> Iterator[pytest.Item]:
    """A task run's items: its verifier tests, the reward, and ``invoked`` (with-skill)."""
    task = run.prompt.task
    assert task is not None
    for name in (*task.verifier_tests, REWARD_ITEM):
        yield VerifierTest.from_parent(parent, name=name, run=run, item=name)
    for item in run.prompt.rubric:  # rubric.json: graded by the judge, as a prompt's items
        yield RubricTest.from_parent(parent, name=item.key, run=run, item=item)
    if run.condition == WITH_SKILL:
        yield InvokedTest.from_parent(parent, name=INVOKED, run=run,
                                      state=parent.config.stash[SESSION_KEY])


class UnmetTest(Finding):
    """A verifier test that did not pass (or a reward under the threshold): a finding."""

    category = "unmet"


def _graded_through(skill_lift_judge: Any) -> None:
    """What a verifier item "calls": it takes the same fixture as a rubric item so every item
    of a session resolves alike (a task run is never judged: its verifier grades it)."""


class VerifierTest(pytest.Function):
    """One verifier test (or the reward) of one task run."""

    def __init__(self, *, run: RunSpec, item: str, **kw: Any) -> None:
        super().__init__(callobj=_graded_through, **kw)
        self.run, self.item = run, item
        self.graded: Any = None

    def runtest(self) -> None:
        state = self.config.stash[SESSION_KEY]
        try:
            graded = self.graded = state.result(self.run, self.funcargs["skill_lift_judge"])
        except NotStarted as not_started:
            self.user_properties.append(
                ("skilllift_run", f"{self.run.run_id}|{not_started.status}"))
            pytest.skip(str(not_started))
        self.user_properties.append(("skilllift_run", f"{graded.run_id}|{graded.status}"))
        if graded.status != OK:
            pytest.skip(terminal_safe(f"run excluded ({graded.status}): {graded.reason}"))
        row = graded.rows.get(self.item)
        if row is None:
            pytest.skip(f"the verifier's report has no outcome for {self.item}")
        verdict = str(row["verdict"])
        self.user_properties.append(("verdict", verdict))
        if "reward" in row:
            self.user_properties.append(("reward", str(row["reward"])))
        if verdict == "skipped":
            pytest.skip(f"the verifier skipped {self.item}")
        if verdict != PASSED:
            detail = (f"reward {row['reward']:g} under the pass threshold"
                      if "reward" in row else f"verifier test {verdict}")
            raise UnmetTest(detail)

    def repr_failure(self, excinfo: ExceptionInfo[BaseException],
                     style: TracebackStyle | None = None) -> str | TerminalRepr:
        if isinstance(excinfo.value, HookError):
            return str(excinfo.value)
        if isinstance(excinfo.value, UnmetTest):
            out_dir = self.config.stash[SESSION_KEY].settings.out_dir
            return (f"{self.item} unmet: {excinfo.value.args[0]}\n"
                    f"  verifier output: {out_dir}/{self.run.run_id}/verifier/output.txt")
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.run.prompt.name}::{self.nodeid.split('::', 1)[1]}"


def is_task_prompt(spec: PromptSpec) -> bool:
    """Whether ``spec`` is a Harbor task (collected by :class:`TaskDir`)."""
    return spec.task is not None
