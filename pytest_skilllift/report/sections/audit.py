"""Trajectory audit: invocation status per model, top-level-only misuse, skill impact per
prompt (HELPED / HURT / NO-OP) and the cross-model flags (the SkillsBench trajectory audit).

Only a with-skill run that completed (status ``ok`` or ``no_answer``: the CLI ran to its end)
can show whether the skill was reached. An API outage, a timeout, a failed install, a budget
cap or a CLI that never started says nothing about the skill, so such a run is never
``NOT_INVOKED``: it is listed by name as an excluded run instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

import numpy as np

from pytest_skilllift.report.markdown import by_agent, cap_note, cell, md_table, signed
from pytest_skilllift.report.quotes import Quote, verdict_quotes
from pytest_skilllift.report.sections.prompts import prompt_rows
from pytest_skilllift.trace import audit
from pytest_skilllift.week.columns import INVOCATION_STATUSES
from pytest_skilllift.week.files import RUN_STATUSES
from pytest_skilllift.week.tables import distinct

if TYPE_CHECKING:
    from pytest_skilllift.report.context import Context

MAX_HURT_ROWS = 50
#: Excluded runs listed in scorecard.md (all of them are in scorecard.json).
MAX_EXCLUDED_ROWS = 20


class Impact(TypedDict):
    """``audit.impact[]``: one (prompt, model) lift and what it says the skill did."""

    prompt: str
    model: str
    must_lift: float
    #: The SkillsBench outcome by |Δ| alone (helped / hurt / no-op).
    outcome: str
    #: What the data can carry (``audit.impact_label``): the outcome, or "within rep noise"
    #: or "saturated"; and the trial count behind it (the fewer reps of the two arms).
    label: str
    k: int
    #: helped: the unlock quote; hurt: the misled quote (``report.quotes``); no-op: None.
    quote: Quote | None


class ExcludedRun(TypedDict):
    """``audit.excluded_runs[]``: a with-skill run that did not complete, and why."""

    run_id: str
    status: str
    prompt: str
    model: str
    #: The run's own error, else its status.
    reason: str


class Audit(TypedDict):
    #: False when the manifest records no invocation status.
    """The trajectory audit's counts: invocation status per model, top-level-only runs, skill
    impact."""
    available: bool
    #: model → invocation status → with-skill runs.
    invocation: dict[str, dict[str, int]]
    top_level_only_runs: int
    audited_runs: int
    impact_threshold: float
    impact: list[Impact]
    #: model → outcome → prompts.
    impact_counts: dict[str, dict[str, int]]
    reps: int
    flags: list[str]
    #: With-skill runs left out of every count above (see the module docstring).
    excluded_runs: list[ExcludedRun]


class Data(TypedDict):
    """The Trajectory audit section's keys in scorecard.json."""
    audit: Audit


