"""Claude Code ``--output-format stream-json --verbose`` transcripts → ``Transcript`` → signals.

Parsing is deliberately forgiving: the CLI's event shapes drift between versions (2.0.x put
one content block per assistant event, 2.1.x adds many fields), and a run killed mid-stream
leaves a truncated last line. Nothing here raises on bad input; every irregularity is
counted so :func:`extract_signals` can report ``signals_ok=False`` instead of silently
reading a format break as "the model did not use the skill" (qdrant/skills SCORING.md,
``signals_ok``).

Both line-delimited streams and single-document ``--output-format json`` results (an
object, or the ``--verbose`` array of events) are accepted.

Pure logic: no pytest, no I/O beyond reading the file handed in.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pytest_skilllift.model import Signals

#: Where Claude Code finds installed skills, relative to HOME.
CLAUDE_SKILL_ROOT = ".claude/skills"
#: The CLI's text for a tool call refused by the permission mode (2.1.x).
_DENIED = re.compile(r"Permission to use \S+ has been denied")


@dataclass
class ToolUse:
    """One tool call and, when it arrived, its result."""

    id: str
    name: str
    input: dict[str, Any]
    #: Position of the assistant event that made the call, in ``Transcript.events``.
    index: int
    #: ``None`` for the main agent; the Task/Agent tool_use id for subagent calls.
    parent_tool_use_id: str | None = None
    result: str | None = None
    is_error: bool = False
    #: Refused by the permission mode (listed in ``permission_denials``, or the result says so).
    denied: bool = False

    @property
    def has_result(self) -> bool:
        """Whether a tool_result for this call is in the transcript."""
        return self.result is not None

    @property
    def effective(self) -> bool:
        """Ran and succeeded: neither denied nor errored. Only these count as reaching."""
        return not self.denied and not self.is_error

    @property
    def file_path(self) -> str:
        """The ``file_path`` (or ``path``) argument, ``""`` when absent."""
        value = self.input.get("file_path") or self.input.get("path") or ""
        return str(value)


@dataclass
class Transcript:
    """A parsed run transcript. Build it with :func:`parse_transcript` / :func:`parse_text`."""

    events: list[dict[str, Any]] = field(default_factory=list)
    init: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    tool_uses: list[ToolUse] = field(default_factory=list)
    permission_denials: list[dict[str, Any]] = field(default_factory=list)
    #: Lines that were not a JSON object (truncated, garbage); counted, never raised.
    bad_lines: int = 0
    #: Tool results whose tool_use was never seen (partial captures).
    orphan_results: int = 0
    path: Path | None = None
    #: Where the run's agent finds installed skills, relative to HOME: a ``Read`` under
    #: ``<skill_root>/<family>/`` is a file read of the skill (``trace/agent_streams.py``
    #: sets the other agents' root).
    skill_root: str = CLAUDE_SKILL_ROOT
    #: The agent that wrote the stream (``model.AGENTS``).
    agent: str = "claude-code"

    @property
    def ok(self) -> bool:
        """The expected shape: every line parsed, an init event and a result event."""
        return self.bad_lines == 0 and self.init is not None and self.result is not None

    @property
    def skills_listed(self) -> tuple[str, ...]:
        """The init event's ``skills`` (names), empty when absent."""
        if not self.init:
            return ()
        raw = self.init.get("skills")
        names: list[str] = []
        for item in raw if isinstance(raw, list) else []:
            if isinstance(item, str):
                names.append(item)
            elif isinstance(item, dict) and item.get("name"):
                names.append(str(item["name"]))
        return tuple(names)

    @property
    def cli_version(self) -> str:
        """``claude_code_version`` from the init event, ``""`` when unknown."""
        return str((self.init or {}).get("claude_code_version") or "")

    @property
    def api_retries(self) -> int:
        """``system``/``api_retry`` events: API calls the CLI had to repeat (429, 529, resets)."""
        return sum(
            1 for e in self.events if e.get("type") == "system" and e.get("subtype") == "api_retry"
        )

    @property
    def api_error_status(self) -> int | None:
        """HTTP status of the API error that ended the run, when it ended on one.

        The CLI reports an exhausted retry as subtype ``success`` with ``is_error`` true and
        ``result`` = "API Error: …" — not a model answer, whatever the subtype says.
        """
        value = (self.result or {}).get("api_error_status")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def assistant_messages(self, *, top_level: bool = True) -> list[dict[str, Any]]:
        """Assistant messages in order, merged by message id (2.0.x split one message into
        several events, one per content block). ``top_level`` skips subagent messages."""
        merged: dict[str, dict[str, Any]] = {}
        order: list[str] = []
        for i, ev in enumerate(self.events):
            if ev.get("type") != "assistant":
                continue
            if top_level and ev.get("parent_tool_use_id"):
                continue
            msg = ev.get("message")
            if not isinstance(msg, dict):
                continue
            key = str(msg.get("id") or f"#{i}")
            content = msg.get("content")
            blocks = content if isinstance(content, list) else []
            if key not in merged:
                merged[key] = dict(msg, content=list(blocks))
                order.append(key)
            else:
                merged[key]["content"].extend(blocks)
        return [merged[k] for k in order]

    def last_assistant_text(self) -> str:
        """Text of the last top-level assistant message that has any text."""
        for msg in reversed(self.assistant_messages()):
            texts = [
                str(b.get("text", ""))
                for b in msg["content"]
                if isinstance(b, dict) and b.get("type") == "text"
            ]
            text = "\n".join(t for t in texts if t.strip())
            if text.strip():
                return text
        return ""

    def calls(self, name: str) -> list[ToolUse]:
        """Tool calls of one tool, in order."""
        return [t for t in self.tool_uses if t.name == name]


