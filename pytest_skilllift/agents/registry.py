"""Every agent skilllift can run, by the name a model label gives it (``AGENT:MODEL``).

``model.AGENTS`` holds the names (what ``split_agent`` recognises, below every package);
this registry holds their definitions, one module each, in the same order
(``tests/test_agents_registry.py`` checks they agree). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping

from pytest_skilllift.agents import claude_code, codex, gemini_cli, opencode
from pytest_skilllift.agents.base import Agent, OutageSignal, outage_event_of
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


def _among(name: str | None) -> tuple[Agent, ...]:
    return tuple(AGENTS.values()) if name is None else (AGENTS[name],)


def stdout_signal(line: bytes | str, name: str | None = None) -> OutageSignal | None:
    """What one line of an agent's stdout says of an outage or a retry, read by agent
    ``name``'s ``outage_event`` (None: by every agent's, the first that reads it)."""
    event = outage_event_of(line)
    if event is None:
        return None
    for defn in _among(name):
        said = defn.outage_event(event) if defn.outage_event else None
        if said is not None:
            return said
    return None


def stderr_signal(line: bytes | str, armed: bool = False,
                  name: str | None = None) -> OutageSignal | None:
    """What one line of an agent's stderr says (``armed``: an error report began on an
    earlier line), read by agent ``name``'s ``outage_stderr`` (None: every agent's)."""
    text = (line.decode("utf-8", "replace") if isinstance(line, bytes) else line).strip()
    for defn in _among(name):
        said = defn.outage_stderr(text, armed) if defn.outage_stderr else None
        if said is not None:
            return said
    return None
