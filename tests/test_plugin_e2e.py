"""End to end: ``pytest --skill-lift`` with the real bundled CLI against the stand-in.

Each test builds a small project (the repo's example skills, two prompts, one model, one rep:
four runs) with ``pytester`` and runs pytest in a subprocess, the way a user would, with and
without ``-n 2``. The stand-in counts every model call, so "each run is generated once and
judged once" is checked, not assumed.
"""

from __future__ import annotations

import csv
import json
import os
import re
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

REPO = Path(__file__).resolve().parents[1]
SECRET = "sk-ant-test-SECRET-d0n7-l34k-7h15"
PROMPTS = ("git-bisect-regression.json", "python-packaging-pyproject.json")

pytestmark = [
    pytest.mark.cli,
    pytest.mark.skipif(bundled_claude() is None, reason="claude-agent-sdk (bundled CLI) missing"),
]


def n_items(*names: str) -> int:
    """Rubric items in the named example prompts."""
    return sum(len(json.loads((DEMO_PROJECT / "evals" / "test-prompts" / n).read_text())["rubric"])
               for n in names)


def make_project(pytester: pytest.Pytester, prompts: tuple[str, ...] = PROMPTS) -> Path:
    root = pytester.path
    shutil.copytree(DEMO_PROJECT / "skills", root / "skills")
    (root / "evals" / "test-prompts").mkdir(parents=True)
    for name in prompts:
        shutil.copy(DEMO_PROJECT / "evals" / "test-prompts" / name, root / "evals" / "test-prompts")
    pytester.makeini("[pytest]\nskill_lift_models = haiku=claude-haiku-4-5\n"
                     "skill_lift_reps = 1\nskill_lift_out = week\n")
    return root


def run(pytester: pytest.Pytester, server: Any, *args: str, timeout: float = 300,
        env_extra: dict[str, str] | None = None) -> pytest.RunResult:
    env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": SECRET,
           **(env_extra or {})}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return pytester.runpytest_subprocess("--skill-lift", "-p", "no:cacheprovider",
                                             *args, timeout=timeout)
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def all_text(root: Path) -> str:
    out = []
    for path in root.rglob("*"):
        if path.is_file():
            out.append(path.read_bytes().decode("utf-8", "replace"))
    return "\n".join(out)


@pytest.mark.parametrize("workers", [0, 2], ids=["serial", "xdist-2"])
def test_week_end_to_end(pytester: pytest.Pytester, standin: Any, workers: int) -> None:
    root = make_project(pytester)
    args = ("-n", str(workers), "-v") if workers else ("-p", "no:xdist")
    result = run(pytester, standin, *args, "--junitxml=junit.xml", "-rs")
    if workers:
        # The scheduling hook keeps every item of a run on one worker (verified, not assumed:
        # xdist decides loadgroup before plugins configure, so we use our own scheduler).
        placed: dict[str, set[str]] = {}
        for line in result.stdout.lines:
            m = re.match(r"\[(gw\d+)\] .*(?:PASSED|MISSING|VIOLATED|UNINVOKED|SKIPPED) (\S+)\s*$",
                         line)
            if m:
                placed.setdefault(m.group(2).rsplit("::", 1)[0], set()).add(m.group(1))
        assert len(placed) == 4 and all(len(w) == 1 for w in placed.values()), placed
        assert len({w for ws in placed.values() for w in ws}) == 2  # both workers got runs
    assert result.ret == 0, result.stdout.str()
    week = root / "week"
    manifest = rows(week / "manifest.csv")
    assert len(manifest) == 4
    by_cond = {r["condition"]: r for r in manifest if r["prompt"] == "git-bisect-regression"}
    assert by_cond["with-skill"]["skill_available"] == "1"
    assert by_cond["with-skill"]["skill_activation"] == "skill_tool"
    assert by_cond["no-skill"]["skill_available"] == "0"
    assert by_cond["no-skill"]["skill_activation"] == "none"
    assert all(r["run_status"] == "ok" and r["cli_version"] for r in manifest)
    scores = rows(week / "scores.csv")
    assert len(scores) == 2 * n_items(*PROMPTS)  # two conditions
    assert all(r["verdict"] for r in scores)
    # one judge call per run, however the items were distributed
    assert standin.count("judge") == 4
    with_skill = [r for r in scores if r["condition"] == "with-skill" and r["item_type"] == "must"]
    no_skill = [r for r in scores if r["condition"] == "no-skill" and r["item_type"] == "must"]
    assert sum(float(r["credit"]) for r in with_skill) > sum(float(r["credit"]) for r in no_skill)
    card = json.loads((week / "scorecard.json").read_text())
    assert card["models"]["haiku"]["n_prompts"] == 2
    assert (week / "scorecard.md").is_file()
    outcomes = result.parseoutcomes()
    # every rubric item of both arms, and one ``invoked`` item per with-skill run; findings
    # have their own statuses, and none of them is a failed test
    assert "failed" not in outcomes
    assert sum(outcomes.get(k, 0) for k in ("passed", "missing", "violated", "uninvoked")) == \
        2 * n_items(*PROMPTS) + 2
    assert outcomes.get("missing", 0) > 0  # the no-skill arm misses musts: reported as such
    result.stdout.fnmatch_lines(["*skill lift*", "*scorecard:*"])
    assert SECRET not in all_text(root)


