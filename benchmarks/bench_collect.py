"""Benchmark collection: ``pytest --skill-lift --collect-only`` over a large prompt set.

The project: ``--prompts`` prompt files (default 2,000) made from the 26 real qdrant/skills
prompts in ``tests/fixtures/data`` (cycled, each renamed), their skills, 2 models × 2
conditions × 3 reps — with the real prompts' 7.4 rubric items on average and one ``invoked``
item per with-skill run, ≈ 190,000 test items in 24,000 runs.  Each round runs the collection
in a fresh interpreter, timed start to exit (wall, and the CPU of the process); the item count
is checked against the prompts.  For scale, the same tree of trivial items is collected by
pytest alone (a ``conftest.py``, no plugin of ours): what one test per rubric item costs before
this plugin does anything; and the flattest tree (each file yields its items directly), the
lowest floor pytest has for that many items.

    python benchmarks/bench_collect.py                  # 2,000 prompts, 3 rounds
    python benchmarks/bench_collect.py --prompts 200 --repeat 1
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
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
QDRANT = REPO / "tests" / "fixtures" / "data" / "qdrant-skills"
MODELS, REPS, CONDITIONS = ("sonnet", "haiku"), 3, 2


def make_project(root: Path, n_prompts: int) -> int:
    """Write the skills and ``n_prompts`` prompt files; returns the expected item count."""
    shutil.copytree(QDRANT / "skills", root / "skills")
    out = root / "evals" / "test-prompts"
    out.mkdir(parents=True)
    templates = [json.loads(p.read_text(encoding="utf-8"))
                 for p in sorted((QDRANT / "test-prompts").glob("*.json"))]
    items = 0
    for i in range(n_prompts):
        data = dict(templates[i % len(templates)])
        data["name"] = f"{data['name']}-{i:05d}"
        (out / f"{data['name']}.json").write_text(json.dumps(data), encoding="utf-8")
        items += len(data["rubric"])
    # Every rubric item of every run, and one ``invoked`` item per with-skill run.
    return (items * CONDITIONS + n_prompts) * len(MODELS) * REPS


#: What both floors share: no plugin of ours, but the plugin's garbage-collector treatment
#: (gc off while collecting, the tree frozen after), so a floor is pytest's node machinery,
#: not the garbage collector; and the trivial item.
_FLOOR_COMMON = """
import gc
import json
import pytest


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_collection(session):
    gc.disable()
    try:
        return (yield)
    finally:
        gc.freeze()
        gc.enable()

class Leaf(pytest.Item):
    def runtest(self):
        pass

def pytest_collect_file(file_path, parent):
    if file_path.suffix == ".json":
        return Prompt.from_parent(parent, path=file_path)
"""

#: pytest alone on the same tree (file → model → condition → rep → items) of trivial items:
#: the floor any one-test-per-rubric-item collection stands on.
_FLOOR_CONFTEST = _FLOOR_COMMON + """
class Level(pytest.Collector):
    def __init__(self, *, depth, n_items, **kw):
        super().__init__(**kw)
        self.depth, self.n_items = depth, n_items

    def collect(self):
        if self.depth == 3:
            for i in range(self.n_items):
                yield Leaf.from_parent(self, name=f"item-{i}")
            return
        for i in range((%d, %d, %d)[self.depth]):
            yield Level.from_parent(self, name=f"n{i}", depth=self.depth + 1,
                                    n_items=self.n_items)

class Prompt(pytest.File):
    def collect(self):
        # Half the leaves are with-skill runs, which have one more item (``invoked``): the
        # same count, as a whole rubric item per run plus a half.
        n_items = len(json.loads(self.path.read_text())["rubric"])
        yield Level.from_parent(self, name="p", depth=0, n_items=n_items)
        yield Extra.from_parent(self, name="invoked", n=%d)


class Extra(pytest.Collector):
    def __init__(self, *, n, **kw):
        super().__init__(**kw)
        self.n = n

    def collect(self):
        for i in range(self.n):
            yield Leaf.from_parent(self, name=f"invoked-{i}")
