"""Week-over-week lift delta (scorecard.json ``history``).

qdrant/skills SCORING.md ("Reading Week-Over-Week Movement"): a delta is actionable only when
it clears max(t·SE_Δ, between-week σ); until four runs of history exist the section says
"Will be computed after four runs.".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from pytest_skilllift.report import stats
from pytest_skilllift.report.context import json_float
from pytest_skilllift.report.markdown import by_agent, fmt, md_table, signed

if TYPE_CHECKING:
    from pytest_skilllift.report.context import Context


class WowModel(TypedDict):
    """One model's lift this week beside the previous week's, and whether the move is noise."""
    ready: bool
    prev_key: str | None
    prev_lift: float | None
    now_lift: float | None
    delta: float | None
    se_delta: float | None
    within: float | None
    between: float | None
    threshold: float | None
    actionable: bool | None


class PooledRun(TypedDict):
    """An earlier run of history, and why it was (or was not) pooled into the between-week σ."""
    run_key: str
    reason: str


class History(TypedDict):
    """The history the week-over-week delta reads: its file, its runs, and whether it is ready."""
    path: str
    run_key: str
    #: Runs of history up to and including this week.
    n_runs: int
    min_runs: int
    ready: bool
    pending_text: str
    per_model: dict[str, WowModel]
    #: Earlier runs pooled into the between-week σ and the run count (identity matched, or
    #: not checkable on either side), and the ones left out, each with its reason.
    pooled_runs: list[PooledRun]
    not_pooled_runs: list[PooledRun]


class Data(TypedDict):
    """The Week-over-week section's keys in scorecard.json."""
    history: History


def build(ctx: Context) -> Data:
    """The Week-over-week section's scorecard.json keys, from the week's numbers."""
    f = json_float
    return {"history": {
        "path": str(ctx.hist_path), "run_key": ctx.week.week_dir.name,
        "n_runs": ctx.n_runs_hist, "min_runs": stats.WOW_MIN_RUNS,
        "ready": any(w.ready for w in ctx.wow.values()),
        "pending_text": stats.WOW_PENDING_TEXT,
        "per_model": {
            label: {"ready": w.ready, "prev_key": w.prev_key, "prev_lift": f(w.prev_lift),
                    "now_lift": f(ctx.lifts[label].lift) if label in ctx.lifts else None,
                    "delta": f(w.delta), "se_delta": f(w.se_delta), "within": f(w.within),
                    "between": f(w.between), "threshold": f(w.threshold),
                    "actionable": w.actionable}
            for label, w in ctx.wow.items()
        },
        "pooled_runs": [{"run_key": d.run_key, "reason": d.reason} for d in ctx.pool
                        if d.pooled],
        "not_pooled_runs": [{"run_key": d.run_key, "reason": d.reason} for d in ctx.pool
                            if not d.pooled],
    }}


def render(card: Data) -> list[str]:
    """The Week-over-week section of scorecard.md, as markdown lines."""
    h = card.get("history", {})
    L = ["## Week-over-week lift delta\n"]
    if not h.get("ready"):
        L.append(f"**{stats.WOW_PENDING_TEXT}** (this is run {h.get('n_runs', 1)} of "
                 f"{h.get('min_runs', 4)}; a delta needs prior runs to estimate the "
                 "between-week noise floor. This week's own sampling uncertainty is in the "
                 "lift table above as ± SE.)\n")
        return L + _pool_lines(h)
    per = h.get("per_model", {})
    prev_keys = sorted({k for v in per.values() if (k := v.get("prev_key"))})
    L.append(f"vs previous run `{', '.join(prev_keys) or '?'}`. The don't-act threshold is "
             "**max(t·SE_Δ, between-week σ)** — a delta must clear both this week's "
             "sampling error *and* the observed week-to-week drift to be actionable.\n")
    rows = []
    for label, v in per.items():
        if not v.get("ready"):
            rows.append([label, f"n/a → {fmt(v.get('now_lift'))}", "n/a", "n/a", "n/a", "n/a",
                         "n/a (no prior run for this model)"])
            continue
        act = v.get("actionable")
        reading = "n/a" if act is None else ("yes" if act else "no (within noise)")
        delta = v.get("delta")
        if delta is not None and abs(delta) < 1e-12:
            reading = "no — the same lift as the previous run"
        rows.append([label, f"{fmt(v.get('prev_lift'))} → {fmt(v.get('now_lift'))}",
                     signed(v.get("delta")), fmt(v.get("within")), fmt(v.get("between")),
                     fmt(v.get("threshold")), reading])
    L += md_table(*by_agent(card, ["model", "must lift (prev → now)", "Δ", "t·SE_Δ (within)",
                   "σ (between)", "threshold", "actionable?"], rows))
    L.append("")
    return L + _pool_lines(h)


def _pool_lines(h: History) -> list[str]:
    """Which earlier weeks the σ and the run count pooled, and which they left out, why."""
    pooled, left = h.get("pooled_runs", []), h.get("not_pooled_runs", [])
    if not pooled and not left:
        return []
    L = []
    if pooled:
        reasons = sorted({p["reason"] for p in pooled})
        keys = ", ".join(f"`{p['run_key']}`" for p in pooled)
        L.append(f"- pooled (between-week σ, run count): {keys} — {'; '.join(reasons)}")
    else:
        L.append("- pooled (between-week σ, run count): none of the earlier runs")
    for p in left:
        L.append(f"- not pooled: `{p['run_key']}` — {p['reason']}")
    return [*L, ""]
