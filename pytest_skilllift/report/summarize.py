"""Orchestration of ``skilllift summarize``: week directory → numbers → scorecard files.

``week.tables`` reads, ``stats`` computes, ``history`` remembers; this module computes the
week's numbers once (a :class:`~pytest_skilllift.report.context.Context`), lets every section
of ``card.SECTIONS`` build its part of ``scorecard.json`` from them, draws the plots and
writes the files.  It never raises on bad input: problems are collected and the scorecard says
what is missing.
"""

from __future__ import annotations

import contextlib
import importlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pytest_skilllift.report import judging, scorecard, stats, verdicts
from pytest_skilllift.report.card import Scorecard, build_card
from pytest_skilllift.report.context import BOOTSTRAP_N, BOOTSTRAP_SEED, Context, json_float
from pytest_skilllift.report.markdown import ci_flag, fmt, signed
from pytest_skilllift.report.plot_drawing import PLOTS_MODULE, Drawer, PlotJob, start_drawer
from pytest_skilllift.report.plot_inputs import PLOT_INPUTS_BUILT, has_forest, has_trend
from pytest_skilllift.week import history as hist
from pytest_skilllift.week.columns import ARMS, CONDITIONS, WITH_REF
from pytest_skilllift.week.files import (
    FOREST_PNG,
    HISTORY_CSV,
    SCORECARD_JSON,
    SCORECARD_MD,
    SCORECARD_OURS_MD,
    STATUS_OK,
    TREND_PNG,
    WEEK_JSON,
    atomic_write_bytes,
    atomic_write_text,
    scorecard_md,
)
from pytest_skilllift.week.tables import Problem, Week, distinct, load_week


@dataclass
class Summary:
    """The result of summarizing one week.

    ``data`` is the scorecard.json card, ``markdown`` the scorecard.md text, ``problems``
    human-readable input problems (empty for a clean week).  The parsed numbers are in
    ``week`` (loaded arrays), ``aggregates`` (all quality levels), ``lifts`` (per model).
    """

    week_dir: Path
    week: Week
    aggregates: stats.Aggregates | None
    lifts: dict[str, stats.Lift]
    bootstraps: dict[str, stats.Bootstrap]
    wow: dict[str, stats.WeekOverWeek]
    data: Scorecard
    markdown: str
    problems: list[str]
    written: list[Path] = field(default_factory=list)

    def terminal_lines(self, *, scorecard_path: bool = True) -> list[str]:
        """A compact lift table for a pytest terminal summary (or a shell); the last line
        says where scorecard.md is, unless ``scorecard_path`` is False."""
        from pytest_skilllift.report.sections.coverage import failed_headline

        models = self.data.get("models", {})
        failed = failed_headline(self.data["coverage"]) if "coverage" in self.data else None
        lines = [failed] if failed else []  # a week with nothing graded: why, first
        lines.append(
            f"skill lift (must_coverage, with-skill − no-skill), week {self.data['week']}:")
        if not models:
            lines.append("  no lift could be computed (see the scorecard's input problems)")
        else:
            rows = [("model", "no → with", "lift ± SE", "95% CI ≠ 0?", "n")]
            for label, m in models.items():
                rows.append((
                    label,
                    f"{fmt(m['must_no'])} → {fmt(m['must_with'])}",
                    f"{signed(m['must_lift'])} ± {fmt(m['must_lift_se'])}",
                    ci_flag(m),
                    str(m["n_prompts"]),
                ))
            widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
            lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                      for r in rows]
        from pytest_skilllift.report.sections.noise import terminal_lines as arm_lines

        lines += arm_lines(self.data)  # the A/A and with-all arms, when the week has them
        cov = self.data.get("coverage", {})
        lines.append(f"  graded {cov.get('graded_runs', 0)} of {cov.get('total_runs', 0)} runs;"
                     f" dropped {len(cov.get('dropped', []))}")
        if self.problems:
            lines.append(f"  ⚠ {len(self.problems)} input problem(s): {self.problems[0]}"
                         + (" …" if len(self.problems) > 1 else ""))
        for p in self.written if scorecard_path else ():
            if p.name in (SCORECARD_MD, SCORECARD_OURS_MD):
                lines.append(f"  scorecard: {p}")
        return lines

    def closing_line(self) -> str:
        """One line for the very end of a session: the lift per model, the graded runs and
        where the scorecard is (``lift sonnet +0.750 ± 0.144 (CI excludes 0) · …``)."""
        models = self.data.get("models", {})
        lifts = ", ".join(
            f"{label} {signed(m['must_lift'])} ± {fmt(m['must_lift_se'])}"
            + (" (95% CI excludes 0)" if ci_flag(m) == "yes" else "")
            for label, m in models.items() if m.get("must_lift") is not None
        ) or "none (no prompt has both arms graded)"
        cov = self.data.get("coverage", {})
        parts = [f"lift {lifts}",
                 f"{cov.get('graded_runs', 0)} of {cov.get('total_runs', 0)} runs graded"
                 ] if cov.get("total_runs") else ["no lift runs in this week"]
        parts += [f"scorecard: {p}" for p in self.written if p.name == SCORECARD_MD]
        return " · ".join(parts)


