"""One run as checks and hooks see it: ``SkillLiftRun``, read from the week directory.

The ``skill_lift_run`` fixture, ``pytest_skilllift_run_finished`` and
``pytest_skilllift_run_graded`` all hand out this object. It is built from the ledger (the
run's ``run.json``, ``grades.json``, ``audit.json`` and transcript), never from a second agent
call, so every process of a session — and a later session — sees the same run. The
transcript is parsed only when ``events``/``transcript``/``signals`` is first read. No pytest.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_skilllift.model import RunSpec, Signals
from pytest_skilllift.trace.agent_streams import parse_run
from pytest_skilllift.trace.transcript import Transcript, extract_signals
from pytest_skilllift.week.files import (
    ARTIFACTS_DIR,
    AUDIT_FILE,
    ERRORED,
    JUDGE_COST_FILE,
    OK,
    STDOUT_FILE,
)
from pytest_skilllift.week.ledger import Ledger

__all__ = ["SkillLiftRun"]


def _num(value: Any) -> float | None:
    try:
        return None if value in (None, "") else float(value)
    except (TypeError, ValueError):
        return None


@dataclass
class SkillLiftRun:
    """One (prompt, model, condition, rep) of the week: its answer, transcript and grades.

    ``status`` is ``ok`` for a run that is scored; anything else (``invalid``, ``errored``,
    ``timeout``, ``budget_capped``, ``no_answer``) is excluded, ``reason`` says why.
    ``grades`` maps a rubric item key (``must-1``…) to its scores.csv row (``verdict``,
    ``evidence_quote``, ``credit``…); it is empty until the run is graded, and
    ``judge_error`` says why when the judge could not grade it.
    """

    spec: RunSpec
    week_dir: Path
    status: str
    reason: str
    record: dict[str, Any] = field(repr=False)
    grades: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)
    judge_error: str | None = None
    site_host: str | None = field(default=None, repr=False)
    #: Where the with-skill arm's families come from: another agent's stream shows a skill
    #: tool's delivered body only as a summary, so its transcript reads the body from here.
    skills_root: Path | None = field(default=None, repr=False)

    def __repr__(self) -> str:
        # What a failing check's assertion shows of the run: which one, not all of it.
        s = self.spec
        return (f"SkillLiftRun({s.prompt.name}::{s.model_label}::{s.condition}::r{s.rep}, "
                f"status={self.status!r})")

    @classmethod
    def load(cls, week: Ledger, spec: RunSpec, *, site_host: str | None = None,
             skills_root: Path | None = None) -> SkillLiftRun:
        """The run as the ledger holds it now (``run.json`` must exist)."""
        record = week.load_run(spec.run_id) or {}
        rows = week.load_grades(spec.run_id) or []
        grades = {f"{r['item_type']}-{r['item_index']}": r for r in rows if r.get("verdict")}
        status = str(record.get("run_status") or ERRORED)
        return cls(spec=spec, week_dir=week.root, status=status,
                   reason=str(record.get("run_error") or ""), record=record, grades=grades,
                   judge_error=week.judge_error(spec.run_id), site_host=site_host,
                   skills_root=skills_root)

    # -- who ------------------------------------------------------------------------------
    @property
    def run_id(self) -> str:
        """The run's id (its folder in the week)."""
        return self.spec.run_id

    @property
    def prompt(self) -> str:
        """The prompt's name (``qdrant-edge``)."""
        return self.spec.prompt.name

    @property
    def prompt_text(self) -> str:
        """The question the model was asked."""
        return self.spec.prompt.prompt

    @property
    def family(self) -> str:
        """The skill family (the installed unit, ``qdrant-scaling``)."""
        return self.spec.prompt.family

    @property
    def leaf(self) -> str:
        """The prompt's target SKILL.md under the skills root."""
        return self.spec.prompt.leaf

    @property
    def model(self) -> str:
        """The model label (``sonnet``)."""
        return self.spec.model_label

    @property
    def condition(self) -> str:
        """``no-skill`` or ``with-skill``."""
        return self.spec.condition

    @property
    def rep(self) -> int:
        """The repetition number."""
        return self.spec.rep

    @property
    def with_skill(self) -> bool:
        """Whether the run's arm installs skills."""
        return self.spec.with_skill

    # -- what happened --------------------------------------------------------------------
    @property
    def excluded(self) -> bool:
        """Not scored (see ``status``/``reason``)."""
        return self.status != OK

    @property
    def final_answer(self) -> str:
        """The agent's final answer ("" when it gave none)."""
        return str(self.record.get("final_answer") or "")

    @property
    def transcript_path(self) -> Path:
        """The stream-json transcript (``<week>/<run_id>/stdout.txt``)."""
        return self.week_dir / self.run_id / STDOUT_FILE

    @functools.cached_property
    def transcript(self) -> Transcript:
        """The parsed transcript: events, tool calls, init and result events — another
        agent's event stream read as the Claude Code events it corresponds to (the engine's
        own reading, ``agent_streams.parse_run``), so its signals match the manifest's."""
        return parse_run(self.spec, self.transcript_path,
                         cli_version=str(self.record.get("cli_version") or ""),
                         skills_root=self.skills_root)

    @property
    def events(self) -> list[dict[str, Any]]:
        """The transcript's events, in order."""
        return self.transcript.events

    @functools.cached_property
    def signals(self) -> Signals:
        """Availability, activation, reached leaf, fetches, cost, turns… (as in the manifest)."""
        return extract_signals(self.transcript, family=self.family, leaf=self.leaf,
                               site_host=self.site_host)

    @property
    def audit_status(self) -> str:
        """Invocation audit of a with-skill run (VERIFIED / PARTIAL / NOT_INVOKED…); ``""``
        for no-skill runs."""
        return str(self.record.get("invocation_status") or "")

    @functools.cached_property
    def audit(self) -> dict[str, Any] | None:
        """The run's ``audit.json`` (with-skill runs), None when absent."""
        try:
            data = json.loads((self.week_dir / self.run_id / AUDIT_FILE).read_text("utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    @property
    def cost_usd(self) -> float | None:
        """What the agent run cost (the CLI's ``total_cost_usd``), None when unknown."""
        return _num(self.record.get("total_cost_usd"))

    @property
    def num_turns(self) -> int | None:
        """The number of turns the CLI reported (None when it did not)."""
        turns = _num(self.record.get("num_turns"))
        return None if turns is None else int(turns)

    @property
    def judge_cost_usd(self) -> float | None:
        """What grading this run cost, None when it is not graded."""
        try:
            return float((self.week_dir / self.run_id / JUDGE_COST_FILE).read_text().strip())
        except (OSError, ValueError):
            return None

    # -- a Harbor task run (run/tasks) ------------------------------------------------------
    @property
    def reward(self) -> float | None:
        """A task run's primary reward from its verifier; None for a prompt run or a run the
        verifier gave none (``verifier_error``)."""
        return _num(self.record.get("reward"))

    @property
    def verifier_tests(self) -> dict[str, str]:
        """A task run's verifier tests → outcome (``passed`` / ``failed`` / ``skipped``)."""
        tests = self.record.get("verifier_tests")
        return {str(k): str(v) for k, v in tests.items()} if isinstance(tests, dict) else {}

    @property
    def artifacts(self) -> dict[str, Path]:
        """A task run's saved work: each file the agent created or changed in the workdir
        (relative path → its copy in the run folder); empty for prompt runs. What the caps
        cut is listed in the run folder's ``task.json``."""
        root = self.week_dir / self.run_id / ARTIFACTS_DIR
        if not root.is_dir():
            return {}
        return {p.relative_to(root).as_posix(): p for p in sorted(root.rglob("*"))
                if p.is_file() and not p.is_symlink()}

    @property
    def verdicts(self) -> dict[str, str]:
        """Item key → verdict (``{"must-1": "met", "avoid-1": "clean"}``)."""
        return {key: str(row["verdict"]) for key, row in self.grades.items()}
