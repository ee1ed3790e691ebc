"""Shared fixtures: the reference data (``tests/fixtures/data``), a stand-in Messages API."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

# pytester's inline runs drop every module a run imported, and PyYAML's C loader breaks when
# imported a second time ("could not determine a constructor for the tag None"); the lint
# plugin imports YAML only when a run lints, so the test process imports it once, up front.
import yaml  # noqa: F401

REPO = Path(__file__).resolve().parents[1]
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
