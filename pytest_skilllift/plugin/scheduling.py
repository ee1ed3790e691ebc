"""The xdist scheduler of a week: a run's rubric items and its custom checks are one unit of
work, sent to one worker (the run is generated and graded once, where its items run).

Built from xdist's public parts only: the ``pytest_xdist_make_scheduler`` hook, its
``Scheduling`` protocol, and ``LoadGroupScheduling`` — ``--dist loadgroup``'s scheduler, which
keeps together the ids that end in the same ``@<group>`` (the ``xdist_group`` mark's form).
This scheduler hands it the collection with each run's items named ``<id>@<run scope>``;
xdist schedules by index into that collection, so the renamed ids never reach a worker or a
report (a crashed item is named by its real id). Every other test is grouped as
``--dist loadscope`` groups it (module or class).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from xdist.scheduler import LoadGroupScheduling

#: A test id -> its run's scope (``run.matrix.run_scope``), None for a test of no run.
ScopeOf = Callable[[str], str | None]


class RunScopeScheduling:
    """xdist's ``Scheduling`` protocol, delegated to a ``LoadGroupScheduling`` that sees each
    run's items as one group."""

    def __init__(self, config: Any, log: Any, scope_of: ScopeOf) -> None:
        self._inner = LoadGroupScheduling(config, log)
        self._scope_of = scope_of
        self._grouped: dict[str, str] = {}  # real id -> the id the inner scheduler sees
        self._real: dict[str, str] = {}

    def _group(self, nodeid: str) -> str:
        grouped = self._grouped.get(nodeid)
        if grouped is None:
            scope = self._scope_of(nodeid)
            grouped = nodeid if scope is None else f"{nodeid}@{scope}"
            self._grouped[nodeid], self._real[grouped] = grouped, nodeid
        return grouped

    @property
    def nodes(self) -> list[Any]:
        """The workers (xdist's WorkerControllers)."""
        return list(self._inner.nodes)

    @property
    def collection_is_completed(self) -> bool:
        """Whether every worker has sent its collection."""
        return bool(self._inner.collection_is_completed)

    @property
    def tests_finished(self) -> bool:
        """Whether every test has run."""
        return bool(self._inner.tests_finished)

    @property
    def has_pending(self) -> bool:
        """Whether tests are still to be sent to a worker."""
        return bool(self._inner.has_pending)

    def add_node(self, node: Any) -> None:
        """A worker joined."""
        self._inner.add_node(node)

    def add_node_collection(self, node: Any, collection: Sequence[str]) -> None:
        """A worker's collection, each item id grouped by its run before the inner scheduler
        sees it."""
        self._inner.add_node_collection(node, [self._group(n) for n in collection])

    def mark_test_complete(self, node: Any, item_index: int, duration: float = 0) -> None:
        """A worker finished the item at ``item_index``."""
        self._inner.mark_test_complete(node, item_index, duration)

    def mark_test_pending(self, item: str) -> None:
        """Put ``item`` back to be scheduled."""
        self._inner.mark_test_pending(self._group(item))

    def remove_pending_tests_from_node(self, node: Any, indices: Sequence[int]) -> None:
        """Take back items a worker was sent but has not started."""
        self._inner.remove_pending_tests_from_node(node, indices)

    def remove_node(self, node: Any) -> str | None:
        """A worker left; the real id of the item it crashed in, if any."""
        crashed = self._inner.remove_node(node)
        return None if crashed is None else self._real.get(crashed, crashed)

    def schedule(self) -> None:
        """Send the pending groups to the workers."""
        self._inner.schedule()