"""

#: The flattest tree pytest can have: each prompt file yields its trivial items directly (no
#: model/condition/run levels, so no node ids addressable by run) — the lowest floor.
_FLAT_CONFTEST = _FLOOR_COMMON + """
class Prompt(pytest.File):
    def collect(self):
        n_items = len(json.loads(self.path.read_text())["rubric"])
        for run in range(%d):
            with_skill = run %% 2
            for i in range(n_items + with_skill):
                yield Leaf.from_parent(self, name=f"r{run}-item-{i}")
"""


def write_floor(root: Path, *, flat: bool = False) -> None:
    """A conftest.py that collects the prompt files as trivial items (see _FLOOR_CONFTEST
    and _FLAT_CONFTEST)."""
    runs = len(MODELS) * CONDITIONS * REPS
    (root / "conftest.py").write_text(
        _FLAT_CONFTEST % runs if flat
        else _FLOOR_CONFTEST % (len(MODELS), CONDITIONS, REPS, len(MODELS) * REPS))


def collect(root: Path, *, floor: bool = False) -> tuple[float, float, int]:
    """(wall s, CPU s, items collected) of one ``--collect-only`` in a fresh interpreter."""
    cmd = [sys.executable, "-m", "pytest", "--skill-lift", "--collect-only", "-qq",
           "-p", "no:cacheprovider", f"--skill-lift-models={','.join(MODELS)}",
           f"--skill-lift-reps={REPS}"]
    if floor:
        cmd = [sys.executable, "-m", "pytest", "--collect-only", "-qq", "-p", "no:cacheprovider",
               "-p", "no:skilllift", "-p", "no:skilllift_lint", "evals/test-prompts"]
    before = os.times()
    t = time.perf_counter()
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t
    after = os.times()
    cpu = (after.children_user - before.children_user
           + after.children_system - before.children_system)
    if proc.returncode != 0:
        raise SystemExit(f"collection failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n"
                         f"{proc.stderr[-2000:]}")
    # -qq prints "<file>: <count>" per file (collect-only -q would print every id).
    counts = re.findall(r"^\S+\.json: (\d+)$", proc.stdout, flags=re.M)
    return wall, cpu, sum(int(c) for c in counts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prompts", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="skilllift-collect-") as tmp:
        root = Path(tmp)
        expected = make_project(root, args.prompts)
        variants = (("pytest-skilllift", None), ("pytest alone, same tree (floor)", "tree"),
                    ("pytest alone, flat: file → items (lowest floor)", "flat"))
        rows: dict[str, list[tuple[float, float, float]]] = {v[0]: [] for v in variants}
        for _ in range(args.repeat):  # interleaved, so the machine's load moves all alike
            for label, floor in variants:
                if floor:
                    write_floor(root, flat=floor == "flat")
                load = os.getloadavg()[0]
                wall, cpu, n = collect(root, floor=floor is not None)
                (root / "conftest.py").unlink(missing_ok=True)
                if n != expected:
                    raise SystemExit(f"{label}: collected {n} items, expected {expected}")
                rows[label].append((wall, cpu, load))
    print(f"{args.prompts} prompt files × {len(MODELS)} models × {CONDITIONS} conditions × "
          f"{REPS} reps = {expected:,} items (rubric items, and an ``invoked`` item per "
          "with-skill run)")
    print("| collection | wall best / median | CPU best | load avg (1 min) | < 3 s |")
    print("| --- | --- | --- | --- | --- |")
    for label, rs in rows.items():
        walls = [r[0] for r in rs]
        print(f"| {label} | {min(walls):.2f} / {statistics.median(walls):.2f} s | "
              f"{min(r[1] for r in rs):.2f} s | "
              f"{min(r[2] for r in rs):.1f}–{max(r[2] for r in rs):.1f} | "
              f"{'yes' if min(walls) < 3 else 'no'} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
