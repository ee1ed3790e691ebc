"""Failed with-skill runs are excluded and named, never trigger misses (``pytest --skill-lift``).

A CLI that fails before it prints anything (here: a script standing in for a CLI that
cannot start — no network, a bad install) must leave the with-skill run ``errored`` like
its no-skill twin (retried on the next session), with no invocation status, and the
scorecard must list it as an excluded run rather than count a trigger miss or NOT_INVOKED.
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_skilllift.config import DEMO_PROJECT

REPO = Path(__file__).resolve().parents[1]


def _project(root: Path) -> Path:
    shutil.copytree(DEMO_PROJECT / "skills", root / "skills")
    (root / "evals" / "test-prompts").mkdir(parents=True)
    shutil.copy(DEMO_PROJECT / "evals" / "test-prompts" / "git-bisect-regression.json",
                root / "evals" / "test-prompts")
    calls = root / "calls.log"
    cli = root / "failing-claude"
    # Runs are counted; a `claude --version` probe (the week's identity reads it) is not.
    cli.write_text(f"#!/bin/sh\n[ \"$1\" = --version ] && exit 1\necho started >> {calls}\n"
                   "echo 'error: cannot reach the API' >&2\nexit 1\n")
    cli.chmod(0o755)
    (root / "pytest.ini").write_text(
        "[pytest]\nskill_lift_models = haiku=claude-haiku-4-5\nskill_lift_reps = 1\n"
        "skill_lift_out = week\n")
    return cli


def _run(root: Path, cli: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO),
           "ANTHROPIC_API_KEY": "sk-test-not-used", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
    return subprocess.run([sys.executable, "-m", "pytest", "--skill-lift", "-p", "no:xdist",
                           "-p", "no:cacheprovider", "-rs", f"--skill-lift-claude={cli}",
                           "--skill-lift-preflight=off"],  # no API: the fake CLI fails first
                          cwd=root, env=env, capture_output=True, text=True, timeout=300,
                          check=False)


@pytest.mark.slow
def test_cli_failure_before_init_is_errored_retried_and_not_a_trigger_miss(
        tmp_path: Path) -> None:
    cli = _project(tmp_path)
    first = _run(tmp_path, cli)
    assert "Traceback" not in first.stdout + first.stderr
    week = tmp_path / "week"
    with (week / "manifest.csv").open(newline="") as fh:
        manifest = {r["condition"]: r for r in csv.DictReader(fh)}
    with_skill = manifest["with-skill"]
    # Not "invalid (skill not in the init skill list)": the CLI never got that far.
    assert with_skill["run_status"] == manifest["no-skill"]["run_status"] == "errored"
    assert "before its init event (exit 1)" in with_skill["run_error"]
    assert with_skill["invocation_status"] == ""
    audit = json.loads((week / with_skill["run_id"] / "audit.json").read_text())
    assert audit["skill_invocation"]["status"] is None
    assert audit["skill_invocation"]["excluded"] is True
    card = json.loads((week / "scorecard.json").read_text())
    assert card["activation_summary"]["trigger_misses"] == 0
    assert card["activation_summary"]["with_skill_runs"] == 0
    assert card["activation_summary"]["excluded_runs"] == 1
    assert card["audit"]["invocation"] == {}
    assert [(r["run_id"], r["status"]) for r in card["audit"]["excluded_runs"]] == [
        (with_skill["run_id"], "errored")]
    assert not any("NOT_INVOKED" in flag for flag in card["audit"]["flags"])
    md = (week / "scorecard.md").read_text()
    assert "Excluded with-skill runs (did not complete; not counted as NOT_INVOKED" in md
    assert (tmp_path / "calls.log").read_text().count("started") == 2

    # Errored runs are retried on the next session: both arms, not only the no-skill one.
    second = _run(tmp_path, cli)
    assert second.returncode == pytest.ExitCode.TESTS_FAILED  # coverage 0 of 2
    assert (tmp_path / "calls.log").read_text().count("started") == 4
