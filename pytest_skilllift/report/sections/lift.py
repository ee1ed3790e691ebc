"""Lift per model (with-skill − no-skill) and its uncertainty detail.

The lift table follows qdrant/skills SCORING.md ("Skill Lift Scorecard"): must-coverage no →
with, the paired lift ± one within-week SE, whether the 95% t interval excludes zero, and the
deltas of bonus, avoid, cost and turns.  Beyond it: a paired bootstrap interval beside the t
interval, the minimum detectable lift at this week's n, and one vote per prompt (the exact
one-sided sign test, dotnet/skills' Vally rule) with its verdict (helps / no change / hurts /
underpowered, ``report.verdicts``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, TypedDict

import numpy as np

from pytest_skilllift.intervals import EPS
from pytest_skilllift.report import stats, verdicts
from pytest_skilllift.report.context import BOOTSTRAP_N, BOOTSTRAP_SEED, TARGET_LIFT, json_float
from pytest_skilllift.report.markdown import by_agent, ci_flag, fmt, md_table, signed
from pytest_skilllift.week.files import STATUS_OK

if TYPE_CHECKING:
    from pytest_skilllift.report.context import Context


class ModelLift(TypedDict):
    """``models.<label>``: one model's lift and everything needed to trust it."""

    must_no: float | None
    must_with: float | None
    must_lift: float | None
    must_lift_se: float | None
    ci_excludes_zero: bool | None
    n_prompts: int
    ci_low: float | None
    ci_high: float | None
    t_crit: float | None
    df: int | None
    sd: float | None
    low_sample: bool
    bonus_delta: float | None
    avoid_delta: float | None
    composite_lift: float | None
    cost_delta: float | None
    turns_delta: float | None
    #: Δcost / Δturns paired by prompt (per-prompt mean with − no over ok runs): its mean,
    #: ± SE and whether the 95% t interval excludes zero, like the lift.
    cost_delta_paired: PairedDelta
    turns_delta_paired: PairedDelta
    bootstrap_low: float | None
    bootstrap_high: float | None
    bootstrap_excludes_zero: bool | None
    min_detectable_lift: float | None
    prompts_needed_for_target: int | None
    #: The exact sign test over prompts next to the t interval, with its verdict.
    sign_test: verdicts.SignTestData
    #: Share of completed with-skill runs that never reached the skill (None: no activation
    #: recorded), and its 95% interval resampling whole prompts.
    trigger_miss_rate: float | None
    trigger_miss_rate_cluster95: list[float | None]


class PairedDelta(TypedDict):
    """A per-prompt paired difference: its mean, standard error and whether its CI excludes 0."""
    mean: float | None
    se: float | None
    n_prompts: int
    ci_excludes_zero: bool | None


class BootstrapModel(TypedDict):
    """One model's bootstrap interval of the lift, with its Monte Carlo error."""
    low: float | None
    high: float | None
    excludes_zero: bool | None
    #: Monte Carlo standard error of the endpoints, and the decimals it supports.
    mc_se: float | None
    digits: int
    #: Whether the bootstrap and the t interval agree on "excludes zero" (None: unknown).
    agrees_with_t: bool | None


class BootstrapSummary(TypedDict):
    """The bootstrap intervals of the lift: their settings and one per model."""
    n_boot: int
    seed: int
    level: float
    method: str
    per_model: dict[str, BootstrapModel]


class MdlModel(TypedDict):
    """One model's minimum detectable lift and the prompts a target lift needs."""
    min_detectable_lift: float | None
    n_prompts: int
    sd: float | None
    prompts_needed: int | None


class MdlSummary(TypedDict):
    """The minimum detectable lift: its power, alpha and target, and one per model."""
    power: float
    alpha: float
    two_sided: bool
    target_lift: float
    per_model: dict[str, MdlModel]


class Data(TypedDict):
    """The Lift section's keys in scorecard.json."""
    models: dict[str, ModelLift]
    bootstrap: BootstrapSummary
    mdl: MdlSummary


