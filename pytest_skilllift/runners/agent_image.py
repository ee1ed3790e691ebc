"""An image for the docker runner that also carries Codex CLI, Gemini CLI and OpenCode.

Built on top of an existing skilllift image (``--from-local`` or the Dockerfile's), with no
registry access, from the npm CLIs installed on this machine, each as its agent's
``ImageLayout`` says (``agents/<name>.py``): Codex's static binary, OpenCode's Bun binary and
ripgrep, Node.js and Gemini CLI's bundle, each with the shared libraries ``ldd`` lists.
The image records each agent's version in the ``skilllift.agents`` label (a JSON object),
which the runner reports as the run's CLI version. docs/agents.md.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import tarfile
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pytest_skilllift.agents.base import Agent
from pytest_skilllift.agents.registry import agent
from pytest_skilllift.runners import agents
from pytest_skilllift.runners.image import ImageBuildError, RootFS

#: The image label holding ``{agent: version}``.
LABEL_AGENTS = "skilllift.agents"
#: Where a Node.js CLI's bundle goes in the image, in a folder named for the agent (Gemini
#: CLI; a wrapper on PATH runs it with node).
BUNDLE_ROOT = "/opt/skilllift"


def node_modules(cli: str) -> Path:
    """The ``node_modules`` directory an npm CLI on PATH was installed into."""
    real = Path(os.path.realpath(cli))
    for parent in real.parents:
        if parent.name == "node_modules":
            return parent
    raise ImageBuildError(f"{cli} is not an npm-installed CLI (no node_modules above {real})")


def native_binary(root: Path, name: str, under: str) -> Path:
    """The largest file called ``name`` below ``root/under`` (the platform binary npm put
    beside its JavaScript launcher); the non-"baseline" build first."""
    found = [p for p in (root / under).rglob(name) if p.is_file() and p.stat().st_size > 1e6]
    if not found:
        raise ImageBuildError(f"no {name} binary under {root / under}")
    found.sort(key=lambda p: ("baseline" in str(p), -p.stat().st_size))
    return found[0]


def plan_agents(clis: Mapping[str, str]) -> tuple[RootFS, dict[str, str]]:
    """The files to add for each agent CLI (on this machine) and their versions, laid out as
    its :class:`~pytest_skilllift.agents.base.ImageLayout` says."""
    root = RootFS()
    versions: dict[str, str] = {}
    for name, cli in clis.items():
        defn = agent(name)
        if defn.image is None:
            raise ImageBuildError(f"{defn.title} is not added to an image: the base image "
                                  "carries it")
        versions[name] = agents.cli_version(cli)
        modules = node_modules(cli)
        if defn.image.native is not None:
            binary, under = defn.image.native
            root.add_binary(native_binary(modules, binary, under), f"/usr/local/bin/{defn.binary}")
        if defn.image.node_bundle:
            _add_node_bundle(root, defn, cli)
        for binary, dest, what, hint in defn.image.extra:
            found = shutil.which(binary)
            if found is None:
                raise ImageBuildError(f"{defn.title} needs {what} on PATH to copy into the "
                                      f"image; {hint}")
            root.add_binary(found, dest)
    return root, versions


def _add_node_bundle(root: RootFS, defn: Agent, cli: str) -> None:
    """Node, the package's files under ``/opt/skilllift/<agent>`` and a wrapper on PATH."""
    node = shutil.which("node")
    if node is None:
        raise ImageBuildError(f"{defn.title} needs node on PATH to copy into the image")
    root.add_binary(node, "/usr/bin/node")
    where = f"{BUNDLE_ROOT}/{defn.name}"
    bundle = Path(os.path.realpath(cli)).parent
    package = bundle.parent
    for path in sorted(package.rglob("*")):
        rel = path.relative_to(package).as_posix()
        if rel.startswith("node_modules") or not path.is_file():
            continue
        root.add_file(path, f"{where}/{rel}", 0o755 if os.access(path, os.X_OK) else 0o644)
    root.add_bytes(f"/usr/local/bin/{defn.binary}", (
        f'#!/bin/sh\nexec /usr/bin/node {where}/{bundle.name}/'
        f'{Path(os.path.realpath(cli)).name} "$@"\n').encode(), 0o755)


def build_agents_image(client: Any, base: str, tag: str, clis: Mapping[str, str], *,
                       log: Callable[[str], None] = print) -> dict[str, str]:
    """Build ``tag`` FROM ``base`` with the agent CLIs added; returns their versions."""
    root, versions = plan_agents(clis)
    if not all(versions.values()):
        missing = [a for a, v in versions.items() if not v]
        raise ImageBuildError(f"could not read the version of {', '.join(missing)}")
    with tempfile.TemporaryDirectory(prefix="skilllift-agents-image-") as tmp:
        layer = Path(tmp) / "agents.tar"
        with layer.open("wb") as fh:
            root.write(fh)
        dockerfile = (f"FROM {base}\nUSER root\nADD agents.tar /\nUSER agent\n"
                      f"LABEL {LABEL_AGENTS}='{json.dumps(versions)}'\n").encode()
        context = Path(tmp) / "context.tar"
        with tarfile.open(context, "w") as tar:
            info = tarfile.TarInfo("Dockerfile")
            info.size = len(dockerfile)
            tar.addfile(info, io.BytesIO(dockerfile))
            tar.add(layer, "agents.tar")
        log(f"agents layer: {layer.stat().st_size / 1e6:.0f} MB ({', '.join(clis)}); "
            f"building {tag} from {base}")
        with context.open("rb") as fh:
            for chunk in client.api.build(fileobj=fh, custom_context=True, tag=tag, rm=True,
                                          decode=True):
                if "error" in chunk:
                    raise ImageBuildError(str(chunk["error"]).strip())
    return versions


def image_agent_versions(labels: Mapping[str, str]) -> dict[str, str]:
    """The ``skilllift.agents`` label of an image as ``{agent: version}`` (empty: none)."""
    try:
        data = json.loads(labels.get(LABEL_AGENTS) or "{}")
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}
