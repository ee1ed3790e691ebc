"""``skilllift`` commands interrupted by SIGTERM / SIGHUP / Ctrl-C: no further paid call,
what was written kept, pytest's interrupted status, and the same command resumes."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_skilllift.runners.claude import bundled_claude
from pytest_skilllift.testing import StandIn
from pytest_skilllift.testing.judge_script import keyword_judge
from tests.test_judge_client import ANSWER, ITEMS, KEY, MODEL

RUNS = 6
needs_cli = pytest.mark.skipif(bundled_claude() is None,
                               reason="claude-agent-sdk (bundled CLI) missing")


def make_week(tmp_path: Path) -> Path:
    prompt = tmp_path / "fusion.json"
    prompt.write_text(json.dumps({"name": "fusion", "prompt": "Q?", "rubric": [
        {"type": i.type, "text": i.text} for i in ITEMS]}))
    week = tmp_path / "week"
    for rep in range(1, RUNS + 1):
        run_id = f"fusion-haiku-no-skill-r{rep}-week"
        (week / run_id).mkdir(parents=True)
        (week / run_id / "run.json").write_text(json.dumps({
            "run_id": run_id, "prompt": "fusion", "model": "haiku", "condition": "no-skill",
            "rep": rep, "run_status": "ok", "final_answer": ANSWER,
            "prompt_path": str(prompt), "skill_leaf": "fusion/SKILL.md"}))
    return week


def judge_cmd(week: Path, api: StandIn) -> subprocess.Popen[str]:
    env = {**os.environ, "ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": KEY}
    return subprocess.Popen([sys.executable, "-m", "pytest_skilllift.cli.main", "judge",
                             str(week), "--judge-model", MODEL, "-j", "1"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT],
                         ids=lambda s: s.name)
def test_skilllift_judge_interrupted_stops_paying_and_resumes(tmp_path: Path,
                                                               sig: signal.Signals) -> None:
    week = make_week(tmp_path)
    with StandIn(judge=keyword_judge, judge_latency_s=1.0) as api:
        proc = judge_cmd(week, api)
        try:
            deadline = time.monotonic() + 60
            while api.count("judge", ok_only=False) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            proc.send_signal(sig)
            # It exits once the call in flight has ended and saved its grade (the queued ones
            # are cancelled): 0.8 CPU-seconds after the signal, measured — 6 s of wall clock
            # at a load of 18 on 2 cores, over 60 s when the test run is niced. The old 15 s
            # timed out with the "interrupted" line already printed.
            _, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:  # never left behind, retrying against a stopped stand-in
                proc.kill()
                proc.wait()
        assert proc.returncode == pytest.ExitCode.INTERRUPTED, err
        assert "skilllift judge: interrupted" in err and "run the same command again" in err
        # The stand-in records a call once its latency has passed: one that arrived just
        # before the signal is counted up to a second later. Count once those have landed,
        # as the tests below do (the wait after it is shorter by as much: 2.5 s in all).
        time.sleep(api.judge_latency_s + 0.5)
        calls = api.count("judge", ok_only=False)
        time.sleep(1.0)  # no queued judge call starts after the interrupt
        assert api.count("judge", ok_only=False) == calls
        graded = len(list(week.glob("*/grades.json")))
        assert graded < RUNS
        api.judge_latency_s = 0.0
        again = judge_cmd(week, api)
        _, err2 = again.communicate(timeout=120)
        assert again.returncode == 0, err2
        assert len(list(week.glob("*/grades.json"))) == RUNS
        # the runs graded before the interrupt were not graded again
        assert api.count("judge", ok_only=False) - calls == RUNS - graded


# -- a regrade keeps the week's recorded judging protocol -----------------------------------

@pytest.mark.slow
def test_judge_fresh_regrades_with_the_recorded_protocol(tmp_path: Path) -> None:
    from pytest_skilllift.judge.protocol import PROMPT_VERSION
    from pytest_skilllift.week import identity as ident
    from tests.test_week_identity import make

    week = make_week(tmp_path)
    ident.write_week_record(week, ident.WeekRecord(identity=make(
        judge_model=MODEL, judge_samples=2, evidence="flag",
        judge_prompt_version=PROMPT_VERSION)))
    with StandIn(judge=keyword_judge) as api:
        env = {**os.environ, "ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": KEY}
        done = subprocess.run([sys.executable, "-m", "pytest_skilllift.cli.main", "judge",
                               str(week), "--fresh"], env=env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        assert f"with {MODEL} (2 sample(s) per run" in done.stderr
        models = {r.model for r in api.requests if r.kind == "judge"}
        assert models == {MODEL}
        assert api.count("judge") >= 2 * RUNS  # two samples of every run
    after = ident.read_week_record(week)
    assert after is not None
    assert (after.identity.judge_samples, after.identity.evidence) == (2, "flag")
    assert after.identity.judge_mask is False  # the week's recorded mask (off), kept
    grades = json.loads(next(week.glob("*/grades.json")).read_text())
    assert grades["judge_samples"] == 2 and grades["evidence_policy"] == "flag"
    # An option that differs is named, and then recorded.
    with StandIn(judge=keyword_judge) as api:
        env = {**os.environ, "ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": KEY}
        done = subprocess.run([sys.executable, "-m", "pytest_skilllift.cli.main", "judge",
                               str(week), "--fresh", "--samples", "1", "--mask", "on"], env=env,
                              capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "judging protocol: --samples 1 instead of the week's recorded 2" in done.stderr
    after = ident.read_week_record(week)
    assert after is not None and after.identity.judge_samples == 1
    assert "judging protocol: --mask on instead of the week's recorded off" in done.stderr
    assert after.identity.judge_mask is True


def test_a_commands_registry_of_agent_runs_is_removed_at_its_end(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``score --depth deep`` / ``certify`` list their agent runs in a registry: gone when the
    command ends, so no ``skilllift-*`` directory is left in the temp dir."""
    from pytest_skilllift.cli import main as cli_main
    from pytest_skilllift.runners import inflight

    monkeypatch.setattr(inflight, "_PROCESS", None)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    registry = inflight.process_inflight()
    registry.done(registry.add("run-1"))
    assert registry.root.parent == tmp_path and registry.root.is_dir()
    cli_main._forget_registry()
    assert list(tmp_path.iterdir()) == []


