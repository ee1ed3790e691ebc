"""The week's spend as the cap sees it (pure: files in a week directory, no CLI)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.week.files import JUDGE_COST_FILE, RUN_FILE, SPEND_FILE
from pytest_skilllift.week.spend import NOT_RUN_REASON, SpendCap, SpendMeter, update_spend


def run(week: Path, run_id: str, cost: float | str, judge: float | None = None) -> None:
    (week / run_id).mkdir(parents=True, exist_ok=True)
    (week / run_id / RUN_FILE).write_text(json.dumps({"run_id": run_id,
                                                      "total_cost_usd": cost}))
    if judge is not None:
        (week / run_id / JUDGE_COST_FILE).write_text(f"{judge:.6f}\n")


def test_the_meter_sums_generation_and_judge_and_sees_changes(tmp_path: Path) -> None:
    run(tmp_path, "a", 0.25, 0.03)
    run(tmp_path, "b", "", None)  # a run whose cost the CLI did not report
    (tmp_path / "c").mkdir()  # a run that never started: only its lock
    (tmp_path / "c" / ".lock").write_text("")
    meter = SpendMeter(tmp_path)
    spent = meter.spent()
    assert (spent.generation_usd, spent.judge_usd, spent.runs) == (0.25, 0.03, 2)
    assert spent.total_usd == pytest.approx(0.28)
    run(tmp_path, "b", 0.5, 0.04)  # graded later, by another worker
    assert meter.spent().total_usd == pytest.approx(0.82)


def test_the_cap_stops_starting_once_reached_and_says_why(tmp_path: Path) -> None:
    cap = SpendCap(tmp_path, 1.0)
    assert cap.check() is None
    run(tmp_path, "a", 0.6, 0.1)
    assert cap.check() is None
    run(tmp_path, "b", 0.4)
    why = cap.check()
    assert why is not None and why.startswith(NOT_RUN_REASON)
    assert "$1.10 of its $1.00 cap" in why
    with pytest.raises(ValueError):
        SpendCap(tmp_path, -1)


def test_spend_json_keeps_the_not_run_list_until_the_runs_exist(tmp_path: Path) -> None:
    assert update_spend(tmp_path, None, []).cap_usd is None
    assert not (tmp_path / SPEND_FILE).exists()  # no cap, ever: nothing written
    run(tmp_path, "a", 0.2)
    rec = update_spend(tmp_path, 0.1, ["b", "c"])
    assert rec.not_run_spend_cap == ("b", "c") and rec.spent_usd == pytest.approx(0.2)
    # a later session without a cap runs "b" and keeps the recorded cap
    run(tmp_path, "b", 0.3)
    rec = update_spend(tmp_path, None, [])
    assert rec.not_run_spend_cap == ("c",) and rec.cap_usd == 0.1
    assert json.loads((tmp_path / SPEND_FILE).read_text())["not_run_spend_cap"] == ["c"]


def test_trigger_runs_ask_the_same_gate_and_count_in_the_spend(tmp_path: Path) -> None:
    from pytest_skilllift.model import AgentConfig
    from pytest_skilllift.run.engine import NotStarted
    from pytest_skilllift.run.triggers import TriggerQuery, TriggerRun, TriggerSet, TriggerSpec

    run(tmp_path / "triggers", "bisect-q1-haiku-trigger-r1-w", 0.4)
    assert SpendMeter(tmp_path).spent().generation_usd == pytest.approx(0.4)

    def no_runner() -> Any:
        raise AssertionError("a run past the cap must not start")

    trig = TriggerRun(tmp_path / "triggers", AgentConfig(claude_path="", skills_root=tmp_path),
                      no_runner)
    trig.start_gate = SpendCap(tmp_path, 0.3).check
    spec = TriggerSpec(TriggerSet(tmp_path / "bisect.json", "git-bisect",
                                  (TriggerQuery(2, "q?", True),)),
                       TriggerQuery(2, "q?", True), "haiku", "claude-haiku-4-5", 1, "w")
    with pytest.raises(NotStarted, match=NOT_RUN_REASON):
        trig.result(spec)
