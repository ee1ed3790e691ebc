"""Benchmark ``skilllift view``: the real week and a synthetic 1,000,000-item week.

- **real**: the repository's qdrant/skills week 20260808 (208 runs, 1,512 graded items, no run
  directories), summarized into a temporary copy first;
- **million**: ``bench_summarize.generate_week``'s standard week (5,000 prompts × 2 models × 2
  conditions × 5 reps × 10 items = 1,000,000 items in 100,000 runs), summarized first.

Each round is ``skilllift view WEEKDIR --out DIR`` as a fresh process, timed start to exit
(interpreter start, imports, reading the week, writing every page), with its CPU and peak
RSS (``os.wait4``), and ``build_site`` alone in this process (imports done). The site's size
is stated: ``index.html`` (what opens first) and the whole site (one page per prompt, each
loaded only when opened).

    python benchmarks/bench_view.py                  # both weeks, 3 rounds
    python benchmarks/bench_view.py --week real --repeat 5
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_summarize import Timing, generate_week, run_process

REAL = (Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "data" / "qdrant-skills"
        / "weekly" / "20260808")


def prepare(kind: str, root: Path) -> Path:
    """The week directory, summarized (scorecard.json is what the overview reads)."""
    from pytest_skilllift.report.summarize import summarize_week

    week = root / kind / "20260808"
    if kind == "real":
        shutil.copytree(REAL, week)
    else:
        info = generate_week(week)
        print(f"million: {info['items']:,} items, {info['runs']:,} runs, scores.csv "
              f"{info['scores_bytes'] / 2**20:.0f} MiB", flush=True)
    summarize_week(week, plots=False)
    return week


def site_size(site: Path) -> tuple[int, int, int]:
    """``index.html`` bytes, the whole site's bytes, its number of files."""
    files = [p for p in site.rglob("*") if p.is_file()]
    return (site / "index.html").stat().st_size, sum(p.stat().st_size for p in files), len(files)


def build_in_process(week: Path, out: Path) -> tuple[float, float]:
    """``build_site`` alone, imports done: (wall, CPU of this process)."""
    from pytest_skilllift.view.site import build_site

    shutil.rmtree(out, ignore_errors=True)
    wall, cpu = time.perf_counter(), time.process_time()
    build_site(week, out)
    return time.perf_counter() - wall, time.process_time() - cpu


def bench(week: Path, repeat: int) -> tuple[list[Timing], list[tuple[float, float]],
                                            tuple[int, int, int]]:
    out = week.parent / "site"
    cmd = [sys.executable, "-m", "pytest_skilllift.cli", "view", str(week), "--out", str(out)]
    times, builds = [], []
    for _ in range(repeat):  # interleaved, so the machine's load moves both alike
        shutil.rmtree(out, ignore_errors=True)
        times.append(run_process(cmd))
        builds.append(build_in_process(week, week.parent / "site-in-process"))
    return times, builds, site_size(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--week", choices=("real", "million", "both"), default="both")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", default="", help="keep the weeks here (default: a temp dir)")
    args = parser.parse_args()
    root = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="bench-view-"))
    kinds = ("real", "million") if args.week == "both" else (args.week,)
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    print("| week | `skilllift view` wall best / median | its CPU best | peak RSS | "
          "`build_site` alone: wall / CPU best | index.html | site (files) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for kind in kinds:
        week = prepare(kind, root)
        times, builds, (index, total, files) = bench(week, args.repeat)
        walls = [t.wall for t in times]
        print(f"| {kind} | {min(walls):.2f} / {statistics.median(walls):.2f} s | "
              f"{min(t.cpu for t in times):.2f} s | {max(t.rss for t in times) / 2**20:.0f} MiB | "
              f"{min(b[0] for b in builds):.2f} / {min(b[1] for b in builds):.2f} s | "
              f"{index / 1024:.0f} KiB | {total / 2**20:.1f} MiB ({files:,}) |", flush=True)
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    if not args.dir:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
