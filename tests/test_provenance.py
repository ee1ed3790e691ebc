"""Provenance flags a docker image whose CLI is not the pinned version (issue 4)."""

from __future__ import annotations

import csv
from pathlib import Path

from pytest_skilllift.report.summarize import summarize_week
from pytest_skilllift.runners.image import PINNED_CLI_VERSION
from pytest_skilllift.week.columns import MANIFEST_COLUMNS, MANIFEST_EXTRA_COLUMNS


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
