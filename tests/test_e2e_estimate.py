"""The price before the run, end to end: the demo's prompts and skills run for two weeks
with the real bundled CLI against the stand-in; the second week's estimate comes from the
first, and its actual spend lies within that estimate's range. Estimating calls no API: the
stand-in's request log stays empty through ``--collect-only`` and ``skilllift plan``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_skilllift.config import DEMO_PROJECT
from pytest_skilllift.runners.claude import bundled_claude
from pytest_skilllift.testing.agent_script import skill_agent
from pytest_skilllift.testing.judge_script import keyword_judge
from pytest_skilllift.testing.server import StandIn
from pytest_skilllift.week.files import ESTIMATE_FILE, SCORECARD_JSON
from tests.test_plugin_shards import KEY, REPO, pytest_run

pytestmark = [
    pytest.mark.cli,
    pytest.mark.skipif(bundled_claude() is None, reason="claude-agent-sdk (bundled CLI) missing"),
]
W1, W2 = "20260801", "20260808"


def _project(root: Path) -> Path:
    shutil.copytree(DEMO_PROJECT / "skills", root / "skills")
    shutil.copytree(DEMO_PROJECT / "evals" / "test-prompts", root / "evals" / "test-prompts")
    (root / "pytest.ini").write_text("[pytest]\nskill_lift_models = haiku=claude-haiku-4-5\n"
                                     "skill_lift_reps = 2\n")
    return root


def _plan(root: Path, api: StandIn, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": KEY,
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "pytest_skilllift.cli", "plan", *args],
                          cwd=root, env=env, text=True, capture_output=True, timeout=300,
                          check=False)


def test_second_weeks_spend_is_within_the_range_the_first_week_implies(tmp_path: Path) -> None:
    root = _project(tmp_path)
    with StandIn(agent=skill_agent, judge=keyword_judge) as api:
        listed = pytest_run(root, api, "--collect-only", "-q", "-n", "2",
                            f"--skill-lift-out=weekly/{W1}", "--skill-lift-max-spend=5")
        assert listed.returncode == 0, listed.stdout[-2000:]
        assert api.requests == []  # estimating called no API, not even a side call
        out = listed.stdout
        assert "skill-lift plan: 12 run(s) to make (12 new, 0 resumed)" in out
        assert "12 judge call(s)" in out and "[price table]" in out
        assert "at 2 run(s) in flight (workers 2, concurrency cap 3)" in out
        assert "spend cap: $5.00, of which the week has spent $0.00" in out
        assert not (root / "weekly" / W1).exists()  # listing writes nothing

        first = pytest_run(root, api, "-n", "2", f"--skill-lift-out=weekly/{W1}")
        assert first.returncode == 0, first.stdout[-3000:]
        before = len(api.requests)

        planned = _plan(root, api, f"--skill-lift-out=weekly/{W2}", "-n", "2")
        assert planned.returncode == 0, planned.stdout + planned.stderr
        assert len(api.requests) == before  # skilllift plan: no API call either
        assert f"history (6 runs of {W1})" in planned.stdout
        again = _plan(root, api, f"--skill-lift-out=weekly/{W1}", "-k", "git-bisect")
        assert "0 run(s) to make" in again.stdout and "4 already done" in again.stdout

        second = pytest_run(root, api, "-n", "2", f"--skill-lift-out=weekly/{W2}")
        assert second.returncode == 0, second.stdout[-3000:]
        assert f"history (6 runs of {W1})" in second.stdout
    w2 = root / "weekly" / W2
    estimate = json.loads((w2 / ESTIMATE_FILE).read_text())["sessions"]
    assert len(estimate) == 1 and estimate[0]["history_weeks"] == [W1]
    card = json.loads((w2 / SCORECARD_JSON).read_text())["cost_estimate"]
    for key in ("generation_usd", "judge_usd", "total_usd"):
        c = card[key]
        assert c["actual"] and c["low"] <= c["actual"] <= c["high"], (key, c)
        assert c["within"] is True and abs(c["error"]) < 0.5, (key, c)
    md = (w2 / "scorecard.md").read_text()
    assert "**Estimate before the run vs actual**" in md and "| generation |" in md
    # the first week's own estimate came from the price table, and says how far off it was
    w1_card = json.loads((root / "weekly" / W1 / SCORECARD_JSON).read_text())["cost_estimate"]
    assert w1_card["source"] == ["price table"] and w1_card["total_usd"]["error"] is not None
