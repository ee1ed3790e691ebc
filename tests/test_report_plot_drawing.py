"""The plots drawn in a worker process are the plots drawn in-process, and a plot that
cannot be drawn is a named problem, never a lost scorecard — on both paths."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from pytest_skilllift.report import plot_drawing
from pytest_skilllift.report.plot_drawing import (
    PLOTS_MODULE,
    InProcessDrawer,
    ProcessDrawer,
    start_drawer,
)
from pytest_skilllift.report.summarize import summarize_week
from pytest_skilllift.week.history import HistoryRow, upsert_history

REF_WEEK = Path(__file__).resolve().parent / "fixtures" / "data" / "qdrant-skills" / "weekly" / (
    "20260808")


def week_with_history(root: Path) -> Path:
    """The real week, after two earlier runs in its history (so it gets both plots)."""
    weekly = root / "weekly"
    week = weekly / REF_WEEK.name
    shutil.copytree(REF_WEEK, week)
    for stale in ("scorecard.md", "scorecard.json", "forest.png", "trend.png"):
        (week / stale).unlink(missing_ok=True)
    upsert_history(weekly / "scorecard-history.csv", [
        HistoryRow("20260725", "20260725T090000Z", "sonnet", 0.10, 0.05),
        HistoryRow("20260801", "20260801T090000Z", "sonnet", 0.15, 0.04),
    ])
    return week


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The same week summarized with its plots drawn in a worker and in-process."""
    worker = week_with_history(tmp_path_factory.mktemp("worker"))
    here = week_with_history(tmp_path_factory.mktemp("here"))
    a = summarize_week(worker, plot_process=True)
    b = summarize_week(here, plot_process=False)
    assert a.problems == b.problems == []
    return worker, here


@pytest.mark.parametrize("name", ["forest.png", "trend.png", "scorecard.md", "scorecard.json"])
def test_worker_draws_exactly_what_this_process_draws(both: tuple[Path, Path], name: str) -> None:
    worker, here = both
    # The files name their own week directory (the history's path): the two differ there.
    assert ((worker / name).read_bytes().replace(bytes(worker.parents[1]), b"ROOT")
            == (here / name).read_bytes().replace(bytes(here.parents[1]), b"ROOT"))
    if name.endswith(".png"):
        assert (worker / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"]({name})" in (worker / "scorecard.md").read_text(encoding="utf-8")


@pytest.mark.slow
@pytest.mark.parametrize("process", [True, False], ids=["worker", "in-process"])
def test_a_plot_that_cannot_be_drawn_is_a_named_problem(tmp_path: Path, process: bool) -> None:
    week = week_with_history(tmp_path)
    (week / "forest.png").mkdir()  # savefig cannot write a file where a directory is
    s = summarize_week(week, plot_process=process)
    assert [p for p in s.problems if p.startswith("plots")] == [
        p for p in s.problems if "could not draw the forest plot" in p]
    assert len(s.problems) == 1 and "forest.png" in s.problems[0]
    md = (week / "scorecard.md").read_text(encoding="utf-8")
    assert "(forest.png)" not in md and "](trend.png)" in md  # the other plot still drawn
    assert s.data["plots"] == {"forest": None, "trend": "trend.png"}
    assert "could not draw the forest plot" in md  # the partial-scorecard warning says so
    assert week / "forest.png" not in s.written and week / "trend.png" in s.written


def test_a_worker_that_cannot_run_fails_every_plot_with_its_exit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    week = week_with_history(tmp_path)
    # Not a Python: "-m pytest_skilllift.report.plot_worker" makes it exit non-zero.
    monkeypatch.setattr(sys, "executable", shutil.which("false") or "/bin/false")
    s = summarize_week(week, plot_process=True)
    assert sorted(s.problems) == [
        "plots: could not draw the forest plot: the plot worker exited 1 (no output)",
        "plots: could not draw the trend plot: the plot worker exited 1 (no output)"]
    assert not (week / "forest.png").exists() and not (week / "trend.png").exists()
    assert (week / "scorecard.json").exists()  # the numbers never wait on a picture


@pytest.mark.slow
def test_the_worker_is_chosen_only_when_matplotlib_is_not_loaded(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import pytest_skilllift.report.plots  # noqa: F401  (loaded: drawn here)

    assert isinstance(start_drawer(), InProcessDrawer)
    monkeypatch.delitem(sys.modules, PLOTS_MODULE)
    drawer = start_drawer()
    assert isinstance(drawer, ProcessDrawer)
    drawer.cancel()  # an empty job: the worker exits at once
    assert isinstance(start_drawer(process=False), InProcessDrawer)


def test_the_worker_gets_the_package_and_no_credentials(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "token-secret")
    monkeypatch.setenv("PYTHONPATH", "elsewhere")
    env = plot_drawing.worker_env()
    assert "ANTHROPIC_API_KEY" not in env and "ANTHROPIC_AUTH_TOKEN" not in env
    root = Path(plot_drawing.__file__).resolve().parents[2]
    assert env["PYTHONPATH"].split(":") == [str(root), "elsewhere"]
    assert (root / "pytest_skilllift" / "report" / "plot_worker.py").is_file()


def test_a_summary_that_fails_does_not_leave_the_worker_waiting(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_skilllift.report import summarize

    started: list[ProcessDrawer] = []

    def start(*, process: bool | None = None) -> ProcessDrawer:
        started.append(ProcessDrawer())
        return started[-1]

    def broken(week_dir: Path) -> None:
        raise RuntimeError("the disk went away")

    monkeypatch.setattr(summarize, "start_drawer", start)
    monkeypatch.setattr(summarize, "load_week", broken)
    with pytest.raises(RuntimeError, match="the disk went away"):
        summarize.summarize_week(week_with_history(tmp_path))
    assert len(started) == 1 and started[0]._proc.returncode == 0  # told to stop; it did
