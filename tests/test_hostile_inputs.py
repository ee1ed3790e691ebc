"""Hostile input through ``pytest --skill-lift`` (real bundled CLI, the stand-in, ``-n 2``).

One week is generated once for the module from a project written to break the harness:
prompt names that are paths, a duplicated name, a NUL byte, a prompt that starts with
``--help``, a prompt over the OS limit for one argument, ``"skill": [...]``, a SKILL.md
symlink loop and a skill family with a symlink leaving it. The same session's progress
lines are checked against the manifest; a second session over the same week, after its
ledger files were damaged by hand, checks that damaged runs are redone, never trusted.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.config import DEMO_PROJECT
from pytest_skilllift.runners.claude import bundled_claude
from pytest_skilllift.testing.agent_script import skill_agent, user_prompt
from pytest_skilllift.testing.judge_script import keyword_judge
from pytest_skilllift.testing.server import StandIn

REPO = Path(__file__).resolve().parents[1]
SECRET = "sk-ant-test-SECRET-h05t1l3-1npu7"
OUTSIDE = "TOP-SECRET-OUTSIDE-THE-SKILLS-ROOT"
BIG = 140 * 1024  # over Linux's 128 KiB limit for one argv element

pytestmark = [
    pytest.mark.cli,
    pytest.mark.skipif(bundled_claude() is None, reason="claude-agent-sdk (bundled CLI) missing"),
]


def _prompt(name: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "prompt": text,
            "skill_url": "https://skills.example.org/git-bisect/SKILL.md",
            "rubric": [{"type": "must", "text": "Uses git bisect with a known good and bad "
                        "commit"}], **extra}


def _write_project(root: Path) -> None:
    shutil.copytree(DEMO_PROJECT / "skills", root / "skills")
    skills, prompts = root / "skills", root / "evals" / "test-prompts"
    prompts.mkdir(parents=True)
    shutil.copy(DEMO_PROJECT / "evals" / "test-prompts" / "git-bisect-regression.json", prompts)
    (root / "outside.txt").write_text(OUTSIDE)
    leaky = skills / "leaky"
    leaky.mkdir()
    (leaky / "SKILL.md").write_text("---\nname: leaky\ndescription: Find a regression with "
                                    "git bisect. Use when a test broke.\n---\n# git bisect\n")
    (leaky / "notes.md").symlink_to("../../outside.txt")
    (skills / "loop").mkdir()
    (skills / "loop" / "SKILL.md").symlink_to("SKILL.md")
    files: dict[str, dict[str, Any]] = {
        # Runs, each with a twist.
        "dash.json": _prompt("dash-prompt", "--help me: which git bisect commands find the "
                             "commit that broke our test?"),
        "big.json": _prompt("big", "x" * BIG + "\nHow do I find the commit that broke a "
                            "test with git bisect?"),
        "leaky.json": _prompt("leaky", "Which commit broke the test? Use git bisect.",
                              skill_url="https://skills.example.org/leaky/SKILL.md"),
        # Collection errors.
        "escape.json": _prompt("../../escaped", "q"),
        "slash.json": _prompt("evil/slash", "q"),
        "zz-dup.json": _prompt("git-bisect-regression", "another question"),
        "nul.json": _prompt("nul", "before\u0000after"),
        "skill-list.json": {**_prompt("skill-list", "q"), "skill": ["git-bisect"]},
        "loop.json": _prompt("loop", "q", skill_url="https://skills.example.org/loop/SKILL.md"),
    }
    for name, data in files.items():
        (prompts / name).write_text(json.dumps(data))
    (root / "pytest.ini").write_text("[pytest]\nskill_lift_models = haiku=claude-haiku-4-5\n"
                                     "skill_lift_reps = 1\nskill_lift_out = week\n")


def run_pytest(root: Path, api: StandIn, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": SECRET,
           "PYTHONPATH": str(REPO), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "pytest", "--skill-lift", "-p",
                           "no:cacheprovider", "-rs", *args], cwd=root, env=env,
                          capture_output=True, text=True, timeout=600, check=False)


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


@dataclass
class Week:
    root: Path
    api: StandIn
    result: subprocess.CompletedProcess[str]

    @property
    def out(self) -> str:
        return self.result.stdout + self.result.stderr

    def manifest(self) -> dict[str, dict[str, str]]:
        return {r["run_id"]: r for r in rows(self.root / "week" / "manifest.csv")}


@pytest.fixture(scope="module")
def week(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Week]:
    root = tmp_path_factory.mktemp("hostile") / "project"
    root.mkdir()
    _write_project(root)
    with StandIn(agent=skill_agent, judge=keyword_judge) as api:
        result = run_pytest(root, api, "-n", "2", "--skill-lift-progress-interval=0")
        yield Week(root, api, result)


def test_bad_prompt_files_are_collection_errors_naming_file_and_fix(week: Week) -> None:
    out = week.out
    assert "Traceback" not in out, out
    assert week.result.returncode == 1, out  # bad input is not a clean week
    for needle in (
        "escape.json: field 'name': is '../../escaped', which is not usable as a run directory",
        "slash.json: field 'name': is 'evil/slash'",
        "no '..', at most 100 characters",
        # the duplicate names both files, and the first keeps running
        "zz-dup.json: field 'name': is 'git-bisect-regression', already the name of ",
        "git-bisect-regression.json (two prompt files with one name",
        "nul.json: field 'prompt': contains a NUL character (\\u0000) at position 6",
        "skill-list.json: field 'skill': is a JSON list, not a string. Fix: write one path",
        "loop.json: field 'skill_url': leads to loop/SKILL.md, which cannot be resolved",
    ):
        assert needle in out, needle
    # The name that differs from its file name is a warning, and the prompt still runs.
    assert "dash.json: field 'name' is 'dash-prompt' but the file is dash.json" in out
    week_dir = week.root / "week"
    # No run escaped the week directory or nested inside it.
    assert not list(week.root.parent.glob("escaped*")) and not (week_dir / "evil").exists()
    assert {p.parent for p in week.root.rglob("run.json")} == {
        week_dir / run_id for run_id in week.manifest()}
    assert sorted({r["prompt"] for r in week.manifest().values()}) == [
        "big", "dash-prompt", "git-bisect-regression", "leaky"]


def test_prompt_goes_in_whole_on_stdin(week: Week) -> None:
    status = {(r["prompt"], r["condition"]): r["run_status"] for r in week.manifest().values()}
    for prompt in ("dash-prompt", "big"):
        assert status[(prompt, "no-skill")] == status[(prompt, "with-skill")] == "ok", status
    sent = [user_prompt(body) for body in week.api.bodies("agent")]
    assert any(p.startswith("--help me: which git bisect") for p in sent)
    assert any(len(p) > BIG and p.endswith("with git bisect?") for p in sent)


def test_symlink_leaving_the_family_is_an_invalid_install(week: Week) -> None:
    by_cond = {r["condition"]: r for r in week.manifest().values() if r["prompt"] == "leaky"}
    with_skill = by_cond["with-skill"]
    assert with_skill["run_status"] == "invalid"
    assert "symlink leaky/notes.md -> ../../outside.txt leaves the skill family" in (
        with_skill["run_error"])
    assert by_cond["no-skill"]["run_status"] == "ok"
    assert "run excluded (invalid): invalid install: symlink leaky/notes.md" in week.out
    # Nothing outside the skills root reached the agent or any file of the week.
    assert not any(OUTSIDE in json.dumps(body) for body in week.api.bodies("agent"))
    assert not any(OUTSIDE in p.read_text(errors="replace")
                   for p in (week.root / "week").rglob("*") if p.is_file())


def test_progress_lines_count_up_to_the_manifest(week: Week) -> None:
    lines = [ln for ln in week.result.stdout.splitlines() if ln.startswith("skill-lift: runs")]
    matches = [re.match(r"skill-lift: runs (\d+)/(\d+)", ln) for ln in lines]
    assert all(matches), lines
    counts = [tuple(int(x) for x in m.groups()) for m in matches if m]
    manifest = week.manifest()
    assert counts and {total for _, total in counts} == {len(manifest)} == {8}
    done = [d for d, _ in counts]
    assert done == sorted(done) and done[-1] == len(manifest)
    final = lines[-1]
    card = json.loads((week.root / "week" / "scorecard.json").read_text())
    graded = card["coverage"]["graded_runs"]
    assert graded == 7  # the leaky with-skill run is an invalid install
    assert f"· graded {graded} ·" in final and "· errored 0 ·" in final
    assert "· excluded 1 ·" in final and "done in" in final
    spent_match = re.search(r"spent \$([\d.]+)", final)
    assert spent_match, final
    spent = float(spent_match.group(1))
    total = sum(float(r["total_cost_usd"] or 0) for r in manifest.values())
    total += sum(float((week.root / "week" / rid / "judge_cost.txt").read_text())
                 for rid in manifest if (week.root / "week" / rid / "judge_cost.txt").exists())
    assert spent == pytest.approx(total, abs=0.01)
    # -q silences it (the rerun below reads the ledger only, so it is quick)
    quiet = run_pytest(week.root, week.api, "-p", "no:xdist", "-q")
    assert "skill-lift: runs" not in quiet.stdout


def test_damaged_ledger_files_are_redone_not_trusted(week: Week) -> None:
    week_dir = week.root / "week"
    manifest = week.manifest()
    ids = {(r["prompt"], r["condition"]): rid for rid, r in manifest.items()}
    broken_json = ids[("git-bisect-regression", "no-skill")]
    bad_rep = ids[("dash-prompt", "no-skill")]
    bad_rows = ids[("big", "no-skill")]
    (week_dir / broken_json / "run.json").write_text("{not json")
    record = json.loads((week_dir / bad_rep / "run.json").read_text())
    (week_dir / bad_rep / "run.json").write_text(json.dumps({**record, "rep": "abc"}))
    grades = json.loads((week_dir / bad_rows / "grades.json").read_text())
    (week_dir / bad_rows / "grades.json").write_text(json.dumps({**grades, "rows": "oops"}))
    agent, judge = week.api.count("agent"), week.api.count("judge")

    result = run_pytest(week.root, week.api, "-p", "no:xdist")
    out = result.stdout + result.stderr
    assert "Traceback" not in out, out
    for run_id, problem in ((broken_json, "not valid JSON"), (bad_rep, "'rep' is 'abc'"),
                            (bad_rows, "'rows' is a JSON string, not a list of score rows")):
        assert f"{run_id}/" in out and problem in out, (run_id, problem)
    # Two runs regenerated (and so regraded), one regraded: three judge calls, no more.
    assert week.api.count("judge") - judge == 3
    assert week.api.count("agent") > agent
    after = {r["run_id"]: r for r in rows(week_dir / "manifest.csv")}
    assert set(after) == set(manifest) and after[bad_rep]["rep"] == "1"
    scored = {r["run_id"] for r in rows(week_dir / "scores.csv")}
    assert {broken_json, bad_rep, bad_rows} <= scored
