"""The image of a (Harbor task, arm): built once per content hash, the agent CLI layered in.

A task's container is built from its ``environment/`` (the build context, its ``Dockerfile``).
Two images per task:

- **with-skill**: the context as shipped (SkillsBench Dockerfiles ``COPY skills`` into every
  agent's skill path);
- **no-skill**: the same context with ``environment/skills/`` emptied, so every ``COPY skills``
  copies nothing and no agent in the image can list a skill.

To either, one more layer adds the CLI of the run's agent under ``/opt/skilllift``
(``runners/task_cli.py``: the Claude Code binary bundled on this machine at
:data:`TASK_CLAUDE`, or an npm CLI with what it needs beyond glibc): ``COPY --from`` a
CLI-only image imported once per CLI (:func:`cli_image_tag`), so no build streams the CLI
again and none needs a network (the build runs with ``network_mode="none"``). The tag is
``skilllift-task-<task>:<arm>-<hash>`` (``<arm>-<agent>-<hash>`` for an agent other than
Claude Code) where the hash covers every byte of the context that arm sees, the Dockerfile
and the CLI's identity: an unchanged task reuses its image across models, reps and sessions
(no build at all), a changed one gets a new tag.

The CLIs need the image's glibc (``ldd``: libc, libm, libpthread, libdl, librt, the loader;
the other libraries an npm CLI needs come with it), which every glibc-based image has; on an
image without it the smoke check (``<cli> --version`` in the built image) fails the build
with that reason.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import io
import os
import re
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_skilllift.model import CLAUDE_CODE, TaskSpec
from pytest_skilllift.runners.task_cli import TASK_CLAUDE, CliLayer, claude_layer

__all__ = ["TASK_CLAUDE", "CliLayer", "TaskImage", "TaskImageError", "TaskImages",
           "cli_image_tag", "context_hash", "image_tag", "with_cli_stage"]

LABEL_TASK_HASH = "skilllift.task_hash"
LABEL_TASK = "skilllift.task"
LABEL_ARM = "skilllift.task_arm"
LABEL_AGENT = "skilllift.task_agent"
#: Bumped when what an image holds changes meaning (its hash then differs).
IMAGE_FORMAT = "2"
#: The file ``run.revisions`` writes last into a materialised revision (not a skill's: never
#: in an image, so a revision's skills equal to the shipped ones give the shipped image).
REVISION_MARKER = ".skilllift-revision"
#: The arm names of the two images.
WITH_SKILLS, WITHOUT_SKILLS = "skills", "noskills"


class TaskImageError(RuntimeError):
    """The task's image could not be built (the message names the task and the cause)."""


@dataclass(frozen=True)
class TaskImage:
    """A built (task, arm) image and what a run needs to know of it."""

    tag: str
    image_id: str
    #: The image's USER ("" = root) and WORKDIR ("/" when unset).
    user: str
    workdir: str
    #: Seconds this process spent building it (0.0: it existed already).
    build_s: float
    #: ``HOME`` as the image's ``ENV`` sets it ("" when it does not).
    home: str = ""
    #: ``PATH`` as the image's ``ENV`` sets it ("" when it does not).
    path: str = ""
    #: The agent CLI's path in the image.
    command: str = TASK_CLAUDE


def _files(root: Path, *, skip_skills: bool) -> Iterator[tuple[str, Path]]:
    """``(posix relative path, path)`` of every entry of the build context, sorted; with
    ``skip_skills`` nothing below ``skills/``. Symlinks are kept as links (docker's context
    keeps them too)."""
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if skip_skills and (rel == "skills" or rel.startswith("skills/")):
            continue
        yield rel, path


def skills_source(task: TaskSpec, with_skills: bool) -> Path | None:
    """The directory the image's ``skills/`` is built from: none for the arms without skills,
    the with-skill@REF arm's copy at REF (``TaskSpec.skills_dir``), else
    ``environment/skills`` as shipped."""
    if not with_skills:
        return None
    return task.skills_dir if task.skills_dir is not None else task.environment / "skills"


