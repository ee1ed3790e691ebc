"""Per-cell metrics: one row per (model, condition), the qdrant scorecard's cell table."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from pytest_skilllift.report.context import json_float
from pytest_skilllift.report.markdown import fmt, md_table
from pytest_skilllift.week.columns import ARMS

if TYPE_CHECKING:
    from pytest_skilllift.report.card import Scorecard
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


class Data(TypedDict):
    cells: list[Cell]


def build(ctx: Context) -> Data:
    agg, f = ctx.agg, json_float
    cells: list[Cell] = []
    if agg is not None:
        for mi, label in enumerate(ctx.week.models):
            for c, cond in enumerate(ARMS):
                if agg.cell_n[mi, c] == 0 and ctx.cost_n[mi, c] == 0:
                    continue
                cells.append({
                    "model": label, "condition": cond,
                    "must_coverage": f(agg.cell_must[mi, c]),
                    "bonus_rate": f(agg.cell_bonus[mi, c]),
                    "avoid_violations": f(agg.cell_avoid[mi, c]),
                    "composite": f(agg.cell_composite[mi, c]),
                    "mean_cost": f(ctx.cost_mean[mi, c]), "mean_turns": f(ctx.turns_mean[mi, c]),
                    "n": int(agg.cell_n[mi, c]), "n_cost_runs": int(ctx.cost_n[mi, c]),
                })
    return {"cells": cells}


def render(card: Scorecard) -> list[str]:
    L = ["## Per-cell metrics\n"]
    rows = [[c["model"], c["condition"], fmt(c["must_coverage"]), fmt(c["bonus_rate"]),
             fmt(c["avoid_violations"], 2), fmt(c["composite"]), fmt(c["mean_cost"], 4),
             fmt(c["mean_turns"], 1), c["n"]] for c in card.get("cells", [])]
    if not rows:
        L.append("_No cells could be scored._\n")
        return L
    L += md_table(["model", "condition", "must_cov", "bonus_rate", "avoid_viol", "composite",
                   "mean cost", "mean turns", "n"], rows)
    L.append("")
    return L
