"""Benchmark ``skilllift summarize`` on synthetic weeks of 1,000,000 graded items and on the
repository's real week, side by side with the reference summarizer (``reference_summarize.py``,
a plain ``csv``-module loop) and, with ``--qdrant-script``, the qdrant pipeline's own
``summarize-eval.py``.

The weeks: 5,000 prompts × 2 models × 2 conditions × 5 reps × 10 items (5 must, 3 bonus,
2 avoid), in the qdrant column layout, written with pyarrow.  The standard week has ≈ 10,000
avoid violations, each with a short evidence quote; the heavy week ≈ 150,000 (15% of all
items: a bad week, when people read the scorecard); the no-quotes week is the standard week
with every evidence quote empty (issue #29's week: "short texts, no quotes").  Per week,
``--repeat`` rounds of: the reference, qdrant's script (when given), ``skilllift summarize
--no-plots``, ``skilllift summarize`` — each a fresh process timed start to exit (wall, CPU of
all its threads, peak RSS from ``os.wait4``), interleaved so the machine's load moves them
alike, after one untimed round (bytecode caches written, files in the page cache).  The
summarizers must agree on every model's lift and SE, or the bench stops.

The real week (``--week real``) is ``tests/fixtures/data/qdrant-skills/weekly/20260808``
(qdrant/skills, 26 prompts × 2 models × 2 conditions × 2 reps: 208 runs, 1,512 graded
items), copied into the bench directory first, as every summarizer writes into it.  What a
user waits for there is mostly interpreter start and imports (issue #29).

qdrant's script is upstream code and is not part of this repository: fetch
``scripts/scoring/summarize-eval.py`` from github.com/qdrant/skills and pass its path.  It
writes ``scorecard.md`` into the week directory it reads, so it is run on a sibling directory
holding links to the week's two CSVs (ours would otherwise see another tool's scorecard.md).

    python benchmarks/bench_summarize.py                       # all four weeks, 3 rounds
    python benchmarks/bench_summarize.py --week real --repeat 15 --qdrant-script summarize-eval.py
    python benchmarks/bench_summarize.py --week no-quotes --qdrant-script summarize-eval.py
    python benchmarks/bench_summarize.py --week heavy --repeat 5 --dir /tmp/weeks
    python benchmarks/bench_summarize.py --prompts 500 --repeat 1   # quick
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

#: (name, share of avoid items judged violated, evidence quotes).  The standard week:
#: ≈ 10,000 violations.  The heavy week: 15% of all items are violated avoid items
#: (≈ 150,000 violations: every one is a row of scorecard.json and must be encoded), the week
#: of issue #14.  The no-quotes week: the standard week without any evidence quote (issue #29).
WEEKS: tuple[tuple[str, float, bool], ...] = (
    ("standard", 0.05, True), ("heavy", 0.75, True), ("no-quotes", 0.05, False))
#: The real week: copied, not generated.
REAL = "real"
REAL_WEEK = (Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "data"
             / "qdrant-skills" / "weekly" / "20260808")
MODELS = ("sonnet", "haiku")
CONDITIONS = ("no-skill", "with-skill")
TYPES = ("must",) * 5 + ("bonus",) * 3 + ("avoid",) * 2
VERDICT = {"must": ("met", "missing"), "bonus": ("met", "absent"),
           "avoid": ("violated", "clean")}


def generate_week(out: Path, n_prompts: int = 5000, reps: int = 5, seed: int = 1,
                  avoid_rate: float = 0.05, quotes: bool = True) -> dict[str, int]:
    """Write manifest.csv and scores.csv for a synthetic week; returns sizes.

    ``avoid_rate`` is the share of avoid items judged ``violated`` (0.05: the standard week's
    ≈ 10,000 violations; 0.75: the heavy week's ≈ 150,000, a bad week for a skill set);
    ``quotes=False`` leaves every ``evidence_quote`` empty.
    """
    rng = np.random.default_rng(seed)
    out.mkdir(parents=True, exist_ok=True)
    n_items = len(TYPES)
    prompts = np.array([f"p{i:05d}" for i in range(n_prompts)], dtype=object)
    # Runs: prompt-major, then model, condition, rep.
    p = np.repeat(np.arange(n_prompts), 2 * 2 * reps)
    m = np.tile(np.repeat(np.arange(2), 2 * reps), n_prompts)
    c = np.tile(np.repeat(np.arange(2), reps), n_prompts * 2)
    r = np.tile(np.arange(1, reps + 1), n_prompts * 4)
    n_runs = p.size
    run_id = np.array([f"{prompts[a]}-{MODELS[b]}-{CONDITIONS[cc]}-r{d}"
                       for a, b, cc, d in zip(p, m, c, r, strict=True)], dtype=object)
    manifest = pa.table({
        "prompt": prompts[p], "skill_family": prompts[p],
        "skill_leaf": [f"{x}/SKILL.md" for x in prompts[p]],
        "model": np.array(MODELS, dtype=object)[m],
        "condition": np.array(CONDITIONS, dtype=object)[c], "rep": r, "run_id": run_id,
        "exit_code": np.zeros(n_runs, np.int64), "skills_sha": ["abc1234"] * n_runs,
        "timestamp": ["20260808T073023Z"] * n_runs,
        "skill_available": c.astype(np.int64),
        "skill_activation": np.where(c == 1, np.where(rng.random(n_runs) < 0.9, "skill_tool",
                                                      "none"), "none"),
        "reached_leaf": (c * (rng.random(n_runs) < 0.5)).astype(np.int64),
        "fetched_site": np.zeros(n_runs, np.int64), "fetched_count": np.zeros(n_runs, np.int64),
        "model_snapshot": np.array(["claude-sonnet-5", "claude-haiku-4-5"], dtype=object)[m],
        "cli_version": ["2.1.220"] * n_runs,
        "total_cost_usd": np.round(rng.gamma(2.0, 0.02, n_runs), 6),
        "num_turns": rng.integers(1, 8, n_runs), "result_subtype": ["success"] * n_runs,
        "budget_hit": np.zeros(n_runs, np.int64), "signals_ok": np.ones(n_runs, np.int64),
        "duration_ms": rng.integers(5000, 60000, n_runs),
    })
    # No quoting: the synthetic values hold no commas, quotes or newlines, and unquoted
    # rows keep scores.csv near the 60 MB of the issue (quoted it is ~94 MB).
    opts = pacsv.WriteOptions(quoting_style="none")
    pacsv.write_csv(manifest, out / "manifest.csv", write_options=opts)

    # Items: each run × 10 items; with-skill and haiku shift the met probability.
    ri = np.repeat(np.arange(n_runs), n_items)
    ti = np.tile(np.arange(n_items), n_runs)
    types = np.array(TYPES, dtype=object)[ti]
    base = rng.random(n_prompts)[p[ri]] * 0.6 + 0.2
    prob = np.clip(base + 0.25 * c[ri] - 0.1 * m[ri], 0, 1)
    is_avoid = ti >= 8
    pos = np.where(is_avoid, rng.random(ri.size) < avoid_rate, rng.random(ri.size) < prob)
    verdict = np.where(
        ti < 5, np.where(pos, "met", "missing"),
        np.where(ti < 8, np.where(pos, "met", "absent"), np.where(pos, "violated", "clean")))
    credit = pos.astype(np.float64)
    contribution = np.where(is_avoid, -credit, credit)
    item_text = np.array([f"{t} {k + 1}" for k, t in enumerate(TYPES)], dtype=object)[ti]
    evidence = np.where(pos, "quote", "") if quotes else np.full(ri.size, "", dtype=object)
    scores = pa.table({
        "prompt": prompts[p[ri]], "skill": prompts[p[ri]],
        "model": np.array(MODELS, dtype=object)[m[ri]],
        "condition": np.array(CONDITIONS, dtype=object)[c[ri]], "rep": r[ri],
        "item_type": types, "item_text": item_text, "verdict": verdict,
        "credit": pa.array(np.char.mod("%.1f", credit)),
        "contribution": pa.array(np.char.mod("%.1f", contribution)),
        "contested": [""] * ri.size, "evidence_quote": evidence,
    })
    pacsv.write_csv(scores, out / "scores.csv", write_options=opts)
    return {"runs": n_runs, "items": int(ri.size),
            "violations": int(np.count_nonzero(pos & is_avoid)),
            "scores_bytes": (out / "scores.csv").stat().st_size,
            "manifest_bytes": (out / "manifest.csv").stat().st_size}


_CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
from pytest_skilllift.report.summarize import summarize_week
import scipy.special  # summarize imports it in the background; here it is timed with the rest
if {plots}:
    import pytest_skilllift.report.plots  # the plot import is paid once per process, time it apart
t_import = time.perf_counter() - t0
best = best_cpu = None
for _ in range({repeat}):
    t, c = time.perf_counter(), time.process_time()
    s = summarize_week({week!r}, plots={plots})
    dt, dc = time.perf_counter() - t, time.process_time() - c
    if best is None or dt < best:
        best, best_cpu = dt, dc
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({{"best_s": best, "cpu_s": best_cpu, "import_s": t_import, "peak_rss": rss,
                   "problems": len(s.problems), "lift": s.data["models"]["sonnet"]["must_lift"],
                   "se": s.data["models"]["sonnet"]["must_lift_se"]}}))
"""


def measure_in_process(week: Path, *, plots: bool, repeat: int) -> dict[str, float]:
    """``summarize_week`` in a fresh interpreter: best of ``repeat``, imports apart."""
    code = _CHILD.format(plots=plots, repeat=repeat, week=str(week))
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True)
    res: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return res


