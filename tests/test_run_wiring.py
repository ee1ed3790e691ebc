"""``run.wiring``: a session's parts made from its Settings, without a pytest session; and the
end-of-session writers the session calls (``report.session_end``, ``view.site.write_view``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.agents import registry
from pytest_skilllift.config import OPTIONS, Settings
from pytest_skilllift.model import AgentConfig, RunOutcome, RunSpec
from pytest_skilllift.report import session_end
from pytest_skilllift.run import wiring
from pytest_skilllift.run.batch_grade import BatchResults
from pytest_skilllift.run.breaker import NOT_RUN_OUTAGE
from pytest_skilllift.runners.inflight import Inflight, stopped_line
from pytest_skilllift.view.site import write_view
from pytest_skilllift.week.files import SPEND_FILE
from pytest_skilllift.week.ledger import Ledger
from pytest_skilllift.week.spend import NOT_RUN


def settings(tmp_path: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {o.name: o.default for o in OPTIONS}
    values.update(models="haiku", reps=1, **overrides)
    return Settings.from_values(lambda o: values[o.name], enabled=True, rootdir=tmp_path)


class Supplied:
    """A runner a ``pytest_skilllift_make_runner`` hook returns (never asked to run here)."""

    name = "supplied"

    def run(self, spec: RunSpec, cfg: AgentConfig, run_dir: Path) -> RunOutcome:
        raise AssertionError("not run")

    def close(self) -> None:
        pass


def test_prompt_runs_go_to_the_hooks_runner_and_without_one_to_the_configured(
        tmp_path: Path) -> None:
    from pytest_skilllift.runners.local import LocalRunner
    from pytest_skilllift.runners.task_docker import SplitRunner

    s, inflight = settings(tmp_path), Inflight(tmp_path / "inflight")
    supplied = Supplied()
    runner = wiring.make_runner(s, inflight, lambda: supplied)
    assert isinstance(runner, SplitRunner) and runner.runner(False) is supplied
    for hook in (None, lambda: None):  # no hook, or a hook that returns None
        fallback = wiring.make_runner(s, inflight, hook)
        assert isinstance(fallback, SplitRunner)
        assert isinstance(fallback.runner(False), LocalRunner)


def test_the_grader_is_the_batch_steps_results_with_judge_batch(tmp_path: Path) -> None:
    s = settings(tmp_path, **{"judge-batch": True})
    week = Ledger(s.out_dir)
    results = wiring.batch_results(s, week)
    assert isinstance(results, BatchResults)
    assert wiring.make_grader(s, week, worker=False, batch=lambda: results) is results


def test_a_worker_grades_through_the_controllers_judge_service(tmp_path: Path) -> None:
    import dataclasses

    from pytest_skilllift.judge.service import RemoteGrader

    s = dataclasses.replace(settings(tmp_path), judge_url="http://127.0.0.1:9/",
                            judge_token="t")
    grader = wiring.make_grader(s, Ledger(s.out_dir), worker=True,
                                batch=lambda: pytest.fail("no batch without judge-batch"))
    assert isinstance(grader, RemoteGrader)


def test_every_agent_reaches_the_sessions_base_url_through_its_own_variable(
        tmp_path: Path) -> None:
    import dataclasses

    s = dataclasses.replace(settings(tmp_path), base_url="http://127.0.0.1:8765",
                            extra_env={"X": "1"})
    env = wiring.agent_env(s)
    assert env["X"] == "1"
    assert {a.base_url_var for a in registry.AGENTS.values()} <= set(env)
    assert all(env[a.base_url_var] == "http://127.0.0.1:8765" + a.stand_in_path
               for a in registry.AGENTS.values())
    assert wiring.agent_env(settings(tmp_path)) == {}


def test_the_spend_gate_is_none_without_a_cap_and_names_the_cap_once_reached(
        tmp_path: Path) -> None:
    assert wiring.spend_gate(settings(tmp_path), Ledger(tmp_path / "w")) is None
    s = settings(tmp_path, **{"max-spend": "0"})
    gate = wiring.spend_gate(s, Ledger(s.out_dir))
    assert gate is not None
    why = gate(None)  # type: ignore[arg-type]  # the cap reads the week, not the run
    assert why is not None and "--skill-lift-max-spend" in why


def test_close_week_lists_the_runs_held_back_lift_and_trigger_alike(tmp_path: Path) -> None:
    s = settings(tmp_path, **{"max-spend": "1"})
    week = Ledger(s.out_dir)
    week.root.mkdir(parents=True)
    runs = {"a-haiku-r1": NOT_RUN, "b-haiku-r1": NOT_RUN_OUTAGE, "c-haiku-r1": "ok"}
    spend, has_triggers = wiring.close_week(s, week, Inflight(tmp_path / "inflight"), runs,
                                            {"t1": NOT_RUN, "t2": NOT_RUN_OUTAGE})
    assert has_triggers is False
    assert spend.not_run_spend_cap == ("a-haiku-r1", "triggers/t1")
    assert spend.not_run_outage == ("b-haiku-r1", "triggers/t2")
    assert json.loads((week.root / SPEND_FILE).read_text())["cap_usd"] == 1.0


def test_breaker_lines_count_the_held_runs_and_name_the_cause(tmp_path: Path) -> None:
    s = settings(tmp_path, breaker=2)
    inflight = Inflight(tmp_path / "inflight")
    runs = wiring.breaker(s, inflight)
    assert runs is not None
    for _ in range(2):
        runs.record("API unreachable")
    (line,) = wiring.breaker_lines(s, inflight, {"r1": NOT_RUN_OUTAGE, "r2": "ok"},
                                   {"t1": NOT_RUN_OUTAGE})
    assert line.startswith("circuit breaker: 2 run(s) (1 of them trigger runs) not run: "
                           "API unreachable — 2 consecutive runs failed")
    assert wiring.breaker(settings(tmp_path, breaker=0), inflight) is None
    assert wiring.breaker_lines(settings(tmp_path, breaker=0), inflight,
                                {"r1": NOT_RUN_OUTAGE}, {}) == []


def test_session_end_writes_nothing_for_a_week_without_runs(tmp_path: Path) -> None:
    week = Ledger(tmp_path / "week")
    week.root.mkdir()
    assert session_end.write_card(week, [], has_triggers=False, banner=None, note=None) is None
    assert list(week.root.iterdir()) == []
    assert write_view(week.root).startswith("viewer not written: ")


def test_session_end_banner_and_coverage_line() -> None:
    assert session_end.banner(demo=False, dry_run=False) is None
    assert session_end.banner(demo=True, dry_run=False) == session_end.DEMO_BANNER
    assert session_end.banner(demo=True, dry_run=True) == session_end.DRY_RUN_BANNER
    assert session_end.coverage(0, 0, 0.9) == (True, "")
    assert session_end.coverage(9, 10, 0.9) == (
        True, "graded 9 of 10 runs this session (90%; minimum 90%)")
    enough, line = session_end.coverage(8, 10, 0.9)
    assert not enough and line.endswith("below the minimum: the week is incomplete, exit status 1")


def test_stopped_line() -> None:
    assert stopped_line([]).startswith("interrupted: no run was in flight")
    assert stopped_line(["a"]) == "interrupted: 1 run in flight was stopped and will be retried: a"
    assert stopped_line(["a", "b"]).startswith("interrupted: 2 runs in flight were stopped")
