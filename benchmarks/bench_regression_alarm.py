"""The regression alarm's false-alarm rate and power, at full size (the suite runs 200 pairs).

``skilllift compare --fail-on-regression`` must not cry wolf: on two weeks with no real change
the share of weeks with any alarm is at most 5%, and a real regression (one prompt's with-skill
musts all missing in every rep) is still found. This measures both, seeded, on the real week
20260808 (2 reps) and the demo week (4 reps) of ``tests/fixtures``:

* A/A pairs (``report.noise.aa_week_pairs``): ``split`` (each prompt's reps shuffled and
  halved), ``parametric`` (prompt means + normal rep noise at the week's pooled rep SD,
  clipped to [0, 1], as many reps as the week), ``plug-in`` (each side redraws its reps from
  the prompt's own observed reps: the harshest null, see docs/methodology-notes.md);
* beside it, the old rule's rate (some prompt dropped by more than 0.10);
* power: each prompt at ≥ 0.7 with the skill in turn set to 0 in every rep of week B.

    python benchmarks/bench_regression_alarm.py              # 5000 pairs per row
    python benchmarks/bench_regression_alarm.py --sims 500   # quicker
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from pytest_skilllift.report import noise, stats
from pytest_skilllift.report.summarize import summarize_week

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
WEEKS = {"real 20260808 (2 reps)": FIXTURES / "data" / "qdrant-skills" / "weekly" / "20260808",
         "demo (4 reps)": FIXTURES / "demo-week-4reps" / "20261201"}
SEED = 20260808


def rep_scores(week: Path) -> np.ndarray:
    s = summarize_week(week, write=False, plots=False)
    assert s.aggregates is not None
    return np.moveaxis(s.aggregates.rep_composite[:, :, 1, :], 1, 0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=5000)
    args = ap.parse_args()
    print("| week | A/A pairs | pairs | alarm rate (95% Wilson) | old rule (drop > 0.10) | "
          "seconds |")
    print("| --- | --- | ---: | --- | ---: | ---: |")
    for name, path in WEEKS.items():
        x = rep_scores(path)
        for kind in (noise.AA_SPLIT, noise.AA_PARAMETRIC, noise.AA_PLUG_IN):
            t = time.perf_counter()
            r = noise.aa_alarm_rate(x, kind=kind, sims=args.sims, seed=SEED)
            lo, hi = stats.wilson_interval(round(r.alarm_rate * r.sims), r.sims)
            print(f"| {name} | {kind} | {r.sims} | {r.alarm_rate:.1%} ({lo:.1%}–{hi:.1%}) | "
                  f"{r.margin_rule_rate:.0%} | {time.perf_counter() - t:.1f} |")
    print()
    print("| week | prompts at ≥ 0.7 zeroed in turn | found |")
    print("| --- | ---: | ---: |")
    for name, path in WEEKS.items():
        found, tried = noise.alarm_power(rep_scores(path))
        print(f"| {name} | {tried} | {found} |")


if __name__ == "__main__":
    main()
