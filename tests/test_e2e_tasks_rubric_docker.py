"""A task with a rubric.json end to end, in docker, offline, with the real CLI: the demo's
``sales-report`` (its rubric: two must items, a bonus, an avoid) run by the stand-in's working
agent, verified by its pytest verifier, and graded by the stand-in's keyword judge over the
instruction, the final message and the files the agent wrote.

With the skill, the agent writes ``report.json`` (the skill's bash block): both must items are
met with quotes from that file; without, it writes a generic ``ATTEMPT.md``: both missing,
the avoid item violated. The rubric's coverage is its own scorecard section (0 → 1), apart from
the reward lift and from the prompts' must coverage; resuming the week grades nothing again.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

docker = pytest.importorskip("docker", reason="the docker SDK is not installed")

from pytest_skilllift.config import DEMO_TASKS  # noqa: E402

from .docker_env import docker_problem, task_base, task_standin  # noqa: E402, F401
from .test_plugin_e2e import run  # noqa: E402

pytestmark = [pytest.mark.docker, pytest.mark.cli]

_PROBLEM = docker_problem()
if _PROBLEM:
    pytest.skip(_PROBLEM, allow_module_level=True)


def judge_texts(server: Any) -> list[str]:
    return ["\n".join(str(b.get("text", "")) for m in body["messages"] for b in m["content"])
            for body in server.bodies("judge")]


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def test_a_task_with_a_rubric_is_judged_over_the_files_it_made(pytester: pytest.Pytester,
                                                                task_standin: Any) -> None:  # noqa: F811
    root = pytester.path
    shutil.copytree(DEMO_TASKS / "sales-report", root / "evals" / "tasks" / "sales-report")
    pytester.makeini("[pytest]\nskill_lift_models = sonnet=claude-sonnet-4-5\n"
                     "skill_lift_reps = 1\nskill_lift_out = week\n")
    result = run(pytester, task_standin, "-p", "no:xdist", "--skill-lift-docker-network=host",
                 "-rA", timeout=900)
    out = result.stdout.str()
    base = "evals/tasks/sales-report::sonnet"
    # -- the rubric's items beside the verifier's, findings never failures ------------------
    for item in ("must-1", "must-2", "bonus-1", "avoid-1"):
        assert f"PASSED {base}::with-skill::r1::{item}" in out, out
    assert f"MISSING {base}::no-skill::r1::must-1" in out
    assert f"VIOLATED {base}::no-skill::r1::avoid-1" in out
    assert f"PASSED {base}::with-skill::r1::reward" in out
    assert "failed" not in result.parseoutcomes()
    # -- what the judge saw: the instruction, the answer, the files, each named --------------
    sent = judge_texts(task_standin)
    assert len(sent) == 2
    with_text = next(t for t in sent if "### report.json (" in t)
    no_text = next(t for t in sent if "### ATTEMPT.md (" in t)
    assert "Summarise the sales ledger" in with_text and '"total": 1670.35' in with_text
    assert "at most 16384 bytes a file, 65536 in all" in no_text
    week = root / "week"
    with_dir = week / "sales-report-sonnet-with-skill-r1-week"
    report = (with_dir / "artifacts" / "report.json").read_text()
    assert report in with_text  # exactly the file the run saved
    grades = load(with_dir / "grades.json")
    must = {f"{r['item_type']}-{r['item_index']}": r for r in grades["rows"]}
    assert must["must-1"]["evidence_ok"] == 1 and must["must-1"]["evidence_quote"] in report
    assert grades["judge_files"]["shown"][0]["path"] == "report.json"
    # -- the numbers: the rubric's coverage on its own, the reward on its own -----------------
    card = load(week / "scorecard.json")
    assert card["task_rubric"]["models"]["sonnet"]["must_no"] == 0.0
    assert card["task_rubric"]["models"]["sonnet"]["must_with"] == 1.0
    assert card["rewards"]["models"]["sonnet"]["reward_lift"] == 1.0
    with (week / "scores.csv").open(newline="") as fh:
        assert list(csv.DictReader(fh)) == []  # nothing of the task in the prompts' coverage
    assert "## Task rubric coverage" in (week / "scorecard.md").read_text()
    # -- resuming grades nothing again, generates nothing again -------------------------------
    judged, agents = len(task_standin.bodies("judge")), len(task_standin.bodies("agent"))
    again = run(pytester, task_standin, "-p", "no:xdist", "--skill-lift-docker-network=host",
                timeout=600)
    assert "failed" not in again.parseoutcomes()
    assert len(task_standin.bodies("judge")) == judged
    assert len(task_standin.bodies("agent")) == agents
