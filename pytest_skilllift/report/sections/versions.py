"""Version comparison: did the edit of the skill help? ``with-skill − with-skill@REF``.

A week with a ``with-skill@REF`` arm runs each prompt with its family as it is and as it was at
REF, in the same week, paired by prompt, judged blind — so the answer is not mixed with a
model build or docs drift across weeks (docs/versions.md). Per model: the must-coverage
difference ± paired SE with its 95% t interval, the one-vote-per-prompt sign test (the lift
section's Vally rule, with the current version in the with-skill seat), per prompt improved /
regressed / within rep noise / unchanged by ``skilllift compare``'s rule (composite, reps
averaged, beyond the margin and the prompt's own rep noise; an errored side is unscored), Δcost
and Δturns; with a no-skill arm too, both lifts.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, TypedDict

import numpy as np

from pytest_skilllift.model import ARMS, NO_SKILL, WITH_REF, WITH_SKILL
from pytest_skilllift.report import stats, verdicts
from pytest_skilllift.report.context import json_float
from pytest_skilllift.report.markdown import by_agent, cap_note, ci_flag, fmt, md_table, signed
from pytest_skilllift.report.sections.baseline import _strings as baseline_strings
from pytest_skilllift.report.sections.provenance import recorded_revision
from pytest_skilllift.report.verdicts import (
    CHANGE_MARGIN,
    CHANGES,
    IMPROVED,
    REGRESSED,
    UNCHANGED,
    UNSCORED,
    WITHIN_REP_NOISE,
    prompt_change,
)
from pytest_skilllift.week.files import STATUS_OK

if TYPE_CHECKING:
    from pytest_skilllift.report.context import Context

_NO, _WITH, _REF = ARMS.index(NO_SKILL), ARMS.index(WITH_SKILL), ARMS.index(WITH_REF)
MAX_ROWS = 50


class VersionModel(TypedDict):
    """``versions.models.<label>``: the current version against REF, paired by prompt."""

    must_ref: float | None
    must_with: float | None
    #: with-skill − with-skill@REF (>0: the edit helped).
    version_lift: float | None
    version_lift_se: float | None
    ci_low: float | None
    ci_high: float | None
    ci_excludes_zero: bool | None
    n_prompts: int
    sign_test: verdicts.SignTestData
    #: Per-prompt changes (compare's rule): improved / regressed / within rep noise /
    #: unchanged / unscored.
    prompts: dict[str, int]
    cost_delta: float | None
    turns_delta: float | None
    #: Δcost and Δturns paired by prompt (per-prompt run means now − REF): mean, SE, n, and
    #: whether the 95% t interval excludes 0 (None: not estimable).
    cost_delta_paired: dict[str, float | int | bool | None]
    turns_delta_paired: dict[str, float | int | bool | None]
    #: With a no-skill arm: with-skill − no-skill and with-skill@REF − no-skill.
    lift_with: float | None
    lift_ref: float | None


class VersionPrompt(TypedDict):
    """One prompt's must coverage at the reference revision and now, and the change."""
    prompt: str
    model: str
    ref: float | None
    current: float | None
    change: str


class Versions(TypedDict):
    #: The arm as the week writes it (``with-skill@HEAD~1``).
    """The edit's comparison (``with-skill − with-skill@REF``): the arm, its revision, the
    prompts."""
    arm: str
    ref: str
    #: week.json's record of the revision (kind, commit, tree), or None.
    revision: dict[str, str] | None
    #: with-skill@REF runs copied from another week (``--skill-lift-baseline-from``), and
    #: the weeks they came from: their answers are that week's, not this one's.
    reused_ref_runs: int
    reused_from: list[str]
    margin: float
    models: dict[str, VersionModel]
    prompts: list[VersionPrompt]


class Data(TypedDict):
    """The Version comparison section's keys in scorecard.json."""
    versions: Versions | None


def _delta(a: float, b: float) -> float | None:
    return None if math.isnan(a) or math.isnan(b) else float(b - a)