def build(ctx: Context) -> Data:
    """The Lift section's scorecard.json keys, from the week's numbers."""
    agg, f = ctx.agg, json_float
    models: dict[str, ModelLift] = {}
    mdl: dict[str, MdlModel] = {}
    boot_out: dict[str, BootstrapModel] = {}
    measures = ctx.shared(verdicts.measures_of)
    paired = ctx.shared(_run_deltas)
    for mi, label in enumerate(ctx.week.models):
        lf = ctx.lifts.get(label)
        if agg is None or lf is None:
            continue
        bs = ctx.boots[label]
        hr = ctx.hist_rows[mi]
        m_mdl = stats.min_detectable_lift(lf.sd, lf.n)
        n_need = stats.prompts_needed(lf.sd, TARGET_LIFT)
        sign = verdicts.sign_test(agg.must[:, mi, 0], agg.must[:, mi, 1])
        models[label] = {
            "must_no": f(agg.cell_must[mi, 0]), "must_with": f(agg.cell_must[mi, 1]),
            "must_lift": f(lf.lift), "must_lift_se": f(lf.se),
            "ci_excludes_zero": lf.ci_excludes_zero, "n_prompts": lf.n,
            "ci_low": f(lf.ci_low), "ci_high": f(lf.ci_high), "t_crit": f(lf.t_crit),
            "df": lf.df, "sd": f(lf.sd), "low_sample": lf.low_sample,
            "bonus_delta": f(stats.paired_mean_delta(agg.bonus[:, mi, 0], agg.bonus[:, mi, 1])),
            "avoid_delta": f(stats.paired_mean_delta(agg.avoid[:, mi, 0], agg.avoid[:, mi, 1])),
            "composite_lift": f(hr.composite_lift),
            "cost_delta": f(hr.cost_delta), "turns_delta": f(hr.turns_delta),
            "cost_delta_paired": _paired_delta(paired["cost"], mi),
            "turns_delta_paired": _paired_delta(paired["turns"], mi),
            "bootstrap_low": f(bs.low), "bootstrap_high": f(bs.high),
            "bootstrap_excludes_zero": bs.excludes_zero,
            "min_detectable_lift": f(m_mdl), "prompts_needed_for_target": n_need,
            "sign_test": sign.to_json(),
            "trigger_miss_rate": verdicts.trigger_miss_rate(measures, label),
            "trigger_miss_rate_cluster95": [f(x) for x in measures.trigger_miss_cluster(label)],
        }
        boot_out[label] = {"low": f(bs.low), "high": f(bs.high),
                           "excludes_zero": bs.excludes_zero, "mc_se": f(bs.mc_se),
                           "digits": stats.digits_for(bs.mc_se),
                           "agrees_with_t": (None if bs.excludes_zero is None
                                             or lf.ci_excludes_zero is None
                                             else bs.excludes_zero == lf.ci_excludes_zero)}
        mdl[label] = {"min_detectable_lift": f(m_mdl), "n_prompts": lf.n, "sd": f(lf.sd),
                      "prompts_needed": n_need}
    return {
        "models": models,
        "bootstrap": {"n_boot": BOOTSTRAP_N, "seed": BOOTSTRAP_SEED, "level": 0.95,
                      "method": "percentile, paired, resampling prompts",
                      "per_model": boot_out},
        "mdl": {"power": 0.80, "alpha": 0.05, "two_sided": True,
                "target_lift": TARGET_LIFT, "per_model": mdl},
    }


def _run_deltas(ctx: Context) -> dict[str, np.ndarray]:
    """Per-prompt mean cost and turns (P, M, C) over the runs the cell means use: ok runs
    with a cost (turns likewise, as the reference counts them)."""
    w = ctx.week
    cost, turns = ctx.run_column("total_cost_usd"), ctx.run_column("num_turns")
    ok = w.manifest.status == STATUS_OK
    P, M = len(w.prompts), len(w.models)
    return {
        "cost": stats.prompt_run_means(cost, w.manifest.prompt, w.manifest.model, w.manifest.cond,
                                       ok, P, M),
        "turns": stats.prompt_run_means(turns, w.manifest.prompt, w.manifest.model, w.manifest.cond,
                                        ok & ~np.isnan(cost), P, M),
    }


def _paired_delta(per_prompt: np.ndarray, mi: int) -> PairedDelta:
    lf = stats.paired_lift(per_prompt[:, mi, 0], per_prompt[:, mi, 1])
    return {"mean": json_float(lf.lift), "se": json_float(lf.se), "n_prompts": lf.n,
            "ci_excludes_zero": lf.ci_excludes_zero}


