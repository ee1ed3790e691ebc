"""The week's xdist scheduler (``plugin/scheduling.py``) on xdist's public parts: each run's
items go to one worker, and a worker that crashes names its item by the real test id."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_skilllift.plugin.scheduling import RunScopeScheduling

IDS = [
    "p/a.json::sonnet::no-skill::r1::must-1", "p/a.json::sonnet::no-skill::r1::must-2",
    "p/b.json::sonnet::no-skill::r1::must-1", "p/b.json::sonnet::no-skill::r1::avoid-1",
    "checks/test_x.py::test_cites[a::sonnet::no-skill::r1]",
    "checks/test_y.py::test_plain",
]


class Node:
    """The part of xdist's WorkerController a scheduler talks to."""

    def __init__(self, name: str) -> None:
        self.gateway = type("Gateway", (), {"id": name})()
        self.sent: list[int] = []
        self.shutting_down = False

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent += indices

    def send_runtest_all(self) -> None:  # pragma: no cover - not used by loadgroup
        raise AssertionError

    def shutdown(self) -> None:
        self.shutting_down = True


def _scope(nodeid: str) -> str | None:
    if nodeid.startswith("p/a.json") or "[a::" in nodeid:
        return "run:a::sonnet::no-skill::r1"
    return "run:b::sonnet::no-skill::r1" if nodeid.startswith("p/b.json") else None


@pytest.fixture
def sched(pytester: pytest.Pytester) -> tuple[RunScopeScheduling, list[Node]]:
    config = pytester.parseconfig("--tx", "2*popen")
    s = RunScopeScheduling(config, None, _scope)
    nodes = [Node("gw0"), Node("gw1")]
    for n in nodes:
        s.add_node(n)
        s.add_node_collection(n, IDS)
    assert s.collection_is_completed
    s.schedule()
    return s, nodes


def test_a_runs_items_and_its_checks_go_to_one_worker(sched: Any) -> None:
    _s, nodes = sched
    where = {IDS[i]: n.gateway.id for n in nodes for i in n.sent}
    assert sorted(where) == sorted(IDS)  # every test scheduled once
    assert len({where[i] for i in (IDS[0], IDS[1], IDS[4])}) == 1  # run a and its check
    assert where[IDS[2]] == where[IDS[3]]  # run b


def test_a_crashed_worker_names_the_real_test_id(sched: Any) -> None:
    s, nodes = sched
    node = next(n for n in nodes if IDS.index("p/a.json::sonnet::no-skill::r1::must-1")
                in n.sent)
    first = node.sent[0]
    assert s.remove_node(node) == IDS[first]  # not "…@run:a::…"
