"""Orchestration of ``skilllift summarize``: week directory → numbers → scorecard files.

``weekio`` reads, ``stats`` computes, ``history`` remembers, ``scorecard`` renders,
``plots`` draws; this module wires them together and assembles ``scorecard.json`` (the
dict every renderer and downstream tool reads).  It never raises on bad input: problems
are collected and the scorecard says what is missing.
"""

from __future__ import annotations

import contextlib
import importlib
import math
import os
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pytest_skilllift import __version__
from pytest_skilllift.report import excluded_runs, scorecard, stats
from pytest_skilllift.week import history as hist
from pytest_skilllift.week.columns import ACTIVATIONS, CONDITIONS
from pytest_skilllift.week.tables import (
    INVOCATION_STATUSES,
    RUN_STATUSES,
    STATUS_BUDGET,
    STATUS_ERRORED,
    STATUS_INVALID,
    STATUS_NO_ANSWER,
    STATUS_OK,
    STATUS_TIMEOUT,
    Problem,
    Week,
    load_week,
)

#: Bootstrap settings: fixed seed so a week's scorecard is reproducible byte for byte.
BOOTSTRAP_N = 2000
BOOTSTRAP_SEED = 20260808
#: The lift a team would want to be able to detect (Beyond the reference: MDL).
TARGET_LIFT = 0.10


@dataclass
class Summary:
    """The result of summarizing one week.

    ``data`` is the scorecard.json dict, ``markdown`` the scorecard.md text, ``problems``
    human-readable input problems (empty for a clean week).  The parsed numbers are in
    ``week`` (loaded arrays), ``aggregates`` (all quality levels), ``lifts`` (per model).
    """

    week_dir: Path
    week: Week
    aggregates: stats.Aggregates | None
    lifts: dict[str, stats.Lift]
    bootstraps: dict[str, stats.Bootstrap]
    wow: dict[str, stats.WeekOverWeek]
    data: dict[str, Any]
    markdown: str
    problems: list[str]
    written: list[Path] = field(default_factory=list)

    def terminal_lines(self) -> list[str]:
        """A compact lift table for a pytest terminal summary (or a shell)."""
        models = self.data.get("models", {})
        lines = [f"skill lift (must_coverage, with-skill − no-skill), week {self.data['week']}:"]
        if not models:
            lines.append("  no lift could be computed (see the scorecard's input problems)")
        else:
            rows = [("model", "no → with", "lift ± SE", "95% CI ≠ 0?", "n")]
            for label, m in models.items():
                rows.append((
                    label,
                    f"{scorecard.fmt(m['must_no'])} → {scorecard.fmt(m['must_with'])}",
                    f"{scorecard.signed(m['must_lift'])} ± {scorecard.fmt(m['must_lift_se'])}",
                    scorecard.ci_flag(m),
                    str(m["n_prompts"]),
                ))
            widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
            lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                      for r in rows]
        cov = self.data.get("coverage", {})
        lines.append(f"  graded {cov.get('graded_runs', 0)} of {cov.get('total_runs', 0)} runs;"
                     f" dropped {len(cov.get('dropped', []))}")
        if self.problems:
            lines.append(f"  ⚠ {len(self.problems)} input problem(s): {self.problems[0]}"
                         + (" …" if len(self.problems) > 1 else ""))
        for p in self.written:
            if p.name == "scorecard.md":
                lines.append(f"  scorecard: {p}")
        return lines


def _f(x: float | np.floating | None) -> float | None:
    """JSON-safe float: NaN/inf/None → None."""
    if x is None:
        return None
    v = float(x)
    return v if math.isfinite(v) else None


