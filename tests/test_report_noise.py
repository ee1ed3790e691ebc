"""The measured noise floor: split-half A/A of the no-skill reps and the explicit A/A arm, on
synthetic weeks whose answers are worked out by hand here."""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats as sps

from pytest_skilllift.report import noise
from pytest_skilllift.report.summarize import summarize_week
from pytest_skilllift.week.columns import (
    MANIFEST_COLUMNS,
    MANIFEST_EXTRA_COLUMNS,
    SCORES_COLUMNS,
    SCORES_EXTRA_COLUMNS,
    VERDICTS,
)

#: (type, text, hit, evidence): hit = met (must/bonus) or violated (avoid).
Item = tuple[str, str, bool, str]


def write_runs(week: Path, runs: Iterable[tuple[dict[str, Any], list[Item]]]) -> Path:
    """A week in our format from explicit runs: (manifest fields, graded items)."""
    week.mkdir(parents=True, exist_ok=True)
    manifest, scores = [], []
    for fields, items in runs:
        p, m, c, r = fields["prompt"], fields["model"], fields["condition"], fields["rep"]
        run_id = f"{p}-{m}-{c}-r{r}-w"
        installs = c in ("with-skill", "with-all")
        manifest.append({"skill_family": fields.get("family", p), "skill_leaf": f"{p}/SKILL.md",
                         "run_id": run_id, "exit_code": 0, "skill_available": int(installs),
                         "skill_activation": "skill_tool" if installs else "none",
                         "signals_ok": 1, "budget_hit": 0, "run_status": "ok",
                         "total_cost_usd": 0.01, "num_turns": 2, **fields})
        counts: dict[str, int] = {}
        for t, text, hit, evidence in items:
            counts[t] = counts.get(t, 0) + 1
            credit = 1.0 if hit else 0.0
            scores.append({"prompt": p, "skill": fields.get("family", p), "model": m,
                           "condition": c, "rep": r, "item_type": t, "item_text": text,
                           "verdict": VERDICTS[t][0 if hit else 1], "credit": credit,
                           "contribution": -credit if t == "avoid" else credit,
                           "evidence_quote": evidence if hit else "", "run_id": run_id,
                           "item_index": counts[t], "evidence_ok": 1})
    for name, cols, rows in (("manifest.csv", MANIFEST_COLUMNS + MANIFEST_EXTRA_COLUMNS, manifest),
                             ("scores.csv", SCORES_COLUMNS + SCORES_EXTRA_COLUMNS, scores)):
        with (week / name).open("w", newline="") as fh:
            writer = csv.DictWriter(fh, list(cols), extrasaction="ignore")
            writer.writeheader()
            writer.writerows(rows)
    return week


def musts(met: int, of: int = 3) -> list[Item]:
    return [("must", f"must {i}", i < met, f"said {i}") for i in range(of)]


def run(prompt: str, cond: str, rep: int, items: list[Item], model: str = "sonnet",
        **extra: Any) -> tuple[dict[str, Any], list[Item]]:
    return {"prompt": prompt, "model": model, "condition": cond, "rep": rep, **extra}, items


# -- pure -------------------------------------------------------------------------------------


def test_split_half_pairs_even_against_odd_reps() -> None:
    # rep slots 1, 2, 3, 4: odd = mean(r1, r3), even = mean(r2, r4); NaN reps are left out.
    rep_must = np.array([[0.0, 1.0, 0.0, 1.0],        # d = 1 − 0 = 1
                         [1.0, 0.0, np.nan, 0.0],     # d = 0 − 1 = −1
                         [0.5, 0.5, 0.5, 0.5],        # d = 0
                         [np.nan, 1.0, np.nan, 1.0]])  # odd half empty: not paired
    sh = noise.split_half(rep_must, np.array([1, 2, 3, 4]))
    assert sh.n_prompts == 3
    assert sorted(sh.d.tolist()) == [-1.0, 0.0, 1.0]
    assert sh.aa_lift == pytest.approx(0.0)
    assert sh.aa_se == pytest.approx(1.0 / math.sqrt(3))  # sd([1, −1, 0]) = 1


def test_exceed_rates_enumerate_every_split() -> None:
    d = np.array([1 / 3, 0.0, -1 / 3, 1.0])
    # |mean| over the 16 sign patterns: 5/12, 1/4, 1/4, 1/12, four patterns each.
    rates, exact = noise.exceed_rates(d, {"a": 0.2, "b": 0.3, "c": 0.5, "none": None})
    assert exact
    assert rates == {"a": 0.75, "b": 0.25, "c": 0.0, "none": None}


