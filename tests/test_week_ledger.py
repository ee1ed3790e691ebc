"""The ledger: atomic files, CSVs derived from run directories, idempotent rebuilds."""

from __future__ import annotations

import csv
import threading
import time
from pathlib import Path

from pytest_skilllift.week.columns import MANIFEST_COLUMNS, SCORES_COLUMNS
from pytest_skilllift.week.files import atomic_write_text
from pytest_skilllift.week.ledger import Ledger


def test_atomic_write_leaves_no_temp_files(tmp_path: Path) -> None:
    atomic_write_text(tmp_path / "a.txt", "one")
    atomic_write_text(tmp_path / "a.txt", "two")
    assert (tmp_path / "a.txt").read_text() == "two"
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]


def test_rebuild_is_ordered_complete_and_idempotent(tmp_path: Path) -> None:
    week = Ledger(tmp_path)
    for rep in (2, 1):
        run_id = f"p-haiku-no-skill-r{rep}-w"
        week.save_run(run_id, {"prompt": "p", "model": "haiku", "condition": "no-skill",
                               "rep": rep, "run_id": run_id, "skill_available": False})
        week.save_grades(run_id, [{"prompt": "p", "item_type": "must", "item_index": 1,
                                   "verdict": "met", "credit": 1.0, "run_id": run_id}],
                         "judge", 0.01)
    assert week.rebuild_csvs() == (2, 2)
    first = (tmp_path / "manifest.csv").read_bytes(), (tmp_path / "scores.csv").read_bytes()
    week.rebuild_csvs()
    assert first == ((tmp_path / "manifest.csv").read_bytes(),
                     (tmp_path / "scores.csv").read_bytes())
    rows = list(csv.DictReader((tmp_path / "manifest.csv").open()))
    header = next(csv.reader((tmp_path / "manifest.csv").open()))
    assert tuple(header[:23]) == MANIFEST_COLUMNS
    assert [r["rep"] for r in rows] == ["1", "2"] and rows[0]["skill_available"] == "0"
    header = next(csv.reader((tmp_path / "scores.csv").open()))
    assert tuple(header[:12]) == SCORES_COLUMNS
    assert (tmp_path / rows[0]["run_id"] / "judge_cost.txt").read_text().strip() == "0.010000"


def test_lock_serialises_two_holders(tmp_path: Path) -> None:
    week = Ledger(tmp_path)
    order: list[str] = []

    def hold(tag: str) -> None:
        with week.lock("r"):
            order.append(tag + "-in")
            time.sleep(0.05)
            order.append(tag + "-out")

    threads = [threading.Thread(target=hold, args=(t,)) for t in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert order[0][0] == order[1][0] and order[2][0] == order[3][0]
