"""The judge's part of the scorecard: rejected quotes, the contested backlog across weeks,
calibration, provenance, and the history's contested-items column."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from pytest_skilllift.report.summarize import summarize_week
from pytest_skilllift.week.history import HISTORY_COLUMNS, read_history

MANIFEST = ["prompt", "model", "condition", "rep", "run_id", "run_status"]
SCORES = ["prompt", "skill", "model", "condition", "rep", "item_type", "item_text", "verdict",
          "credit", "contribution", "contested", "evidence_quote", "item_index", "evidence_ok",
          "run_id", "claimed_verdict", "claimed_evidence"]
PROMPTS = ("alpha", "beta")


def write_csv(path: Path, columns: list[str], rows: list[dict[str, Any]]) -> None:
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def make_week(weekly: Path, key: str, *, contested: bool, samples: int,
              reject_one: bool = False, policy: str = "reject") -> Path:
    """Two prompts × haiku × both arms, one rep; must-1 of alpha contested when asked."""
    week = weekly / key
    week.mkdir(parents=True)
    manifest, scores = [], []
    for prompt in PROMPTS:
        for condition in ("no-skill", "with-skill"):
            run_id = f"{prompt}-haiku-{condition}-r1-{key}"
            manifest.append({"prompt": prompt, "model": "haiku", "condition": condition,
                             "rep": 1, "run_id": run_id, "run_status": "ok"})
            met = condition == "with-skill"
            rows = [
                {"item_type": "must", "item_index": 1, "item_text": f"{prompt} must one",
                 "verdict": "met" if met else "missing", "credit": float(met),
                 "evidence_quote": "a quote" if met else "", "evidence_ok": 1,
                 "contested": 1 if contested and prompt == "alpha" else ""},
                {"item_type": "must", "item_index": 2, "item_text": f"{prompt} must two",
                 "verdict": "missing", "credit": 0.0, "evidence_ok": 1},
            ]
            if reject_one and prompt == "beta" and condition == "no-skill":
                rows[1].update(evidence_ok=0, claimed_verdict="met",
                               claimed_evidence="The answer covers it.")
            for r in rows:
                scores.append({"prompt": prompt, "skill": prompt, "model": "haiku",
                               "condition": condition, "rep": 1, "run_id": run_id,
                               "contribution": r["credit"], **r})
            (week / run_id).mkdir()
            (week / run_id / "grades.json").write_text(json.dumps({
                "judge_model": "claude-opus-4-7", "judge_calls": samples + (
                    1 if contested and prompt == "alpha" and samples > 1 else 0),
                "judge_samples": samples, "tie_breaks": int(contested and prompt == "alpha"),
                "evidence_policy": policy, "prompt_version": "skilllift-judge/2", "rows": []}))
    write_csv(week / "manifest.csv", MANIFEST, manifest)
    write_csv(week / "scores.csv", SCORES, scores)
    return week


def test_rejected_quotes_are_counted_per_cell_and_listed(tmp_path: Path) -> None:
    week = make_week(tmp_path / "weekly", "20260801", contested=False, samples=1,
                     reject_one=True)
    s = summarize_week(week, plots=False)
    j = s.data["judge"]
    assert j["rejected_quotes"] == 1 and j["kept_unverified_quotes"] == 0
    assert j["quotes_by_cell"] == {"haiku": {"no-skill": {"rejected": 1, "kept": 0}}}
    quote = j["quotes_not_in_answer"][0]
    assert (quote["prompt"], quote["claimed_verdict"], quote["recorded_verdict"],
            quote["quote"]) == ("beta", "met", "missing", "The answer covers it.")
    assert ("- rejected quotes (met/violated whose quote is not in the answer, scored as "
            "missing/absent/clean): 1 — haiku/no-skill 1") in s.markdown
    assert "| beta   | haiku | no-skill  | 1   | must-2: beta must two" in s.markdown
    assert "- judge: `claude-opus-4-7` (4 runs) — prompt `skilllift-judge/2`" in s.markdown
    assert "- judge samples: 1 per run (4 runs); judge calls 4 (incl. 0 tie-breaks)" in (
        s.markdown)
    assert "- evidence policy: reject" in s.markdown
    # One sample per run: contested items are not measured, and the history says so.
    assert "_Not measured: every run was graded by one judge sample." in s.markdown
    assert [r.contested_items for r in read_history(tmp_path / "weekly" /
                                                    "scorecard-history.csv")] == [None]
    header = (tmp_path / "weekly" / "scorecard-history.csv").read_text().splitlines()[0]
    assert header.split(",") == list(HISTORY_COLUMNS)  # unchanged until a count exists


def test_flag_policy_is_named_in_provenance(tmp_path: Path) -> None:
    week = make_week(tmp_path / "weekly", "20260801", contested=False, samples=1,
                     policy="flag")
    md = summarize_week(week, plots=False).markdown
    assert "⚠ evidence policy **flag** (4 runs)" in md


def test_contested_backlog_history_and_ambiguity_across_weeks(tmp_path: Path) -> None:
    weekly = tmp_path / "weekly"
    first = summarize_week(make_week(weekly, "20260801", contested=True, samples=2),
                           plots=False)
    backlog = first.data["judge"]["contested"]
    assert [(g["prompt"], g["item_text"], g["runs"], g["arms"], g["ambiguous"])
            for g in backlog] == [("alpha", "alpha must one", 2,
                                   {"haiku/no-skill": 1, "haiku/with-skill": 1}, False)]
    assert "| alpha  | must-1: alpha must one | 2 " in first.markdown
    assert "haiku/no-skill ×1, haiku/with-skill ×1" in first.markdown
    assert "judge calls 10 (incl. 2 tie-breaks)" in first.markdown
    hist = weekly / "scorecard-history.csv"
    assert [r.contested_items for r in read_history(hist)] == [2]
    assert hist.read_text().splitlines()[0].endswith(",turns_delta,contested_items")

    second = summarize_week(make_week(weekly, "20260808", contested=True, samples=2),
                            plots=False)
    [item] = second.data["judge"]["contested"]
    assert item["contested_in_runs"] == 2 and item["ambiguous"]
    assert "⚠ ambiguous wording (contested in 2 weeks)" in second.markdown
    assert [(r.run_key, r.contested_items) for r in read_history(hist)] == [
        ("20260801", 2), ("20260808", 2)]
    # idempotent: summarizing the same week again changes neither history file
    before = (hist.read_bytes(), (weekly / "contested-history.csv").read_bytes())
    summarize_week(weekly / "20260808", plots=False)
    assert (hist.read_bytes(), (weekly / "contested-history.csv").read_bytes()) == before
    # re-summarizing the first week does not see the later one as its history
    again = summarize_week(weekly / "20260801", plots=False)
    assert not again.data["judge"]["contested"][0]["ambiguous"]


def test_history_without_the_extra_column_still_reads(tmp_path: Path) -> None:
    path = tmp_path / "h.csv"
    path.write_text(",".join(HISTORY_COLUMNS) + "\r\n20260801,20260801T000000Z,haiku,0.1,"
                    "0.05,,,\r\n")
    [row] = read_history(path)
    assert row.contested_items is None and row.must_lift == 0.1


def test_calibration_summary_appears(tmp_path: Path) -> None:
    week = make_week(tmp_path / "weekly", "20260801", contested=False, samples=1)
    items = [{"item": "must-1", "type": "must", "status": "unanimous"},
             {"item": "must-2", "type": "must", "status": "split"},
             {"item": "bonus-1", "type": "bonus", "status": "unanimous"}]
    summary = {"runs": 1, "run_ids": ["r"], "samples": [3], "judge_models": ["m"],
               "by_type": {"must": {"items": 2, "unanimous": 1, "split": 1, "incomplete": 0,
                                    "flip_rate": 0.5},
                           "bonus": {"items": 1, "unanimous": 1, "split": 0, "incomplete": 0,
                                     "flip_rate": 0.0},
                           "avoid": {"items": 0, "unanimous": 0, "split": 0, "incomplete": 0,
                                     "flip_rate": None}},
               "must_unanimous_share": 0.5, "bar": 0.95, "passed": False}
    (week / "calibration.json").write_text(json.dumps({"runs": {"r": {"items": items}},
                                                       "summary": summary}))
    md = summarize_week(week, plots=False).markdown
    assert "| must      | 2     | 1         | 1     | 50.0%     |" in md
    assert "musts unanimous 50.0%, which misses the ≥95% bar" in md
