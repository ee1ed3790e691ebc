"""The week directory's vocabulary, each word defined once: file names, run statuses and
their drop reasons, the UTC stamp, the one atomic writer every file goes through, the
name a run id or a folder may hold (``safe_name``) and the trigger table's reader.

Layout (the qdrant/skills pipeline's week directory, our files beside it)::

    <weekly>/scorecard-history.csv         one row per (week, model), across weeks
    <weekly>/contested-history.csv         judge-contested rubric items per week, across weeks
    <weekly>/<week>/manifest.csv           one row per run (derived from the run files)
    <weekly>/<week>/scores.csv             one row per rubric item (derived)
    <weekly>/<week>/scorecard.md|json      the report
    <weekly>/<week>/calibration.json       judge self-agreement (skilllift calibrate)
    <weekly>/<week>/judge-check.json       judge vs human labels (skilllift judge-check)
    <weekly>/<week>/week.json              the week's identity, pass threshold and gates
    <weekly>/<week>/custom_checks.csv      one row per (custom check, run): its outcome
    <weekly>/<week>/<run_id>/stdout.txt    the transcript (stream-json), stderr.txt beside it
    <weekly>/<week>/<run_id>/run.json      the manifest row + status, once the run finished
    <weekly>/<week>/<run_id>/grades.json   the scores rows, once the judge answered
    <weekly>/<week>/<run_id>/judge_cost.txt, judge_error.txt, audit.json, calibration.json
    <weekly>/<week>/<run_id>/task.json     a task run: what the task runner did (docs/tasks.md)
    <weekly>/<week>/<run_id>/artifacts/    …the files the agent made or changed
    <weekly>/<week>/<run_id>/verifier/     …the verifier's output.txt and /logs/verifier files
    <weekly>/<week>/shard.json             a sharded week's split (--skill-lift-shard)
    <weekly>/<week>/spend.json             the spend cap and the runs it kept from starting
    <weekly>/<week>/judge-batches.json     Message Batches submitted for the week's grading
    <weekly>/<week>/merge.json             what ``skilllift merge`` put together
    <weekly>/<week>/triggers/<run_id>/         a trigger run (same files, never in the lift)
    <weekly>/<week>/triggers/triggers.csv      one row per trigger run (derived)
"""

from __future__ import annotations

import contextlib
import csv
import errno
import fcntl
import functools
import json
import os
import re
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Literal, get_args

