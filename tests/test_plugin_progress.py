"""The progress line: its numbers (pure) and how it is drawn on a real terminal (a pty).

The ``-n 2`` plugin test in ``test_hostile_inputs`` checks the CI-log form against the
manifest; here a pseudo-terminal shows the live form: one line under pytest's own output,
erased before pytest writes and drawn again after, and nothing at all under ``-q``.
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_skilllift.plugin.progress import Progress

from .test_hostile_failed_runs import _project

REPO = Path(__file__).resolve().parents[1]


def _facts(run_id: str, status: str = "ok", wall_s: float | None = 10.0,
           cost: float = 0.5) -> dict[str, object]:
    return {"run_id": run_id, "status": status, "graded": status == "ok",
            "generated_now": wall_s is not None, "gen_cost": cost, "judge_cost": 0.1,
            "wall_s": wall_s}


def test_counts_spend_and_eta_from_the_median_and_the_workers() -> None:
    p = Progress(workers=2, clock=lambda: 1_000_000.0)
    p.set_total([f"r{i}" for i in range(10)], cached={"r8", "r9", "elsewhere"})
    assert p.line().startswith("skill-lift: runs 0/10 · graded 0 · errored 0 · spent $0.00")
    assert "ETA after the first run" in p.line()
    assert p.add(_facts("r0", wall_s=10)) and not p.add(_facts("r0"))  # counted once
    p.add(_facts("r1", wall_s=30))
    p.add(_facts("r2", "timeout", wall_s=600))
    p.add(_facts("r3", "invalid", wall_s=None, cost=0.0))
    p.add(_facts("r8", wall_s=None, cost=0.0))  # read back from the ledger: no time, no cost
    assert (p.done, p.graded, p.errored, p.excluded) == (5, 3, 1, 1)
    assert p.spent == 0.5 * 3 + 0.1 * 5
    # 10 runs − 5 done − r9 already finished in the ledger = 4 to generate; median of the
    # runs generated now is 30 s; two workers: 4 × 30 / 2 = 60 s.
    left, median, workers = p.eta_s() or (0, 0, 0)
    assert (left, median, workers) == (60.0, 30.0, 2)
    assert "· errored 1 · excluded 1 · spent $2.00 · ETA " in p.line()
    assert "(~1m00s left; median 30s/run × 2 workers)" in p.line()


def _pty_run(root: Path, cli: Path, *args: str) -> str:
    """pytest in a pseudo-terminal (its output is a tty); the raw bytes it wrote."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "COLUMNS": "150", "LINES": "40",
           "TERM": "xterm", "ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL":
           "http://127.0.0.1:9"}
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "--skill-lift", "-p", "no:xdist",
                             "-p", "no:cacheprovider", f"--skill-lift-claude={cli}",
                             "--skill-lift-preflight=off", *args],  # no API: a fake CLI
                            cwd=root, env=env, stdin=follower, stdout=follower,
                            stderr=follower, close_fds=True)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(120)
    os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.slow
def test_live_line_on_a_terminal_and_silence_under_q(tmp_path: Path) -> None:
    cli = _project(tmp_path)  # a CLI that fails at once: two quick runs, no model needed
    raw = _pty_run(tmp_path, cli)
    assert "skill-lift: runs 0/2 · graded 0 · errored 0" in raw  # drawn before the first run
    assert "\r\x1b[2K\x1b[1A" in raw  # erased (and the cursor put back) before pytest writes
    final = "skill-lift: runs 2/2 · graded 0 · errored 2 · spent $0.00 · done in"
    assert final in raw
    summary = raw[raw.index("skill lift ="):]
    assert final in summary  # the final counts stay, in the skill lift section
    # The live line never ends up on a line of pytest's own: after the last erase the
    # session's result letters and [100%] follow on the line they belong to.
    tail = raw[raw.rindex("\x1b[2K"):raw.index("skill lift =")]
    assert "skill-lift: runs" not in tail and "[100%]" in tail

    quiet = _pty_run(tmp_path, cli, "-q")
    assert "skill-lift: runs" not in quiet
