"""``skilllift judge-check``: agreement, kappa and rates against hand-computed values.

The week is written by hand (a scores.csv whose judge verdicts make a known confusion table
against the labels), so every expected number below was computed on paper:

* must (25): tp 18, fp 1, fn 1, tn 5 → agreement 23/25 = 0.92, TPR 18/19, TNR 5/6,
  kappa (0.92 − 0.6352) / (1 − 0.6352) = 0.780702 (p_e = 0.76² + 0.24²);
* bonus (4): tp 2, fn 1, tn 1 → TPR 2/3, TNR 1/1;
* avoid (6): tp 2, fp 1, tn 3 → detection 2/2, false alarm 1/4;
* overall (35): tp 22, fp 2, fn 2, tn 9 → agreement 31/35, kappa 388/528 = 0.734848;
* Wilson 95% (z = 1.959964): 23/25 → [0.7503, 0.9778], 18/19 → [0.7536, 0.9906],
  5/6 → [0.4365, 0.9699], 1/4 → [0.0456, 0.6994], 31/35 → [0.7405, 0.9546].
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.cli import main as cli
from pytest_skilllift.judge.agreement import (
    Confusion,
    check_week,
    cohens_kappa,
    confusion_stats,
    trust_state,
)
from pytest_skilllift.report import judging
from pytest_skilllift.report.sections import judge as judge_section
from pytest_skilllift.report.sections import provenance

SCORE_COLUMNS = ["prompt", "skill", "model", "condition", "rep", "item_type", "item_text",
                 "verdict", "credit", "contribution", "contested", "evidence_quote",
                 "item_index", "evidence_ok", "run_id", "claimed_verdict", "claimed_evidence"]
POS = {"must": "met", "bonus": "met", "avoid": "violated"}
NEG = {"must": "missing", "bonus": "absent", "avoid": "clean"}
# (item_type, judge positive?, human positive?, count)
TABLE = [
    ("must", True, True, 18), ("must", True, False, 1), ("must", False, True, 1),
    ("must", False, False, 5),
    ("bonus", True, True, 2), ("bonus", False, True, 1), ("bonus", False, False, 1),
    ("avoid", True, True, 2), ("avoid", True, False, 1), ("avoid", False, False, 3),
]


def make_week(root: Path) -> tuple[Path, list[dict[str, Any]]]:
    """A week whose scores.csv holds the judge side of TABLE; returns it and the labels."""
    week = root / "20260815"
    week.mkdir(parents=True)
    scores, labels = [], []
    n = 0
    for item_type, judge_pos, human_pos, count in TABLE:
        for _ in range(count):
            n += 1
            prompt = f"p{n:02d}"
            verdict = POS[item_type] if judge_pos else NEG[item_type]
            scores.append({
                "prompt": prompt, "skill": "s", "model": "haiku", "condition": "with-skill",
                "rep": 1, "item_type": item_type, "item_text": f"{item_type} item of {prompt}",
                "verdict": verdict, "credit": float(judge_pos), "contested": "",
                "evidence_quote": f"quote {n}" if judge_pos else "", "item_index": 1,
                "evidence_ok": 1, "run_id": f"{prompt}-haiku-with-skill-r1"})
            labels.append({"prompt": prompt, "model": "haiku", "condition": "with-skill",
                           "rep": "1", "item_type": item_type, "item_index": "1",
                           "verdict": POS[item_type] if human_pos else NEG[item_type]})
    # an ungraded item (the judge gave no verdict) that someone labelled anyway
    scores.append({"prompt": "p99", "skill": "s", "model": "haiku", "condition": "no-skill",
                   "rep": 1, "item_type": "must", "item_text": "ungraded must", "verdict": "",
                   "credit": "", "item_index": 1})
    with (week / "scores.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, SCORE_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(scores)
    (week / "p01-haiku-with-skill-r1").mkdir()
    (week / "p01-haiku-with-skill-r1" / "grades.json").write_text(
        json.dumps({"judge_model": "claude-opus-4-7", "rows": []}))
    return week, labels


def write_labels(path: Path, rows: list[dict[str, Any]], columns: list[str] | None = None
                 ) -> Path:
    columns = columns or ["prompt", "model", "condition", "rep", "item_type", "item_index",
                          "verdict"]
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_kappa_agreement_and_rates_match_hand_computed_values(tmp_path: Path) -> None:
    week, labels = make_week(tmp_path)
    report = check_week(week, write_labels(tmp_path / "labels.csv", labels))
    must, bonus, avoid = (report["by_type"][t] for t in ("must", "bonus", "avoid"))
    assert must["confusion"] == {"tp": 18, "fp": 1, "fn": 1, "tn": 5}
    assert must["agreement"]["rate"] == pytest.approx(0.92)
    assert must["agreement"]["wilson95"] == pytest.approx([0.7503, 0.9778], abs=1e-4)
    assert must["kappa"] == pytest.approx(0.780702, abs=1e-6)
    assert must["tpr"]["rate"] == pytest.approx(18 / 19)
    assert must["tpr"]["wilson95"] == pytest.approx([0.7536, 0.9906], abs=1e-4)
    assert must["tnr"]["rate"] == pytest.approx(5 / 6)
    assert must["tnr"]["wilson95"] == pytest.approx([0.4365, 0.9699], abs=1e-4)
    assert (bonus["tpr"]["rate"], bonus["tnr"]["rate"]) == (pytest.approx(2 / 3), 1.0)
    assert avoid["violation_detection"]["rate"] == 1.0
    assert avoid["false_alarm"]["rate"] == pytest.approx(0.25)
    assert avoid["false_alarm"]["wilson95"] == pytest.approx([0.0456, 0.6994], abs=1e-4)
    assert "tpr" not in avoid and "violation_detection" not in must
    overall = report["overall"]
    assert overall["n"] == 35 and overall["agreement"]["k"] == 31
    assert overall["agreement"]["wilson95"] == pytest.approx([0.7405, 0.9546], abs=1e-4)
    assert overall["kappa"] == pytest.approx(388 / 528)
    # must agreement 0.92 < 0.95: not trusted; >= 0.85 with kappa 0.73 >= 0.6: provisional
    assert report["state"] == "provisional"
    assert len(report["disagreements"]) == 4
    wrong = next(d for d in report["disagreements"] if d["item_type"] == "avoid")
    assert (wrong["judge_verdict"], wrong["human_verdict"]) == ("violated", "clean")
    assert wrong["evidence"].startswith("quote ")  # the judge's evidence is listed with it
    assert report["judge_models"] == ["claude-opus-4-7"]


def test_trust_states() -> None:
    def stats(tp: int, fp: int, fn: int, tn: int) -> dict[str, Any]:
        return confusion_stats(Confusion(tp, fp, fn, tn), "must")

    assert trust_state(stats(15, 0, 0, 4), stats(15, 0, 0, 4))[0] == "unmeasured"  # 19 musts
    good = stats(15, 0, 1, 9)  # 24/25 = 0.96, kappa 0.916
    assert trust_state(good, good)[0] == "trusted"
    poor = stats(10, 5, 5, 5)
    assert trust_state(poor, poor)[0] == "untrusted"
    one_sided = stats(25, 0, 0, 0)  # kappa undefined: everything met, by both
    state, reasons = trust_state(one_sided, one_sided)
    assert state == "provisional" and "undefined" in reasons[1]
    assert cohens_kappa(Confusion()) is None


def test_label_rows_that_match_nothing_are_reported(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    week, labels = make_week(tmp_path)
    bad = [
        {**labels[0], "item_index": "7"},  # no such item
        {**labels[1], "verdict": "yes"},  # not of the vocabulary
        {**labels[2], "verdict": ""},  # a sheet row not labelled yet: counted, not an error
        dict(labels[3]),  # the same item again
        {"prompt": "p99", "model": "haiku", "condition": "no-skill", "rep": "1",
         "item_type": "must", "item_index": "1", "verdict": "met"},  # the judge left it ungraded
    ]
    path = write_labels(tmp_path / "labels.csv", labels[:4] + bad)
    code = cli.main(["judge-check", str(week), "--labels", str(path)])
    out = capsys.readouterr().out
    assert code == 1
    report = json.loads((week / "judge-check.json").read_text())
    reasons = {u["row"]: u["reason"] for u in report["unmatched"]}
    assert set(reasons) == {5, 6, 8, 9}
    assert "matches no item" in reasons[5]
    assert "'yes' is not met or missing" in reasons[6]
    assert "same item as row 4" in reasons[8]
    assert "ungraded" in reasons[9]
    assert report["unlabelled_rows"] == 1 and report["overall"]["n"] == 4
    assert "row 5 (p01 / haiku / with-skill / r1 / must-7): matches no item" in out
    assert report["state"] == "unmeasured"


def test_item_text_stands_in_for_item_index_and_json_output(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    week, labels = make_week(tmp_path)
    by_text = [{**row, "item_index": "", "item_text": f"  {row['item_type']} item of\n"
                f"{row['prompt']} "} for row in labels]
    path = write_labels(tmp_path / "labels.csv", by_text,
                        ["prompt", "model", "condition", "rep", "item_type", "item_text",
                         "verdict"])
    assert cli.main(["judge-check", str(week), "--labels", str(path), "--output", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["overall"]["n"] == 35 and report["unmatched"] == []
    assert report["by_type"]["must"]["kappa"] == pytest.approx(0.780702, abs=1e-6)


def test_unusable_label_file_is_a_clear_error(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    week, _ = make_week(tmp_path)
    path = tmp_path / "labels.csv"
    path.write_text("prompt,model,verdict\nx,y,met\n")
    assert cli.main(["judge-check", str(week), "--labels", str(path)]) == 2
    err = capsys.readouterr().err
    assert "labels.csv: column(s) condition, rep, item_type, item_index (or item_text) " \
           "missing" in err
    assert cli.main(["judge-check", str(week), "--labels", str(tmp_path / "nope.csv")]) == 2
    assert not (week / "judge-check.json").exists()


def test_trust_state_reaches_the_scorecard_provenance(tmp_path: Path) -> None:
    week, labels = make_week(tmp_path)
    assert provenance.judge_lines({"judge": judging.build(week)})[-1].startswith(
        "- judge trust: **unmeasured**")
    cli.main(["judge-check", str(week), "--labels",
              str(write_labels(tmp_path / "labels.csv", labels))])
    data: judge_section.Data = {"judge": judging.build(week)}
    line = next(ln for ln in provenance.judge_lines(data) if "judge trust" in ln)
    assert line.startswith("- judge trust: **provisional** — must agreement 0.920 over 25 "
                           "labelled musts, κ 0.73")
    assert not data["judge"]["trust"]["stale"]
    # Regraded by another judge since: the check no longer measures this week's judge.
    (week / "p01-haiku-with-skill-r1" / "grades.json").write_text(
        json.dumps({"judge_model": "claude-sonnet-4-5", "rows": []}))
    assert any("run it again" in ln for ln in provenance.judge_lines(
        {"judge": judging.build(week)}))