# -- file names ------------------------------------------------------------------------------
MANIFEST_CSV: Final = "manifest.csv"
SCORES_CSV: Final = "scores.csv"
#: The judged rubric items of Harbor task runs (a task's ``rubric.json``): scores.csv's columns,
#: kept out of scores.csv so they never enter the prompts' must coverage (run/tasks/rubric.py).
TASK_RUBRIC_CSV: Final = "task_rubric.csv"
SCORECARD_MD: Final = "scorecard.md"
SCORECARD_JSON: Final = "scorecard.json"
#: Our scorecard's name in a week whose scorecard.md another tool wrote (the qdrant pipeline):
#: a file this tool did not write is never replaced.
SCORECARD_OURS_MD: Final = "scorecard-skilllift.md"
#: Outcomes of the team's own checks over ``skill_lift_run`` (week/checks.py).
CUSTOM_CHECKS_CSV: Final = "custom_checks.csv"
#: The judge measured against human labels (``skilllift judge-check``).
JUDGE_CHECK_FILE: Final = "judge-check.json"
#: Progress of an interrupted ``skilllift judge --fresh`` pass (the runs it already graded).
FRESH_MARKER: Final = ".fresh-regrade.json"
#: Beside the week directories (in their parent), shared by every week.
HISTORY_CSV: Final = "scorecard-history.csv"
#: Beside the history: which rubric items the judge samples disagreed on, in which week.
CONTESTED_HISTORY_CSV: Final = "contested-history.csv"
FOREST_PNG: Final = "forest.png"
TREND_PNG: Final = "trend.png"
#: Per run, inside ``<week>/<run_id>/``.
STDOUT_FILE: Final = "stdout.txt"  # the stream-json transcript (qdrant name)
STDERR_FILE: Final = "stderr.txt"
#: Another agent's skill listing, printed by its pre-flight listing command (docs/agents.md).
AGENT_SKILLS_FILE: Final = "agent_skills.txt"
RUN_FILE: Final = "run.json"
GRADES_FILE: Final = "grades.json"
JUDGE_COST_FILE: Final = "judge_cost.txt"  # USD (qdrant name)
JUDGE_ERROR_FILE: Final = "judge_error.txt"
AUDIT_FILE: Final = "audit.json"
CALIBRATION_FILE: Final = "calibration.json"
#: A Harbor task run's own, inside ``<week>/<run_id>/`` (docs/tasks.md): what the task runner
#: recorded (image, timings, the verifier's exit, what was cut and killed), the files the agent
#: made or changed, and the verifier's folder (``/logs/verifier``'s files and its output).
TASK_FILE: Final = "task.json"
ARTIFACTS_DIR: Final = "artifacts"
VERIFIER_DIR: Final = "verifier"
VERIFIER_OUTPUT: Final = "output.txt"
#: In the week directory: which no-skill runs come from an earlier week and why the others do
#: not (``--skill-lift-baseline-from``).
BASELINE_FILE: Final = "baseline.json"
LOCK_FILE: Final = ".lock"
#: Per-run files that record a grading, not the generation (a regrade replaces them; a merge
#: takes them from the shard that graded the run).
GRADING_FILES: frozenset[str] = frozenset({GRADES_FILE, JUDGE_COST_FILE, JUDGE_ERROR_FILE,
                                           CALIBRATION_FILE})
#: Week-level files of a sharded, spend-capped or batch-judged week (``week/shards.py``,
#: ``week/spend.py``, ``judge/batch.py``, ``week/merge.py``).
SHARD_FILE: Final = "shard.json"
SPEND_FILE: Final = "spend.json"
#: The last session's concurrency limit (``run.concurrency``) and the plan's estimate made
#: before its runs (``run.estimate``), beside the spend.
CONCURRENCY_FILE: Final = "concurrency.json"
ESTIMATE_FILE: Final = "estimate.json"
BATCHES_FILE: Final = "judge-batches.json"
MERGE_FILE: Final = "merge.json"
#: Held by ``skilllift merge`` on its OUT for the whole merge: two merges into one directory
#: run one after the other (the second sees the first's runs), never interleaved. Beside
#: OUT (``.<name>.merge.lock`` in its parent, where the history CSVs are), so a refused merge
#: leaves no OUT behind.
MERGE_LOCK: Final = ".{name}.merge.lock"
#: Trigger tests: their runs and table live in this subfolder of the week, apart from the lift.
TRIGGERS_DIR: Final = "triggers"
#: Inside ``<week>/``: ``skilllift view``'s site (derived from the week, never a run).
VIEW_DIR: Final = "view"
TRIGGERS_CSV: Final = "triggers.csv"
#: What a name keeps in a run id, a test id and a folder name (``safe_name``).
_ID_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
#: Inside ``<week>/``: the week's identity, pass threshold and gates (``week.identity``), and
#: the lock concurrent sessions take around reading and writing it.
WEEK_JSON: Final = "week.json"
WEEK_JSON_LOCK: Final = ".week.json.lock"

# -- run statuses ----------------------------------------------------------------------------
#: A run's status (our manifest's ``run_status``).  Only ``ok`` runs are judged and scored.
RunStatus = Literal["ok", "invalid", "errored", "budget_capped", "timeout", "no_answer",
                    "verifier_error"]
