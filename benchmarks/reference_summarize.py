"""The reference summarizer, re-implemented for timing: a plain ``csv``-module loop.

qdrant/skills SCORING.md ("Aggregation", "Outputs") describes the weekly summarizer of the
qdrant pipeline: read ``scores.csv`` and ``manifest.csv`` row by row, group the items
prompt × rep → prompt → cell (model × condition) as flat per-prompt macro-averages, compute the
paired per-prompt must-coverage lift ± SE per model, the cost/turns deltas, and write
``scorecard.md`` (lift table, per-cell and per-prompt tables, activation, baseline
self-served, every avoid violation with its evidence, coverage, cost & time, provenance) and
upsert the history file.  This module does exactly that in pure Python (``csv.DictReader``,
``collections``, ``statistics``), so ``bench_summarize.py`` can time the reference way of
computing the same numbers side by side with ``skilllift summarize`` in one run, and check that
both agree on every model's lift and SE.

It is a benchmark baseline, not part of the package: it validates nothing and stops at the
first malformed row, as a straightforward loop would.

    python benchmarks/reference_summarize.py WEEK_DIR [--out scorecard-reference.md]
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path

MODEL_ORDER = ("opus", "sonnet", "haiku")
CONDITIONS = ("no-skill", "with-skill")
UNGRADED = {"", "PARSE_ERROR"}
METRICS = ("must_coverage", "bonus_rate", "avoid_violations", "composite")
# Two-sided 95% Student-t quantiles (standard table); df above the last row uses 1.96.
T95 = ((1, 12.706), (2, 4.303), (3, 3.182), (4, 2.776), (5, 2.571), (6, 2.447), (7, 2.365),
       (8, 2.306), (9, 2.262), (10, 2.228), (12, 2.179), (15, 2.131), (20, 2.086),
       (25, 2.060), (30, 2.042), (40, 2.021), (60, 2.000), (120, 1.980))


def t95(df: int) -> float:
    """Conservative 95% t multiplier: the largest tabulated df not above ``df``."""
    if df >= 120:
        return 1.960
    best = T95[0][1]
    for d, t in T95:
        if d <= df:
            best = t
    return best


def mean_or_none(values: list[float]) -> float | None:
    return statistics.mean(values) if values else None


def fmt(x: float | None, nd: int = 3) -> str:
    return "n/a" if x is None else f"{x:.{nd}f}"


def signed(x: float | None, nd: int = 3) -> str:
    return "n/a" if x is None else f"{x:+.{nd}f}"


def table(headers: list[str], rows: list[list[str]]) -> list[str]:
    widths = [len(h) for h in headers]
    for r in rows:
        for i, c in enumerate(r):
            widths[i] = max(widths[i], len(c))

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(widths[i]) for i, c in enumerate(cells)) + " |"

    return [line(headers), "| " + " | ".join("-" * w for w in widths) + " |",
            *(line(r) for r in rows)]


def rep_metrics(items: list[dict[str, str]]) -> dict[str, float | None]:
    """One prompt × rep: the three metrics and the clamped composite (SCORING.md)."""
    must = [float(i["credit"]) for i in items if i["item_type"] == "must"]
    bonus = [float(i["credit"]) for i in items if i["item_type"] == "bonus"]
    avoid = [float(i["credit"]) for i in items if i["item_type"] == "avoid"]
    must_cov = mean_or_none(must)
    bonus_rate = mean_or_none(bonus)
    violations = sum(avoid)
    composite = None
    if must_cov is not None:
        composite = min(1.0, max(0.0, must_cov + 0.10 * (bonus_rate or 0.0)
                                 - 0.25 * violations))
    return {"must_coverage": must_cov, "bonus_rate": bonus_rate,
            "avoid_violations": violations, "composite": composite}


def average(dicts: list[dict[str, float | None]]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for k in METRICS:
        vals = [d[k] for d in dicts if d[k] is not None]
        out[k] = statistics.mean(vals) if vals else None  # type: ignore[type-var]
    return out


def summarize(week: Path, out: Path, history: Path) -> dict[str, dict[str, float | None]]:
    """Read the week, compute the scorecard's numbers, write ``out`` and upsert ``history``.
    Returns per model {"lift", "se", "n"} for the parity check."""
    with (week / "scores.csv").open(newline="", encoding="utf-8") as f:
        scores = list(csv.DictReader(f))
    with (week / "manifest.csv").open(newline="", encoding="utf-8") as f:
        manifest = list(csv.DictReader(f))

    # Runs that must not be scored (invalid install, errored, budget-capped).
    def run_ok(r: dict[str, str]) -> bool:
        if r.get("budget_hit") == "1" or r.get("exit_code", "0") != "0":
            return False
        return not (r["condition"] == "with-skill" and r.get("skill_available") == "0")

    ok_runs = {(r["prompt"], r["model"], r["condition"], r["rep"]) for r in manifest
               if run_ok(r)}

    # item → prompt × rep
    by_rep: dict[tuple[str, str, str, str], list[dict[str, str]]] = defaultdict(list)
    contested = ungraded = 0
    violations = []
    for r in scores:
        if r["verdict"] in UNGRADED:
            ungraded += 1
            continue
        if r.get("contested") not in (None, "", "0", "false", "False"):
            contested += 1
        key = (r["prompt"], r["model"], r["condition"], r["rep"])
        if key not in ok_runs:
            continue
        by_rep[key].append(r)
        if r["item_type"] == "avoid" and r["verdict"] == "violated" and float(r["credit"]) > 0:
            violations.append(r)
    rep_level = {k: rep_metrics(v) for k, v in by_rep.items()}

    # prompt × rep → prompt (mean over reps, min–max kept as the stability signal)
    by_prompt: dict[tuple[str, str, str], list[dict[str, float | None]]] = defaultdict(list)
    for (prompt, model, cond, _rep), level in rep_level.items():
        by_prompt[(prompt, model, cond)].append(level)
    prompt_level = {k: average(v) for k, v in by_prompt.items()}
    rep_range = {}
    for k, v in by_prompt.items():
        covs = [rec["must_coverage"] for rec in v if rec["must_coverage"] is not None]
        rep_range[k] = (min(covs), max(covs)) if covs else (None, None)

    # prompt → cell (flat macro-average over prompts)
    by_cell: dict[tuple[str, str], list[dict[str, float | None]]] = defaultdict(list)
    for (_prompt, model, cond), level in prompt_level.items():
        by_cell[(model, cond)].append(level)
    cells = {k: average(v) for k, v in by_cell.items()}
    cell_n = {k: len(v) for k, v in by_cell.items()}

    seen = {m for (m, _c) in cells}
    models = [m for m in MODEL_ORDER if m in seen] + sorted(seen - set(MODEL_ORDER))
    prompts = sorted({p for (p, _m, _c) in prompt_level})

    # cost and turns: mean over ok runs with a cost
    cost: dict[tuple[str, str], list[float]] = defaultdict(list)
    turns: dict[tuple[str, str], list[float]] = defaultdict(list)
    durations = []
    for r in manifest:
        if r.get("duration_ms"):
            durations.append(float(r["duration_ms"]))
        if not run_ok(r) or not r.get("total_cost_usd"):
            continue
        cost[(r["model"], r["condition"])].append(float(r["total_cost_usd"]))
        if r.get("num_turns"):
            turns[(r["model"], r["condition"])].append(float(r["num_turns"]))

    def cell_mean(d: dict[tuple[str, str], list[float]], m: str, c: str) -> float | None:
        return mean_or_none(d.get((m, c), []))

    # paired per-prompt lift ± SE per model
    lifts: dict[str, dict[str, float | None]] = {}
    for m in models:
        ds = []
        for p in prompts:
            a = prompt_level.get((p, m, "no-skill"), {}).get("must_coverage")
            b = prompt_level.get((p, m, "with-skill"), {}).get("must_coverage")
            if a is not None and b is not None:
                ds.append(b - a)
        n = len(ds)
        lift = statistics.mean(ds) if ds else None
        se = statistics.stdev(ds) / math.sqrt(n) if n >= 2 else None
        lifts[m] = {"lift": lift, "se": se, "n": float(n),
                    "excludes_zero": float(lift is not None and se is not None
                                           and abs(lift) > t95(n - 1) * se)}

    def delta(a: float | None, b: float | None) -> float | None:
        return None if a is None or b is None else b - a

    L = [f"# Weekly Skill Scorecard — {week.name}", "",
         "## Lift per model (with-skill − no-skill)", ""]
    rows: list[list[str]] = []
    for m in models:
        no, wi = cells.get((m, "no-skill"), {}), cells.get((m, "with-skill"), {})
        lf = lifts[m]
        rows.append([m, f"{fmt(no.get('must_coverage'))} → {fmt(wi.get('must_coverage'))}",
                     f"{signed(lf['lift'])} ± {fmt(lf['se'])}",
                     "yes" if lf["excludes_zero"] else "no",
                     signed(delta(no.get("bonus_rate"), wi.get("bonus_rate"))),
                     signed(delta(no.get("avoid_violations"), wi.get("avoid_violations")), 2),
                     signed(delta(cell_mean(cost, m, "no-skill"),
                                  cell_mean(cost, m, "with-skill")), 4),
                     signed(delta(cell_mean(turns, m, "no-skill"),
                                  cell_mean(turns, m, "with-skill")), 1)])
    L += table(["model", "must_coverage no→with", "must lift ± SE", "95% CI != 0?", "Δbonus",
                "Δavoid", "Δcost ($)", "Δturns"], rows)

    L += ["", "## Per-cell metrics", ""]
    rows = []
    for m in models:
        for c in CONDITIONS:
            x = cells.get((m, c))
            if x is None:
                continue
            rows.append([m, c, fmt(x["must_coverage"]), fmt(x["bonus_rate"]),
                         fmt(x["avoid_violations"], 2), fmt(x["composite"]),
                         fmt(cell_mean(cost, m, c), 4), fmt(cell_mean(turns, m, c), 1),
                         str(cell_n[(m, c)])])
    L += table(["model", "condition", "must_cov", "bonus_rate", "avoid_viol", "composite",
                "mean cost", "mean turns", "n"], rows)

    L += ["", "## Per-prompt (must_coverage; with-skill lift)", ""]
    rows = []
    for p in prompts:
        for m in models:
            no, wi = prompt_level.get((p, m, "no-skill"), {}), prompt_level.get(
                (p, m, "with-skill"), {})
            if not no and not wi:
                continue
            lo_n, hi_n = rep_range.get((p, m, "no-skill"), (None, None))
            lo_w, hi_w = rep_range.get((p, m, "with-skill"), (None, None))
            rows.append([p, m, f"{fmt(no.get('must_coverage'))} → {fmt(wi.get('must_coverage'))}",
                         signed(delta(no.get("must_coverage"), wi.get("must_coverage"))),
                         f"{fmt(no.get('composite'))} → {fmt(wi.get('composite'))}",
                         f"{fmt(lo_n, 2)}–{fmt(hi_n, 2)} / {fmt(lo_w, 2)}–{fmt(hi_w, 2)}"])
    L += table(["prompt", "model", "must no→with", "must lift", "comp no→with",
                "rep min–max (no / with)"], rows)

    L += ["", "## Activation / trigger misses", ""]
    with_skill = [r for r in manifest if r["condition"] == "with-skill"]
    acts = Counter(r.get("skill_activation", "") for r in with_skill)
    L += [f"- with-skill runs: **{len(with_skill)}**",
          f"- trigger misses (activation=none): **{acts.get('none', 0)}**",
          f"- sourced from the published site (web_fetch): **{acts.get('web_fetch', 0)}**", ""]
    per_prompt_runs: dict[str, list[dict[str, str]]] = defaultdict(list)
    for r in with_skill:
        per_prompt_runs[r["prompt"]].append(r)
    rows = []
    for p in sorted(per_prompt_runs):
        runs = per_prompt_runs[p]
        seen_acts = Counter(r.get("skill_activation", "") for r in runs)
        leaf = sum(1 for r in runs if r.get("reached_leaf") == "1")
        flag = "  ⚠ never triggered" if seen_acts.get("none", 0) == len(runs) else ""
        rows.append([p, ", ".join(f"{k}×{v}" for k, v in sorted(seen_acts.items())) + flag,
                     f"{leaf}/{len(runs)}"])
    L += table(["prompt", "activations (with-skill)", "reached leaf"], rows)

    L += ["", "## Lift caveat — baseline self-served the skill", ""]
    no_skill = [r for r in manifest if r["condition"] == "no-skill"]
    served = [r for r in no_skill if r.get("fetched_site") == "1"]
    L.append(f"- no-skill runs that fetched the published skills: **{len(served)} of "
             f"{len(no_skill)}**")
    if served:
        L.append(f"- affected prompts: {', '.join(sorted({r['prompt'] for r in served}))}")

    L += ["", "## `avoid` violations (most damaging failures)", ""]
    violations.sort(key=lambda r: (r["prompt"], r["model"], r["condition"]))
    L += table(["prompt", "model", "condition", "violated item", "evidence"],
               [[r["prompt"], r["model"], r["condition"], r.get("item_text", "")[:80],
                 (r.get("evidence_quote") or "").replace("|", "\\|")[:120]]
                for r in violations]) if violations else ["_None._"]

    L += ["", "## Coverage", ""]
    graded = set(by_rep)
    dropped = [r for r in manifest
               if (r["prompt"], r["model"], r["condition"], r["rep"]) not in graded]
    L += [f"- runs graded: **{len(graded)} of {len(manifest)}**",
          f"- dropped: **{len(dropped)}**"]
    if dropped:
        L += table(["run_id", "prompt", "model", "condition"],
                   [[r["run_id"], r["prompt"], r["model"], r["condition"]] for r in dropped])

    L += ["", "## Cost & time", ""]
    spend: dict[str, float] = defaultdict(float)
    for r in manifest:
        if r.get("total_cost_usd"):
            spend[r["model"]] += float(r["total_cost_usd"])
    L += [f"- generation $ {m}: {spend[m]:.2f}" for m in models]
    if durations:
        L.append(f"- compute time: Σ {sum(durations) / 60000:.1f} min, mean "
                 f"{statistics.mean(durations) / 1000:.1f} s, median "
                 f"{statistics.median(durations) / 1000:.1f} s, max {max(durations) / 1000:.1f} s")

    L += ["", "## Run health", "", f"- contested items: {contested}",
          f"- ungraded items: {ungraded}",
          f"- signals not parsed: {sum(1 for r in manifest if r.get('signals_ok') == '0')}"]

    L += ["", "## Provenance", ""]
    snaps: dict[str, set[str]] = defaultdict(set)
    for r in manifest:
        if r.get("model_snapshot"):
            snaps[r["model"]].add(r["model_snapshot"])
    L += [f"- {m}: {', '.join(sorted(snaps[m]))}" for m in models]
    L.append(f"- CLI: {', '.join(sorted({r.get('cli_version', '') for r in manifest}))}")
    L.append(f"- skills: {', '.join(sorted({r.get('skills_sha', '') for r in manifest}))}")
    stamps = sorted(r["timestamp"] for r in manifest if r.get("timestamp"))
    if stamps:
        L.append(f"- window: {stamps[0]} → {stamps[-1]}")
    out.write_text("\n".join(L) + "\n", encoding="utf-8")

    # history upsert (one row per model, this week's replaced)
    cols = ["run_key", "window_end", "model", "must_lift", "must_lift_se"]
    old = []
    if history.exists():
        with history.open(newline="", encoding="utf-8") as f:
            old = [r for r in csv.DictReader(f) if r.get("run_key") != week.name]
    with history.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        w.writerows(old)
        for m in models:
            w.writerow({"run_key": week.name, "window_end": stamps[-1] if stamps else "",
                        "model": m, "must_lift": lifts[m]["lift"],
                        "must_lift_se": lifts[m]["se"]})
    return lifts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("week", type=Path)
    ap.add_argument("--out", type=Path, help="default: WEEK/scorecard-reference.md")
    ap.add_argument("--history", type=Path,
                    help="default: WEEK/../scorecard-history-reference.csv")
    args = ap.parse_args()
    lifts = summarize(args.week, args.out or args.week / "scorecard-reference.md",
                      args.history or args.week.parent / "scorecard-history-reference.csv")
    json.dump(lifts, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
