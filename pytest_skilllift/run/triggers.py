"""Trigger tests: does a skill fire when it should — and stay quiet when it should not?

A trigger file ``evals/triggers/<family>.json`` lists queries, each marked whether the skill
should fire::

    {"skill": "<family>", "queries": [{"query": "...", "should_trigger": true,
                                      "expected_skill": "<family>"}, ...]}

or, in the shape of Anthropic skill-creator's description eval, a bare list of
``{"query", "should_trigger"}`` objects (the family is then the file name).

Each query is run through the real CLI with the family installed exactly as the with-skill
arm installs it (same ``RunSpec``, same runner, same ``AgentConfig`` apart from a small
``--max-turns``), without a judge. The run counts as *triggered* when the transcript audit
(:mod:`pytest_skilllift.trace.audit`) finds the family loaded — through the ``Skill`` tool or a
``Read`` of its files — at any point, also after other tool calls. That is what makes it
measure the real thing: skill-creator's description eval has been reported to register the
description as a command and to count any earlier tool call as "not triggered"
(anthropics/claude-plugins-official#3174, #2066), which pins its recall near 0%.

Trigger runs live in ``<week>/triggers/<run_id>/`` (never in the lift's manifest or scores)
and are tabled in ``<week>/triggers/triggers.csv``. No pytest here.
"""

from __future__ import annotations

import contextlib
import csv
import io
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_skilllift.model import WITH_SKILL, AgentConfig, PromptSpec, RunOutcome, RunSpec
from pytest_skilllift.run.breaker import NOT_RUN_OUTAGE, CircuitBreaker
from pytest_skilllift.run.concurrency import ConcurrencyLimit
from pytest_skilllift.run.engine import NotStarted
from pytest_skilllift.run.prompts import (
    PromptError,
    check_placeholder,
    did_you_mean,
    read_json_file,
)
from pytest_skilllift.runners.base import Runner
from pytest_skilllift.trace import audit
from pytest_skilllift.trace.agent_streams import parse_run
from pytest_skilllift.trace.transcript import (
    CLAUDE_SKILL_ROOT,
    Transcript,
    extract_signals,
)
from pytest_skilllift.week.columns import NOT_INVOKED
from pytest_skilllift.week.files import (
    BUDGET_CAPPED,
    ERRORED,
    INVALID,
    OK,
    RETRY_ON_RERUN,
    RUN_STATUSES,
    STDERR_FILE,
    STDOUT_FILE,
    TIMEOUT,
    TRIGGERS_CSV,
    TRIGGERS_DIR,
    RunStatus,
    atomic_write_text,
)
from pytest_skilllift.week.ledger import Ledger

#: The condition name in trigger run ids (``<family>-q<i>-<model>-trigger-r<rep>-<week>``).
#: A trigger run's ``--max-turns`` is ``--skill-lift-triggers-max-turns`` (default 2: room
#: for one exploring tool call before the skill; the CLI runs the tools of its last allowed
#: turn, so a Skill call in turn 2 still delivers the skill and shows in the transcript).
TRIGGER_CONDITION = "trigger"

#: Result subtypes that end a trigger run normally: an answer, or the planned stop.
CLEAN_ENDS = frozenset({"success", "error_max_turns"})

#: Columns of ``triggers/triggers.csv`` (one row per trigger run).
TRIGGER_COLUMNS: tuple[str, ...] = (
    "family", "trigger_set", "query_index", "query", "should_trigger", "expected_skill",
    "model", "rep",
    "run_id", "run_status", "run_error", "triggered", "fired", "fired_other", "first_tool",
    "tools_before_skill", "discovery_method", "installed", "model_id", "total_cost_usd",
    "num_turns", "result_subtype", "cli_version", "max_turns", "runner", "timestamp",
    "wall_ms", "trigger_file",
)


_ID_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


# -- trigger files -----------------------------------------------------------------------------


@dataclass(frozen=True)
class TriggerQuery:
    """One query of a trigger file; ``index`` is 1-based (the ``q<i>`` of its test id)."""

    index: int
    query: str
    should_trigger: bool
    expected_skill: str | None = None


@dataclass(frozen=True)
class TriggerSet:
    """A validated trigger file."""

    path: Path
    family: str
    queries: tuple[TriggerQuery, ...]