def test_rerun_is_free_and_fresh_regrades_only(pytester: pytest.Pytester, standin: Any) -> None:
    root = make_project(pytester)
    assert run(pytester, standin, "-p", "no:xdist").ret == 0
    first = (root / "week" / "scores.csv").read_bytes()
    agent, judge = standin.count("agent"), standin.count("judge")
    assert run(pytester, standin, "-p", "no:xdist").ret == 0
    assert (standin.count("agent"), standin.count("judge")) == (agent, judge)
    assert (root / "week" / "scores.csv").read_bytes() == first
    assert run(pytester, standin, "-p", "no:xdist", "--skill-lift-fresh").ret == 0
    assert standin.count("agent") == agent and standin.count("judge") == judge + 4
    assert (root / "week" / "scores.csv").read_bytes() == first


def test_bad_prompt_is_a_collection_error_and_the_others_run(pytester: pytest.Pytester,
                                                            standin: Any) -> None:
    root = make_project(pytester, PROMPTS[:1])
    (root / "evals" / "test-prompts" / "broken.json").write_text(
        json.dumps({"name": "broken", "prompt": "x", "skill_url": "https://s/git-bisect/SKILL.md",
                    "rubric": [{"type": "maybe", "text": "x"}]}))
    result = run(pytester, standin, "-p", "no:xdist")
    out = result.stdout.str()
    assert "broken.json: field 'rubric[0].type'" in out and "use one of must, bonus, avoid" in out
    assert result.ret == 1  # bad input is not a clean week
    assert len(rows(root / "week" / "manifest.csv")) == 2  # the good prompt still ran


def test_k_focuses_one_skill(pytester: pytest.Pytester, standin: Any) -> None:
    root = make_project(pytester)
    result = run(pytester, standin, "-p", "no:xdist", "-k", "git-bisect and with-skill")
    assert result.ret == 0
    manifest = rows(root / "week" / "manifest.csv")
    assert [(r["prompt"], r["condition"]) for r in manifest] == [
        ("git-bisect-regression", "with-skill")]


def test_collect_only_ids_and_no_calls(pytester: pytest.Pytester, standin: Any) -> None:
    make_project(pytester, PROMPTS[:1])
    result = run(pytester, standin, "-p", "no:xdist", "--collect-only", "-q")
    # with-skill runs are scheduled first (longest first balances a parallel week)
    result.stdout.fnmatch_lines([
        "evals/test-prompts/git-bisect-regression.json::haiku::with-skill::r1::must-1",
        "*::haiku::with-skill::r1::avoid-1",
        "evals/test-prompts/git-bisect-regression.json::haiku::no-skill::r1::must-1",
    ])
    assert standin.count() == 0


def test_without_the_flag_nothing_is_collected(pytester: pytest.Pytester) -> None:
    make_project(pytester)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "evals")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_no_prompts_says_where_it_looked(pytester: pytest.Pytester, standin: Any) -> None:
    pytester.makeini("[pytest]\nskill_lift_prompts = nowhere\n")
    result = run(pytester, standin)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*found no prompt files in*nowhere*rootdir*ini file*"])