RUN_STATUSES: Final[tuple[RunStatus, ...]] = get_args(RunStatus)
OK: Final[RunStatus] = "ok"
INVALID: Final[RunStatus] = "invalid"
ERRORED: Final[RunStatus] = "errored"
BUDGET_CAPPED: Final[RunStatus] = "budget_capped"
TIMEOUT: Final[RunStatus] = "timeout"
NO_ANSWER: Final[RunStatus] = "no_answer"
#: A task run whose verifier timed out, errored or wrote no reward (``run/tasks``): excluded
#: and named, never a zero (Drupal ai_eval's rule for errored graders).
VERIFIER_ERROR: Final[RunStatus] = "verifier_error"
#: Integer codes (indices into ``RUN_STATUSES``) for the columnar tables.
STATUS_OK, STATUS_INVALID, STATUS_ERRORED, STATUS_BUDGET, STATUS_TIMEOUT, STATUS_NO_ANSWER = (
    RUN_STATUSES.index(s) for s in (OK, INVALID, ERRORED, BUDGET_CAPPED, TIMEOUT, NO_ANSWER))

#: How a finished run's transcript is classified when several statuses apply: the first wins.
#: A missing skill invalidates everything else (qdrant/skills SCORING.md: an absent skill is a
#: harness failure, excluded); a budget-capped run usually also exits non-zero, and
#: "budget-capped" is the more specific reason.  (A run that left no transcript — a timeout,
#: a harness error — is classified by the harness before any of these.)
TRANSCRIPT_ORDER: Final[tuple[RunStatus, ...]] = (INVALID, BUDGET_CAPPED, ERRORED, NO_ANSWER)

#: Statuses a rerun retries: the run never finished, so nothing is paid twice for a result.
RETRY_ON_RERUN: Final = frozenset({ERRORED, TIMEOUT})
#: Runs that completed (the CLI ran to its end): only these can show whether the skill was
#: reached. A failed with-skill run (outage, timeout, install failure, budget cap, a CLI that
#: never started) is excluded from the trigger and invocation counts, never a trigger miss.
COMPLETED: Final = frozenset({OK, NO_ANSWER})

#: Why a run is not scored, by status.  An ``ok`` run is dropped only when no must item of it
#: was graded (the judge failed): "ungraded".  A run's own ``run_error`` may add detail.
DROP_REASONS: Final[dict[RunStatus, str]] = {
    INVALID: "invalid install: skill not in the init skill list",
    ERRORED: "errored",
    BUDGET_CAPPED: "budget-capped (hit the per-run spend cap; truncated)",
    TIMEOUT: "timed out",
    NO_ANSWER: "no gradeable answer",
    VERIFIER_ERROR: "verifier error (no reward)",
    OK: "ungraded",
}

# -- time ------------------------------------------------------------------------------------
#: The manifest's timestamp format (qdrant's ``timestamp`` column): ``20260808T090000Z``.
UTC_STAMP_FORMAT: Final = "%Y%m%dT%H%M%SZ"


def utc_stamp(ts: float | None = None) -> str:
    """``yyyymmddTHHMMSSZ`` of ``ts`` (POSIX seconds; now when None)."""
    when = datetime.fromtimestamp(time.time() if ts is None else ts, tz=UTC)
    return when.strftime(UTC_STAMP_FORMAT)


# -- the atomic writer -----------------------------------------------------------------------


