"""The other agents' model APIs, translated to and from the scripted agents' one shape.

The scripted agents (:mod:`~pytest_skilllift.testing.agent_script`) read an Anthropic
Messages body and answer with a :class:`~pytest_skilllift.testing.replies.Reply`. Codex CLI
speaks the OpenAI Responses API, Gemini CLI Gemini's ``streamGenerateContent``, OpenCode
the Anthropic Messages API with its own tool names. Each :class:`Dialect` here turns a
native request into that *canonical* body — the skill listing as ``<skill>`` blocks with
their ``<location>``, the agent's skill tool as ``Skill``, its file read as ``Read``, a
delivered skill body in the shape Claude Code delivers it — and the script's reply back
into the agent's own tool calls. So every agent meets the same scripted, skill-aware
behaviour, and it sees a skill only when its CLI listed and delivered it.

Pure translation: no sockets (the server in :mod:`~pytest_skilllift.testing.server`
frames the results as each API's stream).
"""

from __future__ import annotations

import json
import re
import shlex
import uuid
from collections.abc import Iterator
from typing import Any

from pytest_skilllift.agents import codex, gemini_cli, opencode
from pytest_skilllift.testing.agent_script import LAUNCHING_PREFIX, SKILL_BODY_PREFIX
from pytest_skilllift.testing.replies import Reply

#: Canonical tool names (Claude Code's), which the scripted agents know.
SKILL, READ, BASH, WRITE = "Skill", "Read", "Bash", "Write"

_SKILL_BLOCK = re.compile(r"<skill>(.*?)</skill>", re.S)
_CODEX_SKILL_LINE = re.compile(r"^- ([^\s:]+): (.*) \(file: ([^)]+)\)\s*$")
_CODEX_ROOT_LINE = re.compile(r"^- `([^`]+)` = `([^`]+)`")
#: Codex's file write as the dialect sends it: ``cat > FILE <<'MARK'`` … ``MARK``.
_CODEX_WRITE = re.compile(r"^cat > ('[^']*'|\S+) <<'(\w+)'\n(.*)\n\2$", re.S)
_NUMBERED = re.compile(r"^\s*\d+: ?(.*)$")
#: The frontmatter that opens a SKILL.md: where a read's output begins to be the file.
_FRONTMATTER = re.compile(r"(^|\n)---\s*\nname:", re.S)


def _skill_text(name: str, description: str, location: str) -> str:
    return (f"<skill>\n<name>{name}</name>\n<description>{description}</description>\n"
            f"<location>{location}</location>\n</skill>")


def file_content(text: str) -> str:
    """A read tool's output as the file's text: OpenCode's ``<content>`` wrapper and its
    ``N: `` line numbers undone, anything before the frontmatter (a shell's preamble)
    dropped."""
    if "<content>" in text:
        text = text.split("<content>", 1)[1].split("</content>", 1)[0].lstrip("\n")
    lines = text.splitlines()
    if lines and all(_NUMBERED.match(ln) for ln in lines[:2]):
        kept = []
        for ln in lines:
            nm = _NUMBERED.match(ln)
            if nm is None:
                break
            kept.append(nm.group(1))
        text = "\n".join(kept)
    m = _FRONTMATTER.search(text)
    return text if m is None else text[m.start() + len(m.group(1)):]


def _skill_delivered(name: str, base_dir: str, body: str) -> list[dict[str, Any]]:
    """A skill tool's result as Claude Code delivers one: the launch line as the tool result,
    the body as a text block opening with its base directory."""
    return [{"type": "text", "text": f"{SKILL_BODY_PREFIX} {base_dir}\n{body}",
             "_launched": f"{LAUNCHING_PREFIX} {name}"}]