def _context_files(task: TaskSpec, with_skills: bool) -> list[tuple[str, Path]]:
    """The build context of the arm: ``environment/`` without its ``skills/``, then the
    skills source's entries under ``skills/``, in one sorted order (as paths sort, so the
    as-shipped context keeps the hash it had)."""
    env = task.environment
    source = skills_source(task, with_skills)
    if source == env / "skills":
        return list(_files(env, skip_skills=False))
    out = list(_files(env, skip_skills=True))
    if source is not None and source.is_dir():
        out.append(("skills", source))
        out += [("skills/" + rel, path) for rel, path in _files(source, skip_skills=False)
                if rel != REVISION_MARKER]
    out.sort(key=lambda entry: tuple(entry[0].split("/")))
    return out


def _layer(cli: Path | CliLayer) -> CliLayer:
    return cli if isinstance(cli, CliLayer) else claude_layer(cli)


def context_hash(task: TaskSpec, with_skills: bool, cli: Path | CliLayer) -> str:
    """The hash naming a (task, arm) image: the context that arm sees, byte for byte, and the
    CLI's identity (its files' sizes and modification times: reading 200 MB per session to
    hash it would cost more than the build it saves). ``cli``: the Claude Code binary or
    another agent's :class:`CliLayer`."""
    digest = hashlib.sha256(f"{IMAGE_FORMAT}\0{with_skills}\0".encode())
    for rel, path in _context_files(task, with_skills):
        digest.update(rel.encode() + b"\0")
        if path.is_symlink():
            digest.update(b"L" + os.readlink(path).encode())
        elif path.is_file():
            digest.update(b"F%o\0" % (path.stat().st_mode & 0o111))
            with path.open("rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(chunk)
        else:
            digest.update(b"D")
    layer = _layer(cli)
    # Claude Code's as it has always been hashed (its existing images stay valid).
    identity = (layer.identity.partition(":")[2] if layer.agent == CLAUDE_CODE
                else layer.identity)
    digest.update(f"\0cli:{identity}".encode())
    return digest.hexdigest()[:16]


def image_tag(task: TaskSpec, with_skills: bool, digest: str, agent: str = CLAUDE_CODE) -> str:
    """``skilllift-task-<task>:<arm>-<hash>`` (docker's allowed characters), with the agent
    before the hash when it is not Claude Code (``noskills-codex-<hash>``)."""
    name = re.sub(r"[^a-z0-9_.-]+", "-", task.root.name.lower()).strip("-.")[:80] or "task"
    arm = WITH_SKILLS if with_skills else WITHOUT_SKILLS
    who = "" if agent == CLAUDE_CODE else f"{agent}-"
    return f"skilllift-task-{name}:{arm}-{who}{digest}"


def cli_image_tag(cli: Path | CliLayer) -> str:
    """``skilllift-agent-cli:<hash>``: the image holding only an agent's CLI layer under
    ``/opt/skilllift`` (imported once per CLI; every task image copies it from there)."""
    identity = _layer(cli).identity
    digest = hashlib.sha256(f"{IMAGE_FORMAT}:{identity}".encode()).hexdigest()[:16]
    return f"skilllift-agent-cli:{digest}"


#: The stage name the CLI image gets in a task's Dockerfile.
CLI_STAGE = "skilllift-agent-cli"
_FROM = re.compile(r"^\s*FROM\s", re.I)


def with_cli_stage(dockerfile: str, cli_image: str) -> str:
    """``dockerfile`` with a first stage ``FROM <cli_image> AS skilllift-agent-cli`` put
    before its own first ``FROM`` (after its parser directives, comments and global ``ARG``
    lines, which must stay first): a local image as a stage is never pulled, where ``COPY
    --from=<image>`` would be."""
    lines = dockerfile.rstrip("\n").split("\n")
    first = next((i for i, line in enumerate(lines) if _FROM.match(line)), len(lines))
    return "\n".join([*lines[:first], f"FROM {cli_image} AS {CLI_STAGE}", *lines[first:]])


def _context_tar(task: TaskSpec, with_skills: bool, cli_image: str,
                 labels: dict[str, str]) -> Path:
    """The build context as a tar file: the environment (skills emptied for no-skill: an
    empty ``skills/`` stays, so ``COPY skills …`` copies nothing rather than failing) and the
    Dockerfile with the CLI layer appended (``COPY --from`` the local CLI image)."""
    env = task.environment
    dockerfile = (env / "Dockerfile").read_text(encoding="utf-8")
    label_text = " ".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    dockerfile = with_cli_stage(dockerfile, cli_image) + (
        "\n\n# skilllift: the agent CLI, from this machine (no network)\n"
        f"COPY --from={CLI_STAGE} /opt/skilllift/ /opt/skilllift/\nLABEL {label_text}\n")
    fd, name = tempfile.mkstemp(prefix="skilllift-task-context-", suffix=".tar")
    os.close(fd)
    out = Path(name)
    try:
        with tarfile.open(out, "w") as tar:
            for rel, path in _context_files(task, with_skills):
                if rel == "Dockerfile":
                    continue
                tar.add(path, arcname=rel, recursive=False)
            if skills_source(task, with_skills) is None and (env / "skills").is_dir():
                info = tarfile.TarInfo("skills")
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            data = dockerfile.encode()
            info = tarfile.TarInfo("Dockerfile")
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    except BaseException:
        out.unlink(missing_ok=True)
        raise
    return out


def _cli_rootfs(cli: Path | CliLayer) -> Path:
    """A tar holding only the CLI layer under ``/opt/skilllift`` (for ``docker import``)."""
    fd, name = tempfile.mkstemp(prefix="skilllift-agent-cli-", suffix=".tar")
    os.close(fd)
    out = Path(name)
    try:
        with out.open("wb") as fh:
            _layer(cli).plan().write(fh)
    except BaseException:
        out.unlink(missing_ok=True)
        raise
    return out


@contextlib.contextmanager
def _build_lock(tag: str) -> Iterator[None]:
    """One build of a tag at a time on this machine (``-n`` workers asking for the same
    image: the second waits, then finds it built)."""
    path = Path(tempfile.gettempdir()) / (
        "skilllift-build-" + hashlib.sha256(tag.encode()).hexdigest()[:16] + ".lock")
    with path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


class TaskImages:
    """The (task, arm, agent) images of one process: looked up by tag, built when missing.

    ``cli``: the Claude Code binary (None: Claude Code tasks cannot run here); ``layers``:
    another agent's :class:`CliLayer` by name (made on first use; ``runners/task_cli.py``)."""

    def __init__(self, client: Any, cli: Path | None, *,
                 log: Callable[[str], None] | None = None,
                 layers: Callable[[str], CliLayer] | None = None) -> None:
        self.client = client
        self.cli = cli
        self.log = log or (lambda line: None)
        self._layers = layers
        self._layer_cache: dict[str, CliLayer] = {}
        self._known: dict[str, TaskImage] = {}
        #: Tags this process built (a second session on the same tasks builds none).
        self.built: list[str] = []

    def layer(self, agent: str) -> CliLayer:
        """The CLI layer of ``agent`` (a :class:`TaskImageError` says why there is none)."""
        if agent not in self._layer_cache:
            if agent == CLAUDE_CODE:
                if self.cli is None:
                    raise TaskImageError("tasks need the Claude Code binary to layer into "
                                         "their images: pip install claude-agent-sdk")
                self._layer_cache[agent] = claude_layer(self.cli)
            elif self._layers is None:
                raise TaskImageError(f"no CLI layer is known for {agent}")
            else:
                self._layer_cache[agent] = self._layers(agent)
        return self._layer_cache[agent]

    def get(self, task: TaskSpec, with_skills: bool, agent: str = CLAUDE_CODE) -> TaskImage:
        """The image for ``task``'s arm with ``agent``'s CLI: existing, else built now (under
        a machine-wide lock per tag)."""
        import docker.errors

        layer = self.layer(agent)
        tag = image_tag(task, with_skills, context_hash(task, with_skills, layer), agent)
        known = self._known.get(tag)
        if known is not None:
            return known
        started = time.monotonic()
        with _build_lock(tag):
            try:
                img = self.client.images.get(tag)
                build_s = 0.0
            except docker.errors.ImageNotFound:
                img = self._build(task, with_skills, tag, layer)
                build_s = time.monotonic() - started
                self.built.append(tag)
        config = img.attrs.get("Config") or {}
        env = dict(str(e).partition("=")[::2] for e in config.get("Env") or [])
        image = TaskImage(tag=tag, image_id=img.id, user=str(config.get("User") or ""),
                          workdir=str(config.get("WorkingDir") or "/"), build_s=build_s,
                          home=env.get("HOME", ""), path=env.get("PATH", ""),
                          command=layer.command)
        # Later runs of this process find it built: no build time of theirs.
        self._known[tag] = dataclasses.replace(image, build_s=0.0)
        return image

    def _build(self, task: TaskSpec, with_skills: bool, tag: str, layer: CliLayer) -> Any:
        import docker.errors

        digest = tag.rpartition("-")[2]
        labels = {LABEL_TASK_HASH: digest, LABEL_TASK: task.root.name,
                  LABEL_ARM: WITH_SKILLS if with_skills else WITHOUT_SKILLS}
        if layer.agent != CLAUDE_CODE:
            labels[LABEL_AGENT] = layer.agent
        self.log(f"building {tag} from {task.environment}")
        context = _context_tar(task, with_skills, self._cli_image(layer), labels)
        lines: list[str] = []
        try:
            with context.open("rb") as fh:
                stream = self.client.api.build(
                    fileobj=fh, custom_context=True, tag=tag, rm=True, forcerm=True,
                    decode=True, network_mode="none", timeout=int(task.build_timeout_s))
                for chunk in stream:
                    if "error" in chunk:
                        tail = "".join(lines[-8:]).strip()
                        raise TaskImageError(
                            f"task {task.root.name}: building its image failed: "
                            f"{str(chunk['error']).strip()}" + (f"\n{tail}" if tail else ""))
                    if chunk.get("stream"):
                        lines.append(str(chunk["stream"]))
        except docker.errors.DockerException as exc:
            raise TaskImageError(f"task {task.root.name}: building its image failed: "
                                 f"{exc}") from exc
        finally:
            context.unlink(missing_ok=True)
        img = self.client.images.get(tag)
        self._smoke(task, img, layer.command)
        return img

    def _cli_image(self, layer: CliLayer) -> str:
        """The CLI-only image task images copy the CLI from: imported once per CLI."""
        import docker.errors
        from docker.utils import parse_repository_tag

        tag = cli_image_tag(layer)
        with _build_lock(tag):
            try:
                self.client.images.get(tag)
            except docker.errors.ImageNotFound:
                rootfs = _cli_rootfs(layer)
                try:
                    repository, tag_part = parse_repository_tag(tag)
                    self.client.api.import_image_from_file(str(rootfs), repository=repository,
                                                           tag=tag_part)
                finally:
                    rootfs.unlink(missing_ok=True)
                self.built.append(tag)
        return tag

    def _smoke(self, task: TaskSpec, img: Any, command: str = TASK_CLAUDE) -> None:
        """``<cli> --version`` in the new image: a base the CLI cannot run on (no glibc)
        fails here, once, with the reason, instead of in every run."""
        import docker.errors

        try:
            # A HOME of its own: a CLI that writes state on start leaves none in the image.
            self.client.containers.run(img.id, [command, "--version"], remove=True,
                                       network_mode="none", entrypoint=[], user="0",
                                       environment={"HOME": "/tmp"})
        except docker.errors.ContainerError as exc:
            with contextlib.suppress(docker.errors.DockerException):
                self.client.images.remove(img.id, force=True)
            raise TaskImageError(
                f"task {task.root.name}: the agent CLI does not run in the task's image "
                f"(`{command} --version` exited {exc.exit_status}: "
                f"{(exc.stderr or b'').decode('utf-8', 'replace').strip()[:300]}); the task's "
                "base image must be glibc-based (Debian, Ubuntu, python:*-slim)") from None
