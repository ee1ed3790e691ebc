"""``skilllift label``: a stratified, reproducible sheet with the final answer beside each item."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from pathlib import Path

import pytest

from pytest_skilllift.cli import main as cli
from pytest_skilllift.judge.agreement import check_week
from pytest_skilllift.judge.labels import SHEET_COLUMNS, allocate

# Judge verdicts per stratum: deliberately lopsided, as a real week is.
STRATA = {("must", "met"): 40, ("must", "missing"): 10, ("bonus", "met"): 5,
          ("bonus", "absent"): 8, ("avoid", "violated"): 2, ("avoid", "clean"): 20}
RUNS = [("no-skill", 1), ("no-skill", 2), ("with-skill", 1), ("with-skill", 2)]


def make_week(root: Path) -> Path:
    week = root / "20260815"
    week.mkdir()
    rows = []
    counters: Counter[tuple[str, str, int, str]] = Counter()
    n = 0
    for (item_type, verdict), count in STRATA.items():
        for _ in range(count):
            condition, rep = RUNS[n % len(RUNS)]
            n += 1
            counters[(condition, "haiku", rep, item_type)] += 1
            index = counters[(condition, "haiku", rep, item_type)]
            rows.append({"prompt": "hybrid", "skill": "s", "model": "haiku",
                         "condition": condition, "rep": rep, "item_type": item_type,
                         "item_text": f"{item_type} {index}", "verdict": verdict,
                         "credit": float(verdict in ("met", "violated")), "item_index": index,
                         "run_id": f"hybrid-haiku-{condition}-r{rep}"})
    with (week / "scores.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    for condition, rep in RUNS:
        run_dir = week / f"hybrid-haiku-{condition}-r{rep}"
        run_dir.mkdir()
        (run_dir / "run.json").write_text(json.dumps(
            {"run_id": run_dir.name, "final_answer": f"Answer of {condition} r{rep}:\nuse RRF."}))
    return week


def sheet(week: Path, capsys: pytest.CaptureFixture[str], *args: str) -> list[dict[str, str]]:
    assert cli.main(["label", str(week), *args]) == 0
    out = capsys.readouterr().out
    reader = csv.DictReader(io.StringIO(out))
    assert reader.fieldnames == list(SHEET_COLUMNS)
    return list(reader)


def test_equal_allocation_with_small_strata_capped() -> None:
    sizes = dict(STRATA)
    assert allocate(sizes, 30) == {("must", "met"): 6, ("must", "missing"): 6,
                                   ("bonus", "met"): 5, ("bonus", "absent"): 6,
                                   ("avoid", "violated"): 2, ("avoid", "clean"): 5}
    assert sum(allocate(sizes, 1000).values()) == sum(sizes.values())  # all there is


def test_sample_is_stratified_reproducible_and_blind(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    week = make_week(tmp_path)
    first = sheet(week, capsys, "--sample", "30", "--seed", "7")
    again = sheet(week, capsys, "--sample", "30", "--seed", "7")
    other = sheet(week, capsys, "--sample", "30", "--seed", "8")
    assert first == again
    assert first != other
    assert len(first) == 30
    # The judge's verdict is not on the sheet; look it up to check the strata.
    judged = {}
    with (week / "scores.csv").open(newline="") as fh:
        for row in csv.DictReader(fh):
            judged[(row["condition"], row["rep"], row["item_type"], row["item_index"])] = row[
                "verdict"]
    strata = Counter((r["item_type"], judged[(r["condition"], r["rep"], r["item_type"],
                                              r["item_index"])]) for r in first)
    assert strata == Counter({("must", "met"): 6, ("must", "missing"): 6, ("bonus", "met"): 5,
                              ("bonus", "absent"): 6, ("avoid", "violated"): 2,
                              ("avoid", "clean"): 5})
    assert all(r["verdict"] == "" for r in first)
    row = first[0]
    assert row["final_answer"] == (f"Answer of {row['condition']} r{row['rep']}:\nuse RRF.")
    assert {r["choices"] for r in first if r["item_type"] == "avoid"} == {"violated|clean"}
    # rows of one answer sit together
    runs = [(r["condition"], r["rep"]) for r in first]
    assert runs == sorted(runs)


def test_a_filled_sheet_feeds_judge_check(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    week = make_week(tmp_path)
    rows = sheet(week, capsys, "--sample", "12", "--seed", "1")
    for row in rows:
        row["verdict"] = row["choices"].split("|")[0]  # a person who marks everything positive
    path = tmp_path / "labels.csv"
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, SHEET_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    report = check_week(week, path)
    assert report["overall"]["n"] == 12 and report["unmatched"] == []
    confusion = report["overall"]["confusion"]
    assert confusion["tn"] == confusion["fp"] == 0  # the person said positive every time
    assert confusion["tp"] == len(rows) - len(report["disagreements"]) > 0


def test_no_graded_items_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "scores.csv").write_text("prompt,model,condition,rep,item_type,verdict\n")
    assert cli.main(["label", str(tmp_path), "--sample", "5"]) == 2
    assert "no graded item" in capsys.readouterr().err
