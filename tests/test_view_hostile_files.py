"""The static view and the label sheet against hostile files (issue: third round of hostile
input): a run folder that links out of the week, an ``--out`` that is someone else's folder
or holds links, spreadsheet formulas in the label sheet.

The real week (qdrant/skills week 20260808) is summarized into a temporary copy.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
from pathlib import Path

import pytest

from pytest_skilllift.cli import main as cli
from pytest_skilllift.judge.agreement import check_week
from pytest_skilllift.judge.graded import read_graded_items
from pytest_skilllift.judge.labels import stratified_sample, write_sheet
from pytest_skilllift.trace.transcript import final_answer
from pytest_skilllift.view.labelling import LabelSession
from pytest_skilllift.view.site import ViewError, build_site

FIXTURE = Path(__file__).resolve().parent / "fixtures/data/qdrant-skills/weekly/20260808"
SECRET = "OUTSIDE-THE-WEEK-7f3a"


@pytest.fixture(scope="module")
def summarized(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from pytest_skilllift.report.summarize import summarize_week

    week = tmp_path_factory.mktemp("real") / "20260808"
    shutil.copytree(FIXTURE, week)
    summarize_week(week, plots=False)
    return week


@pytest.fixture
def week(summarized: Path, tmp_path: Path) -> Path:
    w = tmp_path / "20260808"
    shutil.copytree(summarized, w)
    return w


def _site_text(site: Path) -> str:
    return "".join(p.read_text(encoding="utf-8") for p in site.rglob("*.html"))


def test_a_run_folder_linking_out_of_the_week_is_not_read(week: Path, tmp_path: Path) -> None:
    with (week / "manifest.csv").open() as fh:
        run_id = next(csv.DictReader(fh))["run_id"]
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "run.json").write_text(json.dumps({"final_answer": SECRET}))
    (outside / "stdout.txt").write_text(json.dumps(
        {"type": "result", "subtype": "success", "result": SECRET}) + "\n")
    os.symlink(outside, week / run_id)
    site = build_site(week, tmp_path / "site")
    assert SECRET not in _site_text(site.index.parent)
    assert any(run_id in p and "symbolic link" in p for p in site.problems)  # named
    # The label sheet and the served labelling page read the same week the same way.
    sample = stratified_sample(read_graded_items(week), 2000, "0")[0]  # every item
    out = io.StringIO()
    write_sheet(out, week, sample, final_answer)
    assert SECRET not in out.getvalue()
    session = LabelSession(week, sample=400)
    assert not any(SECRET in s["answer"] for s in session.blind(session.items_of()))


def test_a_stdout_that_is_a_link_is_not_read(week: Path, tmp_path: Path) -> None:
    from pytest_skilllift.view.runs import read_run

    (tmp_path / "secret.jsonl").write_text(json.dumps(
        {"type": "result", "subtype": "success", "result": SECRET}) + "\n")
    run = week / "r1"
    run.mkdir()
    (run / "run.json").write_text("{}")
    os.symlink(tmp_path / "secret.jsonl", run / "stdout.txt")
    shown = read_run(week, "r1")
    assert shown["answer"] is None and "symbolic link" in shown["answer_note"]
    assert "symbolic link" in shown["trajectory_note"]


def test_out_that_is_not_a_view_is_refused_and_left_alone(
        week: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mine = tmp_path / "my-project"
    (mine / "assets").mkdir(parents=True)
    (mine / "index.html").write_text("my homepage")
    (mine / "assets" / "viewer.css").write_text("my css")
    before = {p: p.read_bytes() for p in mine.rglob("*") if p.is_file()}
    assert cli.main(["view", str(week), "--out", str(mine)]) == 2
    err = capsys.readouterr().err
    assert "not empty and not a view this tool wrote" in err and "index.html" in err
    assert {p: p.read_bytes() for p in mine.rglob("*") if p.is_file()} == before
    # A view this tool wrote is rebuilt in place; so is an empty folder.
    (tmp_path / "empty").mkdir()
    assert cli.main(["view", str(week), "--out", str(tmp_path / "empty")]) == 0
    assert cli.main(["view", str(week), "--out", str(tmp_path / "empty")]) == 0


def test_nothing_is_written_through_a_link(week: Path, tmp_path: Path) -> None:
    site = build_site(week, tmp_path / "site").index.parent
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (site / "index.html").unlink()
    os.symlink(victim, site / "index.html")
    with pytest.raises(ViewError, match="symbolic link"):
        build_site(week, site)
    assert victim.read_text() == "keep me"
    # A folder of the site that is a link is not written into either.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (site / "index.html").unlink()
    shutil.rmtree(site / "prompts")
    os.symlink(elsewhere, site / "prompts")
    with pytest.raises(ViewError, match="symbolic link"):
        build_site(week, site)
    assert list(elsewhere.iterdir()) == []
    os.symlink(elsewhere, tmp_path / "out-link")
    with pytest.raises(ViewError, match="symbolic link"):
        build_site(week, tmp_path / "out-link")
    assert list(elsewhere.iterdir()) == []


def test_the_label_sheet_neutralises_formulas(week: Path, tmp_path: Path) -> None:
    path = week / "scores.csv"
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh)
        header, rows = list(reader.fieldnames or []), list(reader)
    starts = ["=HYPERLINK(\"http://x\")", "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)"]
    for n, row in enumerate(rows):
        row["item_text"] = starts[n % 4] + " " + row["item_text"]
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=header, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    items = read_graded_items(week)
    sample = stratified_sample(items, 10, "0")[0]
    out = io.StringIO()
    write_sheet(out, week, sample, final_answer)
    sheet = list(csv.DictReader(io.StringIO(out.getvalue())))
    cells = [c for r in sheet for c in r.values()]
    assert not [c for c in cells if c[:1] in ("=", "+", "-", "@")]
    assert sum(c.startswith("'") for c in cells) == 10
    # judge-check reads the filled sheet back: the guard is taken off, every row matches.
    for r in sheet:
        r["verdict"] = r["choices"].split("|")[0]
    labels = tmp_path / "labels.csv"
    with labels.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(sheet[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(sheet)
    report = check_week(week, labels)
    assert report["overall"]["n"] == 10 and not report["unmatched"]
