"""Run health: contested and ungraded items, capped and failed runs, unreliable signals, and
the judge's quotes that were not in the answer."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

import numpy as np

from pytest_skilllift.report.sections import ratelimits
from pytest_skilllift.week.files import (
    STATUS_BUDGET,
    STATUS_ERRORED,
    STATUS_INVALID,
    STATUS_NO_ANSWER,
    STATUS_TIMEOUT,
)

if TYPE_CHECKING:
    from pytest_skilllift.report.context import Context
    from pytest_skilllift.report.sections import judge


class RunHealth(TypedDict):
    """Counts of what went wrong in runs and items (contested, ungraded, capped, failed…)."""
    contested_items: int
    ungraded_items: int
    invalid_items: int
    budget_capped_runs: int
    invalid_install_runs: int
    errored_runs: int
    timeout_runs: int
    no_answer_runs: int
    signals_bad_runs: int
    cost_excluded_runs: int


class Data(TypedDict):
    """The Run health section's keys in scorecard.json."""
    run_health: RunHealth


if TYPE_CHECKING:
    class Reads(Data, judge.Data):
        """What ``render`` and ``judge_lines`` read of the scorecard: these keys and the
        judge's."""


def build(ctx: Context) -> Data:
    """The Run health section's scorecard.json keys, from the week's numbers."""
    week = ctx.week
    status = week.manifest.status
    return {"run_health": {
        "contested_items": int(np.count_nonzero(week.scores.contested)),
        "ungraded_items": week.n_ungraded,
        "invalid_items": week.n_invalid_rows,
        "budget_capped_runs": int(np.count_nonzero(status == STATUS_BUDGET)),
        "invalid_install_runs": int(np.count_nonzero(status == STATUS_INVALID)),
        "errored_runs": int(np.count_nonzero(status == STATUS_ERRORED)),
        "timeout_runs": int(np.count_nonzero(status == STATUS_TIMEOUT)),
        "no_answer_runs": int(np.count_nonzero(status == STATUS_NO_ANSWER)),
        "signals_bad_runs": int(np.count_nonzero(ctx.run_column("signals_ok") == 0)),
        "cost_excluded_runs": ctx.cost_excluded,
    }}


def render(card: Reads) -> list[str]:
    """The Run health section of scorecard.md, as markdown lines."""
    h = card.get("run_health", {})
    harness = (h.get("invalid_install_runs", 0) + h.get("errored_runs", 0)
               + h.get("timeout_runs", 0))
    L = ["## Run health\n",
         f"- contested items: {h.get('contested_items', 0)}",
         f"- ungraded items (parse/verdict errors): {h.get('ungraded_items', 0)}",
         "- budget-capped runs (hit the per-run $ cap, truncated, excluded): "
         f"{h.get('budget_capped_runs', 0)}",
         "- runs with unreliable signals (signals_ok=0 — transcript did not parse to the "
         "expected shape; activation/fetch numbers suspect, investigate): "
         f"{h.get('signals_bad_runs', 0)}",
         "- runs excluded from the cost mean (errored/capped/no-cost): "
         f"{h.get('cost_excluded_runs', 0)}",
         f"- harness failures (invalid install {h.get('invalid_install_runs', 0)}, errored "
         f"{h.get('errored_runs', 0)}, timeout {h.get('timeout_runs', 0)}): {harness}"]
    if h.get("no_answer_runs"):
        L.append(f"- runs that produced no answer (dropped): {h['no_answer_runs']}")
    if h.get("invalid_items"):
        L.append(f"- items that failed validation (excluded): {h['invalid_items']}")
    L += ratelimits.lines(card)
    L += judge_lines(card)
    L.append("")
    return L


def judge_lines(card: Reads) -> list[str]:
    """The judge's bullets: quotes not found in the answer (per model and condition) and
    the contested items, from the ``judge`` key (:mod:`.judge`)."""
    j = card.get("judge")
    if not j:
        return []
    cells = ", ".join(f"{m}/{c} {n['rejected'] + n['kept']}"
                      for m, per in sorted(j["quotes_by_cell"].items())
                      for c, n in sorted(per.items()))
    lines = [f"- rejected quotes (met/violated whose quote is not in the answer, scored as "
             f"missing/absent/clean): {j['rejected_quotes']}"
             + (f" — {cells}" if cells and not j["kept_unverified_quotes"] else "")]
    if j["kept_unverified_quotes"]:
        lines.append(f"- ⚠ quotes not in the answer but **kept** (evidence policy flag): "
                     f"{j['kept_unverified_quotes']} — {cells}")
    if j["contested_items"]:
        lines.append(f"- contested rubric items: {len(j['contested'])} distinct (in "
                     f"{j['contested_items']} runs), {j['ambiguous_items']} flagged as ambiguous "
                     "wording (see Judge reliability)")
    return lines
