"""The pytest extension points, end to end: the judge fixture, checks over runs, hooks.

One small project (two example prompts, one model, one rep: four runs, one of them an
invalid install) carries a conftest.py that wraps ``skill_lift_judge`` and implements every
``pytest_skilllift_*`` hook, each counting its calls in a file, and a checks file with a
check over every run, a narrowed one and a whole-week gate. It is run once serially and once
with ``-n 2`` (module-scoped: every assertion below reads the same two sessions). The stand-in
counts every model call, so "no extra agent call" and "once per run" are measured.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.judge.protocol import PROMPT_VERSION
from pytest_skilllift.runners.claude import bundled_claude

REPO = Path(__file__).resolve().parents[1]
DEMO_PROJECT = REPO / "pytest_skilllift" / "demo"  # the demo project shipped in the package
PROMPTS = ("git-bisect-regression.json", "python-packaging-pyproject.json")

pytestmark = [
    pytest.mark.cli,
    pytest.mark.skipif(bundled_claude() is None, reason="claude-agent-sdk (bundled CLI) missing"),
]

CONFTEST = '''
import os
from pathlib import Path

import pytest

from pytest_skilllift.runners.local import LocalRunner

CALLS = Path(__file__).parent / "calls"


def log(name, line):
    CALLS.mkdir(exist_ok=True)
    with open(CALLS / name, "a") as fh:  # one short append per line: safe across processes
        fh.write(f"{line} {os.getpid()}\\n")


class CountingJudge:
    def __init__(self, judge):
        self.judge = judge

    def __getattr__(self, name):
        return getattr(self.judge, name)

    def grade(self, prompt, answer, rubric, *, seed=None):
        log("judge.log", seed)
        return self.judge.grade(prompt, answer, rubric, seed=seed)


@pytest.fixture(scope="session")
def skill_lift_judge(skill_lift_judge):
    return CountingJudge(skill_lift_judge)


class CountingRunner:
    name = "counting"

    def __init__(self):
        self.inner = LocalRunner()

    def run(self, spec, cfg, run_dir):
        log("runner.log", spec.run_id)
        outcome = self.inner.run(spec, cfg, run_dir)
        return type(outcome)(**{**outcome.__dict__, "runner": self.name})

    def close(self):
        self.inner.close()


def pytest_skilllift_make_runner(config):
    return CountingRunner()


def pytest_skilllift_run_finished(config, run):
    log("finished.log", f"{run.run_id} {run.status}")


def pytest_skilllift_run_graded(config, run, verdicts):
    log("graded.log", f"{run.run_id} {len(verdicts)} {len(run.grades)}")


def pytest_skilllift_scorecard_sections(config, scorecard):
    graded = scorecard["coverage"]["graded_runs"]
    return [("Team dashboard", f"pushed {graded} graded runs", {"graded": graded})]
'''

CHECKS = '''
import os
from pathlib import Path

import pytest

CALLS = Path(__file__).parents[2] / "calls"


def log(name, line):
    CALLS.mkdir(exist_ok=True)
    with open(CALLS / name, "a") as fh:
        fh.write(f"{line} {os.getpid()}\\n")


def test_follows_a_skill(skill_lift_run):
    log("check.log", skill_lift_run.run_id)
    assert skill_lift_run.final_answer.startswith("Following the")


@pytest.mark.skill_lift(prompts="git-*", conditions="with-skill")
def test_narrowed(skill_lift_run):
    log("narrowed.log", skill_lift_run.run_id)
    assert skill_lift_run.transcript_path.is_file()
    assert skill_lift_run.events and skill_lift_run.signals.skill_available
    assert skill_lift_run.audit_status and skill_lift_run.cost_usd is not None
    assert set(skill_lift_run.verdicts) == set(skill_lift_run.grades) and skill_lift_run.grades


def test_gate(skill_lift_week):
    log("gate.log", skill_lift_week.path.name)
    assert skill_lift_week.data["coverage"]["total_runs"] == 4
    assert skill_lift_week.lift("haiku") is not None
'''


def n_items(*names: str) -> int:
    return sum(len(json.loads((DEMO_PROJECT / "evals" / "test-prompts" / n).read_text())["rubric"])
               for n in names)


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.is_file() else []


def first_turns(server: Any) -> int:
    """CLI runs the stand-in served: each run's conversation opens with one user message."""
    return sum(1 for body in server.bodies("agent") if len(body.get("messages", [])) == 1)


