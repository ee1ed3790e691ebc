"""The run engine (``run/engine.py``) with fakes: a runner that writes a canned transcript and
a grader that counts its calls.  No CLI, no network, no judge: the engine's own rules only."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.judge.protocol import Grader
from pytest_skilllift.model import (
    AgentConfig,
    ItemVerdict,
    JudgeResult,
    PromptSpec,
    RubricItem,
    RunOutcome,
    RunSpec,
)
from pytest_skilllift.run.engine import WeekRun, classify
from pytest_skilllift.week.columns import VERDICTS, contribution_for, credit_for
from pytest_skilllift.week.files import (
    BUDGET_CAPPED,
    DROP_REASONS,
    ERRORED,
    GRADES_FILE,
    INVALID,
    JUDGE_ERROR_FILE,
    NO_ANSWER,
    OK,
    STDOUT_FILE,
    TIMEOUT,
    TRANSCRIPT_ORDER,
)
from pytest_skilllift.week.ledger import Ledger

FAMILY = "sqlite-bulk"
RUBRIC = (RubricItem("must", "uses executemany", 1), RubricItem("must", "one transaction", 2),
          RubricItem("avoid", "autocommit per row", 1))


def spec(condition: str = "with-skill", rep: int = 1) -> RunSpec:
    prompt = PromptSpec(path=Path("evals/test-prompts/p.json"), name="p", product_area="db",
                        prompt="Insert a million rows fast.", rubric=RUBRIC,
                        skill_path=f"{FAMILY}/SKILL.md")
    return RunSpec(prompt, "sonnet", "claude-sonnet-x", condition, rep,
                   f"p-sonnet-{condition}-r{rep}-w")


def transcript(answer: str = "Use executemany inside one transaction.", *,
               available: bool = True, budget: bool = False, is_error: bool = False) -> str:
    events = [
        {"type": "system", "subtype": "init", "skills": [FAMILY] if available else [],
         "claude_code_version": "2.1.332", "model": "claude-sonnet-x"},
        {"type": "assistant", "message": {"id": "m1", "model": "claude-sonnet-x",
                                          "content": [{"type": "text", "text": answer}]}},
        {"type": "result", "subtype": "error_max_budget_usd" if budget else "success",
         "is_error": is_error, "result": answer, "total_cost_usd": 0.01, "num_turns": 2,
         "duration_ms": 100},
    ]
    return "\n".join(json.dumps(e) for e in events) + "\n"


@dataclass
class Canned:
    """What one call of the fake runner does."""

    text: str = field(default_factory=transcript)
    exit_code: int | None = 0
    timed_out: bool = False
    error: str | None = None


class FakeRunner:
    """Writes a canned transcript; plays ``script`` in order (the last entry repeats)."""

    name = "fake"

    def __init__(self, script: Sequence[Canned] = (Canned(),)) -> None:
        self.script = list(script)
        self.calls: list[str] = []
        self.lock = threading.Lock()

    def run(self, spec: RunSpec, cfg: AgentConfig, run_dir: Path) -> RunOutcome:
        with self.lock:
            canned = self.script[min(len(self.calls), len(self.script) - 1)]
            self.calls.append(spec.run_id)
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / STDOUT_FILE).write_text(canned.text)
        return RunOutcome(exit_code=canned.exit_code, started_utc="20260808T090000Z",
                          ended_utc="20260808T090100Z", wall_ms=60000,
                          timed_out=canned.timed_out, error=canned.error, runner=self.name)

    def close(self) -> None:
        pass


class CountingGrader:
    """Grades every item positive (or fails with ``error``) and counts its calls."""

    model = "judge-x"

    def __init__(self, error: str | None = None) -> None:
        self.error = error
        self.calls = 0

    def grade(self, prompt_text: str, answer: str, items: Sequence[RubricItem],
              seed: int | str) -> JudgeResult:
        self.calls += 1
        if self.error is not None:
            return JudgeResult(verdicts=(), cost_usd=0.0, model=self.model, error=self.error)
        verdicts = []
        for item in items:
            verdict = VERDICTS[item.type][0]
            credit = credit_for(item.type, verdict)
            verdicts.append(ItemVerdict(item, verdict, answer[:10], credit,
                                        contribution_for(item.type, credit), True))
        return JudgeResult(verdicts=tuple(verdicts), cost_usd=0.002, model=self.model)


def engine(week: Path, runner: FakeRunner, grader: Grader) -> WeekRun:
    agent = AgentConfig(claude_path="unused", skills_root=week.parent / "skills")
    return WeekRun(Ledger(week), agent, lambda: runner, lambda: grader)


@pytest.fixture
def week(tmp_path: Path) -> Path:
    return tmp_path / "weekly" / "20260808"


def test_two_engines_on_one_week_generate_and_judge_once(week: Path) -> None:
    runner, grader = FakeRunner(), CountingGrader()
    first, second = engine(week, runner, grader), engine(week, runner, grader)
    results = []

    def go(e: WeekRun) -> None:
        results.append(e.result(spec()))

    threads = [threading.Thread(target=go, args=(e,)) for e in (first, second, first)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert runner.calls == [spec().run_id] and grader.calls == 1
    assert {r.status for r in results} == {OK}
    # An engine hands its cached result to a caller that comes after the run finished, and a
    # fresh one (read from the ledger) to a caller that waited on the lock: count each result
    # object once, so the verdict does not depend on how the threads were scheduled.
    distinct = list({id(r): r for r in results}.values())
    assert sum(r.generated_now for r in distinct) == 1
    assert sum(r.judged_now for r in distinct) == 1
    assert all(r.rows == results[0].rows for r in results)
    assert sorted(results[0].rows) == ["avoid-1", "must-1", "must-2"]
    # a third engine (a rerun of the session) reads the ledger: still one run, one grade
    third = engine(week, runner, grader).result(spec())
    assert (third.generated_now, third.judged_now) == (False, False)
    assert runner.calls == [spec().run_id] and grader.calls == 1


@pytest.mark.parametrize("failure", [Canned(timed_out=True, error="timed out after 600s"),
                                     Canned(error="spawn failed: no such file")])
def test_errored_and_timed_out_runs_are_retried(week: Path, failure: Canned) -> None:
    runner, grader = FakeRunner([failure, Canned()]), CountingGrader()
    failed = engine(week, runner, grader).result(spec())
    assert failed.status == (TIMEOUT if failure.timed_out else ERRORED)
    assert failed.reason == failure.error and grader.calls == 0
    again = engine(week, runner, grader).result(spec())  # the next session
    assert again.status == OK and again.generated_now and len(runner.calls) == 2
    assert grader.calls == 1


@pytest.mark.parametrize(("canned", "status"), [
    (Canned(text=transcript(available=False)), INVALID),
    (Canned(text=transcript(budget=True), exit_code=1), BUDGET_CAPPED),
    (Canned(text=transcript(answer="")), NO_ANSWER),
])
def test_finished_but_dropped_runs_are_not_retried(week: Path, canned: Canned,
                                                   status: str) -> None:
    runner, grader = FakeRunner([canned, Canned()]), CountingGrader()
    first = engine(week, runner, grader).result(spec())
    again = engine(week, runner, grader).result(spec())
    assert first.status == again.status == status
    assert first.reason.startswith(DROP_REASONS[first.status])
    assert len(runner.calls) == 1 and grader.calls == 0  # nothing paid twice, nothing judged


def test_judge_error_is_recorded_and_regraded_next_time(week: Path) -> None:
    runner = FakeRunner()
    failing = CountingGrader(error="HTTP 529 overloaded")
    run_dir = week / spec().run_id
    r = engine(week, runner, failing).result(spec())
    assert r.status == OK and r.rows == {} and r.judge_error == "HTTP 529 overloaded"
    assert r.reason == "ungraded: judge failed"
    assert (run_dir / JUDGE_ERROR_FILE).read_text() == "HTTP 529 overloaded\n"
    assert not (run_dir / GRADES_FILE).exists()
    working = CountingGrader()
    again = engine(week, runner, working).result(spec())
    assert again.judged_now and not again.generated_now and len(again.rows) == 3
    assert len(runner.calls) == 1 and working.calls == 1  # regraded, not regenerated
    assert not (run_dir / JUDGE_ERROR_FILE).exists()


def outcome(**kw: Any) -> RunOutcome:
    base: dict[str, Any] = {"exit_code": 0, "started_utc": "s", "ended_utc": "e", "wall_ms": 1}
    return RunOutcome(**{**base, **kw})


#: Each status's trigger as arguments of ``classify`` (what the transcript says).
TRIGGERS: dict[str, Callable[[dict[str, Any]], None]] = {
    INVALID: lambda kw: kw.update(available=False),
    BUDGET_CAPPED: lambda kw: kw.update(budget_hit=True),
    ERRORED: lambda kw: kw.update(is_error=True),
    NO_ANSWER: lambda kw: kw.update(answer="  "),
}


@pytest.mark.parametrize("i", range(len(TRANSCRIPT_ORDER)))
def test_classification_order(i: int) -> None:
    """With this status and every later one applying at once, this one names the run."""
    kw: dict[str, Any] = {"available": True, "budget_hit": False, "is_error": False,
                             "answer": "an answer", "subtype": "success"}
    for status in TRANSCRIPT_ORDER[i:]:
        TRIGGERS[status](kw)
    status, reason = classify(spec(), outcome(), **kw)
    assert status == TRANSCRIPT_ORDER[i] and reason


def test_harness_failures_come_before_the_transcript() -> None:
    kw: dict[str, Any] = {"available": False, "budget_hit": True, "is_error": True,
                          "answer": "", "subtype": "error"}
    assert classify(spec(), outcome(timed_out=True, error="killed"), **kw)[0] == TIMEOUT
    assert classify(spec(), outcome(error="spawn failed"), **kw)[0] == ERRORED
    assert classify(spec(), outcome(), **kw)[0] == INVALID
    # the no-skill arm never installs the skill: its absence is not an invalid install
    assert classify(spec("no-skill"), outcome(exit_code=1), **kw)[0] == BUDGET_CAPPED
    ok: dict[str, Any] = {"available": True, "budget_hit": False, "is_error": False, "answer": "x",
          "subtype": "success"}
    assert classify(spec(), outcome(), **ok) == (OK, "")


def test_a_refused_install_and_a_cli_that_never_started() -> None:
    """A family the runner refused to install is invalid whatever the transcript says; a
    transcript without the init event cannot show the skill missing: errored, not invalid."""
    kw: dict[str, Any] = {"available": False, "budget_hit": False, "is_error": False,
                          "answer": "", "subtype": ""}
    refused = outcome(exit_code=None, error="invalid install: symlink x/y -> /etc leaves",
                      invalid_install=True)
    assert classify(spec(), refused, **kw) == (INVALID, refused.error)
    status, reason = classify(spec(), outcome(exit_code=1), **kw, init_seen=False)
    assert status == ERRORED and "before its init event (exit 1)" in reason
    assert classify(spec(), outcome(exit_code=1), **kw)[0] == INVALID  # init seen: invalid
    # A budget cap is still named as such (the result event says so).
    assert classify(spec(), outcome(), **{**kw, "budget_hit": True},
                    init_seen=False)[0] == BUDGET_CAPPED
