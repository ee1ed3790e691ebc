"""OpenCode (``opencode-ai``): ``opencode run --format json``, docs/agents.md "OpenCode"."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from pytest_skilllift.agents import codex, gemini_cli
from pytest_skilllift.agents.base import (
    AGENT_SKILL_ROOT,
    Agent,
    ImageLayout,
    Invocation,
    ModelProbe,
    OutageSignal,
    anthropic_probe_headers,
    base_url,
    bearer_probe_headers,
    gemini_probe_headers,
    gemini_refused,
    has_credentials,
    isolated_env,
    quoted,
)
from pytest_skilllift.agents.events import SKILL_BODY_PREFIX, EventBuilder, body_text, obj
from pytest_skilllift.model import AgentConfig, RunSpec

NAME = "opencode"
#: OpenCode's embedded skill, denied in both arms.
BUILTIN_SKILLS: tuple[str, ...] = ("customize-opencode",)
DEFAULT_URL = "https://api.anthropic.com"
#: OpenCode reads a base URL holding credentials from this variable (``{env:…}`` in its
#: config), so the credentials never land in ``opencode.json``.
URL_VAR = "SKILLLIFT_OPENCODE_BASE_URL"


def invocation(cli: str, spec: RunSpec, cfg: AgentConfig, home: str,
               base: dict[str, str] | None = None, container: bool = False) -> Invocation:
    """``opencode run --format json``, config in ``~/.config/opencode/opencode.json``: the
    embedded skill denied, web fetch and search denied, no sharing or update; a base URL
    goes to the model's provider options; the run gets its model's provider's key only
    (``ANTHROPIC_API_KEY``, ``OPENAI_API_KEY`` for ``openai/…``, ``GEMINI_API_KEY`` for
    ``google/…``: :data:`PROVIDERS`)."""
    env = isolated_env(AGENT, cfg, home, base, spec.agent_model)
    env.update(OPENCODE_DISABLE_MODELS_FETCH="1", OPENCODE_DISABLE_AUTOUPDATE="1")
    url = base_url(AGENT, cfg, base)
    model = spec.agent_model
    config: dict[str, object] = {
        "$schema": "https://opencode.ai/config.json", "model": model, "small_model": model,
        "autoupdate": False, "share": "disabled",
        "permission": {"skill": {s: "deny" for s in BUILTIN_SKILLS},
                       "webfetch": "deny", "websearch": "deny"},
    }
    provider = model.partition("/")[0]
    if url and provider:
        base_url_ = url.rstrip("/")
        base_url_ = base_url_ if base_url_.endswith("/v1") else base_url_ + "/v1"
        if has_credentials(base_url_):
            # The credentials stay in the environment; OpenCode substitutes {env:…}.
            env[URL_VAR] = base_url_
            base_url_ = "{env:" + URL_VAR + "}"
        config["provider"] = {provider: {"options": {"baseURL": base_url_}}}
    argv = [cli, "run", "--format", "json", "-m", model]
    return Invocation(argv, env,
                      {".config/opencode/opencode.json": json.dumps(config, indent=1)},
                      (".config/opencode", AGENT_SKILL_ROOT), [cli, *AGENT.listing_args])


def listed_skills(text: str) -> tuple[str, ...] | None:
    """The names in ``opencode debug skill``'s JSON list (after any log lines)."""
    start = text.find("[")
    try:
        doc = json.loads(text[start:]) if start >= 0 else None
    except ValueError:
        return None
    if not isinstance(doc, list):
        return None
    return tuple(str(s.get("name")) for s in doc if isinstance(s, dict) and s.get("name"))


def read_stream(lines: list[dict[str, Any]], out: EventBuilder,
                bodies: Mapping[str, str]) -> None:
    """``run --format json`` events: ``tool_use`` parts (the ``skill`` tool's output holds
    the delivered body), ``text`` parts, ``step_finish`` with tokens and cost."""
    # No run duration is reported (event stamps start after the CLI's start-up): the engine
    # records the wall time, as for Codex.
    for ev in lines:
        etype = ev.get("type")
        part = obj(ev.get("part"))
        if etype == "tool_use":
            state = obj(part.get("state"))
            args = obj(state.get("input"))
            tid, tool = str(part.get("callID") or part.get("id")), str(part.get("tool"))
            failed = state.get("status") != "completed"
            text = str(state.get("output") or state.get("error") or "")
            body = None
            if tool == "skill":
                call = ("Skill", {"skill": str(args.get("name") or "")})
                if not failed:
                    meta = obj(state.get("metadata"))
                    inner = re.sub(r"^.*?<skill_content[^>]*>\s*(# Skill: [^\n]*\n)?", "",
                                   text, count=1, flags=re.S)
                    inner = inner.split(SKILL_BODY_PREFIX, 1)[0]
                    body = body_text(str(meta.get("dir") or ""), inner)
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
            tokens = obj(part.get("tokens"))
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


def outage_event(event: dict[str, Any]) -> OutageSignal | None:
    """The final ``error`` event, whose ``data.statusCode`` is the HTTP status."""
    if event.get("type") != "error" or not isinstance(event.get("error"), dict):
        return None
    data = event["error"].get("data")
    status = data.get("statusCode") if isinstance(data, dict) else None
    if not isinstance(data, dict) or not isinstance(status, int):
        return None
    return OutageSignal("final", status, str(data.get("message") or "")[:80])


