"""Concurrency that backs off, end to end: ``pytest --skill-lift -n 4`` with the cap at 4
against a stand-in that answers 429 (with ``retry-after``) to agent requests above a
concurrency of 2 — the real bundled Claude Code CLI retries, and the session's limit reads
its ``api_retry`` events."""

from __future__ import annotations

import csv
import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.config import DEMO_PROJECT
from pytest_skilllift.runners.claude import bundled_claude
from pytest_skilllift.testing.agent_script import skill_agent
from pytest_skilllift.testing.judge_script import keyword_judge
from pytest_skilllift.testing.server import Faults, StandIn
from pytest_skilllift.week.files import CONCURRENCY_FILE
from tests.test_plugin_shards import pytest_run

pytestmark = [
    pytest.mark.cli,
    pytest.mark.skipif(bundled_claude() is None, reason="claude-agent-sdk (bundled CLI) missing"),
]
WEEK = "20260808"


def _project(root: Path) -> Path:
    shutil.copytree(DEMO_PROJECT / "skills", root / "skills")
    shutil.copytree(DEMO_PROJECT / "evals" / "test-prompts", root / "evals" / "test-prompts")
    (root / "pytest.ini").write_text("[pytest]\nskill_lift_models = haiku=claude-haiku-4-5\n"
                                     "skill_lift_reps = 2\n")
    return root


def _manifest(week: Path) -> dict[str, dict[str, str]]:
    with (week / "manifest.csv").open(newline="") as fh:
        return {r["run_id"]: r for r in csv.DictReader(fh)}


def _grades(week: Path) -> list[tuple[str, ...]]:
    with (week / "scores.csv").open(newline="") as fh:
        return sorted((r["run_id"], r["item_type"], r["item_index"], r["verdict"])
                      for r in csv.DictReader(fh))


def _session_of(body: dict[str, Any]) -> str:
    """Claude Code names its session in every request's metadata."""
    user = (body.get("metadata") or {}).get("user_id") or "{}"
    return str(json.loads(user).get("session_id") or "")


def _transcript_session(run_dir: Path) -> str:
    for line in (run_dir / "stdout.txt").read_text().splitlines():
        event = json.loads(line)
        if event.get("type") == "system" and event.get("subtype") == "init":
            return str(event["session_id"])
    raise AssertionError(f"no init event in {run_dir}")


def test_rate_limits_lower_the_runs_in_flight_and_change_no_grade(tmp_path: Path) -> None:
    root = _project(tmp_path)
    faults = Faults(max_concurrent=2, retry_after=1.0, only="agent")
    with StandIn(agent=skill_agent, judge=keyword_judge, latency_s=0.6,
                 faults=faults) as api:
        throttled = pytest_run(root, api, "-n", "4", "--skill-lift-max-concurrency=4",
                               f"--skill-lift-out=throttled/{WEEK}")
        assert throttled.returncode == 0, throttled.stdout[-3000:]
        got_429 = Counter(_session_of(r.body) for r in api.requests
                          if r.kind == "agent" and r.status == 429 and r.body)
    # One 429 already cuts the limit and is counted on its run; how many arrive depends on how
    # the four workers' CLIs overlap, which the machine's load decides (CI once saw 1).
    assert sum(got_429.values()) >= 1, "the stand-in never rate-limited: nothing was tested"
    week = root / "throttled" / WEEK
    runs = _manifest(week)
    assert len(runs) == 12
    assert {r["run_status"] for r in runs.values()} == {"ok"}  # no run failed for it
    for run_id, row in runs.items():  # each run's count is the 429s its CLI session received
        assert int(row["rate_limit_retries"]) == got_429.get(
            _transcript_session(week / run_id), 0), run_id
        assert (int(row["rate_limit_wait_ms"]) >= 900 * int(row["rate_limit_retries"]))
    assert sum(int(r["rate_limit_retries"]) for r in runs.values()) == sum(got_429.values())

    limit = json.loads((week / CONCURRENCY_FILE).read_text())
    assert limit["cap"] == 4 and limit["cuts"] >= 1 and limit["min_limit"] <= 2
    events = limit["events"]
    first_cut = next(i for i, e in enumerate(events) if e["event"] == "cut")
    starts_after = [e for e in events[first_cut:] if e["event"] == "start"]
    # in flight drops after the first 429s: the next run starts only once at most 2 are in
    # flight, and no run ever starts above the limit in force
    assert starts_after and starts_after[0]["inflight"] <= 2
    assert all(e["inflight"] <= e["limit"] for e in events if e["event"] == "start")
    card = (week / "scorecard.md").read_text()
    assert "rate-limited runs" in card
    assert f"rate limits: {sum(got_429.values())} retries (HTTP 429/529) reported" in (
        throttled.stdout)

    # the same week without 429s grades every item the same way
    with StandIn(agent=skill_agent, judge=keyword_judge, latency_s=0.6) as plain_api:
        plain = pytest_run(root, plain_api, "-n", "4", "--skill-lift-max-concurrency=4",
                           f"--skill-lift-out=plain/{WEEK}")
        assert plain.returncode == 0, plain.stdout[-3000:]
        assert not any(r.status == 429 for r in plain_api.requests)
    plain_week = root / "plain" / WEEK
    assert _grades(plain_week) == _grades(week)
    assert all(r["rate_limit_retries"] == "0" for r in _manifest(plain_week).values())
    assert json.loads((plain_week / CONCURRENCY_FILE).read_text())["cuts"] == 0
