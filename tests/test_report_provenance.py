"""Provenance flags a docker image whose CLI is not the pinned version (issue 4)."""

from __future__ import annotations

import csv
from pathlib import Path

from pytest_skilllift.model import PINNED_CLI_VERSION
from pytest_skilllift.report.summarize import summarize_week
from pytest_skilllift.week.columns import MANIFEST_COLUMNS, MANIFEST_EXTRA_COLUMNS

from .test_week_io import write_week


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


def test_a_week_of_several_agents_pins_each_agents_cli_on_its_own(tmp_path: Path) -> None:
    """Labels of different agents report their own CLI versions and model names (the agent
    prefix is not part of what the stream reports): neither is a mismatch; an agent CLI other
    than the pinned one is."""
    columns = list(MANIFEST_COLUMNS + MANIFEST_EXTRA_COLUMNS)
    runs = [("sonnet", "claude-sonnet-4-5", "claude-sonnet-4-5", PINNED_CLI_VERSION),
            ("gpt", "codex:gpt-5.5", "gpt-5.5", "0.169.0"),
            ("flash", "gemini-cli:gemini-2.5-flash", "gemini-2.5-flash", "0.60.0")]
    with (tmp_path / "manifest.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, columns)
        writer.writeheader()
        for label, model_id, snapshot, version in runs:
            for cond in ("no-skill", "with-skill"):
                writer.writerow({"prompt": "p", "skill_family": "f", "skill_leaf": "f/SKILL.md",
                                 "model": label, "condition": cond, "rep": 1,
                                 "run_id": f"p-{label}-{cond}", "exit_code": 0,
                                 "cli_version": version, "model_id": model_id,
                                 "model_snapshot": snapshot,
                                 "skill_available": int(cond == "with-skill"),
                                 "skill_activation": "none", "run_status": "ok",
                                 "runner": "local", "signals_ok": 1, "budget_hit": 0})
    (tmp_path / "scores.csv").write_text(",".join(
        ["prompt", "skill", "model", "condition", "rep", "item_type", "item_text", "verdict",
         "credit", "contribution", "contested", "evidence_quote"]) + "\n")
    s = summarize_week(tmp_path, write=False)
    prov = s.data["provenance"]
    assert prov["agents"] == {"claude-code": ["sonnet"], "codex": ["gpt"],
                              "gemini-cli": ["flash"]}
    assert prov["mismatches"] == ["gemini-cli CLI 0.60.0 is not the pinned 0.61.0"]
    line = next(ln for ln in s.markdown.splitlines() if ln.startswith("- agents: "))
    assert "claude-code (sonnet) CLI `2.1.332`" in line and "codex (gpt) CLI `0.169.0`" in line
    assert "- ⚠ gemini-cli CLI 0.60.0 is not the pinned 0.61.0" in s.markdown
    assert "more than one CLI version present" not in s.markdown
