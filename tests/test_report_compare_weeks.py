"""``skilllift compare WEEK_A WEEK_B``: comparison kinds, per-prompt changes, paired test."""

from __future__ import annotations

import csv
import io
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats as sps

from pytest_skilllift.cli import score as lint_cli
from pytest_skilllift.report import compare_weeks as cw
from pytest_skilllift.report.summarize import summarize_week
from pytest_skilllift.week import identity as ident

from .test_week_identity import make
from .test_week_io import write_week


@pytest.fixture
def weeks(reference_data: Path, tmp_path: Path) -> tuple[Path, Path]:
    """Two copies of the qdrant week 20260808 under one weekly/ directory."""
    src = reference_data / "qdrant-skills" / "weekly" / "20260808"
    a, b = tmp_path / "weekly" / "20260801", tmp_path / "weekly" / "20260808"
    shutil.copytree(src, a)
    shutil.copytree(src, b)
    return a, b


def edit_csv(path: Path, when: Callable[[dict[str, str]], bool],
             update: dict[str, str]) -> int:
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    n = 0
    for r in rows:
        if when(r):
            r.update(update)
            n += 1
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return n


def musts_of(prompt: str, model: str) -> Callable[[dict[str, str]], bool]:
    return lambda r: (r["prompt"], r["model"], r["condition"], r["item_type"]) == (
        prompt, model, "with-skill", "must")


def run(*argv: str) -> tuple[int, str]:
    import argparse

    parser = argparse.ArgumentParser(prog="skilllift")
    lint_cli.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["compare", *argv])
    out = io.StringIO()
    return int(args.func(args, out)), out.getvalue()


def test_inspection_only_without_week_json(weeks: tuple[Path, Path]) -> None:
    a, b = weeks
    result = cw.compare(a, b)
    assert result["comparison"] == "inspection only" and result["differences"] == []
    assert result["without_week_json"] == [str(a), str(b)]
    assert {r["change"] for r in result["prompts"]} == {"unchanged"}
    rc, text = run(str(a), str(b))
    assert rc == 0 and "**inspection only**" in text


def test_direct_when_only_examined_conditions_differ(weeks: tuple[Path, Path]) -> None:
    a, b = weeks
    ident.write_week_record(a, ident.WeekRecord(identity=make(), gates=("must_lift>0",)))
    ident.write_week_record(b, ident.WeekRecord(
        identity=make(models={"sonnet": "claude-sonnet-5", "haiku": "claude-haiku-4-5"},
                      cli_version="2.2.0", skills={"qdrant-edge": "e" * 64,
                                                   "git-bisect": "b" * 64},
                      allowed_tools=("Read",)),
        gates=("must_lift>0",)))
    result = cw.compare(a, b)
    assert result["comparison"] == "direct" and result["differences"] == []
    examined = {d["text"] for d in result["examined"]}
    assert "model 'sonnet': 'claude-sonnet-4-5' → 'claude-sonnet-5'" in examined
    assert "CLI version: '2.1.332' → '2.2.0'" in examined
    assert "skill family 'qdrant-edge': its files changed" in examined
    _, text = run(str(a), str(b))
    assert "**direct comparison**" in text and "Examined (allowed to differ)" in text


def test_side_by_side_names_each_deciding_condition(weeks: tuple[Path, Path]) -> None:
    a, b = weeks
    ident.write_week_record(a, ident.WeekRecord(identity=make(), gates=("must_lift>0",)))
    edited = make(judge_model="claude-opus-5", prompts={
        **make().prompts, "edge": ident.PromptIdentity.of("How do I sync?",
                                                          [("must", "Another rubric")],
                                                          "qdrant-edge")})
    ident.write_week_record(b, ident.WeekRecord(identity=edited, gates=(
        "must_lift_ci_low>0",), pass_threshold=0.8))
    result = cw.compare(a, b)
    assert result["comparison"] == "side-by-side"
    texts = [d["text"] for d in result["differences"]]
    assert "judge model: 'claude-opus-4-5' → 'claude-opus-5'" in texts
    assert "prompt 'edge': rubric edited" in texts
    assert "pass threshold: 0.7 → 0.8" in texts
    assert "gates: ['must_lift>0'] → ['must_lift_ci_low>0']" in texts
    _, text = run(str(a), str(b))
    assert "**side-by-side**: 4 deciding condition(s) differ" in text
    assert "- prompt 'edge': rubric edited" in text


