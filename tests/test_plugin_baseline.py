"""``--skill-lift-baseline-from`` through ``pytest --skill-lift`` with the real CLI against the
stand-in: the calls are counted, not assumed (the project of ``test_plugin_e2e``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_skilllift.runners.claude import bundled_claude
from tests.test_plugin_e2e import make_project, rows, run

pytestmark = [
    pytest.mark.cli,
    pytest.mark.skipif(bundled_claude() is None, reason="claude-agent-sdk (bundled CLI) missing"),
]


def calls(server: Any) -> tuple[int, int]:
    return server.count("agent"), server.count("judge")


def test_reuse_costs_nothing_when_unchanged_and_regenerates_exactly_the_changed(
        pytester: pytest.Pytester, standin: Any) -> None:
    root = make_project(pytester)
    assert run(pytester, standin, "-p", "no:xdist", "--skill-lift-out=w1").ret == 0
    first = {r["run_id"]: r for r in rows(root / "w1" / "manifest.csv")}
    assert len(first) == 4

    # A skill-only change: the no-skill answers cannot change, so none is paid for again,
    # under -n 2 too (the workers read the controller's plan).
    skill = root / "skills" / "git-bisect" / "SKILL.md"
    skill.write_text(skill.read_text() + "\n- Also: write the bisect log to a file.\n")
    before = calls(standin)
    result = run(pytester, standin, "-n", "2", "--skill-lift-out=w2",
                 "--skill-lift-baseline-from=w1", "-k", "no-skill")
    assert result.ret == 0, result.stdout.str()
    assert calls(standin) == before  # zero agent calls, zero judge calls
    second = rows(root / "w2" / "manifest.csv")
    assert sorted(r["condition"] for r in second) == ["no-skill", "no-skill"]
    assert all(r["baseline_from"] == "w1" and r["baseline_reason"] == "" for r in second)
    for r in second:  # the same answer, now filed under this week's run id
        old = r["run_id"].replace("-w2", "-w1")
        assert (root / "w2" / r["run_id"] / "stdout.txt").read_bytes() == (
            root / "w1" / old / "stdout.txt").read_bytes()
    assert "baseline from w1: 2 of 2 (prompt, model) pairs reuse its no-skill runs" in \
        result.stdout.str()
    # The skill arm is generated as usual and the week scores.
    before = calls(standin)
    assert run(pytester, standin, "-p", "no:xdist", "--skill-lift-out=w2",
               "--skill-lift-baseline-from=w1").ret == 0
    agent, judge = calls(standin)
    assert judge - before[1] == 2 and agent > before[0]  # the two with-skill runs only
    card = json.loads((root / "w2" / "scorecard.json").read_text())
    assert card["baseline"]["reused_runs"] == 2 and card["baseline"]["source_weeks"] == ["w1"]
    assert card["models"]["haiku"]["n_prompts"] == 2
    md = (root / "w2" / "scorecard.md").read_text()
    assert "no-skill runs reused: **2 of 2**, from week `w1`" in md
    assert "shares w1's sampling noise" in md

    # One prompt's rubric edited: exactly that prompt's no-skill run is generated, and says why.
    path = root / "evals" / "test-prompts" / "python-packaging-pyproject.json"
    data = json.loads(path.read_text())
    data["rubric"][0]["text"] += " (and says why)"
    path.write_text(json.dumps(data))
    before = calls(standin)
    result = run(pytester, standin, "-p", "no:xdist", "--skill-lift-out=w3",
                 "--skill-lift-baseline-from=w1", "-k", "no-skill")
    assert result.ret == 0, result.stdout.str()
    agent, judge = calls(standin)
    assert judge - before[1] == 1 and agent > before[0]  # one run generated and graded
    third = {r["prompt"]: r for r in rows(root / "w3" / "manifest.csv")}
    assert third["git-bisect-regression"]["baseline_from"] == "w1"
    assert third["python-packaging-pyproject"]["baseline_from"] == ""
    assert third["python-packaging-pyproject"]["baseline_reason"] == "rubric edited"
    b = json.loads((root / "w3" / "scorecard.json").read_text())["baseline"]
    assert b["reused_runs"] == 1 and b["regenerated"] == [
        {"prompt": "python-packaging-pyproject", "model": "haiku", "runs": 1,
         "reason": "rubric edited"}]


def test_a_weekdir_that_cannot_serve_is_a_usage_error(pytester: pytest.Pytester,
                                                     standin: Any) -> None:
    make_project(pytester, ("git-bisect-regression.json",))
    result = run(pytester, standin, "-p", "no:xdist", "--skill-lift-baseline-from=nowhere")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--skill-lift-baseline-from=*nowhere: no such directory*"])
    assert standin.count() == 0
