"""The SkillsBench trajectory audit in the scorecard: invocation status, misuse, skill impact
and flags."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from pytest_skilllift.report.summarize import summarize_week
from pytest_skilllift.trace.audit import HELPED, HURT, NO_OP, impact_flags, impact_outcome
from pytest_skilllift.week.columns import (
    MANIFEST_COLUMNS,
    MANIFEST_EXTRA_COLUMNS,
    SCORES_COLUMNS,
    SCORES_EXTRA_COLUMNS,
)


@pytest.mark.parametrize(("delta", "outcome"), [
    (0.10, HELPED), (0.0999, NO_OP), (-0.0999, NO_OP), (-0.10, HURT), (1.0, HELPED)])
def test_impact_thresholds_are_10pp(delta: float, outcome: str) -> None:
    assert impact_outcome(delta) == outcome


def test_flags_name_the_cross_model_patterns() -> None:
    flags = impact_flags(
        {"a": {"sonnet": -0.25, "haiku": -0.30}, "b": {"sonnet": 0.05, "haiku": 0.0},
         "c": {"sonnet": -0.25, "haiku": 0.5}},
        {"d": {"VERIFIED": 0, "PARTIAL": 0, "NOT_INVOKED": 4},
         "e": {"VERIFIED": 1, "PARTIAL": 0, "NOT_INVOKED": 3}})
    assert flags == [
        "a: skill HURT on every model (Δ ≤ −0.20 each)",
        "b: NO-OP on every model — skill may be redundant for these models",
        "d: NOT_INVOKED in all 4 with-skill runs — skill never discovered (a description / "
        "placement issue)",
    ]


def write_week(root: Path) -> None:
    """Two prompts, one model, one rep: p1 helped (0 → 1), p2 hurt (1 → 0), never invoked."""
    runs, scores = [], []
    for prompt, no, with_, status, top in (("p1", "missing", "met", "VERIFIED", 1),
                                           ("p2", "met", "missing", "NOT_INVOKED", 0)):
        for cond, verdict in (("no-skill", no), ("with-skill", with_)):
            run_id = f"{prompt}-haiku-{cond}-r1-w"
            runs.append({"prompt": prompt, "skill_family": prompt, "skill_leaf": "x",
                         "model": "haiku", "condition": cond, "rep": 1, "run_id": run_id,
                         "exit_code": 0, "skill_available": int(cond == "with-skill"),
                         "skill_activation": "skill_tool" if top else "none",
                         "run_status": "ok", "signals_ok": 1, "budget_hit": 0,
                         "invocation_status": status if cond == "with-skill" else "",
                         "top_level_only": top if cond == "with-skill" else ""})
            scores.append({"prompt": prompt, "skill": prompt, "model": "haiku",
                           "condition": cond, "rep": 1, "item_type": "must",
                           "item_text": "x", "verdict": verdict,
                           "credit": 1.0 if verdict == "met" else 0.0,
                           "contribution": 1.0 if verdict == "met" else 0.0,
                           "run_id": run_id, "item_index": 1})
    for name, cols, rows in (("manifest.csv", MANIFEST_COLUMNS + MANIFEST_EXTRA_COLUMNS, runs),
                             ("scores.csv", SCORES_COLUMNS + SCORES_EXTRA_COLUMNS, scores)):
        with (root / name).open("w", newline="") as fh:
            writer = csv.DictWriter(fh, list(cols))
            writer.writeheader()
            writer.writerows(rows)


def test_scorecard_reports_invocation_misuse_and_impact(tmp_path: Path) -> None:
    write_week(tmp_path)
    summary = summarize_week(tmp_path, write=False)
    audit = summary.data["audit"]
    assert audit["invocation"] == {"haiku": {"VERIFIED": 1, "PARTIAL": 0, "NOT_INVOKED": 1}}
    assert audit["top_level_only_runs"] == 1 and audit["audited_runs"] == 2
    assert audit["impact_counts"]["haiku"] == {"helped": 1, "hurt": 1, "no-op": 0,
                                               "within rep noise": 0, "saturated": 0}
    assert "p2: NOT_INVOKED in all 1 with-skill runs" in " ".join(audit["flags"])
    md = summary.markdown
    assert "## Trajectory audit — invocation, misuse, skill impact" in md
    assert "| haiku | 1        | 0       | 1           | 2               |" in md
    assert "one rep per arm" in md  # the single-trial caveat
    assert "| p2     | haiku | -1.000    |" in md  # the hurt prompt is named