# -- calibrate, score --depth deep and certify, interrupted at a random moment --------------

def _cli(argv: list[str], api: StandIn, tmp: Path) -> subprocess.Popen[str]:
    """A ``skilllift`` command in its own session (its TMPDIR ``tmp``, so what it leaves in
    the temp dir and every process it starts can be found)."""
    env = {**os.environ, "ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": KEY,
           "TMPDIR": str(tmp)}
    return subprocess.Popen([sys.executable, "-m", "pytest_skilllift.cli.main", *argv],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def _interrupt(proc: subprocess.Popen[str], tmp: Path, sig: signal.Signals,
               seed: int) -> str:
    """Send ``sig`` at a seeded random moment after a paid call is in flight; check every
    agent CLI under ``tmp`` is gone within 5 s, pytest's interrupted status and no
    ``skilllift-*`` temp dir left; the command's stderr."""
    from tests.test_e2e_interrupts import processes_under, wait_for

    time.sleep(random.Random(seed).uniform(0.2, 3.0))
    try:
        proc.send_signal(sig)
        assert wait_for(lambda: not processes_under(tmp), 5.0), processes_under(tmp)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, err
    assert "interrupted" in err and "run the same command again to resume" in err, err
    assert [p.name for p in tmp.iterdir() if p.name.startswith("skilllift-")] == [], err
    return err


CLI_CASES = [(signal.SIGINT, 11), (signal.SIGTERM, 12), (signal.SIGHUP, 13)]


@pytest.mark.slow  # two skilllift commands as subprocesses, ~15 s
@pytest.mark.parametrize(("sig", "seed"), CLI_CASES, ids=[s.name for s, _ in CLI_CASES])
def test_skilllift_calibrate_interrupted_resumes(tmp_path: Path, sig: signal.Signals,
                                                 seed: int) -> None:
    """Judge calls only: none starts after the signal; what was calibrated is kept in
    ``calibration.json`` (never half written) and the same command completes it without
    calibrating those runs again (the old code started over and paid twice)."""
    week, tmp = make_week(tmp_path), tmp_path / "tmp"
    tmp.mkdir()
    for run_dir in week.iterdir():  # calibrate picks graded runs
        (run_dir / "grades.json").write_text("{}")
    argv = ["calibrate", str(week), "--runs", str(RUNS), "--samples", "2", "--model", MODEL]
    with StandIn(judge=keyword_judge, judge_latency_s=0.5) as api:
        proc = _cli(argv, api, tmp)
        deadline = time.monotonic() + 60
        while api.count("judge", ok_only=False) < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        _interrupt(proc, tmp, sig, seed)
        time.sleep(api.judge_latency_s + 0.5)  # a call made before the stop is recorded late
        calls = api.count("judge", ok_only=False)
        time.sleep(1.5)
        assert api.count("judge", ok_only=False) == calls  # nothing after the interrupt
        summary = week / "calibration.json"
        done = json.loads(summary.read_text())["runs"] if summary.exists() else {}
        assert len(done) < RUNS
        api.judge_latency_s = 0.0
        again = _cli(argv, api, tmp)
        out, err = again.communicate(timeout=180)
        # Resumed: the runs calibrated before the interrupt are kept, not paid for again.
        assert api.count("judge", ok_only=False) - calls == 2 * (RUNS - len(done)), out
    assert again.returncode == 0, err
    assert out.count("kept from an earlier pass") == len(done), out
    assert f"{RUNS} run(s) calibrated" in out
    assert sorted(json.loads(summary.read_text())["runs"]) == sorted(p.name for p in
                                                                      week.iterdir()
                                                                      if p.is_dir())
    assert [p.name for p in tmp.iterdir() if p.name.startswith("skilllift-")] == []


DEPTH_CASES = [("deep", signal.SIGINT, 21), ("deep", signal.SIGTERM, 22),
               ("certify", signal.SIGHUP, 23), ("certify", signal.SIGTERM, 24)]


@needs_cli
@pytest.mark.cli
@pytest.mark.parametrize(("depth", "sig", "seed"), DEPTH_CASES,
                         ids=[f"{d}-{s.name}" for d, s, _ in DEPTH_CASES])
def test_score_deep_and_certify_interrupted_stop_their_agents_and_resume(
        tmp_path: Path, depth: str, sig: signal.Signals, seed: int) -> None:
    """The real bundled CLI in flight (the stand-in's slow agent) when the signal comes:
    its process group is stopped, its temporary HOME removed, the interrupted run is not
    recorded, and the same command runs only what is missing."""
    from pytest_skilllift.testing.skill_judge_script import make_skill_judge, mc_agent
    from tests.test_e2e_interrupts import processes_under, wait_for
    from tests.test_lint_depth_mc import DEMO, PROMPTS

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    prompts = tmp_path / "prompts.json"
    prompts.write_text(json.dumps(PROMPTS))
    out = tmp_path / "out"
    common = [str(DEMO), "--output", "json", "--out", str(out), "--judge-model", MODEL,
              "--mc-prompts", str(prompts), "--mc-runs", "4", "--model", "claude-haiku-4-5",
              "--max-turns", "3", "--timeout", "120", "--claude", str(bundled_claude())]
    if depth == "deep":
        argv = ["score", "--depth", "deep", *common]
    else:
        from pytest_skilllift.testing.skill_dirs import write_skill

        corpus = tmp_path / "corpus"
        write_skill(corpus / "weak", name="weak", description="weak thing", body="# Weak\n")
        index = subprocess.run([sys.executable, "-m", "pytest_skilllift.cli.main", "corpus",
                                "init", str(corpus)], capture_output=True, text=True,
                               timeout=60)
        assert index.returncode == 0, index.stderr
        argv = ["certify", *common, "--corpus", str(corpus)]
    with StandIn(agent=mc_agent(), judge=make_skill_judge(), latency_s=1.0) as api:
        proc = _cli(argv, api, tmp)
        assert wait_for(lambda: processes_under(tmp), 120), "no agent CLI ever started"
        _interrupt(proc, tmp, sig, seed)
        # The stand-in records a call once its latency has passed: one that arrived just
        # before the stop is counted up to a second later. Count once those have landed.
        time.sleep(api.latency_s + 0.5)
        agent_calls = api.count("agent", ok_only=False)
        time.sleep(1.5)
        assert api.count("agent", ok_only=False) == agent_calls  # no run started after it
        kept = sorted(out.rglob("record.json"))
        assert len(kept) < 4
        api.latency_s = 0.0
        again = _cli(argv, api, tmp)
        text, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    report = json.loads(text)
    mc = next(x for x in report["layers"] if x["layer"] == "monte_carlo")
    assert mc["figures"]["n_runs"] == 4
    # the runs that finished before the interrupt are not paid for twice
    assert report["cost"]["monte_carlo"]["reused"] == len(kept)
    assert len(sorted(out.rglob("record.json"))) == 4
    assert not processes_under(tmp)
    assert [p.name for p in tmp.iterdir() if p.name.startswith("skilllift-")] == []
