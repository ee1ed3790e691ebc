"""A pytest plugin for ``bench_week.py``: when each process of a session reaches each phase.

Loaded with ``-p timeline_plugin`` (``benchmarks/`` on ``PYTHONPATH``); xdist workers load it
too.  Every event is one JSON line appended to the file named by ``SKILLLIFT_BENCH_TIMELINE``:
the process (``controller`` or the xdist worker id), the event, ``time.time()``, the
process's CPU time so far (all its threads) and its children's (``RUSAGE_CHILDREN``: every
child it has waited for — in a worker, the agent CLIs it ran).  The process's own start comes
from ``/proc`` (kernel start time, 10 ms resolution), so the interpreter's and pytest's
imports before this plugin loads are visible too.

Every test item's start and end are events too (``item_start`` / ``item_end``, with its
node id): ``bench_week.py`` groups them into each worker's runs (the first item of a run
generates and grades it; the others read the ledger) and the idle gaps between them.
"""

from __future__ import annotations

import atexit
import json
import os
import resource
import time
from collections.abc import Generator
from typing import Any

import pytest

_PATH = os.environ.get("SKILLLIFT_BENCH_TIMELINE", "")
# xdist sets PYTEST_XDIST_WORKER in a worker before it loads any plugin.
_who = os.environ.get("PYTEST_XDIST_WORKER", "controller")
_first_item = True


def _emit(event: str, t: float | None = None, nodeid: str | None = None) -> None:
    if not _PATH:
        return
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    record: dict[str, Any] = {"who": _who, "pid": os.getpid(), "event": event,
                              "t": time.time() if t is None else t,
                              "cpu": time.process_time(),
                              "children_cpu": children.ru_utime + children.ru_stime}
    if nodeid is not None:
        record["nodeid"] = nodeid
    line = json.dumps(record) + "\n"
    fd = os.open(_PATH, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())  # one small O_APPEND write: lines never interleave
    finally:
        os.close(fd)


def _process_start() -> float | None:
    """Wall-clock start of this process: now − (uptime − start ticks), 10 ms resolution."""
    try:
        now = time.time()
        with open("/proc/uptime") as fh:
            uptime = float(fh.read().split()[0])
        with open(f"/proc/{os.getpid()}/stat") as fh:
            start_ticks = int(fh.read().rsplit(")", 1)[1].split()[19])
        return now - (uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError):
        return None


_start = _process_start()
if _start is not None:
    _emit("process_start", _start)
_emit("plugin_loaded")
atexit.register(lambda: _emit("atexit"))


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    global _who
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        _who = str(workerinput.get("workerid", "worker"))
    _emit("configure_start")


@pytest.hookimpl(trylast=True, optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    _emit(f"node_configured:{node.gateway.id}")


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    _emit("sessionstart")


def pytest_collection_finish(session: pytest.Session) -> None:
    _emit("collection_finish")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: Any) -> None:
    _emit(f"node_collected:{node.gateway.id}")


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    _emit("runtestloop")


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, Any, None]:
    global _first_item
    if _first_item:
        _first_item = False
        _emit("first_item")
    _emit("item_start", nodeid=item.nodeid)
    yield
    _emit("item_end", nodeid=item.nodeid)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> Generator[None, Any, None]:
    _emit("sessionfinish_start")
    yield
    _emit("sessionfinish_end")


@pytest.hookimpl(tryfirst=True)
def pytest_terminal_summary() -> None:
    _emit("terminal_summary")


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_unconfigure(config: pytest.Config) -> Generator[None, Any, None]:
    _emit("unconfigure_start")
    yield
    _emit("unconfigure_end")
