"""The engine's side of interrupts and outages: an interrupted run is not recorded, the
judge's circuit breaker stops grading (runs stay ungraded, never zero)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_skilllift.model import AgentConfig, RunOutcome, RunSpec
from pytest_skilllift.run.breaker import NOT_RUN_OUTAGE, CircuitBreaker
from pytest_skilllift.run.engine import NotStarted, WeekRun
from pytest_skilllift.week.files import OK, STDOUT_FILE
from pytest_skilllift.week.ledger import Ledger
from tests.test_run_engine import CountingGrader, FakeRunner, engine, spec


class InterruptedRunner(FakeRunner):
    """Writes half a transcript, then is interrupted (Ctrl-C / SIGTERM in the runner)."""

    def run(self, spec: RunSpec, cfg: AgentConfig, run_dir: Path) -> RunOutcome:
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / STDOUT_FILE).write_text('{"type": "system", "subtype": "init"}\n')
        raise KeyboardInterrupt


class OutageRunner(FakeRunner):
    def run(self, spec: RunSpec, cfg: AgentConfig, run_dir: Path) -> RunOutcome:
        out = super().run(spec, cfg, run_dir)
        return RunOutcome(exit_code=None, started_utc=out.started_utc,
                          ended_utc=out.ended_utc, wall_ms=4000, error="API down",
                          outage="API down", runner=self.name)


def test_an_interrupted_run_leaves_nothing_and_is_generated_next_time(tmp_path: Path) -> None:
    week = tmp_path / "w"
    with pytest.raises(KeyboardInterrupt):
        engine(week, InterruptedRunner(), CountingGrader()).result(spec())
    run_dir = week / spec().run_id
    assert [p.name for p in run_dir.iterdir() if not p.name.startswith(".")] == []
    runner = FakeRunner()
    assert engine(week, runner, CountingGrader()).result(spec()).status == OK
    assert runner.calls == [spec().run_id]


def test_the_run_breaker_holds_back_runs_after_three_outages(tmp_path: Path) -> None:
    week = tmp_path / "w"
    runner = OutageRunner()
    weekrun = engine(week, runner, CountingGrader())
    weekrun.breaker = CircuitBreaker(tmp_path / "runs.log", 3)
    for rep in (1, 2, 3):
        assert weekrun.result(spec(rep=rep)).reason == "API down"
    with pytest.raises(NotStarted) as held:
        weekrun.result(spec(rep=4))
    assert str(held.value) == "not run: API down" and held.value.status == NOT_RUN_OUTAGE
    assert len(runner.calls) == 3
    assert not (week / spec(rep=4).run_id / "run.json").exists()


def test_the_judge_breaker_stops_grading_and_leaves_runs_ungraded(tmp_path: Path) -> None:
    week = tmp_path / "w"
    grader = CountingGrader(error="judge call failed after 7 attempts; last error: "
                                  "connection error (ConnectError)")
    weekrun = engine(week, FakeRunner(), grader)
    weekrun.judge_breaker = CircuitBreaker(tmp_path / "judge.log", 3)
    results = [weekrun.result(spec(rep=rep)) for rep in range(1, 6)]
    assert grader.calls == 3  # then the breaker: no further judge call
    assert all(r.status == OK and r.rows == {} and r.judge_error for r in results)
    assert (results[4].judge_error or "").startswith("not graded: the judge's API is unreachable")
    assert not list(week.glob("*/grades.json"))  # ungraded, never scored zero


@pytest.mark.slow  # the Message Batches client against the stand-in, ~6 s
def test_batch_judging_a_refusing_judge_opens_the_breaker_and_submits_no_more(
        tmp_path: Path) -> None:
    """``--skill-lift-judge-batch``: the Message Batches API refuses the key; every run stays
    ungraded (never zero), the judge's breaker opens on the batch client's error, and the
    next batch step (another worker, the next prompt's) submits nothing."""
    from pytest_skilllift.judge.batch import BatchJudge
    from pytest_skilllift.run.batch_grade import BatchResults, grade_in_batches
    from pytest_skilllift.testing import StandIn
    from pytest_skilllift.testing.judge_script import keyword_judge

    week = tmp_path / "w"
    results = BatchResults(Ledger(week), "claude-judge-x")
    weekrun = WeekRun(Ledger(week), AgentConfig(claude_path="unused", skills_root=tmp_path),
                      FakeRunner, lambda: results)  # batch mode: the engine's grader
    weekrun.judge_breaker = CircuitBreaker(tmp_path / "judge.log", 3)
    specs = [spec(rep=rep) for rep in range(1, 5)]
    for s in specs:
        weekrun.generate(s)
    with StandIn(judge=keyword_judge, api_key="the-right-key-123456") as api:
        judge = BatchJudge(week, "claude-judge-x", api_key="a-wrong-key-123456",
                           base_url=api.base_url, poll_s=0.0)
        first = grade_in_batches(weekrun, specs, judge, results)
        assert first.graded == 0 and sorted(first.ungraded) == sorted(s.run_id for s in specs)
        cause = weekrun.judge_breaker.open_cause()
        assert cause is not None and cause.startswith("the judge's API refused the key")
        calls = api.count(ok_only=False)
        again = grade_in_batches(weekrun, specs, judge, results)
        assert api.count(ok_only=False) == calls  # the breaker: nothing submitted
        assert set(again.ungraded.values()) == {f"not graded: {cause}"}
        judge.close()
    assert not list(week.glob("*/grades.json"))  # ungraded, never scored zero