def _provider_base(env: Mapping[str, str], public: str) -> str:
    """Where a provider's calls go: ``ANTHROPIC_BASE_URL`` + ``/v1`` when it is set (as
    :func:`invocation` writes it into every provider's ``baseURL``), else its public API."""
    url = env.get(AGENT.base_url_var, "").rstrip("/")
    return url.removesuffix("/v1") + "/v1" if url else public


def probe_endpoint(env: Mapping[str, str]) -> tuple[str, dict[str, str], str]:
    """The Anthropic API OpenCode's ``anthropic`` provider calls (``ANTHROPIC_BASE_URL``,
    which :func:`invocation` extends with ``/v1``), with ``ANTHROPIC_API_KEY``."""
    base = (env.get(AGENT.base_url_var) or DEFAULT_URL).rstrip("/").removesuffix("/v1")
    return base, anthropic_probe_headers(env.get(AGENT.key_var, "")), AGENT.key_var


def probe_path(model_id: str) -> str | None:
    """``/v1/models/{id}`` for an ``anthropic/…`` model; None for another provider's (its
    probe is its provider's: :data:`PROVIDERS`)."""
    provider, _, model = model_id.partition("/")
    return f"/v1/models/{quoted(model)}" if provider == "anthropic" and model else None


def _openai_endpoint(env: Mapping[str, str]) -> tuple[str, dict[str, str], str]:
    """OpenAI's API, as OpenCode's ``openai`` provider calls it, with ``OPENAI_API_KEY``."""
    return (_provider_base(env, OPENAI_URL), bearer_probe_headers(env.get(OPENAI_KEY, "")),
            OPENAI_KEY)


def _google_endpoint(env: Mapping[str, str]) -> tuple[str, dict[str, str], str]:
    """The Gemini API, as OpenCode's ``google`` provider calls it, with ``GEMINI_API_KEY``."""
    return (_provider_base(env, GOOGLE_URL), gemini_probe_headers(env.get(GOOGLE_KEY, "")),
            GOOGLE_KEY)


def _after_provider(model_id: str) -> str | None:
    """``/models/{model}`` of ``provider/model`` (OpenAI's and the Gemini API's lookup)."""
    model = model_id.partition("/")[2]
    return f"/models/{quoted(model)}" if model else None


#: OpenAI's and Google's public APIs, as OpenCode's providers reach them without a base URL.
OPENAI_URL = "https://api.openai.com/v1"
GOOGLE_URL = "https://generativelanguage.googleapis.com/v1beta"
#: The variable each provider's key is read from (OpenCode reads these itself; the run gets
#: only its model's provider's: ``GEMINI_API_KEY`` is one of the three Google ones it reads).
OPENAI_KEY, GOOGLE_KEY = "OPENAI_API_KEY", "GEMINI_API_KEY"
ANTHROPIC_PROBE = ModelProbe(probe_endpoint, probe_path, "/v1/models?limit=1",
                             known=("anthropic/claude-sonnet-4-5", "anthropic/claude-haiku-4-5"))
#: The providers whose models a run reaches with a key skilllift hands over and whose API
#: has a free model lookup (the preflight's): by the prefix of the model (``openai/gpt-5``).
#: Another provider's model runs with ``ANTHROPIC_API_KEY`` only and is not checked.
PROVIDERS: Mapping[str, tuple[str, ModelProbe]] = {
    "anthropic": ("ANTHROPIC_API_KEY", ANTHROPIC_PROBE),
    "openai": (OPENAI_KEY, ModelProbe(
        _openai_endpoint, _after_provider, "/models",
        known=tuple(f"openai/{m}" for m in codex.KNOWN_MODELS))),
    "google": (GOOGLE_KEY, ModelProbe(
        _google_endpoint, _after_provider, "/models?pageSize=1", refused=gemini_refused,
        known=tuple(f"google/{m}" for m in gemini_cli.KNOWN_MODELS))),
}


def provider(model_id: str) -> tuple[str, ModelProbe | None] | None:
    """The key variable and probe of ``provider/model``'s provider (:data:`PROVIDERS`);
    None for another provider."""
    return PROVIDERS.get(model_id.partition("/")[0]) if "/" in model_id else None


AGENT = Agent(
    name=NAME, title="OpenCode", package="opencode-ai", registry="npm", version="1.18.33",
    binary="opencode", key_var="ANTHROPIC_API_KEY", base_url_var="ANTHROPIC_BASE_URL",
    default_url=DEFAULT_URL, stand_in_path="", skill_root=AGENT_SKILL_ROOT,
    invocation=invocation, listing_args=("debug", "skill"), listed_skills=listed_skills,
    read_stream=read_stream, outage_event=outage_event,
    image=ImageLayout(native=("opencode", "."), extra=(
        ("rg", "/usr/bin/rg", "ripgrep (rg)", "apt-get install ripgrep"),)),
    prices={"claude-sonnet-4-5": (3.0, 15.0), "claude-haiku-4-5": (1.0, 5.0)},
    builtin_skills=BUILTIN_SKILLS,
    task_tools=("write", "edit", "bash"),
    model_probe=ANTHROPIC_PROBE, provider=provider,
)
