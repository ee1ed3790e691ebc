"""Pictures for the scorecard (matplotlib, Agg backend, PNG).

* forest plot: per-prompt must-coverage lift, one panel per model on a shared prompt axis,
  each point with its rep range ([min_with − max_no, max_with − min_no]) as the interval, and
  the model's mean lift with its 95% t interval as a line and band;
* trend chart: weekly lift ± SE per model once the history has at least two runs.

Inputs are the scorecard.json dict and the history rows: no statistics are computed here.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

# Figures are made with the object API on the Agg canvas, not pyplot: headless by
# construction, no global figure registry to close, and no pyplot import (≈ 0.07 s of every
# `skilllift summarize`).
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from pytest_skilllift.report.plot_inputs import (
    forest_models,
    forest_order,
    forest_rows,
    has_trend,
)
from pytest_skilllift.week.history import HistoryRow, run_order

if TYPE_CHECKING:
    from pytest_skilllift.report.card import Scorecard

#: A forest plot with more rows than this is unreadable; beyond it the plot shows the
#: prompts with the largest |lift| in any model, and its title says how many of how many.
MAX_FOREST_PROMPTS = 40


# Text size estimates (inches), to lay the figures out without measuring every label:
# DejaVu Sans averages about 0.6 em per character; a line takes about 1.3 em.
def _text_width_in(chars: int, points: float) -> float:
    return chars * 0.6 * points / 72


def _line_height_in(points: float) -> float:
    return 1.3 * points / 72


_TITLE_PT, _LABEL_PT, _TICK_PT, _BANNER_PT = 10.0, 7.0, 8.0, 8.0

#: The banner (the demo's "scripted models" notice) takes at most this share of the image's
#: height: the figure grows rather than let a notice crowd out the plot it qualifies.
MAX_BANNER_SHARE = 0.1

#: Lifts live in [-1, 1]; the axis reaches past both ends so a point (its marker and its rep
#: range) at exactly ±1 is drawn whole instead of cut in half by the panel's edge.
FOREST_XLIM = 1.15


def wrap_words(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` characters, broken only between words: a word
    longer than a line gets a line of its own, and a hyphenated word ("stand-in") stays whole."""
    return textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False)


def _save(fig: Figure, path: Path) -> None:
    """The PNG through the week's atomic writer: never a torn file, never through a link
    (``savefig(path)`` would open, and overwrite, whatever a planted link names)."""
    import io

    from pytest_skilllift.week.files import atomic_write_bytes

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    atomic_write_bytes(path, buf.getvalue())


def _figure(width: float, height: float) -> Figure:
    """A figure (inches) on its own Agg canvas."""
    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)  # attaches itself as fig.canvas
    return fig


def forest_plot(data: Scorecard, path: Path) -> Path | None:
    """Draw the per-prompt lift forest plot; returns the path, or None with nothing to plot."""
    fig = forest_figure(data)
    if fig is None:
        return None
    _save(fig, Path(path))
    return Path(path)


