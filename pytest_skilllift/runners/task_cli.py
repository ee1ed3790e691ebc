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
  glibc's own (Node.js: ``libstdc++``, ``libgcc_s``; ripgrep: ``libpcre2-8``) goes to
  ``/opt/skilllift/libexec`` with those libraries in ``/opt/skilllift/lib`` and a ``sh``
  wrapper in ``bin`` that puts them on ``LD_LIBRARY_PATH``. glibc itself is the image's (a
  second libc beside the image's loader would not load), so a task image must be
  glibc-based — the rule the Claude Code binary already sets; the image's smoke check
  (``<cli> --version``) fails the build with the reason otherwise.

The run puts :data:`CLI_BIN` first on the CLI's ``PATH`` (OpenCode finds ripgrep there).
Pure planning (``ldd`` and ``stat`` of host files); no docker here.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pytest_skilllift.agents.registry import agent as agent_def
from pytest_skilllift.model import CLAUDE_CODE
from pytest_skilllift.runners.agent_image import native_binary, node_modules
from pytest_skilllift.runners.image import ImageBuildError, RootFS, shared_libraries

#: Where every file of the CLI layer goes in a task image.
CLI_ROOT = "/opt/skilllift"
CLI_BIN = f"{CLI_ROOT}/bin"
CLI_LIBEXEC = f"{CLI_ROOT}/libexec"
CLI_LIB = f"{CLI_ROOT}/lib"
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
class _Plan:
    """The host files of a layer (dest → source) and its generated files (dest → bytes)."""

    files: dict[str, str]
    data: dict[str, bytes]

    def executable(self, host: str | Path, name: str) -> str:
        """``host`` as ``bin/<name>`` (or ``libexec/<name>`` behind a wrapper setting
        ``LD_LIBRARY_PATH`` when it needs libraries beyond glibc); returns its path."""
        libs = extra_libraries(host)
        if not libs:
            self.files[f"{CLI_BIN}/{name}"] = str(host)
            return f"{CLI_BIN}/{name}"
        self.files[f"{CLI_LIBEXEC}/{name}"] = str(host)
        for lib in libs:
            self.files[f"{CLI_LIB}/{Path(lib).name}"] = lib
        self.data[f"{CLI_BIN}/{name}"] = (
            f'#!/bin/sh\nLD_LIBRARY_PATH="{CLI_LIB}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}" '
            f'exec {CLI_LIBEXEC}/{name} "$@"\n').encode()
        return f"{CLI_BIN}/{name}"


def plan_files(name: str, cli: str) -> tuple[dict[str, str], dict[str, bytes], str]:
    """The layer of the npm agent ``name`` whose CLI on this machine is ``cli``: host files
    by their path in the image, generated files (wrappers) by theirs, and the CLI's path."""
    defn = agent_def(name)
    if defn.image is None:
        raise ImageBuildError(f"{defn.title} has no image layout (agents/{name}.py)")
    plan = _Plan({}, {})
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
    return plan.files, plan.data, command


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
    files, data, command = plan_files(name, cli)
    digest = hashlib.sha256(name.encode())
    for dest, source in sorted(files.items()):
        st = os.stat(source)
        digest.update(f"\0{dest}:{st.st_size}:{int(st.st_mtime)}".encode())
    for dest, content in sorted(data.items()):
        digest.update(f"\0{dest}=".encode() + content)

    def plan() -> RootFS:
        root = RootFS()
        for dest, source in files.items():
            mode = 0o755 if os.access(source, os.X_OK) else 0o644
            root.add_file(source, dest, mode)
        for dest, content in data.items():
            root.add_bytes(dest, content, 0o755)
        return root

    return CliLayer(name, command, f"{name}:{digest.hexdigest()[:16]}", plan,
                    package_version(name, cli))
