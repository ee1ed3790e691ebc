"""Columnar loading and validation of a week directory (``manifest.csv``, ``scores.csv``).

The week directory is the qdrant pipeline's format (qdrant/skills SCORING.md, "Outputs") plus
our extra columns after the base ones.  Weeks can be large (a million graded items), so both
CSVs are read with ``pyarrow.csv`` -- only the needed columns, strings dictionary-encoded -- and
turned into integer-coded numpy arrays.  Nothing here loops over rows in Python: validation
works on the (small) dictionaries and maps the result back with one fancy-index.

Bad input never raises: every problem becomes a :class:`Problem` naming the file, the data
row (1-based, header excluded) and the column, and the offending rows are left out of the
numbers *and counted*, so the scorecard can say what is missing instead of silently
producing a wrong figure.
"""

from __future__ import annotations

import contextlib
import csv
import io
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC
from pathlib import Path
from typing import cast

import numpy as np

# pyarrow.compute (≈ 0.05 s to import) is imported only where it is needed (a week without
# avoid violations or bad numbers never needs it).
import pyarrow as pa
import pyarrow.csv as pacsv

from pytest_skilllift.model import (
    AGENTS,
    ARMS,
    CLAUDE_CODE,
    SKILL_ARMS,
    WITH_REF,
    arm_ref,
    split_agent,
)
from pytest_skilllift.week.columns import ACTIVATIONS, INVOCATION_STATUSES, ITEM_TYPES, VERDICTS
from pytest_skilllift.week.files import (
    BUDGET_CAPPED,
    ERRORED,
    INVALID,
    JUDGE_COST_FILE,
    JUDGE_ERROR_FILE,
    MANIFEST_CSV,
    RUN_STATUSES,
    SCORES_CSV,
    STATUS_OK,
    TASK_RUBRIC_CSV,
    TRANSCRIPT_ORDER,
    UTC_STAMP_FORMAT,
    VERIFIER_ERROR,
    WeekLinkError,
    read_text_nofollow,
)

#: Verdict strings that mean "the judge gave no usable verdict" (judge or parse error).
#: Such items are excluded and counted as ungraded, never scored as zero.  The qdrant
#: pipeline writes ``""`` or ``PARSE_ERROR``; our judge may write ``ungraded``/``error``.
UNGRADED_VERDICTS: frozenset[str] = frozenset({"", "PARSE_ERROR", "ungraded", "error", "ERROR"})

#: ``contested`` values (trimmed, lower-cased) that mean "not contested".
JUDGE_NOT_CONTESTED: frozenset[str] = frozenset({"", "0", "false", "no"})

#: How many offending rows a problem message lists before saying "and N more".
MAX_ROWS_LISTED = 10
#: Above this many values :func:`distinct` is np.unique (its hashing beats a full sort).
DISTINCT_SORT_MAX = 50_000
#: Up to this many rows a string column is read as a Python list and indexed there; above,
#: with pyarrow.compute's ``take`` (its import, ≈ 0.05 s, is most of a small week's cost).
PYLIST_ROWS = 50_000

SCORES_REQUIRED: tuple[str, ...] = (
    "prompt", "model", "condition", "rep", "item_type", "verdict", "credit",
)
MANIFEST_REQUIRED: tuple[str, ...] = ("prompt", "model", "condition", "rep", "run_id")
#: Condition codes of the arms that install skills (an absent skill makes such a run invalid).
_SKILL_ARM_CODES = np.array(sorted(ARMS.index(a) for a in SKILL_ARMS))

_DICT = pa.dictionary(pa.int32(), pa.string())
_NUMBER_RE = r"^\s*[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*$"

_SCORES_TYPES: dict[str, pa.DataType] = {
    "prompt": _DICT, "model": _DICT, "condition": _DICT, "rep": pa.float64(),
    "item_type": _DICT, "item_text": _DICT, "verdict": _DICT, "credit": pa.float64(),
    "contested": _DICT, "evidence_quote": pa.string(), "run_id": _DICT, "evidence_ok": _DICT,
    "item_index": pa.float64(), "claimed_verdict": _DICT, "claimed_evidence": pa.string(),
    "judge_reason": pa.string(),
}
#: scores.csv columns kept as read (Arrow arrays) for readers that show single items
#: (``skilllift view``): the raw verdict, the rubric numbering, the judge's rejected claim and
#: its reason for a missing or violated item.
_SCORES_KEPT: tuple[str, ...] = (
    "verdict", "item_index", "evidence_ok", "claimed_verdict", "claimed_evidence",
    "judge_reason",
)
_MANIFEST_NUMERIC: tuple[str, ...] = (
    "rep", "exit_code", "skill_available", "reached_leaf", "fetched_site", "fetched_count",
    "total_cost_usd", "num_turns", "budget_hit", "signals_ok", "duration_ms", "wall_ms",
    "top_level_only", "rate_limit_retries", "rate_limit_wait_ms", "reward",
)
_MANIFEST_STRINGS: tuple[str, ...] = (
    "prompt", "skill_family", "model", "condition", "run_id", "timestamp", "skill_activation",
    "model_snapshot", "cli_version", "skills_sha", "run_status", "run_error", "model_id",
    "started_utc", "ended_utc", "runner", "invocation_status", "baseline_from",
    "baseline_reason",
)
_MANIFEST_TYPES: dict[str, pa.DataType] = {
    **{c: pa.float64() for c in _MANIFEST_NUMERIC},
    **{c: _DICT for c in _MANIFEST_STRINGS},
    "run_id": pa.string(),  # one per run: a dictionary of unique values would only cost
}


@dataclass
class Violations:
    """The avoid items judged ``violated``, with the judge's evidence quotes, column by column
    (a bad week has ~10^5 of them: one list per field, not one object per item), in scorecard
    order: by prompt, model name and condition, in file order within each."""

    prompt: list[str] = field(default_factory=list)
    model: list[str] = field(default_factory=list)
    condition: list[str] = field(default_factory=list)
    rep: list[int] = field(default_factory=list)
    item_text: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.prompt)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the input, precise enough to go and fix it."""

    file: str
    message: str
    row: int | None = None  # 1-based data row (the header is row 0)
    column: str | None = None

    def __str__(self) -> str:
        where = self.file
        if self.row is not None:
            where += f", row {self.row}"
        if self.column is not None:
            where += f", column '{self.column}'"
        return f"{where}: {self.message}"


@dataclass
class ScoresTable:
    """scores.csv, one entry per row: integer codes into the week's vocabularies
    (``Week.prompts`` / ``Week.models``; -1 = unusable) and the columns a section reads."""

    present: bool = False
    prompt: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    model: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    cond: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))
    rep: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    type: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))
    #: 1.0 / 0.0 per graded item; NaN when ungraded or invalid (excluded, counted).
    credit: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))
    contested: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    #: Rows the judge's report lists (``report.judging``): contested, or ``evidence_ok`` = 0.
    judge_flagged: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    #: Index of the manifest row this item belongs to (-1: none found).
    run: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    #: Per row: the judge gave no usable verdict (errored item: an absence, never a zero).
    ungraded: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    #: scores.csv's ``item_text`` (dictionary-encoded) and ``evidence_quote`` columns, kept
    #: as Arrow arrays so a section takes the text of the few rows it quotes (None: absent).
    item_text: pa.Array | None = None
    evidence: pa.Array | None = None
    #: The ``_SCORES_KEPT`` columns the file has, as read (absent columns are absent).
    kept: dict[str, pa.Array] = field(default_factory=dict)


@dataclass
class ManifestTable:
    """manifest.csv, one entry per run: integer codes into the week's vocabularies and
    the run's columns."""

    present: bool = False
    columns: tuple[str, ...] = ()
    prompt: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    model: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    cond: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))
    rep: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    num: dict[str, np.ndarray] = field(default_factory=dict)  # numeric columns, NaN = empty
    activation: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))
    status: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))
    run_id: pa.Array | None = None
    run_error: pa.Array | None = None
    exit_code: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))
    #: Trajectory-audit invocation status per run: index into ``INVOCATION_STATUSES``, -1 = none.
    invocation: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))
    #: ``--skill-lift-baseline-from``: per run, whether it was copied in from an earlier week
    #: (so it is left out of this week's spend and run window); the week it came from and,
    #: for a no-skill run generated instead, why (Arrow arrays; None when the column is absent).
    reused: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    baseline_from: pa.Array | None = None
    baseline_reason: pa.Array | None = None


