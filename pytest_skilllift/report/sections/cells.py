"""Per-cell metrics: one row per (model, condition), the qdrant scorecard's cell table.

Beyond it: each cell's pass rate (prompt×reps whose composite reaches the pass threshold)
with its Wilson 95% interval and the three states of the Drupal ai_eval scoring document —
scored, errored, unscored (``report.verdicts``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from pytest_skilllift.intervals import wilson_bounds
from pytest_skilllift.report import verdicts
from pytest_skilllift.report.context import json_float
from pytest_skilllift.report.markdown import by_agent, fmt, md_table

if TYPE_CHECKING:
    from pytest_skilllift.report.context import Context


class Cell(TypedDict):
    """``cells[]``: means over the cell's prompts (quality) and its ok runs (cost, turns)."""

    model: str
    condition: str
    must_coverage: float | None
    bonus_rate: float | None
    avoid_violations: float | None
    composite: float | None
    mean_cost: float | None
    mean_turns: float | None
    #: Prompts with a score in the cell.
    n: int
    n_cost_runs: int
    #: Passed / scored prompt×reps (None when none was scored) and its Wilson 95% interval.
    pass_rate: float | None
    pass_rate_ci_low: float | None
    pass_rate_ci_high: float | None
    #: The same rate's prompt-clustered 95% interval (``stats.cluster_rate_interval``):
    #: reps of one prompt are correlated, so this is the one ``pass_rate_ci_low`` gates read.
    pass_rate_cluster95: list[float | None]
    pass_passed: int
    pass_scored: int
    #: Prompt×reps the judge left without a graded must item: never a pass.
    pass_errored: int
    #: Prompt×reps with nothing gradeable (no graded must item, or the run was dropped).
    pass_unscored: int


class Data(TypedDict):
    """The Per-cell metrics section's keys in scorecard.json."""
    cells: list[Cell]
    #: The composite a prompt×rep must reach to pass (week.json's, else 0.7).
    pass_threshold: float


def build(ctx: Context) -> Data:
    """The Per-cell metrics section's scorecard.json keys, from the week's numbers."""
    agg, f = ctx.agg, json_float
    cells: list[Cell] = []
    if agg is not None:
        measures = ctx.shared(verdicts.measures_of)
        for mi, label in enumerate(ctx.week.models):
            for c, cond in enumerate(ctx.week.arm_names):
                if agg.cell_n[mi, c] == 0 and ctx.cost_n[mi, c] == 0:
                    continue
                pc = measures.pass_counts(label, cond)
                lo, hi = wilson_bounds(pc["passed"], pc["scored"]) or (None, None)
                clo, chi = measures.pass_rate_cluster(label, cond)
                cells.append({
                    "model": label, "condition": cond,
                    "must_coverage": f(agg.cell_must[mi, c]),
                    "bonus_rate": f(agg.cell_bonus[mi, c]),
                    "avoid_violations": f(agg.cell_avoid[mi, c]),
                    "composite": f(agg.cell_composite[mi, c]),
                    "mean_cost": f(ctx.cost_mean[mi, c]), "mean_turns": f(ctx.turns_mean[mi, c]),
                    "n": int(agg.cell_n[mi, c]), "n_cost_runs": int(ctx.cost_n[mi, c]),
                    "pass_rate": pc["passed"] / pc["scored"] if pc["scored"] else None,
                    "pass_rate_ci_low": lo, "pass_rate_ci_high": hi,
                    "pass_rate_cluster95": [f(clo), f(chi)],
                    "pass_passed": pc["passed"], "pass_scored": pc["scored"],
                    "pass_errored": pc["errored"], "pass_unscored": pc["unscored"],
                })
    return {"cells": cells, "pass_threshold": ctx.pass_threshold}


def render(card: Data) -> list[str]:
    """The Per-cell metrics section of scorecard.md, as markdown lines."""
    L = ["## Per-cell metrics\n"]
    rows = [[c["model"], c["condition"], fmt(c["must_coverage"]), fmt(c["bonus_rate"]),
             fmt(c["avoid_violations"], 2), fmt(c["composite"]), fmt(c["mean_cost"], 4),
             fmt(c["mean_turns"], 1), c["n"]] for c in card.get("cells", [])]
    if not rows:
        L.append("_No cells could be scored._\n")
        return L
    L += md_table(*by_agent(card, ["model", "condition", "must_cov", "bonus_rate", "avoid_viol",
                                   "composite", "mean cost", "mean turns", "n"], rows))
    L.append("")
    return L + _pass_rates(card)


def _pass_rates(card: Data) -> list[str]:
    """Pass rate per cell with its Wilson 95% interval and the three states."""
    thr = card["pass_threshold"]
    rows = []
    for c in card["cells"]:
        rate = c["pass_rate"]
        shown = ("n/a" if rate is None else f"{rate:.2f} [{fmt(c['pass_rate_ci_low'], 2)}–"
                 f"{fmt(c['pass_rate_ci_high'], 2)}]")
        clo, chi = c.get("pass_rate_cluster95") or [None, None]
        cluster = "n/a" if clo is None else f"[{fmt(clo, 2)}–{fmt(chi, 2)}]"
        rows.append([c["model"], c["condition"], shown, cluster,
                     f"{c['pass_passed']} of {c['pass_scored']}", c["pass_errored"],
                     c["pass_unscored"]])
    L = [f"### Pass rate (composite ≥ {thr:.2f})\n"]
    L += md_table(*by_agent(card, ["model", "condition", "pass rate [95% Wilson]",
                   "95% prompt-clustered (gated)", "passed of scored", "errored", "unscored"],
                  rows))
    L.append(f"\n_A prompt×rep passes when its composite is at least {thr:.2f} (3.5 on a 0–5 "
             "scale), scored on its graded items. **errored**: the judge left no must item "
             "graded — **unscored**: nothing to grade (no must item, or the run was "
             "dropped). Both are "
             "absences, not zeros: they are left out of the rate and never count as a pass. "
             "Wilson (the Drupal ai_eval figure) counts every prompt×rep as independent; reps "
             "of one prompt agree more often than chance, so the prompt-clustered interval "
             "(Clopper–Pearson at the design effect's effective sample size, Korn & Graubard "
             "1998: at most one trial per prompt when the reps all agree) is the honest width, "
             "and the one a `pass_rate_ci_low` gate reads; unlike a prompt bootstrap it does "
             "not collapse to [1.00–1.00] when every rep passes (coverage measured in "
             "benchmarks/bench_pass_rate_interval.py)._\n")
    return L
