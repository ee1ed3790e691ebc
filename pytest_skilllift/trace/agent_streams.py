"""Codex CLI, Gemini CLI and OpenCode JSON event streams → the :class:`Transcript` the rest
of the package reads (signals, the trajectory audit, exports).

Each agent's stream is rewritten as the Claude Code events it corresponds to, so
``extract_signals`` and ``audit_invocation`` work unchanged for every agent:

- the skill listing (from the pre-flight listing command, :data:`LISTING_COMMANDS`) becomes
  the init event's ``skills`` — none of the three streams lists skills;
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

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_skilllift.model import AGENT_SKILL_ROOT, CLAUDE_CODE, RunSpec
from pytest_skilllift.trace.transcript import (
    Transcript,
    decode_lines,
    parse_events,
    parse_transcript,
)
from pytest_skilllift.week.files import AGENT_SKILLS_FILE

#: USD per million tokens (input, output), for agents whose stream reports tokens but no
#: cost. From the providers' public price lists (openai.com/api/pricing,
#: ai.google.dev/gemini-api/docs/pricing, anthropic.com/pricing) at the versions in
#: docs/agents.md; a model not listed here records its tokens and no cost.
PRICES_PER_MTOK: dict[str, tuple[float, float]] = {
    "gpt-5": (1.25, 10.0),
    "gpt-5-mini": (0.25, 2.0),
    "gpt-5-nano": (0.05, 0.40),
    "gemini-2.5-pro": (1.25, 10.0),
    "gemini-2.5-flash": (0.30, 2.50),
    "gemini-2.5-flash-lite": (0.10, 0.40),
    "claude-sonnet-4-5": (3.0, 15.0),
    "claude-haiku-4-5": (1.0, 5.0),
}

_SKILL_BODY_PREFIX = "Base directory for this skill:"
_FRONTMATTER = re.compile(r"\A---\s*\n.*?\n---\s*\n?", re.S)


def price(model: str, input_tokens: int | None, output_tokens: int | None) -> float | None:
    """The cost of a run's tokens from :data:`PRICES_PER_MTOK`; None for an unlisted model
    (a provider prefix such as ``anthropic/`` is ignored)."""
    rates = PRICES_PER_MTOK.get(model.rpartition("/")[2])
    if rates is None or input_tokens is None or output_tokens is None:
        return None
    return (input_tokens * rates[0] + output_tokens * rates[1]) / 1_000_000


# -- the pre-flight listing -----------------------------------------------------------------


def listed_skills(agent: str, text: str) -> tuple[str, ...] | None:
    """Skill names in the output of the agent's listing command; None when the output is
    not a listing at all (the command failed), so availability is unknown, not false."""
    if agent == "opencode":
        start = text.find("[")
        try:
            doc = json.loads(text[start:]) if start >= 0 else None
        except ValueError:
            return None
        if not isinstance(doc, list):
            return None
        return tuple(str(s.get("name")) for s in doc if isinstance(s, dict) and s.get("name"))
    if agent == "gemini-cli":
        if "No skills" not in text and "[Enabled]" not in text and "[Disabled]" not in text:
            return None
        return tuple(re.findall(r"^\s*(\S+) \[Enabled\]", text, flags=re.M))
    if agent == "codex":
        try:
            doc = json.loads(text)
        except ValueError:
            return None
        plain = "\n".join(_strings(doc))
        return tuple(dict.fromkeys(re.findall(
            r"^\s*- ([A-Za-z0-9._:-]+): .*? \(file: [^)]+\)\s*$", plain, flags=re.M)))
    return None


def _strings(doc: Any) -> list[str]:
    """Every string inside a JSON document (Codex's prompt input is a list of items)."""
    if isinstance(doc, str):
        return [doc]
    if isinstance(doc, list):
        return [s for d in doc for s in _strings(d)]
    if isinstance(doc, dict):
        return [s for d in doc.values() for s in _strings(d)]
    return []


# -- one stream → Claude-shaped events ------------------------------------------------------


@dataclass
class _Events:
    """The Claude-shaped events being built, and what the result event will say."""

    events: list[dict[str, Any]] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    turns: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    duration_ms: int | None = None
    ended: bool = False
    error: str = ""

    def tool(self, tid: str, name: str, args: dict[str, Any]) -> None:
        self.events.append({"type": "assistant", "message": {"id": f"m_{tid}", "content": [
            {"type": "tool_use", "id": tid, "name": name, "input": args}]}})

    def result(self, tid: str, text: str, is_error: bool, body: str | None = None) -> None:
        blocks: list[dict[str, Any]] = [{"type": "tool_result", "tool_use_id": tid,
                                         "content": text, "is_error": is_error}]
        if body is not None:  # a skill tool's body, delivered as Claude Code delivers it
            blocks.append({"type": "text", "text": body})
        self.events.append({"type": "user", "message": {"content": blocks}})

    def say(self, text: str) -> None:
        self.texts.append(text)
        self.events.append({"type": "assistant", "message": {
            "id": f"t_{len(self.events)}", "content": [{"type": "text", "text": text}]}})

    def add_tokens(self, inp: Any, out: Any) -> None:
        if isinstance(inp, int):
            self.input_tokens = (self.input_tokens or 0) + inp
        if isinstance(out, int):
            self.output_tokens = (self.output_tokens or 0) + out


def _obj(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (event fields drift)."""
    return value if isinstance(value, dict) else {}


def _body_text(name: str, base_dir: str, body: str) -> str:
    return f"{_SKILL_BODY_PREFIX} {base_dir}\n\n{_FRONTMATTER.sub('', body, count=1)}"


def _codex(lines: list[dict[str, Any]], out: _Events) -> None:
    for ev in lines:
        etype = ev.get("type")
        item = _obj(ev.get("item"))
        if etype == "item.completed" and item.get("type") == "command_execution":
            tid = str(item.get("id"))
            path = _cat_path(str(item.get("command") or ""))
            name, args = ("Read", {"file_path": path}) if path else (
                "Bash", {"command": str(item.get("command") or "")})
            out.tool(tid, name, args)
            out.result(tid, str(item.get("aggregated_output") or ""),
                       item.get("exit_code") not in (0, None) or item.get("status") == "failed")
            out.turns += 1
        elif etype == "item.completed" and item.get("type") == "web_search":
            tid = str(item.get("id"))
            out.tool(tid, "WebFetch", {"url": str(item.get("query") or "")})
            out.result(tid, "", False)
        elif etype == "item.completed" and item.get("type") == "agent_message":
            out.say(str(item.get("text") or ""))
        elif etype == "turn.completed":
            usage = _obj(ev.get("usage"))
            out.add_tokens(usage.get("input_tokens"), usage.get("output_tokens"))
            out.turns += 1
            out.ended = True
        elif etype == "turn.failed":
            err = ev.get("error")
            out.error = str(err.get("message") if isinstance(err, dict) else err or "failed")
            out.ended = True


def _cat_path(command: str) -> str:
    """The file of a shell ``cat FILE`` (Codex wraps it in ``/bin/bash -lc '…'``); ""."""
    try:
        words = shlex.split(command)
    except ValueError:
        return ""
    if len(words) >= 3 and words[1] in ("-lc", "-c"):
        try:
            words = shlex.split(words[2])
        except ValueError:
            return ""
    if len(words) == 2 and words[0] in ("cat", "/bin/cat", "head", "sed") and \
            not words[1].startswith("-"):
        return words[1]
    return ""


def _gemini(lines: list[dict[str, Any]], out: _Events, bodies: Mapping[str, str],
            home_hint: str) -> None:
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    pending = ""
    for ev in lines:
        etype = ev.get("type")
        if etype == "message" and ev.get("role") == "assistant":
            pending += str(ev.get("content") or "")
            continue
        if pending:
            out.say(pending)
            pending = ""
        if etype == "tool_use":
            tid, params = str(ev.get("tool_id")), ev.get("parameters") or {}
            tool = str(ev.get("tool_name"))
            if tool == "activate_skill":
                call = ("Skill", {"skill": str(params.get("name") or "")})
            elif tool == "read_file":
                call = ("Read", {"file_path": str(params.get("file_path") or "")})
            elif tool in ("web_fetch", "google_web_search"):
                call = ("WebFetch", {"url": str(params.get("url") or params.get("prompt")
                                                or params.get("query") or "")})
            else:
                call = (tool, dict(params) if isinstance(params, dict) else {})
            calls[tid] = call
            out.tool(tid, *call)
            out.turns += 1
        elif etype == "tool_result":
            tid = str(ev.get("tool_id"))
            name, args = calls.get(tid, ("", {}))
            failed = ev.get("status") != "success"
            err = ev.get("error")
            text = str(ev.get("output") or (err.get("message", "") if isinstance(err, dict)
                                            else err or ""))
            body = None
            if name == "Skill" and not failed:
                skill = str(args.get("skill"))
                where = re.search(r"Resources loaded from `([^`]+)`", text)
                # The stream shows a summary; the model got the SKILL.md body.
                body = _body_text(skill, where.group(1) if where else home_hint,
                                  bodies.get(skill, ""))
                text = f"Launching skill: {skill}"
            out.result(tid, text, failed, body)
        elif etype == "result":
            stats = _obj(ev.get("stats"))
            out.add_tokens(stats.get("input_tokens"), stats.get("output_tokens"))
            if isinstance(stats.get("duration_ms"), int):
                out.duration_ms = stats["duration_ms"]
            if ev.get("status") != "success":
                err = ev.get("error")
                out.error = str(err.get("message") if isinstance(err, dict) else
                                err or ev.get("status"))
            out.ended = True
        elif etype == "error":
            out.error = str(ev.get("message") or "error")
    if pending:
        out.say(pending)
    if out.ended:
        out.turns += 1  # the answering turn


def _opencode(lines: list[dict[str, Any]], out: _Events) -> None:
    # No run duration is reported (event stamps start after the CLI's start-up): the engine
    # records the wall time, as for Codex.
    for ev in lines:
        etype = ev.get("type")
        part = _obj(ev.get("part"))
        if etype == "tool_use":
            state = _obj(part.get("state"))
            args = _obj(state.get("input"))
            tid, tool = str(part.get("callID") or part.get("id")), str(part.get("tool"))
            failed = state.get("status") != "completed"
            text = str(state.get("output") or state.get("error") or "")
            body = None
            if tool == "skill":
                call = ("Skill", {"skill": str(args.get("name") or "")})
                if not failed:
                    meta = _obj(state.get("metadata"))
                    inner = re.sub(r"^.*?<skill_content[^>]*>\s*(# Skill: [^\n]*\n)?", "",
                                   text, count=1, flags=re.S)
                    inner = inner.split("Base directory for this skill:", 1)[0]
                    body = _body_text(call[1]["skill"], str(meta.get("dir") or ""), inner)
                    text = f"Launching skill: {call[1]['skill']}"
            elif tool == "read":
                call = ("Read", {"file_path": str(args.get("filePath") or "")})
            elif tool in ("webfetch", "websearch"):
                call = ("WebFetch", {"url": str(args.get("url") or args.get("query") or "")})
            else:
                call = (tool, dict(args))
            out.tool(tid, *call)
            out.result(tid, text, failed, body)
        elif etype == "text":
            out.say(str(part.get("text") or ""))
        elif etype == "step_finish":
            tokens = _obj(part.get("tokens"))
            out.add_tokens(tokens.get("input"), tokens.get("output"))
            if isinstance(part.get("cost"), (int, float)):
                out.cost = (out.cost or 0.0) + float(part["cost"])
            out.turns += 1
            if part.get("reason") == "stop":
                out.ended = True
        elif etype == "error":
            err = ev.get("error")
            data = err.get("data") if isinstance(err, dict) else None
            out.error = str((data or {}).get("message") if isinstance(data, dict) else
                            err.get("name") if isinstance(err, dict) else err or "error")
            out.ended = True


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
    out = _Events()
    if agent == "codex":
        _codex(lines, out)
    elif agent == "gemini-cli":
        _gemini(lines, out, skill_bodies or {}, "")
    elif agent == "opencode":
        _opencode(lines, out)
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
    tr.skill_root = AGENT_SKILL_ROOT
    tr.agent = agent
    return tr


def parse_agent_run(agent: str, stdout: Path, listing: Path, *, model: str,
                    cli_version: str = "", skill_bodies: Mapping[str, str] | None = None,
                    ) -> Transcript:
    """:func:`parse_agent_stream` over a run directory's files (never raises: an unreadable
    stdout is an empty, not-ok transcript)."""
    try:
        text = stdout.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return Transcript(bad_lines=1, path=stdout, skill_root=AGENT_SKILL_ROOT, agent=agent)
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
