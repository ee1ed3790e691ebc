"""Does parallelism pay? A 20-run week against the stand-in with scripted latency.

Builds a project of 5 prompts (the repo's example skills) × 1 model × 2 conditions × 2 reps,
then runs ``pytest --skill-lift-demo`` with 2 s of latency per agent call and 0.5 s per judge
call, serially and at ``-n 4``. "Serial work" is measured, not assumed: the sum of every run's
own wall time (manifest ``wall_ms``) plus every judge call's time (``grades.json``
``judge_ms``). It also times the bare CLI on the same stand-in to get the harness's per-run
overhead.

    python benchmarks/bench_week.py                          # serial, -n 4, bare CLI
    python benchmarks/bench_week.py --no-serial --repeat 3   # only -n 4, three sessions

Each session's timeline (``timeline``) comes from the week's own files: when every run
started and ended, when the CSVs and the scorecard were written.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEMO_PROJECT = REPO / "pytest_skilllift" / "demo"  # the demo project shipped in the package
AGENT_LATENCY, JUDGE_LATENCY = 2.0, 0.5


def make_project(root: Path) -> None:
    shutil.copytree(DEMO_PROJECT / "skills", root / "skills")
    prompts = root / "evals" / "test-prompts"
    prompts.mkdir(parents=True)
    sources = sorted((DEMO_PROJECT / "evals" / "test-prompts").glob("*.json"))
    for i in range(5):
        data = json.loads(sources[i % len(sources)].read_text())
        data["name"] = f"{data['name']}-{i}"
        (prompts / f"{data['name']}.json").write_text(json.dumps(data))


def run_week(root: Path, workers: int) -> dict[str, Any]:
    shutil.rmtree(root / "evals" / "weekly-demo", ignore_errors=True)
    args = ["-n", str(workers)] if workers > 1 else ["-p", "no:xdist"]
    cmd = [sys.executable, "-m", "pytest", "--skill-lift-demo", "-q", "-p", "no:cacheprovider",
           "--skill-lift-models=sonnet", "--skill-lift-reps=2",
           f"--skill-lift-demo-latency={AGENT_LATENCY}",
           f"--skill-lift-demo-judge-latency={JUDGE_LATENCY}", *args]
    events_file = root / f"timeline-{workers}.jsonl"
    events_file.unlink(missing_ok=True)
    env = {**os.environ, "SKILLLIFT_BENCH_TIMELINE": str(events_file),
           "PYTHONPATH": os.pathsep.join(
               [str(Path(__file__).parent), *filter(None, [os.environ.get("PYTHONPATH")])])}
    cmd += ["-p", "timeline_plugin"]
    load = os.getloadavg()[0]
    t_start = time.time()
    started = time.monotonic()
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, check=False, env=env)
    wall = time.monotonic() - started
    t_end = t_start + wall
    if proc.returncode != 0:
        raise SystemExit(proc.stdout[-3000:] + proc.stderr[-3000:])
    week = next((root / "evals" / "weekly-demo").iterdir())
    runs = [json.loads(p.read_text()) for p in week.glob("*/run.json")]
    grades = [json.loads(p.read_text()) for p in week.glob("*/grades.json")]
    run_s = sum(r["wall_ms"] for r in runs) / 1000
    judge_s = sum(g["judge_ms"] for g in grades) / 1000
    with_runs = [r["wall_ms"] / 1000 for r in runs if r["condition"] == "with-skill"]
    return {"runs": len(runs), "wall": wall, "run_s": run_s, "judge_s": judge_s,
            "work": run_s + judge_s, "with_run_s": sum(with_runs) / len(with_runs),
            "load": load, "timeline": timeline(week, t_start, t_end),
            "events": events(events_file, t_start)}


def events(path: Path, t_start: float) -> dict[str, dict[str, float]]:
    """timeline_plugin's events: process → event → seconds since the session started."""
    out: dict[str, dict[str, float]] = {}
    for line in path.read_text().splitlines():
        e = json.loads(line)
        out.setdefault(e["who"], {}).setdefault(e["event"], e["t"] - t_start)
    return out


def timeline(week: Path, t_start: float, t_end: float) -> dict[str, float]:
    """Where a session's wall time goes, from the week's own files (no instrumentation).

    A run's end is its run.json's mtime (written when the CLI finished), its start that minus
    ``wall_ms``; its grading ends at grades.json's mtime.  The phases:

    * start-up: session start → first run start (interpreter, plugin, xdist workers and
      their imports, collection); ``all_busy`` is when the last of the first ``workers`` runs
      started (every worker busy);
    * runs: first run start → last grades.json; ``idle`` is the part of workers × that window
      not spent in a run or a judge call;
    * wrap-up: last grades.json → CSVs rebuilt (manifest.csv/scores.csv) → scorecard and
      plots written → process exit (``exit``: terminal summary, worker and server shutdown).
    """
    spans = []
    for rj in week.glob("*/run.json"):
        rec = json.loads(rj.read_text())
        end = rj.stat().st_mtime
        g = rj.parent / "grades.json"
        graded = g.stat().st_mtime if g.exists() else end
        spans.append((end - rec["wall_ms"] / 1000, end, graded))
    spans.sort()
    first = spans[0][0]
    last = max(s[2] for s in spans)
    csvs = max((week / n).stat().st_mtime for n in ("manifest.csv", "scores.csv"))
    card = max(p.stat().st_mtime for p in week.iterdir()
               if p.name.startswith("scorecard") or p.suffix == ".png")
    return {"startup": first - t_start, "first_starts": [s[0] - t_start for s in spans[:4]],
            "runs_window": last - first, "last_graded": last - t_start,
            "csv_rebuild": csvs - last, "scorecard": card - csvs, "exit": t_end - card,
            "wrapup": t_end - last}


