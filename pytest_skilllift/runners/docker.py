"""The docker runner: every run in its own fresh container (qdrant/skills SCORING.md,
"Weekly Run").

One run is one container, created from the configured image and removed right after:

1. ``create`` — uniquely named ``skilllift-<run_id>-<random>``, labelled
   (:data:`LABEL_RUN_ID`, :data:`LABEL_WEEK`, owner and deadline for :func:`sweep_stale`), as
   the image's non-root user, with memory / pids / CPU limits, all capabilities dropped,
   ``no-new-privileges``, no mounts at all, and a *keeper* command (``sleep``) as its main
   process under tini;
2. with-skill only: ``put_archive`` of the skill family into ``~/.claude/skills/<family>/``,
   owned by the agent user (no host directory is ever mounted);
3. ``start``, then ``exec`` the CLI with :func:`~pytest_skilllift.agents.claude_code.build_argv`
   and the environment from :func:`~pytest_skilllift.agents.claude_code.build_env`. The prompt
   reaches the CLI on standard input from a file copied in with the skill (removed before
   the CLI starts; no shell parses it), and the exec carries its own hard deadline
   (``timeout -s KILL``), so an agent outlives neither its run's timeout nor a SIGKILLed
   session by more than :data:`EXEC_GRACE_S`;
4. the exec's stdout/stderr are demultiplexed and written to ``stdout.txt``/``stderr.txt``
   as they arrive; a timeout kills the container;
5. ``remove`` in a ``finally`` — on success, failure, timeout and KeyboardInterrupt.

Why ``exec`` rather than the CLI as the container's command: the run's environment (which
holds the API key) is given to the exec only, so it is not in the container's config and
``docker inspect <container>`` does not show it (exec inspection shows argv, never env). The
keeper's ``sleep`` is bounded by the run's timeout plus a grace period, so a container whose
session was SIGKILLed stops on its own, and :func:`sweep_stale` removes it at the next start
and again when a session ends (a container a dying session was still creating may appear
after the next session's start-up sweep).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import math
import os
import re
import secrets
import socket
import tarfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import docker.client
import docker.errors

from pytest_skilllift.agents.claude_code import build_argv, build_env
from pytest_skilllift.agents.registry import others
from pytest_skilllift.config import option_default
from pytest_skilllift.model import (
    CLAUDE_CODE,
    PINNED_CLI_VERSION,
    AgentConfig,
    RunOutcome,
    RunSpec,
    cli_version_mismatch,
)
from pytest_skilllift.runners import agents
from pytest_skilllift.runners.agent_image import image_agent_versions
from pytest_skilllift.runners.agents import skill_root
from pytest_skilllift.runners.base import transcript_cli_version
from pytest_skilllift.runners.image import (
    AGENT_GID,
    AGENT_HOME,
    AGENT_UID,
    AGENT_USER,
    AGENT_WORKDIR,
    IMAGE_CLAUDE,
    LABEL_CLAUDE,
    LABEL_HOME,
    LABEL_INIT,
    LABEL_USER,
    LABEL_WORKDIR,
    image_cli_version,
)
from pytest_skilllift.runners.inflight import Inflight, RunInterrupted
from pytest_skilllift.runners.install import check_family, family_entries, install_root
from pytest_skilllift.runners.outage import OutageWatch, watch_for
from pytest_skilllift.runners.redaction import redact, secret_values
from pytest_skilllift.week.files import AGENT_SKILLS_FILE, STDERR_FILE, STDOUT_FILE, utc_stamp

LABEL_RUN_ID = "skilllift.run_id"
LABEL_WEEK = "skilllift.week"
#: ``<hostname>:<pid>`` of the session that made the container (stale when that pid is gone).
LABEL_OWNER = "skilllift.owner"
#: Epoch seconds after which the container is stale whoever owns it (timeout + grace).
LABEL_DEADLINE = "skilllift.deadline"

#: Seconds the keeper outlives the run's timeout: time for the runner's own kill and removal.
KEEPER_GRACE_S = 120
#: Seconds the exec's own hard deadline (``timeout -s KILL`` inside the container) allows
#: past the run's timeout. The runner kills the container at the timeout itself; this bound
#: is what stops the agent when no runner is left to do it (its session was SIGKILLed).
EXEC_GRACE_S = 10
#: Where the prompt is copied (in the agent's HOME); the exec opens it as the CLI's standard
#: input and deletes it before the CLI starts.
PROMPT_FILE = ".skilllift-prompt"
#: The exec's command: stdin from the prompt file, the file removed, then the CLI under a
#: hard deadline (``$1`` seconds; ``$2`` the prompt file; the CLI's argv after). Images
#: without ``timeout`` still run, bounded by the keeper alone, and say so on stderr.
_EXEC_SCRIPT = (
    'limit=$1; exec 0<"$2" || exit 125; rm -f "$2"; shift 2; '
    'if command -v timeout >/dev/null 2>&1; then exec timeout -s KILL "$limit" "$@"; fi; '
    'echo "skilllift: no timeout in the image; only the keeper bounds this run" >&2; '
    'exec "$@"'
)

#: Variables the host may set that name host paths; they mean nothing inside the container.
_HOST_PATH_VARS = ("SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS")
_LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
#: The name a bridged container uses to reach the host (docker's ``host-gateway``).
HOST_GATEWAY_NAME = "host.docker.internal"


#: What a call to the engine can raise: docker-py's own errors, and its transport's (requests'
#: ConnectionError or ReadTimeout when the engine drops or stalls a connection — OSErrors that
#: docker-py does not wrap). A clean-up that must not crash the session catches both.
ENGINE_ERRORS: tuple[type[BaseException], ...] = (docker.errors.DockerException, OSError)


class StaleContainersWarning(UserWarning):
    """A runner's start-up sweep removed containers a killed session left behind."""


