"""A task's optional rubric (``rubric.json`` beside ``instruction.md``) and what its judge sees.

A Harbor task is scored by its verifier; a task may also carry a rubric — must / bonus /
avoid items, the schema of a prompt file's ``rubric`` and validated by the same code
(``run.prompts.read_rubric``)::

    {"rubric": [{"type": "must", "text": "The report gives the grand total"},
                {"type": "avoid", "text": "Hard-codes the expected numbers"}]}

(a bare list of items is read too). A task run that the verifier rewarded is then graded by
the blind judge as a prompt's run is — the same ``Grader`` (the ``skill_lift_judge`` fixture,
a panel, the arm-leak mask, Message Batches, resume) — over the instruction and
:func:`judge_view`'s text: the agent's final message, then the text of each file it created
or changed (the run folder's ``artifacts/``), each named, capped per file and in total;
binary files are named with their size, never shown; what the caps cut, what the task runner
did not save and what the agent deleted are counted and named in that text and in
``grades.json`` (``judge_files``). The judge's evidence quotes are checked against exactly that
text, so a quote from a file the judge never saw earns nothing.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_skilllift.model import RubricItem
from pytest_skilllift.run.prompts import PromptError, read_json_file, read_rubric
from pytest_skilllift.week.files import ARTIFACTS_DIR, TASK_FILE

RUBRIC_JSON = "rubric.json"
#: The keys a ``rubric.json`` object may hold.
RUBRIC_KEYS: tuple[str, ...] = ("rubric",)
#: The judge's caps on the changed files it sees (a judge call's context is not a disk):
#: bytes of one file, bytes of all files, and files.
JUDGE_FILE_BYTES = 16 * 1024
JUDGE_TOTAL_BYTES = 64 * 1024
JUDGE_MAX_FILES = 20


class RubricFileError(ValueError):
    """A ``rubric.json`` that cannot be used: the file, the field, the problem and the fix."""

    def __init__(self, path: Path, field: str, problem: str, fix: str) -> None:
        self.path, self.field, self.problem, self.fix = path, field, problem, fix
        super().__init__(f"{path}: {field}: {problem}; {fix}")


def load_rubric(folder: Path) -> tuple[RubricItem, ...]:
    """The rubric of the task in ``folder`` (empty: the task has no ``rubric.json``);
    raises :class:`RubricFileError` naming the file, the field and the fix."""
    path = folder / RUBRIC_JSON
    if not path.exists() and not path.is_symlink():
        return ()
    if path.is_symlink() or not path.is_file():
        raise RubricFileError(path, "(file)", "is not a regular file",
                              "make rubric.json a plain file inside the task directory")
    try:
        data = read_json_file(path)
        if isinstance(data, list):
            return read_rubric(path, data, {"rubric": data}, RUBRIC_KEYS)
        if not isinstance(data, dict):
            raise PromptError(path, "(file)", f"holds a JSON {type(data).__name__}",
                              'write {"rubric": [{"type": "must", "text": "…"}]}')
        _check_keys(path, data)
        return read_rubric(path, data.get("rubric"), data, RUBRIC_KEYS)
    except PromptError as err:
        raise RubricFileError(err.path, err.field, err.problem, err.fix) from None


def _check_keys(path: Path, data: dict[str, Any]) -> None:
    import difflib

    for key in data:
        if key in RUBRIC_KEYS:
            continue
        close = difflib.get_close_matches(str(key), RUBRIC_KEYS, n=1, cutoff=0.6)
        hint = (f"did you mean {close[0]!r}?" if close
                else 'a rubric.json holds one key, "rubric"')
        raise RubricFileError(path, str(key), "is not a key of rubric.json", hint)


@dataclass(frozen=True)
class JudgeView:
    """What the judge of a task run sees beside the instruction, and what was left out."""

    #: The text of the judge request's answer section (evidence is checked against it).
    text: str
    #: Files shown, each ``{"path", "bytes", "shown_bytes"}`` (shown < bytes: cut at a cap).
    shown: list[dict[str, Any]] = field(default_factory=list)
    #: Files named but not shown, each ``{"path", "bytes", "why"}``.
    left_out: list[dict[str, Any]] = field(default_factory=list)

    def meta(self) -> dict[str, Any]:
        """``grades.json``'s ``judge_files``: what the judge saw, what the caps cut."""
        return {"shown": self.shown, "left_out": self.left_out,
                "cut_files": sum(1 for f in self.shown if f["shown_bytes"] < f["bytes"]),
                "caps": {"file_bytes": JUDGE_FILE_BYTES, "total_bytes": JUDGE_TOTAL_BYTES,
                         "files": JUDGE_MAX_FILES}}