@dataclass
class Week:
    """A loaded week: integer-coded numpy arrays over shared vocabularies.

    ``prompts``/``models`` are the union of both files' values (sorted / conventional
    order); the tables' ``prompt``/``model`` arrays hold indices into them (-1 = unusable).
    The two files' own columns are its :class:`ScoresTable` (``scores``) and
    :class:`ManifestTable` (``manifest``); what is derived from both stays here.
    """

    week_dir: Path
    prompts: list[str]
    models: list[str]
    problems: list[Problem] = field(default_factory=list)
    #: The week's with-skill@REF condition as written (``with-skill@HEAD~1``), or None.
    ref_condition: str | None = None
    scores: ScoresTable = field(default_factory=ScoresTable)
    manifest: ManifestTable = field(default_factory=ManifestTable)
    n_items: int = 0
    n_ungraded: int = 0  # judge/parse errors: excluded and counted
    n_invalid_rows: int = 0  # rows that failed validation: excluded and counted
    #: Avoid items judged ``violated`` (columns), in scorecard order.
    violations: Violations = field(default_factory=Violations)
    n_runs: int = 0
    #: model label → sorted distinct snapshot strings.
    snapshots: dict[str, list[str]] = field(default_factory=dict)
    #: model label → sorted distinct requested model ids (our ``model_id`` column).
    model_ids: dict[str, list[str]] = field(default_factory=dict)
    cli_versions: list[str] = field(default_factory=list)
    #: model label → sorted distinct CLI versions (each label's agent has its own CLI).
    cli_versions_by_model: dict[str, list[str]] = field(default_factory=dict)
    #: CLI versions of runs made by the docker runner (checked against the pinned image CLI).
    docker_cli_versions: list[str] = field(default_factory=list)
    skills_shas: list[str] = field(default_factory=list)
    #: skill family → its distinct skills_sha values (one per family is normal: a tree hash
    #: per family when the skills root is not a git checkout).
    skills_shas_by_family: dict[str, list[str]] = field(default_factory=dict)
    window: tuple[str, str] | None = None  # (min timestamp, max timestamp), UTC
    #: Wall-clock seconds of the generation phase, or None when not derivable.
    wall_clock_s: float | None = None
    #: run_id → judge $ for the runs that have ``<run_id>/judge_cost.txt``.
    judge_costs: dict[str, float] = field(default_factory=dict)
    #: Names of the week's subdirectories (run directories), listed once.
    run_dirs: set[str] = field(default_factory=set)
    #: prompt → skill_family (from the manifest; the installed unit).
    prompt_family: dict[str, str] = field(default_factory=dict)
    #: ``task_rubric.csv``: the judged rubric items of task runs (a task's ``rubric.json``),
    #: one dict per row, kept apart from ``scores`` (never in the prompts' must coverage).
    task_rubric: list[dict[str, str]] = field(default_factory=list)

    def rewarded(self) -> np.ndarray:
        """Per run: a Harbor task run whose verifier gave a reward (graded by it, never by
        the judge: such a run counts as graded in the coverage and has no scores rows)."""
        reward = self.manifest.num.get("reward")
        if reward is None or reward.size != self.n_runs:
            return np.zeros(self.n_runs, bool)
        out: np.ndarray = ~np.isnan(reward)
        return out

    @property
    def arm_names(self) -> tuple[str, ...]:
        """Each condition code's name as the week writes it: ``model.ARMS`` with the
        with-skill@REF placeholder replaced by the week's REF (when it has one)."""
        ref = self.ref_condition
        return tuple(ref if a == WITH_REF and ref else a for a in ARMS)

    def judge_error(self, run_id: str) -> str | None:
        """First line of ``<run_id>/judge_error.txt`` (our ledger's record of a failed judge
        call), or None.  Only run directories that exist are probed."""
        if run_id not in self.run_dirs:
            return None
        try:
            text = (self.week_dir / run_id / JUDGE_ERROR_FILE).read_text(
                encoding="utf-8", errors="replace")
        except OSError:
            return None
        line = text.strip().splitlines()[0] if text.strip() else ""
        return line[:200] or None

    def run_ids(self, rows: Iterable[int]) -> list[str]:
        """The run ids of the given manifest rows (materialised only for these rows)."""
        if self.manifest.run_id is None:
            return []
        idx = np.fromiter(rows, dtype=np.int64)
        if idx.size == 0:
            return []
        return [str(x) if x is not None else "" for x in self.manifest.run_id.take(idx).to_pylist()]


# --------------------------------------------------------------------------- reading


class NotCsvText(Exception):
    """The file is not CSV text at all (its message says why)."""


def csv_header(path: Path) -> list[str] | None:
    """The header row, read with the csv module (one line only); None for an empty file.

    Raises ``NotCsvText`` for binary content (NUL bytes, e.g. a sparse or corrupted file) or a
    first line the csv module cannot read, and ``OSError`` when the file cannot be read.
    """
    with path.open("rb") as fb:
        first = fb.readline(1 << 20)
    if b"\0" in first:
        raise NotCsvText("is not a CSV text file (binary content: NUL bytes in its first line)")
    try:
        row = next(csv.reader([first.decode("utf-8-sig", errors="replace")]), None)
    except csv.Error as exc:
        raise NotCsvText(f"has no readable CSV header line ({exc})") from None
    if not row:
        return None
    return [c.strip() for c in row]


#: The fix for a week CSV that cannot be used at all.
_REGENERATE = ("restore it, or rebuild it from the run directories by rerunning pytest "
               "--skill-lift on this week (nothing is generated or judged again)")


def _row_list(rows: np.ndarray) -> str:
    """'row 3' / 'rows 3, 9, 12 and 40 more' -- 0-based data indices, printed 1-based."""
    shown = ", ".join(str(int(r) + 1) for r in rows[:MAX_ROWS_LISTED])
    more = rows.size - MAX_ROWS_LISTED
    return ("row " if rows.size == 1 else "rows ") + shown + (
        f" and {more} more" if more > 0 else "")


