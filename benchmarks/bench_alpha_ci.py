"""Coverage of the panel's Krippendorff alpha CI (``report.judge_audit.alpha_with_ci``).

The scorecard reports alpha with a "95% CI" from a percentile bootstrap that resamples runs.
This simulation measures how often that interval holds the true alpha.

Model: a week of ``runs`` runs × ``items`` rubric items; an item's true verdict is met with
probability ``base``; each of three judges reports it, flipping it with its own error rate
(``--errors``, e.g. 0.05,0.10,0.20), and a run has a shared difficulty that raises every
judge's flip rate by ``--run-shift`` on a random half of the runs (items within a run are not
independent: why the bootstrap resamples runs). The true alpha is the alpha of one very large
week drawn from the same model (``--truth-runs`` runs). Then ``--reps`` weeks of ``runs`` runs
are drawn, each gets its CI, and the share whose CI holds the true alpha is the coverage,
with its Wilson 95% interval.

    python benchmarks/bench_alpha_ci.py                      # runs 10, 30, 100
    python benchmarks/bench_alpha_ci.py --runs 30 --reps 400 --resamples 1000
"""

from __future__ import annotations

import argparse
import random
import time

from pytest_skilllift.intervals import krippendorff_alpha, wilson_interval
from pytest_skilllift.report.judge_audit import alpha_with_ci


def draw_week(rng: random.Random, runs: int, items: int, base: float,
              errors: list[float], shift: float) -> list[list[list[str]]]:
    week = []
    for _ in range(runs):
        hard = rng.random() < 0.5
        units = []
        for _i in range(items):
            truth = rng.random() < base
            votes = []
            for e in errors:
                flip = rng.random() < e + (shift if hard else 0.0)
                votes.append("met" if truth != flip else "missing")
            units.append(votes)
        week.append(units)
    return week


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", default="10,30,100")
    ap.add_argument("--items", type=int, default=6)
    ap.add_argument("--base", type=float, default=0.5)
    ap.add_argument("--errors", default="0.05,0.10,0.20")
    ap.add_argument("--run-shift", type=float, default=0.10)
    ap.add_argument("--reps", type=int, default=300)
    ap.add_argument("--resamples", type=int, default=500)
    ap.add_argument("--truth-runs", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    errors = [float(e) for e in args.errors.split(",")]
    rng = random.Random(args.seed)
    truth_week = draw_week(rng, args.truth_runs, args.items, args.base, errors, args.run_shift)
    truth = krippendorff_alpha([u for run in truth_week for u in run])
    assert truth is not None
    print(f"true alpha {truth:.4f} (one week of {args.truth_runs} runs × {args.items} items; "
          f"judge errors {args.errors}, run shift {args.run_shift:g})")
    print("| runs | weeks | CI holds the true alpha | Wilson 95% | mean CI width | s |")
    print("| --- | --- | --- | --- | --- | --- |")
    for runs in (int(r) for r in args.runs.split(",")):
        started = time.monotonic()
        hits = n = 0
        widths = 0.0
        for rep in range(args.reps):
            week = draw_week(rng, runs, args.items, args.base, errors, args.run_shift)
            _alpha, ci, _draws = alpha_with_ci(week, resamples=args.resamples, seed=rep)
            if ci is None:
                continue
            n += 1
            hits += ci[0] <= truth <= ci[1]
            widths += ci[1] - ci[0]
        lo, hi = wilson_interval(hits, n)
        print(f"| {runs} | {n} | {hits / n:.3f} | [{lo:.3f}, {hi:.3f}] | {widths / n:.3f} | "
              f"{time.monotonic() - started:.0f} |")


if __name__ == "__main__":
    main()
