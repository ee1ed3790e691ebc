"""Finding the Claude Code CLI and reading its version (the I/O of one agent; its command
line and environment are in ``agents/claude_code.py``, with the rest of its definition).
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path


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
