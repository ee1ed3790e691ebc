"""The persistent week-over-week history: ``<week>/../scorecard-history.csv``.

One row per run and model, in the qdrant pipeline's exact format (same columns, same
order, 6-decimal numbers, ``csv`` module line endings) so either tool can extend the
other's file; our own columns come after them (:data:`HISTORY_EXTRA_COLUMNS`, written only
once some row has a value), which a reader that looks columns up by name never notices.
The upsert is idempotent: summarizing the same week twice leaves the file byte-for-byte
unchanged.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_skilllift.week.files import atomic_write_text

#: The reference file's columns, in order.
HISTORY_COLUMNS: tuple[str, ...] = (
    "run_key", "window_end", "model", "must_lift", "must_lift_se", "composite_lift",
    "cost_delta", "turns_delta",
)
_NUMERIC = HISTORY_COLUMNS[3:]
#: Ours, after the reference columns: the run's contested-item count for the model (empty
#: when no run was graded by more than one judge sample).
HISTORY_EXTRA_COLUMNS: tuple[str, ...] = ("contested_items",)


@dataclass(frozen=True)
class HistoryRow:
    """One (run, model) row.  Numbers are None when the week could not compute them."""

    run_key: str
    window_end: str
    model: str
    must_lift: float | None
    must_lift_se: float | None
    composite_lift: float | None = None
    cost_delta: float | None = None
    turns_delta: float | None = None
    contested_items: int | None = None


class HistoryError(Exception):
    """The history file exists but cannot be read as a history (it is then never rewritten)."""


def _fmt(v: float | None) -> str:
    return "" if v is None or not math.isfinite(v) else f"{v:.6f}"


def _parse_count(v: str | None) -> int | None:
    x = _parse(v)
    return int(x) if x is not None and x >= 0 and x.is_integer() else None


def _parse(v: str | None) -> float | None:
    try:
        x = float(v) if v not in (None, "") else None
    except ValueError:
        return None
    return x if x is not None and math.isfinite(x) else None


def read_history(path: Path) -> list[HistoryRow]:
    """All rows of a history file (empty list when it does not exist yet).

    Unparseable numbers read as None rather than failing: a damaged history should
    degrade the week-over-week section, not the whole scorecard.  A file that is not a
    history at all raises :class:`HistoryError`.
    """
    path = Path(path)
    if not path.exists():
        return []
    try:
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            if reader.fieldnames is not None and "run_key" not in reader.fieldnames:
                raise HistoryError(f"{path.name}: not a scorecard history (no run_key column)")
            return [
                HistoryRow(
                    run_key=(r.get("run_key") or "").strip(),
                    window_end=(r.get("window_end") or "").strip(),
                    model=(r.get("model") or "").strip(),
                    **{c: _parse(r.get(c)) for c in _NUMERIC},
                    contested_items=_parse_count(r.get("contested_items")),
                )
                for r in reader
                if (r.get("run_key") or "").strip()
            ]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise HistoryError(f"{path.name}: unreadable ({exc})") from exc


def merge_history(
    existing: Sequence[HistoryRow], rows: Sequence[HistoryRow]
) -> list[HistoryRow]:
    """The upsert without the write: this run's rows replace its old ones in place
    (matched by ``run_key``), or are appended when the run is new."""
    keys = {r.run_key for r in rows}
    out: list[HistoryRow] = []
    inserted = False
    for r in existing:
        if r.run_key in keys:
            if not inserted:  # the run's new rows take the place of its old ones
                out.extend(rows)
                inserted = True
            continue
        out.append(r)
    if not inserted:
        out.extend(rows)
    return out


def upsert_history(path: Path, rows: Sequence[HistoryRow]) -> list[HistoryRow]:
    """Merge this run's rows into the file (see :func:`merge_history`), atomically.

    Returns the full history as written.  Raises :class:`HistoryError` (and leaves the file
    alone) when the existing file cannot be read.
    """
    path = Path(path)
    out = merge_history(read_history(path), rows)
    write_history(path, out)
    return out


def write_history(path: Path, rows: Sequence[HistoryRow]) -> None:
    """Write the whole history atomically (temp file + rename)."""
    buf = io.StringIO(newline="")
    # csv's default "\r\n" terminator: the reference file is written the same way.
    w = csv.writer(buf)
    # The extra column appears once some run has a count, so a history of weeks graded with
    # one judge sample stays byte-identical to the reference file.
    extra = any(r.contested_items is not None for r in rows)
    w.writerow(HISTORY_COLUMNS + (HISTORY_EXTRA_COLUMNS if extra else ()))
    for r in rows:
        cells = [r.run_key, r.window_end, r.model, _fmt(r.must_lift), _fmt(r.must_lift_se),
                 _fmt(r.composite_lift), _fmt(r.cost_delta), _fmt(r.turns_delta)]
        if extra:
            cells.append("" if r.contested_items is None else str(r.contested_items))
        w.writerow(cells)
    atomic_write_text(Path(path), buf.getvalue())


def with_lift(rows: Sequence[HistoryRow]) -> list[HistoryRow]:
    """The rows of the runs that have a lift for some model: a week with nothing graded is
    not one of the runs the week-over-week rule waits for, nor a point of the trend."""
    lifted = {r.run_key for r in rows if r.must_lift is not None}
    return [r for r in rows if r.run_key in lifted]


def run_order(rows: Sequence[HistoryRow]) -> list[str]:
    """Distinct run keys, oldest first (by window end, then key)."""
    ends: dict[str, str] = {}
    for r in rows:
        ends[r.run_key] = max(ends.get(r.run_key, ""), r.window_end)
    return sorted(ends, key=lambda k: (ends[k], k))


def prior_runs(
    rows: Sequence[HistoryRow], run_key: str, model: str, *,
    pooled: Collection[str] | None = None,
) -> list[tuple[str, float | None, float | None]]:
    """(run_key, must_lift, must_lift_se) of the runs before ``run_key``, oldest first;
    only the runs in ``pooled`` when given (:func:`pool_decisions`)."""
    order = run_order(rows)
    if run_key in order:
        order = order[: order.index(run_key)]
    by_key = {r.run_key: r for r in rows if r.model == model}
    return [(k, by_key[k].must_lift, by_key[k].must_lift_se) for k in order
            if k in by_key and (pooled is None or k in pooled)]


def runs_up_to(rows: Sequence[HistoryRow], run_key: str, *,
               pooled: Collection[str] | None = None) -> int:
    """How many runs exist up to and including ``run_key`` (the "run N of 4" count); only
    this one and the runs in ``pooled`` when given."""
    order = run_order(rows)
    before = order[: order.index(run_key)] if run_key in order else order
    return sum(1 for k in before if pooled is None or k in pooled) + 1


# --------------------------------------------------------------------------- pooling

#: Identity fields that must match for two weeks' lifts to be pooled into one between-week σ:
#: the same prompts and rubrics, the same models, the same judge protocol (model, prompt
#: version, samples per run, evidence policy, arm-leak mask). CLI version, skills and agent
#: settings may differ: week-over-week movement is how their changes show.
POOLING_FIELDS: frozenset[str] = frozenset({"prompt", "rubric", "models", "judge_model",
                                            "judge_prompt_version", "judge_samples",
                                            "evidence", "judge_mask"})
POOLED, NOT_CHECKED = "same prompts, models and judge protocol", "identity not checked"
POOLED_CSV = "same prompts, models and item texts"


@dataclass(frozen=True)
class CsvIdentity:
    """What a week's CSVs show of how it was measured (for weeks without a week.json)."""

    prompts: frozenset[str]
    models: frozenset[str]
    #: prompt → its (item type, item text) pairs as scores.csv has them.
    items: dict[str, frozenset[tuple[str, str]]]