def _read_csv(
    path: Path,
    types: dict[str, pa.DataType],
    required: Sequence[str],
    problems: list[Problem],
) -> tuple[pa.Table | None, list[str]]:
    """Read the columns of ``types`` that exist, validating presence and numbers.

    Returns (table or None when unusable, header).  Numeric columns with non-numeric
    cells are re-read as text, the bad cells reported by row and set to null.
    """
    name = path.name
    if path.is_symlink():  # never read through: it may name any file of the host
        problems.append(Problem(name, f"{WeekLinkError(path)}"))
        return None, []
    if not path.exists():
        problems.append(Problem(name, "file not found"))
        return None, []
    try:
        if path.stat().st_size == 0:
            problems.append(Problem(name, "empty file (no header row, no data)"))
            return None, []
        header = csv_header(path)
    except NotCsvText as exc:
        problems.append(Problem(name, f"{exc}; fix: {_REGENERATE}"))
        return None, []
    except OSError as exc:
        problems.append(Problem(name, f"cannot be read ({exc.strerror or exc}); fix: make "
                                f"it a readable file (e.g. chmod u+r {name}) or {_REGENERATE}"))
        return None, []
    if header is None:
        problems.append(Problem(name, "empty file (no header row, no data)"))
        return None, []
    missing = [c for c in required if c not in header]
    for c in missing:
        problems.append(
            Problem(name, "required column is missing from the header", row=0, column=c)
        )
    if missing:
        return None, header
    include = [c for c in types if c in header]
    bad_lines: list[str] = []

    def on_invalid(row: pacsv.InvalidRow) -> str:
        # A row with the wrong number of fields is skipped and reported, not fatal.
        where = f"line {row.number}" if row.number is not None else "a line"
        bad_lines.append(
            f"{where} has {row.actual_columns} fields, expected {row.expected_columns}"
        )
        return "skip"

    def read(col_types: dict[str, pa.DataType]) -> pa.Table:
        return pacsv.read_csv(
            path,
            read_options=pacsv.ReadOptions(use_threads=True, block_size=8 << 20),
            # Evidence quotes can contain newlines inside quotes.
            parse_options=pacsv.ParseOptions(
                newlines_in_values=True, invalid_row_handler=on_invalid
            ),
            convert_options=pacsv.ConvertOptions(
                include_columns=include,
                column_types={c: t for c, t in col_types.items() if c in include},
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )

    try:
        table = read(types)
    except OSError as exc:  # vanished or became unreadable between the header and the body
        problems.append(Problem(name, f"cannot be read ({exc}); fix: {_REGENERATE}"))
        return None, header
    except pa.ArrowInvalid:
        # Some numeric column holds text: re-read numbers as text and pin down the cells.
        bad_lines.clear()
        as_text = {c: (pa.string() if pa.types.is_floating(t) else t) for c, t in types.items()}
        try:
            table = read(as_text)
        except (pa.ArrowException, OSError) as exc:  # malformed beyond repair (e.g.
            # unbalanced quotes, or binary junk after a good header)
            problems.append(Problem(name, f"could not be parsed as CSV: {exc}; fix: "
                                    f"{_REGENERATE}"))
            return None, header
        for c, t in types.items():
            if c in include and pa.types.is_floating(t):
                table = table.set_column(
                    table.schema.get_field_index(c), c, _numbers(table[c], name, c, problems)
                )
    for msg in bad_lines[:MAX_ROWS_LISTED]:
        problems.append(Problem(name, f"malformed row skipped: {msg}"))
    if len(bad_lines) > MAX_ROWS_LISTED:
        problems.append(
            Problem(name, f"{len(bad_lines) - MAX_ROWS_LISTED} more malformed rows skipped")
        )
    if table.num_rows == 0:
        problems.append(Problem(name, "has a header but no data rows"))
    # One dictionary per column (chunks may carry their own), then contiguous arrays.
    table = table.unify_dictionaries().combine_chunks()
    return table, header


def _numbers(col: pa.ChunkedArray, file: str, column: str, problems: list[Problem]) -> pa.Array:
    """Text → float64; empty → null; non-numeric → null and reported with its rows."""
    arr = col.combine_chunks()
    import pyarrow.compute as pc

    stripped = pc.utf8_trim_whitespace(arr)
    empty = pc.equal(stripped, "")
    ok = pc.or_(empty, pc.match_substring_regex(arr, _NUMBER_RE))
    bad = np.flatnonzero(~ok.to_numpy(zero_copy_only=False))
    if bad.size:
        sample = arr.take(pa.array(bad[:3])).to_pylist()
        problems.append(
            Problem(
                file,
                f"non-numeric value(s) {', '.join(repr(s) for s in sample)} in "
                f"{_row_list(bad)}; excluded",
                row=int(bad[0]) + 1,
                column=column,
            )
        )
    good = pc.and_(ok, pc.invert(empty))
    return pc.cast(pc.if_else(good, stripped, pa.scalar(None, pa.string())), pa.float64())


def _float_col(table: pa.Table, name: str) -> np.ndarray:
    """A numeric column as float64 with NaN for null; all-NaN when the column is absent."""
    if name not in table.column_names:
        return np.full(table.num_rows, np.nan)
    col = table[name]
    arr = col.chunk(0) if col.num_chunks else pa.array([], pa.float64())
    return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=np.float64)


def _dict_parts(table: pa.Table, name: str) -> tuple[np.ndarray, list[str]]:
    """(indices with -1 for null, dictionary values) of a dictionary-encoded column."""
    if name not in table.column_names or table.num_rows == 0:
        return np.full(table.num_rows, -1, np.int32), []
    arr = table[name].chunk(0)
    if not pa.types.is_dictionary(arr.type):
        import pyarrow.compute as pc

        arr = pc.dictionary_encode(arr)
    return dictionary_indices(arr), [str(v) for v in arr.dictionary.to_pylist()]


def _strings_at(table: pa.Table, name: str, rows: np.ndarray) -> list[str]:
    """The values of a string column at ``rows`` ("" for null, and when the column is absent)."""
    if name not in table.column_names:
        return [""] * rows.size
    return strings_at(table[name].chunk(0), rows)


def strings_at(arr: pa.Array, rows: np.ndarray) -> list[str]:
    """The values of a string (or dictionary-encoded string) array at ``rows``, "" for null.

    A dictionary array goes through its (small) dictionary: ``take().to_pylist()`` on a
    dictionary array decodes every row on its own, 100× slower for 10^5 rows.
    """
    if pa.types.is_dictionary(arr.type):
        values = np.array([*(v or "" for v in arr.dictionary.to_pylist()), ""], dtype=object)
        return list(values[dictionary_indices(arr)[rows]].tolist())
    if len(arr) <= PYLIST_ROWS:
        # A small week: the whole column as Python strings costs less than importing
        # pyarrow.compute (≈ 0.05 s), which ``take`` needs.
        column = arr.to_pylist()
        return [column[i] or "" for i in np.asarray(rows).tolist()]
    return list(arr.take(pa.array(rows)).fill_null("").to_pylist())


