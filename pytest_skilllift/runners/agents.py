"""Codex CLI, Gemini CLI and OpenCode: how each is run headless, per agent, identically in
both arms (docs/agents.md has the reasons, one section per agent).

For one run this module decides the command line (the prompt always on standard input), the
environment (a fresh HOME, the agent's own key and base-URL variables and nothing else from
the host), the config files written into that HOME (bundled skills and web tools off in
both arms), where the with-skill arm installs the family (``~/.agents/skills``, the user
scope all three scan) and the pre-flight command that lists the skills the agent sees (none
of the three streams lists them). Claude Code's command line stays in ``runners/claude.py``.

No I/O except :func:`find_cli`, :func:`cli_version` and :func:`npm_install`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from pytest_skilllift.model import (
    AGENT_PACKAGES,
    AGENT_SKILL_ROOT,
    PINNED_AGENT_VERSIONS,
    AgentConfig,
    RunSpec,
)

#: The executable each npm package installs.
BINARIES: dict[str, str] = {"codex": "codex", "gemini-cli": "gemini", "opencode": "opencode"}
#: The one key variable each agent gets, and the variable its base URL is read from.
KEY_VARS: dict[str, str] = {"codex": "OPENAI_API_KEY", "gemini-cli": "GEMINI_API_KEY",
                            "opencode": "ANTHROPIC_API_KEY"}
BASE_URL_VARS: dict[str, str] = {"codex": "OPENAI_BASE_URL",
                                 "gemini-cli": "GOOGLE_GEMINI_BASE_URL",
                                 "opencode": "ANTHROPIC_BASE_URL"}
#: Host variables every agent may need (locale, proxies, CA bundles); nothing else leaks in.
PASSTHROUGH: tuple[str, ...] = ("LANG", "LC_ALL", "TZ", "HTTPS_PROXY", "HTTP_PROXY",
                                "NO_PROXY", "SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS")
#: Gemini CLI's bundled skills, disabled in both arms.
GEMINI_BUILTIN_SKILLS: tuple[str, ...] = ("skill-creator", "antigravity-support")
#: OpenCode's embedded skill, denied in both arms.
OPENCODE_BUILTIN_SKILLS: tuple[str, ...] = ("customize-opencode",)


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


#: OpenCode reads a base URL holding credentials from this variable (``{env:…}`` in its
#: config), so the credentials never land in ``opencode.json``.
OPENCODE_URL_VAR = "SKILLLIFT_OPENCODE_BASE_URL"


class AgentURLError(ValueError):
    """A base URL an agent can only read from a config file holds credentials: refused
    before any run (the message names the variable and the fix)."""


def has_credentials(url: str) -> bool:
    """Whether ``url`` carries ``user[:password]@`` (userinfo)."""
    try:
        return "@" in (urlsplit(url.strip()).netloc or "")
    except ValueError:
        return False


def url_problem(agent: str, env: dict[str, str]) -> str | None:
    """Why ``agent`` cannot be given its base URL from ``env`` without writing a secret to
    disk, or None. Codex reads a base URL only from ``config.toml`` (no variable, no
    substitution): one holding ``user:password@`` is refused; OpenCode reads it through an
    environment variable instead (:data:`OPENCODE_URL_VAR`); Gemini CLI from the environment."""
    var = BASE_URL_VARS.get(agent)
    if agent != "codex" or var is None or not has_credentials(env.get(var, "")):
        return None
    return (f"{var} holds credentials (user:password@host) and Codex reads its base URL only "
            "from config.toml, which would write them to disk in the run's HOME; fix: give "
            f"{var} without credentials and the key in {KEY_VARS[agent]} (Codex sends it as "
            "a bearer token), or put the authentication in a local proxy")


def skill_root(agent: str) -> str:
    """Where the with-skill arm installs the family for ``agent``, relative to HOME."""
    return ".claude/skills" if agent == "claude-code" else AGENT_SKILL_ROOT


def _env(agent: str, cfg: AgentConfig, home: str, base: dict[str, str] | None) -> dict[str, str]:
    source = dict(os.environ if base is None else base)
    source.update(cfg.env)  # the session's values (the demo's key and endpoint) win
    env = {k: source[k] for k in PASSTHROUGH if k in source}
    env["HOME"] = home
    env["PATH"] = source.get("PATH", "/usr/local/bin:/usr/bin:/bin")
    key = KEY_VARS[agent]
    if key in source:
        env[key] = source[key]
    return env


def _toml(value: object) -> str:
    return json.dumps(value)  # a JSON string or bool is a valid TOML basic value


def codex(cli: str, spec: RunSpec, cfg: AgentConfig, home: str,
          base: dict[str, str] | None = None, container: bool = False) -> Invocation:
    """``codex exec --json``, config in ``$CODEX_HOME/config.toml``: bundled skills, plugins,
    the hosted web search, analytics and update checks off; a base URL becomes a provider
    entry (Codex ignores ``OPENAI_BASE_URL``) that reads ``OPENAI_API_KEY``."""
    env = _env("codex", cfg, home, base)
    env["CODEX_HOME"] = f"{home}/.codex"
    source = {**(os.environ if base is None else base), **cfg.env}
    problem = url_problem("codex", source)
    if problem:  # the session refuses it first; never written, whoever calls this
        raise AgentURLError(problem)
    url = source.get(BASE_URL_VARS["codex"], "")
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
                      (".codex", AGENT_SKILL_ROOT),
                      [cli, "debug", "prompt-input", "x"])


def gemini(cli: str, spec: RunSpec, cfg: AgentConfig, home: str,
           base: dict[str, str] | None = None, container: bool = False) -> Invocation:
    """``gemini -o stream-json``, settings in ``~/.gemini/settings.json`` (API-key auth, no
    telemetry or update checks, the bundled skills disabled, web search and fetch
    excluded); the install dir is added to the workspace in both arms, so a ``read_file``
    of the SKILL.md is allowed."""
    env = _env("gemini-cli", cfg, home, base)
    url = {**(os.environ if base is None else base), **cfg.env}.get(
        BASE_URL_VARS["gemini-cli"], "")
    if url:
        env[BASE_URL_VARS["gemini-cli"]] = url
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
        "skills": {"disabled": list(GEMINI_BUILTIN_SKILLS)},
        "tools": {"exclude": ["google_web_search", "web_fetch"]},
    }
    argv = [cli, "-m", spec.agent_model, "--skip-trust", "--yolo", "-o", "stream-json",
            "--include-directories", f"{home}/{AGENT_SKILL_ROOT}"]
    return Invocation(argv, env, {".gemini/settings.json": json.dumps(settings, indent=1)},
                      (".gemini", AGENT_SKILL_ROOT), [cli, "skills", "list"])


def opencode(cli: str, spec: RunSpec, cfg: AgentConfig, home: str,
             base: dict[str, str] | None = None, container: bool = False) -> Invocation:
    """``opencode run --format json``, config in ``~/.config/opencode/opencode.json``: the
    embedded skill denied, web fetch and search denied, no sharing or update; a base URL
    goes to the model's provider options (the key stays in ``ANTHROPIC_API_KEY``)."""
    env = _env("opencode", cfg, home, base)
    env.update(OPENCODE_DISABLE_MODELS_FETCH="1", OPENCODE_DISABLE_AUTOUPDATE="1")
    url = {**(os.environ if base is None else base), **cfg.env}.get(
        BASE_URL_VARS["opencode"], "")
    model = spec.agent_model
    config: dict[str, object] = {
        "$schema": "https://opencode.ai/config.json", "model": model, "small_model": model,
        "autoupdate": False, "share": "disabled",
        "permission": {"skill": {s: "deny" for s in OPENCODE_BUILTIN_SKILLS},
                       "webfetch": "deny", "websearch": "deny"},
    }
    provider = model.partition("/")[0]
    if url and provider:
        base_url = url.rstrip("/")
        base_url = base_url if base_url.endswith("/v1") else base_url + "/v1"
        if has_credentials(base_url):
            # The credentials stay in the environment; OpenCode substitutes {env:…}.
            env[OPENCODE_URL_VAR] = base_url
            base_url = "{env:" + OPENCODE_URL_VAR + "}"
        config["provider"] = {provider: {"options": {"baseURL": base_url}}}
    argv = [cli, "run", "--format", "json", "-m", model]
    return Invocation(argv, env,
                      {".config/opencode/opencode.json": json.dumps(config, indent=1)},
                      (".config/opencode", AGENT_SKILL_ROOT), [cli, "debug", "skill"])