def test_a_judge_override_is_a_deciding_difference(weeks: tuple[Path, Path]) -> None:
    a, b = weeks
    ident.write_week_record(a, ident.WeekRecord(identity=make()))
    ident.write_week_record(b, ident.WeekRecord(identity=make(),
                                                judge_overrides={"conftest.MyJudge": 208}))
    result = cw.compare(a, b)
    assert result["comparison"] == "side-by-side"
    assert [d["text"] for d in result["differences"]] == [
        "judge overrides: [] → ['conftest.MyJudge']"]


def test_the_judge_mask_is_a_deciding_difference(weeks: tuple[Path, Path]) -> None:
    """A week graded unmasked (one recorded before the mask existed reads so) and one graded
    with the arm-leak mask were not graded the same way: side by side, never direct."""
    a, b = weeks
    ident.write_week_record(a, ident.WeekRecord(identity=make()))
    ident.write_week_record(b, ident.WeekRecord(identity=make(judge_mask=True)))
    result = cw.compare(a, b)
    assert result["comparison"] == "side-by-side"
    assert [d["text"] for d in result["differences"]] == [
        "judge arm-leak mask: 'off' → 'on'"]


def test_a_week_that_drifted_is_never_direct(weeks: tuple[Path, Path]) -> None:
    a, b = weeks
    for w in weeks:
        ident.write_week_record(w, ident.WeekRecord(identity=make()))
    edit_csv(b / "manifest.csv", lambda r: r["prompt"] == "qdrant-edge",
             {"cli_version": "9.9.9"})
    result = cw.compare(a, b)
    assert result["comparison"] == "side-by-side"
    assert any(d["field"] == "drift" and "more than one CLI version" in d["text"]
               for d in result["differences"])


def test_regression_detection_and_fail_on_regression(weeks: tuple[Path, Path]) -> None:
    a, b = weeks
    # One prompt's musts all missing with two reps a side: a bimodal prompt of the real week
    # (reps 1.0 and 0.0) makes the same pattern by chance, so it is within rep noise
    # (benchmarks/README.md, the regression alarm's power table); the lift is what moved.
    assert edit_csv(b / "scores.csv", musts_of("qdrant-edge", "haiku"),
                    {"verdict": "missing", "credit": "0.0", "contribution": "0.0"}) > 0
    result = cw.compare(a, b)
    changes = {(r["prompt"], r["model"]): r for r in result["prompts"]}
    one = changes[("qdrant-edge", "haiku")]
    assert one["change"] == "within rep noise" and one["after"] < one["before"]
    assert one["before"] >= 0.9 and one["after"] <= 0.0
    assert changes[("qdrant-edge", "sonnet")]["change"] == "unchanged"
    assert run(str(a), str(b), "--fail-on-regression")[0] == 0
    # every haiku prompt's with-skill musts missing: the week-level test finds it
    edit_csv(b / "scores.csv", lambda r: (r["model"], r["condition"], r["item_type"]) == (
        "haiku", "with-skill", "must"), {"verdict": "missing", "credit": "0.0",
                                         "contribution": "0.0"})
    result = cw.compare(a, b)
    assert result["models"]["haiku"]["week_test"]["regressed"]
    assert not result["models"]["sonnet"]["week_test"]["regressed"]
    assert run(str(a), str(b))[0] == 0  # a report unless asked to fail
    rc, text = run(str(a), str(b), "--fail-on-regression")
    assert rc == 1 and "**regression found**" in text
    # a margin larger than the move: nothing to fail on
    rc, _ = run(str(a), str(b), "--fail-on-regression", "--margin", "0.99")
    assert rc == 0
    # reversed, the same move is no regression
    assert run(str(b), str(a), "--fail-on-regression")[0] == 0


