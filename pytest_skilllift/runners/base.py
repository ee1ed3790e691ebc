"""The Runner protocol: every runner (local temp-HOME, docker) satisfies it."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from pytest_skilllift.agents.claude_code import init_event
from pytest_skilllift.model import AgentConfig, RunOutcome, RunSpec


class Runner(Protocol):
    """Runs one (prompt, model, condition, rep) with the real CLI.

    Contract:
    - a fresh environment per run: nothing persists from one run to the next;
    - the arms that install skills (``spec.with_skill``: with-skill, with-all) install the
      prompt's whole skill family at ``~/.claude/skills/<family>/`` (plus
      ``prompt.sibling_families`` the same way: every family for the with-all arm and for
      trigger tests with every family installed); the no-skill arms install nothing;
    - ``prompt.files`` (skill-creator eval inputs) are placed in the working directory of
      both arms;
    - the prompt is passed on the CLI's standard input (never in argv, never through a
      shell), so a leading ``-`` or a prompt over the OS argument limit works;
    - a skill family (and each sibling family) is installed with its internal symlinks kept
      as links; a link that leaves its family refuses the install
      (``RunOutcome(invalid_install=True)``);
    - stdout is streamed to ``run_dir / STDOUT_FILE`` as it arrives, stderr to ``STDERR_FILE``;
    - a timeout kills the run and returns ``RunOutcome(timed_out=True, error=...)``;
    - secrets in ``cfg.env`` are passed to the process but never written to disk.
    """

    name: str

    def run(self, spec: RunSpec, cfg: AgentConfig, run_dir: Path) -> RunOutcome:
        """Execute one run, writing the transcript into ``run_dir``."""
        ...

    def close(self) -> None:
        """Release resources (clients, leftover containers)."""
        ...


def transcript_cli_version(stdout_path: Path, max_lines: int = 50) -> str:
    """``claude_code_version`` from the transcript's init event; ``""`` when absent.

    Read from the run's own output, so no extra process is spawned to ask the CLI.
    """
    event = init_event(stdout_path, max_lines)
    return str(event.get("claude_code_version") or "") if event is not None else ""