def skill_families(skills_root: Path) -> tuple[str, ...]:
    """Every family under the skills root (a directory holding a ``SKILL.md``), sorted."""
    if not skills_root.is_dir():
        return ()
    return tuple(sorted(p.parent.name for p in skills_root.glob("*/SKILL.md")))


#: The keys of one trigger query.
QUERY_KEYS = ("query", "should_trigger", "expected_skill")


def load_trigger_file(path: Path, skills_root: Path) -> TriggerSet:
    """Read and validate a trigger file; raise ``PromptError`` naming file, field and fix."""
    data = read_json_file(path)
    shape = ('{"skill": "<family>", "queries": [{"query": "…", "should_trigger": true}]} or '
             'a list of {"query", "should_trigger"} objects')
    raw: list[Any]
    if isinstance(data, list):
        family, raw, family_field = path.stem, data, "(file name)"
        prefix = ""
    elif isinstance(data, dict):
        named, listed = data.get("skill"), data.get("queries")
        if not isinstance(named, str) or not named.strip():
            raise PromptError(path, "skill", "is missing or not a non-empty string",
                              'add "skill": "<family>" (a directory under the skills root)')
        if not isinstance(listed, list):
            raise PromptError(path, "queries", "is missing or not a list"
                              + did_you_mean(data, "queries", ("skill", "queries")),
                              'add "queries": [{"query": "…", "should_trigger": true}, …]')
        family, raw, family_field = named.strip(), listed, "skill"
        prefix = "queries"
    else:
        raise PromptError(path, "(file)", f"holds a JSON {type(data).__name__}",
                          f"write {shape}")
    families = set(skill_families(skills_root))
    if family not in families:
        raise PromptError(path, family_field, f"names {family!r}, which is not a skill family "
                          f"under the skills root {skills_root} (no {family}/SKILL.md)",
                          "name an installed family, or set skill_lift_skills to the "
                          "directory that holds the skill families")
    if not raw:
        raise PromptError(path, prefix or "(file)", "holds no query",
                          "add should- and should-not-trigger queries")
    queries: list[TriggerQuery] = []
    for pos, entry in enumerate(raw):
        where = f"{prefix}[{pos}]"
        if not isinstance(entry, dict):
            raise PromptError(path, where, "is not an object",
                              'use {"query": "…", "should_trigger": true|false}')
        query = entry.get("query")
        if not isinstance(query, str) or not query.strip():
            raise PromptError(path, f"{where}.query", "is missing or empty"
                              + did_you_mean(entry, "query", QUERY_KEYS),
                              "write the user message to send")
        check_placeholder(path, f"{where}.query", query)
        should = entry.get("should_trigger")
        if not isinstance(should, bool):
            hint = did_you_mean(entry, "should_trigger", QUERY_KEYS) if should is None else ""
            raise PromptError(path, f"{where}.should_trigger",
                              f"is {should!r}, not true or false{hint}",
                              "write true when the skill should fire for this query, else "
                              "false (a JSON boolean, not a string)")
        expected = entry.get("expected_skill")
        if expected is not None:
            if not isinstance(expected, str) or not expected.strip():
                raise PromptError(path, f"{where}.expected_skill", "is not a non-empty string",
                                  "name the family that should fire, or drop the field")
            expected = expected.strip()
            if expected not in families:
                raise PromptError(path, f"{where}.expected_skill", f"names {expected!r}, "
                                  "which is not a skill family under the skills root",
                                  f"use one of {', '.join(sorted(families))}")
            if should and expected != family:
                raise PromptError(path, f"{where}.expected_skill",
                                  f"is {expected!r} while should_trigger is true for "
                                  f"{family!r}", "set should_trigger to false when another "
                                  "skill should answer this query, or drop expected_skill")
        queries.append(TriggerQuery(pos + 1, query.strip(), should, expected))
    return TriggerSet(path=path, family=family, queries=tuple(queries))


