"""Noise floor, measured: the split-half A/A of every week with k ≥ 2 reps, and the explicit A/A
arm (``--skill-lift-aa``: ``no-skill-b`` against ``no-skill``) with its false-lift rate.

The lift's ± SE (qdrant/skills SCORING.md) is a formula; these are the same comparison made
where no skill differs, so the scorecard shows how often "nothing" looks like a lift.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

import numpy as np

from pytest_skilllift.model import ARMS, NO_SKILL, NO_SKILL_B
from pytest_skilllift.report import noise, stats
from pytest_skilllift.report.context import json_float
from pytest_skilllift.report.markdown import by_agent, fmt, md_table, signed
from pytest_skilllift.trace.audit import IMPACT_THRESHOLD

if TYPE_CHECKING:
    from pytest_skilllift.report.context import Context
    from pytest_skilllift.report.sections import versions, withall

SPLIT_HALF = "split-half no-skill reps"
_NO, _B = ARMS.index(NO_SKILL), ARMS.index(NO_SKILL_B)


class NoiseFloor(TypedDict):
    """``noise_floor.<label>``: the no-skill arm's even reps against its odd reps."""

    method: str
    #: mean over prompts of dᵢ = mean(even reps) − mean(odd reps), must coverage.
    aa_lift: float | None
    aa_se: float | None
    n_prompts: int
    #: This week's must-lift SE and the t·SE bar of its "95% CI ≠ 0?" flag (None: no lift).
    lift_se: float | None
    t_threshold: float | None
    #: Whether this week's |A/A| exceeds the lift SE.
    exceeds_lift_se: bool | None
    #: Over the choices of which half is "A" per prompt: share with |A/A| > SE, > t·SE.
    exceeds_lift_se_rate: float | None
    exceeds_t_threshold_rate: float | None
    #: "exact" (every choice enumerated) or "monte carlo" (seeded draws).
    splits: str
    #: The same two rates in honest weeks simulated under this week's own rep noise and
    #: prompt means (``noise.simulated_reference``): what an honest SE gives here.
    reference_se_rate: float | None
    reference_t_rate: float | None
    reference_sims: int


class AAModel(TypedDict):
    """One model's A/A: ``no-skill-b − no-skill``, paired by prompt like a lift."""

    aa_lift: float | None
    aa_se: float | None
    ci_low: float | None
    ci_high: float | None
    #: True is a false lift: the CI excludes zero though both arms are the same.
    ci_excludes_zero: bool | None
    n_prompts: int
    #: Prompts with |Δ| ≥ the impact threshold (the audit would call them helped / hurt).
    false_verdicts: int
    false_verdict_rate: float | None


class AAWeek(TypedDict):
    """One A/A comparison of the week: per model, and how often it would call a false lift."""
    comparison: str
    models: dict[str, AAModel]
    #: Models whose A/A CI excludes zero, of the models with an A/A SE.
    false_lift_models: int
    models_with_se: int
    #: Over every (prompt, model): share called helped / hurt by |Δ| ≥ impact_threshold.
    false_verdict_rate: float | None
    impact_threshold: float


class Data(TypedDict):
    """The Noise floor section's keys in scorecard.json."""
    noise_floor: dict[str, NoiseFloor]
    aa: AAWeek | None


if TYPE_CHECKING:
    class Reads(Data, versions.Data, withall.Data):
        """What ``terminal_lines`` reads of the scorecard: these keys, with-all's and versions'."""


def build(ctx: Context) -> Data:
    """The Noise floor section's scorecard.json keys, from the week's numbers."""
    agg, f = ctx.agg, json_float
    floor: dict[str, NoiseFloor] = {}
    aa: AAWeek | None = None
    if agg is None:
        return {"noise_floor": floor, "aa": aa}
    for mi, label in enumerate(ctx.week.models):
        sh = noise.split_half(agg.rep_must[:, mi, _NO, :], agg.rep_values)
        if sh.n_prompts < 2:
            continue  # one rep per arm (or one prompt): no split-half to make
        lf = ctx.lifts.get(label)
        se = lf.se if lf is not None else None
        bar = lf.t_crit * lf.se if lf is not None and lf.se is not None and lf.t_crit else None
        rates, exact = noise.exceed_rates(sh.d, {"se": se, "t": bar})
        ref = noise.simulated_reference(agg.rep_must[:, mi, _NO, :],
                                        agg.rep_must[:, mi, ARMS.index("with-skill"), :],
                                        agg.rep_values)
        floor[label] = {
            "method": SPLIT_HALF, "aa_lift": f(sh.aa_lift), "aa_se": f(sh.aa_se),
            "n_prompts": sh.n_prompts, "lift_se": f(se), "t_threshold": f(bar),
            "exceeds_lift_se": (None if se is None or sh.aa_lift is None
                                else abs(sh.aa_lift) > se),
            "exceeds_lift_se_rate": rates["se"], "exceeds_t_threshold_rate": rates["t"],
            "splits": "exact" if exact else "monte carlo",
            "reference_se_rate": ref.se_rate, "reference_t_rate": ref.t_rate,
            "reference_sims": ref.sims,
        }
    if agg.must.shape[2] > _B and np.any(agg.cell_n[:, _B] > 0):
        models: dict[str, AAModel] = {}
        false_lifts = with_se = hits = total = 0
        for mi, label in enumerate(ctx.week.models):
            no, b = agg.must[:, mi, _NO], agg.must[:, mi, _B]
            lf = stats.paired_lift(no, b)
            k, n = noise.false_verdict_rate(b - no, IMPACT_THRESHOLD)
            if lf.n == 0:
                continue
            models[label] = {
                "aa_lift": f(lf.lift), "aa_se": f(lf.se), "ci_low": f(lf.ci_low),
                "ci_high": f(lf.ci_high), "ci_excludes_zero": lf.ci_excludes_zero,
                "n_prompts": lf.n, "false_verdicts": k,
                "false_verdict_rate": k / n if n else None,
            }
            with_se += lf.se is not None
            false_lifts += bool(lf.ci_excludes_zero)
            hits, total = hits + k, total + n
        aa = {"comparison": f"{NO_SKILL_B} − {NO_SKILL}", "models": models,
              "false_lift_models": false_lifts, "models_with_se": with_se,
              "false_verdict_rate": hits / total if total else None,
              "impact_threshold": IMPACT_THRESHOLD}
    return {"noise_floor": floor, "aa": aa}