@functools.cache
def _umask() -> int:
    """The process's umask (read once: reading it means setting it for a moment)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class WeekLinkError(OSError):
    """A path of the week (a run folder, a CSV, a lock or a per-run file) is a symbolic link.

    Nothing in a week is ever followed out of it: a link restored from a cache or planted in
    an artifact would otherwise make a reset delete the files it points to, a write land
    outside the week, or a copy carry a host file into another week."""

    def __init__(self, path: Path, what: str = "") -> None:
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        super().__init__(
            errno.ELOOP,
            f"{path} is a symbolic link (-> {target}){' ' + what if what else ''}; nothing in a "
            "week directory is followed out of it. Fix: replace the link with the real "
            "file or folder, or remove it")
        self.path = Path(path)

    def __str__(self) -> str:
        return str(self.strerror)


class WeekWriteError(OSError):
    """A file of the week could not be written (full disk, read-only or foreign-owned
    directory): the message names the path, the reason and the fix. The session stops at
    the first one: every later run would fail the same way after being paid for."""

    def __init__(self, path: Path, exc: OSError) -> None:
        reason = exc.strerror or str(exc)
        fix = {errno.ENOSPC: "free space on that filesystem",
               errno.EDQUOT: "free space within your disk quota",
               errno.EROFS: "choose a writable --skill-lift-out directory",
               errno.EACCES: "make the directory writable or choose another one",
               errno.EPERM: "make the directory writable or choose another one"}.get(
                   exc.errno or 0, "fix the filesystem")
        super().__init__(exc.errno, f"cannot write {path}: {reason}; {fix}, then run the "
                         "same command again (what is already in the week is kept)")
        self.path = Path(path)

    def __str__(self) -> str:
        return str(self.strerror)


def no_link(path: Path, what: str = "") -> Path:
    """``path``, after checking it is not a symbolic link (:class:`WeekLinkError`)."""
    if os.path.islink(path):
        raise WeekLinkError(Path(path), what)
    return Path(path)


def read_bytes_nofollow(path: Path) -> bytes:
    """The content of a regular file, never through a link (``O_NOFOLLOW``): a per-run file
    that is a link raises :class:`WeekLinkError`, a missing one ``FileNotFoundError``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise WeekLinkError(Path(path)) from None
        raise
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise IsADirectoryError(errno.EISDIR, f"{path} is not a regular file")
        return fh.read()


def read_text_nofollow(path: Path) -> str:
    """:func:`read_bytes_nofollow` decoded as UTF-8."""
    return read_bytes_nofollow(path).decode("utf-8")


#: Bytes read at a time when a file is hashed or copied (a 2 GiB file costs 1 MiB of memory).
CHUNK: Final = 1 << 20


