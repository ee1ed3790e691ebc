"""Benchmark: per-run overhead of the docker runner over the local runner (target: < 0.5 s).

    /opt/venv/bin/python benchmarks/bench_docker.py [--runs 10] [--image skilllift-test:local]

Both runners run the real Claude Code CLI against the same Messages API stand-in (a one-turn
scripted answer, no latency), with-skill arm, so the only difference is where the CLI runs.
Measured:

1. full runs, alternating local / docker (``network=host``): wall time per run;
2. the container lifecycle alone, phase by phase, with no CLI: ``create`` → ``put_archive``
   of the skill family → ``start`` → ``remove`` (what the docker runner adds around the CLI).

The docker overhead is the difference of the medians of (1), cross-checked by (2). Prints a
Markdown table. Needs a Docker engine and the image (``.ci/docker-setup.sh`` provides both).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import docker.client

from pytest_skilllift.model import AgentConfig, PromptSpec, RunSpec
from pytest_skilllift.runners.claude import bundled_claude, find_claude
from pytest_skilllift.runners.docker import DockerRunner
from pytest_skilllift.runners.image import TEST_IMAGE_TAG
from pytest_skilllift.runners.local import LocalRunner
from pytest_skilllift.testing import Reply, StandIn

SKILL_MD = """---
name: bench-skill
description: Use when benchmarking the skilllift runners.
---
# Bench skill
Say "done".
"""


def _spec(i: int) -> RunSpec:
    prompt = PromptSpec(path=Path("bench.json"), name="bench", product_area="bench",
                        prompt="Say done.", rubric=(), skill_path="bench-skill/SKILL.md")
    return RunSpec(prompt=prompt, model_label="sonnet", model_id="claude-sonnet-4-5",
                   condition="with-skill", rep=i, run_id=f"bench-r{i}")


def _stats(values: list[float]) -> tuple[float, float, float]:
    """(median, p90, max) in ms."""
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    return statistics.median(ordered) * 1000, p90 * 1000, ordered[-1] * 1000


def _lap(sink: list[float], since: float) -> float:
    """Append the seconds since ``since`` to ``sink``; return now."""
    now = time.perf_counter()
    sink.append(now - since)
    return now


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="runs per runner (default 10)")
    parser.add_argument("--image", default=TEST_IMAGE_TAG)
    parser.add_argument("--cpus", type=float, default=1.0,
                        help="the docker runner's CPU limit (default 1.0, the runner's default; "
                             "the local runner is unlimited)")
    args = parser.parse_args(argv)

    claude = find_claude(None) or str(bundled_claude() or "")
    if not claude:
        print("no Claude Code CLI found (install claude-agent-sdk)", file=sys.stderr)
        return 2
    client = docker.client.from_env()
    api = StandIn(agent=lambda body: Reply.text("done"))
    base_url = api.start()
    local = LocalRunner()
    dock = DockerRunner(args.image, network="host", client=client, week="bench",
                        cpus=args.cpus)
    rows: list[tuple[str, list[float]]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="skilllift-bench-") as tmp:
            skills = Path(tmp, "skills")
            (skills / "bench-skill").mkdir(parents=True)
            (skills / "bench-skill" / "SKILL.md").write_text(SKILL_MD)
            (skills / "bench-skill" / "reference.md").write_text("x" * 20_000)
            cfg = AgentConfig(claude_path=claude, skills_root=skills, timeout_s=120,
                              env={"ANTHROPIC_BASE_URL": base_url,
                                   "ANTHROPIC_API_KEY": "sk-bench-not-a-real-key"})
            # Warm-up: page cache for the 400 MB binary on both sides, image layers.
            for runner in (local, dock):
                runner.run(_spec(0), cfg, Path(tmp, f"warm-{runner.name}"))

            local_s: list[float] = []
            docker_s: list[float] = []
            for i in range(1, args.runs + 1):
                for runner, sink in ((local, local_s), (dock, docker_s)):
                    run_dir = Path(tmp, f"{runner.name}-{i}")
                    outcome = runner.run(_spec(i), cfg, run_dir)
                    if outcome.error or outcome.exit_code != 0:
                        print(f"{runner.name} run {i} failed: {outcome}", file=sys.stderr)
                        return 1
                    sink.append(outcome.wall_ms / 1000)

            # The container lifecycle alone (the runner's own steps, no CLI).
            phases: dict[str, list[float]] = {k: [] for k in
                                              ("create", "put_archive", "start", "remove")}
            family = skills / "bench-skill"
            for i in range(1, args.runs + 1):
                t = time.perf_counter()
                cid = dock._create(_spec(i), cfg)
                t = _lap(phases["create"], t)
                dock._install(cid, [family], _spec(i).prompt.prompt)
                t = _lap(phases["put_archive"], t)
                dock.client.api.start(cid)
                t = _lap(phases["start"], t)
                dock._cleanup(cid)
                _lap(phases["remove"], t)
            lifecycle = [sum(v[i] for v in phases.values()) for i in range(args.runs)]

            rows = [("local runner: full run", local_s), ("docker runner: full run", docker_s)]
            rows += [(f"container {k}", v) for k, v in phases.items()]
            rows.append(("container lifecycle total (no CLI)", lifecycle))
    finally:
        dock.close()
        api.stop()

    overhead_ms = (statistics.median(docker_s) - statistics.median(local_s)) * 1000
    print(f"Docker runner overhead — {args.runs} with-skill runs per runner, real CLI "
          f"{dock.cli_version} against the stand-in, docker --cpus {args.cpus:g}; "
          f"{platform.machine()}, "
          f"{os.cpu_count()} CPUs, Docker {client.version().get('Version')}, "
          f"load average {os.getloadavg()[0]:.1f}\n")
    print("| measure | median ms | p90 ms | max ms |")
    print("|---|---:|---:|---:|")
    for label, values in rows:
        med, p90, top = _stats(values)
        print(f"| {label} | {med:.0f} | {p90:.0f} | {top:.0f} |")
    verdict = "meets" if overhead_ms < 500 else "MISSES"
    print(f"\nper-run overhead (median docker − median local): {overhead_ms:.0f} ms "
          f"— {verdict} the < 0.5 s target")
    client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