class Dialect:
    """One agent's API: ``canonical(native body)`` and ``native_call(canonical call)``."""

    name = ""
    skill_tool = ""
    read_tool = ""
    read_arg = "file_path"
    #: The agent's file write and shell tools (a task's work: ``testing/task_script.py``).
    write_tool = ""
    bash_tool = ""

    def tool_names(self, native: set[str]) -> list[str]:
        """The canonical tools a request offers."""
        out = []
        if self.skill_tool and self.skill_tool in native:
            out.append(SKILL)
        if self.read_tool and self.read_tool in native:
            out.append(READ)
        if self.write_tool and self.write_tool in native:
            out.append(WRITE)
        if self.bash_tool and self.bash_tool in native:
            out.append(BASH)
        return out

    def canonical_call(self, name: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """A native tool call as the canonical one the script knows."""
        if name == self.skill_tool:
            return SKILL, {"skill": str(args.get("name", ""))}
        if name == self.read_tool:
            return READ, {"file_path": str(args.get(self.read_arg, ""))}
        if name == self.write_tool:
            return WRITE, {"file_path": str(args.get(self.read_arg, "")),
                           "content": str(args.get("content", ""))}
        if name == self.bash_tool:
            return BASH, {"command": str(args.get("command", ""))}
        return name, args

    def native_call(self, name: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """The script's call as this agent's tool call."""
        if name == SKILL:
            return self.skill_tool, {"name": args.get("skill", "")}
        if name == READ:
            return self.read_tool, {self.read_arg: args.get("file_path", "")}
        if name == WRITE and self.write_tool:
            return self.write_tool, {self.read_arg: args.get("file_path", ""),
                                     "content": args.get("content", "")}
        if name == BASH and self.bash_tool:
            return self.bash_tool, {"command": args.get("command", ""),
                                    "description": args.get("description", "Run a command")}
        return name, args

    def canonical(self, body: dict[str, Any]) -> dict[str, Any]:
        """The native request as the canonical (Messages-shaped) body."""
        raise NotImplementedError

    def canonical_result(self, call: tuple[str, dict[str, Any]], text: str,
                         ) -> list[dict[str, Any]]:
        """A native tool result's content as the canonical one."""
        name = call[0]
        if name == READ:
            return [{"type": "text", "text": file_content(text)}]
        return [{"type": "text", "text": text}]


def _tool_result(tool_id: str, content: list[dict[str, Any]],
                 is_error: bool = False) -> list[dict[str, Any]]:
    """A canonical user turn's blocks for one tool result (a skill body after it)."""
    launched = [b for b in content if "_launched" in b]
    if launched:
        block = launched[0]
        return [{"type": "tool_result", "tool_use_id": tool_id,
                 "content": [{"type": "text", "text": block["_launched"]}]},
                {"type": "text", "text": block["text"]}]
    return [{"type": "tool_result", "tool_use_id": tool_id, "content": content,
             "is_error": is_error}]


# -- Anthropic Messages, OpenCode's tools -------------------------------------------------


class OpenCodeDialect(Dialect):
    """OpenCode on the Anthropic Messages API: ``skill {name}``, ``read {filePath}``."""

    name = opencode.NAME
    skill_tool = "skill"
    read_tool = "read"
    read_arg = "filePath"
    write_tool = "write"
    bash_tool = "bash"

    @staticmethod
    def matches(body: dict[str, Any]) -> bool:
        """OpenCode's lower-case tool set (Claude Code's tools are capitalised)."""
        names = {str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict)}
        return "read" in names and "Read" not in names

    def canonical_result(self, call: tuple[str, dict[str, Any]], text: str,
                         ) -> list[dict[str, Any]]:
        name, args = call
        if name == SKILL and "<skill_content" in text:
            inner = re.sub(r"^.*?<skill_content[^>]*>\s*", "", text, count=1, flags=re.S)
            inner = inner.split("</skill_content>", 1)[0]
            base = re.search(r"Base directory for this skill:\s*(\S+)", inner)
            body = inner.split("Base directory for this skill:", 1)[0]
            body = re.sub(r"^# Skill: [^\n]*\n", "", body.lstrip())
            return _skill_delivered(str(args.get("skill")), base.group(1) if base else "", body)
        return super().canonical_result(call, text)

    def canonical(self, body: dict[str, Any]) -> dict[str, Any]:
        """The Messages body with OpenCode's tools renamed and results normalised."""
        calls: dict[str, tuple[str, dict[str, Any]]] = {}
        messages: list[dict[str, Any]] = []
        for msg in body.get("messages") or []:
            if not isinstance(msg, dict):
                continue
            content = msg.get("content")
            if not isinstance(content, list):
                messages.append(msg)
                continue
            blocks: list[dict[str, Any]] = []
            for block in content:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "tool_use":
                    raw = block.get("input")
                    call = self.canonical_call(str(block.get("name")),
                                               raw if isinstance(raw, dict) else {})
                    calls[str(block.get("id"))] = call
                    blocks.append(dict(block, name=call[0], input=call[1]))
                elif block.get("type") == "tool_result":
                    call = calls.get(str(block.get("tool_use_id")), ("", {}))
                    text = _result_text(block.get("content"))
                    blocks += _tool_result(str(block.get("tool_use_id")),
                                           self.canonical_result(call, text),
                                           bool(block.get("is_error")))
                else:
                    blocks.append(block)
            messages.append(dict(msg, content=blocks))
        native = {str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict)}
        return {"model": body.get("model"), "system": _system_text(body.get("system")),
                "messages": messages,
                "tools": [{"name": n} for n in self.tool_names(native)],
                "skill_dialect": self.name}

    def native_reply(self, reply: Reply) -> Reply:
        """The reply with canonical tool calls renamed to OpenCode's."""
        content = []
        for block in reply.content:
            if block.get("type") == "tool_use":
                name, args = self.native_call(str(block.get("name")), block.get("input") or {})
                block = dict(block, name=name, input=args)
            content.append(block)
        return Reply(content=content, stop_reason=reply.stop_reason, usage=reply.usage,
                     model=reply.model)


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content
                         if isinstance(b, dict) and b.get("type") == "text")
    return ""


