"""Images for the docker runner: a minimal offline build, the Dockerfile build, version checks.

Two ways to get an image the :class:`~pytest_skilllift.runners.docker.DockerRunner` can use:

- :func:`build_from_local` (``skilllift image build --tag T --from-local``) needs no registry.
  It assembles a small root filesystem tarball from files already on this machine — the
  Claude Code CLI binary (by default the one bundled in the ``claude-agent-sdk`` wheel), the
  shared libraries ``ldd`` says it needs, bash and busybox for the CLI's Bash tool, tini as
  PID 1, CA certificates, ``/etc/passwd``/``/etc/group`` with a non-root ``agent`` user and
  its HOME — and ``docker import``\\ s it. This is what CI and air-gapped users use.
- :func:`build_from_dockerfile` builds :data:`DOCKERFILE` (the same text as the repo's
  ``docker/Dockerfile``) on a connected machine: a slim base, the CLI from npm at
  :data:`PINNED_CLI_VERSION`, the ``agent`` user, tini.

Both images carry the same labels (:data:`LABEL_CLI_VERSION`, :data:`LABEL_HOME`…) so the
runner needs no knowledge of how an image was made. The CLI version is part of what a lift
number means (SCORING.md pins it), so :func:`image_cli_version` reads it from the image itself
and :func:`cli_version_mismatch` tells provenance whether it differs from the pinned one.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_skilllift.model import PINNED_CLI_VERSION, cli_version_mismatch
from pytest_skilllift.runners.claude import bundled_claude, cli_version

#: The non-root user the agent runs as, in every skilllift image.
AGENT_USER = "agent"
AGENT_UID = 1000
AGENT_GID = 1000
AGENT_HOME = "/home/agent"
#: The agent's working directory: separate from HOME so ``~/.claude`` is only the user-level
#: config (a project-level ``.claude`` in the cwd would be read a second time otherwise).
AGENT_WORKDIR = "/home/agent/work"
#: Where the CLI lives inside the image.
IMAGE_CLAUDE = "/usr/local/bin/claude"
IMAGE_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"

#: The default tag of the offline test image (tests and ``.ci/docker-setup.sh`` build it).
TEST_IMAGE_TAG = "skilllift-test:local"

LABEL_CLI_VERSION = "skilllift.cli_version"
LABEL_CLAUDE = "skilllift.claude"
LABEL_USER = "skilllift.user"
LABEL_HOME = "skilllift.home"
LABEL_WORKDIR = "skilllift.workdir"
LABEL_SOURCE = "skilllift.source"  # "from-local" | "dockerfile"
#: "tini" when the image's entrypoint is an init; "none" asks the runner for docker's own.
LABEL_INIT = "skilllift.init"

#: Kept byte-identical to the repo's ``docker/Dockerfile`` (a test checks it), so an installed
#: package can build the connected-machine image without the source tree.
DOCKERFILE = """\
# The skilllift agent image for connected machines: a slim base, the Claude Code CLI at a
# pinned version, a non-root user (the base's "node" user, uid 1000, is replaced by "agent"),
# tini as PID 1. npm's global prefix in the node images is /usr/local. Build it with
#   skilllift image build --tag skilllift:2.1.332
# (air-gapped machines: add --from-local, which needs no registry at all).
FROM node:22-bookworm-slim

# Keep in step with pytest_skilllift.runners.image.PINNED_CLI_VERSION.
ARG CLAUDE_CODE_VERSION=2.1.332