def _owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def container_name(run_id: str) -> str:
    """``skilllift-<run_id>-<random>``; run ids are reduced to docker's allowed characters."""
    safe = re.sub(r"[^a-zA-Z0-9_.-]+", "-", run_id).strip("-.")[:96] or "run"
    return f"skilllift-{safe}-{secrets.token_hex(4)}"


def _is_stale(labels: dict[str, str], now: float, host: str) -> bool:
    """Stale: its owning session on this host is gone, or its deadline has passed.

    A live session's containers (another ``-n`` worker's, say) are never touched: they are
    younger than their deadline and their owner pid is alive.
    """
    owner = labels.get(LABEL_OWNER, "")
    owner_host, _, pid_text = owner.rpartition(":")
    if owner_host == host and pid_text.isdigit() and not _pid_alive(int(pid_text)):
        return True
    try:
        deadline = float(labels.get(LABEL_DEADLINE, ""))
    except ValueError:
        return True  # not made by this runner's current version: nothing vouches for it
    return now > deadline


def sweep_stale(client: Any, week: str | None = None) -> int:
    """Remove containers left behind by a killed session; returns how many were removed.

    Candidates carry :data:`LABEL_RUN_ID` (and ``week`` when given); of those only stale
    ones are removed (see :func:`_is_stale`), so running this under ``-n N`` never removes a
    sibling worker's live run. :func:`sweep_stale_names` says which.
    """
    return len(sweep_stale_names(client, week))


def sweep_stale_names(client: Any, week: str | None = None) -> list[str]:
    """:func:`sweep_stale`, returning the names of the containers it removed."""
    filters = [LABEL_RUN_ID] + ([f"{LABEL_WEEK}={week}"] if week is not None else [])
    removed: list[str] = []
    now, host = time.time(), socket.gethostname()
    # The low-level listing: one call, no per-container inspect that would race with a
    # container another session removes meanwhile (a 404 mid-sweep).
    for info in client.api.containers(all=True, filters={"label": filters}):
        if not _is_stale(dict(info.get("Labels") or {}), now, host):
            continue
        if _remove(client, str(info["Id"])):
            names = info.get("Names") or [str(info["Id"])[:12]]
            removed.append(str(names[0]).lstrip("/"))
    return sorted(removed)


