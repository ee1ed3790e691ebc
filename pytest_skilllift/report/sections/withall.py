"""The whole skill set: lift with every family installed (``with-all − no-skill``) beside the
skill's lift alone, and where its siblings cost it (``with-all − with-skill``).

A skill that lifts alone but not among its siblings loses to interference: another family's
description wins the trigger, or two skills' guidance collide.  The invocation audit of the
with-all runs says which: the prompt's own family ``NOT_INVOKED`` there means it was not chosen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

import numpy as np

from pytest_skilllift.model import ARMS, NO_SKILL, WITH_ALL, WITH_SKILL
from pytest_skilllift.report import stats
from pytest_skilllift.report.context import json_float
from pytest_skilllift.report.markdown import by_agent, cap_note, ci_flag, fmt, md_table, signed
from pytest_skilllift.trace.audit import IMPACT_THRESHOLD
from pytest_skilllift.week.columns import INVOCATION_STATUSES
from pytest_skilllift.week.files import COMPLETED, RUN_STATUSES

if TYPE_CHECKING:
    from pytest_skilllift.report.context import Context

_NO, _WITH, _ALL = ARMS.index(NO_SKILL), ARMS.index(WITH_SKILL), ARMS.index(WITH_ALL)
MAX_ROWS = 50


class AllModel(TypedDict):
    """``with_all.models.<label>``: the lift with every family installed."""

    must_no: float | None
    must_all: float | None
    #: with-all − no-skill, paired by prompt (like ``models.<label>.must_lift``).
    must_lift: float | None
    must_lift_se: float | None
    ci_excludes_zero: bool | None
    n_prompts: int
    #: with-all − with-skill: negative = the siblings cost the skill.
    vs_with_skill: float | None
    vs_with_skill_se: float | None
    vs_with_skill_n: int
    #: With-all runs (skill installed) by the audit status of the prompt's own family.
    invocation: dict[str, int]


class Interference(TypedDict):
    """A (prompt, model) whose must coverage drops by ≥ the impact threshold among siblings."""

    prompt: str
    model: str
    must_with: float
    must_all: float
    delta: float


class WithAll(TypedDict):
    """Lift with every family installed, per model, and the skills that interfere."""
    models: dict[str, AllModel]
    interference: list[Interference]
    impact_threshold: float


class Data(TypedDict):
    """The With-all section's keys in scorecard.json."""
    with_all: WithAll | None


def build(ctx: Context) -> Data:
    """The With-all section's scorecard.json keys, from the week's numbers."""
    agg, week, f = ctx.agg, ctx.week, json_float
    if agg is None or agg.must.shape[2] <= _ALL or not np.any(agg.cell_n[:, _ALL] > 0):
        return {"with_all": None}
    n_st = len(INVOCATION_STATUSES)
    completed = [RUN_STATUSES.index(s) for s in sorted(COMPLETED)]  # as the audit counts
    mf = week.manifest
    runs = (mf.cond == _ALL) & np.isin(mf.status, completed) & (mf.invocation >= 0)
    counts = np.bincount(mf.model[runs].astype(np.int64) * n_st + mf.invocation[runs],
                         minlength=len(week.models) * n_st).reshape(len(week.models), n_st)
    models: dict[str, AllModel] = {}
    rows: list[Interference] = []
    for mi, label in enumerate(week.models):
        no, wi, al = agg.must[:, mi, _NO], agg.must[:, mi, _WITH], agg.must[:, mi, _ALL]
        lf = stats.paired_lift(no, al)
        vs = stats.paired_lift(wi, al)
        if lf.n == 0 and vs.n == 0:
            continue
        models[label] = {
            "must_no": f(agg.cell_must[mi, _NO]), "must_all": f(agg.cell_must[mi, _ALL]),
            "must_lift": f(lf.lift), "must_lift_se": f(lf.se),
            "ci_excludes_zero": lf.ci_excludes_zero, "n_prompts": lf.n,
            "vs_with_skill": f(vs.lift), "vs_with_skill_se": f(vs.se), "vs_with_skill_n": vs.n,
            "invocation": dict(zip(INVOCATION_STATUSES, counts[mi].tolist(), strict=True)),
        }
        delta = al - wi
        for p in np.flatnonzero(delta <= -IMPACT_THRESHOLD + 1e-12).tolist():
            rows.append({"prompt": week.prompts[p], "model": label, "must_with": float(wi[p]),
                         "must_all": float(al[p]), "delta": float(delta[p])})
    rows.sort(key=lambda r: (r["delta"], r["prompt"], r["model"]))
    return {"with_all": {"models": models, "interference": rows,
                         "impact_threshold": IMPACT_THRESHOLD}}


def render(card: Data) -> list[str]:
    """The With-all section of scorecard.md, as markdown lines."""
    wa = card.get("with_all")
    if not wa:
        return []
    L = ["## Lift with every family installed (with-all − no-skill)\n"]
    rows = []
    for label, m in wa["models"].items():
        inv = m["invocation"]
        audited = sum(inv.values())
        rows.append([label, f"{fmt(m['must_no'])} → {fmt(m['must_all'])}",
                     f"{signed(m['must_lift'])} ± {fmt(m['must_lift_se'])}", ci_flag(m),
                     f"{signed(m['vs_with_skill'])} ± {fmt(m['vs_with_skill_se'])}",
                     f"{inv.get('NOT_INVOKED', 0)} of {audited}" if audited else "n/a",
                     m["n_prompts"]])
    L += md_table(*by_agent(card, ["model", "must_coverage no→all", "with-all lift ± SE",
                                   "95% CI != 0?",
                   "with-all − with-skill ± SE", "own skill NOT_INVOKED", "n"], rows))
    L.append(
        "\n_with-all installs every family of the skills root, the prompt's own among them. "
        "Its lift is the skill's lift among its siblings; 'with-all − with-skill' is what the "
        "siblings cost (negative) or add. 'own skill NOT_INVOKED' counts with-all runs that "
        "never loaded the prompt's own family: another skill was chosen, or none._\n")
    inter = wa["interference"]
    if inter:
        thr = wa["impact_threshold"]
        shown = inter[:MAX_ROWS]
        L.append(f"Prompts whose must coverage drops by ≥ {thr:.2f} among the siblings:\n")
        L += md_table(*by_agent(card, ["prompt", "model", "with-skill → with-all", "Δ"],
                      [[r["prompt"], r["model"], f"{fmt(r['must_with'])} → {fmt(r['must_all'])}",
                        signed(r["delta"])] for r in shown]))
        L += cap_note(len(shown), len(inter), "interference rows")
        L.append("")
    return L
