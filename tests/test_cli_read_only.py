"""Read-only commands write nothing; bad paths are refused once, up front, by name."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_skilllift.config import DEMO_PROJECT
from tests.test_lint_depth_judge import DEMO, score, standard

PROMPT = "git-bisect-regression.json"


def project(root: Path, ini: str = "") -> Path:
    shutil.copytree(DEMO_PROJECT / "skills", root / "skills")
    (root / "evals" / "test-prompts").mkdir(parents=True)
    shutil.copy(DEMO_PROJECT / "evals" / "test-prompts" / PROMPT, root / "evals" / "test-prompts")
    (root / "pytest.ini").write_text("[pytest]\nskill_lift_models = haiku=claude-haiku-4-5\n"
                                     "skill_lift_reps = 1\nskill_lift_out = week\n" + ini)
    return root


def pytest_run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    return subprocess.run([sys.executable, "-m", "pytest", "--skill-lift", "-p",
                           "no:cacheprovider", "-p", "no:xdist", *args], cwd=root, env=env,
                          capture_output=True, text=True, timeout=120)


def snapshot(root: Path) -> dict[str, tuple[bytes, int, int]]:
    return {str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns, p.stat().st_mode)
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_collect_only_on_an_existing_week_writes_nothing(tmp_path: Path) -> None:
    root = project(tmp_path)
    run_id = "git-bisect-regression-haiku-no-skill-r1-week"
    (root / "week" / run_id).mkdir(parents=True)
    (root / "week" / run_id / "run.json").write_text(json.dumps({
        "run_id": run_id, "prompt": "git-bisect-regression", "model": "haiku",
        "condition": "no-skill", "rep": 1, "run_status": "ok", "run_error": "",
        "final_answer": "bisect it"}))
    before = snapshot(root / "week")
    result = pytest_run(root, "--collect-only", "-q")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "git-bisect-regression" in result.stdout
    assert snapshot(root / "week") == before  # no manifest, no scorecard, nothing touched


@pytest.mark.parametrize("make", ["missing", "empty"])
def test_baseline_from_that_is_no_week_is_a_usage_error_up_front(tmp_path: Path,
                                                                  make: str) -> None:
    root = project(tmp_path)
    if make == "empty":
        (root / "old-week").mkdir()
    result = pytest_run(root, "--collect-only", "--skill-lift-baseline-from=old-week")
    assert result.returncode == pytest.ExitCode.USAGE_ERROR, result.stdout
    assert "--skill-lift-baseline-from=" in result.stderr and "old-week" in result.stderr
    assert ("no such directory" if make == "missing" else "holds no runs") in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("make", ["missing", "empty"])
def test_a_named_prompts_dir_without_prompts_is_refused_despite_evals_json(
        tmp_path: Path, make: str) -> None:
    root = project(tmp_path, "skill_lift_prompts = evals/test-promtps\n")  # the typo
    if make == "empty":
        (root / "evals" / "test-promtps").mkdir()
    # A skill-creator evals.json elsewhere: today it alone would be collected, silently.
    evals = root / "skills" / "git-bisect" / "evals"
    evals.mkdir(parents=True, exist_ok=True)
    (evals / "evals.json").write_text(json.dumps({"skill_name": "git-bisect", "evals": [
        {"id": 1, "prompt": "Find the bad commit.", "expected_output": "bisect",
         "expectations": ["uses git bisect"]}]}))
    result = pytest_run(root, "--collect-only", "-q")
    assert result.returncode == pytest.ExitCode.USAGE_ERROR, result.stdout
    assert "skill_lift_prompts" in result.stderr
    assert str(root / "evals" / "test-promtps") in result.stderr
    assert ("does not exist" if make == "missing" else "holds no prompt file") in result.stderr


@pytest.mark.slow
def test_a_missing_skills_root_is_one_error(tmp_path: Path) -> None:
    root = project(tmp_path, "skill_lift_skills = skilz\n")
    shutil.copy(DEMO_PROJECT / "evals" / "test-prompts" / "python-packaging-pyproject.json",
                root / "evals" / "test-prompts")
    result = pytest_run(root, "--collect-only", "-q")
    assert result.returncode == pytest.ExitCode.USAGE_ERROR, result.stdout
    text = result.stdout + result.stderr
    assert text.count("skilz") == 1, text
    assert "skill_lift_skills" in result.stderr and "does not exist" in result.stderr


@pytest.mark.parametrize("depth", ["standard", "deep"])
def test_score_with_a_judge_layer_needs_a_key(tmp_path: Path, depth: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    argv = standard(tmp_path)
    argv[argv.index("standard")] = depth
    rc, out, err = score(argv)
    assert rc == 2, (out, err)
    assert f"--depth {depth} grades the skill with a model judge and needs " \
           "ANTHROPIC_API_KEY" in err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*.json"))


def test_certify_needs_a_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    corpus = tmp_path / "corpus"
    shutil.copytree(DEMO, corpus / "demo")
    rc, _, _ = score(["corpus", "init", str(corpus)])
    assert rc == 0
    rc, out, err = score(["certify", str(DEMO), "--corpus", str(corpus), "--out",
                          str(tmp_path / "out")])
    assert rc == 2, (out, err)
    assert "certify grades the skill with a model judge and needs ANTHROPIC_API_KEY" in err
