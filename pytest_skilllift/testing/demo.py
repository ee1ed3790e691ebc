"""The built-in demo's two scripted "models".

They differ the way the methodology expects a large and a small model to, through mechanics
rather than scripted outcomes: the ``sonnet`` stand-in follows progressive disclosure into a
linked sub-skill when the link matches the question; the ``haiku`` stand-in stops at the
top-level SKILL.md and only reaches for a skill on a clear match (a higher trigger threshold),
so a weaker description shows up as a real trigger miss in its numbers.
"""

from __future__ import annotations

from typing import Any

from pytest_skilllift.testing.agent_script import make_agent
from pytest_skilllift.testing.replies import Handler, Reply

#: Trigger threshold of the small stand-in (the default agent's is 5.0; see ``best_skill``).
SMALL_MODEL_MIN_SCORE = 10.0


def demo_agent() -> Handler:
    """Route each request by its ``model``: ids containing ``haiku`` get the small stand-in."""
    large = make_agent("skill", follow_leaf=True)
    small = make_agent("skill", follow_leaf=False, min_score=SMALL_MODEL_MIN_SCORE)

    def route(body: dict[str, Any]) -> Reply:
        return (small if "haiku" in str(body.get("model", "")) else large)(body)

    return route