def dictionary_indices(arr: pa.DictionaryArray) -> np.ndarray:
    """A dictionary array's indices as numpy, -1 for null, without pyarrow.compute (a null's
    slot holds an arbitrary index: ``to_numpy`` turns nulls into NaN, mapped to -1 here)."""
    indices = arr.indices
    idx = np.asarray(indices.to_numpy(zero_copy_only=False))
    if indices.null_count:
        idx = np.where(np.isnan(idx), -1, idx).astype(np.int64)
    return idx


def distinct(codes: np.ndarray) -> np.ndarray:
    """The sorted distinct values of an integer array: ``np.unique(codes)``, without its
    import of numpy.ma (≈ 0.02 s, a tenth of a small week's summarize) — plain ``np.unique``
    loads it to ask whether its input is a masked array."""
    flat = np.asarray(codes).ravel()
    if flat.size > DISTINCT_SORT_MAX:  # numpy.ma is nothing next to sorting this many
        return np.unique(flat)
    flat = np.sort(flat)
    if flat.size < 2:
        return flat
    return flat[np.concatenate(([True], flat[1:] != flat[:-1]))]


def _distinct_pairs(
    a: tuple[np.ndarray, Sequence[str]], b: tuple[np.ndarray, Sequence[str]],
) -> list[tuple[str | None, str | None]]:
    """The distinct (a, b) value pairs of two coded columns (codes and values, as
    :func:`_dict_parts` gives them; code -1 = null → None).  One :func:`distinct` over
    combined codes: no per-row Python, and no pyarrow group-by (its import alone costs more
    than this)."""
    (a_idx, a_vals), (b_idx, b_vals) = a, b
    nb = len(b_vals) + 1
    code = (a_idx.astype(np.int64) + 1) * nb + (b_idx.astype(np.int64) + 1)
    out: list[tuple[str | None, str | None]] = []
    for c in distinct(code).tolist():
        ai, bi = divmod(c, nb)
        out.append((a_vals[ai - 1] if ai else None, b_vals[bi - 1] if bi else None))
    return out


def _lookup(values: list[str], mapping: dict[str, int], default: int = -1) -> np.ndarray:
    """Per-dictionary-entry code table (values are few: this loop is over distinct values)."""
    return np.array([mapping.get(v.strip(), default) for v in values] + [default], np.int64)


def _codes(idx: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Map dictionary indices (-1 = null) through a code table whose last entry is null.

    Plain fancy indexing does it: index -1 *is* the last (null) entry.
    """
    return cast("np.ndarray", table[idx])


MODEL_ORDER: tuple[str, ...] = ("opus", "sonnet", "haiku")


def order_models(labels: Iterable[str], agents: Mapping[str, str] | None = None) -> list[str]:
    """Conventional model order: larger models first (as the reference), then by name —
    within each agent, the agents in ``model.AGENTS`` order (Claude Code first), so every
    section of a week that mixes agents lists a label next to its agent's others. A label
    missing from ``agents`` is Claude Code's; a one-agent week keeps the order unchanged."""
    seen = set(labels)
    plain = [m for m in MODEL_ORDER if m in seen] + sorted(seen - set(MODEL_ORDER))
    of = agents or {}
    rank = {a: i for i, a in enumerate(AGENTS)}
    return sorted(plain, key=lambda m: rank.get(of.get(m, CLAUDE_CODE), len(rank)))


def _label_agents(manifest: pa.Table, models: tuple[np.ndarray, list[str]]) -> dict[str, str]:
    """Each label's agent, from the model ids the manifest records it was requested as (the
    first id in sorted order, as provenance reads it); labels without one are Claude Code's."""
    if "model_id" not in manifest.column_names:
        return {}
    ids: dict[str, list[str]] = {}
    for m, i in _distinct_pairs(models, _dict_parts(manifest, "model_id")):
        if m is not None and (i or "").strip():
            ids.setdefault(m.strip(), []).append((i or "").strip())
    return {m: split_agent(min(v))[0] for m, v in ids.items()}


# --------------------------------------------------------------------------- week


def load_week(week_dir: Path) -> Week:
    """Load and validate ``manifest.csv`` and ``scores.csv`` of a week directory."""
    week_dir = Path(week_dir)
    problems: list[Problem] = []
    scores, _ = _read_csv(week_dir / SCORES_CSV, _SCORES_TYPES, SCORES_REQUIRED, problems)
    manifest, m_header = _read_csv(
        week_dir / MANIFEST_CSV, _MANIFEST_TYPES, MANIFEST_REQUIRED, problems
    )

    no_parts: tuple[np.ndarray | None, list[str]] = (None, [])
    s_prompt_idx, s_prompt_vals = _dict_parts(scores, "prompt") if scores is not None else no_parts
    s_model_idx, s_model_vals = _dict_parts(scores, "model") if scores is not None else no_parts
    m_prompt_idx, m_prompt_vals = (_dict_parts(manifest, "prompt") if manifest is not None
                                   else no_parts)
    m_model_idx, m_model_vals = (_dict_parts(manifest, "model") if manifest is not None
                                 else no_parts)
    prompts = sorted({v.strip() for v in s_prompt_vals + m_prompt_vals} - {""})
    agents = (_label_agents(manifest, (m_model_idx, m_model_vals))
              if manifest is not None and m_model_idx is not None else {})
    models = order_models({v.strip() for v in s_model_vals + m_model_vals} - {""}, agents)
    p_map = {p: i for i, p in enumerate(prompts)}
    mo_map = {m: i for i, m in enumerate(models)}
    week = Week(week_dir=week_dir, prompts=prompts, models=models, problems=problems)

    if manifest is not None:
        assert m_prompt_idx is not None and m_model_idx is not None
        _fill_manifest(week, manifest, m_header, m_prompt_idx, m_prompt_vals,
                       m_model_idx, m_model_vals, p_map, mo_map)
    if scores is not None:
        assert s_prompt_idx is not None and s_model_idx is not None
        _fill_scores(week, scores, s_prompt_idx, s_prompt_vals, s_model_idx, s_model_vals,
                     p_map, mo_map)
    _link_runs(week)
    week.judge_costs = _judge_costs(week)
    week.task_rubric = read_task_rubric(week_dir, problems)
    task_runs = week.rewarded() | (week.manifest.status == RUN_STATUSES.index(VERIFIER_ERROR))
    if week.n_runs and task_runs.all():
        # A week of Harbor tasks only: no scores rows is what it should have (run/tasks).
        week.problems[:] = [p for p in week.problems
                            if not (p.file == SCORES_CSV and "no data rows" in p.message)]
    return week


def read_task_rubric(week_dir: Path, problems: list[Problem]) -> list[dict[str, str]]:
    """``task_rubric.csv``'s rows (a few per task run: read with the csv module, through no
    link); none when the week has no task with a rubric. An unreadable file is a problem."""
    path = Path(week_dir) / TASK_RUBRIC_CSV
    try:
        text = read_text_nofollow(path)
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError, WeekLinkError) as exc:
        problems.append(Problem(TASK_RUBRIC_CSV, f"cannot be read ({exc}); the tasks' rubric "
                                "coverage is left out"))
        return []
    return [{str(k): str(v or "") for k, v in row.items() if k is not None}
            for row in csv.DictReader(io.StringIO(text, newline=""))]  # quoted newlines kept