def build(ctx: Context) -> Data:
    """The Version comparison section's scorecard.json keys, from the week's numbers."""
    agg, week, f = ctx.agg, ctx.week, json_float
    arm = week.ref_condition
    if agg is None or arm is None or agg.must.shape[2] <= _REF:
        return {"versions": None}
    measures = ctx.shared(verdicts.measures_of)
    # compare's rule: a move beyond the margin and beyond the prompt's own rep noise (the
    # moderated per-prompt test, Holm-corrected); each rep scored on its graded items, one
    # without a graded must item dropped (``report.verdicts``' one rule).
    reps = agg.rep_composite[:, :, [_REF, _WITH], :]
    sc = week.scores
    alarm = stats.regression_alarm(np.moveaxis(reps[:, :, 0], 1, 0),
                                   np.moveaxis(reps[:, :, 1], 1, 0),
                                   n_items=stats.must_items(sc.prompt, sc.model, sc.cond,
                                                            sc.rep, sc.type,
                                                            len(week.prompts)))
    w = ctx.week
    mf = w.manifest
    ok = mf.status == STATUS_OK
    cost, turns = ctx.run_column("total_cost_usd"), ctx.run_column("num_turns")
    P, M, C = len(week.prompts), len(week.models), len(ARMS)
    per_cost = stats.prompt_run_means(cost, mf.prompt, mf.model, mf.cond, ok, P, M, C)
    per_turns = stats.prompt_run_means(turns, mf.prompt, mf.model, mf.cond,
                                       ok & ~np.isnan(cost), P, M, C)
    reused = mf.reused if mf.reused.size == w.n_runs else np.zeros(w.n_runs, bool)
    reused_ref = reused & (mf.cond == _REF)
    sources = sorted(set(baseline_strings(mf.baseline_from, np.flatnonzero(reused_ref))) - {""})
    models: dict[str, VersionModel] = {}
    rows: list[VersionPrompt] = []
    for mi, label in enumerate(week.models):
        ref, cur = agg.must[:, mi, _REF], agg.must[:, mi, _WITH]
        lf = stats.paired_lift(ref, cur)
        if lf.n == 0:
            continue
        counts = dict.fromkeys(CHANGES, 0)
        for pi, prompt in enumerate(week.prompts):
            before = _composite(ctx, measures, pi, mi, _REF)
            after = _composite(ctx, measures, pi, mi, _WITH)
            if before is None and after is None:
                arms = [_REF, _WITH]
                ran = int((measures.scored[pi, mi, arms] + measures.errored[pi, mi, arms]
                           + measures.unscored[pi, mi, arms]).sum())
                if not ran:
                    continue  # the prompt was not run for this model: not part of it
                # run but dropped on both sides (errored or unscored): counted and named
                # as unscored, never left out in silence
            change = prompt_change(before, after, CHANGE_MARGIN,
                                   bool(alarm.regressed[mi, pi]), bool(alarm.improved[mi, pi]))
            counts[change] += 1
            rows.append({"prompt": prompt, "model": label, "ref": before, "current": after,
                         "change": change})
        has_no = bool(agg.cell_n[mi, _NO] > 0)
        models[label] = {
            "must_ref": f(agg.cell_must[mi, _REF]), "must_with": f(agg.cell_must[mi, _WITH]),
            "version_lift": f(lf.lift), "version_lift_se": f(lf.se),
            "ci_low": f(lf.ci_low), "ci_high": f(lf.ci_high),
            "ci_excludes_zero": lf.ci_excludes_zero, "n_prompts": lf.n,
            "sign_test": verdicts.sign_test(ref, cur).to_json(),
            "prompts": counts,
            "cost_delta": _delta(ctx.cost_mean[mi, _REF], ctx.cost_mean[mi, _WITH]),
            "turns_delta": _delta(ctx.turns_mean[mi, _REF], ctx.turns_mean[mi, _WITH]),
            "cost_delta_paired": _paired(per_cost[:, mi, _REF], per_cost[:, mi, _WITH]),
            "turns_delta_paired": _paired(per_turns[:, mi, _REF], per_turns[:, mi, _WITH]),
            "lift_with": f(stats.paired_lift(agg.must[:, mi, _NO], cur).lift) if has_no else None,
            "lift_ref": f(stats.paired_lift(agg.must[:, mi, _NO], ref).lift) if has_no else None,
        }
    order = {REGRESSED: 0, IMPROVED: 1, WITHIN_REP_NOISE: 2, UNSCORED: 3, UNCHANGED: 4}
    rows.sort(key=lambda r: (order[r["change"]], r["prompt"], r["model"]))
    return {"versions": {"arm": arm, "ref": arm.partition("@")[2],
                         "revision": recorded_revision(ctx),
                         "reused_ref_runs": int(reused_ref.sum()), "reused_from": sources,
                         "margin": CHANGE_MARGIN,
                         "models": models, "prompts": rows}}


def _paired(ref: np.ndarray, now: np.ndarray) -> dict[str, float | int | bool | None]:
    lf = stats.paired_lift(ref, now)
    return {"mean": json_float(lf.lift), "se": json_float(lf.se), "n_prompts": lf.n,
            "ci_excludes_zero": lf.ci_excludes_zero}


