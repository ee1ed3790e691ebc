"""``--skill-lift-max-spend`` and ``--skill-lift-judge-batch`` through ``pytest --skill-lift``,
with the real bundled CLI against the stand-in (which counts every call and every batch)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.judge.batch import custom_id
from pytest_skilllift.runners.claude import bundled_claude
from pytest_skilllift.testing.agent_script import skill_agent
from pytest_skilllift.testing.batches import BatchScript
from pytest_skilllift.testing.judge_script import keyword_judge
from pytest_skilllift.testing.server import StandIn
from pytest_skilllift.week.files import BATCHES_FILE, SCORECARD_JSON, SPEND_FILE
from tests.test_plugin_shards import KEY, REPO, make_project, pytest_run

pytestmark = [
    pytest.mark.cli,
    pytest.mark.skipif(bundled_claude() is None, reason="claude-agent-sdk (bundled CLI) missing"),
]
WEEK = "20260808"


def test_spend_cap_stops_new_runs_reports_them_and_counts_earlier_spend(
        tmp_path: Path) -> None:
    root = make_project(tmp_path)
    for extra in root.glob("evals/test-prompts/python-*.json"):
        extra.unlink()  # one prompt: a with-skill and a no-skill run
    week = root / "week" / WEEK
    out = f"--skill-lift-out=week/{WEEK}"
    with StandIn(agent=skill_agent, judge=keyword_judge) as api:
        first = pytest_run(root, api, "-p", "no:xdist", out, "--skill-lift-max-spend=0.001")
        agent_calls = api.count("agent")
        assert first.returncode == 0, first.stdout  # 1 of 2 graded: the coverage minimum
        runs = sorted(p.parent.name for p in week.glob("*/run.json"))
        assert len(runs) == 1 and "with-skill" in runs[0]  # the longest run starts first
        not_run = runs[0].replace("with-skill", "no-skill")
        assert "not run: spend cap (the week has spent $" in first.stdout
        assert "1 run(s) not run: spend cap" in first.stdout
        assert "spend: $" in first.stdout and "of the $0.00 cap" in first.stdout
        spend = json.loads((week / SPEND_FILE).read_text())
        assert spend["not_run_spend_cap"] == [not_run] and spend["cap_usd"] == 0.001
        assert spend["spent_usd"] > 0.001  # the run that started finished past the cap
        card = json.loads((week / SCORECARD_JSON).read_text())
        assert card["coverage"]["not_run_spend_cap"] == 1
        assert card["spend"]["reached"] and card["spend"]["not_run"] == [not_run]
        assert "not run: spend cap" in (week / "scorecard.md").read_text()

        # resumed with the same cap: the week already spent it, so nothing new starts
        again = pytest_run(root, api, "-p", "no:xdist", out, "--skill-lift-max-spend=0.001")
        assert api.count("agent") == agent_calls
        assert "1 run(s) not run: spend cap" in again.stdout

        # a higher cap finishes the week; the list empties
        done = pytest_run(root, api, "-p", "no:xdist", out, "--skill-lift-max-spend=100")
        assert done.returncode == 0, done.stdout
        assert api.count("agent") > agent_calls
    assert (week / not_run / "run.json").is_file()
    assert json.loads((week / SPEND_FILE).read_text())["not_run_spend_cap"] == []
    card = json.loads((week / SCORECARD_JSON).read_text())
    assert card["coverage"]["not_run_spend_cap"] == 0 and card["coverage"]["graded_runs"] == 2
    assert card["spend"]["cap_usd"] == 100 and not card["spend"]["reached"]


def wait_for(cond: Any, timeout: float = 300.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.1)


def test_batch_judging_generates_first_resumes_polling_and_reports_errored_as_ungraded(
        tmp_path: Path) -> None:
    root = make_project(tmp_path)
    week = root / "week" / WEEK
    args = ("--skill-lift-judge-batch", "--skill-lift-judge-batch-poll=0.05",
            f"--skill-lift-out=week/{WEEK}")
    broken = custom_id(f"git-bisect-regression-haiku-no-skill-r1-{WEEK}")
    script = BatchScript(polls_before_end=10**9, errored=frozenset({broken}), times=0)
    with StandIn(agent=skill_agent, judge=keyword_judge, batch=script) as api:
        # 1. generate, submit, poll … and the job is killed while the batch is pending
        env = {**os.environ, "ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": KEY,
               "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
        proc = subprocess.Popen(
            [sys.executable, "-m", "pytest", "--skill-lift", "-p", "no:cacheprovider", "-p",
             "no:xdist", *args], cwd=root, env=env, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            wait_for(lambda: sum(1 for r in api.requests if r.kind == "batch"
                                 and r.method == "GET") >= 3)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        assert len(list(week.glob("*/run.json"))) == 4  # every run generated first
        assert not list(week.glob("*/grades.json"))
        assert len(api.batches.created) == 1
        agent_calls = api.count("agent")

        # 2. the rerun (now under -n 2) polls the batch on file; nothing is submitted twice
        script.polls_before_end = 0
        res = pytest_run(root, api, "-n", "2", "-v", *args)
        assert api.count("agent") == agent_calls  # nothing regenerated
        assert sum(1 for r in api.requests if r.kind == "judge"
                   and r.path == "/v1/messages") == 0  # never a direct judge call
        good = [custom_id(p.parent.name) for p in week.glob("*/run.json")
                if custom_id(p.parent.name) != broken]
        assert len(good) == 3 and all(api.batches.submitted(c) == 1 for c in good)
        assert api.batches.submitted(broken) == 2  # retried once in a new batch, then given up
        assert len(api.batches.created) == 2
    assert res.returncode == 0, res.stdout  # 3 of 4 graded: a report, not a failure
    assert "ungraded: batch request errored" in res.stdout
    assert "PASSED" in res.stdout  # the other runs' items report their verdicts
    stored = json.loads((week / BATCHES_FILE).read_text())
    assert [b["status"] for b in stored["batches"]] == ["ended", "ended"]
    assert "batch judging: 2 batch(es) on file through Message Batches (2 ended)" in res.stdout
    assert "via the Message Batches API at 50% of the list price" in res.stdout
    card = json.loads((week / SCORECARD_JSON).read_text())
    cov = card["coverage"]
    assert cov["graded_runs"] == 3 and cov["total_runs"] == 4
    dropped = {d["run_id"]: d["reason"] for d in cov["dropped"]}
    assert list(dropped) == [f"git-bisect-regression-haiku-no-skill-r1-{WEEK}"]
    assert "batch request errored" in next(iter(dropped.values()))
    broken_dir = week / f"git-bisect-regression-haiku-no-skill-r1-{WEEK}"
    assert not (broken_dir / "grades.json").exists()  # ungraded, never scored as zero
    costs = [float(p.read_text()) for p in week.glob("*/judge_cost.txt")]
    assert len(costs) == 3 and all(c > 0 for c in costs)


def test_batch_judging_refuses_an_overridden_skill_lift_judge(tmp_path: Path) -> None:
    root = make_project(tmp_path)
    (root / "conftest.py").write_text(
        "import pytest\n\n\n@pytest.fixture(scope='session')\n"
        "def skill_lift_judge(skill_lift_judge):\n    return skill_lift_judge\n")
    with StandIn(agent=skill_agent, judge=keyword_judge) as api:
        res = pytest_run(root, api, "-p", "no:xdist", "--skill-lift-judge-batch")
        assert api.count("agent") == 0 and not api.batches.created
    assert res.returncode == 4, res.stdout + res.stderr
    assert "skill_lift_judge is overridden (in conftest)" in res.stderr


def test_batch_judging_with_a_panel_sends_each_judge_to_its_own_batch_api(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--skill-lift-judge-batch --skill-lift-judges=claude,openai:…,google:…``: every run is
    graded by the three judges, each through its provider's batch API (Message Batches, OpenAI's
    Batch API, Gemini's batch mode), never by a direct call; grades.json keeps each judge's vote;
    the terminal names each judge's path and the batch price. Run again, nothing is sent."""
    panel = "claude-sonnet-4-5,openai:gpt-5-mini,google:gemini-2.5-flash"
    root = make_project(tmp_path)
    week = root / "week" / WEEK
    args = ("-p", "no:xdist", "--skill-lift-judge-batch", "--skill-lift-judge-batch-poll=0.05",
            f"--skill-lift-judges={panel}", f"--skill-lift-out=week/{WEEK}")
    with StandIn(agent=skill_agent, judge=keyword_judge,
                 batch=BatchScript(polls_before_end=1)) as api:
        for var in ("OPENAI_BASE_URL", "GOOGLE_GEMINI_BASE_URL"):
            monkeypatch.setenv(var, api.base_url)
        for var in ("OPENAI_API_KEY", "GEMINI_API_KEY"):
            monkeypatch.setenv(var, KEY)
        res = pytest_run(root, api, *args)
        judged = [r for r in api.requests if r.kind == "judge" and r.ok]
        creates = [r.path for r in api.requests if r.kind == "batch" and r.method == "POST"
                   and not r.path.endswith("/files")]
        files_left = api.openai_batches.files
        n_before = len(api.requests)
        again = pytest_run(root, api, *args)
        resent = [r for r in api.requests[n_before:] if r.kind in ("judge", "batch")]
    assert res.returncode == 0, res.stdout + res.stderr
    # OpenAI's batch input and output files are deleted once read, and the batch line says so
    assert files_left == [] and "2 provider file(s) deleted" in res.stdout
    runs = sorted(p.parent.name for p in week.glob("*/run.json"))
    assert len(runs) == 4
    assert all("batch" in r.path for r in judged)  # no direct judge call
    assert sorted(r.api for r in judged) == sorted(
        [a for a in ("messages", "codex", "gemini-cli") for _ in runs])
    assert len(creates) == 3 and any(p.endswith(":batchGenerateContent") for p in creates)
    for run_id in runs:
        grades = json.loads((week / run_id / "grades.json").read_text())
        assert grades["judge_model"] == panel
        assert all([s["judge"] for s in row["samples"]] == panel.split(",")
                   for row in grades["rows"])
    assert "openai:gpt-5-mini via the OpenAI Batch API at 50% of the list price" in res.stdout
    assert ("batch(es) on file through Gemini Batch Mode, Message Batches, OpenAI Batch"
            in res.stdout)
    assert again.returncode == 0, again.stdout + again.stderr
    assert resent == []
