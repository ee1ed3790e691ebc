"""Does parallelism pay? A 20-run week against the stand-in with scripted latency.

Builds a project of 5 prompts (the repo's example skills) × 1 model × 2 conditions × 2 reps,
then runs ``pytest --skill-lift-demo`` with 2 s of latency per agent call and 0.5 s per judge
call, serially and at ``-n 4``. "Serial work" is measured, not assumed: the sum of every run's
own wall time (manifest ``wall_ms``) plus every judge call's time (``grades.json``
``judge_ms``). It also times the bare CLI on the same stand-in to get the harness's per-run
overhead.

    python benchmarks/bench_week.py            # prints a markdown table
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
AGENT_LATENCY, JUDGE_LATENCY = 2.0, 0.5


def make_project(root: Path) -> None:
    shutil.copytree(REPO / "skills", root / "skills")
    prompts = root / "evals" / "test-prompts"
    prompts.mkdir(parents=True)
    sources = sorted((REPO / "evals" / "test-prompts").glob("*.json"))
    for i in range(5):
        data = json.loads(sources[i % len(sources)].read_text())
        data["name"] = f"{data['name']}-{i}"
        (prompts / f"{data['name']}.json").write_text(json.dumps(data))


def run_week(root: Path, workers: int) -> dict[str, float]:
    shutil.rmtree(root / "evals" / "weekly-demo", ignore_errors=True)
    args = ["-n", str(workers)] if workers > 1 else ["-p", "no:xdist"]
    cmd = [sys.executable, "-m", "pytest", "--skill-lift-demo", "-q", "-p", "no:cacheprovider",
           "--skill-lift-models=sonnet", "--skill-lift-reps=2",
           f"--skill-lift-demo-latency={AGENT_LATENCY}",
           f"--skill-lift-demo-judge-latency={JUDGE_LATENCY}", *args]
    started = time.monotonic()
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(proc.stdout[-3000:] + proc.stderr[-3000:])
    week = next((root / "evals" / "weekly-demo").iterdir())
    runs = [json.loads(p.read_text()) for p in week.glob("*/run.json")]
    grades = [json.loads(p.read_text()) for p in week.glob("*/grades.json")]
    run_s = sum(r["wall_ms"] for r in runs) / 1000
    judge_s = sum(g["judge_ms"] for g in grades) / 1000
    with_runs = [r["wall_ms"] / 1000 for r in runs if r["condition"] == "with-skill"]
    return {"runs": len(runs), "wall": wall, "run_s": run_s, "judge_s": judge_s,
            "work": run_s + judge_s, "with_run_s": sum(with_runs) / len(with_runs)}


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


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_project(root)
        serial = run_week(root, 1)
        parallel = run_week(root, 4)
        bare = bare_cli(root)
    # Everything the session spends beyond the runs and judge calls themselves (start-up,
    # collection, ledger, summarize, plots), per run.
    per_run_harness = (serial["wall"] - serial["work"]) / serial["runs"]
    print("| measure | value |\n| --- | --- |")
    print(f"| runs in the week | {serial['runs']} |")
    print(f"| serial work (Σ run wall + Σ judge) | {serial['work']:.1f} s "
          f"({serial['run_s']:.1f} + {serial['judge_s']:.1f}) |")
    print(f"| session wall, serial (-p no:xdist) | {serial['wall']:.1f} s |")
    print(f"| session wall, -n 4 | {parallel['wall']:.1f} s |")
    print(f"| -n 4 wall / serial work of the serial session | "
          f"{parallel['wall'] / serial['work']:.2f} (goal ≤ 0.33, limit 0.25) |")
    print(f"| -n 4 wall / its own runs' work (Σ run wall + Σ judge at -n 4: "
          f"{parallel['work']:.1f} s) | {parallel['wall'] / parallel['work']:.2f} |")
    print(f"| bare CLI, with-skill run (mean over the 5 prompts) | {bare:.2f} s |")
    print(f"| runner, with-skill run (mean, serial session) | {serial['with_run_s']:.2f} s |")
    print(f"| harness beyond runs and judge, per run (serial) | {per_run_harness:.2f} s |")


if __name__ == "__main__":
    main()
