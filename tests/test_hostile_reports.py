"""Hostile week directories through the ``skilllift`` command: reports, never tracebacks.

Each case is what a user would do: point ``summarize``, ``compare`` or ``score --week`` at
a week whose files were damaged, duplicated or written by an older run, and expect one
line naming the file and the fix, and numbers that count every row once.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.cli.main import main

from .test_week_io import write_week


@pytest.fixture(scope="module")
def reference_week(tmp_path_factory: pytest.TempPathFactory, reference_data: Path) -> Path:
    """A clean copy of the real week 20260808 (manifest.csv and scores.csv only)."""
    out = tmp_path_factory.mktemp("reference") / "20260808"
    out.mkdir()
    for name in ("manifest.csv", "scores.csv"):
        shutil.copy(reference_data / "qdrant-skills" / "weekly" / "20260808" / name, out)
    return out


def _copy(week: Path, where: Path) -> Path:
    where.mkdir(parents=True)
    for name in ("manifest.csv", "scores.csv"):
        shutil.copy(week / name, where / name)
    return where


def _summarize_json(week: Path, capsys: pytest.CaptureFixture[str]
                    ) -> tuple[int, dict[str, Any], str]:
    code = main(["summarize", str(week), "--no-plots", "--json"])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def test_duplicated_score_rows_are_reported_and_counted_once(
        reference_week: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, clean, _ = _summarize_json(_copy(reference_week, tmp_path / "clean"), capsys)
    assert code == 0 and clean["problems"] == []
    dup = _copy(reference_week, tmp_path / "dup")
    lines = (dup / "scores.csv").read_text().splitlines(keepends=True)
    # Repeat one with-skill must row that was met and one no-skill row that was missed.
    extra = [ln for ln in lines if ",with-skill," in ln and ",must," in ln and ",met," in ln][:1]
    extra += [ln for ln in lines if ",no-skill," in ln and ",must," in ln and ",missing," in ln][:1]
    assert len(extra) == 2
    (dup / "scores.csv").write_text("".join(lines + extra * 3))
    code, data, err = _summarize_json(dup, capsys)
    assert code == 1  # an input problem, reported
    assert "repeat an earlier row's prompt×model×condition×rep×item; each item is counted " \
           "once" in err
    assert "rows 1513, 1514, 1515, 1516, 1517, 1518" in err
    for label, model in clean["models"].items():
        assert data["models"][label]["must_lift"] == model["must_lift"]
        assert data["models"][label]["must_lift_se"] == model["must_lift_se"]
    assert data["coverage"]["items_graded"] == clean["coverage"]["items_graded"]


def test_failed_with_skill_runs_of_an_older_week_are_not_trigger_misses(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A week written before the fix: failed with-skill runs carry activation ``none`` and
    ``NOT_INVOKED``. The scorecard excludes and names them instead of counting misses."""
    failed = {"p-a-sonnet-with-skill-r2": ("timeout", "timed out after 600s"),
              "p-b-sonnet-with-skill-r1": ("errored", "API Error: 529 overloaded")}

    def override(run: dict[str, str]) -> None:
        if run["run_id"] in failed:
            run["run_status"], run["run_error"] = failed[run["run_id"]]
            run["skill_activation"], run["reached_leaf"] = "none", "0"
            run["invocation_status"] = "NOT_INVOKED"
            run["exit_code"] = "1"

    w = write_week(tmp_path / "w", manifest_extra={
        "run_status": lambda r: "ok", "run_error": lambda r: "",
        "invocation_status": lambda r: "VERIFIED" if r["condition"] == "with-skill" else ""},
        run_override=override, skip_scores=lambda r: r["run_id"] in failed)
    code, data, _ = _summarize_json(w, capsys)
    assert code == 0  # a failed run is not an input problem
    act = data["activation_summary"]
    assert act["trigger_misses"] == 0 and act["with_skill_runs"] == 4
    assert act["excluded_runs"] == 2
    assert data["audit"]["invocation"]["sonnet"]["NOT_INVOKED"] == 0
    assert sorted((r["run_id"], r["status"], r["reason"])
                  for r in data["audit"]["excluded_runs"]) == sorted(
        (rid, st, why) for rid, (st, why) in failed.items())
    md = (w / "scorecard.md").read_text()
    assert "with-skill runs that did not complete" in md
    assert re.search(r"\| p-a-sonnet-with-skill-r2 \| timeout \| timed out after 600s +\|", md)


@pytest.mark.parametrize("damage", ["binary-manifest", "sparse-scores", "directory-scores"])
def test_damaged_csv_is_one_line_naming_file_and_fix(
        damage: str, reference_week: Path, tmp_path: Path, reference_data: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    good = _copy(reference_week, tmp_path / "a")
    bad = _copy(reference_week, tmp_path / "b")
    if damage == "binary-manifest":
        (bad / "manifest.csv").write_bytes(b"\x00\x01PK\x03\x04" + os.urandom(4096))
        name, why = "manifest.csv", "is not a CSV text file (binary content"
    elif damage == "sparse-scores":
        (bad / "scores.csv").unlink()
        with (bad / "scores.csv").open("wb") as fh:
            fh.truncate(2 << 30)  # 2 GiB of holes: no disk used, all NUL bytes
        name, why = "scores.csv", "is not a CSV text file (binary content"
    else:
        (bad / "scores.csv").unlink()
        (bad / "scores.csv").mkdir()  # unreadable as a file (as root, chmod 000 is not)
        name, why = "scores.csv", "cannot be read (Is a directory); fix: make it a readable"
    skills = reference_data / "qdrant-skills" / "skills"

    assert main(["summarize", str(bad), "--no-plots"]) == 1
    _out, err = capsys.readouterr()
    assert f"problem: {name}: {why}" in err and "fix:" in err
    assert "cannot write" not in err and "Traceback" not in err
    (bad / "scorecard.json").unlink()  # so score --week summarizes the CSVs again

    assert main(["compare", str(good), str(bad)]) == 0
    out, _err = capsys.readouterr()
    assert "⚠ b has" in out and f"{name}: {why}" in out

    code = main(["score", str(skills / "qdrant-edge"), "--week", str(bad)])
    out, err = capsys.readouterr()
    assert code in (0, 1) and "Traceback" not in out + err


def test_summarize_names_what_it_cannot_write(reference_week: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    week = _copy(reference_week, tmp_path / "w")
    (week / "scorecard.md").mkdir()  # the scorecard cannot be written there
    assert main(["summarize", str(week), "--no-plots"]) == 2
    _out, err = capsys.readouterr()
    assert f"cannot write {week / 'scorecard.md'}" in err and "fix: make" in err
    assert "problem:" not in err  # the inputs were fine
