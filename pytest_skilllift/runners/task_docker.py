"""The task runner: one Harbor task run = one fresh container built from the task.

For a run of a task (``RunSpec.prompt.task``):

1. the (task, arm) image (``runners/task_image.py``: built once per content hash, the no-skill
   image with ``environment/skills/`` emptied, the agent CLI layered in without network);
2. a container of it, as the image's user, in the image's ``WORKDIR``, with the task's cpus and
   memory (``[environment]``), a bounded keeper as its main process and docker's init;
3. the instruction on the CLI's standard input (a file in the user's HOME, removed before the
   CLI starts, as the docker runner does); a task naming a family of the project's skills
   root (``[metadata] skill``) gets it installed under ``~/.claude/skills`` in the with-skill
   arm; the CLI runs under ``[agent] timeout_sec`` with the session's allow-list plus the
   write tools (:data:`WRITE_TOOLS`, both arms alike). Another agent's run (Codex CLI,
   Gemini CLI, OpenCode: its CLI layered in by ``runners/task_cli.py``) gets its config
   files and, with-skill, the task's skills in its own skill root (``~/.agents/skills``),
   its listing command run first (the availability check), and its write and shell tools
   allowed as its agent module declares (``Agent.task_tools``, both arms alike);
4. after the agent (and step 5's stop): the files it created or changed (``docker diff``
   against the image, under the workdir) are copied out to ``artifacts/`` (capped, what was
   cut counted and named);
5. every process the agent left (all but docker's init and the keeper) is killed and waited
   for, and what it put at ``/tests`` and ``/logs/verifier`` removed (``_isolate``; the count
   in ``task.json: agent_processes_killed``), so the verifier runs alone;
   only then ``tests/`` is copied to ``/tests`` and ``bash /tests/test.sh`` runs as root under
   ``[verifier] timeout_sec`` with ``[verifier] env``; its output and ``/logs/verifier/``
   (``reward.txt`` / ``reward.json``, ``ctrf.json``…) are saved under ``verifier/``;
6. ``task.json`` records what happened (image, timings, the verifier's exit, what was cut);
   the container is removed in a ``finally``.

What the verifier's files mean is read above (``run/tasks/results.py``); this module only
runs and copies.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import math
import os
import tarfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import docker.client
import docker.errors

from pytest_skilllift.agents.claude_code import build_argv, build_env
from pytest_skilllift.agents.registry import agent as agent_def
from pytest_skilllift.config import option_default
from pytest_skilllift.model import (
    CLAUDE_CODE,
    TASK_WRITE_TOOLS,
    AgentConfig,
    RunOutcome,
    RunSpec,
    task_tools,
)
from pytest_skilllift.runners import agents
from pytest_skilllift.runners.base import Runner, transcript_cli_version
from pytest_skilllift.runners.claude import bundled_claude
from pytest_skilllift.runners.docker import (
    ENGINE_ERRORS,
    HOST_GATEWAY_NAME,
    KEEPER_GRACE_S,
    LABEL_DEADLINE,
    LABEL_OWNER,
    LABEL_RUN_ID,
    LABEL_WEEK,
    DockerRunner,
    _LineSink,
    _owner,
    answering_client,
    container_name,
    skill_archive,
)
from pytest_skilllift.runners.image import ImageBuildError
from pytest_skilllift.runners.inflight import Inflight, RunInterrupted
from pytest_skilllift.runners.install import check_family
from pytest_skilllift.runners.outage import watch_for
from pytest_skilllift.runners.redaction import redact, secret_values
from pytest_skilllift.runners.task_cli import CLI_BIN, CliLayer, npm_layer
from pytest_skilllift.runners.task_image import TASK_CLAUDE, TaskImageError, TaskImages
from pytest_skilllift.week.files import (
    ARTIFACTS_DIR,
    STDERR_FILE,
    STDOUT_FILE,
    TASK_FILE,
    VERIFIER_DIR,
    VERIFIER_OUTPUT,
    utc_stamp,
)

#: The tools a task run allows beyond the session's allow-list, in both arms (stated once, in
#: model.py: week.json records the task allow-list too).
WRITE_TOOLS: tuple[str, ...] = TASK_WRITE_TOOLS
#: Caps on the copied-out changed files (each cut is counted and named in task.json).
MAX_ARTIFACT_FILES = 50
MAX_ARTIFACT_BYTES = 256 * 1024
MAX_ARTIFACTS_TOTAL = 4 * 1024 * 1024
#: Caps on the verifier's output and each file of /logs/verifier.
MAX_VERIFIER_OUTPUT = 512 * 1024
MAX_VERIFIER_FILE = 1024 * 1024
#: Paths whose changes are the harness's or the CLI's own, never the agent's work.
_NOT_WORK = ("/proc", "/dev", "/sys", "/tmp", "/run", "/logs", "/tests", "/opt/skilllift",
             "/etc/hosts", "/etc/hostname", "/etc/resolv.conf", "/var/tmp")


def engine_problem() -> str | None:
    """Why tasks cannot run here (no Docker engine answers), or None."""
    try:
        client = docker.client.from_env()
        try:
            client.ping()
        finally:
            client.close()
    except ENGINE_ERRORS as exc:  # a dropped connection too: a usage error, not a traceback
        return (f"Harbor tasks run in docker and no Docker engine answers ({exc}); start one "
                "(`docker info` should answer), or point skill_lift_tasks elsewhere "
                "(docs/tasks.md)")
    return None


#: ``PATH`` for an image whose ``ENV`` sets none (docker's default).
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def agent_layer(name: str) -> CliLayer:
    """The CLI layer of the npm agent ``name`` from its CLI on this machine (a
    :class:`TaskImageError` names the install command when it is missing)."""
    cli = agents.find_cli(name)
    if cli is None:
        raise TaskImageError(agents.missing_cli_message(name))
    try:
        return npm_layer(name, cli)
    except ImageBuildError as exc:
        raise TaskImageError(f"{agent_def(name).title} cannot be layered into a task "
                             f"image: {exc}") from None


def task_installs(spec: RunSpec, cfg: AgentConfig, *, own: bool = False) -> list[Path]:
    """The family folders a task run installs into the agent's skill path: the arm's
    ``TaskSpec.installs`` from its root (the session's skills root, or the with-skill@REF
    arm's revision), after the task's own families when ``own`` (another agent's skill root
    is not where the Dockerfile copies them: its ``skills/``, or the REF arm's copy), in the
    arms that install skills only."""
    task = spec.prompt.task
    if task is None or not spec.with_skill:
        return []
    root = task.installs_root if task.installs_root is not None else cfg.skills_root
    bundled = task.skills_dir if task.skills_dir is not None else task.environment / "skills"
    mine = [bundled / f for f in task.bundled_families] if own else []
    return [*mine, *(Path(root) / family for family in task.installs
                     if not own or family not in task.bundled_families)]


@dataclasses.dataclass(frozen=True)
class _User:
    home: str
    uid: int
    gid: int


class TaskRunner(DockerRunner):
    """Runs Harbor task runs, each in a fresh container of its (task, arm) image.

    Shares the docker runner's container handling (the streamed exec with its hard
    deadline, the kill, the removal, the session's in-flight list, the loopback rewrite);
    the image, user, HOME and workdir are the task's, per run.
    """

    name = "docker-task"

    def __init__(self, *, network: str = option_default("docker-network"),
                 client: Any | None = None, week: str = "",
                 inflight: Inflight | None = None, claude: Path | None = None,
                 default_memory_mb: int = 2048, default_cpus: float = 1.0) -> None:
        # Not DockerRunner.__init__: there is no one image; each run names its own.
        self.inflight = inflight
        self._tokens: dict[str, Path] = {}
        self.network = network
        self.week = week
        self.pids_limit = 1024
        self.default_memory_mb = default_memory_mb
        self.default_cpus = default_cpus
        self._own_client = client is None
        self.client = answering_client(
            client, "tasks need a Docker engine and none is reachable; start one (docker info "
            "should answer) or leave tasks out (skill_lift_tasks)")
        cli = claude or bundled_claude()
        if cli is None or not Path(cli).is_file():
            raise RuntimeError("tasks need the Claude Code binary to layer into their images: "
                               "pip install claude-agent-sdk (it bundles one)")
        self.images = TaskImages(self.client, Path(cli), layers=self._agent_layer)
        self.claude = TASK_CLAUDE
        self.docker_init = True
        self.image = ""
        self.image_id = ""
        self.user = ""
        self.home = "/root"
        self.workdir = "/"
        self.memory = f"{default_memory_mb}m"
        self.cpus = default_cpus
        self._active: dict[str, str] = {}
        self._lock = threading.Lock()
        self.swept_names: list[str] = []
        self.swept = 0
        self.agent_versions: dict[str, str] = {}
        self.cli_version = ""
        self._users: dict[tuple[str, str], _User] = {}
        self._removals: list[threading.Thread] = []

    def _agent_layer(self, name: str) -> CliLayer:
        """An npm agent's CLI layer; its version is the run's CLI version."""
        layer = agent_layer(name)
        self.agent_versions.setdefault(name, layer.version)
        return layer

    # -- one run ------------------------------------------------------------------------------

    def run(self, spec: RunSpec, cfg: AgentConfig, run_dir: Path) -> RunOutcome:
        """Build or reuse the image, run the agent, copy its work out, run the verifier."""
        task = spec.prompt.task
        if task is None:
            raise ValueError(f"{spec.run_id}: not a task run")
        run_dir.mkdir(parents=True, exist_ok=True)
        started, t0 = time.time(), time.monotonic()
        other = spec.agent != CLAUDE_CODE
        info: dict[str, Any] = {"tools": list(agent_def(spec.agent).task_tools if other
                                              else task_tools(cfg.allowed_tools))}
        timings: dict[str, float] = {}
        cfg = dataclasses.replace(cfg, allowed_tools=task_tools(cfg.allowed_tools),
                                  timeout_s=task.agent_timeout_s)
        error: str | None = None
        exit_code: int | None = None
        timed_out = False
        interrupted = False
        container_id: str | None = None
        env: dict[str, str] = {}
        # The host's view of the API (what a probe from here can check), as the docker
        # runner's.
        watch = watch_for(spec.agent, spec.model_id, {**os.environ, **cfg.env} if other
                          else build_env(cfg, home="/root"))
        secrets: list[bytes] = []
        out = err = None
        invalid_install = False
        if self.inflight is not None:
            self.inflight.check_not_stopping()
        try:
            try:
                # Families the runner installs (the arm's families of the project's skills
                # root; another agent also the task's own): the install rules of prompts.
                families = task_installs(spec, cfg, own=other)
                refused = next((e for e in (
                    check_family(f, cfg.max_family_bytes, allow_unsafe=cfg.allow_unsafe,
                                 timeout_s=cfg.timeout_s) for f in families) if e), None)
                if refused:
                    invalid_install = True
                    raise _Failed(refused)
                try:
                    image = self.images.get(task, spec.with_skill, spec.agent)
                except TaskImageError as exc:
                    raise _Failed(str(exc)) from None
                timings["image_build_s"] = image.build_s
                info.update(image=image.tag, user=image.user or "root", workdir=image.workdir,
                            image_built_now=image.build_s > 0, agent=spec.agent,
                            cli=image.command)
                self.image, self.image_id = image.tag, image.image_id
                self.user, self.workdir = image.user, image.workdir
                self.memory = f"{task.memory_mb or self.default_memory_mb}m"
                self.cpus = task.cpus or self.default_cpus
                keeper = dataclasses.replace(
                    cfg, timeout_s=task.agent_timeout_s + task.verifier_timeout_s + 60)
                container_id = self._create(spec, keeper)
                cid = container_id

                def instruction(user: _User, inv: Any) -> Callable[[], bool]:
                    # With-skill: the arm's families (task_installs; Claude Code finds the
                    # task's own skills where its Dockerfile copies them; another agent gets
                    # them in its own skill root). No-skill: none.
                    archive = skill_archive(
                        families[0] if families else None, user.uid, user.gid,
                        image.user or "root", prompt=spec.prompt.prompt, siblings=families[1:],
                        skills_dir=agent_def(spec.agent).skill_root if other
                        else ".claude/skills", extra_dirs=inv.dirs if inv else (),
                        extra_files=inv.files if inv else None)
                    return lambda: bool(self.client.api.put_archive(cid, user.home, archive))

                # Claude Code as root: its HOME needs no asking, so the instruction is copied
                # into the created container while it starts (two round trips overlapped).
                overlap = _is_root(image.user) and not other
                copied = True
                if overlap:
                    user = self._user(container_id, image.image_id, image.user, image.home)
                    _, copied = _overlapped(lambda: self.client.api.start(cid),
                                            instruction(user, None))
                else:
                    self.client.api.start(container_id)
                    user = self._user(container_id, image.image_id, image.user, image.home)
                self.home = user.home
                info["home"] = user.home
                # Another agent: its CLI from the layer, its config in the user's HOME, the
                # layer's bin first on PATH (OpenCode's ripgrep is there).
                inv = (self._agent(spec, cfg, {spec.agent: image.command}) if other
                       else None)
                env = self._env(cfg) if inv is None else self._strip_host(dict(inv.env))
                if inv is not None:
                    env["PATH"] = f"{CLI_BIN}:{image.path or DEFAULT_PATH}"
                secrets = secret_values(env)
                out = _LineSink(run_dir / STDOUT_FILE, secrets, on_line=watch.feed)
                err = _LineSink(run_dir / STDERR_FILE, secrets, on_line=watch.feed_stderr)
                if not overlap:
                    copied = instruction(user, inv)()
                if not copied:
                    raise _Failed(f"put_archive of the instruction into {user.home} failed")
                if inv is not None:  # the availability check: what the CLI lists
                    listing_t0 = time.monotonic()
                    self._preflight(container_id, inv, env, run_dir, secrets)
                    timings["listing_s"] = time.monotonic() - listing_t0
                timings["setup_s"] = time.monotonic() - t0
                agent_t0 = time.monotonic()
                exit_code, timed_out, broken = self._exec(
                    container_id, build_argv(self.claude, spec, cfg) if inv is None
                    else inv.argv, cfg, env, out, err, agent_t0, watch)
                timings["agent_s"] = time.monotonic() - agent_t0
                if watch.cause is not None:
                    error = f"{watch.cause}; container killed"
                elif not timed_out and watch.ended(exit_code) is not None:
                    error = str(watch.cause)
                elif timed_out:
                    error = f"timed out after {task.agent_timeout_s:g}s ([agent] timeout_sec)"
                elif broken:
                    error = f"docker: the output stream broke ({broken})"
                if not timed_out and not error:
                    # Harbor's rule — the agent never sees /tests — holds only if nothing of
                    # the agent outlives it: a process it left running (nohup …&) could read
                    # the tests or rewrite the reward. Stopped first, so the verifier runs
                    # alone, and the work copied out is what the agent left.
                    stop_t0 = time.monotonic()
                    info["agent_processes_killed"] = self._isolate(cid)
                    timings["isolate_s"] = time.monotonic() - stop_t0
                    # The agent's work, before the verifier touches anything.
                    copy_t0 = time.monotonic()
                    # Nothing of the agent runs any more: tests/ goes in while its work is
                    # copied out (the copy never looks under /tests).
                    tests = _tests_archive(task.tests_dir)
                    info["artifacts"], tests_in = _overlapped(
                        lambda: self._artifacts(cid, image.workdir, user.home,
                                                run_dir / ARTIFACTS_DIR),
                        lambda: bool(self.client.api.put_archive(cid, "/", tests)))
                    timings["artifacts_s"] = time.monotonic() - copy_t0
                    if not tests_in:
                        raise _Failed("put_archive of tests/ into /tests failed")
                    info["verifier"] = self._verify(container_id, spec, run_dir, timings,
                                                    tests_in=True)
            except _Failed as exc:
                error = str(exc)
            except Exception as exc:  # a harness failure is a run outcome, not a crash
                if self.inflight is not None and self.inflight.stopping:
                    interrupted = True
                    raise RunInterrupted("the session was interrupted while the task ran"
                                         ) from exc
                error = f"docker: {type(exc).__name__}: {exc}"
            except KeyboardInterrupt:
                interrupted = True
                raise
            finally:
                if container_id is not None:
                    if interrupted:
                        self._cleanup(container_id, interrupted=True)
                    else:
                        # Everything the run needs is copied out: the container goes in the
                        # background (a second or two of the engine's time, not the run's);
                        # close() waits for every removal.
                        remover = threading.Thread(target=self._cleanup, args=(container_id,),
                                                   daemon=True, name="skilllift-remove")
                        remover.start()
                        self._removals.append(remover)
        finally:
            for sink in (out, err):
                if sink is not None:
                    sink.close()
            if out is None:  # no container got that far: the files the ledger expects
                (run_dir / STDOUT_FILE).touch()
                (run_dir / STDERR_FILE).write_text(f"skilllift: {error}\n" if error else "")
        wall = time.monotonic() - t0
        timings["wall_s"] = wall
        # The harness's own time: everything but the agent (its CLI's skill listing too),
        # the verifier and a first build.
        timings["harness_s"] = max(0.0, wall - timings.get("agent_s", 0.0)
                                   - timings.get("listing_s", 0.0)
                                   - timings.get("verifier_s", 0.0)
                                   - timings.get("image_build_s", 0.0))
        info["timings"] = {k: round(v, 3) for k, v in timings.items()}
        if error:
            info["error"] = redact(error.encode(), secrets).decode()
        (run_dir / TASK_FILE).write_text(json.dumps(info, indent=1, sort_keys=True),
                                         encoding="utf-8")
        return RunOutcome(
            exit_code=exit_code, started_utc=utc_stamp(started), ended_utc=utc_stamp(time.time()),
            wall_ms=int(wall * 1000), timed_out=timed_out,
            error=redact(error.encode(), secrets).decode() if error else None,
            runner=self.name, cli_version=self.agent_versions.get(spec.agent, "") if other
            else transcript_cli_version(run_dir / STDOUT_FILE),
            invalid_install=invalid_install, outage=watch.cause or "")

    def close(self) -> None:
        """Wait for the containers being removed, then the docker runner's close."""
        for remover in self._removals:
            remover.join(60)
        self._removals.clear()
        super().close()

    def _create(self, spec: RunSpec, cfg: AgentConfig) -> str:
        """The run's container: the image's user and workdir, the task's limits, docker's
        init, a bounded keeper. Capabilities are docker's defaults (a task's verifier may
        need to chown or install), with ``no-new-privileges``."""
        name = container_name(spec.run_id)
        keeper_s = int(cfg.timeout_s) + KEEPER_GRACE_S
        host_config: dict[str, Any] = dict(
            network_mode=self.network, mem_limit=self.memory, memswap_limit=self.memory,
            pids_limit=self.pids_limit, nano_cpus=int(self.cpus * 1e9),
            security_opt=["no-new-privileges"], init=True)
        if self.network not in ("host", "none"):
            host_config["extra_hosts"] = {HOST_GATEWAY_NAME: "host-gateway"}
        labels = {LABEL_RUN_ID: spec.run_id, LABEL_WEEK: self.week, LABEL_OWNER: _owner(),
                  LABEL_DEADLINE: str(int(time.time()) + keeper_s)}
        created = self.client.api.create_container(
            self.image_id, command=["sleep", str(keeper_s)], entrypoint=[], name=name,
            user=self.user, working_dir=self.workdir, labels=labels,
            host_config=self.client.api.create_host_config(**host_config))
        container_id = str(created["Id"])
        with self._lock:
            self._active[container_id] = name
            if self.inflight is not None:
                self._tokens[container_id] = self.inflight.add(spec.run_id, container=name)
        return container_id

    def _user(self, container_id: str, image_id: str, user: str, home: str = "") -> _User:
        """The image user's HOME, uid and gid (asked once per image; root needs no asking:
        uid 0, its HOME the image's ``ENV HOME`` or ``/root``)."""
        key = (image_id, user)
        if _is_root(user):
            return _User(home or "/root", 0, 0)
        if key not in self._users:
            lines: list[str] = []
            # Under load an exec right after start has come back empty: asked up to 3 times.
            for attempt in range(3):
                exec_id = self.client.api.exec_create(
                    # The user's own HOME (its passwd entry): an ENV HOME a base image set for
                    # root would otherwise follow the image's USER into another account.
                    container_id, ["sh", "-c", _USER_SCRIPT],
                    user=user, stderr=False)["Id"]
                lines = self.client.api.exec_start(exec_id).decode("utf-8", "replace").split()
                if len(lines) >= 3:
                    break
                time.sleep(0.2 * (attempt + 1))
            try:
                self._users[key] = _User(lines[0], int(lines[1]), int(lines[2]))
            except (IndexError, ValueError):
                raise _Failed(f"could not read the image user's HOME and id ({lines!r}): the "
                              "image needs sh and id") from None
        return self._users[key]

    # -- after the agent ----------------------------------------------------------------------

    def _artifacts(self, container_id: str, workdir: str, home: str,
                   dest: Path) -> dict[str, Any]:
        """Copy the files the agent created or changed under the workdir (``docker diff``
        against the image) into ``dest``; returns what was copied, deleted and cut."""
        changes = self.client.api.diff(container_id) or []
        root = workdir.rstrip("/") or "/"
        skip = (*_NOT_WORK, *((home,) if root == "/" else ()))
        kept: list[str] = []
        deleted: list[str] = []
        # A changed path that holds other changed paths is a directory: not fetched (its
        # archive would carry the whole directory only to be skipped as not a file).
        parents = {str(change.get("Path", "")).rpartition("/")[0] for change in changes}
        for change in changes:
            path, kind = str(change.get("Path", "")), int(change.get("Kind", 0))
            inside = root == "/" or path == root or path.startswith(root + "/")
            if not inside or any(path == s or path.startswith(s.rstrip("/") + "/")
                                 for s in skip):
                continue
            if kind == 2:
                deleted.append(path)
            elif path not in parents:
                kept.append(path)
        files: list[dict[str, Any]] = []
        cut: list[dict[str, Any]] = []
        total = 0
        for path in sorted(kept):
            try:
                stream, stat = self.client.api.get_archive(container_id, path)
            except docker.errors.NotFound:
                continue
            if not _is_file_mode(int(stat.get("mode", 0))):
                with contextlib.suppress(Exception):
                    for _ in stream:
                        pass
                continue
            size = int(stat.get("size", 0))
            rel = path[len(root):].lstrip("/") if root != "/" else path.lstrip("/")
            reason = ("too many files" if len(files) >= MAX_ARTIFACT_FILES else
                      "file over the cap" if size > MAX_ARTIFACT_BYTES else
                      "total over the cap" if total + size > MAX_ARTIFACTS_TOTAL else "")
            if reason:
                with contextlib.suppress(Exception):
                    for _ in stream:
                        pass
                cut.append({"path": rel, "bytes": size, "reason": reason})
                continue
            data = _first_file(b"".join(stream))
            if data is None:
                continue
            target = dest / rel
            if not target.resolve().is_relative_to(dest.resolve()):
                cut.append({"path": rel, "bytes": size, "reason": "path leaves the folder"})
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            total += len(data)
            files.append({"path": rel, "bytes": len(data)})
        return {"workdir": workdir, "files": files, "deleted": sorted(deleted), "cut": cut,
                "caps": {"files": MAX_ARTIFACT_FILES, "file_bytes": MAX_ARTIFACT_BYTES,
                         "total_bytes": MAX_ARTIFACTS_TOTAL}}

    def _isolate(self, container_id: str) -> int:
        """Stop every process of the container but its init and keeper, wait until none is
        left, then remove whatever the agent put at ``/tests`` and ``/logs/verifier`` (Harbor
        mounts both fresh for the verifier). Returns how many processes were killed; a
        :class:`_Failed` when some outlive ``SIGKILL`` (the verifier would not run alone)."""
        exec_id = self.client.api.exec_create(
            container_id, ["sh", "-c", _ISOLATE_SCRIPT, "skilllift-isolate",
                           str(ISOLATE_PASSES)], user="0", workdir="/", stdout=True,
            stderr=True)["Id"]
        output = self.client.api.exec_start(exec_id)
        text = output.decode("utf-8", "replace") if isinstance(output, bytes) else str(output)
        last = text.strip().rsplit("\n", 1)[-1].split()
        if len(last) != 3 or last[0] != _ISOLATED or not all(v.isdigit() for v in last[1:]):
            raise _Failed("could not stop the processes the agent left before the verifier "
                          f"(the image needs sh with kill and read): {text.strip()[-300:]!r}")
        killed, left = int(last[1]), int(last[2])
        if left:
            raise _Failed(f"{left} process(es) the agent left survived SIGKILL; the verifier "
                          "was not run (it must run alone)")
        return killed

    def _verify(self, container_id: str, spec: RunSpec, run_dir: Path,
                timings: dict[str, float], *, tests_in: bool = False) -> dict[str, Any]:
        """``tests/`` → ``/tests``, then ``bash /tests/test.sh`` as root under the verifier's
        timeout; its output and ``/logs/verifier`` into ``run_dir/verifier``."""
        task = spec.prompt.task
        assert task is not None
        out_dir = run_dir / VERIFIER_DIR
        out_dir.mkdir(parents=True, exist_ok=True)
        if not tests_in and not self.client.api.put_archive(container_id, "/",
                                                            _tests_archive(task.tests_dir)):
            raise _Failed("put_archive of tests/ into /tests failed")
        limit = max(1, math.ceil(task.verifier_timeout_s))
        # Harbor's verifiers write under /logs/verifier: made here, in the same exec.
        script = ("mkdir -p /logs/verifier /logs/agent && "
                  f"exec timeout -s KILL {limit} bash /tests/test.sh")
        exec_id = self.client.api.exec_create(
            container_id, ["sh", "-c", script], user="0", workdir=self.workdir,
            environment=dict(task.verifier_env), stdout=True, stderr=True)["Id"]
        v0 = time.monotonic()
        output = bytearray()
        cut = 0
        done = threading.Event()

        def pump() -> None:
            nonlocal cut
            try:
                for chunk in self.client.api.exec_start(exec_id, stream=True):
                    room = MAX_VERIFIER_OUTPUT - len(output)
                    output.extend(chunk[:max(0, room)])
                    cut += max(0, len(chunk) - max(0, room))
            except Exception:  # the stream ends with a kill
                pass
            finally:
                done.set()

        reader = threading.Thread(target=pump, daemon=True, name="skilllift-verifier")
        reader.start()
        timed_out = not done.wait(task.verifier_timeout_s + 15)
        code = None
        if not timed_out:
            reader.join(5)
            for _ in range(50):
                state = self.client.api.exec_inspect(exec_id)
                if not state.get("Running"):
                    code = state.get("ExitCode")
                    break
                time.sleep(0.05)
        timings["verifier_s"] = time.monotonic() - v0
        if code == 137 and timings["verifier_s"] >= task.verifier_timeout_s:
            timed_out = True
        (out_dir / VERIFIER_OUTPUT).write_bytes(bytes(output))
        logs = self._verifier_logs(container_id, out_dir)
        return {"exit_code": code, "timed_out": timed_out, "output_bytes_cut": cut,
                "timeout_s": task.verifier_timeout_s, **logs}

    def _verifier_logs(self, container_id: str, out_dir: Path) -> dict[str, Any]:
        """The files of ``/logs/verifier`` (each capped) into ``out_dir``."""
        try:
            stream, _ = self.client.api.get_archive(container_id, "/logs/verifier")
        except docker.errors.NotFound:
            return {"logs": [], "logs_cut": []}
        saved, cut = [], []
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
            for member in tar.getmembers():
                if not member.isfile():
                    continue
                rel = member.name.partition("/")[2]
                if not rel or rel in (VERIFIER_OUTPUT,) or ".." in Path(rel).parts:
                    continue
                if member.size > MAX_VERIFIER_FILE:
                    cut.append({"path": rel, "bytes": member.size, "reason": "file over the cap"})
                    continue
                fh = tar.extractfile(member)
                if fh is None:
                    continue
                target = out_dir / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(fh.read())
                saved.append(rel)
        return {"logs": sorted(saved), "logs_cut": cut}


#: Passes of the stop (50 ms apart): a fork that raced the previous pass is killed by the next.
ISOLATE_PASSES = 200
_ISOLATED = "skilllift-isolated"
#: The keeper is the first process docker's init (PID 1) started: of PID 1's children, the
#: earliest (``stat`` field 22, its start time); orphans the agent left are reparented to PID
#: 1 too, but started later. Every other process but this shell and its ``sleep`` is killed
#: until none is left (a zombie is waited for, not counted: it had already exited). Builtins
#: only in the loop (``read``, ``kill``, ``set``), so the shell starts no child it would
#: have to spare but the pause. ``stat``'s fields after the command name hold no glob
#: characters (numbers, a state letter): unquoted, they split into ``$1``… safely. The last
#: line says ``skilllift-isolated <killed> <left>``.
_ISOLATE_SCRIPT = r"""passes=$1 me=$$ keeper= first=
for d in /proc/[0-9]*; do
  p=${d#/proc/}
  read -r s 2>/dev/null <"$d/stat" || continue
  set -- ${s##*) }
  [ "$2" = 1 ] || continue
  if [ -z "$first" ] || [ "${20}" -lt "$first" ] ||
     { [ "${20}" = "$first" ] && [ "$p" -lt "$keeper" ]; }; then
    first=${20} keeper=$p
  fi
done
killed=0 seen=' ' pass=0
while :; do
  left=0
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    case $p in 1|"$me"|"$keeper") continue ;; esac
    read -r s 2>/dev/null <"$d/stat" || continue
    set -- ${s##*) }
    [ "$2" = "$me" ] && continue
    left=$((left + 1))
    [ "$1" = Z ] && continue
    case $seen in *" $p "*) ;; *) seen="$seen$p " killed=$((killed + 1)) ;; esac
    kill -9 "$p" 2>/dev/null
  done
  pass=$((pass + 1))
  { [ "$left" = 0 ] || [ "$pass" -ge "$passes" ]; } && break
  sleep 0.05 2>/dev/null || sleep 1
done
rm -rf /tests /logs/verifier
[ -L /logs ] && rm -f /logs
echo "skilllift-isolated $killed $left"
"""

_USER_SCRIPT = ('h=$(awk -F: -v u="$(id -u)" \'$3 == u {print $6; exit}\' /etc/passwd '
                '2>/dev/null); echo "${h:-${HOME:-/}}"; id -u; id -g')


_T = TypeVar("_T")
_U = TypeVar("_U")


def _is_root(user: str) -> bool:
    """Whether an image's ``USER`` is root (its HOME and ids need no exec to learn)."""
    return user in ("", "root", "0", "0:0", "root:root")


def _overlapped(first: Callable[[], _T], second: Callable[[], _U]) -> tuple[_T, _U]:
    """``first()`` here while ``second()`` runs in a thread: two engine round trips that do
    not depend on each other, overlapped. The second's exception is raised here too."""
    result: list[_U] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            result.append(second())
        except BaseException as exc:  # re-raised in the caller's thread below
            failure.append(exc)

    thread = threading.Thread(target=run, daemon=True, name="skilllift-overlap")
    thread.start()
    try:
        value = first()
    finally:
        thread.join()
    if failure:
        raise failure[0]
    return value, result[0]


class _Failed(Exception):
    """A harness step that failed with a message for the run's error."""


def _is_file_mode(mode: int) -> bool:
    """Whether docker's path stat mode (Go's ``os.FileMode``) is a regular file."""
    return mode & 0xFFF00000 == 0  # no type bits: dir, symlink, device… all set one


def _first_file(archive: bytes) -> bytes | None:
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for member in tar.getmembers():
            if member.isfile():
                fh = tar.extractfile(member)
                return fh.read() if fh is not None else None
    return None


def _tests_archive(tests: Path) -> bytes:
    """``tests/`` as a tar rooted at ``tests/`` (extracted at ``/``), owned by root."""
    buf = io.BytesIO()

    def owned(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        return info

    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(tests, arcname="tests", filter=owned)
    return buf.getvalue()




class SplitRunner:
    """The session's runner for prompts and the task runner for task runs, each made the
    first time a run needs it (a week of prompts only never talks to docker for tasks)."""

    name = "split"

    def __init__(self, prompts: Callable[[], Runner], tasks: Callable[[], Runner]) -> None:
        self._factories = {False: prompts, True: tasks}
        self._made: dict[bool, Runner] = {}

    def runner(self, task: bool) -> Runner:
        """The runner for task runs (``True``) or prompt runs, made on first use."""
        if task not in self._made:
            self._made[task] = self._factories[task]()
        return self._made[task]

    def run(self, spec: RunSpec, cfg: AgentConfig, run_dir: Path) -> RunOutcome:
        """Run ``spec`` with the runner of its kind."""
        return self.runner(spec.prompt.task is not None).run(spec, cfg, run_dir)

    def close(self) -> None:
        """Close every runner made."""
        for made in self._made.values():
            made.close()
