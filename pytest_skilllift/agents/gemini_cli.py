"""Gemini CLI (``@google/gemini-cli``): ``gemini -o stream-json``, docs/agents.md "Gemini CLI"."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from pytest_skilllift.agents.base import (
    AGENT_SKILL_ROOT,
    Agent,
    ImageLayout,
    Invocation,
    ModelProbe,
    OutageSignal,
    base_url,
    gemini_probe_headers,
    gemini_refused,
    isolated_env,
    quoted,
    retry_status,
    status_in,
)
from pytest_skilllift.agents.events import EventBuilder, body_text, obj
from pytest_skilllift.model import AgentConfig, RunSpec

NAME = "gemini-cli"
#: Gemini CLI's bundled skills, disabled in both arms.
BUILTIN_SKILLS: tuple[str, ...] = ("skill-creator", "antigravity-support")


def invocation(cli: str, spec: RunSpec, cfg: AgentConfig, home: str,
               base: dict[str, str] | None = None, container: bool = False) -> Invocation:
    """``gemini -o stream-json``, settings in ``~/.gemini/settings.json`` (API-key auth, no
    telemetry or update checks, the bundled skills disabled, web search and fetch
    excluded); the install dir is added to the workspace in both arms, so a ``read_file``
    of the SKILL.md is allowed."""
    env = isolated_env(AGENT, cfg, home, base)
    url = base_url(AGENT, cfg, base)
    if url:
        env[AGENT.base_url_var] = url
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
        "skills": {"disabled": list(BUILTIN_SKILLS)},
        "tools": {"exclude": ["google_web_search", "web_fetch"]},
    }
    argv = [cli, "-m", spec.agent_model, "--skip-trust", "--yolo", "-o", "stream-json",
            "--include-directories", f"{home}/{AGENT_SKILL_ROOT}"]
    return Invocation(argv, env, {".gemini/settings.json": json.dumps(settings, indent=1)},
                      (".gemini", AGENT_SKILL_ROOT), [cli, *AGENT.listing_args])


def listed_skills(text: str) -> tuple[str, ...] | None:
    """The enabled skills of ``gemini skills list`` (``name [Enabled]`` lines)."""
    if "No skills" not in text and "[Enabled]" not in text and "[Disabled]" not in text:
        return None
    return tuple(re.findall(r"^\s*(\S+) \[Enabled\]", text, flags=re.M))


def read_stream(lines: list[dict[str, Any]], out: EventBuilder,
                bodies: Mapping[str, str]) -> None:
    """``stream-json`` events: assistant message deltas, ``tool_use`` / ``tool_result``
    (``activate_skill`` shows a summary: the delivered body is the installed SKILL.md's),
    the ``result`` event's stats."""
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
                body = body_text(where.group(1) if where else "", bodies.get(skill, ""))
                text = f"Launching skill: {skill}"
            out.result(tid, text, failed, body)
        elif etype == "result":
            stats = obj(ev.get("stats"))
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


def outage_event(event: dict[str, Any]) -> OutageSignal | None:
    """The ``result`` event of a run that gave up (``"status": "error"``), naming a status."""
    if event.get("type") != "result" or event.get("status") != "error":
        return None
    error = event.get("error")
    status = status_in(json.dumps(error)) if error else None
    return OutageSignal("final", status) if status else None


def outage_stderr(text: str, armed: bool) -> OutageSignal | None:
    """Its retries are on stderr (``Attempt 2 failed. Retrying with backoff... Error: …``),
    and before it gives up ``Error when talking to Gemini API`` with a ``status: 401`` line
    after it."""
    if text.startswith("Attempt ") and "failed" in text and "Retrying" in text:
        return OutageSignal("retry", retry_status(text),
                            text.partition("Error:")[2].strip()[:120])
    if "Error when talking to" in text:
        return OutageSignal("arm", status_in(text))
    if armed and (status := status_in(text)) and text.startswith("status"):
        return OutageSignal("final", status)
    return None


def probe_endpoint(env: Mapping[str, str]) -> tuple[str, dict[str, str], str]:
    """The Gemini API Gemini CLI calls (``GOOGLE_GEMINI_BASE_URL``), the key in
    ``x-goog-api-key``."""
    base = (env.get(AGENT.base_url_var) or AGENT.default_url).rstrip("/")
    return base, gemini_probe_headers(env.get(AGENT.key_var, "")), AGENT.key_var


def probe_path(model_id: str) -> str:
    """The Gemini API's ``GET v1beta/models/{model}`` (free)."""
    return f"/v1beta/models/{quoted(model_id.removeprefix('models/'))}"


#: Gemini model ids offered as "did you mean" (OpenCode's ``google/`` models too).
KNOWN_MODELS = ("gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite")


AGENT = Agent(
    name=NAME, title="Gemini CLI", package="@google/gemini-cli", registry="npm",
    version="0.61.0", binary="gemini", key_var="GEMINI_API_KEY",
    base_url_var="GOOGLE_GEMINI_BASE_URL",
    default_url="https://generativelanguage.googleapis.com", stand_in_path="",
    skill_root=AGENT_SKILL_ROOT, invocation=invocation, listing_args=("skills", "list"),
    listed_skills=listed_skills, read_stream=read_stream, outage_event=outage_event,
    outage_stderr=outage_stderr, image=ImageLayout(node_bundle=True),
    prices={"gemini-2.5-pro": (1.25, 10.0), "gemini-2.5-flash": (0.30, 2.50),
            "gemini-2.5-flash-lite": (0.10, 0.40)},
    builtin_skills=BUILTIN_SKILLS,
    task_tools=("write_file", "replace", "run_shell_command"),
    model_probe=ModelProbe(probe_endpoint, probe_path, "/v1beta/models?pageSize=1",
                           refused=gemini_refused, known=KNOWN_MODELS),
)