def csv_identity(week_dir: Path) -> CsvIdentity | None:
    """The prompt set, models and item texts of a week's CSVs; None when it has neither
    manifest.csv nor scores.csv."""
    from pytest_skilllift.week.files import MANIFEST_CSV, SCORES_CSV
    from pytest_skilllift.week.tables import load_week

    week_dir = Path(week_dir)
    if not (week_dir / SCORES_CSV).is_file() and not (week_dir / MANIFEST_CSV).is_file():
        return None
    w = load_week(week_dir)
    items: dict[str, set[tuple[str, str]]] = {}
    sc = w.scores
    if sc.item_text is not None and sc.prompt.size:
        texts = sc.item_text.to_pylist()
        kinds = ("must", "bonus", "avoid")
        for p, t, text in zip(sc.prompt.tolist(), sc.type.tolist(), texts, strict=True):
            if p >= 0:
                items.setdefault(w.prompts[p], set()).add(
                    (kinds[t] if 0 <= t < len(kinds) else "?", str(text or "")))
    return CsvIdentity(frozenset(w.prompts), frozenset(w.models),
                       {p: frozenset(v) for p, v in items.items()})


def csv_difference(before: CsvIdentity, after: CsvIdentity) -> str | None:
    """The first difference between two weeks' CSV identities, or None."""
    def few(names: frozenset[str]) -> str:
        shown = sorted(names)[:3]
        return ", ".join(shown) + (f" (+{len(names) - 3} more)" if len(names) > 3 else "")

    if before.prompts != after.prompts:
        common = before.prompts & after.prompts
        return (f"prompts differ ({len(common)} in common; only before: "
                f"{few(before.prompts - after.prompts) or 'none'}; only now: "
                f"{few(after.prompts - before.prompts) or 'none'})")
    if before.models != after.models:
        return f"models differ: {sorted(before.models)} → {sorted(after.models)}"
    edited = sorted(p for p in before.prompts
                    if before.items.get(p, frozenset()) != after.items.get(p, frozenset()))
    if edited:
        return f"item texts differ for {len(edited)} prompt(s): {few(frozenset(edited))}"
    return None