def _remove(client: Any, container_id: str, wait_s: float = 10.0) -> bool:
    """Force-remove a container and wait until it is gone; True when it no longer exists.

    Tolerates the races removal has: already gone (404) or removal in progress (409), and
    an engine too busy to answer in time (requests' ReadTimeout/ConnectionError, OSErrors
    that are no DockerException): tried again until ``wait_s``, never raised.
    """
    deadline = time.monotonic() + wait_s
    while True:
        try:
            client.api.remove_container(container_id, force=True, v=True)
            return True
        except docker.errors.NotFound:
            return True
        except docker.errors.APIError as exc:
            if time.monotonic() > deadline:
                return False
            if exc.status_code != 409:  # anything but "removal already in progress"
                time.sleep(0.2)
            else:
                time.sleep(0.05)
        except OSError:  # after APIError, which is one (an HTTPError) with a status to read
            if time.monotonic() > deadline:
                return False
            time.sleep(0.2)


def skill_archive(family_dir: Path | None, uid: int = AGENT_UID,
                  gid: int = AGENT_GID, user: str = AGENT_USER, *,
                  prompt: str | None = None, siblings: Sequence[Path] = (),
                  skills_dir: str = ".claude/skills", extra_dirs: Sequence[str] = (),
                  extra_files: Mapping[str, str] | None = None) -> bytes:
    """A tar to extract at the agent's HOME, every entry owned by the agent: the family at
    ``.claude/skills/<family>/…`` (when given), each of ``siblings`` beside it (trigger
    tests with every family installed) and the prompt file (when given).

    Symlinks are handled as the local runner's install does
    (:mod:`~pytest_skilllift.runners.install`): links inside a family stay links (relative,
    so they resolve inside the container); a link leaving its family raises
    :class:`~pytest_skilllift.runners.install.InstallError`. The ``.claude`` and
    ``.claude/skills`` entries make it work on images lacking them. Another agent's run
    installs under its ``skills_dir`` (``.agents/skills``) and adds its config files and
    empty skill directories (``extra_files``, ``extra_dirs``: both arms).
    """
    buf = io.BytesIO()
    now = int(time.time())

    def entry(name: str, kind: bytes, mode: int) -> tarfile.TarInfo:
        info = tarfile.TarInfo(name)
        info.type, info.mtime, info.mode = kind, now, mode
        info.uid, info.gid, info.uname, info.gname = uid, gid, user, user
        return info

    families = [*([family_dir] if family_dir is not None else []), *siblings]
    # Every family checked before any output: one refused link refuses the whole install.
    checked = [(f, family_entries(f)) for f in families]
    with tarfile.open(fileobj=buf, mode="w") as tar:
        made: set[str] = set()

        def dirs(path: str) -> None:
            parts = path.strip("/").split("/")
            for i in range(1, len(parts) + 1):
                name = "/".join(parts[:i])
                if name not in made:
                    made.add(name)
                    tar.addfile(entry(name, tarfile.DIRTYPE, 0o755))

        for d in extra_dirs:
            dirs(d)
        if checked:
            dirs(skills_dir)
        for rel, text in (extra_files or {}).items():
            dirs(rel.rpartition("/")[0])
            data = text.encode("utf-8")
            info = entry(rel, tarfile.REGTYPE, 0o600)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for family, entries in checked:
            base = f"{skills_dir}/{family.name}"
            tar.addfile(entry(base, tarfile.DIRTYPE, 0o755))
            for e in entries:
                name = f"{base}/{e.rel}"
                if e.kind == "dir":
                    tar.addfile(entry(name, tarfile.DIRTYPE, 0o755))
                elif e.kind == "link":
                    info = entry(name, tarfile.SYMTYPE, 0o777)
                    info.linkname = e.link_target
                    tar.addfile(info)
                else:
                    executable = e.source.stat().st_mode & 0o111
                    info = entry(name, tarfile.REGTYPE, 0o755 if executable else 0o644)
                    info.size = e.source.stat().st_size
                    with e.source.open("rb") as fh:
                        tar.addfile(info, fh)
        if prompt is not None:
            data = prompt.encode("utf-8")
            info = entry(PROMPT_FILE, tarfile.REGTYPE, 0o600)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def files_archive(files: tuple[tuple[str, str], ...], uid: int = AGENT_UID,
                  gid: int = AGENT_GID, user: str = AGENT_USER) -> bytes:
    """A tar of ``(relative destination, source)`` files, owned by the agent user."""
    buf = io.BytesIO()

    def owned(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid, info.gid, info.uname, info.gname = uid, gid, user, user
        info.mode = 0o755 if info.isdir() else 0o644
        return info

    with tarfile.open(fileobj=buf, mode="w", dereference=True) as tar:
        for rel, src in files:
            tar.add(src, arcname=rel, filter=owned)
    return buf.getvalue()


def answering_client(client: Any, problem: str) -> Any:
    """``client`` (or one from the environment) once the engine has answered a ping; else a
    RuntimeError saying ``problem`` with the engine's own reason."""
    try:
        found = client if client is not None else docker.client.from_env()
        found.ping()
    except ENGINE_ERRORS as exc:
        raise RuntimeError(f"{problem} ({exc})") from exc
    return found


class DockerRunner:
    """Runs each (prompt, model, condition, rep) in a new container of ``image``.

    ``network``: ``bridge`` (default) or any docker network name; ``host`` shares the host's
    network, which is how tests reach a Messages API stand-in on ``127.0.0.1``. In a bridged
    mode an ``ANTHROPIC_BASE_URL`` on loopback is rewritten to :data:`HOST_GATEWAY_NAME`
    (docker's host gateway) — the server must then listen on an address the bridge reaches
    (``0.0.0.0`` or the bridge gateway), not only on loopback.

    ``client``: a ``docker.DockerClient``; by default ``docker.from_env()`` (honours
    ``DOCKER_HOST``). One runner per process (``-n`` worker): the client is not shared.

    Construction fails fast (``RuntimeError``) when the engine is unreachable or the image
    is missing, rather than erroring every run; it sweeps stale containers and reads the
    image's CLI version (:attr:`cli_version`, :attr:`cli_version_mismatch`).
    """

    name = "docker"

    def __init__(
        self,
        image: str,
        *,
        network: str = option_default("docker-network"),
        memory: str = "2g",
        pids_limit: int = 512,
        cpus: float = 1.0,
        client: Any | None = None,
        week: str = "",
        inflight: Inflight | None = None,
    ) -> None:
        #: The session's runs in flight (``runners.inflight``): each container is listed
        #: there while it exists, so an interrupt in any process of the session removes it.
        self.inflight = inflight
        self._tokens: dict[str, Path] = {}
        self.image = image
        self.network = network
        self.memory = memory
        self.pids_limit = pids_limit
        self.cpus = cpus
        self.week = week
        self._own_client = client is None
        self.client = answering_client(client, "docker runner: no Docker engine reachable")
        try:
            img = self.client.images.get(image)
        except docker.errors.ImageNotFound as exc:
            raise RuntimeError(
                f"docker runner: image {image!r} not found; build it with "
                f"`skilllift image build --tag {image} --from-local` (offline) or "
                f"`skilllift image build --tag {image}` (connected)"
            ) from exc
        self.image_id: str = img.id
        labels = dict(img.labels or {})
        self.claude = labels.get(LABEL_CLAUDE, IMAGE_CLAUDE)
        self.user = labels.get(LABEL_USER, AGENT_USER)
        self.home = labels.get(LABEL_HOME, AGENT_HOME)
        self.workdir = labels.get(LABEL_WORKDIR, AGENT_WORKDIR)
        #: Images without an init in their entrypoint get docker's (``--init``).
        self.docker_init = labels.get(LABEL_INIT, "none") != "tini"
        self._active: dict[str, str] = {}  # container id → name, for close() after Ctrl-C
        self._lock = threading.Lock()
        #: Names of the stale containers the start-up sweep removed (reported, never silent);
        #: :meth:`close` sweeps again and adds to it.
        self.swept_names: list[str] = sweep_stale_names(self.client)
        self.swept = len(self.swept_names)
        if self.swept_names:
            warnings.warn(StaleContainersWarning(
                f"docker: removed {self.swept} stale container(s) of a killed session: "
                f"{', '.join(self.swept_names)}"), stacklevel=2)
        #: The other agents' CLIs the image carries (``runners/agent_image.py``).
        self.agent_versions = image_agent_versions(labels)
        self.cli_version = image_cli_version(self.client, image)
        self.cli_version_mismatch = cli_version_mismatch(self.cli_version)
        self.pinned_cli_version = PINNED_CLI_VERSION

    # -- one run ------------------------------------------------------------------------------

    def run(self, spec: RunSpec, cfg: AgentConfig, run_dir: Path) -> RunOutcome:
        """Execute one run in a new container; the container is removed before returning."""
        run_dir.mkdir(parents=True, exist_ok=True)
        started = time.time()
        t0 = time.monotonic()
        inv = self._agent(spec, cfg)
        env = self._env(cfg) if inv is None else self._strip_host(dict(inv.env))
        secrets = secret_values(env)
        container_id: str | None = None
        exit_code: int | None = None
        timed_out = False
        error: str | None = None
        # The host's view of the API (what a probe from here can check); the events are the
        # container's CLI's own.
        watch = watch_for(spec.agent, spec.model_id,
                          build_env(cfg, home=self.home) if inv is None
                          else {**os.environ, **cfg.env})
        out = _LineSink(run_dir / STDOUT_FILE, secrets, on_line=watch.feed)
        err = _LineSink(run_dir / STDERR_FILE, secrets, on_line=watch.feed_stderr)
        invalid_install = False
        interrupted = False
        if self.inflight is not None:
            self.inflight.check_not_stopping()
        try:
            try:
                error = self._install_error(spec, cfg)
                invalid_install = error is not None
                if error is None and inv is not None and spec.agent not in self.agent_versions:
                    error = (f"docker: image {self.image!r} has no {spec.agent} CLI; add it "
                             f"with `skilllift image add-agents --base {self.image} --tag "
                             "NEW` (docs/agents.md)")
                if error is None:
                    container_id = self._create(spec, cfg)
                    families = ([install_root(spec.prompt, cfg.skills_root) / f
                                 for f in spec.prompt.installed_families]
                                if spec.with_skill else [])
                    self._install(container_id, families, spec.prompt.prompt, spec.agent, inv)
                    if spec.prompt.files:
                        self._put_files(container_id, spec)
                    self.client.api.start(container_id)
                    if inv is not None:
                        self._preflight(container_id, inv, env, run_dir, secrets)
                    command = (build_argv(self.claude, spec, cfg) if inv is None
                               else inv.argv)
                    exit_code, timed_out, broken = self._exec(container_id, command, cfg, env,
                                                              out, err, t0, watch)
                    if watch.cause is not None:
                        error = f"{watch.cause}; container killed"
                    elif not timed_out and watch.ended(exit_code) is not None:
                        error = str(watch.cause)  # the CLI gave up on it by itself
                    elif timed_out:
                        error = f"timed out after {cfg.timeout_s:g}s; container killed"
                    elif exit_code == 137 and self._oom_killed(container_id):
                        error = f"out of memory: the CLI was killed at the {self.memory} limit"
                    elif broken:
                        error = (f"docker: the output stream broke ({broken}); "
                                 "the transcript may be incomplete")
            except Exception as exc:  # a harness failure is a run outcome, not a crash
                if self.inflight is not None and self.inflight.stopping:
                    # The session's stop removed the container under a docker call (the
                    # archive, the start, the exec): an interrupted run, not a final error.
                    interrupted = True
                    raise RunInterrupted("the session was interrupted while the run was "
                                         "being set up") from exc
                error = f"docker: {type(exc).__name__}: {exc}"
            except KeyboardInterrupt:  # Ctrl-C, SIGTERM/SIGHUP, or the session stopping
                interrupted = True
                raise
            finally:
                if container_id is not None:
                    self._cleanup(container_id, interrupted=interrupted)
            if error:
                # Like the local runner: the reason is in stderr.txt too, for whoever reads it.
                err.write(f"skilllift: {error}\n".encode())
        finally:
            out.close()
            err.close()
        ended = time.time()
        return RunOutcome(
            exit_code=exit_code, started_utc=utc_stamp(started), ended_utc=utc_stamp(ended),
            wall_ms=int((time.monotonic() - t0) * 1000), timed_out=timed_out,
            error=redact(error.encode(), secrets).decode() if error else None,
            runner=self.name,
            # What actually ran (the init event) beats what the image says it holds.
            cli_version=(self.agent_versions.get(spec.agent, "") if inv is not None else
                         transcript_cli_version(run_dir / STDOUT_FILE) or self.cli_version),
            invalid_install=invalid_install, outage=watch.cause or "",
        )

    @staticmethod
    def _install_error(spec: RunSpec, cfg: AgentConfig) -> str | None:
        """The local runner's checks (no SKILL.md, a symlink leaving the family), made
        before any container exists, so both runners reject the same inputs alike."""
        if not spec.with_skill:
            return None
        for family in spec.prompt.installed_families:
            error = check_family(install_root(spec.prompt, cfg.skills_root) / family,
                                 cfg.max_family_bytes,
                                 allow_unsafe=cfg.allow_unsafe, timeout_s=cfg.timeout_s)
            if error is not None:
                return error
        return None

    def _env(self, cfg: AgentConfig) -> dict[str, str]:
        """The exec environment: :func:`build_env` with container paths and a reachable URL."""
        env = self._strip_host(build_env(cfg, home=self.home))
        if env.get("ANTHROPIC_BASE_URL"):
            env["ANTHROPIC_BASE_URL"] = self.container_base_url(env["ANTHROPIC_BASE_URL"])
        return env

    @staticmethod
    def _strip_host(env: dict[str, str]) -> dict[str, str]:
        env.pop("PATH", None)  # the host's PATH means nothing here: keep the image's
        for var in _HOST_PATH_VARS:
            env.pop(var, None)
        return env

    def _agent(self, spec: RunSpec, cfg: AgentConfig,
               paths: Mapping[str, str] | None = None) -> agents.Invocation | None:
        """Another agent's invocation with container paths and reachable base URLs; None
        for Claude Code. ``paths``: the CLIs' paths in the container (default: the image's
        own, on its PATH)."""
        if spec.agent == CLAUDE_CODE:
            return None
        host, env = dict(os.environ), dict(cfg.env)
        for var in dict.fromkeys(a.base_url_var for a in others()):
            for source in (host, env):
                if source.get(var):
                    source[var] = self.container_base_url(source[var])
        # The image's own CLIs, on its PATH.
        cfg = dataclasses.replace(cfg, env=env, agent_paths=dict(paths) if paths is not None
                                  else {a.name: a.binary for a in others()})
        return agents.invocation(spec, cfg, self.home, base=host, container=True)

    def _preflight(self, container_id: str, inv: agents.Invocation, env: dict[str, str],
                   run_dir: Path, hidden: list[bytes]) -> None:
        """The agent's skill listing, in the run's container, into ``AGENT_SKILLS_FILE``."""
        exec_id = self.client.api.exec_create(container_id, inv.preflight, stdout=True,
                                              stderr=False, user=self.user, environment=env,
                                              workdir=self.workdir)["Id"]
        data = self.client.api.exec_start(exec_id)
        code = self.client.api.exec_inspect(exec_id).get("ExitCode")
        if code not in (0, None):
            data = f"listing command exited {code}\n".encode() + data[-2000:]
        (run_dir / AGENT_SKILLS_FILE).write_bytes(redact(data, hidden))

    def container_base_url(self, url: str) -> str:
        """``url`` as the container must spell it: loopback → the host gateway when bridged."""
        if self.network in ("host", "none"):
            return url
        parts = urlsplit(url)
        if parts.hostname not in _LOOPBACK_HOSTS:
            return url
        netloc = HOST_GATEWAY_NAME + (f":{parts.port}" if parts.port else "")
        return urlunsplit(parts._replace(netloc=netloc))

    def _create(self, spec: RunSpec, cfg: AgentConfig) -> str:
        name = container_name(spec.run_id)
        keeper_s = int(cfg.timeout_s) + KEEPER_GRACE_S
        host_config: dict[str, Any] = dict(
            network_mode=self.network,
            mem_limit=self.memory,
            memswap_limit=self.memory,  # no swap: a memory blow-up fails fast, not slowly
            pids_limit=self.pids_limit,
            nano_cpus=int(self.cpus * 1e9),
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            init=self.docker_init or None,
        )
        if self.network not in ("host", "none"):
            host_config["extra_hosts"] = {HOST_GATEWAY_NAME: "host-gateway"}
        labels = {
            LABEL_RUN_ID: spec.run_id,
            LABEL_WEEK: self.week,
            LABEL_OWNER: _owner(),
            LABEL_DEADLINE: str(int(time.time()) + keeper_s),
        }
        created = self.client.api.create_container(
            self.image_id,
            # The keeper: bounded, so an orphaned container stops by itself.
            command=["sleep", str(keeper_s)],
            name=name,
            user=self.user,
            working_dir=self.workdir,
            labels=labels,
            host_config=self.client.api.create_host_config(**host_config),
            stdin_open=False,
            tty=False,
        )
        container_id = str(created["Id"])
        with self._lock:
            self._active[container_id] = name
            if self.inflight is not None:
                self._tokens[container_id] = self.inflight.add(spec.run_id, container=name)
        return container_id

    def _install(self, container_id: str, families: Sequence[Path], prompt: str,
                 agent: str = CLAUDE_CODE, inv: agents.Invocation | None = None) -> None:
        """One archive into the agent's HOME: the prompt file, and (with-skill) the family
        and its siblings where the label's agent finds them; another agent's config files."""
        archive = skill_archive(families[0] if families else None, prompt=prompt,
                                siblings=families[1:], skills_dir=skill_root(agent),
                                extra_dirs=inv.dirs if inv else (),
                                extra_files=inv.files if inv else None)
        ok = self.client.api.put_archive(container_id, self.home, archive)
        if not ok:
            what = ", ".join(f.name for f in families) or "the prompt"
            raise RuntimeError(f"put_archive of {what} into {self.home} failed")

    def _put_files(self, container_id: str, spec: RunSpec) -> None:
        """The prompt's input files (skill-creator ``files``) into the working directory."""
        ok = self.client.api.put_archive(container_id, self.workdir, files_archive(
            spec.prompt.files))
        if not ok:
            raise RuntimeError(f"put_archive of the input files into {self.workdir} failed")

    def _exec(self, container_id: str, command: list[str], cfg: AgentConfig,
              env: dict[str, str], out: _LineSink, err: _LineSink, t0: float,
              watch: OutageWatch | None = None,
              ) -> tuple[int | None, bool, str | None]:
        """Run the CLI; returns (exit code, timed out, stream error). Output is written as it
        arrives; the container is killed at the deadline."""
        # The hard deadline inside the container: what is left of the run's time plus a grace
        # the runner's own kill normally never needs.
        limit = max(1, math.ceil(t0 + cfg.timeout_s - time.monotonic())) + EXEC_GRACE_S
        argv = ["sh", "-c", _EXEC_SCRIPT, "skilllift-run", str(limit),
                f"{self.home}/{PROMPT_FILE}", *command]
        exec_id = self.client.api.exec_create(
            container_id, argv, stdout=True, stderr=True, stdin=False, tty=False,
            user=self.user, environment=env, workdir=self.workdir,
        )["Id"]
        stream: Iterator[tuple[bytes | None, bytes | None]] = self.client.api.exec_start(
            exec_id, stream=True, demux=True)
        done = threading.Event()
        failure: list[BaseException] = []

        def pump() -> None:
            try:
                for chunk_out, chunk_err in stream:
                    if chunk_out:
                        out.write(chunk_out)
                    if chunk_err:
                        err.write(chunk_err)
            except Exception as exc:  # stream cut by a kill: expected on timeout
                failure.append(exc)
            finally:
                done.set()

        reader = threading.Thread(target=pump, name=f"skilllift-{container_id[:12]}",
                                  daemon=True)
        reader.start()
        deadline = t0 + cfg.timeout_s
        # Short slices: a Ctrl-C that does not interrupt the wait itself still raises in 0.25 s.
        while not done.wait(max(0.0, min(0.25, deadline - time.monotonic()))):
            if self.inflight is not None and self.inflight.stopping:
                self._kill(container_id, reader)
                raise RunInterrupted("the session was interrupted while the run was in flight")
            if watch is not None and watch.tick() is not None:  # an outage: stop waiting
                self._kill(container_id, reader)
                return None, False, None
            if time.monotonic() >= deadline:
                self._kill(container_id, reader)
                return None, True, None
        reader.join(10)
        if self.inflight is not None and self.inflight.stopping:
            # The session's stop removed the container (the stream ended with it).
            raise RunInterrupted("the session was interrupted while the run was in flight")
        broken = f"{type(failure[0]).__name__}: {failure[0]}" if failure else None
        # The stream normally closes as the CLI exits and the engine records the exit code a
        # moment later; a stream that broke early leaves the CLI running, so keep to the
        # deadline rather than report a run that has not ended.
        pause = 0.02
        while True:
            info = self.client.api.exec_inspect(exec_id)
            if not info.get("Running"):
                code = info.get("ExitCode")
                return (int(code) if code is not None else None), False, broken
            if time.monotonic() >= deadline:
                self._kill(container_id, reader)
                return None, True, broken
            time.sleep(pause)
            pause = min(0.5, pause * 2)

    def _kill(self, container_id: str, reader: threading.Thread) -> None:
        """Kill the container (every process in it) and let the reader drain."""
        with contextlib.suppress(docker.errors.APIError):
            self.client.api.kill(container_id)
        reader.join(10)

    def _oom_killed(self, container_id: str) -> bool:
        """Whether the kernel's OOM killer fired in the container (exit 137 alone is any
        SIGKILL)."""
        try:
            state = self.client.api.inspect_container(container_id).get("State") or {}
            if state.get("OOMKilled"):  # set when the keeper itself was the victim
                return True
            # An exec'd process's OOM kill only shows in the cgroup's counters (v2, v1).
            exec_id = self.client.api.exec_create(
                container_id, ["cat", "/sys/fs/cgroup/memory.events",
                               "/sys/fs/cgroup/memory/memory.oom_control"], stderr=False)["Id"]
            text = self.client.api.exec_start(exec_id).decode("utf-8", "replace")
        except docker.errors.APIError:
            return False
        return any(int(n) > 0 for n in re.findall(r"^oom_kill (\d+)$", text, re.MULTILINE))

    def _cleanup(self, container_id: str, *, interrupted: bool = False) -> None:
        _remove(self.client, container_id)
        with self._lock:
            self._active.pop(container_id, None)
            token = self._tokens.pop(container_id, None)
        if token is not None and self.inflight is not None:
            if interrupted:
                self.inflight.mark_stopped(token)
            else:
                self.inflight.done(token)

    # -- lifecycle ----------------------------------------------------------------------------

    def close(self) -> None:
        """Remove any container still in flight (after Ctrl-C), sweep stale containers once
        more (one a dying session was still creating may have appeared since the start-up
        sweep; the names are added to :attr:`swept_names`) and close an owned client."""
        with self._lock:
            leftover = list(self._active)
        for container_id in leftover:
            self._cleanup(container_id)
        with contextlib.suppress(*ENGINE_ERRORS):
            self.swept_names += sweep_stale_names(self.client)
            self.swept = len(self.swept_names)
        if self._own_client:
            with contextlib.suppress(Exception):
                self.client.close()

    def __enter__(self) -> DockerRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _LineSink:
    """A transcript file written line by line as chunks arrive, with secrets redacted.

    Docker delivers chunks at arbitrary boundaries; redacting whole lines (as the local
    runner does) means a secret split across two chunks cannot slip through.
    """

    def __init__(self, path: Path, secrets: list[bytes],
                 on_line: Callable[[bytes], object] | None = None) -> None:
        self._fh = open(path, "wb")  # noqa: SIM115 - closed by close(), after the stream
        self._secrets = secrets
        self._pending = b""
        self._on_line = on_line  # sees each whole line (the outage watch)

    def write(self, chunk: bytes) -> None:
        data = self._pending + chunk
        cut = data.rfind(b"\n") + 1
        self._pending = data[cut:]
        if cut:
            self._fh.write(redact(data[:cut], self._secrets))
            self._fh.flush()
            if self._on_line is not None:
                for line in data[:cut].splitlines(keepends=True):
                    self._on_line(line)

    def close(self) -> None:
        if self._pending:
            self._fh.write(redact(self._pending, self._secrets))
            self._pending = b""
        self._fh.close()

