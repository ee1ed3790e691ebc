"""End to end: gates, week.json and the identity refusal through ``pytest --skill-lift``.

One small project (two prompts, one model, one rep: four runs) is generated once with the real
CLI against the stand-in; every later session in the test reuses its runs (the stand-in's
counters prove nothing is regenerated), so the whole file costs one week.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.runners.claude import bundled_claude

from .test_plugin_e2e import make_project, run

pytestmark = [
    pytest.mark.cli,
    pytest.mark.skipif(bundled_claude() is None, reason="claude-agent-sdk (bundled CLI) missing"),
]

#: In the stand-in week the no-skill arm misses musts, so this hard gate fails.
FAILING = "no-skill.must_coverage>=0.999"


def gate_cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_skilllift.cli.main", "gate",
                           str(root / "week"), *args], capture_output=True, text=True,
                          cwd=root, check=False)


def test_gates_week_json_and_refusal(pytester: pytest.Pytester, standin: Any,
                                     tmp_path: Path) -> None:
    root = make_project(pytester)
    # 1. a failing hard gate fails the session; the table names it with its numbers
    result = run(pytester, standin, "-p", "no:xdist", f"--skill-lift-gate={FAILING}",
                 "--skill-lift-gate=must_lift>0")
    out = result.stdout.str()
    assert result.ret == 1, out
    result.stdout.fnmatch_lines([
        "*quality gates, week week:*",
        f"*{FAILING}*haiku.no-skill*>= 0.999*FAIL*",
        "*must_lift>0*haiku*> 0*PASS*",
        "*gates: FAILED — 1 hard gate measurement(s) failed*",
    ])
    agent, judge = standin.count("agent"), standin.count("judge")
    assert judge == 4
    record = json.loads((root / "week" / "week.json").read_text())
    assert record["gates"] == [FAILING, "must_lift>0"]
    assert record["identity"]["models"] == {"haiku": "claude-haiku-4-5"}
    assert set(record["identity"]["prompts"]) == {"git-bisect-regression",
                                                  "python-packaging-pyproject"}
    assert record["identity"]["cli_version"] and record["identity"]["judge_model"]
    assert record["runs"] == 4

    # 2. the same gate soft, from the ini: reported, exit 0; the job summary gets both tables
    ini = root / "tox.ini"  # pytester.makeini's file
    base_ini = ini.read_text().rstrip("\n")
    ini.write_text(base_ini + f"\nskill_lift_gates =\n    {FAILING}:soft\n")
    step = tmp_path / "step-summary.md"
    result = run(pytester, standin, "-p", "no:xdist",
                 env_extra={"GITHUB_STEP_SUMMARY": str(step)})
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*week.json: gates changed from*",
                                 f"*{FAILING}:soft*FAIL (soft)*"])
    summary = step.read_text()
    assert "### Quality gates — week week" in summary and "### Skill lift — week week" in summary
    record = json.loads((root / "week" / "week.json").read_text())
    assert record["gates"] == [f"{FAILING}:soft"]
    assert record["changes"][-1]["before"] == [FAILING, "must_lift>0"]  # the earlier kept
    assert (standin.count("agent"), standin.count("judge")) == (agent, judge)

    # 3. skilllift gate judges the week by its recorded gates, not an edited config
    ini.write_text(base_ini + f"\nskill_lift_gates =\n    {FAILING}\n")
    done = gate_cli(root)
    assert done.returncode == 0 and "FAIL (soft)" in done.stdout, done.stdout + done.stderr
    done = gate_cli(root, "--gate", FAILING, "--output", "json")
    assert done.returncode == 1 and json.loads(done.stdout)["passed"] is False

    # 4. an edited rubric: the session refuses (under xdist too) before any call
    path = root / "evals" / "test-prompts" / "git-bisect-regression.json"
    prompt = json.loads(path.read_text())
    prompt["rubric"][0]["text"] += " (reworded)"
    path.write_text(json.dumps(prompt))
    result = run(pytester, standin, "-n", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        "*was measured under another identity*",
        "*prompt 'git-bisect-regression': rubric edited [[]grading]*",  # [ escaped for fnmatch
        "*Way out: start a new week with --skill-lift-out=week-2, or regrade every run*"
        "--skill-lift-fresh*",
    ])
    assert (standin.count("agent"), standin.count("judge")) == (agent, judge)
    # --skill-lift-fresh regrades every run (no regeneration) and records the new rubric
    result = run(pytester, standin, "-p", "no:xdist", "--skill-lift-fresh",
                 "--skill-lift-gate=must_lift>0")
    assert result.ret == 0, result.stdout.str()
    assert standin.count("agent") == agent and standin.count("judge") == judge + 4
    record = json.loads((root / "week" / "week.json").read_text())
    assert any(c["what"] == "rubric" and c["key"] == "git-bisect-regression"
               for c in record["changes"])

    # 5. the coverage guard: a week where no run could be graded fails every gate
    missing = pytester.path / "no-such-claude"
    result = run(pytester, standin, "-p", "no:xdist", "--skill-lift-out=week-broken",
                 f"--skill-lift-claude={missing}", "--skill-lift-gate=must_lift>-1:soft")
    assert result.ret == 1
    result.stdout.fnmatch_lines([
        "*insufficient coverage: graded 0 of 4 runs (0%; minimum 50%)*every gate fails*"])
