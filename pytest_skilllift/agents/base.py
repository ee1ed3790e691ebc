"""What an agent module declares (:class:`Agent`), and the pieces every agent shares.

An agent module builds one :class:`Agent`; :mod:`.registry` collects them. Pure logic.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import quote, urlsplit

from pytest_skilllift.model import AgentConfig, RunSpec, key_refused

#: Where Codex CLI, Gemini CLI and OpenCode find the installed skills, relative to HOME (the
#: user scope all three scan: docs/agents.md); their runners install there, their stream
#: parsers read file reads under it as reads of the skill.
AGENT_SKILL_ROOT = ".agents/skills"
#: Host variables every agent may need (locale, proxies, CA bundles); nothing else leaks in.
PASSTHROUGH: tuple[str, ...] = ("LANG", "LC_ALL", "TZ", "HTTPS_PROXY", "HTTP_PROXY",
                                "NO_PROXY", "SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS")


@dataclass(frozen=True)
class Invocation:
    """Everything a runner needs to start one agent run in a fresh HOME."""

    argv: list[str]
    env: dict[str, str]
    #: Files to write, relative to HOME (config only: never a key).
    files: dict[str, str] = field(default_factory=dict)
    #: Directories to create empty in both arms (the install location among them).
    dirs: tuple[str, ...] = ()
    #: The listing command, run in the same HOME and cwd before the run.
    preflight: list[str] = field(default_factory=list)


#: ``builder(cli, spec, cfg, home, base, container)``: ``base`` the host environment (None:
#: ``os.environ``), ``container`` for the docker runner (the container is the isolation).
Builder = Callable[[str, RunSpec, AgentConfig, str, dict[str, str] | None, bool], Invocation]


@dataclass(frozen=True)
class ImageLayout:
    """How ``skilllift image add-agents`` copies an npm-installed CLI into an image.

    ``native``: the platform binary npm put below ``node_modules/<under>`` (name, under),
    copied to ``/usr/local/bin/<binary>``; else ``node_bundle``: the package's files under
    ``/opt/skilllift/<agent>`` with node and a wrapper on PATH. ``extra``: other host
    binaries the CLI needs, as (binary, destination, what it is, how to install it)."""

    native: tuple[str, str] | None = None
    node_bundle: bool = False
    extra: tuple[tuple[str, str, str, str], ...] = ()


#: One outage fact read from a CLI's line: a retry (``status``: an HTTP status, None for a
#: failed connection, 0 for neither), the final error it gave up on (``status`` and
#: ``words``), ``unreachable`` (it gave up connecting; ``words`` its own), or ``arm`` (an
#: error report starts; its status may come on a later line).
OutageKind = Literal["retry", "final", "unreachable", "arm"]
#: The HTTP statuses that say "slow down": rate limited, overloaded.
RATE_LIMIT_STATUSES = frozenset({429, 529})
#: What every outage event on an agent's stdout holds: an ``"error"`` key or value (Claude
#: Code's retries and result, Codex's, Gemini CLI's and OpenCode's error events) or Claude
#: Code's ``api_error…`` keys. A line without one is not parsed (most lines of a transcript).
OUTAGE_WORDS: tuple[bytes, ...] = (b'"error"', b'"api_error')


@dataclass(frozen=True)
class OutageSignal:
    kind: OutageKind
    status: int | None = None
    words: str = ""
    #: Before a retry: the wait the CLI announced (ms; 0 when it does not say).
    wait_ms: int = 0

    @property
    def rate_limited(self) -> bool:
        """A retry for a rate limit or an overload (429, 529): the session's concurrency
        limit and the manifest's ``rate_limit_*`` columns count it (``run.ratelimits``)."""
        return self.kind == "retry" and self.status in RATE_LIMIT_STATUSES


def outage_event_of(line: bytes | str) -> dict[str, Any] | None:
    """One stdout line as the JSON event an outage reader reads; None when it holds none of
    :data:`OUTAGE_WORDS` (decided without parsing) or is not a JSON object."""
    raw = line.encode() if isinstance(line, str) else line
    if not any(word in raw for word in OUTAGE_WORDS):
        return None
    try:
        event = json.loads(raw)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


@dataclass(frozen=True)
class ModelProbe:
    """How the preflight asks an agent's API, once per model and before any run, whether
    a label's model exists: the cheapest call that API offers (a free model lookup).

    ``endpoint(env)``: the base URL, the request headers (the key in them) and the name of
    the variable that holds the key, from the session's environment; None when this API
    cannot be asked (Claude Code on Bedrock / Vertex). ``model_path(model_id)``: the path
    after the base URL that looks the model up; ``list_path`` when only the key can be
    checked (a name the CLI resolves itself); None when the model is not checked at all
    (an OpenCode provider other than Anthropic). ``list_path``: the model listing, asked
    after a 404 to tell a gateway without a models API (404 too) from a missing model.
    ``refused(status, body)``: whether an answer refuses the key (401/403 by default;
    Gemini answers 400 ``API_KEY_INVALID``). ``known``: ids offered as "did you mean"."""

    endpoint: Callable[[Mapping[str, str]], tuple[str, dict[str, str], str] | None]
    model_path: Callable[[str], str | None]
    list_path: str
    known: tuple[str, ...] = ()
    refused: Callable[[int, str], bool] = lambda status, body: status in (401, 403)