def _warm_import(module: str) -> None:
    """Import ``module`` ahead of use; a failure is left for the real import to report."""
    # Reported where the module is actually used (inside the plots' try), not here.
    with contextlib.suppress(Exception):
        importlib.import_module(module)


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def summarize_week(
    week_dir: Path,
    *,
    history: Path | None = None,
    write: bool = True,
    plots: bool = True,
    banner: str | None = None,
) -> Summary:
    """Summarize a week directory into scorecard.md / scorecard.json (+ plots, history).

    ``history`` defaults to ``<week_dir>/../scorecard-history.csv``.  With
    ``write=False`` nothing is written (the history is merged in memory only, and no
    plots are drawn); ``banner`` is shown at the very top (e.g. "DEMO — scripted models").
    """
    week_dir = Path(week_dir)
    plot_import = None
    if write and plots:
        # matplotlib takes ~0.3 s to import; do it while pyarrow parses the CSVs (its C++
        # reader runs without the GIL), so the two overlap instead of adding up.
        plot_import = threading.Thread(target=_warm_import, args=("pytest_skilllift.report.plots",),
                                       daemon=True)
        plot_import.start()
    week = load_week(week_dir)
    problems = week.problems
    hist_path = Path(history) if history is not None else week_dir.parent / "scorecard-history.csv"
    P, M = len(week.prompts), len(week.models)

    # Scores of runs that must not be scored (invalid install, errored, capped, timeout)
    # are excluded here, even if a judge graded them; the run shows up as dropped.
    run_ok = np.ones(week.s_run.size, bool)
    if week.manifest_present and week.s_run.size:
        linked = week.s_run >= 0
        run_ok[linked] = week.m_status[week.s_run[linked]] == STATUS_OK
    credit = np.where(run_ok, week.s_credit, np.nan)
    n_excluded_run_items = int(np.count_nonzero(~run_ok & ~np.isnan(week.s_credit)))

    agg: stats.Aggregates | None = None
    lifts: dict[str, stats.Lift] = {}
    boots: dict[str, stats.Bootstrap] = {}
    if week.scores_present and P and M:
        # Rows of dropped runs are left out entirely (not just NaN): their prompt×rep is
        # already reported as a dropped run and must not also count as "unscored".
        keep = run_ok if not run_ok.all() else slice(None)
        agg = stats.aggregate(week.s_prompt[keep], week.s_model[keep], week.s_cond[keep],
                              week.s_rep[keep], week.s_type[keep], credit[keep],
                              n_prompts=P, n_models=M)
        present_conds = set(np.unique(week.s_cond[week.s_cond >= 0]).tolist())
        for c in (0, 1):
            if c not in present_conds:
                problems.append(Problem(
                    "scores.csv", f"no {CONDITIONS[c]} rows at all: this week has one arm "
                    "only, so no lift can be computed (the other arm's cells are shown)",
                    column="condition"))
        for mi, label in enumerate(week.models):
            lifts[label] = stats.paired_lift(agg.must[:, mi, 0], agg.must[:, mi, 1])
            boots[label] = stats.paired_bootstrap(agg.must[:, mi, 0], agg.must[:, mi, 1],
                                                  n_boot=BOOTSTRAP_N, seed=BOOTSTRAP_SEED)
            if len(present_conds) == 2:
                for c in (0, 1):
                    if agg.cell_n[mi, c] == 0:
                        problems.append(Problem(
                            "scores.csv", f"model {label!r} has no scored {CONDITIONS[c]} "
                            "prompt: its lift cannot be computed", column="condition"))

    # Per-run means (cost, turns) exclude errored/capped/invalid runs and runs with no cost.
    num = week.m_num
    nan_runs = np.full(week.n_runs, np.nan)
    cost = num.get("total_cost_usd", nan_runs)
    turns = num.get("num_turns", nan_runs)
    include = week.m_status == STATUS_OK
    cost_mean, cost_n = stats.cell_run_means(cost, week.m_model, week.m_cond, include, M)
    turns_mean, _ = stats.cell_run_means(turns, week.m_model, week.m_cond, include & ~np.isnan(
        cost), M)
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
            cost_delta=_f(cost_mean[mi, 1] - cost_mean[mi, 0]) if M else None,
            turns_delta=_f(turns_mean[mi, 1] - turns_mean[mi, 0]) if M else None,
        ))
    # A week without any lift (one arm only, unreadable scores) is not a run of history:
    # it would count toward the four runs while contributing nothing.
    can_write_history = write and any(lf.lift is not None for lf in lifts.values())
    try:
        existing = hist.read_history(hist_path)
    except hist.HistoryError as exc:
        # Never overwrite a file we cannot read: it may hold weeks we cannot rebuild.
        problems.append(Problem(str(hist_path), f"{exc}; it was left untouched and this "
                                "week was not added"))
        existing, can_write_history = [], False
    all_hist = hist.merge_history(existing, hist_rows_now)
    if can_write_history:
        hist.write_history(hist_path, all_hist)
    wow = {}
    for label in week.models:
        lf = lifts.get(label)
        wow[label] = stats.week_over_week(
            lf.lift if lf else None, lf.se if lf else None, lf.n if lf else 0,
            hist.prior_runs(all_hist, run_key, label))
    n_runs_hist = hist.runs_up_to(all_hist, run_key)

    data = _assemble(week, agg, lifts, boots, wow, cost_mean, cost_n, turns_mean,
                     cost_excluded, credit, n_excluded_run_items, hist_rows_now,
                     n_runs_hist, hist_path, banner)

    written: list[Path] = []
    if plot_import is not None:
        plot_import.join()
    if write and plots and agg is not None:
        try:
            from pytest_skilllift.report import plots as plotmod  # imported in the background above

            forest = plotmod.forest_plot(data, week_dir / "forest.png")
            if forest:
                data["plots"]["forest"] = forest.name
                written.append(forest)
            trend = plotmod.trend_plot(all_hist, week.models, week_dir / "trend.png")
            if trend:
                data["plots"]["trend"] = trend.name
                written.append(trend)
        except Exception as exc:  # a picture must never cost the numbers
            problems.append(Problem("plots", f"could not draw plots: {exc}"))
    data["problems"] = [str(p) for p in problems]
    markdown = scorecard.render_markdown(data)
    if write:
        md, js = week_dir / "scorecard.md", week_dir / "scorecard.json"
        _atomic_write(md, markdown.encode("utf-8"))
        _atomic_write(js, scorecard.render_json(data).encode("utf-8"))
        written[:0] = [md, js]
        if can_write_history:
            written.append(hist_path)
    return Summary(week_dir, week, agg, lifts, boots, wow, data, markdown,
                   [str(p) for p in problems], written)


