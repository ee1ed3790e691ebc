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

from pytest_skilllift.model import ARMS, CONDITIONS, WITH_REF
from pytest_skilllift.report import stats
from pytest_skilllift.week import history as hist
from pytest_skilllift.week.files import (
    COMPLETED,
    RUN_STATUSES,
    STATUS_OK,
)
from pytest_skilllift.week.tables import Problem, Week, distinct

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
    #: The history's runs with a lift, this week's merged in (the trend plot's rows).
    all_hist: list[hist.HistoryRow] = field(default_factory=list)
    #: Whether this week's rows were written to ``hist_path``.
    history_written: bool = False
    _shared: dict[str, Any] = field(default_factory=dict, init=False, repr=False)

    @classmethod
    def of_week(cls, week: Week, *, judge: JudgeReport, contested: dict[str, int | None],
                pass_threshold: float, hist_path: Path, write: bool,
                banner: str | None) -> Context:
        """The week's numbers, computed once: its one constructor.

        Excludes the scores of dropped runs, aggregates, computes each model's lift and
        bootstrap, the run means, the judge's part and the history.  Input problems are
        appended to ``week.problems``.  ``judge`` is the judge's part of the week
        (``report.judging.build``), ``contested`` its contested items per model (for the
        history rows), ``pass_threshold`` the week's (``verdicts.pass_threshold_of``).  With
        ``write``, the history file ``hist_path`` is written, this week's rows merged in
        (only a week with a lift is a run of history).
        """
        week_dir = week.week_dir
        problems = week.problems
        P, M = len(week.prompts), len(week.models)

        # Scores of runs that must not be scored (invalid install, errored, capped, timeout)
        # are excluded here, even if a judge graded them; the run shows up as dropped.
        run_ok = np.ones(week.scores.run.size, bool)
        if week.manifest.present and week.scores.run.size:
            linked = week.scores.run >= 0
            run_ok[linked] = week.manifest.status[week.scores.run[linked]] == STATUS_OK
        credit = np.where(run_ok, week.scores.credit, np.nan)
        n_excluded_run_items = int(np.count_nonzero(~run_ok & ~np.isnan(week.scores.credit)))

        agg: stats.Aggregates | None = None
        lifts: dict[str, stats.Lift] = {}
        boots: dict[str, stats.Bootstrap] = {}
        if week.scores.present and P and M:
            # Rows of dropped runs are left out entirely (not just NaN): their prompt×rep is
            # already reported as a dropped run and must not also count as "unscored".
            keep = run_ok if not run_ok.all() else slice(None)
            sc = week.scores
            agg = stats.aggregate(sc.prompt[keep], sc.model[keep], sc.cond[keep],
                                  sc.rep[keep], sc.type[keep], credit[keep],
                                  n_prompts=P, n_models=M, n_conditions=len(ARMS))
            present_conds = set(distinct(sc.cond[sc.cond >= 0]).tolist())
            for c in (0, 1):
                # An A/A or with-all week has no with-skill arm by design: its own sections say so.
                # A version comparison (with-skill and with-skill@REF) needs no no-skill arm.
                versions_only = c == 0 and {1, ARMS.index(WITH_REF)} <= present_conds
                # A week of Harbor tasks only has no scores rows: its rewards are the lift.
                tasks_only = not present_conds and bool(week.rewarded().any())
                if c not in present_conds and (c == 0 or present_conds <= {0, 1}) and not (
                        versions_only or tasks_only):
                    problems.append(Problem(
                        "scores.csv", f"no {CONDITIONS[c]} rows at all: this week has one arm "
                        "only, so no lift can be computed (the other arm's cells are shown)",
                        column="condition"))
            for mi, label in enumerate(week.models):
                lifts[label] = stats.paired_lift(agg.must[:, mi, 0], agg.must[:, mi, 1])
                boots[label] = stats.paired_bootstrap(agg.must[:, mi, 0], agg.must[:, mi, 1],
                                                      n_boot=BOOTSTRAP_N, seed=BOOTSTRAP_SEED)
                if {0, 1} <= present_conds:
                    for c in (0, 1):
                        if agg.cell_n[mi, c] == 0:
                            problems.append(Problem(
                                "scores.csv", f"model {label!r} has no scored {CONDITIONS[c]} "
                                "prompt: its lift cannot be computed", column="condition"))

        # Per-run means (cost, turns) exclude errored/capped/invalid runs and runs with no cost.
        mf = week.manifest
        nan_runs = np.full(week.n_runs, np.nan)
        cost = mf.num.get("total_cost_usd", nan_runs)
        turns = mf.num.get("num_turns", nan_runs)
        include = mf.status == STATUS_OK
        cost_mean, cost_n = stats.cell_run_means(cost, mf.model, mf.cond, include, M, len(ARMS))
        turns_mean, _ = stats.cell_run_means(turns, mf.model, mf.cond,
                                             include & ~np.isnan(cost), M, len(ARMS))
        cost_excluded = int(np.count_nonzero(~(include & ~np.isnan(cost))))

        # History: this week's rows merged into the file (or in memory when not writing).
        run_key = week_dir.name
        window_end = week.window[1] if week.window else ""
        hist_rows_now = []
        for mi, label in enumerate(week.models):
            lf = lifts.get(label)
            comp_lift = (stats.paired_mean_delta(agg.composite[:, mi, 0], agg.composite[:, mi, 1])
                         if agg is not None else None)
            hist_rows_now.append(hist.HistoryRow(
                run_key=run_key, window_end=window_end, model=label,
                must_lift=lf.lift if lf else None, must_lift_se=lf.se if lf else None,
                composite_lift=comp_lift,
                cost_delta=json_float(cost_mean[mi, 1] - cost_mean[mi, 0]) if M else None,
                turns_delta=json_float(turns_mean[mi, 1] - turns_mean[mi, 0]) if M else None,
                contested_items=contested[label],
            ))
        # A week without any lift (one arm only, unreadable scores) is not a run of history:
        # it would count toward the four runs while contributing nothing.
        has_lift = any(lf.lift is not None for lf in lifts.values())
        can_write_history = write and has_lift
        try:
            existing = hist.read_history(hist_path)
        except hist.HistoryError as exc:
            # Never overwrite a file we cannot read: it may hold weeks we cannot rebuild.
            problems.append(Problem(str(hist_path), f"{exc}; it was left untouched and this "
                                    "week was not added"))
            existing, can_write_history = [], False
        # Nor is it counted or plotted: only the runs that have a lift are history.
        all_hist = hist.merge_history(existing, hist_rows_now if has_lift else [])
        if can_write_history:
            hist.write_history(hist_path, all_hist)
        all_hist = hist.with_lift(all_hist)  # an older file's empty weeks are not runs either
        # Only earlier weeks measured alike (same prompts, models, judge protocol) are pooled
        # into the between-week σ and the "run N of 4" count; the scorecard names them.
        pool = hist.pool_decisions(all_hist, run_key, hist_path.parent)
        pooled = {d.run_key for d in pool if d.pooled}
        wow = {}
        for label in week.models:
            lf = lifts.get(label)
            wow[label] = stats.week_over_week(
                lf.lift if lf else None, lf.se if lf else None, lf.n if lf else 0,
                hist.prior_runs(all_hist, run_key, label, pooled=pooled))
        # A week with nothing graded is no run of the history: it does not count itself.
        n_runs_hist = hist.runs_up_to(all_hist, run_key, pooled=pooled) - (not has_lift)

        return cls(week=week, banner=banner, credit=credit,
                   n_excluded_run_items=n_excluded_run_items, agg=agg, lifts=lifts, boots=boots,
                   cost_mean=cost_mean, cost_n=cost_n, turns_mean=turns_mean,
                   cost_excluded=cost_excluded, hist_rows=hist_rows_now, wow=wow,
                   n_runs_hist=n_runs_hist, hist_path=hist_path, judge=judge, pool=pool,
                   pass_threshold=pass_threshold, all_hist=all_hist,
                   history_written=can_write_history)

    @cached_property
    def with_skill_runs(self) -> np.ndarray:
        """With-skill runs that completed (``files.COMPLETED``): the ones that count for
        activation and the trajectory audit. An invalid install, an outage, a timeout, a
        budget cap or a CLI that never started says nothing about the skill's description,
        so such a run is never a trigger miss nor NOT_INVOKED (see :attr:`excluded_with_skill`).
        """
        w = self.week
        completed = [RUN_STATUSES.index(s) for s in sorted(COMPLETED)]
        return cast("np.ndarray", (w.manifest.cond == 1) & np.isin(w.manifest.status, completed))

    @cached_property
    def excluded_with_skill(self) -> np.ndarray:
        """With-skill runs that did not complete: left out of activation and the audit."""
        return cast("np.ndarray", (self.week.manifest.cond == 1) & ~self.with_skill_runs)

    def run_column(self, name: str) -> np.ndarray:
        """A numeric manifest column per run (all NaN when the week does not have it)."""
        return self.week.manifest.num.get(name, np.full(self.week.n_runs, np.nan))

    def shared(self, compute: Callable[[Context], T]) -> T:
        """``compute(self)``, computed once per week: for a value several sections read
        (e.g. the per-prompt rows both the prompts and the audit section use)."""
        key = f"{compute.__module__}.{compute.__qualname__}"
        if key not in self._shared:
            self._shared[key] = compute(self)
        return cast(T, self._shared[key])