BUILDERS = {"codex": codex, "gemini-cli": gemini, "opencode": opencode}


def invocation(spec: RunSpec, cfg: AgentConfig, home: str,
               base: dict[str, str] | None = None, *, container: bool = False) -> Invocation:
    """The run's :class:`Invocation` for its label's agent (not Claude Code); ``container``
    for the docker runner (the container is the isolation boundary)."""
    cli = cfg.agent_paths.get(spec.agent) or BINARIES[spec.agent]
    return BUILDERS[spec.agent](cli, spec, cfg, home, base, container)


# -- finding and installing the CLIs --------------------------------------------------------


def default_install_dir() -> Path:
    """Where ``--skill-lift-agent-install`` puts the npm CLIs (a per-user cache)."""
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "pytest-skilllift" / "agents"


def find_cli(agent: str, install_dir: Path | None = None) -> str | None:
    """The agent's CLI: on PATH, else in the install dir's ``node_modules/.bin``."""
    on_path = shutil.which(BINARIES[agent])
    if on_path:
        return on_path
    local = (install_dir or default_install_dir()) / "node_modules" / ".bin" / BINARIES[agent]
    return str(local) if local.exists() else None


def missing_cli_message(agent: str) -> str:
    """The usage error for an agent whose CLI is not installed, naming its npm package."""
    pkg = f"{AGENT_PACKAGES[agent]}@{PINNED_AGENT_VERSIONS[agent]}"
    return (f"the {agent} CLI ({BINARIES[agent]}) was not found: a label names agent "
            f"{agent!r}. Install it with npm install -g {pkg} (OpenCode also needs ripgrep, "
            "rg, on PATH), or pass --skill-lift-agent-install to install it into the "
            "per-user cache")