@dataclass(frozen=True)
class PoolDecision:
    """Whether an earlier run of the history may be pooled with this week, and why."""

    run_key: str
    pooled: bool
    reason: str


def pool_decisions(rows: Sequence[HistoryRow], run_key: str, weekly: Path) -> list[
        PoolDecision]:
    """For every run before ``run_key`` (oldest first): may its lift be pooled with this
    week's (between-week σ, "run N of 4")?

    Both weeks' ``week.json`` (``weekly/<run_key>/week.json``) must exist and agree on
    :data:`POOLING_FIELDS`. When neither week has a week.json (weeks the qdrant pipeline
    wrote) what their CSVs show is compared instead — the prompt set, the models and each
    prompt's item texts (:func:`csv_identity`): a run that differs is not pooled, with the
    difference named; only when a week has no CSVs to read either is it pooled as before,
    marked "identity not checked". A run with a week.json next to a week without one is not
    pooled (the two were made by different tools, or one was edited). A week.json that
    cannot be read excludes its run, with the reason.
    """
    from pytest_skilllift.week import identity as ident

    def record(key: str) -> tuple[ident.WeekRecord | None, str | None]:
        try:
            return ident.read_week_record(Path(weekly) / key), None
        except (ident.WeekFileError, OSError) as exc:
            return None, str(exc)

    order = run_order(rows)
    before = order[: order.index(run_key)] if run_key in order else order
    now, now_problem = record(run_key)
    out: list[PoolDecision] = []
    for key in before:
        prev, problem = record(key)
        if now_problem or problem:
            out.append(PoolDecision(key, False, f"week.json unreadable: {now_problem or problem}"))
        elif now is None and prev is None:
            a, b = csv_identity(Path(weekly) / key), csv_identity(Path(weekly) / run_key)
            if a is None or b is None:
                out.append(PoolDecision(key, True, f"{NOT_CHECKED} (neither week has a "
                                        "week.json, and no CSVs to compare)"))
            else:
                diff = csv_difference(a, b)
                out.append(PoolDecision(key, diff is None, diff or (
                    f"{POOLED_CSV} (no week.json: compared from the CSVs)")))
        elif now is None or prev is None:
            which = run_key if now is None else key
            out.append(PoolDecision(key, False, f"{which} has no week.json, the other has one: "
                                    "whether they were measured alike cannot be checked"))
        else:
            diffs = [d for d in ident.differences(prev.identity, now.identity)
                     if d.field in POOLING_FIELDS]
            if diffs:
                more = f" (+{len(diffs) - 1} more)" if len(diffs) > 1 else ""
                out.append(PoolDecision(key, False, diffs[0].describe() + more))
            else:
                out.append(PoolDecision(key, True, POOLED))
    return out