def _delta_text(value: float | None, p: dict[str, float | int | bool | None] | None,
                nd: int) -> str:
    """``+0.0200 ± 0.0041 (≠ 0: no)``: the Δ with its paired SE and the t interval's flag."""
    if p is None or p.get("se") is None:
        return signed(value, nd)
    flag = ("not estimable" if p.get("ci_excludes_zero") is None
            else "yes" if p["ci_excludes_zero"] else "no")
    se = p["se"]
    return f"{signed(value, nd)} ± {fmt(float(se) if se is not None else None, nd)} (≠ 0: {flag})"


def _composite(ctx: Context, measures: verdicts.WeekMeasures, pi: int, mi: int,
               c: int) -> float | None:
    """The prompt's composite in arm ``c`` (its scored reps averaged, each on its graded
    items); None when no rep of it was scored."""
    agg = ctx.agg
    if agg is None:
        return None
    v = float(agg.composite[pi, mi, c])
    return v if math.isfinite(v) else None


def render(card: Data) -> list[str]:
    """The Version comparison section of scorecard.md, as markdown lines."""
    v = card.get("versions")
    if not v:
        return []
    rev = v["revision"] or {}
    where = (f"commit `{rev.get('commit', '')[:12]}`, tree `{rev.get('tree', '')[:12]}`"
             if rev.get("kind") == "git" else
             f"directory, content `{rev.get('tree', '')[:12]}`" if rev else "not recorded")
    L = [f"## Version comparison (with-skill − {v['arm']})\n",
         f"`{v['arm']}`: the prompt's family as it was at `{v['ref']}` ({where}), installed "
         "and judged exactly like with-skill, in this week, paired by prompt.\n"]
    if v.get("reused_ref_runs"):
        L.append(f"**{v['reused_ref_runs']} `{v['arm']}` run(s) reused** from "
                 + (", ".join(f"`{x}`" for x in v.get("reused_from", [])) or "another week")
                 + ": their answers were generated in that week, not this one, so the version "
                 "comparison is partly across weeks.\n")
    rows = []
    for label, m in v["models"].items():
        st, pc = m["sign_test"], m["prompts"]
        rows.append([
            label, f"{fmt(m['must_ref'])} → {fmt(m['must_with'])}",
            f"{signed(m['version_lift'])} ± {fmt(m['version_lift_se'])}",
            ci_flag({"must_lift_se": m["version_lift_se"],
                     "ci_excludes_zero": m["ci_excludes_zero"]}),
            f"{st['wins']} / {st['ties']} / {st['losses']} → **{st['verdict']}**",
            f"{pc[IMPROVED]} / {pc[REGRESSED]} / {pc[WITHIN_REP_NOISE]} / {pc[UNCHANGED]} / "
            f"{pc[UNSCORED]}",
            _delta_text(m["cost_delta"], m.get("cost_delta_paired"), 4),
            _delta_text(m["turns_delta"], m.get("turns_delta_paired"), 2),
            (f"{signed(m['lift_ref'])} → {signed(m['lift_with'])}"
             if m["lift_with"] is not None else "no no-skill arm"),
            m["n_prompts"]])
    L += md_table(*by_agent(card, ["model", "must_coverage REF → now", "version lift ± SE",
                                   "95% CI != 0?",
                   "votes w / t / l → verdict",
                   "improved / regressed / within rep noise / unchanged / unscored",
                   "Δcost $", "Δturns", "lift vs no-skill REF → now", "n"], rows))
    L.append(f"\n_Version lift = with-skill − {v['arm']} must coverage, paired by prompt "
             "(>0: the edit helped; gate `version_lift_ci_low>-0.05`: the edit did not make "
             "it worse). Votes: one per prompt, as the lift's sign test. Per prompt: "
             "`skilllift compare`'s rule on the composite (reps averaged): improved or "
             "regressed only beyond its own rep noise after the Holm correction, else within "
             "rep noise (always so with one rep); an errored side is unscored._\n")
    moved = [r for r in v["prompts"] if r["change"] in (IMPROVED, REGRESSED, WITHIN_REP_NOISE)]
    if moved:
        shown = moved[:MAX_ROWS]
        L += md_table(*by_agent(card, ["prompt", "model", "composite REF → now", "change"],
                      [[r["prompt"], r["model"], f"{fmt(r['ref'])} → {fmt(r['current'])}",
                        r["change"]] for r in shown]))
        L += cap_note(len(shown), len(moved), "changed prompts")
        L.append("")
    unscored = [r for r in v["prompts"] if r["change"] == UNSCORED]
    if unscored:
        names = [f"{r['prompt']} ({r['model']})" for r in unscored[:MAX_ROWS]]
        L.append(f"Unscored in the version comparison ({len(unscored)}: an arm with no score, "
                 "or an item the judge left ungraded): " + ", ".join(names)
                 + (f", … {len(unscored) - len(names)} more (all in `scorecard.json`)"
                    if len(unscored) > len(names) else "") + "\n")
    return L
