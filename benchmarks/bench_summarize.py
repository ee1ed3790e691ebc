"""Benchmark ``skilllift summarize`` on a synthetic week of 1,000,000 graded items.

The week: 5,000 prompts × 2 models × 2 conditions × 5 reps × 10 items (5 must, 3 bonus,
2 avoid), in the qdrant column layout, written into a temporary directory with pyarrow.
Each measurement runs in a fresh subprocess so the peak RSS (``resource.getrusage``) is
that of one summarize alone; the time is the best of ``--repeat`` runs of
``summarize_week`` (imports excluded and reported separately).

    /opt/venv/bin/python benchmarks/bench_summarize.py            # full size
    /opt/venv/bin/python benchmarks/bench_summarize.py --prompts 500 --repeat 1   # quick
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

MODELS = ("sonnet", "haiku")
CONDITIONS = ("no-skill", "with-skill")
TYPES = ("must",) * 5 + ("bonus",) * 3 + ("avoid",) * 2
VERDICT = {"must": ("met", "missing"), "bonus": ("met", "absent"),
           "avoid": ("violated", "clean")}


def generate_week(out: Path, n_prompts: int = 5000, reps: int = 5, seed: int = 1,
                  avoid_rate: float = 0.05) -> dict[str, int]:
    """Write manifest.csv and scores.csv for a synthetic week; returns sizes.

    ``avoid_rate`` is the share of avoid items judged ``violated`` (0.05: the standard week's
    ≈ 10,000 violations; 0.15: the heavy week's ≈ 150,000, a bad week for a skill set).
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
    evidence = np.where(pos, "quote", "")
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
                   "problems": len(s.problems), "lift": s.data["models"]["sonnet"]["must_lift"]}}))
"""


def measure(week: Path, *, plots: bool, repeat: int) -> dict[str, float]:
    """Summarize in a fresh interpreter; best time of ``repeat`` and the peak RSS."""
    code = _CHILD.format(plots=plots, repeat=repeat, week=str(week))
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True)
    res: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    res["process_s"] = time.perf_counter() - t
    return res


def measure_cli(week: Path, *, plots: bool, repeat: int) -> float:
    """Best wall time of the ``skilllift summarize`` console script, start to exit."""
    exe = Path(sys.executable).with_name("skilllift")
    cmd = [str(exe), "summarize", str(week)] + ([] if plots else ["--no-plots"])
    best = math.inf
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        best = min(best, time.perf_counter() - t)
    return best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prompts", type=int, default=5000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="skilllift-bench-") as tmp:
        week = Path(tmp) / "weekly" / "20260808"
        t = time.perf_counter()
        size = generate_week(week, args.prompts, args.reps)
        gen_s = time.perf_counter() - t
        print(f"generated {size['items']:,} items / {size['runs']:,} runs "
              f"(scores.csv {size['scores_bytes'] / 1e6:.1f} MB, manifest.csv "
              f"{size['manifest_bytes'] / 1e6:.1f} MB) in {gen_s:.1f}s")
        rows = []
        for plots in (False, True):
            r = measure(week, plots=plots, repeat=args.repeat)
            r["cli_s"] = measure_cli(week, plots=plots, repeat=args.repeat)
            rows.append((plots, r))
        print()
        load = os.getloadavg()[0]
        print(f"| plots | summarize_week, best of {args.repeat} (wall) | its CPU time | "
              f"imports | `skilllift summarize` end to end, best of {args.repeat} | "
              "peak RSS | load avg |")
        print("| ----- | ---- | ---- | ---- | ---- | ---- | ---- |")
        for plots, r in rows:
            print(f"| {'yes' if plots else 'no'} | {r['best_s']:.2f} s | {r['cpu_s']:.2f} s | "
                  f"{r['import_s']:.2f} s | {r['cli_s']:.2f} s | "
                  f"{r['peak_rss'] / 2**20:.0f} MiB | {load:.1f} |")
        print(f"\n(problems reported: {rows[0][1]['problems']}; sonnet lift "
              f"{rows[0][1]['lift']:.4f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
