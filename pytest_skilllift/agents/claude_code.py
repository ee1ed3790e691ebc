"""Claude Code: ``claude -p --output-format stream-json``, bundled in the ``claude-agent-sdk``
wheel. Its stream-json is the shape every other agent's stream is read into
(``trace/transcript.py``), and it lists the skills itself (the init event).

Both arms get exactly the same argv apart from the prompt text (tool parity,
qdrant/skills SCORING.md).
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_skilllift.agents.base import (
    Agent,
    Invocation,
    ModelProbe,
    OutageSignal,
    anthropic_probe_headers,
    quoted,
)
from pytest_skilllift.model import CLAUDE_CODE, AgentConfig, RunSpec

NAME = CLAUDE_CODE
DEFAULT_URL = "https://api.anthropic.com"

#: Environment variables the CLI may need from the host; everything else is dropped so
#: nothing from the developer's shell leaks into a run.
PASSTHROUGH_ENV: tuple[str, ...] = (
    "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL",
    "ANTHROPIC_DEFAULT_HAIKU_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL",
    "ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_SMALL_FAST_MODEL",
    "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "AWS_REGION",
    "CLOUD_ML_REGION", "ANTHROPIC_VERTEX_PROJECT_ID",
    "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS",
    "LANG", "LC_ALL", "TZ",
)

#: Settings that make a headless run quiet and reproducible: no auto-update, no telemetry,
#: no nonessential traffic (a scored run must not depend on anything but the Messages API).
QUIET_ENV: dict[str, str] = {
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_NON_ESSENTIAL_MODEL_CALLS": "1",
    "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
    "IS_SANDBOX": "1",
}


def build_argv(claude: str, spec: RunSpec, cfg: AgentConfig) -> list[str]:
    """The CLI argv for one run. The prompt is not in it: runners pass it on standard input
    (``claude -p`` reads the prompt from stdin when none is given), so a prompt starting
    with ``-`` is never parsed as an option and no per-argument OS limit (~128 KiB) applies.
    No shell ever sees the prompt."""
    argv = [
        claude,
        "-p",
        "--output-format", "stream-json",
        "--verbose",
        "--model", spec.model_id,
        "--permission-mode", cfg.permission_mode,
        "--allowedTools", ",".join(cfg.allowed_tools),
        "--no-session-persistence",
    ]
    if cfg.max_turns is not None:
        argv += ["--max-turns", str(cfg.max_turns)]
    if cfg.max_budget_usd is not None:
        argv += ["--max-budget-usd", f"{cfg.max_budget_usd:g}"]
    return argv


def build_env(cfg: AgentConfig, home: str, base: dict[str, str] | None = None) -> dict[str, str]:
    """The run's environment: a fresh HOME, the pass-through variables, ``cfg.env`` on top."""
    source = os.environ if base is None else base
    env = {k: source[k] for k in PASSTHROUGH_ENV if k in source}
    env.update(QUIET_ENV)
    env["HOME"] = home
    env["PATH"] = source.get("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.update(cfg.env)
    return env


def invocation(cli: str, spec: RunSpec, cfg: AgentConfig, home: str,
               base: dict[str, str] | None = None, container: bool = False) -> Invocation:
    """:func:`build_argv` and :func:`build_env` as an :class:`Invocation`: no config file
    and no listing command (the stream's init event lists the skills)."""
    return Invocation(build_argv(cli, spec, cfg), build_env(cfg, home, base))


def outage_event(event: dict[str, Any]) -> OutageSignal | None:
    """One ``{"type": "system", "subtype": "api_retry", "attempt": 1, "retry_delay_ms":
    3054, "error_status": 429, "error": "rate_limit"}`` event per retry (``error_status``
    null: the connection failed; the delay honours the API's ``retry-after``), and its
    result event when it gave up on the API: ``api_error_status`` (a refused key, a missing
    model) or, with no status, ``api_error`` and the words "API Error: Unable to connect to
    API: …" — it does so at once, without one ``api_retry``, for a certificate it does not
    trust (``"api_error": "tls_untrusted_ca"``)."""
    if event.get("type") == "system" and event.get("subtype") == "api_retry":
        status, delay = event.get("error_status"), event.get("retry_delay_ms")
        return OutageSignal(
            "retry", status if isinstance(status, int) and not isinstance(status, bool)
            else None, str(event.get("error") or ""),
            int(delay) if isinstance(delay, (int, float)) and delay > 0 else 0)
    if event.get("type") != "result" or "api_error_status" not in event:
        return None
    if not event.get("is_error"):
        return None
    status, error = event.get("api_error_status"), str(event.get("api_error") or "")
    if isinstance(status, int) and not isinstance(status, bool):
        return OutageSignal("final", status, error)
    if status is None and "Unable to connect to API" in str(event.get("result") or ""):
        return OutageSignal("unreachable", None,
                            str(event["result"]).partition("Unable to connect to API:")[2])
    return None


#: Model names Claude Code resolves itself (``claude --model sonnet``); a ``[1m]`` suffix too.
CLI_ALIASES = ("default", "sonnet", "opus", "haiku", "opusplan", "best", "sonnet[1m]",
               "opus[1m]")
#: Model ids offered as "did you mean" beside the aliases.
KNOWN_IDS = ("claude-sonnet-4-5", "claude-opus-4-5", "claude-haiku-4-5", "claude-opus-4-1",
             "claude-sonnet-4-0", "claude-opus-4-0")
#: The cheapest Models API call: one listed model (checks the key only).
MODELS_LIST = "/v1/models?limit=1"


def is_alias(model_id: str) -> bool:
    """Whether Claude Code resolves this name itself (``sonnet``, ``opus[1m]``)."""
    return model_id.lower() in CLI_ALIASES


def probe_endpoint(env: Mapping[str, str]) -> tuple[str, dict[str, str], str] | None:
    """The Anthropic API the CLI calls, with ``ANTHROPIC_API_KEY`` (else
    ``ANTHROPIC_AUTH_TOKEN`` as a bearer token); None on Bedrock / Vertex (another API)."""
    if env.get("CLAUDE_CODE_USE_BEDROCK") or env.get("CLAUDE_CODE_USE_VERTEX"):
        return None
    key = env.get("ANTHROPIC_API_KEY") or ""
    bearer = not key and bool(env.get("ANTHROPIC_AUTH_TOKEN"))
    base = (env.get("ANTHROPIC_BASE_URL") or DEFAULT_URL).rstrip("/")
    if bearer:
        return base, anthropic_probe_headers(env["ANTHROPIC_AUTH_TOKEN"], True), \
            "ANTHROPIC_AUTH_TOKEN"
    return base, anthropic_probe_headers(key), "ANTHROPIC_API_KEY"


def probe_path(model_id: str) -> str:
    """``/v1/models/{id}``; for an alias the CLI resolves, only the key is checked."""
    return MODELS_LIST if is_alias(model_id) else f"/v1/models/{quoted(model_id)}"


AGENT = Agent(
    name=NAME, title="Claude Code", package="claude-agent-sdk", registry="pip", version="",
    binary="claude", key_var="ANTHROPIC_API_KEY", base_url_var="ANTHROPIC_BASE_URL",
    default_url=DEFAULT_URL, stand_in_path="", skill_root=".claude/skills",
    invocation=invocation, outage_event=outage_event,
    model_probe=ModelProbe(probe_endpoint, probe_path, MODELS_LIST,
                           known=(*CLI_ALIASES, *KNOWN_IDS)),
)


def init_event(stdout: Path, max_lines: int = 50) -> dict[str, Any] | None:
    """The stream's ``init`` event (the CLI's version, the skills it listed), read from the
    first ``max_lines`` lines of a run's stdout; None when there is none (or no file)."""
    try:
        with stdout.open("rb") as fh:
            for line in itertools.islice(fh, max_lines):
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if isinstance(event, dict) and event.get("subtype") == "init":
                    return event
    except OSError:
        return None
    return None