def test_the_alarm_watches_the_lift_and_the_level_alarm_is_its_own_option(
        weeks: tuple[Path, Path]) -> None:
    """A collapsed lift with a flat with-skill arm (no-skill caught up) is a regression of
    the skill, invisible to the old with-skill level alarm; --fail-on-level-regression
    watches the level and finds nothing there."""
    a, b = weeks
    edit_csv(b / "scores.csv", lambda r: (r["model"], r["condition"], r["item_type"]) == (
        "haiku", "no-skill", "must"), {"verdict": "met", "credit": "1.0"})
    result = cw.compare(a, b)
    assert result["regression_alarm"]["watches"] == "lift"
    assert result["level_alarm"]["watches"] == "level"
    assert result["models"]["haiku"]["week_test"]["regressed"]
    assert not result["models"]["haiku"]["level_week_test"]["regressed"]
    rc, text = run(str(a), str(b), "--fail-on-regression")
    assert rc == 1 and "**regression found**" in text
    assert run(str(a), str(b), "--fail-on-level-regression")[0] == 0


def test_a_drift_of_both_arms_is_a_level_regression_not_a_lift_one() -> None:
    from pytest_skilllift.report import stats

    rng = np.random.default_rng(3)
    no = rng.uniform(0.2, 0.5, (1, 26, 1, 2))
    with_ = no + 0.4
    before = np.concatenate([no, with_], axis=2)
    after = np.clip(before - 0.2, 0, 1)  # both arms lower by 0.2
    lift = stats.regression_alarm(before, after, weights=stats.LIFT_WEIGHTS,
                                  n_items=np.full(26, 4))
    level = stats.regression_alarm(before[:, :, 1], after[:, :, 1], n_items=np.full(26, 4))
    assert not lift.alarm and lift.watches == "lift"
    assert level.alarm and level.week_regressed == [True]


def test_an_ungraded_item_is_scored_on_graded_items_in_compare(
        weeks: tuple[Path, Path]) -> None:
    """compare follows the one rule for an ungraded item (``report.verdicts``): a rep is
    scored on its graded items — the old code left the whole pair unscored for one ungraded
    item — and only a rep without a graded must item is dropped, the pair then scored on the
    reps left; a pair with no scored rep on a side is unscored, never a regression."""
    a, b = weeks
    first = {"done": False}

    def once(r: dict[str, str]) -> bool:
        hit = musts_of("qdrant-edge", "haiku")(r) and r["rep"] == "1" and not first["done"]
        first["done"] = first["done"] or hit
        return hit

    ungraded = {"verdict": "", "credit": "", "contribution": ""}
    edit_csv(b / "scores.csv", once, ungraded)
    sb = summarize_week(b, write=False, plots=False)
    assert sb.aggregates is not None
    pi, mi = sb.week.prompts.index("qdrant-edge"), sb.week.models.index("haiku")
    result = cw.compare(a, b)
    pair = next(r for r in result["prompts"] if (r["prompt"], r["model"]) == (
        "qdrant-edge", "haiku"))
    assert pair["change"] != "unscored"
    # the prompt's must lift, its rep 1 on the graded musts
    agg = sb.aggregates
    assert pair["after"] == pytest.approx(float(agg.must[pi, mi, 1] - agg.must[pi, mi, 0]))
    # every with-skill must of the prompt ungraded in both reps: no scored rep — unscored
    edit_csv(b / "scores.csv", musts_of("qdrant-edge", "haiku"), ungraded)
    result = cw.compare(a, b)
    pair = next(r for r in result["prompts"] if (r["prompt"], r["model"]) == (
        "qdrant-edge", "haiku"))
    assert pair["change"] == "unscored" and pair["after"] is None
    assert run(str(a), str(b), "--fail-on-regression")[0] == 0


