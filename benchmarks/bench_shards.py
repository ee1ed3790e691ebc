"""A week at CI scale: a 200-run week in 4 shards against the stand-in with latency.

Builds a project of 10 prompts (variants of the repo's example prompts and skills) × 2 models
(the demo's scripted ``sonnet`` and ``haiku``) × 2 conditions × 5 reps = 200 runs, starts one
stand-in with scripted latency per agent and judge call (and Message Batches that end on the
second poll), and then, as a CI pipeline would:

1. runs each shard — ``pytest --skill-lift --skill-lift-shard=I/4 -n 2`` with the real bundled
   Claude Code CLI — one after another (on CI they run side by side, on four machines), and
   times each (the wall time a shard job would take);
2. times ``skilllift merge`` of the four shards (a fresh interpreter: imports included), and
   again (the idempotent re-merge);
3. grades a copy of the merged week again with ``skilllift judge --batch`` and compares the
   judge cost per run, direct (as the shards graded it) and batch, on the same runs.

    python benchmarks/bench_shards.py                       # prints a markdown table
    python benchmarks/bench_shards.py --prompts 4 --reps 2  # a quick 32-run check

The machine's load average is printed before and after: on a shared machine it is part of the
record.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEMO_PROJECT = REPO / "pytest_skilllift" / "demo"  # the demo project shipped in the package
KEY = "bench-key-not-a-secret"
WEEK = "20260808"


def make_project(root: Path, prompts: int, reps: int) -> None:
    shutil.copytree(DEMO_PROJECT / "skills", root / "skills")
    out = root / "evals" / "test-prompts"
    out.mkdir(parents=True)
    sources = sorted((DEMO_PROJECT / "evals" / "test-prompts").glob("*.json"))
    for i in range(prompts):
        data = json.loads(sources[i % len(sources)].read_text())
        data["name"] = f"{data['name']}-{i}"
        (out / f"{data['name']}.json").write_text(json.dumps(data))
    (root / "pytest.ini").write_text(
        "[pytest]\nskill_lift_models = sonnet=claude-sonnet-4-5,haiku=claude-haiku-4-5\n"
        f"skill_lift_reps = {reps}\n")


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def env_for(api: Any) -> dict[str, str]:
    return {**os.environ, "ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": KEY,
            "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, str]:
    started = time.monotonic()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    if proc.returncode not in (0,):
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n"
                         + proc.stdout[-3000:] + proc.stderr[-3000:])
    return wall, proc.stdout


def judge_costs(week: Path) -> dict[str, float]:
    return {p.parent.name: float(p.read_text()) for p in week.glob("*/judge_cost.txt")}


def merge_phases(shards: list[Path], out: Path) -> dict[str, float]:
    """Where a merge's time goes, in this (warm) interpreter: the checks and copies, the CSV
    rebuild, the scorecard; then the same merge again (checks only)."""
    from pytest_skilllift.report.summarize import summarize_week
    from pytest_skilllift.week.ledger import Ledger
    from pytest_skilllift.week.merge import merge_shards

    t = [time.perf_counter()]
    merge_shards(out, shards)
    t.append(time.perf_counter())
    Ledger(out).rebuild_csvs()
    t.append(time.perf_counter())
    summarize_week(out, plots=False, history=out / "history.csv")
    t.append(time.perf_counter())
    merge_shards(out, shards)
    t.append(time.perf_counter())
    return {"check_and_copy": t[1] - t[0], "rebuild_csvs": t[2] - t[1],
            "summarize": t[3] - t[2], "check_again": t[4] - t[3]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=10)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--shards", type=int, default=4)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--latency", type=float, default=0.5, help="seconds per agent call")
    ap.add_argument("--judge-latency", type=float, default=0.5, help="seconds per judge call")
    ap.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = ap.parse_args()

    from pytest_skilllift.testing.batches import BatchScript
    from pytest_skilllift.testing.demo import demo_agent
    from pytest_skilllift.testing.judge_script import keyword_judge
    from pytest_skilllift.testing.server import StandIn

    results: dict[str, Any] = {"load_before": load()}
    with tempfile.TemporaryDirectory(prefix="bench-shards-") as tmp, StandIn(
            agent=demo_agent(), judge=keyword_judge, latency_s=args.latency,
            judge_latency_s=args.judge_latency, batch=BatchScript(polls_before_end=1)) as api:
        root = Path(tmp)
        make_project(root, args.prompts, args.reps)
        env = env_for(api)
        shards = []
        for i in range(1, args.shards + 1):
            before = (api.count("agent"), api.count("judge"))
            wall, _ = timed([sys.executable, "-m", "pytest", "--skill-lift", "-q",
                               "-p", "no:cacheprovider", "-n", str(args.workers),
                               f"--skill-lift-shard={i}/{args.shards}",
                               f"--skill-lift-out=shards/{i}/{WEEK}"], root, env)
            week = root / "shards" / str(i) / WEEK
            shards.append({"shard": f"{i}/{args.shards}", "wall_s": wall,
                           "runs": len(list(week.glob("*/run.json"))),
                           "agent_calls": api.count("agent") - before[0],
                           "judge_calls": api.count("judge") - before[1]})
            print(f"shard {i}/{args.shards}: {shards[-1]['runs']} runs in {wall:.1f} s "
                  f"(load {load()})", file=sys.stderr)
        results["shards"] = shards

        merged = root / "evals" / "weekly" / WEEK
        cmd = [sys.executable, "-m", "pytest_skilllift.cli.main", "merge", str(merged),
               *(str(root / "shards" / str(i) / WEEK) for i in range(1, args.shards + 1))]
        results["merge_s"], _ = timed([*cmd, "--no-plots"], root, env)
        results["remerge_s"], _ = timed([*cmd, "--no-plots"], root, env)
        results["merge_plots_s"], _ = timed(cmd, root, env)
        results["runs"] = len(list(merged.glob("*/run.json")))
        results["merge_phases_s"] = merge_phases(
            [root / "shards" / str(i) / WEEK for i in range(1, args.shards + 1)],
            root / "phases" / WEEK)
        direct = judge_costs(merged)

        batched = root / "batch" / WEEK
        before_batches = len(api.batches.created)
        results["batch_judge_s"], _ = timed(
            [sys.executable, "-m", "pytest_skilllift.cli.main", "judge", str(merged), "--batch",
             "--batch-poll", "1", "--out", str(batched)], root, env)
        results["batches"] = len(api.batches.created) - before_batches
        batch = judge_costs(batched)
        same = sorted(set(direct) & set(batch))
        results["judge_cost_per_run_direct"] = statistics.mean(direct[r] for r in same)
        results["judge_cost_per_run_batch"] = statistics.mean(batch[r] for r in same)
        results["judge_cost_ratio"] = (sum(batch[r] for r in same)
                                       / sum(direct[r] for r in same))
        results["graded_runs_compared"] = len(same)
    results["load_after"] = load()

    print("| measure | value |\n| --- | --- |")
    for s in results["shards"]:
        print(f"| shard {s['shard']}: wall (runs; agent / judge calls) | {s['wall_s']:.1f} s "
              f"({s['runs']} runs; {s['agent_calls']} / {s['judge_calls']}) |")
    walls = [s["wall_s"] for s in results["shards"]]
    print(f"| slowest shard (the pipeline's generation wall time) | {max(walls):.1f} s |")
    print(f"| the shards one after another (one machine) | {sum(walls):.1f} s |")
    print(f"| `skilllift merge` ({results['runs']} runs, no plots), end to end | "
          f"{results['merge_s']:.2f} s |")
    print(f"| the same merge again (idempotent, copies nothing) | {results['remerge_s']:.2f} s |")
    print(f"| merge with plots | {results['merge_plots_s']:.2f} s |")
    ph = results["merge_phases_s"]
    print(f"| … in-process: checks + copies / CSV rebuild / scorecard / checks again | "
          f"{ph['check_and_copy']:.2f} / {ph['rebuild_csvs']:.2f} / {ph['summarize']:.2f} / "
          f"{ph['check_again']:.2f} s |")
    print(f"| judge cost per run, direct | ${results['judge_cost_per_run_direct']:.5f} |")
    print(f"| judge cost per run, batch ({results['batches']} batch(es), "
          f"{results['graded_runs_compared']} runs) | "
          f"${results['judge_cost_per_run_batch']:.5f} "
          f"({results['judge_cost_ratio']:.2f}× direct) |")
    print(f"| `skilllift judge --batch` wall (copy, {results['graded_runs_compared']} runs) | "
          f"{results['batch_judge_s']:.1f} s |")
    print(f"| load average before / after | {results['load_before']} / "
          f"{results['load_after']} |")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
