"""Shared fixtures: the reference data (``tests/fixtures/data``), a stand-in Messages API."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

# pytester's inline runs drop every module a run imported, and PyYAML's C loader breaks when
# imported a second time ("could not determine a constructor for the tag None"); the lint
# plugin imports YAML only when a run lints, so the test process imports it once, up front.
import yaml  # noqa: F401

REPO = Path(__file__).resolve().parents[1]

#: The rule that splits the suite: a test is ``slow`` (end to end) when it runs pytest inside
#: pytest (``pytester``), the real Claude Code CLI (``cli``) or docker (``docker``); every
#: other test is a unit test, ``pytest -m "not slow" tests`` runs them in seconds. A test that
#: starts its own subprocesses (the ``skilllift`` command, a pty, a worker) and takes over
#: UNIT_BUDGET_S carries ``@pytest.mark.slow`` itself. A unit test whose call takes longer than
#: UNIT_BUDGET_S is named at the end of the session, so the rule stays true (make the test
#: faster, or mark it slow).
SLOW_FIXTURES = frozenset({"pytester"})
SLOW_MARKS = frozenset({"cli", "docker", "browser"})
UNIT_BUDGET_S = 1.0
_over_budget: list[tuple[str, float]] = []


def _measuring(config: pytest.Config) -> bool:
    """A skill-lift session started in this checkout (``pytest --skill-lift-demo`` from a
    clone): the suite's own rules are not the demo's, so they stay out of its output."""
    return any(config.getoption(name, default=False) for name in (
        "skill_lift", "skill_lift_demo", "skill_lift_dry_run"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the end-to-end tests ``slow`` by the rule above."""
    if _measuring(config):
        return
    for item in items:
        marks = {m.name for m in item.iter_markers()}
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())) or SLOW_MARKS & marks:
            item.add_marker(pytest.mark.slow)


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_MEASURING] = _measuring(config)
    # A suite started as a background job of a non-interactive shell (`cmd &`, nohup) has
    # SIGINT ignored, and every process it starts inherits that: the interrupt tests' sessions
    # could not be Ctrl-C'd (six SIGINT cases failed that way, SIGTERM and SIGHUP passed).
    # Python's own handler instead, as an interactive start has: a handled signal is reset to
    # the default on exec, so each child interprets SIGINT as a user's Ctrl-C again.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


_MEASURING: pytest.StashKey[bool] = pytest.StashKey()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" and "slow" not in report.keywords and (
            report.duration > UNIT_BUDGET_S):
        _over_budget.append((report.nodeid, report.duration))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _over_budget and not terminalreporter.config.stash.get(_MEASURING, False):
        terminalreporter.section(f"unit tests over {UNIT_BUDGET_S:g} s (not marked slow)")
        for nodeid, duration in sorted(_over_budget, key=lambda x: -x[1]):
            terminalreporter.write_line(f"{duration:6.2f} s  {nodeid}")
#: Real material from outside this project (qdrant/skills, Apache-2.0; CLI transcripts), kept
#: in the repository so a fresh clone runs every test. Its README names the sources.
REFERENCE_DATA = Path(__file__).resolve().parent / "fixtures" / "data"


@pytest.fixture(scope="session")
def reference_data() -> Path:
    """``tests/fixtures/data``: the real qdrant/skills set, its week 20260808, CLI transcripts."""
    return REFERENCE_DATA


@pytest.fixture
def standin() -> Iterator[object]:
    """A fresh scripted Messages API (skill-aware agent, keyword judge) on loopback."""
    from pytest_skilllift.testing.agent_script import skill_agent
    from pytest_skilllift.testing.judge_script import keyword_judge
    from pytest_skilllift.testing.server import StandIn

    server = StandIn(agent=skill_agent, judge=keyword_judge)
    server.start()
    yield server
    server.stop()
