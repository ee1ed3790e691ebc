"""Interrupts: SIGINT, SIGTERM and SIGHUP stop every agent CLI and lose nothing.

The real bundled CLI runs against the stand-in, whose every agent reply is slow, so runs are
in flight when the signal arrives — at a seeded random moment after the first CLI started,
sent to the controller (serial and ``-n 2``) or to an xdist worker. Each session gets its own
TMPDIR, so "no agent survived" is checked by looking in ``/proc`` for any process whose HOME,
working directory or command line lies under it, and "nothing left behind" by listing it.
"""

from __future__ import annotations

import csv
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.config import DEMO_PROJECT
from pytest_skilllift.runners.claude import bundled_claude
from pytest_skilllift.runners.inflight import Inflight, RunInterrupted
from pytest_skilllift.testing.agent_script import skill_agent
from pytest_skilllift.testing.judge_script import keyword_judge
from pytest_skilllift.testing.server import StandIn

PROMPTS = ("git-bisect-regression.json", "python-packaging-pyproject.json")
KEY = "sk-ant-test-interrupts-0123456789"

needs_cli = pytest.mark.skipif(bundled_claude() is None,
                               reason="claude-agent-sdk (bundled CLI) missing")


def make_project(root: Path) -> None:
    shutil.copytree(DEMO_PROJECT / "skills", root / "skills")
    (root / "evals" / "test-prompts").mkdir(parents=True)
    for name in PROMPTS:
        shutil.copy(DEMO_PROJECT / "evals" / "test-prompts" / name, root / "evals" / "test-prompts")
    (root / "pytest.ini").write_text("[pytest]\nskill_lift_models = haiku=claude-haiku-4-5\n"
                                     "skill_lift_reps = 1\nskill_lift_out = week\n")


def processes_under(tmp: Path) -> list[int]:
    """PIDs of processes whose environment, cwd or command line lies under ``tmp``."""
    needle = str(tmp).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            text = (entry / "cmdline").read_bytes() + (entry / "environ").read_bytes()
            cwd = os.readlink(entry / "cwd").encode()
        except OSError:
            continue
        if needle in cwd or needle + b"/skilllift-" in text:
            found.append(int(entry.name))
    return found


def children(pid: int) -> list[int]:
    """Direct child processes of ``pid`` (from ``/proc/<n>/stat``)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


def wait_for(cond: Any, timeout: float, step: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(step)
    return cond()


def start(root: Path, api: StandIn, tmp: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": KEY,
           "TMPDIR": str(tmp)}
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "--skill-lift", "-p", "no:cacheprovider", "-rs",
         *args], cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, start_new_session=True)


def records(week: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(week.glob("*/run.json"))]


CASES = [
    ("serial", signal.SIGINT, "controller", 1),
    ("serial", signal.SIGTERM, "controller", 2),
    ("serial", signal.SIGHUP, "controller", 3),
    ("xdist", signal.SIGINT, "controller", 4),
    ("xdist", signal.SIGTERM, "controller", 5),
    ("xdist", signal.SIGTERM, "worker", 6),
    ("xdist", signal.SIGHUP, "worker", 7),
]


@needs_cli
@pytest.mark.cli
@pytest.mark.parametrize(("mode", "sig", "target", "seed"), CASES,
                         ids=[f"{m}-{s.name}-{t}" for m, s, t, _ in CASES])
def test_interrupt_stops_every_agent_and_the_week_resumes(
        tmp_path: Path, mode: str, sig: signal.Signals, target: str, seed: int) -> None:
    root, tmp = tmp_path / "project", tmp_path / "tmp"
    root.mkdir()
    tmp.mkdir()
    make_project(root)
    args = ("-n", "2") if mode == "xdist" else ("-p", "no:xdist")
    # The skill-aware agent, slow on purpose; the keyword judge.
    with StandIn(agent=skill_agent, judge=keyword_judge, latency_s=1.5) as api:
        proc = start(root, api, tmp, *args)
        try:
            # A CLI is in flight; then a seeded random moment of its run.
            assert wait_for(lambda: processes_under(tmp), 90), "no agent CLI ever started"
            time.sleep(random.Random(seed).uniform(0.2, 3.0))
            victim = proc.pid
            if target == "worker":
                # The xdist workers: the controller's python children (not a CLI it ran).
                workers = [c for c in children(proc.pid) if c not in processes_under(tmp)
                           and b"python" in Path(f"/proc/{c}/cmdline").read_bytes()]
                assert workers, "no xdist worker found"
                victim = random.Random(seed).choice(workers)
            os.kill(victim, sig)
            sent = time.monotonic()
            # Every agent CLI of the session is gone within 5 s of the signal.
            assert wait_for(lambda: not processes_under(tmp), 5.0), processes_under(tmp)
            assert time.monotonic() - sent <= 5.5
            out, _ = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
        # No temporary HOME / work dir / registry left behind.
        assert [p.name for p in tmp.iterdir() if p.name.startswith("skilllift-")] == [], out
        week = root / "week"
        # An interrupted run is recorded neither as finished nor as an error.
        assert all(r["run_status"] == "ok" for r in records(week)), records(week)
        done_before = {r["run_id"] for r in records(week)}
        stopped_line = [line for line in out.splitlines() if line.startswith("interrupted: ")]
        assert len(stopped_line) == 1, out
        assert len(done_before) < 4
        if "no run was in flight" not in stopped_line[0]:
            assert "stopped and will be retried" in stopped_line[0]
            for run_id in stopped_line[0].split(": ", 2)[2].split(", "):
                assert run_id not in done_before
        # The next session generates the rest, each once; the finished ones are kept.
        api.latency_s = 0.0
        agent_before = api.count("agent")
        again = start(root, api, tmp, "-p", "no:xdist")
        out2, _ = again.communicate(timeout=300)
        assert again.returncode == 0, out2
        manifest = list(csv.DictReader((week / "manifest.csv").open()))
        assert sorted(r["run_id"] for r in manifest) == sorted({r["run_id"] for r in manifest})
        assert len(manifest) == 4 and all(r["run_status"] == "ok" for r in manifest)
        kept = {r["run_id"]: r["ended_utc"] for r in manifest if r["run_id"] in done_before}
        assert len(kept) == len(done_before)
        assert api.count("agent") > agent_before
        assert not processes_under(tmp)


# -- the registry itself, without a CLI ------------------------------------------------------

@pytest.mark.slow
def test_stop_all_kills_a_recorded_group_and_removes_its_temp(tmp_path: Path) -> None:
    inflight = Inflight(tmp_path / "reg")
    temp = tmp_path / "skilllift-x"
    temp.mkdir()
    child = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        token = inflight.add("run-1", pgid=child.pid, temp=temp)
        assert not inflight.stopping
        assert inflight.stop_all(grace_s=1.0) == ["run-1"]
        assert child.wait(timeout=5) < 0  # killed by a signal
        assert not temp.exists()
        assert inflight.stopping and inflight.stopped_runs() == ["run-1"]
        assert token.exists()
        with pytest.raises(RunInterrupted):
            inflight.check_not_stopping()
    finally:
        if child.poll() is None:
            child.kill()
    inflight.remove()
    assert not (tmp_path / "reg").exists()


def test_a_run_that_ended_is_forgotten(tmp_path: Path) -> None:
    inflight = Inflight(tmp_path / "reg")
    inflight.done(inflight.add("run-1", pgid=None))
    assert inflight.entries() == [] and inflight.stop_all() == []
