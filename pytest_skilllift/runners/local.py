"""The local runner: the real CLI in a fresh temporary HOME and an empty working directory.

Each run gets its own ``tempfile.mkdtemp`` tree (``home/`` and ``work/``), removed afterwards,
so nothing persists between runs: no session history, no settings, no skills other than the
one the with-skill arm installs. The CLI writes its own state (``.claude.json``, backups,
plugin stores) into that HOME; none of it is ever copied into the run directory.

Not a sandbox: the CLI runs as the invoking user, so its tools can read whatever that user can
read by absolute path. The docker runner is the isolation boundary.

Secrets: ``cfg.env`` values are handed to the child process only. The transcript and stderr
are streamed through a redactor on their way to disk, so even a CLI that echoed its key
would not leave it in ``run_dir``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from pytest_skilllift.agents.claude_code import build_argv, build_env
from pytest_skilllift.model import CLAUDE_CODE, AgentConfig, RunOutcome, RunSpec
from pytest_skilllift.runners import agents
from pytest_skilllift.runners.agents import skill_root
from pytest_skilllift.runners.base import transcript_cli_version
from pytest_skilllift.runners.inflight import Inflight, RunInterrupted
from pytest_skilllift.runners.install import InstallError, check_family, copy_family, install_root
from pytest_skilllift.runners.outage import watch_for
from pytest_skilllift.runners.redaction import redact, redact_text, secret_values
from pytest_skilllift.week.files import AGENT_SKILLS_FILE, STDERR_FILE, STDOUT_FILE, utc_stamp


def _pump(src: IO[bytes], dest: Path, secrets: list[bytes],
          on_line: Callable[[bytes], object] | None = None,
          failed: list[OSError] | None = None) -> None:
    """Copy a child's stream to ``dest`` line by line as it arrives, redacting secrets.

    Line-buffered so ``stdout.txt`` can be tailed during a run; a secret split across two
    reads cannot slip through because redaction works on whole lines. ``on_line`` sees each
    line as it arrives (the outage watch). A write that fails (the week's disk is full) goes
    to ``failed`` and the pipe is still drained, or the CLI would block on a full one until
    the timeout; the runner raises it after the run.
    """
    try:
        with dest.open("wb") as out:
            for line in iter(src.readline, b""):
                out.write(redact(line, secrets))
                out.flush()
                if on_line is not None:
                    on_line(line)
    except OSError as exc:
        if failed is None:
            raise
        failed.append(exc)
        for _line in iter(src.readline, b""):
            pass


def _kill_group(proc: subprocess.Popen[bytes], grace_s: float) -> None:
    """SIGTERM the whole process group, then SIGKILL after ``grace_s``."""
    try:
        pgid = os.getpgid(proc.pid)
    except ProcessLookupError:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace_s)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace_s)


class LocalRunner:
    """Runs the CLI as a local subprocess (satisfies :class:`runners.base.Runner`).

    ``tmp_root`` chooses where the per-run temp trees go (default: the system temp dir);
    ``keep_home`` leaves them in place for debugging (never in scored runs: the CLI's state
    files stay on disk); ``kill_grace_s`` is how long a timed-out or interrupted run gets
    between SIGTERM and SIGKILL. ``inflight`` is the session's registry of runs in flight
    (:mod:`~pytest_skilllift.runners.inflight`): each CLI's process group and temp tree are
    listed there while it runs, so an interrupt in any process of the session stops it.
    ``watch_outages`` stops a run whose API calls fail for a reason no retry can fix
    (:mod:`~pytest_skilllift.runners.outage`).
    """

    name = "local"

    def __init__(self, *, tmp_root: str | Path | None = None, keep_home: bool = False,
                 kill_grace_s: float = 2.0, inflight: Inflight | None = None,
                 watch_outages: bool = True) -> None:
        self.tmp_root = str(tmp_root) if tmp_root is not None else None
        self.keep_home = keep_home
        self.kill_grace_s = kill_grace_s
        self._versions: dict[str, str] = {}
        self.inflight = inflight
        self.watch_outages = watch_outages

    def install_skill(self, spec: RunSpec, cfg: AgentConfig, home: Path) -> str | None:
        """Install the prompt's whole family for the with-skill arm; an error or None.

        Symlinks inside the family are kept as links; one that leaves the family refuses
        the install (see :mod:`~pytest_skilllift.runners.install`).
        """
        if not spec.with_skill:
            return None
        # Normally one family; trigger tests with every family installed list siblings too.
        # Each family is checked before any is copied: one refused link refuses the install.
        families = spec.prompt.installed_families
        for family in families:
            error = check_family(install_root(spec.prompt, cfg.skills_root) / family,
                                 cfg.max_family_bytes,
                                 allow_unsafe=cfg.allow_unsafe, timeout_s=cfg.timeout_s)
            if error is not None:
                return error
        for family in families:
            # Where this label's agent discovers skills (docs/agents.md).
            dest = home / skill_root(spec.agent) / family
            dest.parent.mkdir(parents=True, exist_ok=True)
            # Whole family: sub-skills and references are part of what is being measured.
            try:
                copy_family(install_root(spec.prompt, cfg.skills_root) / family, dest)
            except InstallError as exc:
                return str(exc)
        return None

    def _agent_version(self, cli: str) -> str:
        """The agent CLI's version, asked once per runner (its stream does not say)."""
        if cli not in self._versions:
            self._versions[cli] = agents.cli_version(cli)
        return self._versions[cli]

    @staticmethod
    def _prepare_agent(inv: agents.Invocation, home: Path, work: Path, run_dir: Path,
                       timeout_s: float) -> None:
        """Another agent's config files and empty skill dirs (both arms), then its skill
        listing into ``AGENT_SKILLS_FILE`` (the availability signal; redacted like stdout)."""
        for rel in inv.dirs:
            (home / rel).mkdir(parents=True, exist_ok=True)
        for rel, text in inv.files.items():
            path = home / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        listing = run_dir / AGENT_SKILLS_FILE
        try:
            done = subprocess.run(inv.preflight, cwd=work, env=inv.env, stdin=subprocess.DEVNULL,
                                  capture_output=True, timeout=timeout_s, check=False)
            data = done.stdout if done.returncode == 0 else (
                f"listing command exited {done.returncode}\n".encode() + done.stderr[-2000:])
        except (OSError, subprocess.TimeoutExpired) as exc:
            data = f"listing command failed: {exc}\n".encode()
        listing.write_bytes(redact(data, secret_values(inv.env)))

    @staticmethod
    def place_files(spec: RunSpec, work: Path) -> None:
        """Copy the prompt's input files (skill-creator ``files``) into the working dir."""
        for rel, src in spec.prompt.files:
            dest = work / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest)

    def run(self, spec: RunSpec, cfg: AgentConfig, run_dir: Path) -> RunOutcome:
        """Execute one run; ``stdout.txt``/``stderr.txt`` are written into ``run_dir``."""
        run_dir = Path(run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        stdout_path, stderr_path = run_dir / STDOUT_FILE, run_dir / STDERR_FILE
        t0 = time.time()
        started = utc_stamp(t0)
        # Our own messages about the run are redacted like the CLI's output.
        secrets = secret_values(build_env(cfg, ""))

        version = ""

        def outcome(exit_code: int | None, *, timed_out: bool = False,
                    error: str | None = None, invalid_install: bool = False,
                    outage: str = "") -> RunOutcome:
            t1 = time.time()
            return RunOutcome(
                exit_code=exit_code, started_utc=started, ended_utc=utc_stamp(t1),
                wall_ms=int((t1 - t0) * 1000), timed_out=timed_out,
                error=None if error is None else redact_text(error, secrets),
                runner=self.name, cli_version=version or transcript_cli_version(stdout_path),
                invalid_install=invalid_install, outage=outage,
            )

        if self.inflight is not None:
            self.inflight.check_not_stopping()
        root = Path(tempfile.mkdtemp(prefix="skilllift-", dir=self.tmp_root))
        try:
            home, work = root / "home", root / "work"
            home.mkdir()
            work.mkdir()
            invalid = True
            try:
                err = self.install_skill(spec, cfg, home)
                self.place_files(spec, work)
            except OSError as exc:  # the disk, not the skill: worth a retry
                err, invalid = f"installing skill {spec.prompt.family!r} failed: {exc}", False
            if err:
                stdout_path.write_bytes(b"")
                stderr_path.write_text(redact_text(err, secrets) + "\n")
                return outcome(None, error=err, invalid_install=invalid)
            # The prompt goes in on standard input, not argv: a prompt starting with "-" is
            # not read as an option, and no OS limit on one argument (128 KiB) applies.
            prompt_file = root / "prompt.txt"
            prompt_file.write_text(spec.prompt.prompt, encoding="utf-8")

            if spec.agent == CLAUDE_CODE:
                argv = build_argv(cfg.claude_path, spec, cfg)
                env = build_env(cfg, str(home))
            else:
                inv = agents.invocation(spec, cfg, str(home))
                argv, env = inv.argv, inv.env
                self._prepare_agent(inv, home, work, run_dir, min(120.0, cfg.timeout_s))
                version = self._agent_version(argv[0])
            secrets = secret_values(env)
            try:
                with prompt_file.open("rb") as stdin:
                    proc = subprocess.Popen(
                        argv, cwd=work, env=env, stdin=stdin,
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        start_new_session=True,  # own process group: a timeout kills it all
                    )
            except (OSError, ValueError) as exc:
                err = f"could not start {cfg.claude_path!r}: {exc}"
                prompt_file.unlink(missing_ok=True)
                stdout_path.write_bytes(b"")
                stderr_path.write_text(redact_text(err, secrets) + "\n")
                return outcome(None, error=err)

            prompt_file.unlink()  # the CLI holds it open; nothing else needs to see it
            token = None
            try:
                if self.inflight is not None:
                    token = self.inflight.add(spec.run_id, pgid=proc.pid, temp=root)
                return self._wait(proc, spec, cfg, env, stdout_path, stderr_path, secrets,
                                  outcome)
            except KeyboardInterrupt:
                # Ctrl-C, SIGTERM/SIGHUP (the plugin's handlers), or another process of the
                # session stopping it: the CLI's whole group goes, the run is not recorded.
                _kill_group(proc, self.kill_grace_s)
                if token is not None and self.inflight is not None:
                    self.inflight.mark_stopped(token)
                    token = None
                raise
            finally:
                if token is not None and self.inflight is not None:
                    self.inflight.done(token)
        finally:
            if not self.keep_home:
                shutil.rmtree(root, ignore_errors=True)

    def _wait(self, proc: subprocess.Popen[bytes], spec: RunSpec, cfg: AgentConfig,
              env: dict[str, str], stdout_path: Path, stderr_path: Path,
              secrets: list[bytes], outcome: Callable[..., RunOutcome]) -> RunOutcome:
        """Stream the CLI's output until it ends, times out, hits an outage or the session
        stops (then :class:`RunInterrupted`)."""
        # Claude Code's environment holds its base URL; another agent's URL may live in its
        # config file only, so it is read where the invocation read it.
        watch = (watch_for(spec.agent, spec.model_id,
                           env if spec.agent == CLAUDE_CODE else {**os.environ, **cfg.env})
                 if self.watch_outages else None)
        assert proc.stdout is not None and proc.stderr is not None
        failed: list[OSError] = []  # a transcript write that failed (raised after the run)
        pumps = [
            threading.Thread(target=_pump, daemon=True, args=(
                proc.stdout, stdout_path, secrets, watch.feed if watch else None, failed)),
            threading.Thread(target=_pump, daemon=True, args=(
                proc.stderr, stderr_path, secrets, watch.feed_stderr if watch else None,
                failed)),
        ]
        for th in pumps:
            th.start()
        deadline = time.monotonic() + cfg.timeout_s
        stop: str | None = None  # why the runner ended the run itself
        while proc.poll() is None:
            if watch is not None and watch.tick() is not None:
                stop = "outage"
            elif self.inflight is not None and self.inflight.stopping:
                stop = "interrupt"
            elif time.monotonic() >= deadline:
                stop = "timeout"
            if stop is not None:
                _kill_group(proc, self.kill_grace_s)
                break
            # Short slices: the outage watch and the session's stop are seen within 0.2 s.
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=min(0.2, max(0.0, deadline - time.monotonic())))
        else:
            # Tool subprocesses the CLI left behind must not outlive the run.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
        for th in pumps:
            th.join(timeout=10)
        if failed:  # the transcript is not whole: the run's files could not be saved
            raise failed[0]
        if stop == "interrupt" or (self.inflight is not None and self.inflight.stopping
                                   and proc.returncode != 0):
            raise RunInterrupted("the session was interrupted while the run was in flight")
        gave_up = stop is None and watch is not None and watch.ended(proc.returncode)
        if gave_up or (stop == "outage" and watch is not None and watch.cause is not None):
            assert watch is not None and watch.cause is not None
            with stderr_path.open("a", encoding="utf-8") as err:
                # a refused key the CLI gave up on by itself, or the runner stopped it
                err.write(f"skilllift: {watch.cause}"
                          f"{'' if gave_up else '; the CLI was stopped'}\n")
            return outcome(proc.returncode, error=watch.cause, outage=watch.cause)
        if stop == "timeout":
            return outcome(
                proc.returncode, timed_out=True,
                error=f"timed out after {cfg.timeout_s:g}s; process group killed",
            )
        return outcome(proc.returncode)

    def close(self) -> None:
        """Nothing to release: every run cleans up after itself."""
