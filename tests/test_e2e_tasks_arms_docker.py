"""The session's other arms on a Harbor task, in docker, offline, with the real CLI driven by the
stand-in's working agent: what each container lists, and the scorecard's reward numbers.

The demo's ``sales-report`` task in a git repository whose previous commit held a worse
``csv-report`` skill (it counted refunds as sales: ``abs()``), beside a skills root of two
other families. One week runs every arm:

- ``no-skill`` and ``no-skill-b`` (the A/A arm): the container lists no skill, reward 0;
- ``with-skill``: lists ``csv-report`` only, reward 1;
- ``with-all``: lists ``csv-report`` and both families of the skills root, reward 1 (the
  agent still picks the matching skill);
- ``with-skill@HEAD~1``: lists ``csv-report`` as it was — its body, the ``abs()`` line, is in
  the transcript — and its report is wrong: reward 0.

So the scorecard shows: with-all − no-skill +1, with-all − with-skill 0, with-skill −
with-skill@HEAD~1 +1 (the version lift), no-skill-b − no-skill 0 — exactly what the stand-in's
script implies.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

docker = pytest.importorskip("docker", reason="the docker SDK is not installed")

from pytest_skilllift.config import DEMO_PROJECT, DEMO_TASKS  # noqa: E402

from .docker_env import docker_problem, task_base, task_standin  # noqa: E402, F401
from .test_plugin_e2e import run  # noqa: E402

pytestmark = [pytest.mark.docker, pytest.mark.cli]

_PROBLEM = docker_problem()
if _PROBLEM:
    pytest.skip(_PROBLEM, allow_module_level=True)

ARMS = ("no-skill", "with-skill", "with-all", "no-skill-b", "with-skill@HEAD~1")
FAMILIES = ("git-bisect", "python-packaging")
#: The skill's bug at HEAD~1: refunds counted as sales.
OLD_LINE = 'amount = abs(float(row["amount"].replace(",", "")))'


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), "-c", "user.email=t@t", "-c", "user.name=t", *args],
                   check=True, capture_output=True)


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def make_project(pytester: pytest.Pytester) -> Path:
    root = pytester.path
    for family in FAMILIES:
        shutil.copytree(DEMO_PROJECT / "skills" / family, root / "skills" / family)
    task = root / "evals" / "tasks" / "sales-report"
    shutil.copytree(DEMO_TASKS / "sales-report", task)
    skill = task / "environment" / "skills" / "csv-report" / "SKILL.md"
    current = skill.read_text()
    line = 'amount = float(row["amount"].replace(",", ""))'
    assert line in current
    skill.write_text(current.replace(line, OLD_LINE))
    pytester.makeini("[pytest]\nskill_lift_models = sonnet=claude-sonnet-4-5\n"
                     f"skill_lift_reps = 1\nskill_lift_out = week\n"
                     f"skill_lift_conditions = {','.join(ARMS)}\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "the skill with its refunds bug")
    skill.write_text(current)
    git(root, "commit", "-qam", "the skill keeps the refunds' sign")
    return root


def test_every_arm_of_a_task_in_docker(pytester: pytest.Pytester,
                                       task_standin: Any) -> None:  # noqa: F811
    from pytest_skilllift.run.tasks.record import listed_skills

    root = make_project(pytester)
    result = run(pytester, task_standin, "-p", "no:xdist", "--skill-lift-docker-network=host",
                 "-rA", timeout=900)
    out = result.stdout.str()
    week = root / "week"
    runs = {arm: week / f"sales-report-sonnet-{arm}-r1-week" for arm in ARMS}
    records = {arm: load(d / "run.json") for arm, d in runs.items()}
    assert {arm: r["run_status"] for arm, r in records.items()} == dict.fromkeys(ARMS, "ok"), out
    # -- what each container lists (the CLI's own init event) -------------------------------
    # (the CLI's own bundled skills are listed in every arm alike: the project's are compared)
    ours = {"csv-report", *FAMILIES}
    listed = {arm: sorted(ours & set(listed_skills(d / "stdout.txt") or ()))
              for arm, d in runs.items()}
    assert listed["no-skill"] == [] and listed["no-skill-b"] == []
    assert listed["with-skill"] == ["csv-report"]
    assert listed["with-all"] == ["csv-report", *FAMILIES]
    assert listed["with-skill@HEAD~1"] == ["csv-report"]
    # the REF arm's container held the skill as it was (its body is in the transcript)
    # (stream-json escapes the line's quotes: its quote-free part is looked for)
    assert "abs(float(row[" in (runs["with-skill@HEAD~1"] / "stdout.txt").read_text()
    assert "abs(float(row[" not in (runs["with-skill"] / "stdout.txt").read_text()
    images = {arm: load(d / "task.json")["image"] for arm, d in runs.items()}
    assert images["no-skill"] == images["no-skill-b"]
    assert images["with-skill"] == images["with-all"]  # the others are installed, not built in
    assert len({images["with-skill"], images["with-skill@HEAD~1"], images["no-skill"]}) == 3
    # -- the rewards the stand-in's script implies -----------------------------------------
    rewards = {arm: r["reward"] for arm, r in records.items()}
    assert rewards == {"no-skill": 0, "with-skill": 1, "with-all": 1, "no-skill-b": 0,
                       "with-skill@HEAD~1": 0}
    assert "UNMET evals/tasks/sales-report::sonnet::no-skill-b::r1::reward" in out
    assert "PASSED evals/tasks/sales-report::sonnet::with-all::r1::reward" in out
    # -- the scorecard's reward numbers, the way these arms show for prompts ----------------
    card = load(week / "scorecard.json")
    m = card["rewards"]["models"]["sonnet"]
    assert (m["reward_no"], m["reward_with"], m["reward_lift"]) == (0, 1, 1)
    lifts = {c["comparison"]: c["lift"] for a in m["arms"].values() for c in a["comparisons"]}
    assert lifts == {"with-all − no-skill": 1, "with-all − with-skill": 0,
                     "no-skill-b − no-skill": 0, "with-skill − with-skill@HEAD~1": 1,
                     "with-skill@HEAD~1 − no-skill": 0}
    assert {a: v["pass_rate"] for a, v in m["arms"].items()} == {
        "with-all": 1, "no-skill-b": 0, "with-skill@HEAD~1": 0}
    text = (week / "scorecard.md").read_text()
    assert "The other arms on the tasks" in text and "with-skill − with-skill@HEAD~1" in text
    # the week records the task allow-list and the revision it measured
    identity = json.loads((week / "week.json").read_text())["identity"]
    assert "Write" in identity["task_tools"] and identity["revision"]["ref"] == "HEAD~1"