def _cond_codes(table: pa.Table, file: str, problems: list[Problem],
                week: Week) -> np.ndarray:
    idx, vals = _dict_parts(table, "condition")
    # with-skill@REF: any REF has the arm's code; a week holds one REF (the first seen),
    # rows of another are excluded and named.
    refs = [v.strip() for v in vals if arm_ref(v.strip()) is not None]
    if week.ref_condition is None and refs:
        week.ref_condition = refs[0]
    mapping = {c: i for i, c in enumerate(ARMS) if c != WITH_REF}
    if week.ref_condition is not None:
        mapping[week.ref_condition] = ARMS.index(WITH_REF)
    codes = _codes(idx, _lookup(vals, mapping))
    bad = np.flatnonzero(codes < 0)
    if bad.size:
        others = sorted({r for r in refs if r != week.ref_condition})
        why = (f" (a week holds one with-skill@REF arm, {week.ref_condition}; also found "
               f"{', '.join(others)}: run the other REF in its own week)" if others else "")
        problems.append(Problem(
            file, f"condition must be one of {', '.join(ARMS[:-1])} or with-skill@REF{why}; "
            f"{_row_list(bad)} excluded", row=int(bad[0]) + 1, column="condition"))
    return codes.astype(np.int8)


def _rep_codes(rep: np.ndarray, file: str, problems: list[Problem]) -> np.ndarray:
    bad = np.flatnonzero(~np.isfinite(rep) | (rep < 0) | (rep != np.round(rep)))
    if bad.size:
        problems.append(Problem(
            file, f"rep must be a non-negative integer; {_row_list(bad)} excluded",
            row=int(bad[0]) + 1, column="rep"))
    out = np.where(np.isfinite(rep), rep, -1).astype(np.int64)
    out[bad] = -1
    return out


def _fill_scores(
    week: Week, t: pa.Table, p_idx: np.ndarray, p_vals: list[str], m_idx: np.ndarray,
    m_vals: list[str], p_map: dict[str, int], mo_map: dict[str, int],
) -> None:
    file = SCORES_CSV
    probs = week.problems
    n = t.num_rows
    week.scores.present = True
    week.n_items = n
    week.scores.prompt = _codes(p_idx, _lookup(p_vals, p_map)).astype(np.int32)
    week.scores.model = _codes(m_idx, _lookup(m_vals, mo_map)).astype(np.int32)
    week.scores.cond = _cond_codes(t, file, probs, week)
    week.scores.rep = _rep_codes(_float_col(t, "rep"), file, probs)
    for name, codes in (("prompt", week.scores.prompt), ("model", week.scores.model)):
        bad = np.flatnonzero(codes < 0)
        if bad.size:
            probs.append(Problem(file, f"empty {name}; {_row_list(bad)} excluded",
                                 row=int(bad[0]) + 1, column=name))

    # item_type × verdict → status (0 graded, 1 ungraded marker, 2 invalid) and credit,
    # computed on the dictionaries (a handful of values) and mapped back per row.
    t_idx, t_vals = _dict_parts(t, "item_type")
    v_idx, v_vals = _dict_parts(t, "verdict")
    type_code = _lookup(t_vals, {k: i for i, k in enumerate(ITEM_TYPES)})
    nt, nv = len(t_vals) + 1, len(v_vals) + 1
    status_tab = np.full((nt, nv), 2, np.int8)
    credit_tab = np.full((nt, nv), np.nan)
    for ti in range(nt):
        tc = int(type_code[ti])
        for vi in range(nv):
            v = v_vals[vi].strip() if vi < len(v_vals) else ""
            if v in UNGRADED_VERDICTS and tc >= 0:
                status_tab[ti, vi] = 1
            elif tc >= 0 and v in VERDICTS[ITEM_TYPES[tc]]:
                status_tab[ti, vi] = 0
                credit_tab[ti, vi] = 1.0 if v == VERDICTS[ITEM_TYPES[tc]][0] else 0.0
    ti_row = np.where(t_idx < 0, nt - 1, t_idx)
    vi_row = np.where(v_idx < 0, nv - 1, v_idx)
    status = status_tab[ti_row, vi_row]
    credit = credit_tab[ti_row, vi_row]
    week.scores.type = _codes(t_idx, type_code).astype(np.int8)

    bad_type = np.flatnonzero(week.scores.type < 0)
    if bad_type.size:
        sample = sorted({t_vals[i] for i in t_idx[bad_type[:50]] if i >= 0} or {""})
        probs.append(Problem(
            file, f"unknown item_type {', '.join(map(repr, sample))} (expected one of "
            f"{', '.join(ITEM_TYPES)}); {_row_list(bad_type)} excluded",
            row=int(bad_type[0]) + 1, column="item_type"))
    bad_verdict = np.flatnonzero((status == 2) & (week.scores.type >= 0))
    if bad_verdict.size:
        pairs = sorted({(ITEM_TYPES[week.scores.type[r]], v_vals[v_idx[r]] if v_idx[r] >= 0 else "")
                        for r in bad_verdict[:200]})
        desc = "; ".join(
            f"{v!r} for a {ty} item (expected {VERDICTS[ty][0]!r} or {VERDICTS[ty][1]!r})"
            for ty, v in pairs[:5])
        probs.append(Problem(
            file, f"unknown verdict: {desc}; {_row_list(bad_verdict)} excluded and "
            "counted as invalid, not scored", row=int(bad_verdict[0]) + 1, column="verdict"))

    # The credit column must agree with the verdict; a row that contradicts itself is
    # excluded rather than guessed at (non-numeric credits were nulled by _numbers).
    raw = _float_col(t, "credit")
    graded = status == 0
    nonnum = graded & np.isnan(raw)
    mismatch = graded & ~np.isnan(raw) & (raw != credit)
    # Empty credit for a valid verdict is only reported when it was not already reported
    # as non-numeric text by _numbers (which nulled the cell).
    if mismatch.any():
        rows = np.flatnonzero(mismatch)
        probs.append(Problem(
            file, f"credit disagrees with the verdict in {_row_list(rows)}; "
            "excluded", row=int(rows[0]) + 1, column="credit"))
    if nonnum.any():
        rows = np.flatnonzero(nonnum)
        already = any(p.file == file and p.column == "credit" and "non-numeric" in p.message
                      for p in probs)
        if not already:
            probs.append(Problem(
                file, f"credit is empty for a graded verdict in {_row_list(rows)}; "
                "excluded", row=int(rows[0]) + 1, column="credit"))
    dup = _duplicate_rows(week, t, probs)
    usable = (
        graded & ~nonnum & ~mismatch & (week.scores.prompt >= 0) & (week.scores.model >= 0)
        & (week.scores.cond >= 0) & (week.scores.rep >= 0) & ~dup
    )
    week.scores.credit = np.where(usable, credit, np.nan)
    # a duplicated item is counted once: the first
    week.scores.type = np.where(dup, -1, week.scores.type).astype(np.int8)
    week.n_ungraded = int(np.count_nonzero((status == 1) & ~dup))
    week.scores.ungraded = (status == 1) & ~dup
    week.n_invalid_rows = int(np.count_nonzero(~usable & (status != 1) & ~dup))

    c_idx, c_vals = _dict_parts(t, "contested")
    falsy = {"", "0", "false", "False", "FALSE", "no"}
    week.scores.contested = _codes(c_idx, np.array(
        [0 if v.strip() in falsy else 1 for v in c_vals] + [0], np.int64)).astype(bool)
    # report.judging's reading of the same columns, so it need not parse scores.csv again.
    e_idx, e_vals = _dict_parts(t, "evidence_ok")
    week.scores.judge_flagged = _codes(c_idx, np.array(
        [v.strip().lower() not in JUDGE_NOT_CONTESTED for v in c_vals] + [False])) | _codes(
        e_idx, np.array([v.strip() == "0" for v in e_vals] + [False]))

    week.scores.item_text = (t["item_text"].chunk(0) if ("item_text" in t.column_names and n)
                             else None)
    week.scores.evidence = (t["evidence_quote"].chunk(0)
                       if ("evidence_quote" in t.column_names and n) else None)
    week.scores.kept = {c: t[c].chunk(0) for c in _SCORES_KEPT if c in t.column_names and n}
    # Avoid violations with their evidence: only these rows' text is materialised, column by
    # column (a bad week has ~150,000 of them), in scorecard order (by the names).
    viol = np.flatnonzero(usable & (week.scores.type == 2) & (credit == 1.0))
    if viol.size:
        model_rank = np.argsort(np.argsort(np.array(week.models, dtype=object)))
        arm_rank = np.argsort(np.argsort(np.array(ARMS, dtype=object)))
        pr, mo, co = week.scores.prompt[viol], week.scores.model[viol], week.scores.cond[viol]
        # np.lexsort is stable: file order within one (prompt, model, condition).
        viol = viol[np.lexsort((arm_rank[co], model_rank[mo], pr))]
        week.violations = Violations(
            prompt=np.array(week.prompts, dtype=object)[week.scores.prompt[viol]].tolist(),
            model=np.array(week.models, dtype=object)[week.scores.model[viol]].tolist(),
            condition=np.array(week.arm_names, dtype=object)[week.scores.cond[viol]].tolist(),
            rep=week.scores.rep[viol].tolist(),
            item_text=_strings_at(t, "item_text", viol),
            evidence=_strings_at(t, "evidence_quote", viol),
        )


