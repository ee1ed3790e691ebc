"""Scripted agents for the stand-in (work in progress: a generic answer for now)."""

from __future__ import annotations

from typing import Any

from pytest_skilllift.testing.server import Reply


def skill_agent(request: dict[str, Any]) -> Reply:
    """Placeholder default agent: a plain final answer."""
    return Reply.text("Here is a short answer from the scripted agent.")
