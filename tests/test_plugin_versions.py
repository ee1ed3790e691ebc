"""The with-skill@REF arm end to end: ``pytest --skill-lift`` with the real bundled CLI
against the stand-in, the demo's skills as a git repository with two revisions (the earlier
one is the demo project's ``skills-v1``: git-bisect without its ``bisect run`` / ``bisect
skip`` lines).

The scripted agent answers from the skill's lines, so the known effect is: the current
git-bisect skill meets more must items than its earlier revision (improved), and the
python-packaging family — the same files in both revisions — gives the same answer (unchanged).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.config import DEMO_PROJECT
from pytest_skilllift.runners.claude import bundled_claude
from pytest_skilllift.testing.demo import DEMO_SKILLS_BEFORE, write_skills_history
from tests.test_plugin_e2e import make_project, rows, run

pytestmark = [
    pytest.mark.cli,
    pytest.mark.skipif(bundled_claude() is None, reason="claude-agent-sdk (bundled CLI) missing"),
    pytest.mark.skipif(shutil.which("git") is None, reason="git missing"),
]

BEFORE, NOW = DEMO_PROJECT / DEMO_SKILLS_BEFORE, DEMO_PROJECT / "skills"
ARMS = "--skill-lift-conditions=no-skill,with-skill,with-skill@HEAD~1"


def versioned_project(pytester: pytest.Pytester) -> tuple[Path, str]:
    """The e2e project whose skills directory is a git repository: HEAD~1 = skills-v1."""
    root = make_project(pytester)
    shutil.rmtree(root / "skills")
    before, _ = write_skills_history(root / "skills", BEFORE, NOW)
    return root, before


def card_of(week: Path) -> dict[str, Any]:
    card = json.loads((week / "scorecard.json").read_text())
    assert isinstance(card, dict)
    return card


@pytest.mark.parametrize("workers", [0, 2], ids=["serial", "xdist-2"])
def test_version_arm_end_to_end(pytester: pytest.Pytester, standin: Any, workers: int) -> None:
    root, before = versioned_project(pytester)
    args = ("-n", str(workers)) if workers else ("-p", "no:xdist")
    result = run(pytester, standin, *args, "-v", ARMS,
                 "--skill-lift-gate=version_lift_ci_low>-0.05:soft",
                 "--skill-lift-gate=haiku.version_lift>0")
    out = result.stdout.str()
    assert result.ret == 0, out
    assert "::haiku::with-skill@HEAD~1::r1::must-1 " in out
    assert "with-skill − with-skill@HEAD~1 haiku: +0.125 ± " in out
    assert "0 improved, 0 regressed, n 2" in out  # one rep: a move is within rep noise
    week = root / "week"
    manifest = rows(week / "manifest.csv")
    assert sorted({r["condition"] for r in manifest}) == [
        "no-skill", "with-skill", "with-skill@HEAD~1"]
    ref_runs = [r for r in manifest if r["condition"] == "with-skill@HEAD~1"]
    assert len(ref_runs) == 2 and all(r["skills_sha"] == before[:7] for r in ref_runs)
    assert all(r["skill_available"] == "1" and r["run_status"] == "ok" for r in ref_runs)
    # What the earlier revision installed: the old git-bisect SKILL.md, nothing else.
    old = (week / ".revisions" / before / "git-bisect" / "SKILL.md").read_text()
    assert "git bisect run" not in old and "git bisect start" in old
    # Judged blind, once per run (6 runs).
    assert standin.count("judge") == 6
    record = json.loads((week / "week.json").read_text())["identity"]
    assert record["revision"]["commit"] == before and record["revision"]["kind"] == "git"
    assert len(record["revision"]["tree"]) == 40
    assert set(record["skills"]) >= {"git-bisect@HEAD~1", "python-packaging@HEAD~1"}
    assert record["skills"]["python-packaging@HEAD~1"] == record["skills"]["python-packaging"]
    assert record["skills"]["git-bisect@HEAD~1"] != record["skills"]["git-bisect"]
    card = card_of(week)
    v = card["versions"]
    assert v["arm"] == "with-skill@HEAD~1" and v["revision"]["commit"] == before
    m = v["models"]["haiku"]
    assert m["n_prompts"] == 2 and m["version_lift"] > 0
    # compare's rule: with one rep a prompt's own noise is unknown, so git-bisect's move is
    # "within rep noise", never "improved"; python-packaging's answer did not move at all
    assert m["prompts"] == {"improved": 0, "regressed": 0, "within rep noise": 1,
                            "unchanged": 1, "unscored": 0}
    changes = {r["prompt"]: r["change"] for r in v["prompts"]}
    assert changes == {"git-bisect-regression": "within rep noise",
                       "python-packaging-pyproject": "unchanged"}
    moved = next(r for r in v["prompts"] if r["prompt"] == "git-bisect-regression")
    assert moved["current"] > moved["ref"]
    assert m["lift_with"] is not None and m["lift_ref"] is not None
    assert m["lift_with"] - m["lift_ref"] == pytest.approx(m["version_lift"])
    assert m["sign_test"]["verdict"] == "underpowered"  # 1 voting prompt
    assert card["provenance"]["skills_revision"]["commit"] == before
    # No false "changed mid-week" alarm: the earlier revision is keyed by its REF.
    assert not card["provenance"]["mismatches"]
    assert {c["condition"] for c in card["cells"]} == {
        "no-skill", "with-skill", "with-skill@HEAD~1"}
    md = (week / "scorecard.md").read_text()
    assert "## Version comparison (with-skill − with-skill@HEAD~1)" in md
    assert f"with-skill@HEAD~1: commit `{before}`" in md
    gate_lines = [ln for ln in out.splitlines() if ln.strip().startswith(
        ("haiku.version_lift>0", "version_lift_ci_low>-0.05:soft"))]
    assert len(gate_lines) == 2, out
    hard = next(ln for ln in gate_lines if ln.strip().startswith("haiku.version_lift>0"))
    assert "PASS" in hard and f"{m['version_lift']:.3f}" in hard
    # Two prompts: t(1) = 12.7 makes the interval wide; the soft gate fails, reported only.
    soft = next(ln for ln in gate_lines if ln.strip().startswith("version_lift_ci_low"))
    assert "FAIL (soft)" in soft and f"{m['ci_low']:.3f}" in soft


def test_version_arm_rerun_is_free_and_a_moved_ref_is_refused(pytester: pytest.Pytester,
                                                              standin: Any) -> None:
    root, _ = versioned_project(pytester)
    assert run(pytester, standin, "-p", "no:xdist", ARMS).ret == 0
    calls = standin.count("judge")
    again = run(pytester, standin, "-p", "no:xdist", ARMS)
    assert again.ret == 0 and standin.count("judge") == calls  # resumed: nothing redone
    # A new commit moves HEAD~1: the week's with-skill@HEAD~1 runs were made with other files.
    write_skills_history(root / "skills-next", NOW, BEFORE)
    shutil.rmtree(root / "skills")
    shutil.move(root / "skills-next", root / "skills")
    refused = run(pytester, standin, "-p", "no:xdist", ARMS)
    assert refused.ret != 0
    assert "at with-skill@HEAD~1: its files changed" in refused.stdout.str() + \
        refused.stderr.str()


def test_directory_ref_and_unknown_ref(pytester: pytest.Pytester, standin: Any) -> None:
    root = make_project(pytester, ("git-bisect-regression.json",))
    shutil.copytree(BEFORE, root / "skills-v1")
    result = run(pytester, standin, "-p", "no:xdist", "-v",
                 "--skill-lift-conditions=with-skill,with-skill@skills-v1")
    assert result.ret == 0, result.stdout.str()
    card = card_of(root / "week")
    assert card["versions"]["revision"]["kind"] == "directory"
    assert card["versions"]["models"]["haiku"]["version_lift"] > 0
    # No no-skill arm: a version comparison alone, not reported as a broken week.
    assert not any("no-skill rows" in p for p in card["problems"])
    bad = run(pytester, standin, "-p", "no:xdist",
              "--skill-lift-conditions=no-skill,with-skill,with-skill@no-such-rev")
    assert bad.ret == 4
    err = bad.stderr.str()
    assert "with-skill@no-such-rev" in err and "neither a revision" in err


# -- shards, merge and batch judging give the one session's numbers ---------------------------


def test_shards_merge_and_batch_judging_give_the_one_session_numbers(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_skilllift.cli.main import main as skilllift
    from pytest_skilllift.testing.agent_script import skill_agent
    from pytest_skilllift.testing.batches import BatchScript
    from pytest_skilllift.testing.judge_script import keyword_judge
    from pytest_skilllift.testing.server import StandIn
    from tests.test_plugin_shards import MANIFEST, SCORES, pytest_run
    from tests.test_plugin_shards import make_project as shard_project
    from tests.test_plugin_shards import rows as sorted_rows

    root = shard_project(tmp_path / "project")
    shutil.rmtree(root / "skills")
    before, _ = write_skills_history(root / "skills", BEFORE, NOW)
    wk = "20260808"
    with StandIn(agent=skill_agent, judge=keyword_judge, batch=BatchScript()) as api:
        whole = pytest_run(root, api, "-p", "no:xdist", ARMS, f"--skill-lift-out=whole/{wk}")
        assert whole.returncode == 0, whole.stdout + whole.stderr
        for index in (1, 2):
            res = pytest_run(root, api, "-p", "no:xdist", ARMS, f"--skill-lift-shard={index}/2",
                             f"--skill-lift-out=shards/{index}/{wk}")
            assert res.returncode == 0, res.stdout + res.stderr
        def direct() -> int:
            return sum(1 for r in api.requests if r.kind == "judge" and r.path == "/v1/messages")

        judged_directly = direct()
        batch = pytest_run(root, api, "-p", "no:xdist", ARMS, "--skill-lift-judge-batch",
                           "--skill-lift-judge-batch-poll=0.05", f"--skill-lift-out=batch/{wk}")
        assert batch.returncode == 0, batch.stdout + batch.stderr
        assert len(api.batches.created) == 1
        assert direct() == judged_directly  # the batch week: no direct judge call
    # each shard ran its share only, the REF arm among them
    shares = [{p.parent.name for p in (root / "shards" / str(i) / wk).glob("*/run.json")}
              for i in (1, 2)]
    assert len(shares[0] | shares[1]) == 6 and not shares[0] & shares[1]
    merged = root / "merged" / wk
    code = skilllift(["merge", str(merged), str(root / "shards/1" / wk),
                      str(root / "shards/2" / wk), "--no-plots"])
    assert code == 0, capsys.readouterr().out
    ref = root / "whole" / wk
    ref_card = card_of(ref)
    assert ref_card["versions"]["models"]["haiku"]["version_lift"] > 0
    for other in (merged, root / "batch" / wk):
        assert sorted_rows(other / "manifest.csv", *MANIFEST) == sorted_rows(
            ref / "manifest.csv", *MANIFEST)
        assert sorted_rows(other / "scores.csv", *SCORES) == sorted_rows(
            ref / "scores.csv", *SCORES)
        card = card_of(other)
        # the comparison's every number but the dollar deltas, plain and paired (a run's cost
        # is the CLI's token count of its own run, which carries the run's temporary paths)
        got, want = (dict(c["versions"]["models"]["haiku"]) for c in (card, ref_card))
        for key in ("cost_delta", "cost_delta_paired"):
            got.pop(key), want.pop(key)
        assert got == want, other
        assert card["versions"]["prompts"] == ref_card["versions"]["prompts"]
        assert card["versions"]["revision"] == ref_card["versions"]["revision"]
        assert card["versions"]["revision"]["commit"] == before
        assert card["pass_k"] == ref_card["pass_k"]


def test_baseline_from_reuses_the_ref_runs_of_a_family_measured_then(
        pytester: pytest.Pytester, standin: Any) -> None:
    root, before = versioned_project(pytester)
    # Last week measured the earlier version as its with-skill arm (a plain directory then).
    shutil.copytree(BEFORE, root / "skills-then")
    first = run(pytester, standin, "-p", "no:xdist", "-o", "skill_lift_skills=skills-then",
                "--skill-lift-out=week1")
    assert first.ret == 0, first.stdout.str()
    judged = standin.count("judge")
    assert judged == 4
    result = run(pytester, standin, "-p", "no:xdist", ARMS, "--skill-lift-out=week2",
                 "--skill-lift-baseline-from=week1")
    out = result.stdout.str()
    assert result.ret == 0, out
    assert "with-skill@HEAD~1: 2 of 2 pairs reuse its with-skill runs" in out
    # only the current version's two runs were generated and judged
    assert standin.count("judge") == judged + 2
    manifest = {r["run_id"]: r for r in rows(root / "week2" / "manifest.csv")}
    reused = sorted(r["condition"] for r in manifest.values() if r["baseline_from"] == "week1")
    assert reused == ["no-skill", "no-skill", "with-skill@HEAD~1", "with-skill@HEAD~1"]
    card = card_of(root / "week2")
    assert card["versions"]["models"]["haiku"]["prompts"]["within rep noise"] == 1
    assert card["versions"]["revision"]["commit"] == before
