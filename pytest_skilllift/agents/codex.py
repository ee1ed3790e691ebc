"""Codex CLI (``@openai/codex``): ``codex exec --json``, docs/agents.md "Codex CLI"."""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Mapping
from typing import Any

from pytest_skilllift.agents.base import (
    AGENT_SKILL_ROOT,
    Agent,
    AgentURLError,
    ImageLayout,
    Invocation,
    ModelProbe,
    OutageSignal,
    base_url,
    bearer_probe_headers,
    has_credentials,
    isolated_env,
    quoted,
    retry_status,
    status_in,
)
from pytest_skilllift.agents.events import EventBuilder, obj
from pytest_skilllift.model import AgentConfig, RunSpec

NAME = "codex"


def _toml(value: object) -> str:
    return json.dumps(value)  # a JSON string or bool is a valid TOML basic value


def invocation(cli: str, spec: RunSpec, cfg: AgentConfig, home: str,
               base: dict[str, str] | None = None, container: bool = False) -> Invocation:
    """``codex exec --json``, config in ``$CODEX_HOME/config.toml``: bundled skills, plugins,
    the hosted web search, analytics and update checks off; a base URL becomes a provider
    entry (Codex ignores ``OPENAI_BASE_URL``) that reads ``OPENAI_API_KEY``."""
    env = isolated_env(AGENT, cfg, home, base)
    env["CODEX_HOME"] = f"{home}/.codex"
    problem = url_problem({**(os.environ if base is None else base), **cfg.env})
    if problem:  # the session refuses it first; never written, whoever calls this
        raise AgentURLError(problem)
    url = base_url(AGENT, cfg, base)
    lines = [f"model = {_toml(spec.agent_model)}", 'web_search = "disabled"',
             "check_for_update_on_startup = false"]
    if url:
        lines.append('model_provider = "skilllift"')
    lines += ["[features]", "plugins = false", "[analytics]", "enabled = false",
              "[skills.bundled]", "enabled = false"]
    if url:
        lines += ["[model_providers.skilllift]", 'name = "skilllift"',
                  f"base_url = {_toml(url.rstrip('/'))}", 'env_key = "OPENAI_API_KEY"',
                  'wire_api = "responses"']
    # Its read-only sandbox needs bubblewrap (shipped beside the npm binary); in a
    # container the container is the sandbox (docs/docker.md).
    sandbox = (["--dangerously-bypass-approvals-and-sandbox"] if container
               else ["--sandbox", "read-only"])
    argv = [cli, "exec", "--json", "--ephemeral", "--skip-git-repo-check", "--strict-config",
            *sandbox, "-m", spec.agent_model, "-"]
    return Invocation(argv, env, {".codex/config.toml": "\n".join(lines) + "\n"},
                      (".codex", AGENT_SKILL_ROOT), [cli, *AGENT.listing_args])


def url_problem(env: Mapping[str, str]) -> str | None:
    """Codex reads a base URL only from ``config.toml`` (no variable, no substitution): one
    holding ``user:password@`` would be written to disk in the run's HOME, so it is refused."""
    var = AGENT.base_url_var
    if not has_credentials(env.get(var, "")):
        return None
    return (f"{var} holds credentials (user:password@host) and Codex reads its base URL only "
            "from config.toml, which would write them to disk in the run's HOME; fix: give "
            f"{var} without credentials and the key in {AGENT.key_var} (Codex sends it as "
            "a bearer token), or put the authentication in a local proxy")


def listed_skills(text: str) -> tuple[str, ...] | None:
    """The skills section of ``codex debug prompt-input`` (a JSON list of input items)."""
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    plain = "\n".join(_strings(doc))
    return tuple(dict.fromkeys(re.findall(
        r"^\s*- ([A-Za-z0-9._:-]+): .*? \(file: [^)]+\)\s*$", plain, flags=re.M)))


def _strings(doc: Any) -> list[str]:
    """Every string inside a JSON document (Codex's prompt input is a list of items)."""
    if isinstance(doc, str):
        return [doc]
    if isinstance(doc, list):
        return [s for d in doc for s in _strings(d)]
    if isinstance(doc, dict):
        return [s for d in doc.values() for s in _strings(d)]
    return []


def read_stream(lines: list[dict[str, Any]], out: EventBuilder,
                bodies: Mapping[str, str]) -> None:
    """``exec --json`` items: shell commands (a ``cat`` of a file is a ``Read``), web
    searches, agent messages; ``turn.completed`` carries the tokens (no cost)."""
    for ev in lines:
        etype = ev.get("type")
        item = obj(ev.get("item"))
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
            usage = obj(ev.get("usage"))
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


def outage_event(event: dict[str, Any]) -> OutageSignal | None:
    """``{"type": "error", "message": "Reconnecting... 1/5 (unexpected status 401 …)"}``
    per retry (or "Reconnecting... waiting for network (Connection failed: …)"), then one
    final error naming the status."""
    if event.get("type") != "error" or not isinstance(event.get("message"), str):
        return None
    message = str(event["message"])
    if message.startswith("Reconnecting"):
        return OutageSignal("retry", retry_status(message))
    status = status_in(message)
    return OutageSignal("final", status) if status else None


#: OpenAI model ids offered as "did you mean" (OpenCode's ``openai/`` models too).
KNOWN_MODELS = ("gpt-5", "gpt-5-mini", "gpt-5-nano", "gpt-5.5")


def probe_endpoint(env: Mapping[str, str]) -> tuple[str, dict[str, str], str]:
    """The OpenAI API Codex calls (``OPENAI_BASE_URL``, which ends in ``/v1``), the key as
    a bearer token, as Codex sends it."""
    base = (env.get(AGENT.base_url_var) or AGENT.default_url).rstrip("/")
    return base, bearer_probe_headers(env.get(AGENT.key_var, "")), AGENT.key_var


def probe_path(model_id: str) -> str:
    """The OpenAI Models API's ``GET /v1/models/{model}`` (free)."""
    return f"/models/{quoted(model_id)}"


AGENT = Agent(
    name=NAME, title="Codex CLI", package="@openai/codex", registry="npm", version="0.169.0",
    binary="codex", key_var="OPENAI_API_KEY", base_url_var="OPENAI_BASE_URL",
    default_url="https://api.openai.com/v1", stand_in_path="/v1", skill_root=AGENT_SKILL_ROOT,
    invocation=invocation, listing_args=("debug", "prompt-input", "x"),
    listed_skills=listed_skills, read_stream=read_stream, outage_event=outage_event,
    image=ImageLayout(native=("codex", "@openai")), url_problem=url_problem,
    prices={"gpt-5": (1.25, 10.0), "gpt-5-mini": (0.25, 2.0), "gpt-5-nano": (0.05, 0.40)},
    task_tools=("exec_command", "apply_patch"),
    model_probe=ModelProbe(probe_endpoint, probe_path, "/models", known=KNOWN_MODELS),
)
