"""Benchmark: static analysis of a tree of 1,000 skills (target: under 5 s).

    /opt/venv/bin/python benchmarks/bench_lint.py [--skills 1000] [--repeat 3]

Builds a synthetic skills tree in a temporary directory — skills of 40 to 900 lines, a third
with references/ (some with dead links), nested sub-skills, cross-references — then times
(1) the in-process analysis (``score_path``) and (2) the CLI end to end
(``python -m pytest_skilllift.lint.cli score TREE --output json``, interpreter start-up and
JSON writing included). Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_skilllift.lint.analyze import score_path

SECTION = """
## Step {i}

Run the command and check the output. You MUST keep the batch small when memory is tight.

```bash
tool run --step {i} --collection demo
```

See [the details](references/detail-{i}.md) and the [sibling](../{sibling}/SKILL.md).
"""


def build_tree(root: Path, n: int, seed: int = 7) -> None:
    """``n`` skills under ``root``: families of 1-4 skills (a parent and nested children)."""
    rng = random.Random(seed)
    made = 0
    fam = 0
    while made < n:
        fam += 1
        family = root / f"family-{fam:04d}"
        members = [family] + [family / f"sub-{k}" for k in range(rng.randint(0, 3))]
        for d in members:
            if made >= n:
                break
            d.mkdir(parents=True, exist_ok=True)
            sections = rng.randint(2, 60)
            with_refs = rng.random() < 0.33
            body = [
                "---",
                f"name: {d.name}",
                f'description: "Handles {d.name} tasks, checks and fixes. Use when the user '
                f'asks about {d.name}, or when a {family.name} deployment misbehaves."',
                "---",
                f"# {d.name}",
                "",
                "Related: see the family overview.",
            ]
            for i in range(sections):
                body.append(SECTION.format(i=i, sibling=f"family-{rng.randint(1, fam):04d}"))
            if rng.random() < 0.5:
                body.append("## Examples\n\n```python\nprint('hi')\n```\n")
            if rng.random() < 0.5:
                body.append("## Troubleshooting\n\nIf it fails, read the log.\n")
            (d / "SKILL.md").write_text("\n".join(body), encoding="utf-8")
            if with_refs:
                refs = d / "references"
                refs.mkdir(exist_ok=True)
                for i in range(0, sections, 2):  # every other link resolves: ORPHAN_REFERENCE
                    (refs / f"detail-{i}.md").write_text(f"detail {i}\n", encoding="utf-8")
            made += 1


def main(argv: list[str] | None = None) -> int:
    """Build the tree, time both paths, print the table."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--skills", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-lint-") as tmp:
        root = Path(tmp) / "skills"
        build_tree(root, args.skills)
        lines = sum(p.read_text(encoding="utf-8").count("\n") + 1 for p in root.rglob("SKILL.md"))
        inproc: list[float] = []
        inproc_cpu: list[float] = []
        for _ in range(args.repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            run = score_path(root)
            inproc.append(time.perf_counter() - t0)
            inproc_cpu.append(time.process_time() - c0)
        assert len(run.reports) == args.skills, len(run.reports)
        flagged = sum(1 for r in run.reports if r.anti_patterns)
        cli: list[float] = []
        cli_cpu: list[float] = []
        for _ in range(args.repeat):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            proc = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pytest_skilllift.lint.cli",
                    "score",
                    str(root),
                    "--output",
                    "json",
                ],
                capture_output=True,
                check=False,
            )
            cli.append(time.perf_counter() - t0)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cli_cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
            assert proc.returncode == 0, proc.stderr[-2000:]
        load = os.getloadavg()[0]
    print(
        f"{args.skills} skills, {lines:,} SKILL.md lines, {flagged} with anti-patterns; "
        f"Python {platform.python_version()}, {os.cpu_count()} CPUs, load average "
        f"{load:.1f}; best and median of {args.repeat} runs\n"
    )
    print("| path | wall best (s) | wall median (s) | CPU best (s) | ms/skill (wall) | < 5 s |")
    print("|---|---:|---:|---:|---:|---|")
    rows = (
        ("`score_path` in-process", inproc, inproc_cpu),
        ("CLI `score TREE --output json`", cli, cli_cpu),
    )
    for label, xs, cpu in rows:
        best = min(xs)
        print(
            f"| {label} | {best:.2f} | {statistics.median(xs):.2f} | {min(cpu):.2f} | "
            f"{best / args.skills * 1000:.2f} | {'yes' if best < 5 else 'NO'} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
