"""What every scorecard section is built from: a loaded week and the numbers computed once.

``summarize`` makes one :class:`Context` per week (aggregates, lifts, bootstrap, run means,
history), then each section's ``build`` reads from it.  Values more than one section needs
(the with-skill run mask, the per-prompt rows) are computed once, on first use.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np

from pytest_skilllift.report import stats
from pytest_skilllift.week import history as hist
from pytest_skilllift.week.files import COMPLETED, RUN_STATUSES
from pytest_skilllift.week.tables import Week

if TYPE_CHECKING:
    from pytest_skilllift.report.judging import JudgeReport

T = TypeVar("T")

#: Bootstrap settings: fixed seed so a week's scorecard is reproducible byte for byte.
BOOTSTRAP_N = 2000
BOOTSTRAP_SEED = 20260808
#: The lift a team would want to be able to detect (Beyond the reference: MDL).
TARGET_LIFT = 0.10


def json_float(x: float | np.floating[Any] | None) -> float | None:
    """JSON-safe float: NaN/inf/None → None."""
    if x is None:
        return None
    v = float(x)
    return v if math.isfinite(v) else None


@dataclass
class Context:
    """The week and its numbers, as every section builder sees them (read-only by habit)."""

    week: Week
    #: Shown at the very top of the scorecard (e.g. "DEMO — scripted models"), or None.
    banner: str | None
    #: Per scores row: 1.0 / 0.0, NaN when ungraded, invalid, or its run was dropped.
    credit: np.ndarray
    #: Graded items left out because their run was dropped (invalid, errored, capped…).
    n_excluded_run_items: int
    #: All quality levels (None when no scores could be read).
    agg: stats.Aggregates | None
    lifts: dict[str, stats.Lift]
    boots: dict[str, stats.Bootstrap]
    #: Per (model, condition) means over ok runs: cost, its run count, turns.
    cost_mean: np.ndarray
    cost_n: np.ndarray
    turns_mean: np.ndarray
    #: Runs left out of the cost mean (not ok, or no cost recorded).
    cost_excluded: int
    #: This week's history rows, one per model in ``week.models`` order.
    hist_rows: list[hist.HistoryRow]
    wow: dict[str, stats.WeekOverWeek]
    #: Runs of history up to and including this week.
    n_runs_hist: int
    hist_path: Path
    #: The judge's part of the week (``report.judging``), read before the history rows,
    #: which carry its contested-item counts.
    judge: JudgeReport
    #: The composite a prompt×rep must reach to pass (week.json's, else the default).
    pass_threshold: float
    #: Each earlier run of the history: pooled with this week or not, and why.
    pool: list[hist.PoolDecision] = field(default_factory=list)
    _shared: dict[str, Any] = field(default_factory=dict, init=False, repr=False)

    @cached_property
    def with_skill_runs(self) -> np.ndarray:
        """With-skill runs that completed (``files.COMPLETED``): the ones that count for
        activation and the trajectory audit. An invalid install, an outage, a timeout, a
        budget cap or a CLI that never started says nothing about the skill's description,
        so such a run is never a trigger miss nor NOT_INVOKED (see :attr:`excluded_with_skill`).
        """
        w = self.week
        completed = [RUN_STATUSES.index(s) for s in sorted(COMPLETED)]
        return cast("np.ndarray", (w.m_cond == 1) & np.isin(w.m_status, completed))

    @cached_property
    def excluded_with_skill(self) -> np.ndarray:
        """With-skill runs that did not complete: left out of activation and the audit."""
        return cast("np.ndarray", (self.week.m_cond == 1) & ~self.with_skill_runs)

    def run_column(self, name: str) -> np.ndarray:
        """A numeric manifest column per run (all NaN when the week does not have it)."""
        return self.week.m_num.get(name, np.full(self.week.n_runs, np.nan))

    def shared(self, compute: Callable[[Context], T]) -> T:
        """``compute(self)``, computed once per week: for a value several sections read
        (e.g. the per-prompt rows both the prompts and the audit section use)."""
        key = f"{compute.__module__}.{compute.__qualname__}"
        if key not in self._shared:
            self._shared[key] = compute(self)
        return cast(T, self._shared[key])
