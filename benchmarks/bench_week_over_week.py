"""How often SCORING.md's don't-act rule max(t·SE_Δ, σ) calls a no-change week a move.

qdrant/skills SCORING.md (Reading Week-Over-Week Movement) acts on a lift change Δ only when
|Δ| > max(t·SE_Δ, σ), SE_Δ = √(SE_now² + SE_prev²), σ the SD of the lift over the history's
earlier runs. Its t·SE_Δ part treats the two weeks as independent samples, so on its own it
is conservative for the *sampling* noise. But a week's lift also drifts from week to week
(model builds, docs, the judge): with drift τ between weeks and no change to the skill,
Δ has variance 2τ² + 2SE², and σ — estimated from a few runs — does not always cover it.

Simulated, seeded: 26 prompts (t quantile at 25 df), each week's lift = μ + drift (τ) +
sampling error (SE); σ from K earlier runs; the share of no-change weeks whose |Δ| clears
the rule, for τ/SE = 0 … 3 and K = 3, 5, 10 (the scorecard computes σ from 3 runs on).

    python benchmarks/bench_week_over_week.py              # 200,000 weeks per row
    python benchmarks/bench_week_over_week.py --sims 20000
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from pytest_skilllift.report import stats

SEED = 20260808
PROMPTS = 26


def clears_rate(tau: float, k: int, sims: int, rng: np.random.Generator, se: float = 1.0
                ) -> tuple[float, float]:
    """(share of no-change weeks clearing the whole rule, share clearing its t·SE_Δ part)."""
    t = stats.t_quantile(PROMPTS - 1)
    lifts = (rng.normal(0.0, tau, (sims, k + 2)) if tau > 0 else np.zeros((sims, k + 2))) \
        + rng.normal(0.0, se, (sims, k + 2))
    prior, prev, now = lifts[:, :k], lifts[:, k], lifts[:, k + 1]
    sigma = prior.std(axis=1, ddof=1)
    within = t * math.sqrt(2.0) * se
    delta = np.abs(now - prev)
    return (float(np.mean(delta > np.maximum(within, sigma))), float(np.mean(delta > within)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=200_000)
    args = ap.parse_args()
    rng = np.random.default_rng(SEED)
    print("| drift τ / SE | σ from K runs | no-change weeks clearing max(t·SE_Δ, σ) | "
          "clearing t·SE_Δ alone |")
    print("| ---: | ---: | ---: | ---: |")
    for tau in (0.0, 0.5, 1.0, 2.0, 3.0):
        for k in (3, 5, 10):
            rule, within = clears_rate(tau, k, args.sims, rng)
            print(f"| {tau:g} | {k} | {rule:.1%} | {within:.1%} |")


if __name__ == "__main__":
    main()