def _rate(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.0%}"


def render(card: Data) -> list[str]:
    """The Noise floor section of scorecard.md, as markdown lines."""
    floor, aa = card.get("noise_floor", {}), card.get("aa")
    if not floor and aa is None:
        return []
    L = ["## Noise floor (A/A)\n"]
    if floor:
        rows = []
        for label, nf in floor.items():
            exceeds = nf["exceeds_lift_se"]
            rows.append([label, f"{signed(nf['aa_lift'])} ± {fmt(nf['aa_se'])}", nf["n_prompts"],
                         fmt(nf["lift_se"]), fmt(nf["t_threshold"]),
                         "n/a" if exceeds is None else ("yes" if exceeds else "no"),
                         f"{_rate(nf['exceeds_lift_se_rate'])} "
                         f"(honest: {_rate(nf.get('reference_se_rate'))})",
                         f"{_rate(nf['exceeds_t_threshold_rate'])} "
                         f"(honest: {_rate(nf.get('reference_t_rate'))})"])
        L += md_table(*by_agent(card, ["model", "split-half A/A ± SE", "n", "lift SE", "t·SE",
                       "|A/A| > SE?", "splits > SE", "splits > t·SE"], rows))
        sims = max((nf.get("reference_sims", 0) for nf in floor.values()), default=0)
        L.append(
            "\n_Split-half A/A at no extra cost: per prompt, the no-skill arm's even reps "
            "minus its odd reps (must coverage), paired by prompt like a lift. Nothing differs "
            "between the halves, so it is what rerunning the same arm looks like. 'splits' "
            "counts every choice of which half is A per prompt. 'honest' is the same share in "
            f"{sims} weeks simulated from this week's own prompt means and rep noise (normal "
            "noise at each arm's pooled rep SD, clipped to [0, 1], seeded), where the SE is "
            "honest by construction: the share depends on how rep noise compares with the "
            "spread of the per-prompt lifts, so there is no fixed rule of thumb. Clearly more "
            "than 'honest' means this week's SE understates its noise, so read small lifts as "
            "noise. Each half averages half the reps, so the A/A carries more rep-to-rep noise "
            "than a lift's arms do._\n")
    if aa is not None:
        L.append(f"### A/A week: measured false-lift rate ({aa['comparison']})\n")
        rows = [[label, f"{signed(m['aa_lift'])} ± {fmt(m['aa_se'])}",
                 "n/a" if m["ci_excludes_zero"] is None else
                 ("yes — a false lift" if m["ci_excludes_zero"] else "no"),
                 f"{m['false_verdicts']} of {m['n_prompts']}"]
                for label, m in aa["models"].items()]
        thr = aa["impact_threshold"]
        L += md_table(*by_agent(card, ["model", "A/A lift ± SE", "95% CI ≠ 0?",
                       f"prompts |Δ| ≥ {thr:.2f}"], rows))
        L.append(
            f"\n- false lifts: **{aa['false_lift_models']} of {aa['models_with_se']}** "
            "models' A/A intervals exclude zero (about 5% expected)")
        L.append(f"- false impact verdicts: **{_rate(aa['false_verdict_rate'])}** of "
                 f"(prompt, model) pairs move by ≥ {thr:.2f} with no skill on either side — "
                 "the share of 'helped' / 'hurt' prompt verdicts this prompt set, these "
                 "models and this judge produce from noise alone")
        L.append("")
    return L


def terminal_lines(card: Reads) -> list[str]:
    """The A/A week's, the with-all arm's and the version comparison's numbers under the
    terminal's lift table."""
    L = []
    aa = card.get("aa")
    if aa is not None:
        for label, m in aa["models"].items():
            flag = ("n/a" if m["ci_excludes_zero"] is None else
                    "yes — a false lift" if m["ci_excludes_zero"] else "no")
            L.append(f"  A/A ({aa['comparison']}) {label}: {signed(m['aa_lift'])} ± "
                     f"{fmt(m['aa_se'])}, 95% CI ≠ 0? {flag}; {m['false_verdicts']} of "
                     f"{m['n_prompts']} prompts move ≥ {aa['impact_threshold']:.2f}")
    wa = card.get("with_all")
    if wa:
        for label, w in wa["models"].items():
            L.append(f"  with-all − no-skill {label}: {signed(w['must_lift'])} ± "
                     f"{fmt(w['must_lift_se'])} (with-all − with-skill "
                     f"{signed(w['vs_with_skill'])}), n {w['n_prompts']}")
    v = card.get("versions")
    if v:
        for label, vm in v["models"].items():
            st, pc = vm["sign_test"], vm["prompts"]
            L.append(f"  with-skill − {v['arm']} {label}: {signed(vm['version_lift'])} ± "
                     f"{fmt(vm['version_lift_se'])}, votes {st['wins']}/{st['ties']}/"
                     f"{st['losses']} → {st['verdict']}; {pc['improved']} improved, "
                     f"{pc['regressed']} regressed, n {vm['n_prompts']}")
    return L