def _duplicate_rows(week: Week, t: pa.Table, probs: list[Problem]) -> np.ndarray:
    """Rows repeating an earlier row's prompt×model×condition×rep×item: a reported input
    problem, and each item counted once (the first row). The item is ``item_type`` +
    ``item_index`` when the file has our ``item_index`` column, else ``item_type`` +
    ``item_text`` (the qdrant columns)."""
    n = t.num_rows
    if "item_index" in t.column_names:
        item = np.nan_to_num(_float_col(t, "item_index"), nan=-1.0).astype(np.int64)
        n_item = int(item.max(initial=0)) + 1
    else:
        item, texts = _dict_parts(t, "item_text")
        item = item.astype(np.int64)
        n_item = len(texts) + 1
    sc = week.scores
    parts = (sc.prompt, sc.model, sc.cond, sc.rep, sc.type, item)
    valid = np.ones(n, bool)
    for part in parts:
        valid &= part >= 0
    if not valid.any():
        return np.zeros(n, bool)
    sizes = (len(week.prompts) or 1, len(week.models) or 1, len(ARMS),
             int(week.scores.rep.max(initial=0)) + 1, len(ITEM_TYPES), n_item)
    # Built in place (a row with an invalid part gets a meaningless key; it is masked next).
    key = parts[0].astype(np.int64)
    for part, size in zip(parts[1:], sizes[1:], strict=True):
        key *= size
        key += part
    key[~valid] = -1
    # The usual week has no repeats. Rows in key order (a week written in order) show it in
    # one pass; otherwise one unstable sort of the keys does (≈ 0.06 s for 10^6 rows; a
    # bincount over the key space touched up to 10^7 counters and took longer). Only a week
    # with repeats pays for the stable sort that finds them.
    present = key if valid.all() else key[valid]
    if present.size < 2 or bool((present[1:] > present[:-1]).all()):
        return np.zeros(n, bool)
    present = np.sort(present)
    if not (present[1:] == present[:-1]).any():
        return np.zeros(n, bool)
    order = np.argsort(key, kind="stable")
    ordered = key[order]
    repeat = np.flatnonzero((ordered[1:] == ordered[:-1]) & (ordered[1:] >= 0)) + 1
    dup = np.zeros(n, bool)
    dup[order[repeat]] = True  # stable sort: the first occurrence keeps its place
    if repeat.size:
        rows = np.flatnonzero(dup)
        probs.append(Problem(
            "scores.csv", f"{_row_list(rows)} {'repeats' if rows.size == 1 else 'repeat'} an "
            "earlier row's "
            "prompt×model×condition×rep×item; each item is counted once (the first row). "
            "Fix: remove the repeated rows, or rebuild scores.csv by rerunning pytest "
            "--skill-lift on this week", row=int(rows[0]) + 1))
    return dup