#: What ``summarize_week`` imports beyond this module: scipy.special (the t quantile;
#: ≈ 0.25 s), pyarrow.compute (≈ 0.05 s) and the plots.
WARM_MODULES: tuple[str, ...] = ("scipy.special", "pyarrow.compute", PLOTS_MODULE)


def warm_imports() -> None:
    """Import everything ``summarize_week`` needs now (a pytest session does it in the
    background while the runs go, so the scorecard does not wait for imports, and its plots
    are drawn in-process)."""
    for module in WARM_MODULES:
        # A failure is left for the real import to report, where the module is used.
        with contextlib.suppress(Exception):
            importlib.import_module(module)


def summarize_week(
    week_dir: Path,
    *,
    history: Path | None = None,
    write: bool = True,
    plots: bool = True,
    banner: str | None = None,
    plot_process: bool | None = None,
) -> Summary:
    """Summarize a week directory into scorecard.md / scorecard.json (+ plots, history).

    ``history`` defaults to ``<week_dir>/../scorecard-history.csv``.  With
    ``write=False`` nothing is written (the history is merged in memory only, and no
    plots are drawn); ``banner`` is shown at the very top (e.g. "DEMO — scripted models").
    ``plot_process`` draws the plots in a worker process (True) or here (False); by default
    in a worker unless matplotlib is loaded already (``report.plot_drawing``).
    """
    week_dir = Path(week_dir)
    # A plot worker imports matplotlib while this process reads and computes the week (at a
    # lower priority: the CSV parse keeps both cores busy, and the numbers come first).
    drawer = start_drawer(process=plot_process) if write and plots else None
    try:
        return _summarize(week_dir, drawer, history=history, write=write, banner=banner)
    except BaseException:
        if drawer is not None:  # never leave a worker waiting for a job that will not come
            drawer.cancel()
        raise


