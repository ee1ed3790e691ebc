"""The pytest nodes of trigger tests: a trigger file → model → query (→ rep) → one item.

Test ids: ``evals/triggers/<family>.json::<model>::q<i>::trigger`` with one repetition, and
``…::q<i>::r<rep>::trigger`` with ``--skill-lift-reps`` above 1 (every repetition is its own
run and its own item; under xdist the run scheduler leaves these ids to loadscope, whose scope
is the id up to the last ``::``: one run, one worker). The item passes when the skill was
loaded iff the query says it should be; a per-run file lock generates each run once.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from pytest_skilllift.plugin.collect.items import SESSION_KEY
from pytest_skilllift.plugin.findings import Finding
from pytest_skilllift.report.terminal_text import terminal_safe
from pytest_skilllift.run.engine import NotStarted
from pytest_skilllift.run.prompts import PromptError
from pytest_skilllift.run.triggers import (
    TriggerQuery,
    TriggerResult,
    TriggerSet,
    TriggerSpec,
    load_trigger_file,
    skill_families,
)
from pytest_skilllift.week.files import OK, STDOUT_FILE, TRIGGERS_DIR

if TYPE_CHECKING:
    from pathlib import Path

    from _pytest._code.code import ExceptionInfo, TerminalRepr, TracebackStyle

MARKER = "trigger"


class TriggerFailure(Finding):
    """A miss or a false trigger: a finding, shown without a traceback."""

    @property
    def category(self) -> str:
        """``untriggered`` (a should-trigger query missed) or ``misfired``."""
        return "untriggered" if self.args[0].should_trigger else "misfired"


class TriggerFile(pytest.File):
    """A trigger file: validated on collection, one child per model."""

    def collect(self) -> Iterator[pytest.Collector]:
        settings = self.config.stash[SESSION_KEY].settings
        tset = load_trigger_file(self.path, settings.skills_root)
        # `-k <family>` / `-m "skill_lift(family=…)"` select a skill's trigger tests too,
        # whatever the file is named (each query's prompt is ``<file>-q<i>``).
        self.extra_keyword_matches.add(tset.family)
        self.add_marker(pytest.mark.skill_lift(family=tset.family, skill=tset.family))
        siblings = skill_families(settings.skills_root) if settings.triggers_all else ()
        for label, model_id in settings.models:
            yield TriggerModelNode.from_parent(self, name=label, tset=tset, model_id=model_id,
                                               siblings=siblings)

    def repr_failure(self, excinfo: ExceptionInfo[BaseException],
                     style: TracebackStyle | None = None) -> str | TerminalRepr:
        if isinstance(excinfo.value, PromptError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


class TriggerModelNode(pytest.Collector):
    """A trigger set's queries for one model."""
    def __init__(self, *, tset: TriggerSet, model_id: str, siblings: tuple[str, ...],
                 **kw: Any) -> None:
        super().__init__(**kw)
        self.tset, self.model_id, self.siblings = tset, model_id, siblings

    def collect(self) -> Iterator[pytest.Collector]:
        for query in self.tset.queries:
            yield TriggerQueryNode.from_parent(self, name=f"q{query.index}", query=query)


class TriggerQueryNode(pytest.Collector):
    """One query of a trigger set, its reps below."""
    def __init__(self, *, query: TriggerQuery, **kw: Any) -> None:
        super().__init__(**kw)
        self.query = query

    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
        model = self.parent
        assert isinstance(model, TriggerModelNode)
        settings = self.config.stash[SESSION_KEY].settings
        for rep in range(1, settings.reps + 1):
            spec = TriggerSpec(trigger_set=model.tset, query=self.query, model_label=model.name,
                               model_id=model.model_id, rep=rep, week=settings.week,
                               siblings=model.siblings)
            if settings.reps == 1:
                yield TriggerTest.from_parent(self, name=MARKER, spec=spec)
            else:
                yield TriggerRepNode.from_parent(self, name=f"r{rep}", spec=spec)


class TriggerRepNode(pytest.Collector):
    """One repetition of a query (only when reps > 1)."""

    def __init__(self, *, spec: TriggerSpec, **kw: Any) -> None:
        super().__init__(**kw)
        self.spec = spec

    def collect(self) -> Iterator[pytest.Item]:
        yield TriggerTest.from_parent(self, name=MARKER, spec=self.spec)


class TriggerTest(pytest.Item):
    """One trigger run: passes when the skill was invoked iff ``should_trigger``."""

    def __init__(self, *, spec: TriggerSpec, **kw: Any) -> None:
        super().__init__(**kw)
        self.spec = spec
        self.add_marker(MARKER)

    def runtest(self) -> None:
        state = self.config.stash[SESSION_KEY]
        try:
            result = state.triggers.result(self.spec)
        except NotStarted as not_started:  # spend cap, breaker: reported, counted, not a failure
            self.user_properties.append(
                ("skilllift_trigger", f"{self.spec.run_id}|{not_started.status}"))
            pytest.skip(str(not_started))
        self.user_properties.append(("skilllift_trigger", f"{result.run_id}|{result.status}"))
        if result.status != OK:
            pytest.skip(terminal_safe(f"trigger run not measured ({result.status}): "
                                      f"{result.reason}"))
        self.user_properties += [("trigger", result.finding),
                                 ("fired", ",".join(result.fired + result.fired_other))]
        if not result.passed:
            raise TriggerFailure(result)

    def repr_failure(self, excinfo: ExceptionInfo[BaseException],
                     style: TracebackStyle | None = None) -> str | TerminalRepr:
        if isinstance(excinfo.value, TriggerFailure):
            result: TriggerResult = excinfo.value.args[0]
            family = self.spec.family
            fired = ", ".join(result.fired + result.fired_other) or "nothing"
            if result.should_trigger:
                head = f"miss: {family} should have been invoked but was not (fired: {fired})"
            else:
                head = f"false trigger: {family} was invoked but should not be (fired: {fired})"
            out = self.config.stash[SESSION_KEY].settings.out_dir
            return "\n".join([head, f"  query: \"{self.spec.query.query}\"",
                              f"  transcript: {out}/{TRIGGERS_DIR}/{result.run_id}/{STDOUT_FILE}"])
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.spec.prompt_name}::{self.nodeid.split('::', 1)[1]}"
