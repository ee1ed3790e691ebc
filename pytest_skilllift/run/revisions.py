"""The with-skill@REF arm's skills: the skills root as it was at revision REF.

``REF`` is a git revision of the repository holding the skills root (``HEAD~1``, a tag, a
sha: anything ``git rev-parse`` takes) or a directory of earlier skills (absolute, relative to
the rootdir, or beside the skills root). A git REF is resolved to its commit and the skills
root's tree at that commit, and that tree is written once (``git archive``) into the week's
own ``.revisions/<commit>/`` directory, which then serves as the arm's skills root; a directory
REF is used as it is. Either way the runners install from it through the same
``runners/install.py`` path as with-skill, so the two arms differ only in the files of the
family (docs/versions.md).

Hostile revisions: git runs from the repository's top level (a skills root in a subdirectory
is ``<commit>:<prefix>``, which git reads from the top); a reused ``.revisions/<commit>/`` is
checked file by file against ``git archive`` of the tree before it is used (a planted copy is
written again), and neither ``.revisions`` nor a revision folder is ever a link; a family
that is a link in the revision (a folder link out of the repository) refuses the arm; a
directory REF is hashed streaming, never a whole file in memory.

Pure apart from git and the week's ``.revisions`` directory; no pytest.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import tarfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_skilllift.skill.tree import tree_paths
from pytest_skilllift.week.files import WeekLinkError, no_link, update_with_file

if TYPE_CHECKING:
    from pytest_skilllift.config import Settings

#: The week's subdirectory holding materialised revisions (a dot name: never a run directory).
REVISIONS_DIR = ".revisions"
#: Written last into a materialised revision: its presence says the copy is whole.
_DONE = ".skilllift-revision"
GIT_TIMEOUT_S = 60


class RevisionError(ValueError):
    """A REF that cannot be resolved or materialised; the message names it and the fix."""


@dataclass(frozen=True)
class Revision:
    """A resolved with-skill@REF."""

    #: The REF as written (``HEAD~1``).
    ref: str
    #: ``git`` or ``directory``.
    kind: str
    #: The resolved commit (git), else "".
    commit: str
    #: The skills root's git tree hash at the commit; for a directory, a SHA-256 of its files.
    tree: str
    #: The skills root the arm installs families from.
    root: Path

    def to_json(self) -> dict[str, str]:
        """What week.json and Provenance record of the revision."""
        return {"ref": self.ref, "kind": self.kind, "commit": self.commit, "tree": self.tree}


def _git(skills_root: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", "-C", str(skills_root), *args], capture_output=True,
                              timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RevisionError(f"with-skill@…: git could not be run in {skills_root} ({exc}); "
                            "install git or give a directory of earlier skills as REF"
                            ) from None


def _out(proc: subprocess.CompletedProcess[bytes]) -> str:
    return proc.stdout.decode("utf-8", "replace").strip()


def _dir_hash(root: Path, skip: frozenset[str] = frozenset()) -> str:
    """SHA-256 over every file under ``root`` (relative path + bytes; links as their text),
    each file streamed in pieces (the same bytes as path + NUL + content + NUL), walked
    without recursion; ``skip``: top-level names left out."""
    digest = hashlib.sha256()
    for path in tree_paths(root):
        rel = path.relative_to(root).as_posix()
        if rel.split("/", 1)[0] in skip:
            continue
        if path.is_symlink():
            digest.update(rel.encode() + b"\0" + os.readlink(path).encode() + b"\0")
        elif path.is_file():
            digest.update(rel.encode() + b"\0")
            update_with_file(digest, path)
            digest.update(b"\0")
    return digest.hexdigest()


def _tar_hash(archive: bytes) -> str:
    """:func:`_dir_hash` of what ``archive`` (a ``git archive`` tar) extracts to."""
    digest = hashlib.sha256()
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        members = sorted((m for m in tar.getmembers() if m.isfile() or m.issym()),
                         key=lambda m: Path(m.name.rstrip("/")))
        for m in members:
            rel = Path(m.name.rstrip("/")).as_posix()
            digest.update(rel.encode() + b"\0")
            if m.issym():
                digest.update(m.linkname.encode())
            else:
                fh = tar.extractfile(m)
                while fh is not None and (chunk := fh.read(1 << 20)):
                    digest.update(chunk)
            digest.update(b"\0")
    return digest.hexdigest()


def resolve(skills_root: Path, ref: str, *, rootdir: Path, week_dir: Path) -> Revision:
    """Resolve ``ref`` and make its skills root available (raises :class:`RevisionError`)."""
    # A directory: absolute, under the rootdir, or beside the skills root (the demo's
    # packaged skills-v1 sits beside its skills).
    for as_dir in ([Path(ref)] if Path(ref).is_absolute() else
                   [rootdir / ref, skills_root.parent / ref]):
        if as_dir.is_dir():
            return Revision(ref, "directory", "", _dir_hash(as_dir), as_dir.resolve())
    if not skills_root.is_dir():
        raise RevisionError(f"with-skill@{ref}: the skills root {skills_root} does not exist")
    commit = _git(skills_root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if commit.returncode != 0 or not _out(commit):
        raise RevisionError(
            f"with-skill@{ref}: {ref!r} is neither a revision of the git repository holding "
            f"the skills root {skills_root} nor a directory under the rootdir {rootdir} or beside "
            "the skills root; fix: "
            "give a commit, tag or HEAD~N that `git rev-parse` knows there, or the path of a "
            "directory of earlier skills")
    sha = _out(commit)
    prefix = _out(_git(skills_root, "rev-parse", "--show-prefix")).rstrip("/")
    # git reads <commit>:<prefix> from the repository's top: run it there (from an untracked
    # skills root, `git archive` says "current working directory is untracked").
    top = Path(_out(_git(skills_root, "rev-parse", "--show-toplevel")) or skills_root)
    treeish = f"{sha}:{prefix}" if prefix else f"{sha}^{{tree}}"
    tree = _git(top, "rev-parse", "--verify", "--quiet", treeish)
    if tree.returncode != 0 or not _out(tree):
        raise RevisionError(f"with-skill@{ref}: commit {sha[:12]} has no {prefix or 'root'} "
                            "directory (the skills root did not exist then); fix: pick a "
                            "later revision")
    root = _materialise(top, treeish, week_dir / REVISIONS_DIR / sha, ref)
    return Revision(ref, "git", sha, _out(tree), root)


def _family_links(root: Path) -> list[str]:
    """The top-level entries (families) of a revision that are links (``fam -> /home/…``)."""
    return sorted(e.name for e in os.scandir(root) if e.is_symlink())


def _materialise(repo_top: Path, treeish: str, dest: Path, ref: str) -> Path:
    """The tree ``treeish`` written under ``dest``; concurrent sessions (xdist workers,
    shards) each write a temporary copy and the first rename wins. A copy already there is
    used only when its files are those of ``git archive`` (else it is written again), and
    neither ``.revisions`` nor ``dest`` may be a link (:class:`RevisionError`)."""
    try:
        no_link(dest.parent, "(the week's revisions folder)")
        no_link(dest, "(a materialised revision)")
    except WeekLinkError as exc:
        raise RevisionError(f"with-skill@{ref}: {exc}") from None
    archive = _git(repo_top, "archive", "--format=tar", treeish)
    if archive.returncode != 0:
        raise RevisionError(f"with-skill@{ref}: git archive {treeish} failed "
                            f"({archive.stderr.decode('utf-8', 'replace').strip()[:200]})")
    if (dest / _DONE).is_file():
        if _dir_hash(dest, skip=frozenset({_DONE})) == _tar_hash(archive.stdout):
            _refuse_family_links(dest, ref)
            return dest
        shutil.rmtree(dest)  # not the tree it claims to be: written again from git
    dest.parent.mkdir(parents=True, exist_ok=True)
    # A whole tree appears at once, so not week.files.atomic_write_* (one file each): the
    # tree is extracted beside it and renamed into place.
    tmp = dest.parent / f".tmp-{uuid.uuid4().hex}"
    tmp.mkdir()
    try:
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            # git writes no device files nor a file beneath a link; the 'tar' filter still
            # refuses absolute or '..' member names. Links are kept as links: the install
            # refuses one that leaves its family, as it does for the working tree.
            if hasattr(tarfile, "tar_filter"):
                tar.extractall(tmp, filter="tar")
            else:  # pragma: no cover - Python < 3.11.4
                tar.extractall(tmp)
        _refuse_family_links(tmp, ref)
        (tmp / _DONE).write_text(treeish + "\n")
        try:
            tmp.rename(dest)
        except OSError:
            if not (dest / _DONE).is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def _refuse_family_links(root: Path, ref: str) -> None:
    links = _family_links(root)
    if links:
        shown = ", ".join(f"{n} -> {os.readlink(root / n)}" for n in links[:5])
        raise RevisionError(
            f"with-skill@{ref}: the revision's skills root holds symbolic link(s) where "
            f"families are ({shown}); a family installed from a revision is a folder of the "
            "repository, never a link out of it (the working tree's rule for links). Fix: "
            "pick a revision whose families are folders")


def revision_commit(root: Path) -> str:
    """The commit a materialised revision was written from ("" for any other directory)."""
    try:
        return (Path(root) / _DONE).read_text().split(":", 1)[0].split("^", 1)[0].strip()
    except OSError:
        return ""


_RESOLVED: dict[tuple[str, str, str, str], Revision] = {}


def session_revision(conditions: tuple[str, ...], skills_root: Path, *, rootdir: Path,
                     week_dir: Path) -> Revision | None:
    """The with-skill@REF arm's revision among ``conditions`` (None without one), resolved
    once per process (collection, the matrix and the week identity all ask)."""
    from pytest_skilllift.model import arm_ref

    ref = next((r for r in map(arm_ref, conditions) if r is not None), None)
    if ref is None:
        return None
    key = (str(skills_root), ref, str(rootdir), str(week_dir))
    if key not in _RESOLVED:
        _RESOLVED[key] = resolve(skills_root, ref, rootdir=rootdir, week_dir=week_dir)
    return _RESOLVED[key]


def settings_revision(settings: Settings) -> Revision | None:
    """The session's with-skill@REF revision (:func:`session_revision` of its settings), or
    None; ``SettingsError`` when its REF cannot be resolved (a usage error, named)."""
    from pytest_skilllift.config import SettingsError

    try:
        return session_revision(settings.conditions, settings.skills_root,
                                rootdir=settings.rootdir, week_dir=settings.out_dir)
    except RevisionError as exc:
        raise SettingsError(str(exc)) from None


_SUBTREES: dict[tuple[str, str, str], Path | RevisionError] = {}


def directory_at(path: Path, ref: str, *, week_dir: Path) -> Path:
    """The directory ``path`` (inside a git repository) as it was at revision ``ref`` of that
    repository, written once into the week's ``.revisions/`` (checked, never a link, as
    :func:`resolve` writes a skills root); raises :class:`RevisionError` naming why not (not
    in a git repository, an unknown REF, the directory did not exist then). A Harbor task's
    ``environment/skills`` at REF is the with-skill@REF arm of that task (docs/tasks.md).
    Resolved once per process."""
    key = (str(path), ref, str(week_dir))
    if key not in _SUBTREES:
        try:
            _SUBTREES[key] = _directory_at(path, ref, week_dir)
        except RevisionError as exc:
            _SUBTREES[key] = exc
    found = _SUBTREES[key]
    if isinstance(found, RevisionError):
        raise found
    return found


def _directory_at(path: Path, ref: str, week_dir: Path) -> Path:
    if not path.is_dir():
        raise RevisionError(f"with-skill@{ref}: {path} is not a directory")
    top_proc = _git(path, "rev-parse", "--show-toplevel")
    if top_proc.returncode != 0 or not _out(top_proc):
        raise RevisionError(f"with-skill@{ref}: {path} is not in a git repository, so it has "
                            "no revision REF; fix: commit the task to git, or leave the "
                            "with-skill@REF arm out for tasks")
    commit = _git(path, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if commit.returncode != 0 or not _out(commit):
        raise RevisionError(f"with-skill@{ref}: {ref!r} is not a revision of the git "
                            f"repository holding {path}; fix: give a commit, tag or HEAD~N "
                            "that `git rev-parse` knows there")
    sha = _out(commit)
    prefix = _out(_git(path, "rev-parse", "--show-prefix")).rstrip("/")
    top = Path(_out(top_proc))
    treeish = f"{sha}:{prefix}" if prefix else f"{sha}^{{tree}}"
    tree = _git(top, "rev-parse", "--verify", "--quiet", treeish)
    if tree.returncode != 0 or not _out(tree):
        raise RevisionError(f"with-skill@{ref}: {prefix or path} did not exist at commit "
                            f"{sha[:12]}; fix: pick a later revision")
    name = f"{sha}-{hashlib.sha256(prefix.encode()).hexdigest()[:12]}"
    return _materialise(top, treeish, week_dir / REVISIONS_DIR / name, ref)