@dataclass
class Session:
    root: Path
    out: str
    ret: int
    agent_runs: int
    judge_calls: int

    @property
    def week(self) -> Path:
        return self.root / "week"

    def log(self, name: str) -> list[str]:
        return lines(self.root / "calls" / name)


@pytest.fixture(scope="module")
def api() -> Iterator[Any]:
    from pytest_skilllift.testing.agent_script import skill_agent
    from pytest_skilllift.testing.judge_script import keyword_judge
    from pytest_skilllift.testing.server import StandIn

    with StandIn(agent=skill_agent, judge=keyword_judge) as server:
        yield server


def make_project(root: Path, conftest: str = CONFTEST, checks: str | None = CHECKS,
                 prompts: tuple[str, ...] = PROMPTS) -> Path:
    shutil.copytree(DEMO_PROJECT / "skills", root / "skills")
    # A SKILL.md whose frontmatter does not parse: the CLI does not register the skill, so
    # python-packaging's with-skill run is an invalid install, excluded from scoring.
    (root / "skills" / "python-packaging" / "SKILL.md").write_text(
        "---\nname: [unclosed\n---\nbody\n")
    (root / "evals" / "test-prompts").mkdir(parents=True)
    for name in prompts:
        shutil.copy(DEMO_PROJECT / "evals" / "test-prompts" / name, root / "evals" / "test-prompts")
    if checks is not None:
        (root / "evals" / "checks").mkdir()
        (root / "evals" / "checks" / "test_team.py").write_text(checks)
    (root / "conftest.py").write_text(conftest)
    (root / "pytest.ini").write_text("[pytest]\nskill_lift_models = haiku=claude-haiku-4-5\n"
                                     "skill_lift_reps = 1\nskill_lift_out = week\n")
    return root


def run_pytest(root: Path, server: Any, *args: str) -> tuple[int, str]:
    env = {**os.environ, "ANTHROPIC_BASE_URL": server.base_url,
           "ANTHROPIC_API_KEY": "sk-ant-test-extending"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "--skill-lift", "-p",
                           "no:cacheprovider", "-rs", "-v", *args], cwd=root, env=env,
                          capture_output=True, text=True, timeout=600)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def sessions(api: Any, tmp_path_factory: pytest.TempPathFactory) -> Callable[[int], Session]:
    """The project run once per worker count, on first use (shared by every test here)."""
    done: dict[int, Session] = {}

    def get(workers: int) -> Session:
        if workers not in done:
            root = make_project(tmp_path_factory.mktemp(f"extending-{workers}"))
            agent0, judge0 = first_turns(api), api.count("judge")
            args = ("-n", str(workers)) if workers else ("-p", "no:xdist")
            ret, out = run_pytest(root, api, *args)
            done[workers] = Session(root, out, ret, first_turns(api) - agent0,
                                    api.count("judge") - judge0)
        return done[workers]

    return get


@pytest.fixture(params=[0, 2], ids=["serial", "xdist-2"])
def session(request: pytest.FixtureRequest, sessions: Callable[[int], Session]) -> Session:
    return sessions(request.param)


def test_the_week_completes_with_findings_not_failures(session: Session) -> None:
    # Rubric misses and failed checks are findings; 3 of 4 runs graded meets the guard.
    assert session.ret == 0, session.out
    manifest = {(r["prompt"], r["condition"]): r for r in rows(session.week / "manifest.csv")}
    assert len(manifest) == 4
    assert manifest[("python-packaging-pyproject", "with-skill")]["run_status"] == "invalid"


