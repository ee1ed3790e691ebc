"""One run, end to end: generate once, extract signals, judge once, persist to the ledger.

``WeekRun.result(spec)`` is what every rubric item of a run asks for; the first caller in any
process does the work under the run's file lock, every later caller (another item, another
xdist worker, a rerun) reads the ledger. No pytest here: the plugin only turns the returned
``GradedRun`` into test outcomes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from pytest_skilllift.judge.protocol import PROMPT_VERSION, Grader
from pytest_skilllift.model import (
    CLAUDE_CODE,
    NO_SKILL,
    AgentConfig,
    JudgeResult,
    RunOutcome,
    RunSpec,
    arm_ref,
)
from pytest_skilllift.run.breaker import NOT_RUN_OUTAGE, CircuitBreaker, judge_cause
from pytest_skilllift.run.ratelimits import count_run, rate_limit_columns
from pytest_skilllift.run.revisions import revision_commit
from pytest_skilllift.run.skill_creator import judge_prompt_text
from pytest_skilllift.runners.base import Runner
from pytest_skilllift.runners.install import install_root
from pytest_skilllift.warm import Warmed
from pytest_skilllift.week.columns import NEEDS_REASON
from pytest_skilllift.week.files import (
    BUDGET_CAPPED,
    COMPLETED,
    DROP_REASONS,
    ERRORED,
    INVALID,
    NO_ANSWER,
    OK,
    RETRY_ON_RERUN,
    STDERR_FILE,
    STDOUT_FILE,
    TIMEOUT,
    TRANSCRIPT_ORDER,
    WRITE_REFUSED,
    RunStatus,
    WeekWriteError,
    update_with_file,
)
from pytest_skilllift.week.ledger import Ledger

if TYPE_CHECKING:
    from pytest_skilllift.run.concurrency import ConcurrencyLimit
    from pytest_skilllift.trace.transcript import Transcript


class BaselineSource(Protocol):
    """Where no-skill runs come from instead of being generated (``run.baseline``'s
    ``BaselineSource``, ``--skill-lift-baseline-from``); a protocol here, so the engine does
    not import the module that imports it."""

    def adopt(self, spec: RunSpec, ledger: Ledger) -> tuple[dict[str, Any] | None, str]:
        """Copy ``spec``'s run in: (its record, "") when copied, else (None, why not)."""
        ...


@dataclass(frozen=True)
class GradedRun:
    """Everything the items of one run need to report their outcome."""

    run_id: str
    status: RunStatus
    reason: str
    #: Score rows keyed by item key (``must-1``…); missing key = ungraded item.
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    judge_error: str | None = None
    generated_now: bool = False
    judged_now: bool = False


class NotStarted(Exception):
    """A run the session may not start (the week's spend cap is reached, or the circuit
    breaker is open); the message is the reason its items report, ``status`` how the session
    counts it. Nothing was written for it: a later session can still run it."""

    def __init__(self, reason: str, status: str = "not_run") -> None:
        super().__init__(reason)
        self.status = status


def make_run_id(prompt: str, label: str, condition: str, rep: int, week: str) -> str:
    """Deterministic per week, so a rerun finds its own runs (qdrant's naming, week-stamped).

    A with-skill@REF condition's REF may hold characters a directory name cannot (a
    directory REF's ``/``): those become ``_``."""
    return f"{prompt}-{label}-{_RUN_ID_UNSAFE.sub('_', condition)}-r{rep}-{week}"


_RUN_ID_UNSAFE = re.compile(r"[^A-Za-z0-9._@~^+=-]")