def test_paired_change_in_lift_matches_scipy(weeks: tuple[Path, Path]) -> None:
    a, b = weeks
    for prompt in ("qdrant-edge", "qdrant-sizing", "qdrant-monitoring"):
        edit_csv(b / "scores.csv", musts_of(prompt, "haiku"),
                 {"verdict": "missing", "credit": "0.0", "contribution": "0.0"})
    result = cw.compare(a, b)
    m = result["models"]["haiku"]
    sa = summarize_week(a, write=False, plots=False).data["prompts"]
    sb = summarize_week(b, write=False, plots=False).data["prompts"]
    la = {r["prompt"]: lift for r in sa
          if r["model"] == "haiku" and (lift := r["must_lift"]) is not None}
    lb = {r["prompt"]: lift for r in sb
          if r["model"] == "haiku" and (lift := r["must_lift"]) is not None}
    common = sorted(set(la) & set(lb))
    ref = sps.ttest_rel([lb[p] for p in common], [la[p] for p in common])
    ci = ref.confidence_interval(0.95)
    paired = m["paired"]
    assert paired["n_prompts"] == len(common) == 26
    assert paired["difference"] == pytest.approx(
        float(np.mean([lb[p] - la[p] for p in common])))
    assert paired["p_value"] == pytest.approx(ref.pvalue, rel=1e-9)
    assert (paired["ci_low"], paired["ci_high"]) == pytest.approx((ci.low, ci.high))
    assert m["delta"] == pytest.approx(m["lift_b"] - m["lift_a"])
    nt = m["noise_threshold"]
    assert nt["between"] is None and nt["threshold"] == nt["within"]  # no history yet
    assert nt["clears"] == (abs(m["delta"]) > nt["threshold"])


def test_json_shape(weeks: tuple[Path, Path]) -> None:
    a, b = weeks
    rc, out = run(str(a), str(b), "--output", "json")
    data: dict[str, Any] = json.loads(out)
    assert rc == 0
    assert data["comparison"] in ("direct", "side-by-side", "inspection only")
    assert isinstance(data["differences"], list)
    assert set(data["prompts"][0]) == {"prompt", "model", "change", "before", "after",
                                       "k_before", "k_after", "se", "p_drop_adjusted",
                                       "p_rise_adjusted", "level_change", "level_before",
                                       "level_after", "level_p_drop_adjusted"}
    assert data["regression_alarm"]["correction"] == "split-alpha-holm"
    assert data["regression_alarm"]["alpha_week"] == 0.025
    assert set(data["models"]) == {"sonnet", "haiku"}
    assert {"paired", "noise_threshold", "lift_a", "lift_b", "delta"} <= set(
        data["models"]["haiku"])


def test_two_skills_still_compare_as_skills(tmp_path: Path) -> None:
    from pytest_skilllift.testing.skill_dirs import write_skill

    a = write_skill(tmp_path / "a")
    b = write_skill(tmp_path / "b", body="# Demo\n\nDo the thing, then check it.\n")
    rc, out = run(str(a), str(b), "--output", "json")
    assert rc == 0 and "composite_delta" in json.loads(out)


def test_noise_threshold_uses_between_week_sigma_from_history(
        weeks: tuple[Path, Path]) -> None:
    from pytest_skilllift.week.history import HistoryRow, upsert_history

    a, b = weeks
    upsert_history(b.parent / "scorecard-history.csv", [
        HistoryRow("20260711", "20260711T090000Z", "haiku", 0.10, 0.05),
        HistoryRow("20260718", "20260718T090000Z", "haiku", 0.90, 0.05),
        HistoryRow("20260725", "20260725T090000Z", "haiku", 0.50, 0.05),
    ])
    nt = cw.compare(a, b)["models"]["haiku"]["noise_threshold"]
    assert nt["between"] == pytest.approx(0.4)  # sample σ of 0.10, 0.90, 0.50
    assert nt["threshold"] == pytest.approx(max(0.4, nt["within"]))
    assert nt["clears"] is False  # the two weeks are identical: Δ = 0


# --- what the earlier markdown comparison (report/compare.py) showed, now in compare_weeks ---