def _fill_manifest(
    week: Week, t: pa.Table, header: list[str], p_idx: np.ndarray, p_vals: list[str],
    m_idx: np.ndarray, m_vals: list[str], p_map: dict[str, int], mo_map: dict[str, int],
) -> None:
    file = MANIFEST_CSV
    probs = week.problems
    n = t.num_rows
    week.manifest.present = True
    week.manifest.columns = tuple(header)
    week.n_runs = n
    week.manifest.prompt = _codes(p_idx, _lookup(p_vals, p_map)).astype(np.int32)
    week.manifest.model = _codes(m_idx, _lookup(m_vals, mo_map)).astype(np.int32)
    week.manifest.cond = _cond_codes(t, file, probs, week)
    week.manifest.rep = _rep_codes(_float_col(t, "rep"), file, probs)
    week.manifest.num = {c: _float_col(t, c) for c in _MANIFEST_NUMERIC}
    week.manifest.exit_code = week.manifest.num["exit_code"]
    week.manifest.run_id = t["run_id"].chunk(0) if n else pa.array([], pa.string())
    week.manifest.run_error = (t["run_error"].chunk(0) if ("run_error" in t.column_names and n)
                               else None)

    a_idx, a_vals = _dict_parts(t, "skill_activation")
    act_map = {a: i for i, a in enumerate(ACTIVATIONS)}
    act_map[""] = ACTIVATIONS.index("none")  # qdrant writes "none"; empty means the same
    week.manifest.activation = _codes(a_idx, _lookup(a_vals, act_map, default=-1)).astype(np.int8)
    if "skill_activation" in t.column_names:
        bad = np.flatnonzero(week.manifest.activation < 0)
        if bad.size:
            probs.append(Problem(
                file, f"unknown skill_activation (expected one of {', '.join(ACTIVATIONS)}) "
                f"in {_row_list(bad)}; counted as 'unknown'", row=int(bad[0]) + 1,
                column="skill_activation"))
    else:
        week.manifest.activation = np.full(n, -1, np.int8)

    for c in ("exit_code", "skill_available", "total_cost_usd", "num_turns", "budget_hit",
              "skill_activation", "reached_leaf", "fetched_site", "duration_ms", "timestamp"):
        if c not in header:
            probs.append(Problem(file, "column missing; the numbers that need it are "
                                 "reported as n/a", row=0, column=c))

    week.manifest.status = _run_status(t, week)

    if "skill_family" in t.column_names and n:
        # First family seen per prompt: one np.unique over codes, not a row loop.
        f_idx, f_vals = _dict_parts(t, "skill_family")
        valid = np.flatnonzero((week.manifest.prompt >= 0) & (f_idx >= 0))
        prompts_u, first = np.unique(week.manifest.prompt[valid], return_index=True)
        week.prompt_family = {
            week.prompts[int(p)]: f_vals[int(f_idx[valid[i]])]
            for p, i in zip(prompts_u, first, strict=True)
        }

    # Provenance: the distinct (model, snapshot) pairs and version strings (few values).
    models = (week.manifest.model, week.models)
    if "model_snapshot" in t.column_names and n:
        snaps: dict[str, set[str]] = {}
        for m, s in _distinct_pairs(models, _dict_parts(t, "model_snapshot")):
            s = (s or "").strip()
            if m is not None and s and s != "MISSING_TRANSCRIPT":
                snaps.setdefault(m, set()).add(s)
        week.snapshots = {m: sorted(v) for m, v in snaps.items()}
    if "model_id" in t.column_names and n:
        # Our manifest records the model id each label was requested as (provenance).
        ids: dict[str, set[str]] = {}
        for m, i in _distinct_pairs(models, _dict_parts(t, "model_id")):
            mid = (i or "").strip()
            if m is not None and mid:
                ids.setdefault(m, set()).add(mid)
        week.model_ids = {m: sorted(v) for m, v in ids.items()}
    if "cli_version" in t.column_names and n:
        by_model: dict[str, set[str]] = {}
        for m, v in _distinct_pairs(models, _dict_parts(t, "cli_version")):
            if m is not None and (v or "").strip():
                by_model.setdefault(m, set()).add((v or "").strip())
        week.cli_versions_by_model = {m: sorted(v) for m, v in by_model.items()}
    for attr, col in (("cli_versions", "cli_version"), ("skills_shas", "skills_sha")):
        if col in t.column_names and n:
            c_idx, c_vals = _dict_parts(t, col)
            used = distinct(c_idx).tolist()
            vals = {c_vals[i].strip() for i in used if i >= 0}
            setattr(week, attr, sorted(vals - {""}))
    if "skills_sha" in t.column_names and n:
        shas: dict[str, set[str]] = {}
        # The with-skill@REF arm's runs install the family at another commit by design:
        # they are keyed ``<family>@<REF>``, so only a change within one arm is a mismatch.
        is_ref = week.manifest.cond == ARMS.index(WITH_REF)
        parts = ((t, ""),) if not is_ref.any() else (
            (t.filter(pa.array(~is_ref)), ""), (t.filter(pa.array(is_ref)),
                                                 f"@{arm_ref(week.ref_condition or '')}"))
        for sub, suffix in parts:
            if not sub.num_rows:
                continue
            for f, s in _distinct_pairs(_dict_parts(sub, "skill_family"),
                                        _dict_parts(sub, "skills_sha")):
                if (sha := (s or "").strip()):
                    shas.setdefault((f or "").strip() + suffix, set()).add(sha)
        week.skills_shas_by_family = {f: sorted(v) for f, v in sorted(shas.items())}
    i_idx, i_vals = _dict_parts(t, "invocation_status")
    inv_map = {v: i for i, v in enumerate(INVOCATION_STATUSES)}
    week.manifest.invocation = (_codes(i_idx, _lookup(i_vals, inv_map, default=-1)).astype(np.int8)
                         if "invocation_status" in t.column_names else np.full(n, -1, np.int8))
    if {"runner", "cli_version"} <= set(t.column_names) and n:
        pairs = _distinct_pairs(_dict_parts(t, "runner"), _dict_parts(t, "cli_version"))
        week.docker_cli_versions = sorted(
            {(v or "").strip() for r, v in pairs if r == "docker"} - {""})
    week.manifest.reused = np.zeros(n, bool)
    if "baseline_from" in t.column_names and n:
        week.manifest.baseline_from = t["baseline_from"].chunk(0)
        b_idx, b_vals = _dict_parts(t, "baseline_from")
        week.manifest.reused = np.array([bool(v.strip()) for v in b_vals] + [False])[b_idx]
    if "baseline_reason" in t.column_names and n:
        week.manifest.baseline_reason = t["baseline_reason"].chunk(0)
    if week.manifest.reused.any():  # a reused run ran in its own week: not in this week's window
        keep = ~week.manifest.reused
        week.window, week.wall_clock_s = _window(t.filter(pa.array(keep)), week, keep)
    else:
        week.window, week.wall_clock_s = _window(t, week)


def _run_status(t: pa.Table, week: Week) -> np.ndarray:
    """Our ``run_status`` when present, else derived from the qdrant base columns."""
    n = t.num_rows
    status = np.full(n, STATUS_OK, np.int8)
    derived = np.ones(n, bool)
    if "run_status" in t.column_names and n:
        idx, vals = _dict_parts(t, "run_status")
        code = _codes(idx, _lookup(vals, {s: i for i, s in enumerate(RUN_STATUSES)}, -2))
        given = code >= 0
        unknown = np.flatnonzero(code == -2)
        empty_val = [i for i, v in enumerate(vals) if v.strip() == ""]
        unknown = unknown[~np.isin(idx[unknown], empty_val)] if empty_val else unknown
        if unknown.size:
            week.problems.append(Problem(
                MANIFEST_CSV, f"unknown run_status (expected one of {', '.join(RUN_STATUSES)})"
                f" in {_row_list(unknown)}; derived from the base columns instead",
                row=int(unknown[0]) + 1, column="run_status"))
        status[given] = code[given]
        derived = ~given
    num = week.manifest.num
    avail = num["skill_available"]
    exit_code = num["exit_code"]
    applies = {
        INVALID: np.isin(week.manifest.cond, _SKILL_ARM_CODES) & (avail != 1) & ~np.isnan(avail),
        BUDGET_CAPPED: num["budget_hit"] == 1,
        ERRORED: ~np.isnan(exit_code) & (exit_code != 0),
    }
    # The base columns say nothing of an answer, so NO_ANSWER cannot be derived here. The
    # first status of TRANSCRIPT_ORDER that applies wins: assign them last to first.
    d = np.full(n, STATUS_OK, np.int8)
    for s in reversed(TRANSCRIPT_ORDER):
        if s in applies:
            d[applies[s]] = RUN_STATUSES.index(s)
    status[derived] = d[derived]
    return status


#: ``UTC_STAMP_FORMAT`` with every field at its full width, the stamp every run writes.
_STAMP = re.compile(r"([0-9]{4})([0-9]{2})([0-9]{2})T([0-9]{2})([0-9]{2})([0-9]{2})Z")