# -- one trigger run ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TriggerSpec:
    """One trigger run: a query of a family under one model, one repetition."""

    trigger_set: TriggerSet
    query: TriggerQuery
    model_label: str
    model_id: str
    rep: int
    week: str
    #: Families installed beside the trigger family (``--skill-lift-triggers-all``).
    siblings: tuple[str, ...] = ()

    @property
    def family(self) -> str:
        """The skill family the trigger set tests."""
        return self.trigger_set.family

    @property
    def set_name(self) -> str:
        """The trigger file's stem: two files may test one family without their run ids
        (``<stem>-q<i>-…``) colliding."""
        return _ID_SAFE.sub("-", self.trigger_set.path.stem).strip("-") or self.family

    @property
    def prompt_name(self) -> str:
        """``<set>-q<index>``: the query's name in the week's tables."""
        return f"{self.set_name}-q{self.query.index}"

    @property
    def run_id(self) -> str:
        """The run's id in the week (its folder name)."""
        return (f"{self.prompt_name}-{self.model_label}-{TRIGGER_CONDITION}-r{self.rep}-"
                f"{self.week}")

    def run_spec(self) -> RunSpec:
        """The with-skill ``RunSpec`` the runner executes: the same install as the lift's
        with-skill arm (whole family at ``~/.claude/skills/<family>/``), the query as the
        prompt, no rubric."""
        prompt = PromptSpec(
            path=self.trigger_set.path, name=self.prompt_name, product_area="",
            prompt=self.query.query, rubric=(), skill_path=f"{self.family}/SKILL.md",
            sibling_families=tuple(f for f in self.siblings if f != self.family))
        return RunSpec(prompt=prompt, model_label=self.model_label, model_id=self.model_id,
                       condition=WITH_SKILL, rep=self.rep, run_id=self.run_id)


@dataclass(frozen=True)
class TriggerResult:
    """What a trigger item needs: status, whether the family fired, and what fired."""

    run_id: str
    status: RunStatus
    reason: str
    triggered: bool
    fired: tuple[str, ...]
    fired_other: tuple[str, ...]
    first_tool: str
    should_trigger: bool
    generated_now: bool = False

    @property
    def passed(self) -> bool:
        """The item's verdict: the skill fired iff it should have."""
        return self.triggered == self.should_trigger

    @property
    def finding(self) -> str:
        """``hit``/``quiet`` when right; ``miss``/``false_trigger`` when wrong."""
        if self.should_trigger:
            return "hit" if self.triggered else "miss"
        return "false_trigger" if self.triggered else "quiet"


def _skill_name(use: Any) -> str:
    return str(use.input.get("skill") or use.input.get("command") or "").lstrip("/").strip()


def _invokes(use: Any, family: str, root: str = CLAUDE_SKILL_ROOT) -> bool:
    """A tool call that loads ``family`` (the audit's criteria, kept for ordering)."""
    if not use.effective:
        return False
    if use.name == "Skill":
        name = _skill_name(use)
        return name == family or name.endswith(":" + family)
    return use.name == "Read" and f"{root}/{family}/" in use.file_path.replace("\\", "/")


def fired_skills(transcript: Transcript, installed: Sequence[str]) -> tuple[
        tuple[str, ...], tuple[str, ...], str, int]:
    """Which installed families the audit finds loaded (in order of first load), which
    other skills (the CLI's built-ins) were launched, the first tool called, and how many
    tool calls came before the first installed skill was loaded."""
    fired = [f for f in installed
             if audit.audit_invocation(transcript, family=f).status != NOT_INVOKED]
    uses = [u for u in transcript.tool_uses if u.parent_tool_use_id is None]
    first_at = {f: next((i for i, u in enumerate(uses)
                         if _invokes(u, f, transcript.skill_root)), len(uses))
                for f in fired}
    fired.sort(key=lambda f: first_at[f])
    other = []
    for u in transcript.calls("Skill"):
        name = _skill_name(u)
        if u.effective and name and not any(_invokes(u, f) for f in installed) \
                and name not in other:
            other.append(name)
    before = min(first_at.values()) if first_at else len(uses)
    return tuple(fired), tuple(other), (uses[0].name if uses else ""), before