def build(ctx: Context) -> Data:
    """The Trajectory audit section's scorecard.json keys, from the week's numbers."""
    week = ctx.week
    ws = ctx.with_skill_runs
    n_st = len(INVOCATION_STATUSES)
    has_status = ws & (week.manifest.invocation >= 0)

    def tally(group: np.ndarray, names: list[str]) -> dict[str, dict[str, int]]:
        # One bincount over (group, status) pairs: no per-group pass over the runs.
        keep = has_status & (group >= 0)
        counts = np.bincount(group[keep].astype(np.int64) * n_st + week.manifest.invocation[keep],
                             minlength=len(names) * n_st).reshape(len(names), n_st)
        return {names[g]: dict(zip(INVOCATION_STATUSES, counts[g].tolist(), strict=True))
                for g in np.flatnonzero(counts.sum(axis=1)).tolist()}

    invocation = tally(week.manifest.model, list(week.models))
    per_prompt = tally(week.manifest.prompt, list(week.prompts))
    top = ctx.run_column("top_level_only")
    quotes = ctx.shared(verdict_quotes)
    labels_of = ctx.shared(impact_labels)
    impact: list[Impact] = [
        {"prompt": r["prompt"], "model": r["model"], "must_lift": lift,
         "outcome": audit.impact_outcome(lift), "label": labels_of[(r["prompt"], r["model"])],
         "k": min(r["reps_no"], r["reps_with"]), "quote": quotes[(r["prompt"], r["model"])]}
        for r in ctx.shared(prompt_rows) if (lift := r["must_lift"]) is not None]
    outcomes = {label: dict.fromkeys(audit.IMPACT_LABELS, 0) for label in week.models}
    lifts: dict[str, dict[str, float]] = {}
    labels: dict[str, dict[str, str]] = {}
    for r in impact:
        outcomes[r["model"]][r["label"]] += 1
        lifts.setdefault(r["prompt"], {})[r["model"]] = r["must_lift"]
        labels.setdefault(r["prompt"], {})[r["model"]] = r["label"]
    reps = int(distinct(week.manifest.rep[week.manifest.rep >= 0]).size) if week.n_runs else 0
    return {"audit": {
        "available": bool(has_status.any()),
        "invocation": invocation,
        "top_level_only_runs": int(np.count_nonzero(ws & (top == 1))),
        "audited_runs": int(np.count_nonzero(has_status)),
        "impact_threshold": audit.IMPACT_THRESHOLD,
        "impact": impact,
        "impact_counts": outcomes,
        "reps": reps,
        "flags": audit.impact_flags(lifts, per_prompt, labels),
        "excluded_runs": _excluded_runs(ctx),
    }}


def impact_labels(ctx: Context) -> dict[tuple[str, str], str]:
    """``audit.impact_label`` of every (prompt, model) with a lift, from its lift, reps and
    rep ranges (``ctx.shared``: the audit and the suggested improvements read the same
    labels, computed once, in one vectorised pass)."""
    agg, week = ctx.agg, ctx.week
    if agg is None or not week.prompts or not week.models:
        return {}
    lift = agg.must[:, :, 1] - agg.must[:, :, 0]
    valid = np.isfinite(lift)
    ranges = agg.must_max[:, :, :2] - agg.must_min[:, :, :2]
    spread = np.nan_to_num(np.fmax(ranges[:, :, 0], ranges[:, :, 1]), nan=0.0)
    floor = np.nan_to_num(agg.must_min[:, :, :2], nan=0.0) >= 1.0 - 1e-12
    saturated = floor[:, :, 0] & floor[:, :, 1]
    k = np.minimum(agg.n_reps[:, :, 0], agg.n_reps[:, :, 1])
    labels = audit.impact_labels_array(lift[valid], k[valid], spread[valid], saturated[valid])
    pi, mi = np.nonzero(valid)
    return {(week.prompts[p], week.models[m]): str(lab)
            for p, m, lab in zip(pi.tolist(), mi.tolist(), labels.tolist(), strict=True)}


def _excluded_runs(ctx: Context) -> list[ExcludedRun]:
    """Every with-skill run that did not complete: run id, status, prompt, model, reason."""
    week = ctx.week
    rows = np.flatnonzero(ctx.excluded_with_skill)
    if rows.size == 0:
        return []
    ids = week.run_ids(rows.tolist())
    errors = (week.manifest.run_error.take(rows).to_pylist() if week.manifest.run_error is not None
              else [None] * rows.size)
    out: list[ExcludedRun] = []
    for j, r in enumerate(rows.tolist()):
        status = RUN_STATUSES[int(week.manifest.status[r])]
        p, m = int(week.manifest.prompt[r]), int(week.manifest.model[r])
        out.append({
            "run_id": ids[j], "status": status,
            "prompt": week.prompts[p] if p >= 0 else "",
            "model": week.models[m] if m >= 0 else "",
            "reason": str(errors[j] or "").strip() or status,
        })
    return out


