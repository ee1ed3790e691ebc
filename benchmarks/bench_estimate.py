"""How often the price estimate's range holds the next week's actual, on the real week.

The real qdrant/skills week (``tests/fixtures/data/qdrant-skills/weekly/20260808``: 26 prompts
× 2 models × 2 conditions × 2 reps) is split into a "previous week" and a "next week" of the
same prompts: for every prompt one rep, drawn at random, is history and the other rep is the
week to estimate. The estimate of each (label, arm) is ``run.estimate``'s rule (n·mean ±
2·s·√(n + n²/m)); the total's range adds the four cells' ranges. Over ``--draws`` random
splits the table gives how often the actual sum lay inside the range, per cell and in total,
for generation $ and for run seconds.

    python benchmarks/bench_estimate.py [--draws 2000] [--seed 1]
"""

from __future__ import annotations

import argparse
import csv
import random
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pytest_skilllift.run.estimate import ZERO, _from_samples  # noqa: E402

WEEK = REPO / "tests" / "fixtures" / "data" / "qdrant-skills" / "weekly" / "20260808"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--draws", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    with (WEEK / "manifest.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    # (label, condition) -> prompt -> [(usd, seconds) per rep]
    cells: dict[tuple[str, str], dict[str, list[tuple[float, float]]]] = defaultdict(
        lambda: defaultdict(list))
    for r in rows:
        cells[r["model"], r["condition"]][r["prompt"]].append(
            (float(r["total_cost_usd"]), float(r["duration_ms"]) / 1000))
    hits: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for _ in range(args.draws):
        total_range = {"usd": ZERO, "s": ZERO}  # the week's summed range and actual sum
        total_actual = {"usd": 0.0, "s": 0.0}
        for key, prompts in sorted(cells.items()):
            past, now = [], []
            for reps in prompts.values():
                if len(reps) != 2:
                    continue
                i = rng.randrange(2)
                past.append(reps[i])
                now.append(reps[1 - i])
            for j, what in ((0, "usd"), (1, "s")):
                got = _from_samples([p[j] for p in past], len(now))
                assert got is not None
                rng_, _mean, _sd = got
                actual = sum(p[j] for p in now)
                inside = rng_.contains(actual)
                hits[f"{key[0]} {key[1]} {what}"][0] += bool(inside)
                hits[f"{key[0]} {key[1]} {what}"][1] += 1
                total_range[what] = total_range[what] + rng_
                total_actual[what] += actual
        for what, week_range in total_range.items():
            hits[f"total {what}"][0] += bool(week_range.contains(total_actual[what]))
            hits[f"total {what}"][1] += 1
    print(f"| range holds the next week's actual | share of {args.draws} splits |")
    print("|---|---|")
    for name, (k, n) in hits.items():
        print(f"| {name} | {k / n:.3f} |")


if __name__ == "__main__":
    main()