def classify_trigger(outcome: RunOutcome, transcript: Transcript, installed: Sequence[str],
                     triggered: bool) -> tuple[RunStatus, str]:
    """A trigger run's status and why it is excluded (empty for ``ok``).

    A load of the skill is decisive however the run ended; "not triggered" is only a
    measurement when the run ended cleanly (an answer, or the planned ``--max-turns`` stop).
    A family the runner refused to install (a symlink leaving it) is invalid, not retried.
    """
    if outcome.invalid_install:
        return INVALID, outcome.error or "invalid install"
    if transcript.init is not None:
        missing = [f for f in installed if f not in transcript.skills_listed]
        if missing:
            return INVALID, ("invalid install: not in the init skill list "
                             f"({', '.join(missing)})")
    if triggered:
        return OK, ""
    if outcome.timed_out:
        return TIMEOUT, outcome.error or "timed out"
    if outcome.error:
        return ERRORED, outcome.error
    if transcript.init is None:
        return ERRORED, "the CLI started no session (no init event in the transcript)"
    res = transcript.result
    if res is None:
        return ERRORED, "the run ended without a result event before the skill was loaded"
    subtype = str(res.get("subtype") or "")
    if subtype == "error_max_budget_usd":
        return BUDGET_CAPPED, "budget-capped before the skill was loaded"
    if subtype not in CLEAN_ENDS or (subtype == "success" and res.get("is_error")):
        return ERRORED, f"CLI exit {outcome.exit_code}, result {subtype or 'missing'}"
    return OK, ""


class TriggerRun:
    """Generates trigger runs into ``<week>/triggers/``, each exactly once.

    ``agent`` is the lift's own ``AgentConfig`` with only ``max_turns`` changed; ``runner``
    builds the same runner the lift uses (local or docker). A rerun reuses a finished run
    unless it errored or timed out, or its query or installed families changed.
    """

    def __init__(self, root: Path, agent: AgentConfig, runner: Callable[[], Runner]) -> None:
        self.week = Ledger(root)
        self.agent = agent
        self._runner_factory = runner
        self._runner: Runner | None = None
        self._cache: dict[str, TriggerResult] = {}
        #: As ``WeekRun.start_gate``: a reason not to start a new trigger run (the spend cap).
        self.start_gate: Callable[[RunSpec], str | None] | None = None
        #: As ``WeekRun.breaker`` (the session shares one between lift and trigger runs: one
        #: API behind both): fed each trigger run's infrastructure cause; once open, no
        #: trigger run starts (``NotStarted``, ``not run: <cause>``).
        self.breaker: CircuitBreaker | None = None
        #: As ``WeekRun.concurrency``: a trigger run's CLI holds a slot of the session's
        #: limit on runs in flight too (one API behind both).
        self.concurrency: ConcurrencyLimit | None = None

    def close(self) -> None:
        """Close the runner, if one was made."""
        if self._runner is not None:
            self._runner.close()

    def result(self, spec: TriggerSpec) -> TriggerResult:
        """The trigger result for ``spec``; generated at most once per week."""
        cached = self._cache.get(spec.run_id)
        if cached is not None:
            return cached
        run = spec.run_spec()
        installed = list(run.prompt.installed_families)
        with self.week.lock(spec.run_id):
            record = self.week.load_run(spec.run_id)
            generated = False
            if record is None or not _reusable(record, spec, installed, self.agent.max_turns):
                why = self.start_gate(run) if self.start_gate is not None else None
                if why:
                    raise NotStarted(why)
                held = self.breaker.reason() if self.breaker is not None else None
                if held:
                    raise NotStarted(held, NOT_RUN_OUTAGE)
                if record is not None:
                    self.week.reset_run(spec.run_id)
                if self._runner is None:
                    self._runner = self._runner_factory()
                run_dir = self.week.run_dir(spec.run_id)
                with (self.concurrency.running(spec.run_id, run_dir / STDOUT_FILE,
                                               run_dir / STDERR_FILE, run.agent)
                      if self.concurrency is not None else contextlib.nullcontext()):
                    outcome = self._runner.run(run, self.agent, run_dir)
                if self.breaker is not None:
                    self.breaker.record(outcome.outage)
                record = self._record(spec, installed, outcome, run_dir / STDOUT_FILE)
                if outcome.outage:
                    record["outage"] = outcome.outage
                self.week.save_run(spec.run_id, record)
                generated = True
        result = result_from_record(record, generated_now=generated)
        self._cache[spec.run_id] = result
        return result

    def _record(self, spec: TriggerSpec, installed: list[str], outcome: RunOutcome,
                transcript_path: Path) -> dict[str, Any]:
        # Claude Code's stream-json, or another agent's stream and listing (docs/agents.md).
        parsed = parse_run(spec.run_spec(), transcript_path, cli_version=outcome.cli_version,
                           skills_root=Path(self.agent.skills_root))
        sig = extract_signals(parsed, family=spec.family, leaf=f"{spec.family}/SKILL.md",
                              site_host=None)
        fired, other, first_tool, before = fired_skills(parsed, installed)
        triggered = spec.family in fired
        status, reason = classify_trigger(outcome, parsed, installed, triggered)
        inv = audit.audit_invocation(parsed, family=spec.family)
        self.week.save_audit(spec.run_id, audit.audit_record(inv))
        return {
            "family": spec.family, "trigger_set": spec.set_name,
            "query_index": spec.query.index, "query": spec.query.query,
            "should_trigger": int(spec.query.should_trigger),
            "expected_skill": spec.query.expected_skill or "",
            "model": spec.model_label, "rep": spec.rep, "run_id": spec.run_id,
            "run_status": status, "run_error": reason,
            "triggered": int(triggered) if status == OK else "",
            "fired": ";".join(fired), "fired_other": ";".join(other),
            "first_tool": first_tool,
            "tools_before_skill": before if fired else "",
            "discovery_method": inv.discovery_method, "installed": ";".join(installed),
            "model_id": spec.model_id,
            "total_cost_usd": "" if sig.total_cost_usd is None else sig.total_cost_usd,
            "num_turns": "" if sig.num_turns is None else sig.num_turns,
            "result_subtype": sig.result_subtype,
            "cli_version": sig.cli_version or outcome.cli_version,
            "max_turns": "" if self.agent.max_turns is None else self.agent.max_turns,
            "runner": outcome.runner, "timestamp": outcome.ended_utc,
            "wall_ms": outcome.wall_ms, "trigger_file": str(spec.trigger_set.path),
        }


