"""The arms beyond the lift's two and the ``invoked`` item, through ``pytest --skill-lift`` with
the real bundled CLI against the stand-in (the project of ``test_plugin_e2e``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.config import DEMO_PROJECT
from pytest_skilllift.model import PromptSpec, RubricItem, RunSpec
from pytest_skilllift.run.arms import arm_prompt
from pytest_skilllift.run.triggers import skill_families
from pytest_skilllift.runners.claude import bundled_claude
from pytest_skilllift.runners.local import LocalRunner
from tests.test_plugin_e2e import make_project, rows, run


def init_skills(run_dir: Path) -> set[str]:
    """The skills the CLI registered at startup (the init event of the transcript)."""
    for line in (run_dir / "stdout.txt").read_text().splitlines():
        event = json.loads(line)
        if event.get("subtype") == "init":
            return {str(s) for s in event.get("skills") or []}
    raise AssertionError(f"no init event in {run_dir}")


# -- the install, without the CLI -------------------------------------------------------------


def test_with_all_installs_every_family_and_nothing_else(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    for fam in ("alpha", "beta", "gamma"):
        (root / fam / "references").mkdir(parents=True)
        (root / fam / "SKILL.md").write_text(f"---\nname: {fam}\ndescription: d\n---\n")
        (root / fam / "references" / "more.md").write_text("x")
    (root / "not-a-skill").mkdir()  # no SKILL.md: not a family
    (root / "README.md").write_text("about the skills")
    assert skill_families(root) == ("alpha", "beta", "gamma")
    spec = PromptSpec(path=tmp_path / "p.json", name="p", product_area="", prompt="q",
                      rubric=(RubricItem("must", "m", 1),), skill_path="beta/SKILL.md")
    cfg: Any = type("Cfg", (), {"skills_root": root, "allow_unsafe": False,
                              "max_family_bytes": None, "timeout_s": 60.0})()
    installed = {}
    for cond in ("no-skill", "with-skill", "with-all", "no-skill-b"):
        run_spec = RunSpec(prompt=arm_prompt(spec, cond, skill_families(root)),
                           model_label="m", model_id="m", condition=cond, rep=1, run_id=cond)
        home = tmp_path / cond
        home.mkdir()
        assert LocalRunner().install_skill(run_spec, cfg, home) is None
        skills = home / ".claude" / "skills"
        installed[cond] = sorted(p.name for p in skills.iterdir()) if skills.is_dir() else []
        if cond == "with-all":
            assert (skills / "gamma" / "references" / "more.md").is_file()  # whole families
    assert installed == {"no-skill": [], "with-skill": ["beta"],
                         "with-all": ["alpha", "beta", "gamma"], "no-skill-b": []}


# -- through pytest ---------------------------------------------------------------------------

cli = pytest.mark.skipif(bundled_claude() is None, reason="claude-agent-sdk (bundled CLI) missing")


@cli
@pytest.mark.cli
def test_with_all_arm_end_to_end(pytester: pytest.Pytester, standin: Any) -> None:
    root = make_project(pytester, ("git-bisect-regression.json",))
    result = run(pytester, standin, "-p", "no:xdist", "-v",
                 "--skill-lift-conditions=no-skill,with-skill,with-all")
    assert result.ret == 0, result.stdout.str()
    out = result.stdout.str()
    assert "::haiku::with-all::r1::must-1 PASSED" in out
    assert "::with-skill::r1::invoked PASSED" in out and "with-all::r1::invoked" not in out
    manifest = {r["condition"]: r for r in rows(root / "week" / "manifest.csv")}
    assert set(manifest) == {"no-skill", "with-skill", "with-all"}
    families = {p.name for p in (DEMO_PROJECT / "skills").iterdir() if (p / "SKILL.md").is_file()}
    week = root / "week"
    assert families <= init_skills(week / manifest["with-all"]["run_id"])
    assert not (init_skills(week / manifest["with-skill"]["run_id"]) & (families - {
        "git-bisect"}))  # the with-skill arm: its own family only
    assert manifest["with-all"]["skill_available"] == "1"
    assert manifest["with-all"]["invocation_status"] == "VERIFIED"
    card = json.loads((week / "scorecard.json").read_text())
    assert card["with_all"]["models"]["haiku"]["n_prompts"] == 1
    assert {c["condition"] for c in card["cells"]} == {"no-skill", "with-skill", "with-all"}
    assert standin.count("judge") == 3
    assert "with-all − no-skill haiku: " in out


@cli
@pytest.mark.cli
@pytest.mark.parametrize("workers", [0, 2], ids=["serial", "xdist-2"])
def test_aa_week_runs_two_no_skill_arms(pytester: pytest.Pytester, standin: Any,
                                        workers: int) -> None:
    root = make_project(pytester)
    args = ("-n", str(workers)) if workers else ("-p", "no:xdist")
    result = run(pytester, standin, *args, "--skill-lift-aa", "-rA")
    assert result.ret == 0, result.stdout.str()
    manifest = rows(root / "week" / "manifest.csv")
    assert sorted({r["condition"] for r in manifest}) == ["no-skill", "no-skill-b"]
    assert len(manifest) == 4
    families = {p.name for p in (DEMO_PROJECT / "skills").iterdir() if (p / "SKILL.md").is_file()}
    for r in manifest:  # nothing is installed in either arm (the CLI's built-ins aside)
        assert r["skill_available"] == "0" and r["run_id"].split("-r1-")[0].endswith(
            r["condition"])
        assert not init_skills(root / "week" / r["run_id"]) & families
    assert "invoked" not in result.stdout.str()
    card = json.loads((root / "week" / "scorecard.json").read_text())
    assert card["aa"]["models"]["haiku"]["n_prompts"] == 2
    # No with-skill arm: no lift, and not reported as a broken week.
    assert card["models"]["haiku"]["must_lift"] is None
    assert not any("with-skill rows" in p for p in card["problems"])
    assert "A/A (no-skill-b − no-skill) haiku: " in result.stdout.str()
    md = (root / "week" / "scorecard.md").read_text()
    assert "### A/A week: measured false-lift rate (no-skill-b − no-skill)" in md


@cli
@pytest.mark.cli
@pytest.mark.parametrize("workers", [0, 2], ids=["serial", "xdist-2"])
def test_invoked_item_passes_only_for_verified(pytester: pytest.Pytester, workers: int) -> None:
    from pytest_skilllift.testing.agent_script import make_agent
    from pytest_skilllift.testing.judge_script import keyword_judge
    from pytest_skilllift.testing.server import StandIn

    # This agent loads the listed skill but never opens a linked sub-file: sqlite-performance
    # links one (PARTIAL), git-bisect links none (VERIFIED).
    with StandIn(agent=make_agent("skill", follow_leaf=False), judge=keyword_judge) as server:
        root = make_project(pytester, ("git-bisect-regression.json",
                                       "sqlite-bulk-insert.json"))
        args = ("-n", str(workers)) if workers else ("-p", "no:xdist")
        result = run(pytester, server, *args, "-k", "invoked", "-rA")
    out = result.stdout.str()
    assert result.ret == 0, out  # a finding, not a broken run
    outcomes = result.parseoutcomes()
    # A finding has its own status: counted as "uninvoked", never as failed.
    assert (outcomes.get("passed"), outcomes.get("uninvoked"), outcomes.get("failed")) == (
        1, 1, None)
    assert "PASSED evals/test-prompts/git-bisect-regression.json::haiku::with-skill::r1::invoked" \
        in out
    # -rA: one line per finding with its reason, no traceback.
    assert ("UNINVOKED evals/test-prompts/sqlite-bulk-insert.json::haiku::with-skill::r1::invoked"
            " - sqlite-performance PARTIAL (not VERIFIED) on haiku") in out
    assert "linked sub-files never opened" in out
    assert "Traceback" not in out and "InvocationFinding" not in out
    # One findings line: the count, and where such findings are listed (once, not twice).
    (line,) = [ln for ln in out.splitlines() if ln.startswith("findings: ")]
    assert line.startswith("findings: 1 uninvoked — ") and "-k invoked" in line, line
    assert "invocation findings" not in out
    # Only the with-skill runs were needed.
    assert sorted(r["condition"] for r in rows(root / "week" / "manifest.csv")) == [
        "with-skill", "with-skill"]


@cli
@pytest.mark.cli
def test_collect_only_lists_the_new_ids(pytester: pytest.Pytester, standin: Any) -> None:
    make_project(pytester, ("git-bisect-regression.json",))
    result = run(pytester, standin, "-p", "no:xdist", "--collect-only", "-q",
                 "--skill-lift-conditions=no-skill,with-skill,with-all,no-skill-b")
    ids = [ln for ln in result.stdout.lines if "::" in ln]
    conditions = {i.split("::")[2] for i in ids}
    assert conditions == {"no-skill", "with-skill", "with-all", "no-skill-b"}
    assert [i for i in ids if i.endswith("::invoked")] == [
        "evals/test-prompts/git-bisect-regression.json::haiku::with-skill::r1::invoked"]
    assert standin.count() == 0


def test_checks_see_the_same_arms_as_the_rubric_items(tmp_path: Path) -> None:
    """``skill_lift_run``'s matrix has the session's arms, with-all installing every family,
    and a check's id maps back to its run whatever the arm."""
    import dataclasses

    from pytest_skilllift.run.matrix import load_matrix, narrow, run_scope
    from tests.test_config import build

    shutil.copytree(DEMO_PROJECT / "skills", tmp_path / "skills")
    (tmp_path / "evals" / "test-prompts").mkdir(parents=True)
    shutil.copy(DEMO_PROJECT / "evals" / "test-prompts" / "git-bisect-regression.json",
                tmp_path / "evals" / "test-prompts")
    settings = dataclasses.replace(
        build(conditions="no-skill,with-skill,with-all,no-skill-b", reps=1, models="haiku"),
        rootdir=tmp_path, prompts_dir=tmp_path / "evals" / "test-prompts",
        skills_root=tmp_path / "skills")
    runs = {r.condition: r for r in load_matrix(settings).runs}
    assert list(runs) == ["no-skill", "with-skill", "with-all", "no-skill-b"]
    assert runs["with-all"].prompt.installed_families == (
        "git-bisect", "python-packaging", "sqlite-performance")
    assert runs["with-skill"].prompt.installed_families == ("git-bisect",)
    assert [r.condition for r in narrow(runs.values(), {"conditions": "with-*"})] == [
        "with-skill", "with-all"]
    assert run_scope("t.py::test_x[git-bisect-regression::haiku::no-skill-b::r1]", {},
                     ["git-bisect-regression"]) == (
        "run:git-bisect-regression::haiku::no-skill-b::r1")