@dataclass
class Timing:
    """One process run start to exit: wall, CPU (user + system, all threads), peak RSS."""

    wall: float
    cpu: float
    rss: int
    stdout: str


#: The children's environment: bytecode is cached as an installed package's is (pip compiles
#: it at install), even when this shell sets PYTHONDONTWRITEBYTECODE — else every run of ours
#: would compile its ~150 modules from source (≈ 0.3 s) and the others their one file.
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run_process(cmd: list[str]) -> Timing:
    """Run ``cmd`` and measure it alone (``os.wait4``: this child's own rusage, with the
    children it waited for: our plot worker)."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env=CHILD_ENV)
    out = proc.stdout.read() if proc.stdout else ""
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 1):  # 1 = a week with input problems (still written)
        raise RuntimeError(f"{cmd} exited {proc.returncode}")
    return Timing(wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss * 1024, out)


def ours_cmd(week: Path, plots: bool) -> list[str]:
    exe = Path(sys.executable).with_name("skilllift")
    return [str(exe), "summarize", str(week)] + ([] if plots else ["--no-plots"])


def reference_cmd(week: Path) -> list[str]:
    return [sys.executable, str(Path(__file__).with_name("reference_summarize.py")), str(week),
            "--out", str(week / "scorecard-reference.md"),
            "--history", str(week.parent / "history-reference.csv")]


def qdrant_week(week: Path) -> Path:
    """A sibling of ``week`` with the same name, linking its two CSVs: qdrant's script writes
    its scorecard.md there, not beside ours."""
    twin = week.parent.parent / "qdrant-weekly" / week.name
    twin.mkdir(parents=True, exist_ok=True)
    for name in ("scores.csv", "manifest.csv"):
        link = twin / name
        if not link.exists():
            link.symlink_to(week / name)
    return twin


def qdrant_cmd(script: Path, week: Path) -> list[str]:
    twin = qdrant_week(week)
    return [sys.executable, str(script), str(twin),
            "--history", str(twin.parent / "history-qdrant.csv")]


def compare(week: Path, repeat: int, qdrant: Path | None = None) -> dict[str, list[Timing]]:
    """Reference, qdrant's script (when given), ours without plots, ours with plots —
    interleaved, ``repeat`` rounds, so the machine's load moves them alike."""
    runs: dict[str, list[Timing]] = {"reference": [], "ours": [], "ours+plots": []}
    if qdrant is not None:
        runs = {"reference": [], "qdrant": [], "ours": [], "ours+plots": []}
    for cmd in (reference_cmd(week), *([qdrant_cmd(qdrant, week)] if qdrant else []),
                ours_cmd(week, plots=False), ours_cmd(week, plots=True)):
        run_process(cmd)  # untimed: bytecode caches written, the week in the page cache
    for _ in range(repeat):
        runs["reference"].append(run_process(reference_cmd(week)))
        if qdrant is not None:
            runs["qdrant"].append(run_process(qdrant_cmd(qdrant, week)))
        runs["ours"].append(run_process(ours_cmd(week, plots=False)))
        runs["ours+plots"].append(run_process(ours_cmd(week, plots=True)))
    return runs


