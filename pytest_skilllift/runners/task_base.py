"""A base image for Harbor tasks built from this machine's Debian packages (no registry).

Task Dockerfiles start ``FROM`` a base image; where no registry is reachable, a user points
them at an image they have (docs/tasks.md). This module builds one such base with ``docker
import`` of a root filesystem assembled from files already installed here — the same way the
offline agent image is made (``runners/image.py``): busybox and bash for the shell, Python 3
with its standard library (Debian's ``python3``) and pytest with its dependencies (Debian's
``python3-pytest``) for the verifier, ``/etc`` files with ``root`` as the user, ``/app`` as the
working directory. The demo's tasks and the docker tests build ``FROM`` it
(:data:`TASK_BASE_TAG`; ``skilllift image task-base``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_skilllift.runners.image import IMAGE_PATH, ImageBuildError, RootFS, import_rootfs

#: The tag the demo's task Dockerfiles build FROM.
TASK_BASE_TAG = "skilllift-task-base:local"
#: Debian's pytest and what it imports (python3-pytest's dependencies on Python 3.11).
PYTEST_PACKAGES = ("_pytest", "pytest", "py.py", "py", "pluggy", "iniconfig", "packaging",
                   "attr", "more_itertools")
#: Parts of the standard library a verifier never needs (GUI, the test suite, pip's bootstrap).
_STDLIB_SKIP = frozenset({"test", "idlelib", "tkinter", "turtledemo", "ensurepip",
                          "__pycache__", "lib2to3", "pydoc_data"})


def _python() -> tuple[str, Path]:
    """Debian's ``/usr/bin/python3`` and its standard library directory."""
    exe = shutil.which("python3", path="/usr/bin")
    if exe is None:
        raise ImageBuildError("no /usr/bin/python3: apt-get install python3")
    version = subprocess.run([exe, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, check=False).stdout.strip()
    stdlib = Path(f"/usr/lib/python{version}")
    if not stdlib.is_dir():
        raise ImageBuildError(f"no standard library at {stdlib}")
    return exe, stdlib


def plan_task_base() -> RootFS:
    """The root filesystem of :data:`TASK_BASE_TAG`."""
    root = RootFS()
    for d in ("/dev", "/proc", "/sys", "/etc", "/usr/local/bin", "/var", "/app", "/logs"):
        root.add_dir(d)
    root.add_dir("/tmp", 0o1777)
    root.add_dir("/root", 0o700)
    busybox = shutil.which("busybox")
    bash = shutil.which("bash")
    if busybox is None or bash is None:
        raise ImageBuildError("the task base needs busybox and bash here: apt-get install "
                              "busybox-static bash")
    root.add_binary(busybox, "/usr/bin/busybox")
    root.add_binary(bash, "/usr/bin/bash")
    # The glibc libraries the agent CLI needs (a Debian base has them all; this one has only
    # what its own binaries pull in otherwise).
    from pytest_skilllift.runners.claude import bundled_claude
    from pytest_skilllift.runners.image import shared_libraries

    cli = bundled_claude()
    for lib_path in shared_libraries(cli) if cli is not None else ():
        root.add_host_path(lib_path)
    exe, stdlib = _python()
    root.add_binary(os.path.realpath(exe), f"/usr/bin/{Path(os.path.realpath(exe)).name}")
    root.add_symlink("/usr/bin/python3", Path(os.path.realpath(exe)).name)
    root.add_symlink("/usr/bin/python", Path(os.path.realpath(exe)).name)
    for path in sorted(stdlib.rglob("*")):
        rel = path.relative_to(stdlib)
        if rel.parts and (rel.parts[0] in _STDLIB_SKIP or "__pycache__" in rel.parts):
            continue
        if path.is_file() and not path.is_symlink():
            dest = f"{stdlib}/{rel.as_posix()}"
            if path.suffix == ".so":  # extension modules bring their libraries (ssl, zlib…)
                root.add_binary(path, dest)
            else:
                root.add_file(path, dest)
    dist = Path("/usr/lib/python3/dist-packages")
    missing = [p for p in PYTEST_PACKAGES if not (dist / p).exists()]
    if missing:
        raise ImageBuildError(f"pytest for the verifier is missing here ({', '.join(missing)} "
                              f"under {dist}): apt-get install python3-pytest")
    for name in PYTEST_PACKAGES:
        package = dist / name
        for item in [package] if package.is_file() else sorted(package.rglob("*")):
            if item.is_file() and "__pycache__" not in item.parts:
                root.add_file(item, item.as_posix())
    root.add_bytes("/etc/passwd", b"root:x:0:0:root:/root:/bin/bash\n"
                   b"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n")
    root.add_bytes("/etc/group", b"root:x:0:\nnogroup:x:65534:\n")
    root.add_bytes("/etc/nsswitch.conf", b"passwd: files\ngroup: files\nhosts: files dns\n")
    certs = "/etc/ssl/certs/ca-certificates.crt"
    if os.path.isfile(certs):
        root.add_file(certs, certs, 0o644)
    for top in ("bin", "sbin", "lib", "lib64"):
        root.add_dir(f"/usr/{top}")
        if f"/{top}" not in root.entries:
            root.add_symlink(f"/{top}", f"usr/{top}")
    applets = subprocess.run([busybox, "--list"], capture_output=True, text=True,
                             check=False).stdout.split()
    for applet in applets:
        if f"/usr/bin/{applet}" not in root.entries:
            root.add_symlink(f"/usr/bin/{applet}", "busybox")
    return root


def build_task_base(client: Any, tag: str = TASK_BASE_TAG, *,
                    log: Callable[[str], None] = print) -> float:
    """Build :data:`TASK_BASE_TAG` (no registry); returns the seconds it took. Smoke-checks
    that ``python3 -m pytest --version`` runs in it."""
    started = time.monotonic()
    root = plan_task_base()
    import_rootfs(client, root, tag, [f"ENV PATH={IMAGE_PATH}", "ENV HOME=/root",
                                      "ENV SHELL=/bin/bash", "USER root", "WORKDIR /app",
                                      'CMD ["/bin/bash"]'], what="task base rootfs", log=log)
    out = client.containers.run(tag, ["python3", "-m", "pytest", "--version"], remove=True,
                                network_mode="none", stdout=True, stderr=True)
    log(f"smoke: {out.decode('utf-8', 'replace').strip()}")
    return time.monotonic() - started


def main() -> int:  # pragma: no cover - a thin command line
    """``python -m pytest_skilllift.runners.task_base [TAG]``."""
    import docker.client

    tag = sys.argv[1] if len(sys.argv) > 1 else TASK_BASE_TAG
    seconds = build_task_base(docker.client.from_env(), tag,
                              log=lambda line: print(line, file=sys.stderr))
    print(f"built {tag} in {seconds:.1f}s")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
