"""Benchmark: the harness's own time per Harbor task run, and what a second session builds.

    python benchmarks/bench_tasks.py [--runs 6] [--cold]

Runs the demo's ``sales-report`` task (docs/tasks.md) through the task runner with the real
Claude Code CLI against the stand-in's working agent (``testing/task_script.py``), arms
alternating, in two "sessions" (two runner instances, as two pytest sessions make):

1. the first session builds the (task, arm) images when they are missing (``--cold`` removes
   them first, and the CLI-only image with them);
2. the second session must build nothing: it finds every image by its content hash.

Per run, from the run folder's ``task.json``: the harness's own time (the run's wall time
minus the agent's exec, the verifier's exec and a first build: image lookup, container create
and start, the user lookup, the instruction's archive, ``docker diff`` and the artefact copy,
the verifier's archive and the log copy), each phase, and this process's own CPU time per run
(``client_cpu_s``: every thread, the output pumps included — the client side's work, which
the machine's load does not inflate). The container's removal runs in the background (timed
at the session's close). The load average at the start and the end is printed with the
table: the engine's work (create, start, copies, ``docker diff``) is what a loaded machine
slows; a fixed CPU budget for this process is ``taskset -c 0 python
benchmarks/bench_tasks.py``. Prints a Markdown table. Needs a Docker engine and
``skilllift-task-base:local`` (``skilllift image task-base``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import docker.client

from pytest_skilllift.config import DEMO_TASKS
from pytest_skilllift.model import AgentConfig, RunSpec
from pytest_skilllift.run.tasks.reader import load_task
from pytest_skilllift.run.tasks.results import read_result
from pytest_skilllift.runners.claude import bundled_claude
from pytest_skilllift.runners.task_docker import TaskRunner
from pytest_skilllift.runners.task_image import cli_image_tag, context_hash, image_tag
from pytest_skilllift.testing.agent_script import skill_agent
from pytest_skilllift.testing.server import StandIn
from pytest_skilllift.testing.task_script import task_agent
from pytest_skilllift.week.files import TASK_FILE

PHASES = ("harness_s", "setup_s", "isolate_s", "artifacts_s", "agent_s", "verifier_s", "wall_s",
          "client_cpu_s")


def _stats(values: list[float]) -> str:
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    return f"{statistics.median(ordered):.2f} / {p90:.2f}"


def session(runs: int, out: Path, base_url: str, tag: str) -> dict[str, Any]:
    """One runner instance (a session): ``runs`` runs, arms alternating."""
    prompt = load_task(DEMO_TASKS / "sales-report", Path("skills"))
    cfg = AgentConfig(claude_path="claude", skills_root=Path("skills"),
                      env={"ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": "sk-bench"})
    runner = TaskRunner(network="host")
    timings: list[dict[str, float]] = []
    rewards: dict[str, list[float | None]] = {"no-skill": [], "with-skill": []}
    for i in range(runs):
        condition = ("no-skill", "with-skill")[i % 2]
        spec = RunSpec(prompt=prompt, model_label="sonnet", model_id="claude-sonnet-4-5",
                       condition=condition, rep=i + 1, run_id=f"bench-{tag}-{condition}-r{i}")
        run_dir = out / spec.run_id
        cpu0 = time.process_time()
        outcome = runner.run(spec, cfg, run_dir)
        cpu = time.process_time() - cpu0
        if outcome.error:
            raise SystemExit(f"{spec.run_id}: {outcome.error}")
        info = json.loads((run_dir / TASK_FILE).read_text())
        # This process's own CPU over the run, every thread (the output pumps included): the
        # harness's client-side work, which the machine's load does not inflate.
        timings.append({**info["timings"], "client_cpu_s": cpu})
        assert prompt.task is not None
        rewards[condition].append(read_result(run_dir, prompt.task).reward)
    closing = time.monotonic()
    runner.close()
    return {"timings": timings, "built": list(runner.images.built), "rewards": rewards,
            "close_s": time.monotonic() - closing}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=6, help="runs per session (default 6)")
    parser.add_argument("--cold", action="store_true",
                        help="remove the task's images first (the first session builds them)")
    args = parser.parse_args()
    client = docker.client.from_env()
    cli = bundled_claude()
    if cli is None:
        raise SystemExit("needs the Claude Code binary (pip install claude-agent-sdk)")
    task = load_task(DEMO_TASKS / "sales-report", Path("skills")).task
    assert task is not None
    if args.cold:
        for with_skills in (True, False):
            tag = image_tag(task, with_skills, context_hash(task, with_skills, cli))
            for name in (tag, cli_image_tag(cli)):
                with contextlib.suppress(docker.errors.ImageNotFound):
                    client.images.remove(name, force=True)
    load0 = os.getloadavg()
    server = StandIn(agent=task_agent(skill_agent))
    server.start()
    try:
        with tempfile.TemporaryDirectory(prefix="skilllift-bench-tasks-") as tmp:
            first = session(args.runs, Path(tmp), server.base_url, "s1")
            second = session(args.runs, Path(tmp), server.base_url, "s2")
    finally:
        server.stop()
    load = os.getloadavg()
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 0
    print(f"# Harbor task runs: {args.runs} per session, {platform.node()}, "
          f"{os.cpu_count()} CPUs ({affinity} for this process), load (1/5 min) "
          f"{load0[0]:.1f}/{load0[1]:.1f} at the start, {load[0]:.1f}/{load[1]:.1f} at the end\n")
    print("| measure (median / p90 s) | session 1 | session 2 |")
    print("| --- | ---: | ---: |")
    for phase in PHASES:
        print(f"| {phase} | {_stats([t.get(phase, 0.0) for t in first['timings']])} | "
              f"{_stats([t.get(phase, 0.0) for t in second['timings']])} |")
    builds = [t.get("image_build_s", 0.0) for t in first["timings"] if t.get("image_build_s")]
    print(f"| images built | {len(first['built'])} ({', '.join(f'{b:.1f}' for b in builds)} s) "
          f"| {len(second['built'])} |")
    print(f"| background removals awaited at close (s) | {first['close_s']:.2f} | "
          f"{second['close_s']:.2f} |")
    for name, s in (("session 1", first), ("session 2", second)):
        print(f"\n{name} rewards: {s['rewards']}")
    return 1 if second["built"] else 0


if __name__ == "__main__":
    sys.exit(main())