def test_each_run_is_generated_once_for_rubric_items_checks_and_gate(session: Session) -> None:
    # Two checks, a gate and the rubric items share each run: four CLI runs, no more.
    assert session.agent_runs == 4
    assert len(session.log("runner.log")) == 4
    assert {r["runner"] for r in rows(session.week / "manifest.csv")} == {"counting"}
    # The check body ran once per scored run (the excluded run skipped it) …
    checked = [ln.split()[0] for ln in session.log("check.log")]
    assert len(checked) == len(set(checked)) == 3
    # … and the narrowed check only on git-bisect's with-skill run.
    assert [ln.split()[0] for ln in session.log("narrowed.log")] == [
        "git-bisect-regression-haiku-with-skill-r1-week"]
    assert len(session.log("gate.log")) == 1


def test_every_graded_run_goes_through_the_conftest_judge(session: Session) -> None:
    judged = [ln.split()[0] for ln in session.log("judge.log")]
    # One call through the wrapper per graded run (the invalid run is not graded), and the
    # stand-in saw exactly those calls: nothing graded around the override.
    assert len(judged) == len(set(judged)) == 3 == session.judge_calls
    card = json.loads((session.week / "scorecard.json").read_text())
    judge = card["judge"]
    assert judge["graded_runs"] == 3 and judge["overridden_runs"] == 3
    assert list(judge["overrides"]) == ["conftest.CountingJudge"]
    assert list(judge["prompt_versions"]) == [PROMPT_VERSION]
    assert "judge overridden" in (session.week / "scorecard.md").read_text()
    # the week's record says which judge graded it, and the session said so
    record = json.loads((session.week / "week.json").read_text())
    assert record["judge_overrides"] == {"conftest.CountingJudge": 3}
    assert record["changes"][-1]["what"] == "judge_overrides"
    assert ("week.json: judge overridden by a skill_lift_judge fixture: conftest.CountingJudge "
            "(3 graded runs") in session.out


def test_run_hooks_are_called_once_per_run(session: Session) -> None:
    finished = [ln.split() for ln in session.log("finished.log")]
    assert sorted(f[0] for f in finished) == sorted(
        r["run_id"] for r in rows(session.week / "manifest.csv"))
    assert sorted(f[1] for f in finished) == ["invalid", "ok", "ok", "ok"]
    graded = [ln.split() for ln in session.log("graded.log")]
    assert len(graded) == len({g[0] for g in graded}) == 3
    scores = rows(session.week / "scores.csv")
    for run_id, n_verdicts, n_rows, _pid in graded:
        assert int(n_verdicts) == int(n_rows) == sum(1 for r in scores if r["run_id"] == run_id)


def test_custom_checks_land_in_the_scorecard(session: Session) -> None:
    card = json.loads((session.week / "scorecard.json").read_text())
    checks = {(c["test"], c["condition"]): c for c in card["custom_checks"]}
    follows = "evals/checks/test_team.py::test_follows_a_skill"
    assert {k: (v["passed"], v["failed"], v["skipped"], v["pass_rate"])
            for k, v in checks.items() if k[0] == follows} == {
        (follows, "no-skill"): (0, 2, 0, 0.0),
        (follows, "with-skill"): (1, 0, 1, 1.0),  # the invalid install skipped, not failed
    }
    assert set(checks[(follows, "with-skill")]) >= {
        "test", "model", "condition", "passed", "failed", "skipped", "pass_rate"}
    lift = {d["test"]: d for d in card["custom_checks_lift"]}
    assert lift[follows]["difference"] == 1.0
    narrowed = "evals/checks/test_team.py::test_narrowed"
    assert (checks[(narrowed, "with-skill")]["passed"], len(
        [k for k in checks if k[0] == narrowed])) == (1, 1)
    markdown = (session.week / "scorecard.md").read_text()
    assert "## Custom checks" in markdown and "`" + follows + "`" in markdown
    # The excluded run skips its checks with the reason, in the terminal and the week.
    assert re.search(r"SKIPPED .*test_follows_a_skill.*run excluded \(invalid\)",
                     session.out.replace("\n", " ")) or (
        "run excluded (invalid)" in session.out), session.out
    skipped = [r for r in rows(session.week / "custom_checks.csv") if r["outcome"] == "skipped"]
    assert [(r["prompt"], r["condition"]) for r in skipped] == [
        ("python-packaging-pyproject", "with-skill")]
    assert skipped[0]["reason"].startswith("run excluded (invalid)")
    assert "custom checks: 2 passed, 2 failed, 1 skipped over 4 runs" in session.out
    # A failing check shows its assertion and which run, not the run's whole repr.
    assert "SkillLiftRun(git-bisect-regression::haiku::no-skill::r1, status='ok')" in session.out
    assert "PromptSpec(" not in session.out and "RunSpec(" not in session.out


