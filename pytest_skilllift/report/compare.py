"""Compare two weeks: did each model's lift move by more than the noise?

The don't-act threshold is the methodology's max(t·SE_Δ, between-week σ) (Reading
Week-Over-Week Movement).  Between-week σ needs history: it is taken from week b's
``../scorecard-history.csv`` when at least three runs precede b there; otherwise only the
within-week part is available and the report says so.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from pytest_skilllift.report import stats
from pytest_skilllift.report.markdown import fmt, md_table, signed
from pytest_skilllift.week import history as hist

#: Per-prompt movers shown per model (the count of all movers is always stated).
MAX_MOVERS = 10


def compare_weeks(a: Path, b: Path) -> str:
    """Markdown comparing week ``a`` (before) with week ``b`` (after); nothing is written."""
    from pytest_skilllift.report.summarize import summarize_week

    a, b = Path(a), Path(b)
    sa = summarize_week(a, write=False, plots=False)
    sb = summarize_week(b, write=False, plots=False)
    L = [f"# Week comparison — {a.name} → {b.name}\n"]
    for name, s in ((a.name, sa), (b.name, sb)):
        if s.problems:
            L.append(f"- ⚠ {name} has {len(s.problems)} input problem(s), first: "
                     f"{s.problems[0]}")
    if sa.problems or sb.problems:
        L.append("")

    try:
        history_rows = hist.read_history(b.parent / "scorecard-history.csv")
    except hist.HistoryError as exc:
        L.append(f"- ⚠ history not used: {exc}\n")
        history_rows = []
    L.append("## Lift per model (must_coverage, with-skill − no-skill)\n")
    rows = []
    notes = []
    models = [m for m in sb.data["model_order"] if m in sa.data["models"]
              and m in sb.data["models"]]
    for label in models:
        ma, mb = sa.data["models"][label], sb.data["models"][label]
        la, lb = ma["must_lift"], mb["must_lift"]
        delta = None if la is None or lb is None else lb - la
        within = None
        if ma["must_lift_se"] is not None and mb["must_lift_se"] is not None:
            se_d = math.sqrt(ma["must_lift_se"] ** 2 + mb["must_lift_se"] ** 2)
            within = stats.t_quantile(mb["n_prompts"] - 1) * se_d
        prior = [x for _, x, _ in hist.prior_runs(history_rows, b.name, label)
                 if x is not None]
        between = float(np.std(prior, ddof=1)) if len(prior) >= 3 else None
        cands = [x for x in (within, between) if x is not None]
        threshold = max(cands) if cands else None
        if delta is None or threshold is None:
            clears = "n/a"
        else:
            clears = "yes" if abs(delta) > threshold else "no (within noise)"
        rows.append([label, f"{fmt(la)} ± {fmt(ma['must_lift_se'])}",
                     f"{fmt(lb)} ± {fmt(mb['must_lift_se'])}", signed(delta), fmt(within),
                     fmt(between), fmt(threshold), clears])
        if between is None:
            notes.append(label)
    if rows:
        L += md_table(["model", f"lift {a.name}", f"lift {b.name}", "Δ", "t·SE_Δ (within)",
                       "σ (between)", "threshold", "clears threshold?"], rows)
    else:
        L.append("_No model has a lift in both weeks._")
    L.append("")
    if notes:
        L.append(f"_σ (between) needs at least three runs before {b.name} in "
                 "scorecard-history.csv; until then the threshold is the within-week part "
                 "only, and small deltas should be read as noise._\n")

    L.append("## Per-prompt movers (Δ of the prompt's must lift)\n")
    for label in models:
        pa = {r["prompt"]: r for r in sa.data["prompts"] if r["model"] == label}
        pb = {r["prompt"]: r for r in sb.data["prompts"] if r["model"] == label}
        movers: list[tuple[float, str, Any, Any]] = []
        for p in sorted(set(pa) & set(pb)):
            x, y = pa[p]["must_lift"], pb[p]["must_lift"]
            if x is not None and y is not None:
                movers.append((y - x, p, x, y))
        only = len(set(pa) ^ set(pb))
        moved = [m for m in movers if abs(m[0]) > 1e-9]
        moved.sort(key=lambda m: (-abs(m[0]), m[1]))
        L.append(f"### {label}\n")
        L.append(f"{len(moved)} of {len(movers)} prompts in both weeks moved"
                 + (f"; {only} prompt(s) are in only one week" if only else "") + ".\n")
        if moved:
            shown = moved[:MAX_MOVERS]
            L += md_table(["prompt", f"lift {a.name}", f"lift {b.name}", "Δ"],
                          [[p, signed(x), signed(y), signed(d)] for d, p, x, y in shown])
            if len(moved) > len(shown):
                L.append(f"\n_Showing the {len(shown)} largest of {len(moved)} movers._")
            L.append("")
    return "\n".join(L)