#: Why a run was dropped, by status; a run_error from the ledger is appended.
_REASONS = {
    STATUS_INVALID: "invalid install (skill not in the init skill list)",
    STATUS_BUDGET: "budget-capped (truncated)",
    STATUS_TIMEOUT: "timeout",
    STATUS_NO_ANSWER: "no gradeable answer",
    # A completed run with an answer but no graded must item: the judge, not the answer.
    STATUS_OK: "ungraded: no graded must item in scores.csv",
}


def _audit_data(week: Any, ws: np.ndarray, prompts: list[dict[str, Any]]) -> dict[str, Any]:
    """Seed 001's layer: invocation status per model (with-skill runs), top-level-only misuse,
    HELPED / HURT / NO-OP per prompt and model, and the cross-model flags."""
    from pytest_skilllift.run import audit

    n_st = len(INVOCATION_STATUSES)

    def tally(group: np.ndarray, names: list[str]) -> dict[str, dict[str, int]]:
        # One bincount over (group, status) pairs: no per-group pass over the runs.
        keep = has_status & (group >= 0)
        counts = np.bincount(group[keep].astype(np.int64) * n_st + week.m_invocation[keep],
                             minlength=len(names) * n_st).reshape(len(names), n_st)
        return {names[g]: dict(zip(INVOCATION_STATUSES, counts[g].tolist(), strict=True))
                for g in np.flatnonzero(counts.sum(axis=1)).tolist()}

    has_status = ws & (week.m_invocation >= 0)
    invocation = tally(week.m_model, list(week.models))
    per_prompt = tally(week.m_prompt, list(week.prompts))
    top = week.m_num.get("top_level_only", np.full(week.n_runs, np.nan))
    impact = [{"prompt": r["prompt"], "model": r["model"], "must_lift": r["must_lift"],
               "outcome": audit.impact_outcome(r["must_lift"])}
              for r in prompts if r["must_lift"] is not None]
    outcomes = {label: {o: 0 for o in (audit.HELPED, audit.HURT, audit.NO_OP)}
                for label in week.models}
    lifts: dict[str, dict[str, float]] = {}
    for r in impact:
        outcomes[r["model"]][r["outcome"]] += 1
        lifts.setdefault(r["prompt"], {})[r["model"]] = r["must_lift"]
    reps = int(np.unique(week.m_rep[week.m_rep >= 0]).size) if week.n_runs else 0
    return {
        "available": bool(has_status.any()),
        "invocation": invocation,
        "top_level_only_runs": int(np.count_nonzero(ws & (top == 1))),
        "audited_runs": int(np.count_nonzero(has_status)),
        "impact_threshold": audit.IMPACT_THRESHOLD,
        "impact": impact,
        "impact_counts": outcomes,
        "reps": reps,
        "flags": audit.impact_flags(lifts, per_prompt),
    }