def _lift_row(text: str, model: str) -> dict[str, str]:
    """The lift table's row for ``model``, keyed by its header."""
    lines = text.splitlines()
    start = lines.index("## Lift per model (must_coverage, with-skill − no-skill)")
    header = next(ln for ln in lines[start:] if ln.startswith("| model"))
    row = next(ln for ln in lines[start:] if ln.startswith(f"| {model} "))
    cells = [c.strip() for c in row.strip("|").split("|")]
    return dict(zip([c.strip() for c in header.strip("|").split("|")], cells, strict=True))


def test_text_shows_both_parts_of_the_noise_threshold_and_the_lift_movers(
        tmp_path: Path) -> None:
    a = write_week(tmp_path / "weekly" / "20260801")
    # as write_week's default, except that p-a's first must is missing with the skill
    b = write_week(tmp_path / "weekly" / "20260808",
                   met=lambda p, m, c, r, i: (c == "with-skill" and not (p == 0 and i == 0))
                   or (c == "no-skill" and (i + r) % 2 == 0))
    _, text = run(str(a), str(b))
    assert text.startswith("# Week comparison — 20260801 → 20260808")
    row = _lift_row(text, "sonnet")
    assert row["Δ"] != "n/a" and row["t·SE_Δ (within)"] != "n/a"
    assert (row["σ (between)"] == "n/a"
            and row["don't-act threshold"] == row["t·SE_Δ (within)"])
    assert "σ (between) needs at least 3 comparable runs before 20260808" in text
    # the prompt whose lift moved is named, with both lifts
    movers = cw.compare(a, b)["models"]["sonnet"]["lift_movers"]
    assert [r["prompt"] for r in movers["moved"]] == ["p-a"] and movers["in_both"] == 3
    assert "## Per-prompt lift movers" in text and "### sonnet" in text
    assert "1 of 3 prompts in both weeks moved." in text and "| p-a " in text


def test_text_uses_between_week_sigma_from_history(tmp_path: Path) -> None:
    from pytest_skilllift.week.history import HistoryRow, upsert_history

    weekly = tmp_path / "weekly"
    a = write_week(weekly / "20260801")
    b = write_week(weekly / "20260808")
    upsert_history(weekly / "scorecard-history.csv", [
        HistoryRow("20260711", "20260711T090000Z", "sonnet", 0.10, 0.05),
        HistoryRow("20260718", "20260718T090000Z", "sonnet", 0.50, 0.05),
        HistoryRow("20260725", "20260725T090000Z", "sonnet", 0.30, 0.05),
    ])
    _, text = run(str(a), str(b))
    row = _lift_row(text, "sonnet")
    assert row["σ (between)"] == "0.200"  # σ of 0.10, 0.50, 0.30 (sample stdev)
    assert row["don't-act threshold"] == "0.200"
    # identical weeks: never a bare "within noise" beside a threshold, but why nothing moved
    assert row["clears the rule?"] == "no — identical lifts"
    assert "- sonnet: identical per-prompt lifts: nothing moved" in text
    assert "needs at least 3 comparable runs" not in text
    assert "0 of 3 prompts in both weeks moved." in text


@pytest.mark.slow
def test_lift_movers_beyond_the_shown_ones_are_counted(weeks: tuple[Path, Path]) -> None:
    a, b = weeks
    result = cw.compare(a, b)
    assert result["models"]["haiku"]["lift_movers"]["moved"] == []
    moved_prompts = sorted({r["prompt"] for r in result["prompts"]})[:cw.MAX_MOVERS + 2]
    for prompt in moved_prompts:
        edit_csv(b / "scores.csv", musts_of(prompt, "haiku"),
                 {"verdict": "missing", "credit": "0.0", "contribution": "0.0"})
    result = cw.compare(a, b)
    moved = result["models"]["haiku"]["lift_movers"]["moved"]
    deltas = [abs(r["delta"]) for r in moved]
    assert len(moved) >= cw.MAX_MOVERS + 1 and deltas == sorted(deltas, reverse=True)
    text = cw.render_text(result)
    assert (f"_Showing the {cw.MAX_MOVERS} largest of {len(moved)} movers (all of them in "
            "--output json)._") in text
