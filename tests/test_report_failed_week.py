"""A failed week says why in its first line; history does not count it."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_skilllift.report.summarize import summarize_week
from pytest_skilllift.week.history import HistoryRow, with_lift, write_history
from pytest_skilllift.week.ledger import Ledger

CAUSE = "API unreachable at 127.0.0.1:9: connection refused; check ANTHROPIC_BASE_URL"


def failed_week(root: Path, n: int = 10) -> Path:
    week = root / "weekly" / "20260815"
    ledger = Ledger(week)
    for i in range(n):
        cond = ("no-skill", "with-skill")[i % 2]
        run_id = f"p{i // 2}-sonnet-{cond}-r1-20260815"
        ledger.run_dir(run_id).mkdir(parents=True, exist_ok=True)
        ledger.save_run(run_id, {
            "run_id": run_id, "prompt": f"p{i // 2}", "model": "sonnet", "condition": cond,
            "rep": 1, "skill_family": "fam", "run_status": "errored", "run_error": CAUSE,
            "exit_code": "", "final_answer": "", "timestamp": "20260815T090000Z"})
    ledger.rebuild_csvs()
    return week


def test_the_first_line_names_why_nothing_was_graded(tmp_path: Path) -> None:
    week = failed_week(tmp_path)
    summary = summarize_week(week, plots=False)
    first = f"0 of 10 runs graded: 10 errored — {CAUSE}"
    assert summary.terminal_lines()[0] == first
    md = (week / "scorecard.md").read_text().splitlines()
    assert md[0] == f"**{first}**"
    assert "scores.csv has a header but no data rows" not in md[0]


def test_history_neither_counts_nor_keeps_a_week_with_nothing_graded(tmp_path: Path) -> None:
    weekly = tmp_path / "weekly"
    history = weekly / "scorecard-history.csv"
    write_history(history, [
        HistoryRow("20260725", "20260725T090000Z", "sonnet", 0.10, 0.05),
        HistoryRow("20260801", "20260801T090000Z", "sonnet", None, None),  # nothing graded
        HistoryRow("20260808", "20260808T090000Z", "sonnet", 0.15, 0.04),
    ])
    before = history.read_bytes()
    week = failed_week(tmp_path)
    summarize_week(week, plots=False)
    card = json.loads((week / "scorecard.json").read_text())
    assert card["history"]["n_runs"] == 2  # the two weeks with a lift; not 20260801, not this one
    assert history.read_bytes() == before


def test_with_lift_drops_runs_without_any() -> None:
    rows = [HistoryRow("a", "1", "m", None, None), HistoryRow("b", "2", "m", 0.1, 0.1),
            HistoryRow("b", "2", "n", None, None)]
    assert [r.run_key for r in with_lift(rows)] == ["b", "b"]
