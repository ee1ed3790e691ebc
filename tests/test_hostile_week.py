"""Hostile weeks: nothing outside the week is ever touched, nothing paid for is thrown away.

Each case is a week restored from a cache or an artifact (or planted) with symbolic links
where run folders, lock files or per-run files should be, a ``--skill-lift-out`` typo that
names someone's folder, a regrade whose judge fails, and two merges into one directory at
once. The engine, the ledger and the copies between weeks are driven directly (the fakes of
``test_engine``); the guarantees are the week file layer's (``week/files.py``), so every
command that goes through it keeps them.
"""

from __future__ import annotations

import json
import threading
import warnings
from pathlib import Path

import pytest

from pytest_skilllift.run.regrade import (
    FreshPass,
    RegradeError,
    copy_week,
    grade_direct,
    plan_regrade,
)
from pytest_skilllift.week.files import (
    GRADES_FILE,
    LOCK_FILE,
    RUN_FILE,
    STDOUT_FILE,
    WeekLinkError,
)
from pytest_skilllift.week.guard import NotAWeek, check_week_dir
from pytest_skilllift.week.ledger import Ledger
from pytest_skilllift.week.ledger_checks import LedgerWarning
from pytest_skilllift.week.merge import MergeRefused, merge_shards
from tests.test_run_engine import CountingGrader, FakeRunner, engine, spec


@pytest.fixture
def week(tmp_path: Path) -> Path:
    return tmp_path / "weekly" / "20260808"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory that is not the week's: its files must survive everything."""
    folder = tmp_path / "home-of-someone"
    folder.mkdir()
    (folder / "precious.txt").write_text("not yours\n")
    return folder


def test_a_run_folder_that_is_a_link_is_refused_and_its_target_untouched(
        week: Path, outside: Path) -> None:
    week.mkdir(parents=True)
    (week / spec().run_id).symlink_to(outside, target_is_directory=True)
    runner, grader = FakeRunner(), CountingGrader()
    with pytest.raises(WeekLinkError, match=rf"{spec().run_id} is a symbolic link"):
        engine(week, runner, grader).result(spec())
    # Nothing deleted, nothing written through the link, no paid run started.
    assert sorted(p.name for p in outside.iterdir()) == ["precious.txt"]
    assert runner.calls == [] and grader.calls == 0


def test_a_lock_file_that_is_a_link_is_never_opened_for_writing(
        week: Path, outside: Path) -> None:
    run_dir = week / spec().run_id
    run_dir.mkdir(parents=True)
    (run_dir / LOCK_FILE).symlink_to(outside / "precious.txt")
    with pytest.raises(WeekLinkError, match="lock file"):
        engine(week, FakeRunner(), CountingGrader()).result(spec())
    assert (outside / "precious.txt").read_text() == "not yours\n"  # not truncated


def test_a_link_inside_a_reset_run_is_removed_as_a_link_not_followed(
        week: Path, outside: Path) -> None:
    run_dir = week / spec().run_id
    run_dir.mkdir(parents=True)
    (run_dir / "notes").symlink_to(outside, target_is_directory=True)
    engine(week, FakeRunner(), CountingGrader()).result(spec())
    assert (outside / "precious.txt").is_file()
    assert not (run_dir / "notes").exists() and (run_dir / RUN_FILE).is_file()


def test_linked_run_folders_and_per_run_files_stay_out_of_the_csvs(
        week: Path, outside: Path) -> None:
    """A link to another week's run (or a grades.json pointing at a host file) is named
    and left out of manifest.csv and scores.csv, never read through."""
    e = engine(week, FakeRunner(), CountingGrader())
    e.result(spec("no-skill"))
    foreign = outside / "run"
    foreign.mkdir()
    (foreign / RUN_FILE).write_text(
        (week / spec("no-skill").run_id / RUN_FILE).read_text().replace("no-skill", "planted"))
    (week / "planted-run").symlink_to(foreign, target_is_directory=True)
    graded = week / spec("no-skill").run_id / GRADES_FILE
    (outside / "grades.json").write_text(graded.read_text())
    graded.unlink()
    graded.symlink_to(outside / "grades.json")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        manifest_rows, score_rows = Ledger(week).rebuild_csvs()
    assert (manifest_rows, score_rows) == (1, 0)
    shown = " ".join(str(w.message) for w in caught if issubclass(w.category, LedgerWarning))
    assert "planted-run is a symbolic link" in shown and "grades.json is a symbolic link" in shown


def test_judge_out_never_copies_a_links_target(week: Path, outside: Path,
                                               tmp_path: Path) -> None:
    engine(week, FakeRunner(), CountingGrader()).result(spec())
    run_dir = week / spec().run_id
    (run_dir / STDOUT_FILE).unlink()
    (run_dir / STDOUT_FILE).symlink_to(outside / "precious.txt")
    copy = tmp_path / "copy"
    with pytest.raises(RegradeError, match=r"stdout.txt is a symbolic link"):
        copy_week(week, copy)
    assert not any(p.is_file() and "not yours" in p.read_text()
                   for p in copy.rglob("*")) if copy.exists() else True


def test_merge_never_copies_a_links_target(week: Path, outside: Path, tmp_path: Path) -> None:
    engine(week, FakeRunner(), CountingGrader()).result(spec())
    run_dir = week / spec().run_id
    (run_dir / STDOUT_FILE).unlink()
    (run_dir / STDOUT_FILE).symlink_to(outside / "precious.txt")
    out = tmp_path / "merged" / "20260808"
    with pytest.raises(MergeRefused, match=r"stdout.txt is a symbolic link"):
        merge_shards(out, [week])
    assert not out.exists()