def _text_of(content: Any) -> str:
    """A tool_result's content as text (string, or text blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict):
                if block.get("type") == "text":
                    parts.append(str(block.get("text", "")))
                elif block.get("type") == "tool_reference":
                    parts.append(f"[tool_reference {block.get('tool_name', '')}]")
            elif isinstance(block, str):
                parts.append(block)
        return "\n".join(parts)
    return "" if content is None else str(content)


def decode_lines(text: str) -> tuple[list[dict[str, Any]], int]:
    """An agent CLI's line-delimited JSON events; returns (events, bad_lines).

    Split on "\n" only: str.splitlines() also splits at U+2028, U+2029, U+0085 (and
    \x1c-\x1e), which Node's JSON.stringify writes raw inside strings — an answer holding
    one would be torn into two unparseable halves and silently become no_answer.
    """
    events: list[dict[str, Any]] = []
    bad = 0
    for line in text.split("\n"):
        line = line.strip(" \t\r")
        if not line:
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            bad += 1
            continue
        if isinstance(obj, dict):
            events.append(obj)
        else:
            bad += 1
    return events, bad


def _events_from_text(text: str) -> tuple[list[dict[str, Any]], int]:
    """Line-delimited events, else a single JSON document; returns (events, bad_lines)."""
    events, bad = decode_lines(text)
    if bad:
        # ``--output-format json`` writes one (pretty-printed) document: an object, or with
        # --verbose an array of events. Only accept it when the whole text parses.
        try:
            doc = json.loads(text)
        except ValueError:
            return events, bad
        if isinstance(doc, dict):
            return [doc], 0
        if isinstance(doc, list) and all(isinstance(e, dict) for e in doc):
            return list(doc), 0
    return events, bad


def parse_events(events: Iterable[dict[str, Any]], *, bad_lines: int = 0,
                 path: Path | None = None) -> Transcript:
    """Build a :class:`Transcript` from already-decoded events."""
    tr = Transcript(events=list(events), bad_lines=bad_lines, path=path)
    by_id: dict[str, ToolUse] = {}
    for i, ev in enumerate(tr.events):
        etype = ev.get("type")
        if etype == "system" and ev.get("subtype") == "init" and tr.init is None:
            tr.init = ev
        elif etype == "result":
            tr.result = ev  # the last one wins (a resumed session can emit several)
        elif etype == "assistant":
            msg = ev.get("message")
            content = msg.get("content") if isinstance(msg, dict) else None
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict) or block.get("type") not in (
                    "tool_use", "server_tool_use"
                ):
                    continue
                tid = str(block.get("id") or f"#{i}")
                if tid in by_id:
                    continue
                raw_input = block.get("input")
                use = ToolUse(
                    id=tid, name=str(block.get("name") or ""),
                    input=raw_input if isinstance(raw_input, dict) else {},
                    index=i, parent_tool_use_id=ev.get("parent_tool_use_id"),
                )
                by_id[tid] = use
                tr.tool_uses.append(use)
        elif etype == "user":
            msg = ev.get("message")
            content = msg.get("content") if isinstance(msg, dict) else None
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict) or block.get("type") != "tool_result":
                    continue
                found = by_id.get(str(block.get("tool_use_id")))
                if found is None:
                    tr.orphan_results += 1
                    continue
                found.result = _text_of(block.get("content"))
                found.is_error = bool(block.get("is_error"))
                if found.is_error and _DENIED.search(found.result):
                    found.denied = True
    denials = (tr.result or {}).get("permission_denials")
    if isinstance(denials, list):
        tr.permission_denials = [d for d in denials if isinstance(d, dict)]
        for d in tr.permission_denials:
            denied = by_id.get(str(d.get("tool_use_id")))
            if denied is not None:
                denied.denied = True
    return tr


def parse_text(text: str, *, path: Path | None = None) -> Transcript:
    """Parse transcript text (never raises)."""
    events, bad = _events_from_text(text)
    return parse_events(events, bad_lines=bad, path=path)


def parse_transcript(path: str | Path) -> Transcript:
    """Parse a transcript file (never raises: an unreadable file is an empty, not-ok
    transcript with one bad line)."""
    p = Path(path)
    try:
        text = p.read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return Transcript(bad_lines=1, path=p)
    return parse_text(text, path=p)


# -- signals -------------------------------------------------------------------------------


def _norm_path(path: str) -> str:
    """Forward slashes, ``~`` kept as a marker of HOME (paths are matched by suffix)."""
    return path.replace("\\", "/")


def _under_family(path: str, family: str, root: str = CLAUDE_SKILL_ROOT) -> bool:
    return f"{root}/{family}/" in _norm_path(path)


def _is_leaf_path(path: str, leaf: str, root: str = CLAUDE_SKILL_ROOT) -> bool:
    return _norm_path(path).endswith(f"{root}/{leaf.strip('/')}")


def leaf_skill_names(family: str, leaf: str) -> tuple[str, ...]:
    """Names a ``Skill`` call may use to reach ``leaf`` directly.

    The CLI registers only top-level skills (``~/.claude/skills/<dir>/SKILL.md``, listed
    under the directory name), so a family's own SKILL.md is reached by ``Skill(<family>)``;
    a nested leaf's directory name (and ``<family>:<dir>`` scoping) is accepted in case a
    CLI version registers nested skills.
    """
    parts = [p for p in leaf.strip("/").split("/") if p]
    if parts and parts[-1].lower() == "skill.md":
        parts = parts[:-1]
    if len(parts) <= 1:
        return (family,)
    return (parts[-1], f"{family}:{parts[-1]}", f"{family}:{'/'.join(parts[1:])}")


def _skill_name(use: ToolUse) -> str:
    return str(use.input.get("skill") or use.input.get("command") or "").lstrip("/").strip()


def _host_matches(url: str, site_host: str) -> bool:
    try:
        host = (urlsplit(url).hostname or "").lower()
    except ValueError:
        return False
    site = site_host.lower()
    return host == site or host.endswith("." + site)


def _model_snapshot(tr: Transcript) -> str:
    """The init model, refined by the API-resolved id when it extends it.

    The init event echoes the requested model (possibly an alias such as
    ``claude-haiku-4-5``); message events carry what the API served
    (``claude-haiku-4-5-20251001``), which is the snapshot provenance needs.
    """
    init_model = str((tr.init or {}).get("model") or "")
    served = [str(m.get("model") or "") for m in tr.assistant_messages()]
    served = [s for s in served if s and s != "<synthetic>"]
    if init_model:
        for s in served:
            if s != init_model and s.startswith(init_model):
                return s
        return init_model
    return served[0] if served else ""


def _num(value: Any, kind: type) -> Any:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return kind(value)
    except (TypeError, ValueError):
        return None


def extract_signals(
    transcript: Transcript,
    *,
    family: str,
    leaf: str,
    site_host: str | None,
    leaf_names: Iterable[str] = (),
) -> Signals:
    """The manifest's derived columns for one run (qdrant/skills SCORING.md semantics).

    - ``skill_available``: ``family`` is in the init event's ``skills``.
    - ``skill_activation`` by precedence ``skill_tool`` (a ``Skill`` call naming the family)
      > ``file_read`` (a ``Read`` under ``.claude/skills/<family>/``, or the agent's own
      ``Transcript.skill_root``) > ``web_fetch``
      (a ``WebFetch`` to ``site_host``) > ``none``. Denied or errored calls never count:
      they did not deliver the skill.
    - ``reached_leaf``: a ``Skill`` call naming the leaf (see :func:`leaf_skill_names`, plus
      ``leaf_names``, e.g. the leaf's frontmatter name) or a ``Read`` of the leaf SKILL.md.
    - ``fetched_site``/``fetched_count``: ``WebFetch`` calls to ``site_host``, net of denied.
    - cost, turns, duration, subtype, ``is_error`` straight from the result event;
      ``budget_hit`` when the subtype is ``error_max_budget_usd`` or the terminal reason is
      ``budget_exhausted``; ``final_answer`` is the result text, else the last assistant text.
    - ``signals_ok`` is False when the transcript did not have the expected shape.
    """
    tr = transcript
    # Subagent calls count too: a Task subagent reading the skill still brought it in.
    all_uses = tr.tool_uses
    skill_calls = [u for u in all_uses if u.name == "Skill" and u.effective]
    reads = [u for u in all_uses if u.name == "Read" and u.effective]
    fetches = [u for u in all_uses if u.name == "WebFetch" and not u.denied]

    via_skill = any(
        _skill_name(u) == family or _skill_name(u).endswith(":" + family) for u in skill_calls
    )
    via_read = any(_under_family(u.file_path, family, tr.skill_root) for u in reads)
    fetched_urls = tuple(str(u.input.get("url") or "") for u in fetches if u.input.get("url"))
    site_urls = [u for u in fetched_urls if site_host and _host_matches(u, site_host)]

    if via_skill:
        activation = "skill_tool"
    elif via_read:
        activation = "file_read"
    elif site_urls:
        activation = "web_fetch"
    else:
        activation = "none"

    leaf_set = {*leaf_skill_names(family, leaf), *leaf_names}
    reached_leaf = any(_skill_name(u) in leaf_set for u in skill_calls) or any(
        _is_leaf_path(u.file_path, leaf, tr.skill_root) for u in reads
    )

    res = tr.result or {}
    subtype = str(res.get("subtype") or "")
    final = res.get("result")
    final_answer = final if isinstance(final, str) and final.strip() else tr.last_assistant_text()
    skills = tr.skills_listed
    return Signals(
        skill_available=family in skills,
        skill_activation=activation,
        reached_leaf=reached_leaf,
        fetched_site=bool(site_urls),
        fetched_count=len(site_urls),
        model_snapshot=_model_snapshot(tr),
        cli_version=tr.cli_version,
        total_cost_usd=_num(res.get("total_cost_usd"), float),
        num_turns=_num(res.get("num_turns"), int),
        result_subtype=subtype,
        budget_hit=subtype == "error_max_budget_usd"
        or res.get("terminal_reason") == "budget_exhausted",
        signals_ok=tr.ok,
        duration_ms=_num(res.get("duration_ms"), int),
        final_answer=final_answer,
        permission_denials=len(tr.permission_denials),
        skills_listed=skills,
        fetched_urls=fetched_urls,
        is_error=bool(res.get("is_error")),
    )


def final_answer(stdout: Path) -> str:
    """The final answer of a run's transcript file (empty when it holds none)."""
    signals = extract_signals(parse_transcript(stdout), family="", leaf="", site_host=None)
    return signals.final_answer