def _reusable(record: dict[str, Any], spec: TriggerSpec, installed: list[str],
              max_turns: int | None) -> bool:
    """A finished run answers this spec: same question, same install, same stop."""
    if record.get("run_status") in RETRY_ON_RERUN:
        return False
    same_turns = str(record.get("max_turns", "")) == ("" if max_turns is None else str(max_turns))
    return (record.get("query") == spec.query.query
            and bool(int(record.get("should_trigger", -1))) == spec.query.should_trigger
            and record.get("installed") == ";".join(installed) and same_turns)


def result_from_record(record: dict[str, Any], *, generated_now: bool = False) -> TriggerResult:
    """A ``TriggerResult`` from a persisted run record."""
    def split(key: str) -> tuple[str, ...]:
        return tuple(x for x in str(record.get(key) or "").split(";") if x)

    status = str(record.get("run_status", ERRORED))
    return TriggerResult(
        run_id=str(record.get("run_id", "")),
        status=next((s for s in RUN_STATUSES if s == status), ERRORED),
        reason=str(record.get("run_error") or ""),
        triggered=str(record.get("triggered")) == "1", fired=split("fired"),
        fired_other=split("fired_other"), first_tool=str(record.get("first_tool") or ""),
        should_trigger=str(record.get("should_trigger")) == "1", generated_now=generated_now)


# -- the table -------------------------------------------------------------------------------


def rebuild_trigger_table(week_root: Path) -> int:
    """Regenerate ``<week>/triggers/triggers.csv`` from the trigger run folders.

    Returns the number of rows; writes nothing (and returns 0) when the week has no trigger
    runs. Idempotent, like the lift's CSVs: the run folders are the truth.
    """
    root = Path(week_root) / TRIGGERS_DIR
    records = Ledger(root).run_records() if root.is_dir() else []
    if not records:
        return 0
    records.sort(key=lambda r: (str(r.get("family", "")), str(r.get("trigger_set", "")),
                                int(r.get("query_index", 0)),
                                str(r.get("model", "")), int(r.get("rep", 0))))
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(TRIGGER_COLUMNS), extrasaction="ignore",
                            lineterminator="\n")
    writer.writeheader()
    for rec in records:
        writer.writerow({k: "" if rec.get(k) is None else rec.get(k) for k in TRIGGER_COLUMNS})
    atomic_write_text(root / TRIGGERS_CSV, buf.getvalue())
    return len(records)