def _reason(status: int, exit_code: float, error: str | None) -> str:
    if status == STATUS_ERRORED:
        r = f"errored (exit {'?' if math.isnan(exit_code) else int(exit_code)})"
    else:
        r = _REASONS.get(status, RUN_STATUSES[status])
    if not error:
        return r
    # Our ledger's run_error often already names the status ("invalid install: …",
    # "timed out", "budget-capped (…)"): don't say it twice.
    head = error.strip().lower()
    if head.startswith(("invalid", "budget", "timed out", "timeout", "errored", "no ",
                        "judge failed")):
        return error.strip()
    return f"{r}: {error.strip()}"


def _assemble(
    week: Week, agg: stats.Aggregates | None, lifts: dict[str, stats.Lift],
    boots: dict[str, stats.Bootstrap], wow: dict[str, stats.WeekOverWeek],
    cost_mean: np.ndarray, cost_n: np.ndarray, turns_mean: np.ndarray, cost_excluded: int,
    credit: np.ndarray, n_excluded_run_items: int, hist_rows: list[hist.HistoryRow],
    n_runs_hist: int, hist_path: Path, banner: str | None,
) -> dict[str, Any]:
    """Build the scorecard.json dict (all numbers unrounded; renderers round)."""
    P, M = len(week.prompts), len(week.models)
    data: dict[str, Any] = {
        "week": week.week_dir.name,
        "banner": banner,
        "generator": f"pytest-skilllift {__version__}",
        "model_order": list(week.models),
        "problems": [],
        "plots": {"forest": None, "trend": None},
    }

    # ---- per model
    models: dict[str, Any] = {}
    mdl: dict[str, Any] = {}
    boot_out: dict[str, Any] = {}
    for mi, label in enumerate(week.models):
        lf = lifts.get(label)
        if agg is None or lf is None:
            continue
        bs = boots[label]
        hr = hist_rows[mi]
        m_mdl = stats.min_detectable_lift(lf.sd, lf.n)
        n_need = stats.prompts_needed(lf.sd, TARGET_LIFT)
        models[label] = {
            "must_no": _f(agg.cell_must[mi, 0]), "must_with": _f(agg.cell_must[mi, 1]),
            "must_lift": _f(lf.lift), "must_lift_se": _f(lf.se),
            "ci_excludes_zero": lf.ci_excludes_zero, "n_prompts": lf.n,
            "ci_low": _f(lf.ci_low), "ci_high": _f(lf.ci_high), "t_crit": _f(lf.t_crit),
            "df": lf.df, "sd": _f(lf.sd), "low_sample": lf.low_sample,
            "bonus_delta": _f(stats.paired_mean_delta(agg.bonus[:, mi, 0], agg.bonus[:, mi, 1])),
            "avoid_delta": _f(stats.paired_mean_delta(agg.avoid[:, mi, 0], agg.avoid[:, mi, 1])),
            "composite_lift": _f(hr.composite_lift),
            "cost_delta": _f(hr.cost_delta), "turns_delta": _f(hr.turns_delta),
            "bootstrap_low": _f(bs.low), "bootstrap_high": _f(bs.high),
            "bootstrap_excludes_zero": bs.excludes_zero,
            "min_detectable_lift": _f(m_mdl), "prompts_needed_for_target": n_need,
        }
        boot_out[label] = {"low": _f(bs.low), "high": _f(bs.high),
                           "excludes_zero": bs.excludes_zero,
                           "agrees_with_t": (None if bs.excludes_zero is None
                                             or lf.ci_excludes_zero is None
                                             else bs.excludes_zero == lf.ci_excludes_zero)}
        mdl[label] = {"min_detectable_lift": _f(m_mdl), "n_prompts": lf.n, "sd": _f(lf.sd),
                      "prompts_needed": n_need}
    data["models"] = models
    data["bootstrap"] = {"n_boot": BOOTSTRAP_N, "seed": BOOTSTRAP_SEED, "level": 0.95,
                         "method": "percentile, paired, resampling prompts",
                         "per_model": boot_out}
    data["mdl"] = {"power": 0.80, "alpha": 0.05, "two_sided": True,
                   "target_lift": TARGET_LIFT, "per_model": mdl}

    # ---- history / week-over-week
    data["history"] = {
        "path": str(hist_path), "run_key": week.week_dir.name, "n_runs": n_runs_hist,
        "min_runs": stats.WOW_MIN_RUNS, "ready": any(w.ready for w in wow.values()),
        "pending_text": stats.WOW_PENDING_TEXT,
        "per_model": {
            label: {"ready": w.ready, "prev_key": w.prev_key, "prev_lift": _f(w.prev_lift),
                    "now_lift": _f(lifts[label].lift) if label in lifts else None,
                    "delta": _f(w.delta), "se_delta": _f(w.se_delta), "within": _f(w.within),
                    "between": _f(w.between), "threshold": _f(w.threshold),
                    "actionable": w.actionable}
            for label, w in wow.items()
        },
    }

    # ---- cells
    cells = []
    if agg is not None:
        for mi, label in enumerate(week.models):
            for c, cond in enumerate(CONDITIONS):
                if agg.cell_n[mi, c] == 0 and cost_n[mi, c] == 0:
                    continue
                cells.append({
                    "model": label, "condition": cond,
                    "must_coverage": _f(agg.cell_must[mi, c]),
                    "bonus_rate": _f(agg.cell_bonus[mi, c]),
                    "avoid_violations": _f(agg.cell_avoid[mi, c]),
                    "composite": _f(agg.cell_composite[mi, c]),
                    "mean_cost": _f(cost_mean[mi, c]), "mean_turns": _f(turns_mean[mi, c]),
                    "n": int(agg.cell_n[mi, c]), "n_cost_runs": int(cost_n[mi, c]),
                })
    data["cells"] = cells

    # ---- prompts (vectorised to lists, then zipped: no per-cell numpy scalar access)
    prompts_out: list[dict[str, Any]] = []
    if agg is not None and P and M:
        def col(a: np.ndarray) -> list[Any]:
            flat = a.reshape(-1)
            nan = np.isnan(flat)
            if not nan.any():
                return flat.tolist()  # the common case: no Python-level NaN scan
            out = flat.astype(object)
            out[nan] = None
            return out.tolist()

        must_no, must_wi = col(agg.must[:, :, 0]), col(agg.must[:, :, 1])
        comp_no, comp_wi = col(agg.composite[:, :, 0]), col(agg.composite[:, :, 1])
        lift = col(agg.must[:, :, 1] - agg.must[:, :, 0])
        mn_no, mx_no = col(agg.must_min[:, :, 0]), col(agg.must_max[:, :, 0])
        mn_wi, mx_wi = col(agg.must_min[:, :, 1]), col(agg.must_max[:, :, 1])
        reps_no, reps_wi = agg.n_reps[:, :, 0].reshape(-1).tolist(), agg.n_reps[:, :, 1].reshape(
            -1).tolist()
        for k in range(P * M):
            if must_no[k] is None and must_wi[k] is None:
                continue
            prompts_out.append({
                "prompt": week.prompts[k // M], "model": week.models[k % M],
                "must_no": must_no[k], "must_with": must_wi[k], "must_lift": lift[k],
                "composite_no": comp_no[k], "composite_with": comp_wi[k],
                "must_no_min": mn_no[k], "must_no_max": mx_no[k],
                "must_with_min": mn_wi[k], "must_with_max": mx_wi[k],
                "reps_no": reps_no[k], "reps_with": reps_wi[k],
            })
    data["prompts"] = prompts_out

    # ---- activation (with-skill runs; invalid installs are not trigger misses)
    n_src = len(ACTIVATIONS)
    ws = excluded_runs.completed_with_skill(week)  # failed runs are not trigger misses
    reached = week.m_num.get("reached_leaf", np.full(week.n_runs, np.nan))
    fetched = week.m_num.get("fetched_site", np.full(week.n_runs, np.nan))
    activation: list[dict[str, Any]] = []
    act_total = np.zeros(n_src + 1, np.int64)
    if week.manifest_present and P:
        counts, runs, leaf, _ = stats.activation_counts(
            week.m_prompt, week.m_activation, reached, fetched, ws, P, n_src)
        act_total = counts.sum(axis=0)
        none_i = ACTIVATIONS.index("none")
        for p in np.flatnonzero(runs > 0).tolist():
            c = counts[p].tolist()
            by_source: dict[str, int] = {a: int(c[i]) for i, a in enumerate(ACTIVATIONS)}
            if c[n_src]:
                by_source["unknown"] = int(c[n_src])
            entry: dict[str, Any] = {
                "prompt": week.prompts[p], "skill_family": week.prompt_family.get(
                    week.prompts[p], ""),
                "with_skill_runs": int(runs[p]),
                "activated_runs": int(sum(c[i] for i in range(n_src) if i != none_i)),
                "counts": by_source,
                "reached_leaf": int(leaf[p]),
                "never_triggered": bool(c[none_i] == int(runs[p])),
            }
            activation.append(entry)
    n_ws = int(np.count_nonzero(ws))
    misses = int(act_total[ACTIVATIONS.index("none")])
    leaf_total = int(np.count_nonzero(ws & (reached == 1)))
    data["activation"] = activation
    data["activation_summary"] = {
        "with_skill_runs": n_ws, "trigger_misses": misses,
        "trigger_miss_rate_wilson95": [_f(x) for x in stats.wilson_interval(misses, n_ws)],
        "web_fetch_runs": int(act_total[ACTIVATIONS.index("web_fetch")]),
        "reached_leaf_runs": leaf_total,
        "reached_leaf_rate_wilson95": [_f(x) for x in stats.wilson_interval(leaf_total, n_ws)],
        "never_triggered": [a["prompt"] for a in activation if a["never_triggered"]],
        "unknown_activation_runs": int(act_total[n_src]),
        "available": "skill_activation" in week.manifest_columns,
    }

    # ---- trajectory audit (seed 001): invocation status, misuse, skill impact
    data["audit"] = _audit_data(week, ws, prompts_out)
    data["audit"]["excluded_runs"] = excluded_runs.excluded_with_skill_runs(week)
    data["activation_summary"]["excluded_runs"] = len(data["audit"]["excluded_runs"])

    # ---- baseline self-served
    ns = week.m_cond == 0
    served = ns & (fetched == 1)
    served_prompts = sorted({week.prompts[p] for p in np.unique(week.m_prompt[served]).tolist()
                             if p >= 0})
    data["baseline_self_served"] = {
        "no_skill_runs": int(np.count_nonzero(ns)), "fetched_runs": int(served.sum()),
        "prompts": served_prompts, "available": "fetched_site" in week.manifest_columns,
    }

    # ---- avoid violations (all of them: the markdown may show fewer and says so)
    order = sorted(range(len(week.violations)), key=lambda i: (
        week.violations[i]["prompt"], week.violations[i]["model"],
        week.violations[i]["condition"]))
    data["avoid_violations"] = [
        {"prompt": v["prompt"], "model": v["model"], "condition": v["condition"],
         "rep": v["rep"], "item": v["item_text"], "evidence": v["evidence"]}
        for v in (week.violations[i] for i in order)
    ]

    # ---- coverage
    graded_runs = 0
    dropped: list[dict[str, Any]] = []
    if week.manifest_present:
        usable_must = ~np.isnan(credit) & (week.s_type == 0) & (week.s_run >= 0)
        has_must = np.bincount(week.s_run[usable_must], minlength=week.n_runs) > 0
        graded_mask = has_must & (week.m_status == STATUS_OK)
        graded_runs = int(graded_mask.sum())
        drop_rows = np.flatnonzero(~graded_mask)
        ids = week.run_ids(drop_rows.tolist())
        errs = (week.m_run_error.take(np.asarray(drop_rows)).to_pylist()
                if week.m_run_error is not None and drop_rows.size else [None] * drop_rows.size)
        for j, r in enumerate(drop_rows.tolist()):
            p, mo, c = week.m_prompt[r], week.m_model[r], week.m_cond[r]
            err = (errs[j] or "").strip() or None
            if err is None and week.m_status[r] == STATUS_OK:
                judge_err = week.judge_error(ids[j])
                err = f"judge failed: {judge_err}" if judge_err else None
            dropped.append({
                "run_id": ids[j],
                "reason": _reason(int(week.m_status[r]), float(week.m_exit_code[r]), err),
                "status": RUN_STATUSES[int(week.m_status[r])],
                "prompt": week.prompts[p] if p >= 0 else "",
                "model": week.models[mo] if mo >= 0 else "",
                "condition": CONDITIONS[c] if c >= 0 else "",
                "rep": int(week.m_rep[r]),
            })
    data["coverage"] = {
        "graded_runs": graded_runs, "total_runs": week.n_runs, "dropped": dropped,
        "items_total": week.n_items,
        "items_graded": int(np.count_nonzero(~np.isnan(credit))),
        "items_ungraded": week.n_ungraded, "items_invalid": week.n_invalid_rows,
        "items_excluded_with_run": n_excluded_run_items,
        "unscored_prompt_reps": agg.n_unscored_reps if agg is not None else 0,
        "composite_unscored_prompt_reps": (agg.n_composite_unscored_reps
                                           if agg is not None else 0),
    }

    # ---- cost & time
    cost_all = week.m_num.get("total_cost_usd", np.full(week.n_runs, np.nan))
    has_cost = ~np.isnan(cost_all) & (week.m_model >= 0)
    per_model_gen = np.bincount(week.m_model[has_cost], weights=cost_all[has_cost],
                                minlength=M) if M else np.zeros(0)
    gen_total = float(per_model_gen.sum()) if has_cost.any() else None
    judge_total = sum(week.judge_costs.values()) if week.judge_costs else None
    dur = stats.duration_summary(week.m_num.get("duration_ms", np.full(week.n_runs, np.nan)))
    total_s = dur["total_s"]
    wall = week.wall_clock_s
    data["cost_time"] = {
        "generation_usd": gen_total,
        "generation_usd_per_model": {label: float(per_model_gen[i])
                                     for i, label in enumerate(week.models)
                                     if np.any(has_cost & (week.m_model == i))},
        "generation_runs_with_cost": int(has_cost.sum()),
        "judge_usd": judge_total, "judge_runs_with_cost": len(week.judge_costs),
        "total_usd": (gen_total or 0.0) + (judge_total or 0.0)
        if gen_total is not None or judge_total is not None else None,
        "time": dur,
        "wall_clock_s": wall,
        "speedup": (total_s / wall) if (isinstance(total_s, float) and wall) else None,
    }

    # ---- run health
    data["run_health"] = {
        "contested_items": int(np.count_nonzero(week.s_contested)),
        "ungraded_items": week.n_ungraded,
        "invalid_items": week.n_invalid_rows,
        "budget_capped_runs": int(np.count_nonzero(week.m_status == STATUS_BUDGET)),
        "invalid_install_runs": int(np.count_nonzero(week.m_status == STATUS_INVALID)),
        "errored_runs": int(np.count_nonzero(week.m_status == STATUS_ERRORED)),
        "timeout_runs": int(np.count_nonzero(week.m_status == STATUS_TIMEOUT)),
        "no_answer_runs": int(np.count_nonzero(week.m_status == STATUS_NO_ANSWER)),
        "signals_bad_runs": int(np.count_nonzero(
            week.m_num.get("signals_ok", np.full(week.n_runs, np.nan)) == 0)),
        "cost_excluded_runs": cost_excluded,
    }

    # ---- provenance
    mismatches = []
    for label, snaps in week.snapshots.items():
        if len(snaps) > 1:
            mismatches.append(f"model {label}: more than one snapshot ({', '.join(snaps)})")
    for label, ids in week.model_ids.items():
        if len(ids) > 1:
            mismatches.append(f"model {label}: requested as more than one model id "
                              f"({', '.join(ids)})")
        for snap in week.snapshots.get(label, []):
            # A dated snapshot extends the requested id; anything else is a different build.
            if not any(snap.startswith(i) for i in ids):
                mismatches.append(f"model {label}: requested {', '.join(ids)} but the "
                                  f"transcripts report {snap}")
    if len(week.cli_versions) > 1:
        mismatches.append("more than one CLI version")
    if week.docker_cli_versions:
        from pytest_skilllift.model import PINNED_CLI_VERSION, cli_version_mismatch

        for version in week.docker_cli_versions:
            if cli_version_mismatch(version):
                mismatches.append(f"docker image CLI {version} is not the pinned "
                                  f"{PINNED_CLI_VERSION}")
    if len(week.skills_shas) > 1:
        mismatches.append("more than one skills commit")
    data["provenance"] = {
        "snapshots": week.snapshots, "model_ids": week.model_ids,
        "cli_versions": week.cli_versions,
        "skills_commits": week.skills_shas,
        "window": ({"start": week.window[0], "end": week.window[1]} if week.window else None),
        "mismatches": mismatches,
    }
    return data

