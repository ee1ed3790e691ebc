"""Provenance flags a docker image whose CLI is not the pinned version (issue 4)."""

from __future__ import annotations

import csv
from pathlib import Path

from pytest_skilllift.report.summarize import summarize_week
from pytest_skilllift.runners.image import PINNED_CLI_VERSION
from pytest_skilllift.week.columns import MANIFEST_COLUMNS, MANIFEST_EXTRA_COLUMNS

from .test_weekio import write_week


def test_image_cli_other_than_the_pinned_one_is_flagged(tmp_path: Path) -> None:
    """Issue 4: the image's CLI version is checked against the pinned one in provenance."""
    columns = list(MANIFEST_COLUMNS + MANIFEST_EXTRA_COLUMNS)
    with (tmp_path / "manifest.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, columns)
        writer.writeheader()
        for cond, version in (("no-skill", PINNED_CLI_VERSION), ("with-skill", "9.9.9")):
            writer.writerow({"prompt": "p", "skill_family": "f", "skill_leaf": "f/SKILL.md",
                             "model": "haiku", "condition": cond, "rep": 1,
                             "run_id": f"p-{cond}", "exit_code": 0, "cli_version": version,
                             "skill_available": int(cond == "with-skill"),
                             "skill_activation": "none", "run_status": "ok",
                             "runner": "docker", "signals_ok": 1, "budget_hit": 0})
    (tmp_path / "scores.csv").write_text(",".join(
        ["prompt", "skill", "model", "condition", "rep", "item_type", "item_text", "verdict",
         "credit", "contribution", "contested", "evidence_quote"]) + "\n")
    mismatches = summarize_week(tmp_path, write=False).data["provenance"]["mismatches"]
    assert f"docker image CLI 9.9.9 is not the pinned {PINNED_CLI_VERSION}" in mismatches
    assert not any(PINNED_CLI_VERSION + " is not" in m for m in mismatches)


def test_one_tree_hash_per_family_is_normal_two_for_one_family_is_flagged(
        tmp_path: Path) -> None:
    def per_family(run: dict[str, str]) -> None:  # p-a, p-b, p-c are three families
        run["skills_sha"] = f"tree-{run['skill_family']}"

    s = summarize_week(write_week(tmp_path / "a", run_override=per_family), write=False)
    prov = s.data["provenance"]
    assert len(prov["skills_commits"]) == 3 and prov["mismatches"] == []
    assert prov["skills_commits_by_family"]["p-b"] == ["tree-p-b"]
    assert "more than one skills commit" not in s.markdown

    def changed(run: dict[str, str]) -> None:  # p-b's skill was edited between its reps
        per_family(run)
        if run["prompt"] == "p-b" and run["rep"] == "2":
            run["skills_sha"] = "tree-p-b-v2"

    s = summarize_week(write_week(tmp_path / "b", run_override=changed), write=False)
    assert s.data["provenance"]["mismatches"] == [
        "skill family p-b: more than one skills commit (tree-p-b, tree-p-b-v2)"]
    assert ("- ⚠ skill family p-b has more than one skills commit (`tree-p-b`, `tree-p-b-v2`)"
            " — it changed mid-week.") in s.markdown
