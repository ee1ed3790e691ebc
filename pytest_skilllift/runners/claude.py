"""The Claude Code command line and environment, shared by every runner.

Both arms get exactly the same argv apart from the prompt text (tool parity,
qdrant/skills SCORING.md).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

from pytest_skilllift.model import AgentConfig, RunSpec

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


def bundled_claude() -> Path | None:
    """The CLI binary shipped in the ``claude-agent-sdk`` wheel, when installed."""
    # find_spec locates the package without importing it (the import costs ~0.7 s of CPU in
    # every process, for a file path).
    spec = importlib.util.find_spec("claude_agent_sdk")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "_bundled" / "claude"
    return path if path.is_file() else None


def find_claude(explicit: str | None) -> str | None:
    """``--skill-lift-claude``, else ``claude`` on PATH, else the bundled binary."""
    if explicit:
        return explicit
    on_path = shutil.which("claude")
    if on_path:
        return on_path
    bundled = bundled_claude()
    return str(bundled) if bundled else None


def cli_version(claude: str, timeout: float = 60.0) -> str:
    """``claude --version`` → ``2.1.332``; empty string when it cannot be read."""
    try:
        out = subprocess.run(
            [claude, "--version"], capture_output=True, text=True, timeout=timeout, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.strip().split(" ", 1)[0] if out.strip() else ""
