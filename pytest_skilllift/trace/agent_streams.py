"""Codex CLI, Gemini CLI and OpenCode JSON event streams → the :class:`Transcript` the rest
of the package reads (signals, the trajectory audit, exports).

Each agent's stream is rewritten (by its ``read_stream`` in ``agents/<name>.py``) as the
Claude Code events it corresponds to, so ``extract_signals`` and ``audit_invocation`` work
unchanged for every agent:

- the skill listing (from the pre-flight listing command, the agent's ``listing_args``,
  read by its ``listed_skills``) becomes the init event's ``skills`` — none of the three
  streams lists skills;
- the agent's skill tool (Gemini CLI ``activate_skill``, OpenCode ``skill``) becomes a
  ``Skill`` call, with the delivered body after it the way Claude Code delivers one; its
  file reads (Gemini CLI ``read_file``, OpenCode ``read``, a Codex shell ``cat``) become
  ``Read`` calls; its web fetches ``WebFetch``;
- turns, cost (when the agent reports it, else tokens priced by :data:`PRICES_PER_MTOK`),
  duration and the final answer become the result event.

Parsing is forgiving like ``trace/transcript.py``: bad lines are counted, never raised, and a
stream without its terminal event has no result (``signals_ok`` false). Pure logic.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_skilllift.agents.events import EventBuilder
from pytest_skilllift.agents.registry import AGENTS, prices
from pytest_skilllift.model import CLAUDE_CODE, RunSpec
from pytest_skilllift.trace.transcript import (
    Transcript,
    decode_lines,
    parse_events,
    parse_transcript,
)
from pytest_skilllift.week.files import AGENT_SKILLS_FILE

#: USD per million tokens (input, output), for agents whose stream reports tokens but no
#: cost: every agent's ``prices`` (``agents/<name>.py``), from the providers' public price
#: lists at the versions in docs/agents.md; a model not listed here records its tokens and
#: no cost.
PRICES_PER_MTOK: dict[str, tuple[float, float]] = prices()


def price(model: str, input_tokens: int | None, output_tokens: int | None) -> float | None:
    """The cost of a run's tokens from :data:`PRICES_PER_MTOK`; None for an unlisted model
    (a provider prefix such as ``anthropic/`` is ignored)."""
    rates = PRICES_PER_MTOK.get(model.rpartition("/")[2])
    if rates is None or input_tokens is None or output_tokens is None:
        return None
    return (input_tokens * rates[0] + output_tokens * rates[1]) / 1_000_000


def listed_skills(agent: str, text: str) -> tuple[str, ...] | None:
    """Skill names in the output of the agent's listing command; None when the output is
    not a listing at all (the command failed), so availability is unknown, not false."""
    defn = AGENTS.get(agent)
    if defn is None or defn.listed_skills is None:
        return None
    return defn.listed_skills(text)


def parse_agent_stream(agent: str, stream: str, listing: str | None, *, model: str,
                       cli_version: str = "", skill_bodies: Mapping[str, str] | None = None,
                       path: Path | None = None) -> Transcript:
    """One agent run as a :class:`Transcript` (see the module docstring).

    ``listing`` is the pre-flight listing command's output (None: it did not run, so the
    transcript has no init event and availability is unknown); ``model`` the model the run
    asked for (no stream names the served snapshot); ``skill_bodies`` the installed
    SKILL.md texts by skill name, for a skill tool whose stream shows only a summary
    (Gemini CLI). Never raises.
    """
    lines, bad = decode_lines(stream)  # the same line rule as Claude Code's stream-json
    out = EventBuilder()
    defn = AGENTS.get(agent)
    if defn is not None and defn.read_stream is not None:
        defn.read_stream(lines, out, skill_bodies or {})
    events: list[dict[str, Any]] = []
    names = listed_skills(agent, listing) if listing is not None else None
    if names is not None:
        events.append({"type": "system", "subtype": "init", "model": model,
                       "skills": list(names), "claude_code_version": cli_version,
                       "agent": agent})
    events += out.events
    if out.ended:
        final = next((t for t in reversed(out.texts) if t.strip()), "")
        cost = out.cost if out.cost is not None else price(model, out.input_tokens,
                                                           out.output_tokens)
        events.append({
            "type": "result", "subtype": "error_during_execution" if out.error else "success",
            "is_error": bool(out.error), "result": out.error or final,
            "num_turns": out.turns, "duration_ms": out.duration_ms, "total_cost_usd": cost,
            "usage": {"input_tokens": out.input_tokens, "output_tokens": out.output_tokens},
        })
    tr = parse_events(events, bad_lines=bad, path=path)
    tr.skill_root = _skill_root(agent)
    tr.agent = agent
    return tr


def _skill_root(agent: str) -> str:
    defn = AGENTS.get(agent)
    return defn.skill_root if defn is not None else ""


def parse_agent_run(agent: str, stdout: Path, listing: Path, *, model: str,
                    cli_version: str = "", skill_bodies: Mapping[str, str] | None = None,
                    ) -> Transcript:
    """:func:`parse_agent_stream` over a run directory's files (never raises: an unreadable
    stdout is an empty, not-ok transcript)."""
    try:
        text = stdout.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return Transcript(bad_lines=1, path=stdout, skill_root=_skill_root(agent),
                          agent=agent)
    try:
        listed: str | None = listing.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        listed = None
    return parse_agent_stream(agent, text, listed, model=model, cli_version=cli_version,
                              skill_bodies=skill_bodies, path=stdout)


def parse_run(spec: RunSpec, stdout: Path, *, cli_version: str = "",
              skills_root: Path | None = None) -> Transcript:
    """A run's transcript whatever its agent: Claude Code's stream-json, or another agent's
    event stream with the listing beside it (the installed SKILL.md bodies read from
    ``skills_root`` for a skill tool whose stream shows a summary only)."""
    if spec.agent == CLAUDE_CODE:
        return parse_transcript(stdout)
    bodies: dict[str, str] = {}
    for family in spec.prompt.installed_families:
        if skills_root is None:
            break
        try:
            bodies[family] = (Path(skills_root) / family / "SKILL.md").read_text(
                encoding="utf-8", errors="replace")
        except OSError:
            continue
    return parse_agent_run(spec.agent, stdout, stdout.parent / AGENT_SKILLS_FILE,
                           model=spec.agent_model, cli_version=cli_version,
                           skill_bodies=bodies)
