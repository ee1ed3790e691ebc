"""``skilllift summarize`` on the command line."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from pytest_skilllift.cli import summarize as summarize_cli

from .test_weekio import write_week


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