def _system_text(system: Any) -> str:
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return "\n".join(str(b.get("text", "")) for b in system if isinstance(b, dict))
    return ""


# -- OpenAI Responses, Codex CLI ----------------------------------------------------------


class CodexDialect(Dialect):
    """Codex CLI on the Responses API: skills are read with a shell ``cat`` (Codex has no
    skill tool); the listing is a developer message naming each skill's file. A file is
    written with its shell tool too (a quoted here-document: ``cat > FILE <<'EOF'``)."""

    name = codex.NAME
    read_tool = "exec_command"

    def tool_names(self, native: set[str]) -> list[str]:
        return [READ, BASH, WRITE] if native & {"exec_command", "shell"} else []

    def canonical_call(self, name: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        cmd = args.get("cmd", args.get("command", ""))
        if isinstance(cmd, list):
            cmd = " ".join(str(c) for c in cmd)
        write = _CODEX_WRITE.match(str(cmd))
        if name in ("exec_command", "shell") and write:
            return WRITE, {"file_path": shlex.split(write.group(1))[0],
                           "content": write.group(3)}
        m = re.search(r"\bcat\s+(?:'([^']+)'|\"([^\"]+)\"|(\S+))", str(cmd))
        if name in ("exec_command", "shell") and m:
            return READ, {"file_path": next(g for g in m.groups() if g)}
        return BASH, {"command": str(cmd)}

    def native_call(self, name: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        if name == READ:
            return "exec_command", {"cmd": f"cat {shlex.quote(str(args.get('file_path')))}"}
        if name == WRITE:
            content = str(args.get("content", ""))
            mark = "SKILLLIFT_EOF"
            while mark in content:
                mark += "_"
            return "exec_command", {"cmd": (
                f"cat > {shlex.quote(str(args.get('file_path')))} <<'{mark}'\n"
                f"{content}\n{mark}")}
        return "exec_command", {"cmd": str(args.get("command", "true"))}

    def canonical(self, body: dict[str, Any]) -> dict[str, Any]:
        """The Responses ``input`` as Messages: developer text is the system prompt (the
        skill listing rewritten as ``<skill>`` blocks), function calls are tool uses."""
        system = [str(body.get("instructions") or "")]
        messages: list[dict[str, Any]] = []
        calls: dict[str, tuple[str, dict[str, Any]]] = {}

        def add(role: str, blocks: list[dict[str, Any]]) -> None:
            if messages and messages[-1]["role"] == role:
                messages[-1]["content"].extend(blocks)
            else:
                messages.append({"role": role, "content": list(blocks)})

        for item in body.get("input") or []:
            if not isinstance(item, dict):
                continue
            itype = item.get("type", "message")
            if itype == "message":
                role = str(item.get("role"))
                texts = [str(c.get("text", "")) for c in item.get("content") or []
                         if isinstance(c, dict)]
                if role in ("developer", "system"):
                    system += [_codex_listing(t) for t in texts]
                elif role == "user":
                    add("user", [{"type": "text", "text": _codex_user_text(t)} for t in texts])
                else:
                    add("assistant", [{"type": "text", "text": t} for t in texts])
            elif itype == "function_call":
                try:
                    args = json.loads(item.get("arguments") or "{}")
                except ValueError:
                    args = {}
                call = self.canonical_call(str(item.get("name")),
                                           args if isinstance(args, dict) else {})
                calls[str(item.get("call_id"))] = call
                add("assistant", [{"type": "tool_use", "id": str(item.get("call_id")),
                                   "name": call[0], "input": call[1]}])
            elif itype == "function_call_output":
                call = calls.get(str(item.get("call_id")), ("", {}))
                out = item.get("output")
                text = out if isinstance(out, str) else _result_text(
                    [dict(c, type="text") for c in out or [] if isinstance(c, dict)])
                add("user", _tool_result(str(item.get("call_id")),
                                         self.canonical_result(call, text)))
        native = {str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict)}
        return {"model": body.get("model"), "system": "\n".join(system),
                "messages": messages, "tools": [{"name": n} for n in self.tool_names(native)],
                "skill_dialect": self.name}


def _codex_user_text(text: str) -> str:
    """Codex's context turns (environment, AGENTS.md) read as reminders, not the prompt."""
    head = text.lstrip()
    if head.startswith(("<environment_context>", "# AGENTS.md", "<user_instructions>",
                        "<permissions")):
        return f"<system-reminder>{text}</system-reminder>"
    return text


def _codex_listing(text: str) -> str:
    """Codex's ``<skills_instructions>`` lines (``- name: description (file: r0/…)``, with the
    roots named above them) as ``<skill>`` blocks with absolute locations."""
    if "<skills_instructions>" not in text:
        return text
    roots = {m.group(1): m.group(2) for m in map(_CODEX_ROOT_LINE.match, text.splitlines())
             if m}
    blocks = []
    for line in text.splitlines():
        m = _CODEX_SKILL_LINE.match(line.strip())
        if m:
            root, _, rest = m.group(3).partition("/")
            location = f"{roots[root].rstrip('/')}/{rest}" if root in roots else m.group(3)
            blocks.append(_skill_text(m.group(1), m.group(2), location))
    return text + "\n" + "\n".join(blocks)


def responses_events(reply: Reply, dialect: CodexDialect, model: str,
                     usage: dict[str, int]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The Responses API stream of one reply: created, one output item per block (text as
    deltas), completed with usage."""
    rid = "resp_" + uuid.uuid4().hex[:24]
    base = {"id": rid, "object": "response", "model": model, "status": "in_progress",
            "output": []}
    yield "response.created", {"type": "response.created", "response": base}
    output = []
    for index, block in enumerate(reply.content):
        item: dict[str, Any]
        if block.get("type") == "tool_use":
            name, args = dialect.native_call(str(block.get("name")), block.get("input") or {})
            item = {"type": "function_call", "id": "fc_" + uuid.uuid4().hex[:20],
                    "call_id": "call_" + uuid.uuid4().hex[:20], "name": name,
                    "arguments": json.dumps(args), "status": "completed"}
            yield "response.output_item.added", {"type": "response.output_item.added",
                                                 "output_index": index, "item": item}
        else:
            text = str(block.get("text", ""))
            mid = "msg_" + uuid.uuid4().hex[:20]
            item = {"type": "message", "id": mid, "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}]}
            yield "response.output_item.added", {
                "type": "response.output_item.added", "output_index": index,
                "item": dict(item, content=[], status="in_progress")}
            for i in range(0, max(len(text), 1), 40):
                yield "response.output_text.delta", {
                    "type": "response.output_text.delta", "item_id": mid,
                    "output_index": index, "content_index": 0, "delta": text[i:i + 40]}
        output.append(item)
        yield "response.output_item.done", {"type": "response.output_item.done",
                                            "output_index": index, "item": item}
    done = dict(base, status="completed", output=output, usage={
        "input_tokens": usage["input"], "output_tokens": usage["output"],
        "total_tokens": usage["input"] + usage["output"],
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0}})
    yield "response.completed", {"type": "response.completed", "response": done}


# -- Gemini streamGenerateContent, Gemini CLI ---------------------------------------------


class GeminiDialect(Dialect):
    """Gemini CLI: ``activate_skill {name}``, ``read_file {file_path}``; the listing is an
    ``<available_skills>`` block in the system instruction."""

    name = gemini_cli.NAME
    skill_tool = "activate_skill"
    read_tool = "read_file"
    write_tool = "write_file"
    bash_tool = "run_shell_command"

    def canonical_result(self, call: tuple[str, dict[str, Any]], text: str,
                         ) -> list[dict[str, Any]]:
        name, args = call
        if name == SKILL and "<instructions>" in text:
            body = text.split("<instructions>", 1)[1].split("</instructions>", 1)[0]
            base = re.search(r"<location>\s*([^<]+?)\s*</location>", text) or re.search(
                r"Resources loaded from `([^`]+)`", text)
            where = base.group(1) if base else ""
            return _skill_delivered(str(args.get("skill")), where.rpartition("/SKILL.md")[0]
                                    if where.endswith("SKILL.md") else where, body.strip())
        return super().canonical_result(call, text)

    def canonical(self, body: dict[str, Any]) -> dict[str, Any]:
        """``contents`` as Messages: ``functionCall``/``functionResponse`` parts become tool
        uses and results (Gemini pairs them by order and name, not by id)."""
        sys_parts = (body.get("systemInstruction") or {}).get("parts") or []
        system = "\n".join(str(p.get("text", "")) for p in sys_parts if isinstance(p, dict))
        messages: list[dict[str, Any]] = []
        pending: list[tuple[str, tuple[str, dict[str, Any]]]] = []
        for n, turn in enumerate(body.get("contents") or []):
            if not isinstance(turn, dict):
                continue
            role = "assistant" if turn.get("role") == "model" else "user"
            blocks: list[dict[str, Any]] = []
            for k, part in enumerate(turn.get("parts") or []):
                if not isinstance(part, dict):
                    continue
                if "text" in part and not part.get("thought"):
                    text = str(part["text"])
                    if role == "user" and n == 0 and k == 0 and len(turn["parts"]) > 1:
                        text = f"<system-reminder>{text}</system-reminder>"  # the cwd context
                    blocks.append({"type": "text", "text": text})
                elif "functionCall" in part:
                    fc = part["functionCall"]
                    call = self.canonical_call(str(fc.get("name")), fc.get("args") or {})
                    tid = str(fc.get("id") or f"gem_{n}_{k}")
                    pending.append((tid, call))
                    blocks.append({"type": "tool_use", "id": tid, "name": call[0],
                                   "input": call[1]})
                elif "functionResponse" in part:
                    fr = part["functionResponse"]
                    tid, call = pending.pop(0) if pending else (f"gem_{n}_{k}", ("", {}))
                    resp = fr.get("response") or {}
                    output = resp.get("output") if isinstance(resp, dict) else None
                    text = output if isinstance(output, str) else json.dumps(resp)
                    blocks += _tool_result(tid, self.canonical_result(call, text),
                                           isinstance(resp, dict) and "error" in resp)
            if messages and messages[-1]["role"] == role:
                messages[-1]["content"].extend(blocks)
            else:
                messages.append({"role": role, "content": blocks})
        native = {str(d.get("name")) for t in body.get("tools") or [] if isinstance(t, dict)
                  for d in t.get("functionDeclarations") or [] if isinstance(d, dict)}
        return {"model": body.get("model"), "system": system, "messages": messages,
                "tools": [{"name": n} for n in self.tool_names(native)],
                "skill_dialect": self.name}


def gemini_chunks(reply: Reply, dialect: GeminiDialect, model: str,
                  usage: dict[str, int]) -> Iterator[dict[str, Any]]:
    """``streamGenerateContent?alt=sse`` chunks of one reply: text in pieces, each function
    call whole, the last chunk with ``finishReason`` and ``usageMetadata``."""
    parts: list[dict[str, Any]] = []
    for block in reply.content:
        if block.get("type") == "tool_use":
            name, args = dialect.native_call(str(block.get("name")), block.get("input") or {})
            parts.append({"functionCall": {"name": name, "args": args}})
        else:
            text = str(block.get("text", ""))
            parts += [{"text": text[i:i + 40]} for i in range(0, max(len(text), 1), 40)]
    meta = {"promptTokenCount": usage["input"], "candidatesTokenCount": usage["output"],
            "totalTokenCount": usage["input"] + usage["output"]}
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        cand: dict[str, Any] = {"content": {"role": "model", "parts": [part]}, "index": 0}
        chunk: dict[str, Any] = {"candidates": [cand], "modelVersion": model}
        if last:
            cand["finishReason"] = "STOP"
            chunk["usageMetadata"] = meta
        yield chunk


CODEX = CodexDialect()
GEMINI = GeminiDialect()
OPENCODE = OpenCodeDialect()
