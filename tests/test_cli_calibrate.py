"""``skilllift calibrate`` against the stand-in with scripted judges."""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.cli import calibrate as judge_cli
from pytest_skilllift.testing import Reply, StandIn
from pytest_skilllift.testing.judge_script import keyword_judge

KEY = "sk-ant-test-calibrate"
ANSWER = ("Use RRF fusion by default, because dense and sparse score scales differ.\n"
          "A formula query allows custom fusion.")
PROMPT = {
    "name": "hybrid", "prompt": "How do I fuse hybrid results?",
    "skill_url": "https://skills.example/hybrid/SKILL.md",
    "rubric": [
        {"type": "must", "text": "Recommends RRF fusion by default because score scales differ"},
        {"type": "must", "text": "Explains the prefetch limit of each branch"},
        {"type": "bonus", "text": "Mentions a formula query for custom fusion"},
        {"type": "avoid", "text": "Recommends tuning HNSW ef before measuring recall"},
    ],
}


def make_week(tmp_path: Path, *, answer_in_record: bool = True) -> Path:
    week = tmp_path / "20260808"
    run_dir = week / "hybrid-haiku-no-skill-r1"
    run_dir.mkdir(parents=True)
    prompt_path = tmp_path / "hybrid.json"
    prompt_path.write_text(json.dumps(PROMPT))
    record: dict[str, Any] = {"run_id": run_dir.name, "prompt_path": str(prompt_path)}
    if answer_in_record:
        record["final_answer"] = ANSWER
    else:
        result = {"type": "result", "subtype": "success", "is_error": False, "result": ANSWER}
        (run_dir / "stdout.txt").write_text(json.dumps(result) + "\n")
    (run_dir / "run.json").write_text(json.dumps(record))
    return week


def run_cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="skilllift")
    judge_cli.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return int(args.func(args))


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> Any:
    def use(api: StandIn) -> None:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    return use


@pytest.mark.parametrize("answer_in_record", [True, False], ids=["run.json", "transcript"])
def test_consistent_judge_passes(tmp_path: Path, env: Any, answer_in_record: bool,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    week = make_week(tmp_path, answer_in_record=answer_in_record)
    with StandIn(judge=keyword_judge, api_key=KEY) as api:
        env(api)
        code = run_cli(["calibrate", str(week), "--run", "hybrid-haiku-no-skill-r1",
                        "--samples", "3", "--model", "claude-opus-4-7"])
        assert api.count("judge") == 3
    out = capsys.readouterr().out
    assert code == 0, out
    assert "musts unanimous: 2/2 = 100%" in out and "PASS" in out
    report = json.loads((week / "hybrid-haiku-no-skill-r1" / "calibration.json").read_text())
    assert report["passed"] and report["graded_samples"] == 3
    assert [i["status"] for i in report["items"]] == ["unanimous"] * 4
    assert KEY not in json.dumps(report)


def test_flipping_judge_fails_the_bar(tmp_path: Path, env: Any,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    flip = itertools.count()

    def flaky(body: dict[str, Any]) -> Reply:
        reply = keyword_judge(body)
        if next(flip) == 1:  # the second sample calls every must "missing"
            for entry in reply.content[-1]["input"]["verdicts"]:
                if entry["verdict"] == "met":
                    entry["verdict"], entry["evidence"] = "missing", ""
        return reply

    week = make_week(tmp_path)
    with StandIn(judge=flaky, api_key=KEY) as api:
        env(api)
        code = run_cli(["calibrate", str(week), "--run", "hybrid-haiku-no-skill-r1",
                        "--model", "claude-opus-4-7"])
    out = capsys.readouterr().out
    assert code == 1
    assert "musts unanimous: 1/2 = 50%" in out and "FAIL" in out
    assert "split" in out


def test_several_runs_are_summarized_into_the_week_file(
        tmp_path: Path, env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    week = make_week(tmp_path)
    second = week / "hybrid-haiku-with-skill-r1"
    second.mkdir()
    record = json.loads((week / "hybrid-haiku-no-skill-r1" / "run.json").read_text())
    (second / "run.json").write_text(json.dumps({**record, "run_id": second.name}))
    (second / "grades.json").write_text("{}")  # graded: eligible for --runs
    with StandIn(judge=keyword_judge, api_key=KEY) as api:
        env(api)
        code = run_cli(["calibrate", str(week), "--run", "hybrid-haiku-no-skill-r1",
                        "--runs", "1", "--samples", "2", "--model", "claude-opus-4-7"])
        assert api.count("judge") == 4  # 2 runs × 2 samples
    assert code == 0
    data = json.loads((week / "calibration.json").read_text())
    assert sorted(data["runs"]) == ["hybrid-haiku-no-skill-r1", "hybrid-haiku-with-skill-r1"]
    summary = data["summary"]
    assert summary["by_type"]["must"] == {"items": 4, "unanimous": 4, "split": 0,
                                          "incomplete": 0, "flip_rate": 0.0}
    assert summary["must_unanimous_share"] == 1.0 and summary["passed"]
    assert "week 20260808: 2 run(s) calibrated" in capsys.readouterr().out


def test_missing_run_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(["calibrate", str(tmp_path), "--run", "nope", "--model", "m"]) == 2
    assert "run.json" in capsys.readouterr().err


def test_a_second_pass_keeps_what_the_first_calibrated(
        tmp_path: Path, env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """The same command again (after an interrupt, say) pays nothing for a run calibrated
    with the same model, samples and bar; another protocol or ``--fresh`` calibrates it."""
    week = make_week(tmp_path)
    argv = ["calibrate", str(week), "--run", "hybrid-haiku-no-skill-r1", "--samples", "2",
            "--model", "claude-opus-4-7"]
    with StandIn(judge=keyword_judge, api_key=KEY) as api:
        env(api)
        assert run_cli(argv) == 0 and api.count("judge") == 2
        capsys.readouterr()
        assert run_cli(argv) == 0 and api.count("judge") == 2
        out = capsys.readouterr().out
        assert ("calibration of hybrid-haiku-no-skill-r1: kept from an earlier pass (2 of 2 "
                "samples graded by claude-opus-4-7; --fresh to redo it)") in out
        assert "week 20260808: 1 run(s) calibrated" in out and "PASS" in out
        assert run_cli([*argv, "--fresh"]) == 0 and api.count("judge") == 4
        assert run_cli([*argv[:-3], "3", *argv[-2:]]) == 0 and api.count("judge") == 7
    data = json.loads((week / "calibration.json").read_text())
    assert data["runs"]["hybrid-haiku-no-skill-r1"]["samples"] == 3
