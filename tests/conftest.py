"""Shared fixtures: the reference data folder, a stand-in Messages API."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data`` beside the repo; a user's fresh clone has none, so skip cleanly."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"reference data not present at {SHARED_DATA}")
    return SHARED_DATA


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