def check_parity(week: Path, ref: Timing) -> str:
    """Both summarizers agree on every model's lift and SE (else the timing is moot)."""
    theirs = json.loads(ref.stdout.strip().splitlines()[-1])
    card = json.loads((week / "scorecard.json").read_text(encoding="utf-8"))
    worst = 0.0
    for model, m in card["models"].items():
        for ours_key, ref_key in (("must_lift", "lift"), ("must_lift_se", "se")):
            worst = max(worst, abs(m[ours_key] - theirs[model][ref_key]))
    if worst > 1e-9:
        raise SystemExit(f"the two summarizers disagree on {week}: max |Δ| = {worst}")
    return f"lift and SE agree for {', '.join(card['models'])} (max |Δ| {worst:.1e})"


#: A row of qdrant's lift table: ``| sonnet | 0.400 → 0.650 | +0.250 ± 0.003 | yes | …``.
_QDRANT_LIFT = re.compile(r"^\| (\S+)\s+\| [\d.]+ → [\d.]+\s+\| ([+-][\d.]+) ± ([\d.]+)")


def check_qdrant_parity(week: Path, qdrant: Timing) -> str:
    """qdrant's scorecard.md (printed to stdout) shows the same lift and SE, to its 3 decimals."""
    card = json.loads((week / "scorecard.json").read_text(encoding="utf-8"))
    seen = {m[1]: (float(m[2]), float(m[3]))
            for m in map(_QDRANT_LIFT.match, qdrant.stdout.splitlines()) if m}
    worst = 0.0
    for model, m in card["models"].items():
        if model not in seen:
            raise SystemExit(f"qdrant's script shows no lift for {model!r} on {week}")
        worst = max(worst, abs(m["must_lift"] - seen[model][0]),
                    abs(m["must_lift_se"] - seen[model][1]))
    if worst > 5e-4 + 1e-9:  # it rounds to 3 decimals
        raise SystemExit(f"qdrant's script and ours disagree on {week}: max |Δ| = {worst}")
    return f"qdrant's script shows the same lift and SE (to its 3 decimals, max |Δ| {worst:.1e})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prompts", type=int, default=5000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--week", choices=(*(w[0] for w in WEEKS), REAL, "all"), default="all",
                    help="one week, or all four (default)")
    ap.add_argument("--dir", type=Path, default=None,
                    help="generate the weeks here and keep them (reused when present)")
    ap.add_argument("--qdrant-script", type=Path, default=None, metavar="PATH",
                    help="also time the qdrant pipeline's summarize-eval.py (not in this "
                    "repository: fetch scripts/scoring/summarize-eval.py from qdrant/skills)")
    ap.add_argument("--in-process", action="store_true",
                    help="also time summarize_week in-process (imports apart)")
    args = ap.parse_args()
    weeks = [w for w in WEEKS if args.week in (w[0], "all")]
    real = args.week in (REAL, "all")
    qdrant = args.qdrant_script.resolve() if args.qdrant_script else None
    if qdrant is not None and not qdrant.is_file():
        raise SystemExit(f"--qdrant-script: {qdrant} is not a file")
    with tempfile.TemporaryDirectory(prefix="skilllift-bench-") as tmp:
        root = args.dir or Path(tmp)
        table = []
        for name, rate, quotes in [*weeks, *([(REAL, 0.0, True)] if real else [])]:
            week = root / name / "weekly" / "20260808"
            if name == REAL:
                # A fresh copy each time: the summarizers write into the week directory.
                shutil.rmtree(week.parent, ignore_errors=True)
                shutil.copytree(REAL_WEEK, week)
                (week / "scorecard.md").unlink()  # qdrant's own, from the fixture
                with (week / "scores.csv").open(encoding="utf-8") as f:
                    n_items = sum(1 for _ in f) - 1  # no quoted newlines in this week
                print(f"{name}: copied the fixture week 20260808 ({n_items:,} items)")
            elif not (week / "scores.csv").exists():
                t = time.perf_counter()
                size = generate_week(week, args.prompts, args.reps, avoid_rate=rate,
                                     quotes=quotes)
                print(f"{name}: generated {size['items']:,} items / {size['runs']:,} runs, "
                      f"{size['violations']:,} avoid violations (scores.csv "
                      f"{size['scores_bytes'] / 1e6:.1f} MB, manifest.csv "
                      f"{size['manifest_bytes'] / 1e6:.1f} MB) in "
                      f"{time.perf_counter() - t:.1f}s")
            load0 = os.getloadavg()[0]
            runs = compare(week, args.repeat, qdrant)
            load1 = os.getloadavg()[0]
            print(f"{name}: {check_parity(week, runs['reference'][0])}")
            if qdrant is not None:
                print(f"{name}: {check_qdrant_parity(week, runs['qdrant'][0])}")
            if args.in_process:
                for plots in (False, True):
                    r = measure_in_process(week, plots=plots, repeat=args.repeat)
                    print(f"{name}: summarize_week in-process, plots={plots}: best "
                          f"{r['best_s']:.2f} s wall, {r['cpu_s']:.2f} s CPU; imports "
                          f"{r['import_s']:.2f} s; peak RSS {r['peak_rss'] / 2**20:.0f} MiB")
            table.append((name, runs, load0, load1))
        print()
        baselines = ("reference", "qdrant") if qdrant is not None else ("reference",)
        print(f"| week | summarizer | wall best / median of {args.repeat} | CPU best | peak RSS | "
              + " | ".join(f"{b} ÷ this (median wall)" for b in baselines)
              + " | load avg (1 min) |")
        print("| --- " * (5 + len(baselines) + 1) + "|")
        for name, runs, load0, load1 in table:
            meds = {b: statistics.median(t.wall for t in runs[b]) for b in baselines}
            for label, ts in runs.items():
                walls = [t.wall for t in ts]
                med = statistics.median(walls)
                # A fraction (this ÷ a baseline) on the real week: issue #29's goal is
                # "at most 1.5× / 3× qdrant's time"; a speed-up on the million-item weeks.
                ratios = " | ".join(
                    "" if label in baselines else
                    f"{meds[b] / med:.2f}× (this: {med / meds[b]:.2f}×)" if name == REAL else
                    f"{meds[b] / med:.1f}×" for b in baselines)
                print(f"| {name} | {label} | {min(walls):.2f} / {med:.2f} s | "
                      f"{min(t.cpu for t in ts):.2f} s | {max(t.rss for t in ts) / 2**20:.0f} MiB"
                      f" | {ratios} | {load0:.1f} → {load1:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
