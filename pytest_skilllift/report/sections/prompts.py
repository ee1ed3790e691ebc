"""Per-prompt must-coverage and lift, with the rep range (the stability signal)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from pytest_skilllift.report.markdown import by_agent, cap_note, fmt, md_table, signed

if TYPE_CHECKING:
    from pytest_skilllift.report.context import Context
    from pytest_skilllift.report.sections import header

#: Markdown shows at most this many rows; the JSON keeps all (and the cap is stated).
MAX_PROMPT_ROWS = 20000


class PromptRow(TypedDict):
    """``prompts[]``: one (prompt, model) with a score in either arm."""

    prompt: str
    model: str
    must_no: float | None
    must_with: float | None
    must_lift: float | None
    composite_no: float | None
    composite_with: float | None
    must_no_min: float | None
    must_no_max: float | None
    must_with_min: float | None
    must_with_max: float | None
    reps_no: int
    reps_with: int


class Data(TypedDict):
    """The Per-prompt section's keys in scorecard.json."""
    prompts: list[PromptRow]


if TYPE_CHECKING:
    class Reads(Data, header.Data):
        """What ``render`` reads of the scorecard: these keys and the head's (model order)."""


def prompt_rows(ctx: Context) -> list[PromptRow]:
    """The rows, prompt-major (vectorised to lists, then zipped: no per-cell numpy access)."""
    agg, week = ctx.agg, ctx.week
    P, M = len(week.prompts), len(week.models)
    out: list[PromptRow] = []
    if agg is None or not (P and M):
        return out

    def col(a: np.ndarray) -> list[Any]:
        flat = a.reshape(-1)
        nan = np.isnan(flat)
        if not nan.any():
            return flat.tolist()  # the common case: no Python-level NaN scan
        obj = flat.astype(object)
        obj[nan] = None
        return obj.tolist()

    must_no, must_wi = col(agg.must[:, :, 0]), col(agg.must[:, :, 1])
    comp_no, comp_wi = col(agg.composite[:, :, 0]), col(agg.composite[:, :, 1])
    lift = col(agg.must[:, :, 1] - agg.must[:, :, 0])
    mn_no, mx_no = col(agg.must_min[:, :, 0]), col(agg.must_max[:, :, 0])
    mn_wi, mx_wi = col(agg.must_min[:, :, 1]), col(agg.must_max[:, :, 1])
    reps_no = agg.n_reps[:, :, 0].reshape(-1).tolist()
    reps_wi = agg.n_reps[:, :, 1].reshape(-1).tolist()
    for k in range(P * M):
        if must_no[k] is None and must_wi[k] is None:
            continue
        out.append({
            "prompt": week.prompts[k // M], "model": week.models[k % M],
            "must_no": must_no[k], "must_with": must_wi[k], "must_lift": lift[k],
            "composite_no": comp_no[k], "composite_with": comp_wi[k],
            "must_no_min": mn_no[k], "must_no_max": mx_no[k],
            "must_with_min": mn_wi[k], "must_with_max": mx_wi[k],
            "reps_no": reps_no[k], "reps_with": reps_wi[k],
        })
    return out


def build(ctx: Context) -> Data:
    """The Per-prompt section's scorecard.json keys, from the week's numbers."""
    return {"prompts": ctx.shared(prompt_rows)}


def _range(lo: float | None, hi: float | None) -> str:
    return "n/a" if lo is None or hi is None else f"{lo:.2f}–{hi:.2f}"


def render(card: Reads) -> list[str]:
    """The Per-prompt section of scorecard.md, as markdown lines."""
    L = ["## Per-prompt (must_coverage; with-skill lift)\n"]
    order = {m: i for i, m in enumerate(card.get("model_order", []))}
    prompts = sorted(card.get("prompts", []),
                     key=lambda r: (r["prompt"], order.get(r["model"], 99)))
    if not prompts:
        L.append("_No prompt could be scored._\n")
        return L
    shown = prompts[:MAX_PROMPT_ROWS]
    rows = [[r["prompt"], r["model"], f"{fmt(r['must_no'])} → {fmt(r['must_with'])}",
             signed(r["must_lift"]), f"{fmt(r['composite_no'])} → {fmt(r['composite_with'])}",
             f"{_range(r['must_no_min'], r['must_no_max'])} / "
             f"{_range(r['must_with_min'], r['must_with_max'])}"] for r in shown]
    L += md_table(*by_agent(card, ["prompt", "model", "must no→with", "must lift", "comp no→with",
                   "rep min–max (no / with)"], rows))
    L += cap_note(len(shown), len(prompts), "per-prompt rows")
    L.append("\n_rep min–max is the spread of must_coverage over the k reps: the stability "
             "signal (a wide range means the item flips on rerun)._\n")
    return L
