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

from pytest_skilllift.report import judging, scorecard, stats, verdicts
from pytest_skilllift.report.card import Scorecard, build_card
from pytest_skilllift.report.context import Context
from pytest_skilllift.report.markdown import ci_flag, fmt, signed
from pytest_skilllift.report.plot_drawing import PLOTS_MODULE, Drawer, PlotJob, start_drawer
from pytest_skilllift.report.plot_inputs import PLOT_INPUTS_BUILT, has_forest, has_trend
from pytest_skilllift.week.files import (
    FOREST_PNG,
    HISTORY_CSV,
    SCORECARD_JSON,
    SCORECARD_MD,
    SCORECARD_OURS_MD,
    TREND_PNG,
    WEEK_JSON,
    atomic_write_bytes,
    atomic_write_text,
    scorecard_md,
)
from pytest_skilllift.week.tables import Problem, Week, load_week


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

    def terminal_lines(self, *, scorecard_path: bool = True, counts: bool = True
                       ) -> list[str]:
        """A compact lift table for a pytest terminal summary (or a shell); the last line
        says where scorecard.md is, unless ``scorecard_path`` is False; ``counts=False``
        leaves out the graded-runs line (a session that says the same count once itself)."""
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
        from pytest_skilllift.report.sections.rewards import terminal_lines as reward_lines

        lines += reward_lines(self.data)  # Harbor tasks' headline, never mixed into must's
        from pytest_skilllift.report.sections.task_rubric import terminal_lines as rubric_lines

        lines += rubric_lines(self.data)  # the tasks' rubric.json coverage, its own line
        from pytest_skilllift.report.sections.judge_audit import terminal_lines as judge_lines

        lines += judge_lines(self.data.get("judge"))  # type: ignore[arg-type]
        cov = self.data.get("coverage", {})
        if counts or cov.get("dropped"):
            lines.append(f"  graded {cov.get('graded_runs', 0)} of {cov.get('total_runs', 0)} "
                         f"runs; dropped {len(cov.get('dropped', []))}")
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
        from pytest_skilllift.report.sections.rewards import closing_part

        rewards = closing_part(self.data)
        if rewards:
            parts.insert(1, rewards)
        parts += [f"scorecard: {p}" for p in self.written if p.name == SCORECARD_MD]
        parts += [f"history: {p}" for p in self.written if p.name == HISTORY_CSV]
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
    note: str | None = None,
) -> Summary:
    """Summarize a week directory into scorecard.md / scorecard.json (+ plots, history).

    ``history`` defaults to ``<week_dir>/../scorecard-history.csv``.  With
    ``write=False`` nothing is written (the history is merged in memory only, and no
    plots are drawn); ``banner`` is shown at the very top (e.g. "DEMO — scripted models"),
    ``note`` as one plain line under it (not in the plots).
    ``plot_process`` draws the plots in a worker process (True) or here (False); by default
    in a worker unless matplotlib is loaded already (``report.plot_drawing``).
    """
    week_dir = Path(week_dir)
    # A plot worker imports matplotlib while this process reads and computes the week (at a
    # lower priority: the CSV parse keeps both cores busy, and the numbers come first).
    drawer = start_drawer(process=plot_process) if write and plots else None
    try:
        return _summarize(week_dir, drawer, history=history, write=write, banner=banner,
                          note=note)
    except BaseException:
        if drawer is not None:  # never leave a worker waiting for a job that will not come
            drawer.cancel()
        raise


def _summarize(week_dir: Path, drawer: Drawer | None, *, history: Path | None, write: bool,
               banner: str | None, note: str | None = None) -> Summary:
    """``summarize_week``'s work; ``drawer`` draws the plots (None: no plots)."""
    week = load_week(week_dir)
    hist_path = Path(history) if history is not None else week_dir.parent / HISTORY_CSV
    judge = judging.build(week_dir, history=hist_path, run_key=week_dir.name, write=write,
                          flagged=week.scores.judge_flagged if week.scores.present else None)
    # The pass threshold the week was started with (week.json), for pass rates; a problem
    # with week.json is listed after the ones the numbers found (as it always was).
    pass_threshold, week_json_problem = verdicts.pass_threshold_of(week_dir)
    ctx = Context.of_week(week, judge=judge,
                          contested=judging.contested_per_model(judge, week.models),
                          pass_threshold=pass_threshold, hist_path=hist_path, write=write,
                          banner=banner)
    if week_json_problem:
        week.problems.append(Problem(WEEK_JSON, week_json_problem))
    problems, all_hist, agg = week.problems, ctx.all_hist, ctx.agg
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
    data["note"] = note
    data["verdict"] = verdicts.verdict_sentence(data.get("models") or {})

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
        if ctx.history_written:
            written.append(ctx.hist_path)
    return Summary(week_dir, week, agg, ctx.lifts, ctx.boots, ctx.wow, data, markdown,
                   [str(p) for p in problems], written)