# tini reaps the CLI's children; bash is what the CLI's Bash tool runs; CA certificates for
# HTTPS to the Messages API. Nothing else: the image is the measurement environment.
RUN apt-get update \\
 && apt-get install -y --no-install-recommends tini bash ca-certificates \\
 && rm -rf /var/lib/apt/lists/* \\
 && npm install -g --no-fund --no-audit "@anthropic-ai/claude-code@${CLAUDE_CODE_VERSION}" \\
 && npm cache clean --force \\
 && test -x /usr/local/bin/claude \\
 && (userdel -r node 2>/dev/null || true) \\
 && (groupdel node 2>/dev/null || true) \\
 && groupadd -g 1000 agent \\
 && useradd -u 1000 -g 1000 -m -d /home/agent -s /bin/bash agent \\
 && install -d -o agent -g agent -m 0755 /home/agent/.claude /home/agent/.claude/skills \\
      /home/agent/work

ENV HOME=/home/agent \\
    SHELL=/bin/bash \\
    DISABLE_AUTOUPDATER=1 \\
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1

LABEL skilllift.cli_version="${CLAUDE_CODE_VERSION}" \\
      skilllift.claude="/usr/local/bin/claude" \\
      skilllift.user="agent" \\
      skilllift.home="/home/agent" \\
      skilllift.workdir="/home/agent/work" \\
      skilllift.source="dockerfile" \\
      skilllift.init="tini"

USER agent
WORKDIR /home/agent/work
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["claude", "--version"]
"""


class ImageBuildError(RuntimeError):
    """The image could not be built or failed its smoke check."""


@dataclass(frozen=True)
class ImageInfo:
    """What a build produced (printed by ``skilllift image build``)."""

    tag: str
    image_id: str
    cli_version: str
    size_bytes: int
    seconds: float
    source: str
    #: Non-empty when the image's CLI differs from :data:`PINNED_CLI_VERSION`.
    warnings: tuple[str, ...] = ()



def mismatch_message(version: str, pinned: str = PINNED_CLI_VERSION) -> str | None:
    """A human-readable warning when the CLI version differs from the pinned one."""
    if not cli_version_mismatch(version, pinned):
        return None
    shown = version or "unknown"
    return f"CLI version {shown} differs from the pinned {pinned} (provenance will flag it)"


# -- reading an image -----------------------------------------------------------------------

#: image id → CLI version; reading it runs a container, so do it once per image per process.
_VERSION_CACHE: dict[str, str] = {}


def image_cli_version(client: Any, image: str) -> str:
    """The Claude Code version inside ``image``, e.g. ``2.1.332``; ``""`` when unreadable.

    Runs ``claude --version`` in a throwaway container with no network (the label states
    what the build *intended*; the binary is what actually runs), falling back to the
    :data:`LABEL_CLI_VERSION` label when the container cannot run.
    """
    img = client.images.get(image)
    if img.id in _VERSION_CACHE:
        return _VERSION_CACHE[img.id]
    labels = dict(img.labels or {})
    claude = labels.get(LABEL_CLAUDE, "claude")
    version = ""
    try:
        out = client.containers.run(
            img.id, [claude, "--version"], remove=True, network_mode="none",
            stdout=True, stderr=False, environment={"DISABLE_AUTOUPDATER": "1"},
        )
        text = out.decode("utf-8", "replace").strip() if isinstance(out, bytes) else ""
        version = text.split(" ", 1)[0] if text else ""
    except Exception:  # engine or image trouble: the label is still evidence worth recording
        version = ""
    if not re.fullmatch(r"\d+(\.\d+)+\S*", version):
        version = labels.get(LABEL_CLI_VERSION, "")
    _VERSION_CACHE[img.id] = version
    return version


# -- the --from-local root filesystem ---------------------------------------------------------


@dataclass
class _Entry:
    kind: str  # "dir" | "file" | "bytes" | "symlink"
    mode: int = 0o755
    uid: int = 0
    gid: int = 0
    source: str = ""  # host path for "file"
    data: bytes = b""  # content for "bytes"
    target: str = ""  # for "symlink"


@dataclass
class RootFS:
    """An in-memory plan of a root filesystem, written as one tarball for ``docker import``.

    Host files are added with the symlinks on their path reproduced (``/lib`` → ``usr/lib``
    on a merged-/usr Debian), so a binary's interpreter and libraries resolve inside the
    image exactly as they do on the host.
    """

    entries: dict[str, _Entry] = field(default_factory=dict)

    def add_dir(self, path: str, mode: int = 0o755, uid: int = 0, gid: int = 0) -> None:
        """A directory (parents are added as root 0755 when missing)."""
        path = _norm(path)
        self._parents(path)
        current = self.entries.get(path)
        if current is None or current.kind == "dir":
            self.entries[path] = _Entry("dir", mode, uid, gid)

    def add_bytes(self, path: str, data: bytes, mode: int = 0o644) -> None:
        """A file with the given content."""
        path = _norm(path)
        self._parents(path)
        self.entries[path] = _Entry("bytes", mode, data=data)

    def add_symlink(self, path: str, target: str) -> None:
        """A symlink (kept as is; relative targets resolve inside the image)."""
        path = _norm(path)
        self._parents(path)
        self.entries.setdefault(path, _Entry("symlink", 0o777, target=target))

    def add_file(self, host_path: str | Path, dest: str, mode: int | None = None) -> None:
        """A host file copied to ``dest`` (dereferenced)."""
        dest = _norm(dest)
        self._parents(dest)
        st = os.stat(host_path)
        self.entries[dest] = _Entry(
            "file", (st.st_mode & 0o7777) if mode is None else mode, source=str(host_path)
        )

    def add_host_path(self, path: str | Path, _depth: int = 0) -> str:
        """Copy a host file to the same path, reproducing symlinks along the way.

        Returns the fully resolved path of the file inside the image.
        """
        if _depth > 40:
            raise ImageBuildError(f"too many symlinks resolving {path}")
        parts = _norm(str(path)).strip("/").split("/")
        current = ""
        for i, part in enumerate(parts):
            current = f"{current}/{part}"
            if os.path.islink(current):
                target = os.readlink(current)
                self.add_symlink(current, target)
                resolved = os.path.normpath(os.path.join(os.path.dirname(current), target))
                return self.add_host_path(os.path.join(resolved, *parts[i + 1:]), _depth + 1)
            if i < len(parts) - 1:
                if current not in self.entries:
                    self.add_dir(current)
            else:
                self.add_file(current, current)
        return current

    def add_binary(self, host_path: str | Path, dest: str | None = None) -> None:
        """An executable plus every shared library ``ldd`` lists for it."""
        if dest is None:
            self.add_host_path(host_path)
        else:
            self.add_file(host_path, dest, 0o755)
        for lib in shared_libraries(host_path):
            self.add_host_path(lib)

    def write(self, fileobj: io.BufferedIOBase | Any, mtime: float | None = None) -> None:
        """Write the tarball (uncompressed: ``docker import`` is faster without gzip)."""
        stamp = int(time.time() if mtime is None else mtime)
        with tarfile.open(fileobj=fileobj, mode="w|", format=tarfile.PAX_FORMAT) as tar:
            # Sorted, so parents come before children.
            for path in sorted(self.entries):
                entry = self.entries[path]
                info = tarfile.TarInfo(path.lstrip("/"))
                info.mode, info.uid, info.gid, info.mtime = entry.mode, entry.uid, entry.gid, stamp
                info.uname = AGENT_USER if entry.uid == AGENT_UID else "root"
                info.gname = AGENT_USER if entry.gid == AGENT_GID else "root"
                if entry.kind == "dir":
                    info.type = tarfile.DIRTYPE
                    tar.addfile(info)
                elif entry.kind == "symlink":
                    info.type, info.linkname = tarfile.SYMTYPE, entry.target
                    tar.addfile(info)
                elif entry.kind == "bytes":
                    info.size = len(entry.data)
                    tar.addfile(info, io.BytesIO(entry.data))
                else:
                    info.size = os.stat(entry.source).st_size
                    with open(entry.source, "rb") as fh:
                        tar.addfile(info, fh)

    def _parents(self, path: str) -> None:
        parent = os.path.dirname(path)
        if parent in ("/", "") or parent in self.entries:
            return
        self.add_dir(parent)


def _norm(path: str) -> str:
    return "/" + os.path.normpath(path).lstrip("/")


_LDD_LINE = re.compile(r"(?:=>\s*)?(/\S+)\s+\(0x[0-9a-f]+\)")


def shared_libraries(binary: str | Path) -> list[str]:
    """Absolute paths of the shared libraries (and loader) ``ldd`` lists for ``binary``.

    A static binary (or no ``ldd``) yields an empty list.
    """
    ldd = shutil.which("ldd")
    if ldd is None:
        return []
    proc = subprocess.run([ldd, str(binary)], capture_output=True, text=True, check=False)
    libs: list[str] = []
    for line in proc.stdout.splitlines():
        match = _LDD_LINE.search(line)
        if match and match.group(1) not in libs:
            libs.append(match.group(1))
    return libs


def _find_init() -> str | None:
    """tini from Debian's package, else the one the docker engine ships (it is tini too)."""
    for candidate in (shutil.which("tini"), "/usr/bin/tini", "/usr/bin/tini-static",
                      shutil.which("docker-init"), "/usr/libexec/docker/docker-init"):
        if candidate and os.path.isfile(candidate):
            return candidate
    return None


def _etc_files(root: RootFS) -> None:
    root.add_bytes("/etc/passwd", (
        "root:x:0:0:root:/root:/bin/sh\n"
        f"{AGENT_USER}:x:{AGENT_UID}:{AGENT_GID}:skilllift agent:{AGENT_HOME}:/bin/bash\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
    ).encode())
    root.add_bytes("/etc/group", (
        f"root:x:0:\n{AGENT_USER}:x:{AGENT_GID}:\nnogroup:x:65534:\n"
    ).encode())
    # glibc resolves users and hosts through this; docker bind-mounts /etc/hosts at run time.
    root.add_bytes("/etc/nsswitch.conf", b"passwd: files\ngroup: files\nhosts: files dns\n")
    root.add_bytes("/etc/os-release", (
        b'NAME="skilllift agent"\nID=skilllift\nPRETTY_NAME="skilllift agent (from-local)"\n'
    ))


def plan_rootfs(claude: Path, version: str) -> tuple[RootFS, str]:
    """The root filesystem for ``--from-local``; returns it and the init it uses (or "")."""
    root = RootFS()
    for d in ("/dev", "/proc", "/sys", "/etc", "/usr/local/bin", "/var"):
        root.add_dir(d)
    root.add_dir("/tmp", 0o1777)
    root.add_dir("/var/tmp", 0o1777)
    root.add_dir("/root", 0o700)
    for d in (AGENT_HOME, f"{AGENT_HOME}/.claude", f"{AGENT_HOME}/.claude/skills", AGENT_WORKDIR):
        root.add_dir(d, 0o755, AGENT_UID, AGENT_GID)

    root.add_binary(claude, IMAGE_CLAUDE)
    init = _find_init()
    if init:
        root.add_binary(init, "/usr/bin/tini")
    bash = shutil.which("bash")
    if bash:
        root.add_binary(bash, "/usr/bin/bash")
    busybox = shutil.which("busybox")
    if busybox:
        root.add_binary(busybox, "/usr/bin/busybox")
    else:  # a minimal set of host tools so the Bash tool and the runner's keeper work
        for tool in ("sh", "sleep", "id", "ls", "cat", "env", "which", "mkdir", "rm",
                     "head", "tail", "grep", "sed", "find", "wc"):
            path = shutil.which(tool)
            if path:
                root.add_binary(path, f"/usr/bin/{tool}")
    _etc_files(root)
    certs = "/etc/ssl/certs/ca-certificates.crt"
    if os.path.isfile(certs):
        root.add_file(certs, certs, 0o644)
    root.add_bytes("/etc/skilllift-image", f"claude={version}\nsource=from-local\n".encode())

    # Merged /usr like Debian: /bin, /lib… point into /usr unless a host path made them dirs.
    for top in ("bin", "sbin", "lib", "lib64"):
        root.add_dir(f"/usr/{top}")
        if f"/{top}" not in root.entries:
            root.add_symlink(f"/{top}", f"usr/{top}")
    if busybox:
        applets = subprocess.run([busybox, "--list"], capture_output=True, text=True,
                                 check=False).stdout.split()
        for applet in applets:
            if f"/usr/bin/{applet}" not in root.entries:
                root.add_symlink(f"/usr/bin/{applet}", "busybox")
    if root.entries.get("/bin", _Entry("symlink")).kind == "dir" and "/bin/sh" not in root.entries:
        root.add_symlink("/bin/sh", "/usr/bin/busybox" if busybox else "/usr/bin/sh")
    if bash and "/bin/bash" not in root.entries and root.entries["/bin"].kind == "dir":
        root.add_symlink("/bin/bash", "/usr/bin/bash")
    return root, ("tini" if init else "none")


def import_rootfs(client: Any, root: RootFS, tag: str, changes: list[str], *,
                  what: str = "rootfs", log: Callable[[str], None] = print) -> None:
    """``docker import`` of ``root`` as ``tag`` with the Dockerfile ``changes`` (ENV, USER,
    CMD…), through a tarball in a temporary folder: every registry-free image's last step
    (this one, the task base)."""
    with tempfile.TemporaryDirectory(prefix="skilllift-image-") as tmp:
        tar_path = Path(tmp) / "rootfs.tar"
        with open(tar_path, "wb") as fh:
            root.write(fh)
        log(f"{what} tarball: {tar_path.stat().st_size / 1e6:.0f} MB, "
            f"{len(root.entries)} entries; importing as {tag}")
        from docker.utils import parse_repository_tag  # the docker SDK: only when building

        repository, tag_part = parse_repository_tag(tag)
        client.api.import_image_from_file(
            str(tar_path), repository=repository, tag=tag_part or "latest", changes=changes)


def import_changes(version: str, init: str, source: str = "from-local") -> list[str]:
    """Dockerfile instructions applied by ``docker import`` (same labels as the Dockerfile)."""
    changes = [
        f"ENV PATH={IMAGE_PATH}",
        f"ENV HOME={AGENT_HOME}",
        "ENV SHELL=/bin/bash",
        f"USER {AGENT_USER}",
        f"WORKDIR {AGENT_WORKDIR}",
        f'CMD ["{IMAGE_CLAUDE}", "--version"]',
        f"LABEL {LABEL_CLI_VERSION}={version} {LABEL_CLAUDE}={IMAGE_CLAUDE} "
        f"{LABEL_USER}={AGENT_USER} {LABEL_HOME}={AGENT_HOME} {LABEL_WORKDIR}={AGENT_WORKDIR} "
        f"{LABEL_SOURCE}={source} {LABEL_INIT}={init}",
    ]
    if init == "tini":
        changes.append('ENTRYPOINT ["/usr/bin/tini", "--"]')
    return changes


def build_from_local(
    client: Any,
    tag: str,
    claude: str | Path | None = None,
    *,
    smoke: bool = True,
    log: Callable[[str], None] = print,
) -> ImageInfo:
    """Build ``tag`` with no registry access from the CLI binary on this machine.

    ``claude`` defaults to the binary bundled in the ``claude-agent-sdk`` wheel. With
    ``smoke`` the image then runs ``claude --version`` as the agent user; a missing library
    or a broken layout fails the build here instead of in every run.
    """
    started = time.monotonic()
    binary = Path(claude) if claude else bundled_claude()
    if binary is None or not binary.is_file():
        raise ImageBuildError(
            "no Claude Code binary: install claude-agent-sdk (it bundles one) or pass --claude PATH"
        )
    version = cli_version(str(binary))
    if not version:
        raise ImageBuildError(f"{binary} --version printed nothing: is it the Claude Code CLI?")
    log(f"planning root filesystem around {binary} (Claude Code {version})")
    root, init = plan_rootfs(binary, version)
    import_rootfs(client, root, tag, import_changes(version, init), log=log)
    img = client.images.get(tag)
    warnings: list[str] = []
    if smoke:
        _VERSION_CACHE.pop(img.id, None)
        seen = image_cli_version(client, tag)
        if seen != version:
            raise ImageBuildError(
                f"smoke check failed: claude --version in {tag} gave {seen!r}, expected {version}"
            )
    message = mismatch_message(version)
    if message:
        warnings.append(message)
    return ImageInfo(tag=tag, image_id=img.id, cli_version=version,
                     size_bytes=int(img.attrs.get("Size") or 0),
                     seconds=time.monotonic() - started, source="from-local",
                     warnings=tuple(warnings))


def build_from_dockerfile(
    client: Any,
    tag: str,
    version: str = PINNED_CLI_VERSION,
    *,
    dockerfile: str | Path | None = None,
    log: Callable[[str], None] = print,
) -> ImageInfo:
    """Build the connected-machine image (needs the base image registry and npm).

    ``dockerfile`` defaults to the packaged copy of ``docker/Dockerfile``.
    """
    started = time.monotonic()
    text = Path(dockerfile).read_text() if dockerfile else DOCKERFILE
    with tempfile.TemporaryDirectory(prefix="skilllift-dockerfile-") as tmp:
        Path(tmp, "Dockerfile").write_text(text)
        stream: Iterable[dict[str, Any]] = client.api.build(
            path=tmp, tag=tag, rm=True, decode=True,
            buildargs={"CLAUDE_CODE_VERSION": version},
        )
        for chunk in stream:
            if "error" in chunk:
                raise ImageBuildError(str(chunk["error"]).strip())
            line = str(chunk.get("stream", "")).rstrip()
            if line:
                log(line)
    img = client.images.get(tag)
    _VERSION_CACHE.pop(img.id, None)
    seen = image_cli_version(client, tag)
    warnings = tuple(m for m in (mismatch_message(seen),) if m)
    return ImageInfo(tag=tag, image_id=img.id, cli_version=seen,
                     size_bytes=int(img.attrs.get("Size") or 0),
                     seconds=time.monotonic() - started, source="dockerfile", warnings=warnings)