def _parse_utc(v: str) -> float | None:
    """yyyymmddTHHMMSSZ (or ISO 8601) → POSIX seconds; None when unparseable."""
    from datetime import datetime

    v = v.strip()
    if (m := _STAMP.fullmatch(v)) is not None:
        # What strptime(UTC_STAMP_FORMAT) reads from a full-width stamp, without its first
        # call's cost (≈ 0.02 s: importing _strptime, compiling its pattern) and its ~50 µs a
        # stamp; anything else (a short field, an out-of-range one) goes the long way below.
        with contextlib.suppress(ValueError):
            y, mo, day, h, mi, sec = map(int, m.groups())
            return datetime(y, mo, day, h, mi, sec, tzinfo=UTC).timestamp()
    for fmt in (UTC_STAMP_FORMAT, "%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S.%fZ"):
        try:
            return datetime.strptime(v, fmt).replace(tzinfo=UTC).timestamp()
        except ValueError:
            continue
    try:
        d = datetime.fromisoformat(v)
    except ValueError:
        return None
    if d.tzinfo is None:
        d = d.replace(tzinfo=UTC)
    return d.timestamp()


def _window(t: pa.Table, week: Week, keep: np.ndarray | None = None,
            ) -> tuple[tuple[str, str] | None, float | None]:
    """Run window (min/max start timestamp) and the generation wall-clock in seconds.

    Wall-clock is ``max(end) − min(start)``.  Our manifest has started/ended_utc; the
    qdrant one has ``timestamp`` (the run's start) and ``duration_ms``, so the end is
    start + duration -- which reproduces the reference's 46.5 min on 20260808.
    """
    if t.num_rows == 0:
        return None, None

    def distinct_times(col: str) -> tuple[np.ndarray, list[str]]:
        idx, vals = _dict_parts(t, col)
        secs = np.array([_parse_utc(v) if v.strip() else None for v in vals] + [None],
                        dtype=np.float64)
        return secs[np.where(idx < 0, len(vals), idx)], vals

    window = None
    start_s = np.full(t.num_rows, np.nan)
    if "timestamp" in t.column_names:
        start_s, vals = distinct_times("timestamp")
        stamps = sorted(v.strip() for v in vals if v.strip())
        if stamps:
            window = (stamps[0], stamps[-1])
    wall = None
    if "started_utc" in t.column_names and "ended_utc" in t.column_names:
        # Our manifest: exact start and end per run (its ``timestamp`` is the run's end).
        s, s_vals = distinct_times("started_utc")
        e, e_vals = distinct_times("ended_utc")
        if np.isfinite(s).any() and np.isfinite(e).any():
            wall = float(np.nanmax(e) - np.nanmin(s))
            starts = sorted(v.strip() for v in s_vals if v.strip())
            ends = sorted(v.strip() for v in e_vals if v.strip())
            if starts and ends:
                window = (starts[0], ends[-1])
    if wall is None and np.isfinite(start_s).any():
        dur = week.manifest.num.get("duration_ms", np.full(week.n_runs, np.nan))
        dur = dur if keep is None else dur[keep]  # the rows of ``t``
        end = start_s + np.nan_to_num(dur, nan=0.0) / 1000.0
        wall = float(np.nanmax(end) - np.nanmin(start_s))
    return window, wall


def _link_runs(week: Week) -> None:
    """Map every scores row to its manifest row by (prompt, model, condition, rep)."""
    n_s = week.scores.prompt.size
    week.scores.run = np.full(n_s, -1, np.int64)
    if not (week.scores.present and week.manifest.present) or n_s == 0 or week.n_runs == 0:
        return
    max_rep = int(max(week.scores.rep.max(initial=0), week.manifest.rep.max(initial=0))) + 1
    n_m = len(week.models) or 1

    def key(p: np.ndarray, m: np.ndarray, c: np.ndarray, r: np.ndarray) -> np.ndarray:
        k = ((p.astype(np.int64) * n_m + m) * len(ARMS) + c) * max_rep + r
        bad = (p < 0) | (m < 0) | (c < 0) | (r < 0)
        return np.where(bad, -1, k)

    mk = key(week.manifest.prompt, week.manifest.model, week.manifest.cond, week.manifest.rep)
    sk = key(week.scores.prompt, week.scores.model, week.scores.cond, week.scores.rep)
    order = np.argsort(mk, kind="stable")
    sorted_k = mk[order]
    dup = np.flatnonzero((sorted_k[1:] == sorted_k[:-1]) & (sorted_k[1:] >= 0))
    if dup.size:
        rows = np.sort(order[dup + 1])
        week.problems.append(Problem(
            MANIFEST_CSV, f"duplicate prompt×model×condition×rep in {_row_list(rows)}; "
            "scores are attributed to the first", row=int(rows[0]) + 1))
    pos = np.searchsorted(sorted_k, sk)
    pos = np.clip(pos, 0, max(sorted_k.size - 1, 0))
    hit = (sorted_k[pos] == sk) & (sk >= 0)
    week.scores.run = np.where(hit, order[pos], -1)
    orphan = np.flatnonzero(~hit & (sk >= 0))
    if orphan.size:
        week.problems.append(Problem(
            SCORES_CSV, f"{_row_list(orphan)}: no run in manifest.csv has this "
            "prompt×model×condition×rep; still scored",
            row=int(orphan[0]) + 1))


def _judge_costs(week: Week) -> dict[str, float]:
    """``<run_id>/judge_cost.txt`` per run.  Lists the week dir once instead of probing
    every run id, since large synthetic weeks have no run directories at all."""
    try:
        entries = list(os.scandir(week.week_dir))
    except OSError:
        return {}
    # A run folder that is a link is never read through (it may name any folder of the host):
    # left out of run_dirs, so no reader of the week (the viewer, the label sheet) opens it.
    subdirs = {e.name for e in entries if e.is_dir(follow_symlinks=False)}
    for e in sorted(entries, key=lambda e: e.name):
        if e.is_symlink() and e.is_dir():
            week.problems.append(Problem(e.name, f"{WeekLinkError(Path(e.path), '(a run folder)')}"
                                         "; left out of the week"))
    week.run_dirs = subdirs
    if not subdirs or week.manifest.run_id is None:
        return {}
    known = {str(v) for v in week.manifest.run_id.dictionary.to_pylist()} if pa.types.is_dictionary(
        week.manifest.run_id.type) else set(week.manifest.run_id.to_pylist())
    out: dict[str, float] = {}
    for rid in sorted(subdirs & known):
        p = week.week_dir / rid / JUDGE_COST_FILE
        if p.is_symlink() or not p.is_file():
            continue
        text = p.read_text(encoding="utf-8", errors="replace").strip()
        try:
            v = float(text)
        except ValueError:
            week.problems.append(Problem(f"{rid}/{JUDGE_COST_FILE}",
                                         f"not a number: {text[:40]!r}; judge $ incomplete"))
            continue
        if math.isfinite(v):
            out[rid] = v
    return out


__all__ = [
    "MANIFEST_REQUIRED", "SCORES_REQUIRED", "UNGRADED_VERDICTS",
    "Problem", "Week", "load_week", "order_models",
]