#: Reads one JSON event of the CLI's stdout (its own error events); None when it is not one.
EventOutage = Callable[[dict[str, Any]], OutageSignal | None]
#: Reads one stderr line (``armed``: an error report began on an earlier line).
StderrOutage = Callable[[str, bool], OutageSignal | None]
#: ``reader(lines, out, bodies)``: the agent's decoded stream events → Claude-shaped events
#: on ``out`` (an :class:`~pytest_skilllift.agents.events.EventBuilder`); ``bodies`` the
#: installed SKILL.md texts by skill name.
StreamReader = Callable[[list[dict[str, Any]], Any, Mapping[str, str]], None]


@dataclass(frozen=True)
class Agent:
    """One agent CLI, as every part of skilllift needs it."""

    #: The label prefix (``codex`` in ``gpt=codex:gpt-5.5``) and the week's agent column.
    name: str
    #: Its name in messages and docs (``Codex CLI``).
    title: str
    #: The registry package its CLI comes from, and which registry (npm, or pip for Claude
    #: Code, whose CLI is bundled in the ``claude-agent-sdk`` wheel).
    package: str
    registry: Literal["npm", "pip"]
    #: The CLI version it was verified with (docs/agents.md): installed by
    #: ``--skill-lift-agent-install``, ``.ci/run``'s install line, flagged by provenance when
    #: a run reports another; "" when not pinned here (Claude Code: ``PINNED_CLI_VERSION``).
    version: str
    #: The executable the package installs.
    binary: str
    #: The one key variable the run gets, and the variable its base URL is read from.
    key_var: str
    base_url_var: str
    #: The API when the base-URL variable is not set.
    default_url: str
    #: What the local stand-in's URL needs after it for this agent's API (Codex: ``/v1``).
    stand_in_path: str
    #: Where the with-skill arm installs the family, relative to HOME.
    skill_root: str
    #: The command line, environment and config files of one headless run.
    invocation: Builder
    #: The listing command's arguments after the binary; () when the stream lists skills.
    listing_args: tuple[str, ...] = ()
    #: Skill names in the listing command's output (None: not a listing at all); None when
    #: the agent's own stream lists them (Claude Code's init event).
    listed_skills: Callable[[str], tuple[str, ...] | None] | None = None
    #: Its event stream → Claude-shaped events; None for Claude Code's own stream-json.
    read_stream: StreamReader | None = None
    #: Its outage messages on stdout (one JSON event) and stderr (one line): the errors it
    #: gives up on and each retry it announces, with the retry's HTTP status — one reader
    #: for ``runners.outage`` (a refused key, a missing model, no connection) and
    #: ``run.ratelimits`` (429 / 529: :attr:`OutageSignal.rate_limited`). None: it says
    #: nothing there (OpenCode retries silently).
    outage_event: EventOutage | None = None
    outage_stderr: StderrOutage | None = None
    #: How ``skilllift image add-agents`` adds it; None: the base image has it.
    image: ImageLayout | None = None
    #: USD per million tokens (input, output) of its models, for a stream that reports
    #: tokens but no cost; from the providers' public price lists (openai.com/api/pricing,
    #: ai.google.dev/gemini-api/docs/pricing, anthropic.com/pricing).
    prices: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    #: Its bundled skills, turned off in both arms.
    builtin_skills: tuple[str, ...] = ()
    #: Why its base URL in this environment cannot be given to it without writing a secret
    #: to disk (None: it can); the session refuses such a label before any run.
    url_problem: Callable[[Mapping[str, str]], str | None] | None = None
    #: How the preflight checks its labels' models before any run (None: not checked).
    model_probe: ModelProbe | None = None
    #: When the API a run reaches depends on its model (OpenCode: the model's provider),
    #: the provider of a model id: its key variable (the one key the run gets) and its
    #: probe (None: a provider no lookup is known for, named as not checked).
    provider: Callable[[str], tuple[str, ModelProbe | None] | None] | None = None
    #: Its tools that write files and run commands, which a Harbor task run allows in both
    #: arms alike (recorded as the run's ``task_tools``): how its invocation allows them in
    #: a container (Codex's sandbox bypass, Gemini CLI's ``--yolo``, OpenCode's permission
    #: config). Claude Code's are its allow-list plus ``runners.task_docker.WRITE_TOOLS``.
    task_tools: tuple[str, ...] = ()

    @property
    def pinned(self) -> str:
        """``@openai/codex@0.169.0``: what ``npm install`` is given (the bare package when
        not pinned here)."""
        return f"{self.package}@{self.version}" if self.version else self.package

    def key_var_for(self, model_id: str) -> str:
        """The key variable a run of ``model_id`` (after the agent prefix) gets."""
        known = self.provider(model_id) if self.provider is not None else None
        return known[0] if known is not None else self.key_var

    def probe_for(self, model_id: str) -> ModelProbe | None:
        """How the preflight asks about ``model_id``'s model (None: it cannot be asked)."""
        if self.provider is None:
            return self.model_probe
        known = self.provider(model_id)
        return known[1] if known is not None else None


