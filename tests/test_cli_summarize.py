"""``skilllift summarize`` on the command line."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_skilllift.cli import summarize as summarize_cli

from .test_week_io import write_week


def run(argv: list[str]) -> int:
    """Parse with a parser that has only our subcommand (the dispatch convention of cli.py)."""
    parser = argparse.ArgumentParser(prog="skilllift")
    summarize_cli.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return int(args.func(args))


def test_summarize_writes_scorecard(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w = write_week(tmp_path / "weekly" / "20260801")
    assert run(["summarize", str(w), "--no-plots", "--print"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("# Weekly Skill Scorecard — 20260801")
    assert "wrote" in err
    assert (w / "scorecard.md").read_text() == out
    assert json.loads((w / "scorecard.json").read_text())["models"]["sonnet"]["n_prompts"] == 3
    assert (tmp_path / "weekly" / "scorecard-history.csv").exists()
    assert not (w / "forest.png").exists()


def test_prints_the_lift_table_and_the_paths_not_the_scorecard(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A big week's scorecard has a row per prompt and model: by default only the lift table
    and where the files are go to the terminal."""
    prompts = tuple(f"p{i:03d}" for i in range(150))
    w = write_week(tmp_path / "weekly" / "20260801", prompts=prompts)
    assert run(["summarize", str(w), "--no-plots"]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0].startswith("skill lift (must_coverage, with-skill − no-skill), week 20260801")
    assert any(ln.split()[:1] == ["sonnet"] and ln.rstrip().endswith("150") for ln in lines)
    assert lines[-1] == (f"wrote {w / 'scorecard.md'}, {w / 'scorecard.json'}, "
                         f"{tmp_path / 'weekly' / 'scorecard-history.csv'}")
    assert len(lines) < 10 and "p149" not in out and err == ""


def test_json_and_history_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w = write_week(tmp_path / "w")
    hist = tmp_path / "elsewhere" / "h.csv"
    assert run(["summarize", str(w), "--json", "--history", str(hist), "--no-plots"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["week"] == "w" and hist.exists()


def test_bad_input_exit_1_with_partial_scorecard(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    w = write_week(tmp_path / "w")
    (w / "scores.csv").write_text("prompt,model\nx,y\n")
    assert run(["summarize", str(w), "--no-plots"]) == 1
    _out, err = capsys.readouterr()
    assert "problem: scores.csv, row 0, column 'condition': required column is missing" in err
    assert "Traceback" not in err
    assert "this scorecard is partial" in (w / "scorecard.md").read_text()


def test_not_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["summarize", str(tmp_path / "nope")]) == 2
    assert "not a directory" in capsys.readouterr().err


def test_registered_in_skilllift_main(tmp_path: Path) -> None:
    from pytest_skilllift.cli import main as cli

    try:
        parser = cli.build_parser()
    except ImportError as exc:  # another subcommand module is not in the tree yet
        pytest.skip(f"skilllift's other subcommands are not importable: {exc}")
    w = write_week(tmp_path / "w")
    args = parser.parse_args(["summarize", str(w), "--no-plots"])
    assert args.func is summarize_cli.run


#: The real week (qdrant/skills 20260808: 208 runs, 1,512 graded items).
REAL_WEEK = Path(__file__).parent / "fixtures" / "data" / "qdrant-skills" / "weekly" / "20260808"
#: Loaded by nothing on the no-plots path of a week like it: what a small week's summarize
#: waits for is mostly imports (issue #29), and each of these is one it does not need.
NOT_IMPORTED_WITHOUT_PLOTS = (
    "matplotlib",  # the plots only
    "pytest_skilllift.report.plots",
    "pyarrow.compute",  # take / dictionary_encode only above week.tables.PYLIST_ROWS rows
    "pytest_skilllift.run.triggers",  # a week with trigger tests only
    "pytest_skilllift.week.spend",  # a week with a spend cap only
    "pytest_skilllift.week.shards",  # a shard only
)


@pytest.mark.slow
def test_no_plots_summary_of_a_small_week_leaves_the_heavy_imports_out(tmp_path: Path) -> None:
    """``skilllift summarize --no-plots`` on the real week, in a fresh interpreter (the way a
    user runs it): none of the imports it does not need is loaded, the week is summarized,
    and numpy's BLAS threads (which spin ≈ 0.1 s of CPU for nothing) are limited to one."""
    week = tmp_path / "weekly" / REAL_WEEK.name
    week.mkdir(parents=True)
    for name in ("manifest.csv", "scores.csv"):
        shutil.copyfile(REAL_WEEK / name, week / name)
    code = ("import json, os, sys\n"
            "from pytest_skilllift.cli.main import main\n"
            "status = main(['summarize', sys.argv[1], '--no-plots'])\n"
            "print(json.dumps({'status': status, 'modules': sorted(sys.modules),\n"
            "                  'blas': os.environ.get('OPENBLAS_NUM_THREADS')}))\n")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(Path(__file__).parents[1]),
                                                      env.get("PYTHONPATH"))))
    proc = subprocess.run([sys.executable, "-c", code, str(week)], capture_output=True,
                          text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["status"] == 0
    assert (week / "scorecard.json").is_file() and not (week / "forest.png").exists()
    # Exact names: a package's submodules import the package.
    assert sorted(set(NOT_IMPORTED_WITHOUT_PLOTS) & set(result["modules"])) == []
    assert "numpy" in result["modules"]  # the test ran the real path, not a short cut
    assert result["blas"] == "1"