def test_two_merges_into_one_directory_take_turns(week: Path, tmp_path: Path) -> None:
    e = engine(week, FakeRunner(), CountingGrader())
    for rep in range(1, 7):
        e.result(spec("no-skill", rep))
        e.result(spec("with-skill", rep))
    out = tmp_path / "merged" / "20260808"
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def merge() -> None:
        start.wait()
        try:
            merge_shards(out, [week])
        except BaseException as exc:  # a crash, or a sweep that removed the other's copy
            errors.append(exc)

    threads = [threading.Thread(target=merge) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(Ledger(out).run_records()) == 12
    assert not [p for p in out.iterdir() if p.name.startswith(".merge-")]


def test_out_that_is_not_a_week_is_refused_naming_what_is_in_it(tmp_path: Path) -> None:
    folder = tmp_path / "Documents"
    folder.mkdir()
    (folder / "manifest.csv").write_text("my,own,data\n")
    (folder / "taxes.xlsx").write_text("…")
    with pytest.raises(NotAWeek, match=r"not a week directory and not empty \(it holds "
                                       r"manifest.csv, taxes.xlsx\)"):
        check_week_dir(folder)
    # A new or empty directory, our week (week.json) and a qdrant pipeline week are weeks.
    check_week_dir(tmp_path / "new")
    (tmp_path / "empty").mkdir()
    check_week_dir(tmp_path / "empty")
    ours = tmp_path / "ours"
    ours.mkdir()
    (ours / "week.json").write_text("{}")
    (ours / "notes.txt").write_text("kept")
    check_week_dir(ours)


def test_a_qdrant_pipeline_week_is_a_week(reference_data: Path) -> None:
    check_week_dir(reference_data / "qdrant-skills" / "weekly" / "20260808")


def test_judge_fresh_with_a_failing_judge_keeps_every_grade(week: Path, tmp_path: Path) -> None:
    prompt = tmp_path / "p.json"
    prompt.write_text(json.dumps({
        "prompt": "Insert a million rows fast.", "skill": "sqlite-bulk/SKILL.md",
        "product_area": "db",
        "rubric": [{"type": "must", "text": "uses executemany"},
                   {"type": "must", "text": "one transaction"},
                   {"type": "avoid", "text": "autocommit per row"}]}))
    e = engine(week, FakeRunner(), CountingGrader())
    for condition in ("no-skill", "with-skill"):
        e.result(spec(condition))
    before = {p.parent.name: p.read_bytes() for p in week.glob(f"*/{GRADES_FILE}")}
    assert len(before) == 2

    plan = plan_regrade(week, fresh=True, prompts_dir=tmp_path)
    fresh = FreshPass(week, "judge-x")
    fresh.start(plan)
    failing = CountingGrader(error="judge call failed: HTTP 401 authentication_error")
    results = grade_direct(plan, failing, regrade_pass=fresh.pass_id)
    assert failing.calls == 2
    assert all(r.judge_error and "earlier grades are kept" in r.judge_error for r in results)
    after = {p.parent.name: p.read_bytes() for p in week.glob(f"*/{GRADES_FILE}")}
    assert after == before

    # The same pass with a judge that answers replaces them, each once.
    working = CountingGrader()
    plan = plan_regrade(week, fresh=True, prompts_dir=tmp_path)
    fresh.start(plan)
    grade_direct(plan, working, regrade_pass=fresh.pass_id)
    grade_direct(plan, working, regrade_pass=fresh.pass_id)  # a second pass pays nothing
    assert working.calls == 2
    assert all(json.loads(p.read_text())["regrade_pass"] == fresh.pass_id
               for p in week.glob(f"*/{GRADES_FILE}"))


def test_export_never_carries_a_links_target_out_of_the_week(
        week: Path, outside: Path, tmp_path: Path) -> None:
    from pytest_skilllift.report.export import export_skill_creator

    e = engine(week, FakeRunner(), CountingGrader())
    e.result(spec())
    Ledger(week).rebuild_csvs()
    run_file = week / spec().run_id / RUN_FILE
    (outside / "run.json").write_text(run_file.read_text().replace(
        "Use executemany", "HOST SECRET"))
    run_file.unlink()
    run_file.symlink_to(outside / "run.json")
    with pytest.raises(WeekLinkError, match=r"run\.json is a symbolic link"):
        export_skill_creator(week, tmp_path / "export")
    assert "HOST SECRET" not in "".join(
        p.read_text() for p in (tmp_path / "export").rglob("*") if p.is_file())


def test_a_plot_is_never_written_through_a_link(outside: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from pytest_skilllift.report import plots

    link = tmp_path / "forest.png"
    link.symlink_to(outside / "precious.txt")
    fig = plots._figure(2, 2)
    with pytest.raises(WeekLinkError, match=r"forest\.png is a symbolic link"):
        plots._save(fig, link)
    assert (outside / "precious.txt").read_text() == "not yours\n"


def test_summarize_never_reads_a_csv_through_a_link(week: Path, outside: Path) -> None:
    from pytest_skilllift.report.summarize import summarize_week

    e = engine(week, FakeRunner(), CountingGrader())
    e.result(spec())
    Ledger(week).rebuild_csvs()
    manifest = week / "manifest.csv"
    (outside / "manifest.csv").write_text(manifest.read_text().replace("sonnet", "HOSTMODEL"))
    manifest.unlink()
    manifest.symlink_to(outside / "manifest.csv")
    summary = summarize_week(week, plots=False)
    assert any("manifest.csv is a symbolic link" in str(p) for p in summary.problems)
    assert "HOSTMODEL" not in (week / "scorecard.md").read_text()
