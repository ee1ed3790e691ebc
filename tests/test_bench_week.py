"""benchmarks/bench_week.py's account of a parallel session: its parts add up to the wall time
and each second lands in the part it belongs to (synthetic timelines, no session is run)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_week.py"


@pytest.fixture(scope="module")
def bench() -> Any:
    spec = importlib.util.spec_from_file_location("bench_week", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_week", module)
    spec.loader.exec_module(module)
    return module


def ev(who: str, event: str, t: float, cpu: float = 0.0, children: float = 0.0,
       nodeid: str | None = None) -> dict[str, Any]:
    e: dict[str, Any] = {"who": who, "event": event, "t": t, "cpu": cpu,
                         "children_cpu": children}
    if nodeid is not None:
        e["nodeid"] = nodeid
    return e


def node(prompt: str, condition: str, item: str) -> str:
    return f"evals/test-prompts/{prompt}.json::sonnet::{condition}::r1::{item}"


RUNS: dict[str, dict[str, Any]] = {
    "a-with": {"prompt": "a", "model": "sonnet", "condition": "with-skill", "rep": 1,
               "wall_ms": 5000},
    "b-with": {"prompt": "b", "model": "sonnet", "condition": "with-skill", "rep": 1,
               "wall_ms": 4000}}
GRADES: dict[str, dict[str, Any]] = {"a-with": {"judge_ms": 1500}, "b-with": {"judge_ms": 500}}


def session(bench: Any) -> dict[str, Any]:
    """Controller up at 1.0; gw1 spawned at 1.5, plugins loaded at 2.0, configured at 2.5,
    collected at 2.6; both first runs start at 2.7. gw0's run (a) ends at 9.7 (CLI 5 s,
    judge 1.5 s: 0.5 s of harness), gw1's (b) at 7.7; wrap-up: sessionfinish 9.8 → 10.8,
    unconfigure 11.0, atexit 11.1, exit at 12.0."""
    events = [
        ev("controller", "process_start", 0.0), ev("controller", "sessionstart", 1.0),
        ev("controller", "node_collected:gw0", 2.4, cpu=1.0),
        ev("controller", "node_collected:gw1", 2.6, cpu=1.0),
        ev("controller", "sessionfinish_start", 9.8, cpu=3.0),
        ev("controller", "sessionfinish_end", 10.8, cpu=3.5),
        ev("controller", "unconfigure_end", 11.0, cpu=3.6),
        ev("controller", "atexit", 11.1, cpu=3.6),
        ev("gw0", "process_start", 1.2), ev("gw0", "plugin_loaded", 1.6),
        ev("gw0", "sessionstart", 2.2), ev("gw0", "collection_finish", 2.4),
        ev("gw0", "first_item", 2.7, cpu=0.8),
        ev("gw0", "item_start", 2.7, nodeid=node("a", "with-skill", "must-1")),
        ev("gw0", "item_end", 9.7, children=1.0, nodeid=node("a", "with-skill", "must-1")),
        ev("gw0", "sessionfinish_start", 9.7, cpu=1.0, children=1.0),
        ev("gw1", "process_start", 1.5), ev("gw1", "plugin_loaded", 2.0),
        ev("gw1", "sessionstart", 2.5), ev("gw1", "collection_finish", 2.6),
        ev("gw1", "first_item", 2.7, cpu=0.9),
        ev("gw1", "item_start", 2.7, nodeid=node("b", "with-skill", "must-1")),
        ev("gw1", "item_end", 7.7, children=0.8, nodeid=node("b", "with-skill", "must-1")),
        ev("gw1", "sessionfinish_start", 7.7, cpu=1.1, children=0.8),
    ]
    wall = 12.0
    work = sum(r["wall_ms"] for r in RUNS.values()) / 1000 + 2.0
    return {"wall": wall, "work": work, "run_s": 9.0, "judge_s": 2.0, "standin_cpu": 0.0,
            "timeline": bench.timeline(events, RUNS, GRADES, wall, 0.0)}


def test_the_parts_add_up_to_the_wall_time(bench: Any) -> None:
    r = session(bench)
    parts = dict(bench.critical_path(r, None))
    assert sum(parts.values()) == pytest.approx(12.0)
    # Start-up follows gw1, the worker that collected last.
    assert parts["start-up: controller (interpreter, pytest, plugins, configure)"] == 1.0
    assert parts["start-up: gw1 boots (interpreter, execnet, pytest import)"] == (
        pytest.approx(0.5))
    assert parts["start-up: scheduling, the first item's set-up"] == pytest.approx(0.1)
    # Each run: 0.5 s of its items beyond its CLI and judge (gw0: 7 − 5 − 1.5, gw1: 5 − 4 −
    # 0.5); 1 s over 2 workers.
    assert parts["runs: harness inside a run's items, beyond CLI and judge (Σ / workers)"] == (
        pytest.approx(0.5))
    # gw1 was done 2 s before gw0: 1 s of imbalance per worker.
    assert parts["runs: imbalance (workers idle before the last run ends; late first runs)"] == (
        pytest.approx(1.0))
    assert parts["wrap-up: interpreter finalization and exit (atexit → wall)"] == (
        pytest.approx(0.9))


def test_against_a_serial_session_the_slowdowns_are_their_own_parts(bench: Any) -> None:
    r = session(bench)
    serial = {"run_s": 8.0, "judge_s": 1.0, "work": 9.0}
    parts = dict(bench.critical_path(r, serial))
    assert sum(parts.values()) == pytest.approx(12.0)
    assert parts["runs: the ideal, serial work / workers"] == pytest.approx(4.5)
    assert parts["runs: the CLIs slower than in the serial session (Σ / workers)"] == (
        pytest.approx(0.5))
    assert parts["runs: the judge calls slower than serially (Σ / workers)"] == (
        pytest.approx(0.5))


def test_the_runs_window_cpu_is_split_by_process(bench: Any) -> None:
    cpu = bench.runs_window_cpu(session(bench))
    assert cpu["window"] == pytest.approx(7.0)
    assert cpu["cli"] == pytest.approx(1.8)  # the CLIs each worker waited for
    assert cpu["workers"] == pytest.approx(0.4)  # 0.2 + 0.2 beyond their first item
    assert cpu["controller"] == pytest.approx(2.0)  # last collection → sessionfinish