def npm_install(agents: list[str], install_dir: Path, timeout: float = 900) -> str | None:
    """Install the agents' pinned npm packages into ``install_dir``; an error or None."""
    npm = shutil.which("npm")
    if npm is None:
        return "--skill-lift-agent-install needs npm on PATH (Node.js 20 or newer)"
    pkgs = [f"{AGENT_PACKAGES[a]}@{PINNED_AGENT_VERSIONS[a]}" for a in agents]
    install_dir.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--prefix",
                               str(install_dir), *pkgs], capture_output=True, text=True,
                              timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"npm install {' '.join(pkgs)} failed: {exc}"
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        return f"npm install {' '.join(pkgs)} failed (exit {done.returncode}): " + " / ".join(
            tail)
    return None


def cli_version(cli: str, timeout: float = 60.0) -> str:
    """``codex --version`` → ``0.169.0`` (the first x.y.z printed); "" when unreadable."""
    # A throwaway HOME: asking for a version must not leave the CLI's state in the user's.
    with tempfile.TemporaryDirectory(prefix="skilllift-version-") as home:
        try:
            out = subprocess.run([cli, "--version"], capture_output=True, text=True,
                                 timeout=timeout, check=False, cwd=home,
                                 env={"PATH": os.environ.get("PATH", ""), "HOME": home})
        except (OSError, subprocess.TimeoutExpired):
            return ""
    m = re.search(r"\d+\.\d+\.\d+\S*", out.stdout or "")
    return m.group(0) if m else ""