def test_killed_run_resumes_without_redoing_finished_work(pytester: pytest.Pytester,
                                                         standin: Any) -> None:
    root = make_project(pytester)
    env = {**os.environ, "ANTHROPIC_BASE_URL": standin.base_url, "ANTHROPIC_API_KEY": SECRET}
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "--skill-lift", "-p", "no:xdist",
                             "-p", "no:cacheprovider", "-q"], cwd=root, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not list((root / "week").glob("*/grades.json")):
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done = {p.parent.name for p in (root / "week").glob("*/grades.json")}
    assert 1 <= len(done) < 4
    judged_before = standin.count("judge")
    assert run(pytester, standin, "-p", "no:xdist").ret == 0
    manifest = rows(root / "week" / "manifest.csv")
    assert sorted(r["run_id"] for r in manifest) == sorted({r["run_id"] for r in manifest})
    assert len(manifest) == 4
    scores = rows(root / "week" / "scores.csv")
    assert len(scores) == 2 * n_items(*PROMPTS)
    # finished runs were neither regenerated nor regraded: only the others were judged
    assert standin.count("judge") - judged_before <= 4 - len(done)


def test_broken_install_is_invalid_excluded_and_reported(pytester: pytest.Pytester,
                                                         standin: Any) -> None:
    root = make_project(pytester, PROMPTS[:1])
    # A SKILL.md whose frontmatter does not parse: Claude Code does not register the skill,
    # so the availability check must catch it.
    (root / "skills" / "git-bisect" / "SKILL.md").write_text("---\nname: [unclosed\n---\nbody\n")
    result = run(pytester, standin, "-p", "no:xdist", "-rs")
    manifest = {r["condition"]: r for r in rows(root / "week" / "manifest.csv")}
    assert manifest["with-skill"]["skill_available"] == "0"
    assert manifest["with-skill"]["run_status"] == "invalid"
    assert manifest["no-skill"]["run_status"] == "ok"
    result.stdout.fnmatch_lines(["*SKIPPED*run excluded (invalid): invalid install*"])
    assert standin.count("judge") == 1  # the invalid run is not graded
    card = json.loads((root / "week" / "scorecard.json").read_text())
    assert card["coverage"]["graded_runs"] == 1 and card["coverage"]["total_runs"] == 2
    assert [d["run_id"] for d in card["coverage"]["dropped"]] == [
        manifest["with-skill"]["run_id"]]
    assert result.ret == 0  # 1 of 2 graded meets the default 50% coverage guard


def test_errored_runs_skip_with_reason_and_fail_the_coverage_guard(
        pytester: pytest.Pytester, standin: Any) -> None:
    make_project(pytester, PROMPTS[:1])
    missing = pytester.path / "no-such-claude"
    result = run(pytester, standin, "-p", "no:xdist", "-rs", f"--skill-lift-claude={missing}")
    result.stdout.fnmatch_lines(["*coverage: graded 0 of 2 runs*below the minimum*",
                                 "*run excluded (errored)*no-such-claude*"])
    assert result.parseoutcomes().get("passed", 0) == 0
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # No agent or judge request: the preflight's model lookup (kind "aux") is all it asked.
    assert standin.count("agent") == standin.count("judge") == 0


def test_a_quarter_of_requests_failing_gives_the_same_week(pytester: pytest.Pytester) -> None:
    from pytest_skilllift.testing.agent_script import skill_agent
    from pytest_skilllift.testing.judge_script import keyword_judge
    from pytest_skilllift.testing.server import Faults, StandIn

    weeks = []
    for faults in (None, Faults(rate=0.25, kinds=("429", "529", "500", "reset"), seed=7)):
        with StandIn(agent=skill_agent, judge=keyword_judge, faults=faults) as server:
            root = make_project(pytester)
            shutil.rmtree(root / "week", ignore_errors=True)
            assert run(pytester, server, "-p", "no:xdist").ret == 0
            faulted = sum(1 for r in server.requests if r.fault)
            scores = rows(root / "week" / "scores.csv")
            weeks.append(sorted((r["run_id"], r["item_type"], r["item_index"], r["verdict"])
                                for r in scores))
            shutil.rmtree(root / "skills")
            shutil.rmtree(root / "evals")
    assert faulted > 0
    assert weeks[0] == weeks[1]


def test_bare_path_after_an_option_is_explained(pytester: pytest.Pytester,
                                                standin: Any) -> None:
    """The pitfall: ``--skill-lift-claude /path`` makes pytest pick the rootdir from /path
    (plugins are not loaded yet), so no prompt is found; the error says why and how to fix."""
    make_project(pytester, PROMPTS[:1])
    elsewhere = pytester.path.parent / f"{pytester.path.name}-bin"
    elsewhere.mkdir()
    claude = bundled_claude()
    assert claude is not None
    (elsewhere / "claude").symlink_to(claude)
    result = run(pytester, standin, "--skill-lift-claude", str(elsewhere / "claude"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*found no prompt files in*rootdir*Write path options as --skill-lift-claude=PATH*"])
    assert standin.count() == 0