def _summarize(week_dir: Path, drawer: Drawer | None, *, history: Path | None, write: bool,
               banner: str | None) -> Summary:
    """``summarize_week``'s work; ``drawer`` draws the plots (None: no plots)."""
    week = load_week(week_dir)
    problems = week.problems
    hist_path = Path(history) if history is not None else week_dir.parent / HISTORY_CSV
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
                              n_prompts=P, n_models=M, n_conditions=len(ARMS))
        present_conds = set(distinct(week.s_cond[week.s_cond >= 0]).tolist())
        for c in (0, 1):
            # An A/A or with-all week has no with-skill arm by design: its own sections say so.
            # A version comparison (with-skill and with-skill@REF) needs no no-skill arm.
            versions_only = c == 0 and {1, ARMS.index(WITH_REF)} <= present_conds
            if c not in present_conds and (c == 0 or present_conds <= {0, 1}) and not (
                    versions_only):
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
    num = week.m_num
    nan_runs = np.full(week.n_runs, np.nan)
    cost = num.get("total_cost_usd", nan_runs)
    turns = num.get("num_turns", nan_runs)
    include = week.m_status == STATUS_OK
    cost_mean, cost_n = stats.cell_run_means(cost, week.m_model, week.m_cond, include, M,
                                             len(ARMS))
    turns_mean, _ = stats.cell_run_means(turns, week.m_model, week.m_cond, include & ~np.isnan(
        cost), M, len(ARMS))
    cost_excluded = int(np.count_nonzero(~(include & ~np.isnan(cost))))

    # History: this week's rows merged into the file (or in memory when not writing).
    run_key = week_dir.name
    window_end = week.window[1] if week.window else ""
    judge = judging.build(week_dir, history=hist_path, run_key=run_key, write=write,
                          flagged=week.s_judge_flagged if week.scores_present else None)
    contested = judging.contested_per_model(judge, week.models)
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
    can_write_history = write and any(lf.lift is not None for lf in lifts.values())
    try:
        existing = hist.read_history(hist_path)
    except hist.HistoryError as exc:
        # Never overwrite a file we cannot read: it may hold weeks we cannot rebuild.
        problems.append(Problem(str(hist_path), f"{exc}; it was left untouched and this "
                                "week was not added"))
        existing, can_write_history = [], False
    # Nor is it counted or plotted: only the runs that have a lift are history.
    has_lift = any(lf.lift is not None for lf in lifts.values())
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
    # The pass threshold the week was started with (week.json), for pass rates.
    pass_threshold, week_json_problem = verdicts.pass_threshold_of(week_dir)
    if week_json_problem:
        problems.append(Problem(WEEK_JSON, week_json_problem))

    ctx = Context(week=week, banner=banner, credit=credit,
                  n_excluded_run_items=n_excluded_run_items, agg=agg, lifts=lifts, boots=boots,
                  cost_mean=cost_mean, cost_n=cost_n, turns_mean=turns_mean,
                  cost_excluded=cost_excluded, hist_rows=hist_rows_now, wow=wow,
                  n_runs_hist=n_runs_hist, hist_path=hist_path, judge=judge, pool=pool,
                  pass_threshold=pass_threshold)
    job = PlotJob(None, None)

    def submit_plots(card: Scorecard) -> None:
        # Called once the forest plot's inputs (header, lift, prompts) are built: the plots
        # are drawn while the other sections are built and scorecard.md is rendered (it
        # links the plots the week gets; rendered again in the rare case one fails).
        nonlocal job, drawer
        job = PlotJob(forest=week_dir / FOREST_PNG if has_forest(card) else None,
                      trend=week_dir / TREND_PNG if has_trend(all_hist) else None)
        if drawer is None:
            return
        if agg is None or not job.requested():
            drawer.cancel()
            drawer = None
            return
        drawer.submit(job, card, all_hist, week.models)
        for name, path in job.requested().items():
            card["plots"][name] = path.name  # type: ignore[literal-required]

    data = build_card(ctx, when_built={PLOT_INPUTS_BUILT: submit_plots})

    def render() -> tuple[str, bytes]:
        """scorecard.md and (when writing) scorecard.json of the card as it is now."""
        data["problems"] = [str(p) for p in problems]
        return (scorecard.render_markdown(data),
                scorecard.render_json_bytes(data) if write else b"")

    written: list[Path] = []
    markdown, card_json = render()
    if drawer is not None:
        failed = drawer.finish()
        for name, error in failed.items():
            data["plots"][name] = None  # type: ignore[literal-required]
            problems.append(Problem("plots", f"could not draw the {name} plot: {error}"))
        written += [path for name, path in job.requested().items() if name not in failed]
        if failed:
            markdown, card_json = render()
    if write:
        md, js = scorecard_md(week_dir), week_dir / SCORECARD_JSON
        if md.name != SCORECARD_MD:  # another tool's scorecard.md stays as it is
            title, _, rest = markdown.partition("\n")
            markdown = (f"{title}\n\n> {SCORECARD_MD} in this directory was written by "
                        "another tool (the qdrant pipeline?) and is kept byte for byte; this "
                        f"summary is {md.name}.\n{rest}")
        atomic_write_text(md, markdown)
        atomic_write_bytes(js, card_json)
        written[:0] = [md, js]
        if can_write_history:
            written.append(hist_path)
    return Summary(week_dir, week, agg, lifts, boots, wow, data, markdown,
                   [str(p) for p in problems], written)