def judge_view(final_answer: str, run_dir: Path) -> JudgeView:
    """The final message and the changed files' text as one answer, each file named.

    Files come from ``run_dir/artifacts`` (walked without following a link), in path order;
    each shows at most :data:`JUDGE_FILE_BYTES` and all together at most
    :data:`JUDGE_TOTAL_BYTES`, at most :data:`JUDGE_MAX_FILES` of them: a cut is said where it
    happens. A file holding a NUL byte or not UTF-8 is binary: named with its size."""
    shown: list[dict[str, Any]] = []
    left: list[dict[str, Any]] = []
    parts = ["## The agent's final message", final_answer.strip() or "(empty)"]
    budget = JUDGE_TOTAL_BYTES
    blocks: list[str] = []
    for rel, path in _files(run_dir / ARTIFACTS_DIR, left):
        try:
            head, size = _read_head(path, JUDGE_FILE_BYTES)
        except OSError as err:
            left.append({"path": rel, "bytes": None, "why": f"unreadable ({err.strerror})"})
            continue
        text = _text(head, size)
        if text is None:
            left.append({"path": rel, "bytes": size, "why": "binary"})
            blocks.append(f"### {rel} ({size} bytes): binary, not shown")
            continue
        if len(shown) >= JUDGE_MAX_FILES:
            left.append({"path": rel, "bytes": size,
                         "why": f"over the judge's {JUDGE_MAX_FILES} files"})
            continue
        if budget <= 0:
            left.append({"path": rel, "bytes": size,
                         "why": f"over the judge's {JUDGE_TOTAL_BYTES} bytes in all"})
            continue
        data = text.encode("utf-8")
        if len(data) > budget:
            text = data[:budget].decode("utf-8", errors="ignore")
        used = len(text.encode("utf-8"))
        budget -= used
        shown.append({"path": rel, "bytes": size, "shown_bytes": used})
        note = "" if used >= size else f"; the first {used} shown, {size - used} cut"
        blocks.append(f"### {rel} ({size} bytes{note})\n{text}")
    head_line = (f"## Files the agent created or changed ({len(shown)} shown"
                 f"{f', {len(left)} named, not shown' if left else ''}; at most "
                 f"{JUDGE_FILE_BYTES} bytes a file, {JUDGE_TOTAL_BYTES} in all)")
    parts.append(head_line if (blocks or left) else
                 "## Files the agent created or changed\n(none)")
    parts += blocks
    unshown = [f for f in left if f["why"] != "binary"]
    if unshown:
        parts.append("### Not shown\n" + "\n".join(
            f"- {f['path']} ({f['bytes'] if f['bytes'] is not None else '?'} bytes): {f['why']}"
            for f in unshown))
    return JudgeView(text="\n\n".join(parts), shown=shown, left_out=left)


def _files(root: Path, left: list[dict[str, Any]]) -> list[tuple[str, Path]]:
    """The regular files under ``root`` (relative path, path), sorted; anything else —
    a link above all — is named in ``left`` and never followed. What the task runner did not
    save and what the agent deleted (``task.json``) are named there too."""
    out: list[tuple[str, Path]] = []
    if root.is_dir() and not root.is_symlink():
        for folder, dirs, names in os.walk(root, followlinks=False):
            dirs.sort()
            for name in sorted(names):
                path = Path(folder) / name
                rel = path.relative_to(root).as_posix()
                if stat.S_ISREG(path.lstat().st_mode):
                    out.append((rel, path))
                else:
                    left.append({"path": rel, "bytes": None,
                                 "why": "not a regular file (a link is never followed)"})
        for folder, dirs, _ in os.walk(root, followlinks=False):
            for name in dirs:  # a linked folder: os.walk lists it and never enters it
                if (Path(folder) / name).is_symlink():
                    rel = (Path(folder) / name).relative_to(root).as_posix()
                    left.append({"path": rel, "bytes": None,
                                 "why": "not a regular file (a link is never followed)"})
    saved = _task_json(root.parent / TASK_FILE).get("artifacts")
    saved = saved if isinstance(saved, dict) else {}
    for cut in saved.get("cut") or []:
        if isinstance(cut, dict):
            left.append({"path": str(cut.get("path", "")), "bytes": cut.get("bytes"),
                         "why": f"not saved by the run ({cut.get('reason', '')})"})
    for gone in saved.get("deleted") or []:
        left.append({"path": str(gone), "bytes": None, "why": "deleted by the agent"})
    return sorted(out)


def _task_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(_read_head(path, 4 * 1024 * 1024)[0].decode("utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _read_head(path: Path, cap: int) -> tuple[bytes, int]:
    """``(first cap bytes, size)`` of a regular file, opened without following a link."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise OSError(0, "not a regular file")
        return fh.read(cap), st.st_size


def _text(head: bytes, size: int) -> str | None:
    """The head as text (a multi-byte character cut at the cap dropped), None if binary."""
    if b"\0" in head:
        return None
    try:
        return head.decode("utf-8")
    except UnicodeDecodeError as err:
        if size > len(head) and err.start >= len(head) - 3:
            return head[:err.start].decode("utf-8", errors="strict")
        return None
