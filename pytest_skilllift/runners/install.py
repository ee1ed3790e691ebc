"""Installing a skill family: what is copied, and which symlinks are refused.

Both runners install ``skills_root/<family>/`` whole (sub-skills and references are part of
what is measured). Symlinks inside the family are handled the same way by both:

- a link whose target stays inside the family is installed **as a link**, rewritten to a
  relative target, so it resolves inside the installed copy (in a temporary HOME or in a
  container alike) and a link to a parent directory cannot make the copy recurse;
- a link whose target leaves the family (``up -> ..``, ``notes.md -> /etc/passwd``,
  ``shared -> ../other-family``) or cannot be resolved (a loop) **refuses the install**: the
  run is an invalid install naming the link. Following it would copy files from outside the
  skill under test into the agent's HOME or container — files the agent could then read.

A family with a critical finding of the security scan (``skill/security``: a script piped
from the network to a shell, credential exfiltration, a committed key…) is refused the same
way, naming the finding, unless ``--skill-lift-allow-unsafe`` is given.

Pure filesystem logic, no runner or pytest imports (the scan is pure logic too).
"""

from __future__ import annotations

import os
import shutil
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_skilllift.skill.tree import MAX_TREE_DEPTH, walk_nofollow

if TYPE_CHECKING:
    from pytest_skilllift.model import PromptSpec

#: Never installed (version-control and bytecode noise).
IGNORED: frozenset[str] = frozenset({".git", "__pycache__"})


class InstallError(Exception):
    """The family cannot be installed as is; the message names the file and the fix."""


@dataclass(frozen=True)
class Entry:
    """One thing to install: ``rel`` is the POSIX path inside the family."""

    rel: str
    kind: str  # "dir" | "file" | "link"
    source: Path
    #: For links: the relative target to write (resolves inside the installed family).
    link_target: str = ""
    #: For files: bytes.
    size: int = 0


def family_entries(family_dir: Path, max_bytes: int | None = None) -> list[Entry]:
    """Every entry of the family, parents before children; raise ``InstallError`` for a
    missing ``SKILL.md``, a symlink that leaves the family, or a family whose files together
    exceed ``max_bytes`` (``--skill-lift-max-family-mb``: each with-skill run copies it)."""
    family_dir = Path(family_dir)
    name = family_dir.name
    if not (family_dir / "SKILL.md").is_file():
        raise InstallError(f"skill family {name!r} not found at {family_dir} (no SKILL.md)")
    try:
        root = family_dir.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise InstallError(f"skill family {name!r} at {family_dir} cannot be opened ({exc})"
                           ) from None
    if not (root / "SKILL.md").is_file():
        raise InstallError(f"skill family {name!r} not found at {family_dir} (no SKILL.md)")
    entries: list[Entry] = []
    too_deep: list[Path] = []
    for current, dirs, files in walk_nofollow(root, too_deep=too_deep):
        dirs[:] = sorted(d for d in dirs if d not in IGNORED)
        here = Path(current)
        for child in [*dirs, *sorted(f for f in files if f not in IGNORED)]:
            path = here / child
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                entries.append(_link_entry(name, root, path, rel))
                if child in dirs:
                    dirs.remove(child)  # os.walk would not descend anyway; be explicit
            elif child in dirs:
                entries.append(Entry(rel, "dir", path))
            elif stat.S_ISREG((st := path.lstat()).st_mode):
                entries.append(Entry(rel, "file", path, size=st.st_size))
            else:  # a FIFO would block the copy, a device has no business in a skill
                raise InstallError(f"invalid install: {name}/{rel} is not a regular file, "
                                   "directory or link; fix: remove it from the skill family")
    if too_deep:
        rel = sorted(too_deep)[0].relative_to(root).as_posix()
        raise InstallError(f"invalid install: skill family {name!r} has folders more than "
                           f"{MAX_TREE_DEPTH} levels deep ({name}/{rel[:200]}…); they are "
                           "neither scanned nor installed. Fix: flatten the family")
    if max_bytes is not None:
        _check_size(name, entries, max_bytes)
    return entries