def test_sign_flips_of_repeated_values_are_drawn_per_value(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Many prompts, few distinct dᵢ (the usual must-coverage halves): the draws are counted
    per value — same distribution as one coin per prompt, so sd ≈ √Σd²/n — reproducibly,
    with a value's copies across 64-bit words (70, 130, 64 copies) and older numpy's
    popcount (unpacking) giving the same counts."""
    d = np.repeat([0.1, -0.2, 0.3, 0.0], [70, 130, 1, 64])
    means, exact = noise.sign_flip_means(d)
    again, _ = noise.sign_flip_means(d)
    assert not exact and means.size == noise.MC_DRAWS and np.array_equal(means, again)
    assert means.std() == pytest.approx(math.sqrt(float((d ** 2).sum())) / d.size, rel=0.05)
    assert abs(means.mean()) < 5 * means.std() / math.sqrt(means.size)
    assert np.abs(means).max() <= np.abs(d).sum() / d.size + 1e-12
    words = np.random.default_rng(5).integers(0, 2**63, size=(4, 7), dtype=np.uint64)
    native = noise._popcount(words)
    monkeypatch.delattr(np, "bitwise_count", raising=False)
    assert np.array_equal(noise._popcount(words), native)


def test_exceed_rates_beyond_enumeration_are_seeded_monte_carlo() -> None:
    rng = np.random.default_rng(1)
    d = rng.normal(0.0, 1.0, 40)
    se = float(d.std(ddof=1) / math.sqrt(d.size))
    first, exact = noise.exceed_rates(d, {"se": se, "t": 2.0227 * se})
    again, _ = noise.exceed_rates(d, {"se": se, "t": 2.0227 * se})
    assert not exact and first == again  # reproducible
    # Sign flips of dᵢ have sd ≈ √(Σd²)/n ≈ SE: about a third exceed SE, about 5% t·SE.
    assert first["se"] == pytest.approx(0.32, abs=0.06)
    assert first["t"] == pytest.approx(0.05, abs=0.03)


def test_false_verdict_rate_counts_moves_past_the_threshold() -> None:
    assert noise.false_verdict_rate(np.array([0.1, -0.1, 0.05, np.nan, 0.3]), 0.10) == (3, 4)


# -- the scorecard ----------------------------------------------------------------------------


def test_split_half_on_a_synthetic_week_with_a_known_answer(tmp_path: Path) -> None:
    # no-skill must coverage per rep (of 3 musts): p0 1/3 → 2/3, p1 2/3 → 2/3, p2 1 → 2/3,
    # p3 0 → 1; with-skill meets everything. So the split-half dᵢ (r2 − r1) are 1/3, 0, −1/3, 1.
    no = {"p0": (1, 2), "p1": (2, 2), "p2": (3, 2), "p3": (0, 3)}
    runs = []
    for p, (r1, r2) in no.items():
        runs += [run(p, "no-skill", 1, musts(r1)), run(p, "no-skill", 2, musts(r2)),
                 run(p, "with-skill", 1, musts(3)), run(p, "with-skill", 2, musts(3))]
    card = summarize_week(write_runs(tmp_path / "w", runs), write=False).data
    nf = card["noise_floor"]["sonnet"]
    assert nf["method"] == "split-half no-skill reps" and nf["n_prompts"] == 4
    d = np.array([1 / 3, 0.0, -1 / 3, 1.0])
    assert nf["aa_lift"] == pytest.approx(0.25)
    assert nf["aa_se"] == pytest.approx(d.std(ddof=1) / 2)
    # The lift: dᵢ = 1 − mean(no) = 1/2, 1/3, 1/6, 1/2.
    lift_d = np.array([0.5, 1 / 3, 1 / 6, 0.5])
    se = lift_d.std(ddof=1) / 2
    assert nf["lift_se"] == pytest.approx(se)
    assert nf["t_threshold"] == pytest.approx(sps.t.ppf(0.975, 3) * se)
    assert nf["exceeds_lift_se"] is True  # 0.25 > 0.080
    # |A/A| over every split is 5/12, 1/4, 1/4 or 1/12: all above SE (0.080), only 5/12
    # above t·SE (0.254).
    assert nf["exceeds_lift_se_rate"] == 1.0
    assert nf["exceeds_t_threshold_rate"] == 0.25
    assert nf["splits"] == "exact"
    assert card["aa"] is None


def test_one_rep_has_no_split_half(tmp_path: Path) -> None:
    runs = [run(p, c, 1, musts(i % 3)) for i, p in enumerate(("a", "b", "c"))
            for c in ("no-skill", "with-skill")]
    card = summarize_week(write_runs(tmp_path / "w", runs), write=False)
    assert card.data["noise_floor"] == {}
    assert "## Noise floor" not in card.markdown


def test_explicit_aa_week_reports_its_false_lift_rate(tmp_path: Path) -> None:
    # no-skill vs no-skill-b, one rep: dᵢ = 1/3, 0, −1/3, 1/3 → 3 of 4 prompts move ≥ 0.10.
    pairs = {"p0": (1, 2), "p1": (2, 2), "p2": (3, 2), "p3": (0, 1)}
    runs = []
    for p, (a, b) in pairs.items():
        runs += [run(p, "no-skill", 1, musts(a)), run(p, "no-skill-b", 1, musts(b))]
    s = summarize_week(write_runs(tmp_path / "w", runs), write=False)
    aa = s.data["aa"]
    assert aa is not None and aa["comparison"] == "no-skill-b − no-skill"
    m = aa["models"]["sonnet"]
    d = np.array([1 / 3, 0.0, -1 / 3, 1 / 3])
    assert m["aa_lift"] == pytest.approx(d.mean())
    assert m["aa_se"] == pytest.approx(d.std(ddof=1) / 2)
    assert m["ci_excludes_zero"] is False and aa["false_lift_models"] == 0
    assert (m["false_verdicts"], m["n_prompts"]) == (3, 4)
    assert aa["false_verdict_rate"] == 0.75
    # A week without a with-skill arm by design is not reported as a broken one.
    assert not any("with-skill rows" in p for p in s.problems)
    assert "### A/A week: measured false-lift rate (no-skill-b − no-skill)" in s.markdown
    assert "**75%** of (prompt, model) pairs" in s.markdown
    cells = {(c["model"], c["condition"]) for c in s.data["cells"]}
    assert cells == {("sonnet", "no-skill"), ("sonnet", "no-skill-b")}