def _delta_cell(value: float | None, p: PairedDelta | None, nd: int, se_nd: int) -> str:
    """``+0.0265 ± 0.0041 (≠ 0: yes)``: the reference's Δ with its paired SE and CI flag."""
    if p is None or p.get("se") is None:
        return signed(value, nd)
    flag = "yes" if p["ci_excludes_zero"] else "no"
    return f"{signed(value, nd)} ± {fmt(p['se'], se_nd)} (≠ 0: {flag})"


def render(card: Data) -> list[str]:
    """The Lift section of scorecard.md, as markdown lines."""
    L = ["## Lift per model (with-skill − no-skill)\n"]
    models = card.get("models", {})
    if not models:
        L.append("_No lift could be computed: the week needs scored prompts in both arms "
                 "(see Input problems)._\n")
        return L

    def nonzero(values: Iterable[float | None]) -> bool:
        return any(v is not None and abs(v) > EPS for v in values)

    show_bonus = nonzero(m.get("bonus_delta") for m in models.values())
    show_avoid = nonzero(m.get("avoid_delta") for m in models.values())
    headers = ["model", "must_coverage no→with", "must lift ± SE", "95% CI != 0?"]
    headers += ["Δbonus"] if show_bonus else []
    headers += ["Δavoid"] if show_avoid else []
    headers += ["Δcost ($)", "Δturns"]
    rows = []
    for label, m in models.items():
        se = fmt(m["must_lift_se"]) if m.get("must_lift_se") is not None else "n/a"
        row = [label, f"{fmt(m['must_no'])} → {fmt(m['must_with'])}",
               f"{signed(m['must_lift'])} ± {se}", ci_flag(m)]
        if show_bonus:
            row.append(signed(m.get("bonus_delta")))
        if show_avoid:
            row.append(signed(m.get("avoid_delta"), 2))
        row += [_delta_cell(m.get("cost_delta"), m.get("cost_delta_paired"), 4, 4),
                _delta_cell(m.get("turns_delta"), m.get("turns_delta_paired"), 1, 1)]
        rows.append(row)
    L += md_table(*by_agent(card, headers, rows))
    L.append(
        "\n_± SE is one within-week standard error of the paired per-prompt must-coverage "
        "lift — this week's sampling uncertainty (finite prompt set + run/judge noise), "
        "**not** between-week drift. '≠ 0?' asks whether the 95% CI (t·SE) excludes zero: "
        "'no' means don't act on this lift yet. Δbonus/Δavoid appear only when the skill "
        "changed bonus depth or introduced/removed a violation. Δcost/Δturns are "
        "within-model only; negative = cheaper/sooner; their ± SE is paired by prompt like "
        "the lift's (per-prompt mean with − no), and '≠ 0' asks whether its 95% t interval "
        "excludes zero. Note: turns counts all "
        "conversation messages, including tool-result messages, not just the model's "
        "own turns. Reported, not gated._\n")
    return L + _uncertainty(card) + _sign_test(card)