def update_with_file(digest: Any, path: Path, *, sized: bool = False) -> None:
    """Feed ``path``'s bytes to ``digest`` in :data:`CHUNK` pieces, never the whole file in
    memory; ``sized``: the 8-byte length first (the same bytes as ``len(data) + data``).
    A link is never followed (``O_NOFOLLOW``)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as fh:
        if sized:
            digest.update(os.fstat(fh.fileno()).st_size.to_bytes(8, "big"))
        while chunk := fh.read(CHUNK):
            digest.update(chunk)


def find_link(folder: Path) -> Path | None:
    """The first symbolic link at or under ``folder`` (never descending through one), or
    None: what a copy between weeks checks before it copies anything."""
    folder = Path(folder)
    if os.path.islink(folder):
        return folder
    for current, dirs, names in os.walk(folder, followlinks=False):
        for name in sorted([*dirs, *names]):
            path = Path(current) / name
            if os.path.islink(path):
                return path
    return None


def copy_tree_nofollow(src: Path, dst: Path, *, skip: frozenset[str] = frozenset()) -> None:
    """Copy the folder ``src`` to ``dst`` (created): regular files and folders only. A link
    anywhere in it raises :class:`WeekLinkError` — a copy between weeks never carries a link's
    target (a host file) into the other week. ``skip``: top-level names left out."""
    no_link(src)
    Path(dst).mkdir(parents=True, exist_ok=True)
    for entry in sorted(os.scandir(src), key=lambda e: e.name):
        if entry.name in skip:
            continue
        copy_entry_nofollow(Path(entry.path), Path(dst) / entry.name)


def copy_entry_nofollow(src: Path, dst: Path) -> None:
    """Copy one file or folder (:func:`copy_tree_nofollow`'s rules)."""
    mode = os.lstat(src).st_mode
    if stat.S_ISLNK(mode):
        raise WeekLinkError(src, "and is not copied")
    if stat.S_ISDIR(mode):
        copy_tree_nofollow(src, dst)
    elif stat.S_ISREG(mode):
        fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as fin, open(dst, "xb") as fout:
            shutil.copyfileobj(fin, fout, CHUNK)
        shutil.copystat(src, dst, follow_symlinks=False)
    else:
        raise OSError(errno.EINVAL, f"{src} is not a regular file or folder; not copied")


def clear_dir_nofollow(folder: Path, keep: frozenset[str] = frozenset()) -> None:
    """Delete what is inside ``folder`` (itself never a link), ``keep`` excepted; a link
    inside is removed as a link, never followed (``shutil.rmtree`` does not follow either)."""
    no_link(folder)
    for entry in os.scandir(folder):
        if entry.name in keep:
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path)
        else:
            os.unlink(entry.path)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so readers see the old or the new content, never a mix.

    Temp file in the same directory, fsync, ``os.replace``: a SIGKILL at any moment leaves
    either file whole.  Creates the parent directory.  A ``path`` that is a symbolic link
    is refused (:class:`WeekLinkError`); a write the filesystem refuses (full, read-only)
    raises :class:`WeekWriteError` naming the path.
    """
    path = Path(path)
    no_link(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise _write_error(path, exc) from None
    try:
        # mkstemp makes 0600; the file gets the mode any other would (0666 less the umask).
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise _write_error(path, exc) from None
        raise


#: Errors that say the filesystem refuses writes (not a bug of ours, not the file's content).
WRITE_REFUSED: Final = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES,
                                  errno.EPERM})


def _write_error(path: Path, exc: OSError) -> OSError:
    if isinstance(exc, (WeekWriteError, WeekLinkError)):
        return exc
    return WeekWriteError(path, exc) if exc.errno in WRITE_REFUSED else exc


def _open_lock(path: Path) -> int:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise WeekLinkError(path, "(a lock file)") from None
        raise _write_error(path, exc) from None


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created, with its folder) for the ``with`` block.

    Across processes (xdist workers, concurrent sessions): a second holder waits here until
    the first leaves its block. A lock file that is a link is refused (``O_NOFOLLOW``: opening
    it for writing would truncate whatever it points to)."""
    fd = _open_lock(path)
    with os.fdopen(fd, "w") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def lock_held(path: Path) -> bool:
    """Whether another process holds :func:`file_lock` on ``path`` right now (a probe: the
    lock is taken without waiting and released at once; a link is refused as there)."""
    with os.fdopen(_open_lock(path), "w") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
    return False


def atomic_write_text(path: Path, text: str) -> None:
    """:func:`atomic_write_bytes` of UTF-8 text, newlines written as given."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path, data: Any) -> None:
    """:func:`atomic_write_text` of indented, key-sorted JSON."""
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


def scorecard_md(week_dir: Path) -> Path:
    """Where this tool's scorecard markdown goes: ``scorecard.md``, unless another tool's
    ``scorecard.md`` is there (one without our ``scorecard.json`` beside it, e.g. the qdrant
    pipeline's); then ``scorecard-skilllift.md``, from then on."""
    week_dir = Path(week_dir)
    ours, md = week_dir / SCORECARD_OURS_MD, week_dir / SCORECARD_MD
    if ours.exists() or (md.is_file() and not (week_dir / SCORECARD_JSON).exists()):
        return ours
    return md


def safe_name(text: str) -> str:
    """``text`` reduced to characters safe in a run id and a test id."""
    return _ID_SAFE.sub("-", text).strip("-") or "x"


def read_trigger_table(week_root: Path) -> list[dict[str, str]]:
    """Rows of ``<week>/triggers/triggers.csv``; empty when the week has none."""
    path = Path(week_root) / TRIGGERS_DIR / TRIGGERS_CSV
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            return list(csv.DictReader(fh))
    except FileNotFoundError:
        return []
