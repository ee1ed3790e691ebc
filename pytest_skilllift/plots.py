"""Pictures for the scorecard (matplotlib, Agg backend, PNG).

* forest plot: per-prompt must-coverage lift per model, each with its rep range
  ([min_with − max_no, max_with − min_no]) as the interval, and the model's mean lift with
  its 95% t interval as a band;
* trend chart: weekly lift ± SE per model once the history has at least two runs.

Inputs are the scorecard.json dict and the history rows: no statistics are computed here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # headless: CI machines and pytest runs have no display

import matplotlib.pyplot as plt
import numpy as np

from pytest_skilllift.history import HistoryRow, run_order

#: A forest plot with more rows than this is unreadable; beyond it the plot shows the
#: prompts with the largest |lift| and its title says how many of how many are shown.
MAX_FOREST_PROMPTS = 40


def forest_plot(data: dict[str, Any], path: Path) -> Path | None:
    """Draw the per-prompt lift forest plot; returns the path, or None with nothing to plot."""
    models = [m for m in data.get("model_order", []) if m in data.get("models", {})]
    rows_by_model: dict[str, list[dict[str, Any]]] = {m: [] for m in models}
    for r in data.get("prompts", []):
        if r["model"] in rows_by_model and r["must_lift"] is not None:
            rows_by_model[r["model"]].append(r)
    if not any(rows_by_model.values()):
        return None
    n_max = max(min(len(v), MAX_FOREST_PROMPTS) for v in rows_by_model.values())
    fig, axes = plt.subplots(1, len(models), figsize=(5.5 * len(models), 1.2 + 0.22 * n_max),
                             sharex=True, squeeze=False)
    for ax, label in zip(axes[0], models, strict=True):
        rows = rows_by_model[label]
        total = len(rows)
        if total > MAX_FOREST_PROMPTS:
            rows = sorted(rows, key=lambda r: -abs(r["must_lift"]))[:MAX_FOREST_PROMPTS]
        rows = sorted(rows, key=lambda r: r["prompt"], reverse=True)
        y = np.arange(len(rows))
        lift = np.array([r["must_lift"] for r in rows], float)

        def arr(key: str, default: np.ndarray, rows: list[dict[str, Any]] = rows) -> np.ndarray:
            return np.array([np.nan if r[key] is None else r[key] for r in rows], float) \
                if rows else default

        lo = arr("must_with_min", lift) - arr("must_no_max", lift)
        hi = arr("must_with_max", lift) - arr("must_no_min", lift)
        lo, hi = np.where(np.isnan(lo), lift, lo), np.where(np.isnan(hi), lift, hi)
        ax.errorbar(lift, y, xerr=[np.maximum(lift - lo, 0), np.maximum(hi - lift, 0)],
                    fmt="o", ms=4, color="#1f4e79", ecolor="#8fb3d9", elinewidth=2, capsize=0)
        m = data["models"][label]
        if m.get("ci_low") is not None:
            ax.axvspan(m["ci_low"], m["ci_high"], color="#f4b183", alpha=0.35,
                       label="mean lift, 95% t CI")
        if m.get("must_lift") is not None:
            ax.axvline(m["must_lift"], color="#c55a11", lw=1.5)
        ax.axvline(0.0, color="black", lw=0.8)
        ax.set_yticks(y)
        ax.set_yticklabels([r["prompt"] for r in rows], fontsize=7)
        ax.set_xlim(-1.05, 1.05)
        shown = f" — {len(rows)} of {total} prompts (largest |lift|)" if total > len(rows) \
            else f" — {total} prompts"
        # An explicit y skips matplotlib's title auto-positioning, which measures every
        # tick label again (a third of the drawing time on a full-size week).
        ax.set_title(f"{label}: must-coverage lift{shown}", fontsize=9, y=1.005)
        ax.set_xlabel("with-skill − no-skill (bars: rep range)", fontsize=8)
        ax.grid(axis="x", alpha=0.3)
        if m.get("ci_low") is not None:
            ax.legend(fontsize=7, loc="lower left")
    fig.suptitle(f"Per-prompt lift — {data.get('week', '')}"
                 + (f" — {data['banner']}" if data.get("banner") else ""), fontsize=10)
    # Fixed margins instead of tight_layout: tight_layout lays out every label twice more.
    height = 1.2 + 0.22 * n_max
    fig.subplots_adjust(left=0.27 / len(models) * 2 if len(models) > 1 else 0.3,
                        right=0.98, wspace=0.9, top=1 - 0.6 / height, bottom=0.55 / height)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return Path(path)


def trend_plot(rows: Sequence[HistoryRow], models: Sequence[str], path: Path) -> Path | None:
    """Weekly lift ± SE per model; None until the history has two runs."""
    order = run_order(rows)
    if len(order) < 2:
        return None
    x = {k: i for i, k in enumerate(order)}
    fig, ax = plt.subplots(figsize=(7, 3.5))
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
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return Path(path)