def skills_sha(skills_root: Path, family: str) -> str:
    """The skills commit (``git rev-parse --short HEAD``), else a content hash of the family;
    a with-skill@REF revision (``run.revisions``) gives the commit it was written from."""
    commit = revision_commit(skills_root)
    if commit:
        return commit[:7]
    try:
        out = subprocess.run(["git", "-C", str(skills_root), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10, check=False)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        pass
    digest = hashlib.sha256()
    base = skills_root / family
    for path in sorted(base.rglob("*")):
        if path.is_symlink():  # hash the link itself: never read a file outside the family
            digest.update(path.relative_to(base).as_posix().encode())
            digest.update(os.readlink(path).encode())
        elif path.is_file():
            digest.update(path.relative_to(base).as_posix().encode())
            with contextlib.suppress(OSError):  # streamed, never the whole file in memory
                update_with_file(digest, path)
    return "tree-" + digest.hexdigest()[:7]


class WeekRun:
    """Generates and grades runs into one week directory, each exactly once."""

    def __init__(self, week: Ledger, agent: AgentConfig, runner: Callable[[], Runner],
                 grader: Callable[[], Grader], *, site: str = "", session_id: str = "",
                 baseline: BaselineSource | None = None) -> None:
        self.week = week
        #: ``--skill-lift-baseline-from``: no-skill runs copied in from an earlier week.
        self.baseline = baseline
        self.agent = agent
        self._runner_factory = runner
        self._runner: Runner | None = None
        self.site = site
        self._cache: dict[str, GradedRun] = {}
        self._sha: dict[tuple[Path, str], str] = {}
        self._grader: Warmed[Grader] = Warmed(grader)
        self._grader.warm("skilllift-judge-warmup")
        #: Asked before a run is generated (never for one already in the week): a reason not
        #: to start it (``week.spend.SpendCap``), or None. ``result`` then raises NotStarted.
        self.start_gate: Callable[[RunSpec], str | None] | None = None
        #: The circuit breaker (``run.breaker``): fed each generated run's infrastructure
        #: cause; once open, no run is started (``NotStarted``, ``not run: <cause>``).
        self.breaker: CircuitBreaker | None = None
        #: The judge's breaker: fed each judge call's infrastructure cause; once open, no
        #: judge call is made (the runs stay ungraded, never scored zero).
        self.judge_breaker: CircuitBreaker | None = None
        #: The session's shared limit on agent runs in flight (``run.concurrency``): each
        #: run's CLI holds a slot while it runs; its rate-limit retries lower the limit.
        self.concurrency: ConcurrencyLimit | None = None
        #: Marks the runs this session generated: another process of the same session (an
        #: xdist worker holding a custom check of the run) must not retry an errored one.
        self.session_id = session_id
        #: Called once per run, under the run's lock, right after it is generated / graded
        #: (the plugin's ``pytest_skilllift_run_finished`` / ``_run_graded`` hooks).
        self.on_generated: Callable[[RunSpec], None] | None = None
        self.on_graded: Callable[[RunSpec, JudgeResult], None] | None = None
        #: A regrade pass (``--skill-lift-fresh``, ``skilllift judge --fresh``): grades not
        #: written by this pass are regraded, once, when their run is asked for — only the
        #: runs the session selects — and replaced only when the new grading succeeds (a
        #: failed regrade keeps the grades already paid for). Empty: grades are kept.
        self.regrade_pass = ""
        #: The first write of the week that failed (full disk, read-only): every later run
        #: of this process raises it again at once instead of being started, paid for and
        #: lost the same way.
        self.write_failed: WeekWriteError | None = None
        self._secrets: list[bytes] | None = None

    def default_grader(self) -> Grader:
        """The configured judge client (built once, warmed ahead of the first run)."""
        return self._grader.get()

    def close(self) -> None:
        """Close the runner, if one was made."""
        if self._runner is not None:
            self._runner.close()

    def result(self, spec: RunSpec, grader: Grader | None = None) -> GradedRun:
        """The graded run for ``spec``; generated and judged at most once per week.

        ``grader`` is what grades it when it still needs a grade (the plugin passes the
        ``skill_lift_judge`` fixture); the configured judge when None.
        """
        cached = self._cache.get(spec.run_id)
        if cached is not None:
            return cached
        with self._writes_checked(), self.week.lock(spec.run_id):
            record, generated = self._ensure_generated(spec)
            graded = self._ensure_graded(spec, record, generated, grader)
        self._cache[spec.run_id] = graded
        return graded

    def generate(self, spec: RunSpec) -> dict[str, Any]:
        """Generate the run unless the week has it, without grading it (batch judging
        generates every run first); returns its record. Raises NotStarted like ``result``."""
        with self._writes_checked(), self.week.lock(spec.run_id):
            record, _ = self._ensure_generated(spec)
        return record

    @contextlib.contextmanager
    def _writes_checked(self) -> Iterator[None]:
        """Raise the week's first write failure again before anything starts; remember one."""
        if self.write_failed is not None:
            raise self.write_failed
        try:
            yield
        except WeekWriteError as exc:
            self.write_failed = exc
            raise

    def grade_generated(self, spec: RunSpec) -> GradedRun:
        """Grade a run that is already generated; never generates (``skilllift judge``)."""
        with self.week.lock(spec.run_id):
            record = self.week.load_run(spec.run_id)
            if record is None:
                return GradedRun(run_id=spec.run_id, status=ERRORED, reason="not generated")
            graded = self._ensure_graded(spec, record, False)
        self._cache[spec.run_id] = graded
        return graded

    # -- generation ---------------------------------------------------------------------
    def _ensure_generated(self, spec: RunSpec) -> tuple[dict[str, Any], bool]:
        record = self.week.load_run(spec.run_id)
        if record is not None and (record.get("run_status") not in RETRY_ON_RERUN or (
                self.session_id and record.get("session_id") == self.session_id)):
            return record, False
        if self.start_gate is not None:
            why = self.start_gate(spec)
            if why:
                raise NotStarted(why)
        if self.breaker is not None:
            why = self.breaker.reason()
            if why:
                raise NotStarted(why, NOT_RUN_OUTAGE)
        run_dir = self.week.run_dir(spec.run_id)
        # Whatever is left (a retried run's files, or grades beside a run.json that no longer
        # reads) belongs to an answer that is about to be replaced: the new one is regraded.
        self.week.reset_run(spec.run_id)
        reuse_reason = None
        if self.baseline is not None and (spec.condition == NO_SKILL
                                          or arm_ref(spec.condition) is not None):
            adopted, reuse_reason = self.baseline.adopt(spec, self.week)
            if adopted is not None:
                return adopted, False
        if self._runner is None:
            self._runner = self._runner_factory()
        try:
            with self._slot(spec, run_dir):
                outcome = self._runner.run(spec, self.agent, run_dir)
        except KeyboardInterrupt:
            # Interrupted mid-run: its partial transcript goes, nothing is recorded, so the
            # next session generates it (once) — neither finished nor a final error.
            with contextlib.suppress(OSError):
                self.week.reset_run(spec.run_id)
            raise
        except OSError as exc:  # the runner writes the transcript into the week
            if exc.errno in WRITE_REFUSED:
                raise WeekWriteError(run_dir, exc) from None
            raise
        if self.breaker is not None:
            self.breaker.record(outcome.outage)
        record = self._record(spec, outcome, run_dir / STDOUT_FILE)
        if spec.prompt.task is not None:  # the verifier's reward decides what the run is
            from pytest_skilllift.run.tasks.record import apply_verifier

            record = apply_verifier(spec, record, run_dir)
        if outcome.outage:
            record["outage"] = outcome.outage
        if reuse_reason is not None:
            record["baseline_reason"] = reuse_reason  # generated: why it was not reused
        if self.session_id:
            record["session_id"] = self.session_id
        self.week.save_run(spec.run_id, self._redacted(record))
        if self.on_generated is not None:
            self.on_generated(spec)
        return record, True

    def _slot(self, spec: RunSpec, run_dir: Path) -> contextlib.AbstractContextManager[Any]:
        """The run's slot under the session's concurrency limit (none without a limit)."""
        if self.concurrency is None:
            return contextlib.nullcontext()
        return self.concurrency.running(spec.run_id, run_dir / STDOUT_FILE,
                                        run_dir / STDERR_FILE, spec.agent)

    def _record(self, spec: RunSpec, outcome: RunOutcome, transcript: Path) -> dict[str, Any]:
        from pytest_skilllift.trace import audit
        from pytest_skilllift.trace.transcript import extract_signals

        parsed = self._parse(spec, outcome, transcript)
        sig = extract_signals(parsed, family=spec.prompt.family, leaf=spec.prompt.leaf,
                              site_host=self._site_host(spec))
        if sig.duration_ms is None and spec.agent != CLAUDE_CODE:
            sig = dataclasses.replace(sig, duration_ms=outcome.wall_ms)  # Codex: not reported
        status, reason = classify(spec, outcome, sig.skill_available, sig.budget_hit,
                                  sig.is_error, sig.final_answer, sig.result_subtype,
                                  init_seen=parsed.init is not None)
        family = spec.prompt.family
        root = install_root(spec.prompt, self.agent.skills_root)
        if (root, family) not in self._sha:
            self._sha[root, family] = skills_sha(root, family)
        inv = None
        if spec.with_skill and status in COMPLETED:
            inv = audit.audit_invocation(parsed, family=family)
            self.week.save_audit(spec.run_id, audit.audit_record(inv))
        elif spec.with_skill:
            # A run that never completed says nothing about triggering: excluded, named.
            self.week.save_audit(spec.run_id, audit.excluded_record(status, reason))
        return {
            "prompt": spec.prompt.name, "skill_family": family, "skill_leaf": spec.prompt.leaf,
            "model": spec.model_label, "condition": spec.condition, "rep": spec.rep,
            "run_id": spec.run_id,
            "exit_code": "" if outcome.exit_code is None else outcome.exit_code,
            "skills_sha": self._sha[root, family], "timestamp": outcome.ended_utc,
            "skill_available": int(sig.skill_available),
            "skill_activation": sig.skill_activation, "reached_leaf": int(sig.reached_leaf),
            "fetched_site": int(sig.fetched_site), "fetched_count": sig.fetched_count,
            "model_snapshot": sig.model_snapshot,
            "cli_version": sig.cli_version or outcome.cli_version,
            "total_cost_usd": "" if sig.total_cost_usd is None else sig.total_cost_usd,
            "num_turns": "" if sig.num_turns is None else sig.num_turns,
            "result_subtype": sig.result_subtype, "budget_hit": int(sig.budget_hit),
            "signals_ok": int(sig.signals_ok),
            "duration_ms": "" if sig.duration_ms is None else sig.duration_ms,
            "run_status": status, "run_error": reason, "runner": outcome.runner,
            "model_id": spec.model_id, "started_utc": outcome.started_utc,
            "ended_utc": outcome.ended_utc, "wall_ms": outcome.wall_ms,
            "invocation_status": inv.status if inv else "",
            "top_level_only": "" if inv is None else int(inv.top_level_only),
            "permission_denials": sig.permission_denials,
            **rate_limit_columns(count_run(transcript, transcript.parent / STDERR_FILE,
                                           spec.agent)),
            "prompt_path": str(spec.prompt.path),
            "final_answer": sig.final_answer,
        }

    def _parse(self, spec: RunSpec, outcome: RunOutcome, transcript: Path) -> Transcript:
        """The run's transcript: Claude Code's stream-json, or another agent's event stream
        with its skill listing (``trace/agent_streams.py``)."""
        from pytest_skilllift.trace.agent_streams import parse_run

        # The families' own root (a task's environment/skills, a with-skill@REF revision):
        # a skill tool whose stream shows a summary is read from the body installed.
        return parse_run(spec, transcript, cli_version=outcome.cli_version,
                         skills_root=install_root(spec.prompt, Path(self.agent.skills_root)))

    def _redacted(self, record: dict[str, Any]) -> dict[str, Any]:
        """The record with the run environment's secrets and URL credentials redacted (a
        runner's error or the CLI's answer may quote ``ANTHROPIC_BASE_URL``)."""
        from pytest_skilllift.runners.redaction import redact_value

        out = redact_value(record, self._secret_values())
        assert isinstance(out, dict)
        return out

    def _redacted_text(self, text: str) -> str:
        from pytest_skilllift.runners.redaction import redact_text

        return redact_text(text, self._secret_values())

    def _secret_values(self) -> list[bytes]:
        from pytest_skilllift.agents.claude_code import build_env
        from pytest_skilllift.runners.redaction import secret_values

        if self._secrets is None:
            self._secrets = secret_values(build_env(self.agent, ""))
        return self._secrets

    def _site_host(self, spec: RunSpec) -> str | None:
        url = self.site or spec.prompt.skill_url
        return urlsplit(url).hostname if url else None

    # -- judging ------------------------------------------------------------------------
    def _ensure_graded(self, spec: RunSpec, record: dict[str, Any],
                       generated: bool, grader: Grader | None = None) -> GradedRun:
        status = record.get("run_status", ERRORED)
        base = {"run_id": spec.run_id, "status": status, "generated_now": generated}
        if status != OK:
            return GradedRun(reason=record.get("run_error") or DROP_REASONS.get(status, status),
                             **base)
        if spec.prompt.task is not None:  # graded by its verifier (and a rubric's judge)
            return self._task_graded(spec, record, grader, base)
        # skill-creator evals: expected_output reaches the judge as context, not an item.
        return self._judged(spec, judge_prompt_text(spec.prompt),
                            record.get("final_answer", ""), grader, base)

    def _task_graded(self, spec: RunSpec, record: dict[str, Any], grader: Grader | None,
                     base: dict[str, Any]) -> GradedRun:
        """A rewarded task run: its verifier's rows, plus — when the task carries a rubric —
        the judge's over the instruction, the final message and the changed files' text
        (``run/tasks/rubric.py``), keyed as a prompt's items are (``must-1``…)."""
        from pytest_skilllift.run.tasks.record import verifier_rows

        rows = verifier_rows(spec, record)
        if not spec.prompt.rubric:
            return GradedRun(reason="", rows=rows, **base)
        from pytest_skilllift.run.tasks.rubric import judge_view

        view = judge_view(str(record.get("final_answer", "")),
                          self.week.run_dir(spec.run_id))
        judged = self._judged(spec, spec.prompt.prompt, view.text, grader, base,
                              meta={"judge_files": view.meta()})
        return dataclasses.replace(judged, rows={**rows, **judged.rows})

    def _judged(self, spec: RunSpec, prompt_text: str, answer: str, grader: Grader | None,
                base: dict[str, Any], meta: dict[str, Any] | None = None) -> GradedRun:
        """The run's rubric rows: from its grades when they stand, else from one judge call
        (``answer``: the text the judge grades and checks every evidence quote against)."""
        grading = self.week.load_grading(spec.run_id)
        rows = None if grading is None else list(grading["rows"])
        judged = False
        if self._stale(grading):
            held = self.judge_breaker.open_cause() if self.judge_breaker else None
            if held:
                return GradedRun(reason=f"{DROP_REASONS[OK]}: judge not called",
                                 judge_error=f"not graded: {held}", **base)
            grader = grader if grader is not None else self._grader.get()
            started = time.monotonic()
            result = grader.grade(prompt_text, answer, spec.prompt.rubric, spec.run_id)
            judge_ms = int((time.monotonic() - started) * 1000)
            if self.judge_breaker is not None:
                self.judge_breaker.record(judge_cause(result.error or ""))
            if result.error is not None and rows is not None:
                # A regrade that failed: the earlier grades stay (they were paid for).
                return GradedRun(reason="", rows=_by_key(rows),
                                 judge_error=f"regrade failed ({result.error}); the earlier "
                                             "grades are kept", **base)
            if result.error is not None:
                self.week.save_judge_error(spec.run_id, self._redacted_text(result.error))
                return GradedRun(reason=f"{DROP_REASONS[OK]}: judge failed",
                                 judge_error=result.error,
                                 **base)
            rows = score_rows(spec, result)
            meta = {**(meta or {}), **judge_meta(result),
                    **(getattr(grader, "provenance", None) or {})}
            if self.regrade_pass:
                meta["regrade_pass"] = self.regrade_pass
            self.week.save_grades(spec.run_id, rows, result.model, result.cost_usd, judge_ms,
                                  meta=meta)
            judged = True
            if self.on_graded is not None:
                self.on_graded(spec, result)
        return GradedRun(reason="", rows=_by_key(rows or []), judged_now=judged, **base)

    def _stale(self, grading: dict[str, Any] | None) -> bool:
        """Whether a run's grades must be (re)made: none yet, or a regrade pass is on and
        they are not its own."""
        if grading is None:
            return True
        return bool(self.regrade_pass) and grading.get("regrade_pass") != self.regrade_pass

    def needs_grade(self, run_id: str) -> bool:
        """Whether grading ``run_id`` now would call the judge (batch judging asks)."""
        return self._stale(self.week.load_grading(run_id))


def _by_key(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Score rows with a verdict, keyed by item key (``must-1``…)."""
    return {f"{r['item_type']}-{r['item_index']}": r for r in rows if r.get("verdict")}


def classify(spec: RunSpec, outcome: RunOutcome, available: bool, budget_hit: bool,
             is_error: bool, answer: str, subtype: str, *,
             init_seen: bool = True) -> tuple[RunStatus, str]:
    """A run's status and the reason it is dropped (empty for ``ok``).

    A run that left no transcript to read is classified by the harness (timed out, a skill
    family the runner refused to install, or a harness error such as a failed spawn);
    otherwise the first status of ``files.TRANSCRIPT_ORDER`` that applies wins.

    ``init_seen``: the transcript has the CLI's init event. Without it the CLI failed before
    listing its skills, so "skill not in the init skill list" cannot be concluded: the run is
    ``errored`` (retried on rerun, like its no-skill twin), never ``invalid``.
    """
    if outcome.timed_out:
        return TIMEOUT, outcome.error or DROP_REASONS[TIMEOUT]
    if outcome.invalid_install:
        return INVALID, outcome.error or DROP_REASONS[INVALID]
    if outcome.error:
        return ERRORED, outcome.error
    no_init = (f"the CLI ended before its init event (exit {outcome.exit_code}); "
               f"see {STDERR_FILE}")
    applies: dict[RunStatus, str | None] = {
        INVALID: (DROP_REASONS[INVALID] + f" ({spec.prompt.family})"
                  if init_seen and spec.with_skill and not available else None),
        BUDGET_CAPPED: DROP_REASONS[BUDGET_CAPPED] if budget_hit else None,
        ERRORED: (no_init if not init_seen
                  else f"CLI exit {outcome.exit_code}, result {subtype or 'missing'}"
                  if outcome.exit_code not in (0, None) or is_error else None),
        NO_ANSWER: DROP_REASONS[NO_ANSWER] if not answer.strip() else None,
    }
    for status in TRANSCRIPT_ORDER:
        reason = applies[status]
        if reason is not None:
            return status, reason
    return OK, ""


def score_rows(spec: RunSpec, result: JudgeResult) -> list[dict[str, Any]]:
    """scores.csv rows: one per graded item, plus a verdict-less row per ungraded item."""
    common = {"prompt": spec.prompt.name, "skill": spec.prompt.family,
              "model": spec.model_label, "condition": spec.condition, "rep": spec.rep,
              "run_id": spec.run_id}
    rows = [
        {**common, "item_type": v.item.type, "item_index": v.item.index,
         "item_text": v.item.text, "verdict": v.verdict, "credit": v.credit,
         "contribution": v.contribution, "contested": int(v.contested) if v.contested else "",
         "evidence_quote": v.evidence, "evidence_ok": int(v.evidence_ok),
         "claimed_verdict": v.claimed_verdict, "claimed_evidence": v.claimed_evidence,
         "judge_votes": ";".join(f"{s.judge}={s.verdict}" for s in v.samples if s.judge),
         "judge_reason": v.reason,
         **({"reason_cut": v.reason_cut} if v.reason_cut else {}),
         **({"samples": [dataclasses.asdict(s) for s in v.samples]} if v.samples else {})}
        for v in result.verdicts
    ]
    rows += [
        {**common, "item_type": item.type, "item_index": item.index, "item_text": item.text,
         "verdict": "", "credit": "", "contribution": "", "contested": "",
         "evidence_quote": "", "evidence_ok": "", "claimed_verdict": "", "claimed_evidence": "",
         "judge_votes": "", "judge_reason": ""}
        for item in result.ungraded
    ]
    order = {item.key: pos for pos, item in enumerate(spec.prompt.rubric)}
    rows.sort(key=lambda r: order.get(f"{r['item_type']}-{r['item_index']}", 0))
    return rows


def judge_meta(result: JudgeResult) -> dict[str, Any]:
    """What grades.json records about how a run was judged (calls, samples, evidence policy,
    and how many missing/absent/violated verdicts came without a reason or with one cut)."""
    misses = [v for v in result.verdicts if v.verdict in NEEDS_REASON]
    return {"judge_calls": result.calls, "judge_samples": result.samples,
            "tie_breaks": result.tie_breaks, "evidence_policy": result.evidence_policy,
            "prompt_version": PROMPT_VERSION, "arm_leaks": result.arm_leaks,
            "judge_mask": result.masked,
            "reasons_missing": sum(1 for v in misses if not v.reason),
            "reasons_cut": sum(1 for v in result.verdicts if v.reason_cut)}
