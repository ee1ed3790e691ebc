"""``skilllift`` commands interrupted by SIGTERM / SIGHUP / Ctrl-C: no further paid call,
what was written kept, pytest's interrupted status, and the same command resumes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_skilllift.testing import StandIn
from pytest_skilllift.testing.judge_script import keyword_judge
from tests.test_judge_client import ANSWER, ITEMS, KEY, MODEL

RUNS = 6


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
        deadline = time.monotonic() + 60
        while api.count("judge", ok_only=False) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=15)
        assert proc.returncode == pytest.ExitCode.INTERRUPTED, err
        assert "skilllift judge: interrupted" in err and "run the same command again" in err
        calls = api.count("judge", ok_only=False)
        time.sleep(2.5)  # no queued judge call starts after the interrupt
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
    from tests.test_identity import make

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
    grades = json.loads(next(week.glob("*/grades.json")).read_text())
    assert grades["judge_samples"] == 2 and grades["evidence_policy"] == "flag"
    # An option that differs is named, and then recorded.
    with StandIn(judge=keyword_judge) as api:
        env = {**os.environ, "ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": KEY}
        done = subprocess.run([sys.executable, "-m", "pytest_skilllift.cli.main", "judge",
                               str(week), "--fresh", "--samples", "1"], env=env,
                              capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "judging protocol: --samples 1 instead of the week's recorded 2" in done.stderr
    after = ident.read_week_record(week)
    assert after is not None and after.identity.judge_samples == 1


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
