"""At ``--depth quick`` the static composite covers 66% of PluginEval's dimension weight: its
grade and badge say "static only, provisional" wherever they are printed."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path

from pytest_skilllift.cli import score as lint_cli
from pytest_skilllift.lint.composite import compute_composite
from pytest_skilllift.testing.skill_dirs import write_skill


def score(*argv: str) -> str:
    parser = argparse.ArgumentParser(prog="skilllift")
    lint_cli.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["score", *argv])
    out = io.StringIO()
    args.func(args, out)
    return out.getvalue()


def test_quick_depth_grade_and_badge_say_static_only_provisional(tmp_path: Path) -> None:
    skill = write_skill(tmp_path / "s")
    text = score(str(skill))
    assert "static only, provisional: 66% of the dimension weight" in text
    line = next(ln for ln in text.splitlines() if ln.startswith("composite "))
    assert "grade " in line and "(static only, provisional: 66% of the dimension weight)" in line
    data = json.loads(score(str(skill), "--output", "json"))
    comp = data["composite"]
    assert comp["provisional"] is True and comp["weight_covered"] == 0.66
    assert comp["qualifier"] == "static only, provisional: 66% of the dimension weight"


def test_a_tree_marks_provisional_grades(tmp_path: Path) -> None:
    write_skill(tmp_path / "a")
    write_skill(tmp_path / "b")
    text = score(str(tmp_path))
    assert "* grade and badge: static only, provisional: 66% of the dimension weight" in text


def test_full_weight_is_not_provisional() -> None:
    from pytest_skilllift.lint.composite import DIMENSION_WEIGHTS

    full = compute_composite({d: {"static": 0.9, "judge": 0.9, "monte_carlo": 0.9}
                              for d in DIMENSION_WEIGHTS}, 0)
    assert not full.provisional and full.qualifier == "" and full.grade_text() == full.grade
    part = compute_composite({"triggering_accuracy": {"static": 0.9, "judge": 0.9}}, 0)
    assert part.qualifier == "provisional: 25% of the dimension weight"
