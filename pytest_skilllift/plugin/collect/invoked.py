"""The ``invoked`` item of a with-skill run: ``…::with-skill::r<rep>::invoked``.

It passes only when the run's trajectory audit says ``VERIFIED`` (the skill was loaded and,
where it links sub-files, followed into one: the SkillsBench trajectory audit's SB-1), so
``pytest --skill-lift -k invoked`` lists the skills a model never reaches. A ``PARTIAL`` or
``NOT_INVOKED`` run fails with the audit's evidence; a run that did not complete
(``files.COMPLETED``: the skill was not installed, an outage, a timeout, a budget cap) says
nothing about the skill and is skipped with its reason, as it is left out of the audit.

Like a rubric finding, a failed ``invoked`` item is a finding for the scorecard, not a broken
run: the exit status stays 0 when coverage is enough.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from pytest_skilllift.model import RunSpec
from pytest_skilllift.plugin.findings import Finding
from pytest_skilllift.plugin.hookcalls import HookError
from pytest_skilllift.report.terminal_text import terminal_safe
from pytest_skilllift.run.engine import GradedRun, NotStarted
from pytest_skilllift.week.columns import VERIFIED
from pytest_skilllift.week.files import AUDIT_FILE, COMPLETED

if TYPE_CHECKING:
    from pathlib import Path

    from _pytest._code.code import ExceptionInfo, TerminalRepr, TracebackStyle

    from pytest_skilllift.plugin.session import SkillLiftSession

#: The item's name (the last part of its id).
INVOKED = "invoked"


class InvocationFinding(Finding):
    """The skill was installed but not VERIFIED: shown without a traceback."""

    category = "uninvoked"


def invoked_outcome(run_status: str, invocation_status: str) -> tuple[str, str]:
    """``("pass" | "fail" | "skip", why)`` for a with-skill run's ``invoked`` item."""
    if run_status not in COMPLETED:
        return "skip", f"run excluded ({run_status}): it did not complete, so it says nothing "\
            "about reaching the skill"
    if not invocation_status:
        return "skip", "no invocation status recorded for this run"
    if invocation_status == VERIFIED:
        return "pass", VERIFIED
    return "fail", invocation_status


def graded_or_skip(state: SkillLiftSession, run: RunSpec, judge: object,
                   properties: list[tuple[str, object]]) -> GradedRun:
    """The run's result for one of its items; a run the session may not start (the spend
    cap, the circuit breaker: ``NotStarted``) skips the item with the reason and is counted
    as that status — whichever item of the run comes first, rubric or ``invoked``."""
    try:
        return state.result(run, judge)
    except NotStarted as not_started:
        properties.append(("skilllift_run", f"{run.run_id}|{not_started.status}"))
        pytest.skip(terminal_safe(str(not_started)))


def _graded_through(skill_lift_judge: Any) -> None:
    """What an ``invoked`` item "calls": like a rubric item, it takes the ``skill_lift_judge``
    fixture, so whichever item of a run comes first grades it through the same judge."""


class InvokedTest(pytest.Function):
    """Whether the with-skill run reached its skill (trajectory audit ``VERIFIED``)."""

    def __init__(self, *, run: RunSpec, state: SkillLiftSession, **kw: Any) -> None:
        super().__init__(callobj=_graded_through, **kw)
        self.run, self.state = run, state
        self.add_marker(INVOKED)

    def runtest(self) -> None:
        graded = graded_or_skip(self.state, self.run, self.funcargs["skill_lift_judge"],
                                self.user_properties)
        status = "ungraded" if graded.judge_error else graded.status
        self.user_properties.append(("skilllift_run", f"{graded.run_id}|{status}"))
        record = self.state.week.load_run(self.run.run_id) or {}
        outcome, why = invoked_outcome(graded.status, str(record.get("invocation_status", "")))
        if outcome == "skip":
            pytest.skip(terminal_safe(why))
        self.user_properties.append(("invocation", why))
        if outcome == "fail":
            raise InvocationFinding(why, self._evidence())

    def _evidence(self) -> str:
        try:
            data = json.loads((self.state.week.run_dir(self.run.run_id) / AUDIT_FILE)
                              .read_text(encoding="utf-8"))
            return str(data["skill_invocation"]["evidence"])
        except (OSError, ValueError, KeyError, TypeError):
            return ""

    def repr_failure(self, excinfo: ExceptionInfo[BaseException],
                     style: TracebackStyle | None = None) -> str | TerminalRepr:
        if isinstance(excinfo.value, HookError):
            return str(excinfo.value)  # the user's hook, named; our call stack is noise
        if isinstance(excinfo.value, InvocationFinding):
            status, evidence = excinfo.value.args
            lines = [f"{self.run.prompt.family} {status} (not VERIFIED) on "
                     f"{self.run.model_label}, {self.run.condition} r{self.run.rep}"]
            if evidence:
                lines.append(f"  audit: {terminal_safe(evidence)}")
            lines.append(f"  transcript: {self.state.settings.out_dir}/{self.run.run_id}"
                         "/stdout.txt")
            return "\n".join(lines)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.run.prompt.name}::{self.nodeid.split('::', 1)[1]}"