def _uncertainty(card: Data) -> list[str]:
    """Beyond the reference: how sure, by two methods, and whether n can answer the question."""
    models = card["models"]
    boot = card.get("bootstrap", {})
    mdl = card.get("mdl", {})
    L = ["### Uncertainty detail\n"]
    rows = []
    clipped: list[str] = []
    for label, m in models.items():
        t_ci = "n/a"
        if m.get("ci_low") is not None:
            lo, hi, clip = clip_interval(m.get("ci_low"), m.get("ci_high"))
            t_ci = (f"[{signed(lo)}, {signed(hi)}]{'*' if clip else ''} "
                    f"(t={fmt(m.get('t_crit'))}, df={m.get('df')})")
            if clip:
                clipped.append(f"{label}: [{signed(m.get('ci_low'))}, "
                               f"{signed(m.get('ci_high'))}]")
        per = boot.get("per_model", {}).get(label)
        d = int(per["digits"]) if per is not None and "digits" in per else 3
        b_ci = (f"[{signed(m.get('bootstrap_low'), d)}, {signed(m.get('bootstrap_high'), d)}]"
                if m.get("bootstrap_low") is not None else "n/a")
        need = m.get("prompts_needed_for_target")
        no_spread = " (dᵢ all equal)" if m.get("sd") == 0 else ""
        rows.append([label, m["n_prompts"], t_ci, b_ci,
                     mdl_text(m.get("min_detectable_lift"), m["n_prompts"]) + no_spread,
                     ("n/a" if need is None else str(need)) + no_spread])
    target = fmt(mdl.get("target_lift", 0.10), 2)
    L += md_table(*by_agent(card, ["model", "n prompts", "95% CI (exact t)",
                                   f"95% CI (paired bootstrap, {boot.get('n_boot', '?')}×)",
                                   "min detectable lift", f"prompts needed for {target}"], rows))
    mc = [x for v in boot.get("per_model", {}).values() if (x := v.get("mc_se")) is not None]
    mc_note = (f" Printed to the digits that at least 90% of reprints with another seed "
               f"reproduce (Monte Carlo SE of the endpoints: {max(mc):.4f} at "
               f"{boot.get('n_boot')} resamples)." if mc else "")
    L.append(f"\n_Paired bootstrap over prompts, seed {boot.get('seed')}, percentile interval."
             f"{mc_note} Minimum detectable lift: the smallest true lift a two-sided 5% paired "
             "t-test detects with 80% power at this week's n and spread of dᵢ; the last "
             f"column is how many prompts that test needs to detect a lift of {target}._\n")
    if clipped:
        L.append("_* clipped to [−1, 1], the range a lift can take; as computed: "
                 + "; ".join(clipped) + " (a t interval on few or spread prompts can "
                 "run past the range)._\n")
    notes = []
    for label, m in models.items():
        if m.get("low_sample"):
            notes.append(f"- ⚠ **low sample** for {label}: only {m['n_prompts']} paired "
                         "prompt(s) (fewer than 5) — the SE and CI are unreliable.")
        b = boot.get("per_model", {}).get(label)
        if b is not None and b.get("agrees_with_t") is False:
            t_says = "excludes" if m.get("ci_excludes_zero") else "includes"
            b_says = "excludes" if b.get("excludes_zero") else "includes"
            notes.append(f"- ⚠ for {label} the t interval {t_says} zero but the bootstrap "
                         f"interval {b_says} it — treat the '≠ 0?' flag as borderline.")
    if notes:
        L += [*notes, ""]
    return L


def clip_interval(lo: float | None, hi: float | None) -> tuple[float | None, float | None,
                                                               bool]:
    """A lift's interval clipped to [−1, 1], and whether it had to be."""
    if lo is None or hi is None:
        return lo, hi, False
    return max(lo, -1.0), min(hi, 1.0), bool(lo < -1.0 or hi > 1.0)


def mdl_text(mdl: float | None, n: int) -> str:
    """The minimum detectable lift, or why there is none: a lift cannot exceed 1."""
    if mdl is not None and mdl > 1.0:
        return f"not detectable with {n} prompts"
    return fmt(mdl)


def _sign_test(card: Data) -> list[str]:
    """One vote per prompt (the Vally rule) next to the paired t interval, per model."""
    rows = []
    for label, m in card["models"].items():
        st = m["sign_test"]
        lo, hi, clip = clip_interval(m.get("ci_low"), m.get("ci_high"))
        t_ci = (f"[{signed(lo)}, {signed(hi)}]" + (" (clipped to [−1, 1])" if clip else "")
                if lo is not None else "n/a")
        p = "n/a" if st["p_value"] is None else f"{st['p_value']:.3g}"
        rows.append([label, st["n_prompts"], f"{st['wins']} / {st['ties']} / {st['losses']}",
                     st["voting"], p, t_ci, f"**{st['verdict']}**", st["reason"]])
    L = ["### One vote per prompt — the sign test\n"]
    L += md_table(*by_agent(card, ["model", "n prompts", "wins / ties / losses", "voting",
                                   "sign p (one-sided)", "95% CI (t)", "verdict", "why"], rows))
    L.append("\n_Each prompt is one vote (its reps averaged first; dotnet/skills' Vally rule): "
             "a win when the with-skill must coverage is higher by more than "
             f"{verdicts.VOTE_EPSILON:g}, a loss when lower by more, else a tie. Exact "
             "one-sided binomial p over the voting prompts. **helps** needs p ≤ "
             f"{verdicts.SIGN_ALPHA}, at least {verdicts.SIGN_MIN_PROMPTS} voting prompts and "
             f"net wins ≥ {verdicts.SIGN_MIN_NET_SHARE:.0%} of prompts; fewer voting prompts "
             "is **underpowered** (never a pass); **hurts** is the same rule for losses._\n")
    return L
