"""Every agent skilllift can run, by the name a model label gives it (``AGENT:MODEL``).

``model.AGENTS`` holds the names (what ``split_agent`` recognises, below every package);
this registry holds their definitions, one module each, in the same order
(``tests/test_agents_registry.py`` checks they agree). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping

from pytest_skilllift.agents import claude_code, codex, gemini_cli, opencode
from pytest_skilllift.agents.base import Agent
from pytest_skilllift.model import CLAUDE_CODE

#: Name → definition, in ``model.AGENTS``'s order.
AGENTS: Mapping[str, Agent] = {a.name: a for a in (
    claude_code.AGENT, codex.AGENT, gemini_cli.AGENT, opencode.AGENT)}


def agent(name: str) -> Agent:
    """The definition of ``name`` (a KeyError names an unknown agent)."""
    return AGENTS[name]


def others() -> tuple[Agent, ...]:
    """The agents beside Claude Code (the npm CLIs run through :class:`Invocation`'s
    config files and listing command)."""
    return tuple(a for a in AGENTS.values() if a.name != CLAUDE_CODE)


def other_names() -> str:
    """``codex, gemini-cli, opencode``: for help texts."""
    return ", ".join(a.name for a in others())


def prices() -> dict[str, tuple[float, float]]:
    """Every agent's price table in one (USD per million tokens, by model id)."""
    return {model: rate for a in AGENTS.values() for model, rate in a.prices.items()}
