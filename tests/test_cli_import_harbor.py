"""``skilllift import harbor``: Harbor job directories → a week whose printed means are the ones
a hand computation from the trials' result.json files gives.

The fixture (tests/fixtures/harbor-jobs) is hand-written in Harbor's published schema
(TrialResult / TrialConfig, the trial directory layout: result.json, config.json, agent/,
verifier/, artifacts/); no real Harbor job could be had offline.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_skilllift.run.tasks.harbor import (
    HarborImportError,
    import_jobs,
    model_label,
)

JOBS = Path(__file__).parent / "fixtures" / "harbor-jobs"
#: The job directories of the fixture (beside them: its README).
JOB_DIRS = sorted(p for p in JOBS.iterdir() if p.is_dir())
ROOT = Path(__file__).parent.parent


def _hand_computed() -> dict[str, dict[str, float]]:
    """Per model label: the reward means and lift, straight from the result files — every
    trial with a reward, the arm from config.agent.skills, oracle trials left out."""
    rewards: dict[tuple[str, str, str], list[float]] = {}
    for result in sorted(JOBS.glob("*/*/result.json")):
        data = json.loads(result.read_text())
        agent = data["agent_info"]["name"]
        if agent == "oracle" or data["verifier_result"] is None:
            continue
        label = model_label(agent, data["agent_info"]["model_info"]["name"])
        arm = "with" if data["config"]["agent"]["skills"] else "no"
        rewards.setdefault((label, data["task_name"], arm), []).append(
            data["verifier_result"]["rewards"]["reward"])
    out: dict[str, dict[str, float]] = {}
    for label in sorted({k[0] for k in rewards}):
        tasks = sorted({k[1] for k in rewards if k[0] == label})
        no = [statistics.mean(rewards[label, t, "no"]) for t in tasks]
        with_ = [statistics.mean(rewards[label, t, "with"]) for t in tasks]
        diffs = [w - n for w, n in zip(with_, no, strict=True)]
        runs_with = [r for t in tasks for r in rewards[label, t, "with"]]
        runs_no = [r for t in tasks for r in rewards[label, t, "no"]]
        out[label] = {
            "no": statistics.mean(no), "with": statistics.mean(with_),
            "lift": statistics.mean(diffs),
            "se": statistics.stdev(diffs) / math.sqrt(len(diffs)) if len(diffs) > 1 else math.nan,
            "pass_no": sum(r >= 1 for r in runs_no) / len(runs_no),
            "pass_with": sum(r >= 1 for r in runs_with) / len(runs_with),
            "runs_no": len(runs_no), "runs_with": len(runs_with)}
    return out


@pytest.mark.slow
def test_import_then_summarize_prints_the_hand_computed_means(tmp_path: Path) -> None:
    week = tmp_path / "weekly" / "20261120"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cli = [sys.executable, "-m", "pytest_skilllift.cli"]
    res = subprocess.run([*cli, "import", "harbor", *map(str, JOB_DIRS),
                          "--out", str(week)], capture_output=True, text=True, env=env,
                         check=False)
    assert res.returncode == 0, res.stderr
    assert "imported 11 trial(s)" in res.stdout and "(no-skill 5, with-skill 6)" in res.stdout
    # what could not be mapped is counted and named
    assert "2 trial(s) not imported:" in res.stdout
    assert "sales-report__Hn6jK0p: no result.json" in res.stdout
    assert "sales-report__Or4cL3e: an oracle trial" in res.stdout
    assert "2 run(s) without a transcript" in res.stdout and "no agent/codex.txt" in res.stdout
    res = subprocess.run([*cli, "summarize", str(week)], capture_output=True, text=True,
                         env=env, check=False)
    # A week of tasks only has no rubric rows: summarize names that as an input problem
    # (exit 1) and still writes the scorecard with its reward section.
    assert res.returncode in (0, 1) and "scorecard.md" in res.stdout, res.stderr
    card = (week / "scorecard.md").read_text()
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in card.split("## Task rewards", 1)[1].split("Per task", 1)[0].splitlines()
            if line.startswith("| ") and "---" not in line and "model" not in line[:10]}
    hand = _hand_computed()
    assert set(rows) == set(hand) == {"claude-haiku-4-5", "codex-gpt-5"}
    for label, h in hand.items():
        row = rows[label]
        assert row[0] == f"{h['no']:.3f} → {h['with']:.3f}"
        se = "n/a" if math.isnan(h["se"]) else f"{h['se']:.3f}"
        assert row[1] == f"{h['lift']:+.3f} ± {se}"
        assert row[4] == (f"{100 * h['pass_no']:.0f}% → {100 * h['pass_with']:.0f}% "
                          f"({h['runs_no']}/{h['runs_with']} runs)")
    # the numbers themselves, as a reader checks them by hand: haiku's tasks gain 0.625, 0.5
    assert rows["claude-haiku-4-5"][:2] == ["0.250 → 0.812", "+0.562 ± 0.062"]
    # the verifier error is excluded and named, never a zero
    assert ("`fix-dates-claude-haiku-4-5-with-skill-r3-20261120`: RewardFileNotFoundError: "
            "No reward file found") in card
    scorecard = json.loads((week / "scorecard.json").read_text())
    assert scorecard["rewards"]["models"]["claude-haiku-4-5"]["reward_lift"] == pytest.approx(
        hand["claude-haiku-4-5"]["lift"])


def test_the_runs_carry_reps_tests_files_and_the_audit(tmp_path: Path) -> None:
    week = tmp_path / "20261120"
    report = import_jobs(JOB_DIRS, week)
    assert report.runs == 11
    run = week / "sales-report-claude-haiku-4-5-with-skill-r1-20261120"
    record = json.loads((run / "run.json").read_text())
    assert record["harbor_trial"] == "2026-11-20__skills/sales-report__Ab3dE9k"  # started first
    assert record["reward"] == 1.0 and record["tests_passed"] == record["tests_total"] == 3
    assert record["verifier_tests"]["test_outputs.py::test_totals_per_region"] == "passed"
    assert record["skill_family"] == "csv-report" and record["invocation_status"] == "VERIFIED"
    assert (run / "artifacts" / "chart.png").read_bytes().startswith(b"\x89PNG")
    assert (run / "verifier" / "output.txt").is_file()
    r2 = json.loads((week / "sales-report-claude-haiku-4-5-with-skill-r2-20261120" / "run.json"
                     ).read_text())
    assert r2["harbor_trial"].endswith("Qw7rT2m") and r2["reward"] == 0.75
    # a no-skill trial's config lists no skill: its family is its task's, from the other arm
    no = json.loads((week / "fix-dates-claude-haiku-4-5-no-skill-r1-20261120" / "run.json"
                     ).read_text())
    assert no["skill_family"] == "date-normaliser" and no["reward"] == 0.5
    manifest = (week / "manifest.csv").read_text().splitlines()
    assert len(manifest) == 12 and manifest[0].endswith(",task,reward")


def test_arms_by_job_name_and_a_config_without_skills(tmp_path: Path) -> None:
    jobs = tmp_path / "jobs"
    shutil.copytree(JOBS, jobs)
    for config in jobs.glob("*/*/result.json"):  # a Harbor without agent.skills
        data = json.loads(config.read_text())
        del data["config"]["agent"]["skills"]
        config.write_text(json.dumps(data))
    copies = sorted(p for p in jobs.iterdir() if p.is_dir())
    report = import_jobs(copies, tmp_path / "a")
    assert report.runs == 0
    assert all("--arm-from job-name" in why for _, why in report.unmapped
               if "oracle" not in why and "no result.json" not in why)
    report = import_jobs(copies, tmp_path / "b", arm_from="job-name")
    assert report.runs == 11 and report.by_condition == {"no-skill": 5, "with-skill": 6}


def test_refusals_name_the_path_and_the_fix(tmp_path: Path) -> None:
    import_jobs(JOB_DIRS, tmp_path / "w")
    with pytest.raises(HarborImportError, match="already holds runs"):
        import_jobs(JOB_DIRS, tmp_path / "w")
    with pytest.raises(HarborImportError, match="not a directory"):
        import_jobs([tmp_path / "nope"], tmp_path / "x")
    with pytest.raises(HarborImportError, match="not a regular expression"):
        import_jobs(JOB_DIRS, tmp_path / "y", arm_from="job-name",
                    no_skill_pattern="(")


def test_hostile_trial_content_stays_data(tmp_path: Path) -> None:
    """A link in a trial's folders is never followed; a task name with path characters
    cannot leave the week."""
    jobs = tmp_path / "jobs"
    shutil.copytree(JOBS / "2026-11-20__no-skills", jobs / "j")
    trial = next((jobs / "j").glob("sales-report__Rt5yU8i"))
    secret = tmp_path / "secret.txt"
    secret.write_text("do not copy")
    (trial / "artifacts").mkdir(exist_ok=True)
    (trial / "artifacts" / "link.txt").symlink_to(secret)
    data = json.loads((trial / "result.json").read_text())
    data["task_name"] = "../../escape"
    (trial / "result.json").write_text(json.dumps(data))
    report = import_jobs([jobs / "j"], tmp_path / "week")
    assert any(p.endswith("artifacts/link.txt") and "symbolic link" in w for p, w in report.cut)
    assert not list((tmp_path / "week").rglob("link.txt"))
    assert not (tmp_path / "escape").exists()
    assert (tmp_path / "week" / "escape-claude-haiku-4-5-no-skill-r1-week").is_dir()
