"""The pytest nodes: a prompt file → model → condition → rep (one run) → rubric items.

Test ids: ``evals/test-prompts/<name>.json::<model>::<condition>::r<rep>::<type>-<i>``, and
``…::with-skill::r<rep>::invoked`` (the trajectory audit: passes only for VERIFIED). The
nesting makes every level addressable by node id and ``-k``, and makes the run the unit that
xdist's ``loadscope`` keeps on one worker (the scope is the id up to the last ``::``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from pytest_skilllift.collect_invoked import INVOKED, InvokedTest
from pytest_skilllift.model import PromptSpec, RubricItem, RunSpec
from pytest_skilllift.run.arms import arm_prompt, skill_families
from pytest_skilllift.run.engine import make_run_id
from pytest_skilllift.run.prompts import PromptError, load_prompt
from pytest_skilllift.week.columns import WITH_ALL, WITH_SKILL
from pytest_skilllift.week.files import OK

if TYPE_CHECKING:
    from _pytest._code.code import ExceptionInfo, TerminalRepr

    from pytest_skilllift.session import SkillLiftSession

SESSION_KEY: pytest.StashKey[SkillLiftSession] = pytest.StashKey()


class RubricFailure(Exception):
    """A must item missing or an avoid item violated: a real finding, shown without traceback."""


class PromptFile(pytest.File):
    """A prompt JSON file: validated on collection, one child per model."""

    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
        state = self.config.stash[SESSION_KEY]
        spec = load_prompt(self.path, state.settings.skills_root, state.settings.site)
        for label, model_id in state.settings.models:
            yield ModelNode.from_parent(self, name=label, spec=spec, model_id=model_id)

    def repr_failure(self, excinfo: ExceptionInfo[BaseException],
                     style: Any = None) -> str | TerminalRepr:
        # A bad prompt file is the user's input, not our bug: name file, field and fix only.
        if isinstance(excinfo.value, PromptError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


class ModelNode(pytest.Collector):
    def __init__(self, *, spec: PromptSpec, model_id: str, **kw: Any) -> None:
        super().__init__(**kw)
        self.spec, self.model_id = spec, model_id

    def collect(self) -> Iterator[pytest.Collector]:
        for condition in self.config.stash[SESSION_KEY].settings.conditions:
            yield ConditionNode.from_parent(self, name=condition, condition=condition)


class ConditionNode(pytest.Collector):
    def __init__(self, *, condition: str, **kw: Any) -> None:
        super().__init__(**kw)
        self.condition = condition

    def collect(self) -> Iterator[pytest.Collector]:
        model = self.parent
        assert isinstance(model, ModelNode)
        state = self.config.stash[SESSION_KEY]
        families = (skill_families(state.settings.skills_root) if self.condition == WITH_ALL
                    else ())
        prompt = arm_prompt(model.spec, self.condition, families)
        for rep in range(1, state.settings.reps + 1):
            run = RunSpec(prompt=prompt, model_label=model.name, model_id=model.model_id,
                          condition=self.condition, rep=rep,
                          run_id=make_run_id(model.spec.name, model.name, self.condition, rep,
                                             state.settings.week))
            yield RunNode.from_parent(self, name=f"r{rep}", run=run)


class RunNode(pytest.Collector):
    """One (prompt, model, condition, rep): generated once, judged once, for all its items."""

    def __init__(self, *, run: RunSpec, **kw: Any) -> None:
        super().__init__(**kw)
        self.run = run

    def collect(self) -> Iterator[pytest.Item]:
        for item in self.run.prompt.rubric:
            yield RubricTest.from_parent(self, name=item.key, run=self.run, item=item)
        if self.run.condition == WITH_SKILL:  # ``-k invoked``: which skills are never reached
            yield InvokedTest.from_parent(self, name=INVOKED, run=self.run,
                                          state=self.config.stash[SESSION_KEY])


class RubricTest(pytest.Item):
    """One rubric item of one run. must missing / avoid violated fail; bonus never fails."""

    def __init__(self, *, run: RunSpec, item: RubricItem, **kw: Any) -> None:
        super().__init__(**kw)
        self.run, self.item = run, item
        self.add_marker(item.type)

    def runtest(self) -> None:
        state = self.config.stash[SESSION_KEY]
        graded = state.weekrun.result(self.run)
        status = "ungraded" if graded.judge_error else graded.status
        self.user_properties.append(("skilllift_run", f"{graded.run_id}|{status}"))
        if graded.status != OK:
            pytest.skip(f"run excluded ({graded.status}): {graded.reason}")
        row = graded.rows.get(self.item.key)
        if row is None:
            why = graded.judge_error or "the judge gave no usable verdict for this item"
            pytest.skip(f"ungraded: {why}")
        verdict, evidence = row["verdict"], row.get("evidence_quote", "")
        self.user_properties += [("verdict", verdict), ("evidence", evidence)]
        if (self.item.type, verdict) in (("must", "missing"), ("avoid", "violated")):
            raise RubricFailure(verdict, evidence)

    def repr_failure(self, excinfo: ExceptionInfo[BaseException],
                     style: Any = None) -> str | TerminalRepr:
        if isinstance(excinfo.value, RubricFailure):
            verdict, evidence = excinfo.value.args
            lines = [f"{self.item.key} {verdict}: {self.item.text}"]
            if evidence:
                lines.append(f"  evidence: \"{evidence}\"")
            lines.append(f"  transcript: {self.config.stash[SESSION_KEY].settings.out_dir}"
                         f"/{self.run.run_id}/stdout.txt")
            return "\n".join(lines)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"{self.run.prompt.name}::{self.nodeid.split('::', 1)[1]}"