def forest_figure(data: Scorecard) -> Figure | None:
    """The per-prompt lift forest plot, or None with nothing to plot.

    One panel per model on a shared prompt axis, so a row is the same prompt in every panel
    (and its label is drawn once).  Above ``MAX_FOREST_PROMPTS`` prompts the rows are those
    with the largest |lift| in any model, and the title says how many of how many.  The
    figure grows to fit its text: the left margin to the longest prompt name, the title
    (wrapped between words) to the figure's width; the banner gets lines of its own at the
    top and at most ``MAX_BANNER_SHARE`` of the height (the plot grows to keep it so).
    Prompts are ordered by lift, the largest at the top (``plot_inputs.forest_order``).
    """
    models = forest_models(data)
    by_key, biggest = forest_rows(data)
    if not biggest:
        return None
    total = len(biggest)
    prompts = sorted(biggest)
    if total > MAX_FOREST_PROMPTS:
        keep = set(sorted(prompts, key=lambda p: (-biggest[p], p))[:MAX_FOREST_PROMPTS])
        prompts = [p for p in prompts if p in keep]
    prompts = forest_order(data, prompts)
    prompts.reverse()  # row 0 is the bottom one: the largest lift ends up at the top
    n = len(prompts)
    y = np.arange(n)

    # Fixed margins in inches instead of tight_layout, which lays every label out twice more.
    left_in = 0.25 + _text_width_in(max(len(p) for p in prompts), _LABEL_PT)
    panel_in, right_in = 3.6, 0.3
    width = left_in + panel_in * len(models) + right_in
    shown = (f"{n} of {total} prompts, largest |lift|" if total > n else f"{total} prompts")
    per_line = max(20, int((width - 0.3) / _text_width_in(1, _TITLE_PT)))
    title = wrap_words(f"Per-prompt must-coverage lift — {data.get('week', '')} ({shown})",
                       per_line)
    banner = wrap_words(str(data.get("banner") or ""),
                        max(20, int((width - 0.3) / _text_width_in(1, _BANNER_PT))))
    banner_in = 0.1 + _line_height_in(_BANNER_PT) * len(banner) if banner else 0.0
    top_in = (0.15 + banner_in + _line_height_in(_TITLE_PT) * len(title)
              + 0.35)  # + the panel titles
    bottom_in = 0.2 + _line_height_in(_TICK_PT) + 2 * _line_height_in(_LABEL_PT) + 0.1
    height = max(top_in + max(1.0, 0.22 * n + 0.3) + bottom_in,
                 (banner_in + 0.1) / MAX_BANNER_SHARE)
    fig = _figure(width, height)
    # The panels share the prompt rows by their limits, not by sharey: a shared y axis gives
    # every panel all the prompts' ticks (drawn without labels) — most of the drawing time.
    axes = fig.subplots(1, len(models), sharex=True, squeeze=False)

    def col(label: str, key: Literal["must_lift", "must_no_min", "must_no_max",
                                     "must_with_min", "must_with_max"]) -> np.ndarray:
        return np.array([np.nan if (r := by_key.get((p, label))) is None or r[key] is None
                         else r[key] for p in prompts], float)

    for ax, label in zip(axes[0], models, strict=True):
        lift = col(label, "must_lift")
        lo = col(label, "must_with_min") - col(label, "must_no_max")
        hi = col(label, "must_with_max") - col(label, "must_no_min")
        lo, hi = np.where(np.isnan(lo), lift, lo), np.where(np.isnan(hi), lift, hi)
        ok = ~np.isnan(lift)
        ax.errorbar(lift[ok], y[ok], xerr=[np.maximum(lift - lo, 0)[ok],
                                           np.maximum(hi - lift, 0)[ok]],
                    fmt="o", ms=4, color="#1f4e79", ecolor="#8fb3d9", elinewidth=2, capsize=0)
        m = data["models"][label]
        if m.get("ci_low") is not None:
            ax.axvspan(m["ci_low"], m["ci_high"], color="#f4b183", alpha=0.35)
        if m.get("must_lift") is not None:
            ax.axvline(m["must_lift"], color="#c55a11", lw=1.5)
        ax.axvline(0.0, color="black", lw=0.8)
        ax.set_xlim(-FOREST_XLIM, FOREST_XLIM)
        ax.set_xticks([-1.0, -0.5, 0.0, 0.5, 1.0])
        ax.tick_params(axis="x", labelsize=_TICK_PT)
        # An explicit y skips matplotlib's title auto-positioning, which measures every
        # tick label again.
        ax.set_title(f"{label} (n = {m.get('n_prompts')})", fontsize=9, y=1.005)
        # The key lives in the axis label: a legend would sit on top of some prompt's row.
        ax.set_xlabel("must lift, with − no\n(bar: rep range; line and band: mean lift, 95% t CI)",
                      fontsize=_LABEL_PT)
        ax.grid(axis="x", alpha=0.3)
    for i, ax in enumerate(axes[0]):
        ax.set_ylim(-0.7, n - 0.3)
        if i:
            ax.set_yticks([])
    axes[0][0].set_yticks(y)
    axes[0][0].set_yticklabels(prompts, fontsize=_LABEL_PT)
    if banner:
        fig.text(0.5, 1 - 0.1 / height, "\n".join(banner), fontsize=_BANNER_PT, ha="center",
                 va="top", color="#9c2a00", gid="banner")
    fig.suptitle("\n".join(title), fontsize=_TITLE_PT, y=1 - (0.12 + banner_in) / height,
                 va="top")
    fig.subplots_adjust(left=left_in / width, right=1 - right_in / width, wspace=0.12,
                        top=1 - top_in / height, bottom=bottom_in / height)
    return fig


def trend_plot(rows: Sequence[HistoryRow], models: Sequence[str], path: Path) -> Path | None:
    """Weekly lift ± SE per model; None until the history has two runs."""
    fig = trend_figure(rows, models)
    if fig is None:
        return None
    _save(fig, Path(path))
    return Path(path)


def trend_figure(rows: Sequence[HistoryRow], models: Sequence[str]) -> Figure | None:
    """Weekly lift ± SE per model; None until the history has two runs."""
    if not has_trend(rows):
        return None
    order = run_order(rows)
    x = {k: i for i, k in enumerate(order)}
    fig = _figure(7, 3.5)
    ax = fig.subplots()
    labels = list(models) + sorted({r.model for r in rows} - set(models))
    for label in labels:
        pts = [r for r in rows if r.model == label and r.must_lift is not None]
        if not pts:
            continue
        pts.sort(key=lambda r: x[r.run_key])
        xs = [x[r.run_key] for r in pts]
        ys = [float(r.must_lift or 0.0) for r in pts]
        es = [r.must_lift_se or 0.0 for r in pts]
        ax.errorbar(xs, ys, yerr=es, marker="o", capsize=3, label=label)
    ax.axhline(0.0, color="black", lw=0.8)
    ax.set_xticks(range(len(order)))
    ax.set_xticklabels(order, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("must-coverage lift ± SE")
    ax.set_title("Weekly skill lift")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
