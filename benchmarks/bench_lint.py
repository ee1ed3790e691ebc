"""Benchmark: static analysis of a tree of 1,000 skills (target: under 5 s).

    /opt/venv/bin/python benchmarks/bench_lint.py [--skills 1000] [--repeat 3]

Builds synthetic skills trees in a temporary directory — "typical" (about 100 lines per
SKILL.md on average; the real qdrant skills average 60) and "heavy" (about 355) — each section
with a code block, a MUST and two links; a third of the skills hold references/ (every other
link into it dead); nested sub-skills and cross-references. Then times (1) the in-process
analysis (``score_path``) and (2) the CLI end to end
(``python -m pytest_skilllift.cli.score score TREE --output json``, interpreter start-up and
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
from pytest_skilllift.skill.security.scanner import scan_path

SECTION = """
## Step {i}

Run the command and check the output. You MUST keep the batch small when memory is tight.

```bash
tool run --step {i} --collection demo
```

See [the details](references/detail-{i}.md) and the [sibling](../{sibling}/SKILL.md).
"""


#: sections per SKILL.md (each ~6 lines, 2 links, 1 code block, 1 MUST):
#: "typical" ~ the real qdrant skills (24-118 lines), "heavy" ~ 6x their mean length.
PROFILES: dict[str, tuple[int, int]] = {"typical": (1, 15), "heavy": (2, 60)}


def build_tree(root: Path, n: int, sections: tuple[int, int] = (2, 60), seed: int = 7) -> None:
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
            n_sections = rng.randint(*sections)
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
            for i in range(n_sections):
                body.append(SECTION.format(i=i, sibling=f"family-{rng.randint(1, fam):04d}"))
            if rng.random() < 0.5:
                body.append("## Examples\n\n```python\nprint('hi')\n```\n")
            if rng.random() < 0.5:
                body.append("## Troubleshooting\n\nIf it fails, read the log.\n")
            (d / "SKILL.md").write_text("\n".join(body), encoding="utf-8")
            if with_refs:
                refs = d / "references"
                refs.mkdir(exist_ok=True)
                for i in range(0, n_sections, 2):  # every other link resolves: ORPHAN_REFERENCE
                    (refs / f"detail-{i}.md").write_text(f"detail {i}\n", encoding="utf-8")
            made += 1


def _time_tree(root: Path, n: int, repeat: int) -> dict[str, object]:
    """Time in-process and CLI scoring of one tree (wall and CPU)."""
    lines = sum(p.read_text(encoding="utf-8").count("\n") + 1 for p in root.rglob("SKILL.md"))
    inproc: list[float] = []
    inproc_cpu: list[float] = []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        run = score_path(root)
        inproc.append(time.perf_counter() - t0)
        inproc_cpu.append(time.process_time() - c0)
    assert len(run.reports) == n, len(run.reports)
    scan: list[float] = []
    scan_cpu: list[float] = []
    for _ in range(repeat):  # the security layer alone (score_path above includes it)
        t0, c0 = time.perf_counter(), time.process_time()
        scan_path(root)
        scan.append(time.perf_counter() - t0)
        scan_cpu.append(time.process_time() - c0)
    cli: list[float] = []
    cli_cpu: list[float] = []
    cmd = [
        sys.executable,
        "-m",
        "pytest_skilllift.cli.score",
        "score",
        str(root),
        "--output",
        "json",
    ]
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, check=False)
        cli.append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cli_cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        assert proc.returncode == 0, proc.stderr[-2000:]
    return {
        "lines": lines,
        "flagged": sum(1 for r in run.reports if r.anti_patterns),
        "rows": (
            ("`score_path` in-process", inproc, inproc_cpu),
            ("CLI `--output json`", cli, cli_cpu),
            ("`skilllift scan`'s `scan_path` alone", scan, scan_cpu),
        ),
    }


def main(argv: list[str] | None = None) -> int:
    """Build each tree profile, time both paths, print one Markdown table."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--skills", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", choices=[*PROFILES, "both"], default="both")
    args = ap.parse_args(argv)
    names = list(PROFILES) if args.profile == "both" else [args.profile]
    results = {}
    with tempfile.TemporaryDirectory(prefix="bench-lint-") as tmp:
        for name in names:
            root = Path(tmp) / name / "skills"
            build_tree(root, args.skills, PROFILES[name])
            results[name] = _time_tree(root, args.skills, args.repeat)
    load = os.getloadavg()[0]
    print(
        f"{args.skills} skills per tree; Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, load average {load:.1f} at the end; best and median of "
        f"{args.repeat} runs\n"
    )
    print(
        "| tree | SKILL.md lines | path | wall best (s) | wall median (s) | CPU best (s) | < 5 s |"
    )
    print("|---|---:|---|---:|---:|---:|---|")
    for name, res in results.items():
        for label, xs, cpu in res["rows"]:  # type: ignore[attr-defined]
            best = min(xs)
            print(
                f"| {name} | {res['lines']:,} | {label} | {best:.2f} | "
                f"{statistics.median(xs):.2f} | {min(cpu):.2f} | {'yes' if best < 5 else 'NO'} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
