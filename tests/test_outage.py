"""Outages: named from the CLI's own events within seconds; the circuit breaker stops the rest.

The real bundled CLI against a port with nothing listening (connection refused), and against
the stand-in refusing the key (401); the judge side with a fake grader whose every call fails
the same way. The watch itself is fed real ``api_retry`` event lines.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.config import DEMO_PROJECT
from pytest_skilllift.run.breaker import CircuitBreaker, judge_cause
from pytest_skilllift.runners.claude import bundled_claude
from pytest_skilllift.runners.outage import OutageWatch, probe
from pytest_skilllift.testing.agent_script import skill_agent
from pytest_skilllift.testing.judge_script import keyword_judge
from pytest_skilllift.testing.server import StandIn

PROMPTS = ("git-bisect-regression.json", "python-packaging-pyproject.json")
KEY = "sk-ant-test-outage-0123456789"
needs_cli = pytest.mark.skipif(bundled_claude() is None,
                               reason="claude-agent-sdk (bundled CLI) missing")


def dead_port() -> int:
    """A loopback port with nothing listening (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def make_project(root: Path) -> None:
    shutil.copytree(DEMO_PROJECT / "skills", root / "skills")
    (root / "evals" / "test-prompts").mkdir(parents=True)
    for name in PROMPTS:
        shutil.copy(DEMO_PROJECT / "evals" / "test-prompts" / name, root / "evals" / "test-prompts")
    (root / "pytest.ini").write_text("[pytest]\nskill_lift_models = haiku=claude-haiku-4-5\n"
                                     "skill_lift_reps = 1\nskill_lift_out = week\n"
                                     "skill_lift_timeout = 300\n")


def session(root: Path, base_url: str, *args: str, key: str = KEY,
            ) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": key}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--skill-lift", "-p", "no:cacheprovider", "-p",
         "no:xdist", "-rs", "--skill-lift-progress-interval=0", *args], cwd=root, env=env,
        capture_output=True, text=True, timeout=600)


def manifest(root: Path) -> list[dict[str, str]]:
    with (root / "week" / "manifest.csv").open(newline="") as fh:
        return list(csv.DictReader(fh))


@needs_cli
@pytest.mark.cli
def test_unreachable_api_is_named_in_seconds_and_the_breaker_stops_the_rest(
        tmp_path: Path) -> None:
    make_project(tmp_path)
    port = dead_port()
    result = session(tmp_path, f"http://127.0.0.1:{port}")
    out = result.stdout
    cause = (f"API unreachable at 127.0.0.1:{port}: connection refused; check "
             "ANTHROPIC_BASE_URL")
    runs = manifest(tmp_path)
    # Three runs errored with the cause in words, each well within 30 s (not the 300 s
    # timeout), then the breaker: the fourth is not run, counted and named.
    assert len(runs) == 3, out
    assert all(r["run_status"] == "errored" and r["run_error"] == cause for r in runs), runs
    assert all(int(r["wall_ms"]) < 30_000 for r in runs), [r["wall_ms"] for r in runs]
    assert f"circuit breaker: 1 run(s) not run: {cause}" in out, out
    assert "not run 1" in out  # the progress line
    assert f"not run: {cause}" in out  # the items' skip reason
    assert result.returncode == 1, out
    records = [json.loads(p.read_text()) for p in (tmp_path / "week").glob("*/run.json")]
    assert all(r["outage"] == cause for r in records)
    # The next session, with the API back, retries them: the whole week is graded.
    with StandIn(agent=skill_agent, judge=keyword_judge) as api:
        again = session(tmp_path, api.base_url)
    assert again.returncode == 0, again.stdout
    runs = manifest(tmp_path)
    assert len(runs) == 4 and all(r["run_status"] == "ok" for r in runs)


@needs_cli
@pytest.mark.cli
def test_a_refused_key_is_named_not_timed_out(tmp_path: Path) -> None:
    make_project(tmp_path)
    with StandIn(agent=skill_agent, judge=keyword_judge, api_key="the-right-key-123456") as api:
        result = session(tmp_path, api.base_url, "--skill-lift-breaker=0", "-k",
                         "git-bisect and no-skill")
        port = api.base_url.rsplit(":", 1)[1]
    runs = manifest(tmp_path)
    assert len(runs) == 1, result.stdout
    assert runs[0]["run_status"] == "errored"
    assert runs[0]["run_error"].startswith(
        f"API refused the key at 127.0.0.1:{port} (HTTP 401 authentication_failed); check "
        "ANTHROPIC_API_KEY")
    assert int(runs[0]["wall_ms"]) < 30_000


# -- the watch, fed real event lines --------------------------------------------------------

def retry(status: Any, error: str, attempt: int) -> bytes:
    return json.dumps({"type": "system", "subtype": "api_retry", "attempt": attempt,
                       "max_retries": 10, "retry_delay_ms": 600, "error_status": status,
                       "error": error}).encode() + b"\n"


def test_watch_names_a_missing_model_after_two_retries() -> None:
    watch = OutageWatch("https://api.example.invalid", "claude-nope-9")
    assert watch.feed(retry(404, "not_found_error", 1)) is None
    assert watch.feed(retry(404, "not_found_error", 2)) == (
        "model 'claude-nope-9' not found at api.example.invalid:443 (HTTP 404 "
        "not_found_error); check skill_lift_models")


def test_watch_ignores_rate_limits_and_overload() -> None:
    watch = OutageWatch("http://127.0.0.1:1", "m")
    for n, status in enumerate([429, 529, 500, 429, 529, 500, 429], 1):
        assert watch.feed(retry(status, "rate_limit", n)) is None


def test_connection_failures_are_an_outage_only_when_the_host_is_down() -> None:
    with StandIn() as api:  # something listens: a reset is the network's passing fault
        watch = OutageWatch(api.base_url, "m")
        assert all(watch.feed(retry(None, "unknown", n)) is None for n in range(1, 8))
    port = dead_port()
    watch = OutageWatch(f"http://127.0.0.1:{port}", "m")
    causes = [watch.feed(retry(None, "unknown", n)) for n in range(1, 4)]
    assert causes[:2] == [None, None]
    assert causes[2] == (f"API unreachable at 127.0.0.1:{port}: connection refused; check "
                         "ANTHROPIC_BASE_URL")


def test_probe_names_a_dns_failure() -> None:
    why = probe("https://no-such-host.invalid")
    assert why is not None and why.startswith("DNS lookup of no-such-host.invalid failed")


def test_breaker_opens_after_n_same_causes_and_only_then(tmp_path: Path) -> None:
    breaker = CircuitBreaker(tmp_path / "log", threshold=3)
    breaker.record("")
    assert not (tmp_path / "log").exists()  # a clean session writes nothing
    for cause in ["down", "", "down", "down"]:
        breaker.record(cause)
        assert breaker.open_cause() is None
    breaker.record("down")
    assert breaker.reason() == "not run: down"
    assert CircuitBreaker(tmp_path / "log", threshold=0).open_cause() is None


def test_judge_causes() -> None:
    assert judge_cause("judge call failed: HTTP 401 authentication_error (not retryable)")
    assert judge_cause("judge call failed after 7 attempts; last error: connection error "
                       "(ConnectError)").startswith("the judge's API is unreachable")
    assert judge_cause("judge call failed after 7 attempts; last error: HTTP 429 x") == ""
