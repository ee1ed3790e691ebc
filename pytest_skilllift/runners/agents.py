"""The agent CLIs on this machine: finding, installing and asking their versions, and one
run's :class:`Invocation` for its label's agent.

What each agent is (its package and pin, binary, variables, command line and config files,
skill location, listing command) is its module in ``agents/`` (``agents.registry.AGENTS``);
this module is the I/O around it. docs/agents.md has the reasons, one section per agent.
Claude Code's CLI is found by ``runners/claude.py`` (the bundled binary).

No I/O except :func:`find_cli`, :func:`cli_version` and :func:`npm_install`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from pytest_skilllift.agents.base import AgentURLError, Invocation
from pytest_skilllift.agents.opencode import URL_VAR as OPENCODE_URL_VAR
from pytest_skilllift.agents.registry import agent as _agent
from pytest_skilllift.model import AgentConfig, RunSpec

__all__ = ["OPENCODE_URL_VAR", "AgentURLError", "Invocation", "cli_version",
           "default_install_dir", "find_cli", "invocation", "missing_cli_message",
           "npm_install", "skill_root", "url_problem"]


def url_problem(agent: str, env: dict[str, str]) -> str | None:
    """Why ``agent`` cannot be given its base URL from ``env`` without writing a secret to
    disk (its module's ``url_problem``: Codex), or None."""
    check = _agent(agent).url_problem
    return check(env) if check is not None else None


def skill_root(agent: str) -> str:
    """Where the with-skill arm installs the family for ``agent``, relative to HOME."""
    return _agent(agent).skill_root


def invocation(spec: RunSpec, cfg: AgentConfig, home: str,
               base: dict[str, str] | None = None, *, container: bool = False) -> Invocation:
    """The run's :class:`Invocation` for its label's agent (not Claude Code); ``container``
    for the docker runner (the container is the isolation boundary)."""
    defn = _agent(spec.agent)
    cli = cfg.agent_paths.get(spec.agent) or defn.binary
    return defn.invocation(cli, spec, cfg, home, base, container)


# -- finding and installing the CLIs --------------------------------------------------------


def default_install_dir() -> Path:
    """Where ``--skill-lift-agent-install`` puts the npm CLIs (a per-user cache)."""
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "pytest-skilllift" / "agents"


def find_cli(agent: str, install_dir: Path | None = None) -> str | None:
    """The agent's CLI: on PATH, else in the install dir's ``node_modules/.bin``."""
    binary = _agent(agent).binary
    on_path = shutil.which(binary)
    if on_path:
        return on_path
    local = (install_dir or default_install_dir()) / "node_modules" / ".bin" / binary
    return str(local) if local.exists() else None


def missing_cli_message(agent: str) -> str:
    """The usage error for an agent whose CLI is not installed, naming its npm package."""
    defn = _agent(agent)
    needs = "".join(f" ({defn.title} also needs {what} on PATH)"
                    for _b, _d, what, _h in defn.image.extra) if defn.image else ""
    return (f"the {agent} CLI ({defn.binary}) was not found: a label names agent "
            f"{agent!r}. Install it with npm install -g {defn.pinned}{needs}, or pass "
            "--skill-lift-agent-install to install it into the per-user cache")


def npm_install(agents: list[str], install_dir: Path, timeout: float = 900) -> str | None:
    """Install the agents' pinned npm packages into ``install_dir``; an error or None."""
    npm = shutil.which("npm")
    if npm is None:
        return "--skill-lift-agent-install needs npm on PATH (Node.js 20 or newer)"
    pkgs = [_agent(a).pinned for a in agents]
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
