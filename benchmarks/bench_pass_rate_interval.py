"""Coverage of the pass-rate intervals a gate can read (``pass_rate_ci_low``).

26 prompts × 2 reps (the real week's shape), true pass rates 0.5, 0.8, 0.94, 0.99; each
prompt's own rate drawn from a Beta with that mean and intra-prompt correlation ρ (0: every
prompt at the rate; larger: reps of a prompt agree more), each rep passing with its prompt's
rate. For each interval: two-sided coverage of the true rate and how often the lower bound
holds (true rate ≥ lower bound; a gate on the lower bound needs ≥ 97.5%), and how often the
lower bound is 1 (collapsed at the ceiling). Intervals: Wilson over reps (every rep
independent), the prompt-cluster percentile bootstrap (2,000 resamples), and Wilson at the
design effect's effective sample size (``stats.cluster_rate_interval``, the one the gate reads).

    python benchmarks/bench_pass_rate_interval.py              # 2000 weeks per row
    python benchmarks/bench_pass_rate_interval.py --sims 300   # quicker
"""

from __future__ import annotations

import argparse

import numpy as np

from pytest_skilllift.intervals import wilson_interval
from pytest_skilllift.report import stats

PROMPTS, REPS, SEED = 26, 2, 20260808


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=2000)
    args = ap.parse_args()
    rng = np.random.default_rng(SEED)
    methods = ("Wilson over reps", "cluster bootstrap", "design-effect Clopper–Pearson")
    print("| true rate | ρ | interval | coverage | lower bound holds | lower bound = 1 |")
    print("| ---: | ---: | --- | ---: | ---: | ---: |")
    for p in (0.5, 0.8, 0.94, 0.99):
        for rho in (0.0, 0.3, 0.7):
            hits = {m: [0, 0, 0] for m in methods}
            for _ in range(args.sims):
                if rho > 0:
                    s = 1.0 / rho - 1.0
                    q = rng.beta(p * s, (1 - p) * s, PROMPTS)
                else:
                    q = np.full(PROMPTS, p)
                k = rng.binomial(REPS, q).astype(float)
                n = np.full(PROMPTS, float(REPS))
                ivs = {methods[0]: wilson_interval(int(k.sum()), int(n.sum())),
                       methods[1]: stats.cluster_bootstrap_rate(
                           k, n, seed=int(rng.integers(2**31))),
                       methods[2]: stats.cluster_rate_interval(k, n)}
                for m, (lo, hi) in ivs.items():
                    assert lo is not None and hi is not None
                    hits[m][0] += lo <= p <= hi
                    hits[m][1] += lo <= p
                    hits[m][2] += lo >= 1.0 - 1e-12
            for m in methods:
                c, low, one = (x / args.sims for x in hits[m])
                print(f"| {p} | {rho} | {m} | {c:.1%} | {low:.1%} | {one:.1%} |")


if __name__ == "__main__":
    main()