def _check_size(family: str, entries: list[Entry], max_bytes: int) -> None:
    total = sum(e.size for e in entries)
    if total <= max_bytes:
        return
    largest = max((e for e in entries if e.kind == "file"), key=lambda e: e.size)
    raise InstallError(
        f"invalid install: skill family {family!r} holds {_mib(total)} of files, over the "
        f"limit of {_mib(max_bytes)} (--skill-lift-max-family-mb); the largest is "
        f"{family}/{largest.rel} ({_mib(largest.size)}). Every with-skill run copies the "
        "family; fix: remove the large files from it, or raise the limit")


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def _link_entry(family: str, root: Path, link: Path, rel: str) -> Entry:
    raw = os.readlink(link)
    shown = f"{family}/{rel} -> {raw}"
    try:
        target = link.resolve(strict=False)
    except (OSError, RuntimeError):
        raise InstallError(
            f"invalid install: symlink {shown} cannot be resolved (a link loop); fix: remove "
            "the loop or replace the link with the file it should name") from None
    if target != root and root not in target.parents:
        raise InstallError(
            f"invalid install: symlink {shown} leaves the skill family (it points to "
            f"{target}); links are installed only when they stay inside the family. Fix: "
            "copy the file into the family, or point the link at a file inside it")
    return Entry(rel, "link", link, os.path.relpath(target, link.parent.resolve()))


def install_root(prompt: PromptSpec, skills_root: Path) -> Path:
    """Where a run's families are installed from: the prompt's own root (the with-skill@REF
    arm's materialised revision) when it has one, else the session's skills root."""
    own = getattr(prompt, "skills_root", None)
    return Path(own) if own is not None else Path(skills_root)


def check_family(family_dir: Path, max_bytes: int | None = None, *,
                 allow_unsafe: bool = False, timeout_s: float | None = None) -> str | None:
    """The reason the family cannot be installed, or None: a missing SKILL.md, a link that
    leaves the family, a family over ``max_bytes``, or (unless ``allow_unsafe``) a critical
    security finding. ``timeout_s`` (the run's ``--skill-lift-timeout``) bounds the scan."""
    deadline = time.monotonic() + timeout_s if timeout_s is not None else None
    try:
        family_entries(family_dir, max_bytes)
    except InstallError as exc:
        return str(exc)
    return None if allow_unsafe else unsafe_reason(family_dir, deadline=deadline,
                                                   timeout_s=timeout_s)


def unsafe_reason(family_dir: Path, *, deadline: float | None = None,
                  timeout_s: float | None = None) -> str | None:
    """Why the family is refused for its critical security findings (each named with its
    rule, file and line), or None. The scan reads every file of the family: an agent with
    the skill installed would read and run them. A scan still running at ``deadline``
    (``time.monotonic()``) refuses the install: what was not scanned is not run."""
    # Imported here: the rules compile their patterns, and only with-skill installs need them.
    from pytest_skilllift.skill.security.scanner import ScanDeadline, critical_findings

    try:
        critical = critical_findings(Path(family_dir), deadline=deadline)
    except ScanDeadline as exc:
        return (f"invalid install: the security scan of skill family "
                f"{Path(family_dir).name!r} did not finish within the run's timeout "
                f"({timeout_s:g} s, --skill-lift-timeout): {exc}. Fix: run `skilllift scan` "
                "on the family to see what is slow, or raise the timeout")
    if not critical:
        return None
    named = "; ".join(f"{f.rule_id} {f.rule.name} at {f.location}: {f.match!r}"
                      for f in critical[:5])
    more = f" (and {len(critical) - 5} more)" if len(critical) > 5 else ""
    return (f"invalid install: skill family {Path(family_dir).name!r} has {len(critical)} "
            f"critical security finding(s): {named}{more}. Fix: {critical[0].rule.fix} "
            "(`skilllift scan` lists every finding); to run it anyway, in a sandbox, pass "
            "--skill-lift-allow-unsafe")


def copy_family(family_dir: Path, dest: Path) -> None:
    """Install the family at ``dest`` (which must not exist): files copied, links kept as
    relative links inside the copy. Raises ``InstallError`` as :func:`family_entries`."""
    entries = family_entries(family_dir)
    dest.mkdir(parents=True)
    for e in entries:
        out = dest / e.rel
        if e.kind == "dir":
            out.mkdir()
        elif e.kind == "link":
            out.symlink_to(e.link_target)
        else:
            shutil.copy2(e.source, out)