def render(card: Data) -> list[str]:
    """The Trajectory audit section of scorecard.md, as markdown lines."""
    a = card.get("audit")
    if not a:
        return []
    L = ["## Trajectory audit — invocation, misuse, skill impact", ""]
    if a["available"]:
        rows = [[m, c["VERIFIED"], c["PARTIAL"], c["NOT_INVOKED"], sum(c.values())]
                for m, c in a["invocation"].items()]
        L += md_table(*by_agent(card, ["model", "VERIFIED", "PARTIAL", "NOT_INVOKED",
                                       "with-skill runs"], rows))
        L += ["", "_VERIFIED: the skill was loaded (Skill tool or a Read of its SKILL.md) and, "
              "where it links sub-files, one was opened; PARTIAL: loaded but no linked file "
              "opened; NOT_INVOKED: installed and never read._", ""]
        L.append(f"- top-level only (read SKILL.md, never opened a linked sub-file): "
                 f"**{a['top_level_only_runs']}** of {a['audited_runs']} audited runs")
    else:
        L.append("- invocation status: not recorded in this week's manifest "
                 "(no `invocation_status` column)")
    thr = a["impact_threshold"]
    ks = sorted({r["k"] for r in a["impact"]})
    k_text = "k = " + ("/".join(str(k) for k in ks) if ks else "n/a")
    counts = ", ".join(
        f"{m}: " + ", ".join(f"{name} {c.get(name, 0)}" for name in audit.IMPACT_LABELS
                             if c.get(name, 0) or name in (audit.HELPED, audit.HURT,
                                                           audit.NO_OP))
        for m, c in a["impact_counts"].items())
    L.append(f"- skill impact per prompt ({k_text} reps per arm; must lift ≥ +{thr:.2f} "
             f"helped, ≤ −{thr:.2f} hurt, else no-op; a |Δ| inside the prompt's own rep "
             f"spread, or below {audit.SINGLE_TRIAL_NOISE:.2f} with k ≤ 2, is within rep "
             "noise; must 1.0 in every rep of both arms is saturated): " + counts)
    if a["reps"] == 1:
        L.append("- ⚠ one rep per arm: a single-trial |Δ| < 0.30 is likely noise; re-run "
                 "with more reps before acting on a verdict")
    for outcome, title, kind in (("helped", "Prompts where the skill helped", "unlock quote"),
                                 ("hurt", "Prompts where the skill hurt", "misled quote")):
        chosen = [r for r in a["impact"] if r.get("label", r["outcome"]) == outcome]
        if not chosen:
            continue
        shown = chosen[:MAX_HURT_ROWS]
        L += ["", f"{title} ({kind}: {_QUOTE_RULE[outcome]}):", ""]
        L += md_table(*by_agent(card, ["prompt", "model", "must lift", "k", kind],
                      [[r["prompt"], r["model"], signed(r["must_lift"]), r.get("k", "?"),
                        _quote(r["quote"])] for r in shown]))
        L += cap_note(len(shown), len(chosen), f"{outcome} rows")
    if a["flags"]:
        L += ["", "The patterns across models are in Suggested improvements below."]
    excluded = a.get("excluded_runs") or []
    if excluded:
        listed = excluded[:MAX_EXCLUDED_ROWS]
        L += ["", "Excluded with-skill runs (did not complete; not counted as NOT_INVOKED or "
              f"as trigger misses): **{len(excluded)}**", ""]
        L += md_table(["run_id", "status", "reason"],
                      [[x["run_id"], x["status"], cell(x["reason"])] for x in listed])
        L += cap_note(len(listed), len(excluded), "excluded runs")
    return [*L, ""]


_QUOTE_RULE = {
    "helped": "a must met with the skill and missed without it, with the evidence",
    "hurt": "an avoid violated only with the skill, else a must met only without it",
}
#: Evidence longer than this is cut in the markdown table (scorecard.json keeps it whole).
QUOTE_CHARS = 160


def _quote(q: Quote | None) -> str:
    if q is None:
        return "— (no single item moved)"
    ev = q["evidence"]
    ev = ev if len(ev) <= QUOTE_CHARS else ev[:QUOTE_CHARS - 1] + "…"
    where = f"{q['condition']} r{q['rep']}"
    return cell(f"{q['item_type']} “{q['item_text']}” — {where}: “{ev}”")