def test_a_hook_section_is_appended_to_the_scorecard(session: Session) -> None:
    markdown = (session.week / "scorecard.md").read_text()
    assert markdown.rstrip().endswith("## Team dashboard\n\npushed 3 graded runs")
    card = json.loads((session.week / "scorecard.json").read_text())
    assert [(e["title"], e["data"]) for e in card["extra"]] == [
        ("Team dashboard", {"graded": 3})]
    assert card["extra"][0]["source"].startswith("conftest.py:")


def run_of(nodeid: str) -> str | None:
    """``<prompt>::<model>::<condition>::r<rep>`` of a rubric item or a check; else None."""
    if "[" in nodeid:
        return nodeid.split("[", 1)[1].removesuffix("]")
    path, *names = nodeid.split("::")
    if not path.endswith(".json") or len(names) != 4:
        return None
    return "::".join([Path(path).stem, *names[:3]])


def test_xdist_keeps_a_runs_checks_with_its_rubric_items(sessions: Any) -> None:
    session = sessions(2)
    placed: dict[str, set[str]] = {}
    kinds: dict[str, set[str]] = {}
    for line in session.out.splitlines():
        m = re.match(r"\[(gw\d+)\] .*(?:PASSED|FAILED|SKIPPED) (\S+)", line)
        run = run_of(m.group(2)) if m else None
        if m and run:
            placed.setdefault(run, set()).add(m.group(1))
            kinds.setdefault(run, set()).add("check" if "[" in m.group(2) else "rubric")
    assert len(placed) == 4 and all(len(w) == 1 for w in placed.values()), placed
    assert all(k == {"check", "rubric"} for k in kinds.values()), kinds


def test_a_failing_hook_is_named_and_fails_the_session(api: Any, tmp_path: Path) -> None:
    conftest = CONFTEST + '''

def pytest_skilllift_run_finished(config, run):  # a second implementation, broken
    raise RuntimeError("dashboard down")
'''
    root = make_project(tmp_path, conftest, checks=None, prompts=PROMPTS[:1])
    ret, out = run_pytest(root, api, "-n", "2")  # errors travel from the workers
    assert ret == 1, out
    assert "2 hook error(s)" in out
    assert re.search(r"pytest_skilllift_run_finished in conftest\.py:\d+ "
                     r"pytest_skilllift_run_finished raised RuntimeError: dashboard down", out)
    # The week itself is complete: the error is reported, not a lost run.
    assert len(rows(root / "week" / "manifest.csv")) == 2
    assert len(lines(root / "calls" / "graded.log")) == 2


def test_a_failing_runner_hook_names_itself_and_nothing_runs(api: Any, tmp_path: Path) -> None:
    conftest = '''
def pytest_skilllift_make_runner(config):
    raise ValueError("no sandbox quota left")
'''
    root = make_project(tmp_path, conftest, checks=None, prompts=PROMPTS[:1])
    before = api.count("agent"), api.count("judge")
    ret, out = run_pytest(root, api, "-p", "no:xdist")
    assert ret == 1
    assert re.search(r"pytest_skilllift_make_runner in conftest\.py:2 "
                     r"pytest_skilllift_make_runner raised ValueError: no sandbox quota left", out)
    # no CLI run, no judge call (the preflight's model lookup is an "aux" request)
    assert (api.count("agent"), api.count("judge")) == before


def test_the_progress_line_counts_runs_not_checks(session: Session) -> None:
    # Checks over runs share the runs' ids in their parameters; the line counts each run
    # once, from its rubric items (under -n from the workers' test ids).
    assert re.search(r"skill-lift: runs 4/4 · graded 3 · errored 0 · excluded 1 · spent "
                     r"\$\d+\.\d\d · done in", session.out), session.out[-3000:]