def isolated_env(agent: Agent, cfg: AgentConfig, home: str,
                 base: dict[str, str] | None, model_id: str = "") -> dict[str, str]:
    """A run's environment: a fresh HOME, the host's PATH and :data:`PASSTHROUGH`, and the
    agent's key variable for ``model_id`` (:meth:`Agent.key_var_for`; the session's
    ``cfg.env`` wins over the host's); nothing else."""
    source = dict(os.environ if base is None else base)
    source.update(cfg.env)  # the session's values (the demo's key and endpoint) win
    env = {k: source[k] for k in PASSTHROUGH if k in source}
    env["HOME"] = home
    env["PATH"] = source.get("PATH", "/usr/local/bin:/usr/bin:/bin")
    key_var = agent.key_var_for(model_id)
    if key_var in source:
        env[key_var] = source[key_var]
    return env


def anthropic_probe_headers(key: str, bearer: bool = False) -> dict[str, str]:
    """The headers of an Anthropic Models API call (``GET /v1/models/{id}``), the key as
    ``x-api-key`` or, for ``ANTHROPIC_AUTH_TOKEN``, a bearer token."""
    headers = {"anthropic-version": "2023-06-01", "accept": "application/json"}
    headers["authorization" if bearer else "x-api-key"] = f"Bearer {key}" if bearer else key
    return headers


def bearer_probe_headers(key: str) -> dict[str, str]:
    """The headers of an OpenAI Models API call (``GET /v1/models/{id}``): a bearer key."""
    return {"authorization": f"Bearer {key}", "accept": "application/json"}


def gemini_probe_headers(key: str) -> dict[str, str]:
    """The headers of a Gemini API model lookup (``GET v1beta/models/{id}``)."""
    return {"x-goog-api-key": key, "accept": "application/json"}


def gemini_refused(status: int, body: str) -> bool:
    """The Gemini API refuses a bad key with 400 ``API_KEY_INVALID`` (a missing one 403):
    :func:`~pytest_skilllift.model.key_refused`, the rule the judges share."""
    return key_refused(status, body)


def quoted(model_id: str) -> str:
    """A model id as one path segment."""
    return quote(model_id, safe="")


class AgentURLError(ValueError):
    """A base URL an agent can only read from a config file holds credentials: refused
    before any run (the message names the variable and the fix)."""


def has_credentials(url: str) -> bool:
    """Whether ``url`` carries ``user[:password]@`` (userinfo)."""
    try:
        return "@" in (urlsplit(url.strip()).netloc or "")
    except ValueError:
        return False


def base_url(agent: Agent, cfg: AgentConfig, base: dict[str, str] | None) -> str:
    """The agent's base URL from the session (``cfg.env``) or the host; "" when unset."""
    return {**(os.environ if base is None else base), **cfg.env}.get(agent.base_url_var, "")


#: An HTTP status in a CLI's error text (Codex: "unexpected status 401 Unauthorized",
#: Gemini CLI: "status: 401", OpenCode: "statusCode":401).
_STATUS = re.compile(r"(?:unexpected status|status(?:Code)?\W{0,3})\s*(\d{3})\b", re.I)
#: The Anthropic error types, for a message that carries no status.
_ERROR_TYPES = {"authentication_error": 401, "permission_error": 403, "not_found_error": 404}
#: A request that never got an answer (Codex's and Gemini CLI's words).
NO_CONNECTION = re.compile(r"Connection failed|error sending request|fetch failed|"
                           r"ECONNREFUSED|ENOTFOUND|EAI_AGAIN|certificate|TLS|SSL", re.I)


def status_in(text: str) -> int | None:
    """The HTTP status an error message names, or None."""
    found = _STATUS.search(text)
    if found:
        return int(found.group(1))
    return next((code for name, code in _ERROR_TYPES.items() if name in text), None)


def retry_status(text: str) -> int | None:
    """A retry message's status: the HTTP status it names, None for a connection that
    failed, 0 for neither (a retry of some other fault)."""
    status = status_in(text)
    return status if status else None if NO_CONNECTION.search(text) else 0