def bare_cli(root: Path) -> float:
    """Mean seconds of the bare CLI (no harness) over the week's with-skill prompts, each run
    once against the same stand-in and scripted model as the week."""
    sys.path.insert(0, str(REPO))
    from pytest_skilllift.runners.claude import QUIET_ENV, bundled_claude
    from pytest_skilllift.testing.demo import demo_agent
    from pytest_skilllift.testing.server import StandIn

    claude = str(bundled_claude())
    prompts = [json.loads(p.read_text())
               for p in sorted((root / "evals" / "test-prompts").glob("*.json"))]
    times = []
    with StandIn(agent=demo_agent(), latency_s=AGENT_LATENCY) as api:
        for prompt in prompts:
            home = Path(tempfile.mkdtemp())
            family = prompt["skill_url"].split("/")[3]
            shutil.copytree(root / "skills" / family, home / ".claude" / "skills" / family)
            env = {"HOME": str(home), "PATH": os.environ["PATH"], **QUIET_ENV,
                   "ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": "bench"}
            started = time.monotonic()
            subprocess.run([claude, "-p", prompt["prompt"], "--output-format", "stream-json",
                            "--verbose", "--model", "sonnet", "--permission-mode", "dontAsk",
                            "--allowedTools", "Skill,WebSearch,WebFetch,Read,Grep,Glob,Bash",
                            "--no-session-persistence"], env=env, cwd=home,
                           capture_output=True, check=True)
            times.append(time.monotonic() - started)
            shutil.rmtree(home)
    return sum(times) / len(times)


def print_events(label: str, r: dict[str, Any]) -> None:
    """Per process, when it reached each phase (seconds since the session started)."""
    print(f"\n{label}: seconds since session start")
    for who, ev in sorted(r["events"].items()):
        print(f"  {who:10s} " + "  ".join(f"{k}={v:.2f}" for k, v in
                                          sorted(ev.items(), key=lambda kv: kv[1])))


def print_timeline(label: str, r: dict[str, Any]) -> None:
    t = r["timeline"]
    starts = ", ".join(f"{x:.1f}" for x in t["first_starts"])
    print(f"| {label} | {r['wall']:.1f} s | {r['work']:.1f} s | {r['work'] / r['wall']:.2f} | "
          f"{t['startup']:.1f} s (first runs at {starts}) | {t['runs_window']:.1f} s | "
          f"{t['csv_rebuild']:.2f} + {t['scorecard']:.2f} + {t['exit']:.2f} = "
          f"{t['wrapup']:.1f} s | {r['load']:.1f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=1, help="parallel sessions to time")
    ap.add_argument("--no-serial", action="store_true",
                    help="skip the serial session and the bare CLI (only the -n timeline)")
    ap.add_argument("--events", action="store_true",
                    help="print every process's phase times (timeline_plugin)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_project(root)
        serial = None if args.no_serial else run_week(root, 1)
        parallel = [run_week(root, args.workers) for _ in range(args.repeat)]
        bare = None if args.no_serial else bare_cli(root)
    n = args.workers
    print("| session | wall | work (Σ run + Σ judge) | effective parallelism | start-up "
          "| runs window | wrap-up: CSVs + scorecard + exit | load |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    if serial is not None:
        print_timeline("serial", serial)
    for r in parallel:
        print_timeline(f"-n {n}", r)
    if args.events:
        for r in ([serial] if serial else []) + parallel:
            print_events(f"-n {n}" if r is not serial else "serial", r)
    if serial is None or bare is None:
        return
    par = parallel[0]
    # Everything the session spends beyond the runs and judge calls themselves (start-up,
    # collection, ledger, summarize, plots), per run.
    per_run_harness = (serial["wall"] - serial["work"]) / serial["runs"]
    print()
    print("| measure | value |\n| --- | --- |")
    print(f"| runs in the week | {serial['runs']} |")
    print(f"| serial work (Σ run wall + Σ judge) | {serial['work']:.1f} s "
          f"({serial['run_s']:.1f} + {serial['judge_s']:.1f}) |")
    print(f"| session wall, serial (-p no:xdist) | {serial['wall']:.1f} s |")
    print(f"| session wall, -n {n} | {par['wall']:.1f} s |")
    print(f"| -n {n} wall / serial work of the serial session | "
          f"{par['wall'] / serial['work']:.2f} (floor {1 / n:.2f}) |")
    print(f"| effective parallelism at -n {n}: its own work (Σ run wall + Σ judge: "
          f"{par['work']:.1f} s) / its wall | {par['work'] / par['wall']:.2f} (limit {n}) |")
    print(f"| bare CLI, with-skill run (mean over the 5 prompts) | {bare:.2f} s |")
    print(f"| runner, with-skill run (mean, serial session) | {serial['with_run_s']:.2f} s |")
    print(f"| runner overhead per run over the bare CLI | {serial['with_run_s'] - bare:.2f} s |")
    print(f"| harness beyond runs and judge, per run (serial) | {per_run_harness:.2f} s |")


if __name__ == "__main__":
    main()
