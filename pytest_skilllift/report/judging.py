"""The judge's part of the week, read from its directory: who graded, rejected quotes,
contested items, calibration, trust.

:func:`build` (week directory → the ``judge`` key of scorecard.json, typed by
:class:`JudgeReport`: defined here, below the sections' context, which carries it) runs before
the scorecard's sections are built, because the history rows carry its contested counts; the "Judge
reliability" section (``report/sections/judge.py``) and the judge lines of Run health and
Provenance render it. Sources:

* ``<run>/grades.json`` of each run: the judge model, prompt version, samples per run, judge
  calls and tie-breaks, the evidence policy in force, whether a conftest.py overrode the
  ``skill_lift_judge`` fixture (and with which class);
* ``scores.csv``: ``evidence_ok = 0`` rows (a met/violated whose quote is not in the answer;
  ``claimed_verdict`` set when it was rejected, empty when kept under the ``flag`` policy) and
  ``contested`` rows (samples disagreed);
* ``<week>/calibration.json`` (``skilllift calibrate``) and ``<week>/judge-check.json``
  (``skilllift judge-check``);
* ``contested-history.csv`` beside ``scorecard-history.csv`` (updated here, atomically):
  which items were contested in which run, so an item contested run after run is flagged as
  ambiguous wording (the qdrant/skills SCORING.md: "items that come back contested week after
  week are worded ambiguously rather than hard, and that flag is the rubric-quality backlog").

Only two columns are read for every row (``contested``, ``evidence_ok``); the text columns are
read only when some row is flagged, so a large week without flags costs almost nothing.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, cast

from pytest_skilllift.report.judge_audit import build_audit
from pytest_skilllift.week.files import (
    CALIBRATION_FILE,
    CONTESTED_HISTORY_CSV,
    GRADES_FILE,
    JUDGE_CHECK_FILE,
    SCORES_CSV,
    atomic_write_text,
)

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

__all__ = ["AMBIGUOUS_RUNS", "CONTESTED_COLUMNS", "Calibration", "ContestedItem", "JudgeReport",
           "Quote", "QuoteCount", "Trust", "TypeAgreement", "build", "contested_per_model"]

#: Weekly runs (this one included) an item must be contested in to be flagged as ambiguous.
AMBIGUOUS_RUNS = 2


class Quote(TypedDict):
    """A met/violated verdict whose quote is not in the answer (a scores.csv row)."""

    prompt: str
    model: str
    condition: str
    rep: str
    item_type: str
    item_index: str
    item_text: str
    #: What scores.csv records (the negative verdict when the claim was rejected).
    recorded_verdict: str
    #: What the judge said.
    claimed_verdict: str
    quote: str
    #: True under the ``reject`` evidence policy (no credit), False under ``flag`` (kept).
    rejected: bool
    run_id: str


class QuoteCount(TypedDict):
    """Evidence quotes of one kind: rejected (not found in the answer) and kept."""
    rejected: int
    kept: int


class ContestedItem(TypedDict):
    """A rubric item the judge samples disagreed on this week (a tie-break decided)."""

    prompt: str
    item_type: str
    item_index: str
    item_text: str
    #: Runs of this week in which it was contested.
    runs: int
    #: ``model/condition`` → runs.
    arms: dict[str, int]
    #: model → runs.
    models: dict[str, int]
    #: Weeks it was contested in, this one included (from the contested history).
    contested_in_runs: int
    #: Contested in ``AMBIGUOUS_RUNS`` or more weeks: worded ambiguously, reword it.
    ambiguous: bool


class TypeAgreement(TypedDict):
    """Judge agreement over the items of one type: unanimous or split."""
    items: int
    unanimous: int
    split: int
    incomplete: int
    flip_rate: float | None


class Calibration(TypedDict):
    """The summary ``skilllift calibrate`` keeps in ``<week>/calibration.json``."""

    runs: int
    run_ids: list[str]
    samples: list[int]
    judge_models: list[str]
    by_type: dict[str, TypeAgreement]
    must_unanimous_share: float | None
    bar: float
    passed: bool


class Trust(TypedDict):
    """Whether people have checked this judge (``skilllift judge-check``); ``source`` is None
    and the numbers are None while no check exists."""

    state: str
    source: str | None
    reasons: list[str]
    checked_utc: str | None
    must_agreement: float | None
    must_agreement_wilson95: list[float | None] | None
    must_labels: int | None
    kappa: float | None
    judge_models: list[str]
    #: The check measured another judge model than the one that graded this week.
    stale: bool


class JudgeReport(TypedDict):
    """What the Judge section reports of the week's grading."""
    graded_runs: int
    #: judge model → runs it graded (from each run's grades.json).
    judge_models: dict[str, int]
    prompt_versions: dict[str, int]
    #: Runs graded through a ``skill_lift_judge`` fixture a conftest.py overrode, and the
    #: overriding class (``module.QualName``) → runs.
    overridden_runs: int
    overrides: dict[str, int]
    #: samples per run (as text) → runs.
    samples_per_run: dict[str, int]
    evidence_policy: dict[str, int]
    #: None when no run recorded its judge calls (graded before they were recorded).
    judge_calls: int | None
    tie_breaks: int
    runs_with_calls: int
    #: Runs graded by more than one judge sample: contested items are measured only there.
    sampled_runs: int
    quotes_not_in_answer: list[Quote]
    #: model → condition → counts.
    quotes_by_cell: dict[str, dict[str, QuoteCount]]
    rejected_quotes: int
    kept_unverified_quotes: int
    contested: list[ContestedItem]
    contested_items: int
    ambiguous_items: int
    contested_history: str
    calibration: Calibration | None
    trust: Trust
    #: The panel's agreement, the family warning and the bias audit (``report.judge_audit``).
    audit: dict[str, Any]

CONTESTED_COLUMNS = ("run_key", "prompt", "item_type", "item_index", "item_text", "runs")

_TEXT_COLUMNS = ("prompt", "model", "condition", "rep", "item_type", "item_index",
                 "item_text", "verdict", "evidence_quote", "claimed_verdict",
                 "claimed_evidence", "contested", "evidence_ok", "run_id")


# ---------------------------------------------------------------------------------------------
# Reading


def _run_meta(week_dir: Path) -> list[dict[str, Any]]:
    """The judge fields of every run's grades.json (rows left out)."""
    out = []
    try:
        entries = [e.name for e in os.scandir(week_dir) if e.is_dir()]
    except OSError:
        return []
    for name in sorted(entries):
        path = week_dir / name / GRADES_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            out.append({k: v for k, v in data.items() if k != "rows"} | {"run_id": name})
    return out


def _flagged_rows(scores: Path, flagged: np.ndarray | None = None) -> list[dict[str, str]]:
    """Rows of scores.csv with ``evidence_ok`` = 0 or a truthy ``contested``.

    ``flagged``: those rows as a mask, when the caller has read scores.csv already
    (``Week.scores.judge_flagged``): then the file is read again only when some row is flagged.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pacsv

    from pytest_skilllift.week.tables import NotCsvText, csv_header

    if flagged is not None and not flagged.any():
        return []
    try:
        if not scores.is_file() or scores.stat().st_size == 0:
            return []
        header = csv_header(scores) or []
    except (NotCsvText, OSError):
        return []  # summarize's own reader reports an unusable scores.csv
    flags = [c for c in ("contested", "evidence_ok") if c in header]
    if not flags:
        return []

    def read(columns: Sequence[str]) -> pa.Table:
        return pacsv.read_csv(
            scores,
            parse_options=pacsv.ParseOptions(newlines_in_values=True,
                                             invalid_row_handler=lambda _row: "skip"),
            convert_options=pacsv.ConvertOptions(
                include_columns=list(columns), column_types=dict.fromkeys(columns, pa.string()),
                strings_can_be_null=False))

    try:
        if flagged is not None:
            full = read([c for c in _TEXT_COLUMNS if c in header])
            if full.num_rows == flagged.size:
                return _rows_at(full, np.flatnonzero(flagged))
        import pyarrow.compute as pc  # ≈ 0.05 s to import: only on this path

        table = read(flags)
        mask = np.zeros(table.num_rows, bool)
        if "contested" in flags:
            value = pc.utf8_lower(pc.utf8_trim_whitespace(table["contested"]))
            mask |= ~pc.is_in(value, pa.array(["", "0", "false", "no"])).to_numpy(
                zero_copy_only=False)
        if "evidence_ok" in flags:
            mask |= pc.equal(pc.utf8_trim_whitespace(table["evidence_ok"]), "0").to_numpy(
                zero_copy_only=False)
        if not mask.any():
            return []
        full = read([c for c in _TEXT_COLUMNS if c in header])
        return _rows_at(full, np.flatnonzero(mask))
    except (pa.ArrowException, OSError):
        return []  # summarize's own reader reports an unreadable scores.csv


def _rows_at(table: pa.Table, rows: np.ndarray) -> list[dict[str, str]]:
    """``table``'s rows at ``rows`` as dicts ("" for null)."""
    from pytest_skilllift.week.tables import PYLIST_ROWS

    if table.num_rows <= PYLIST_ROWS:  # a small week: no pyarrow.compute import for take
        everything = table.to_pylist()
        picked = [everything[i] for i in rows.tolist()]
    else:
        import pyarrow as pa

        picked = table.take(pa.array(rows)).to_pylist()
    return [{k: (v or "") for k, v in row.items()} for row in picked]


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


# ---------------------------------------------------------------------------------------------
# Contested history


def _item_id(row: dict[str, str]) -> tuple[str, str, str]:
    return (row.get("prompt", ""), row.get("item_type", ""), " ".join(
        row.get("item_text", "").split()))


def _read_contested(path: Path) -> list[dict[str, str]]:
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            return [dict(r) for r in csv.DictReader(fh) if r.get("run_key")]
    except (OSError, UnicodeDecodeError, csv.Error):
        return []


def _write_contested(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    buf = io.StringIO(newline="")
    writer = csv.DictWriter(buf, fieldnames=CONTESTED_COLUMNS, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    atomic_write_text(path, buf.getvalue())


# ---------------------------------------------------------------------------------------------
# Builder


def build(week_dir: Path, *, history: Path | None = None, run_key: str | None = None,
          write: bool = False, flagged: np.ndarray | None = None) -> JudgeReport:
    """The ``judge`` dict of scorecard.json for a week directory.

    ``history`` is the scorecard history file; the contested-items history lives beside it
    and is updated when ``write`` (one idempotent upsert per run key).  ``flagged`` is
    ``Week.scores.judge_flagged`` when the caller loaded the week (scores.csv is then not parsed
    again for a week without flags).
    """
    week_dir = Path(week_dir)
    run_key = run_key or week_dir.name
    meta = _run_meta(week_dir)
    models = Counter(str(m.get("judge_model") or "") for m in meta)
    samples = Counter(int(m.get("judge_samples") or 1) for m in meta)
    policies = Counter(str(m.get("evidence_policy") or "unrecorded") for m in meta)
    versions = Counter(str(m.get("prompt_version") or "unrecorded") for m in meta)
    with_calls = [m for m in meta if "judge_calls" in m]
    overridden = Counter(str(m.get("judge_impl") or "unknown") for m in meta
                         if m.get("judge_overridden"))
    rows = _flagged_rows(week_dir / SCORES_CSV, flagged)

    # ---- quotes not found in the answer
    quotes: list[Quote] = []
    for r in rows:
        if r.get("evidence_ok", "").strip() != "0":
            continue
        rejected = bool(r.get("claimed_verdict", "").strip())
        quotes.append({
            "prompt": r.get("prompt", ""), "model": r.get("model", ""),
            "condition": r.get("condition", ""), "rep": r.get("rep", ""),
            "item_type": r.get("item_type", ""), "item_index": r.get("item_index", ""),
            "item_text": r.get("item_text", ""), "recorded_verdict": r.get("verdict", ""),
            "claimed_verdict": r.get("claimed_verdict", "") or r.get("verdict", ""),
            "quote": r.get("claimed_evidence", "") if rejected else r.get("evidence_quote", ""),
            "rejected": rejected, "run_id": r.get("run_id", ""),
        })
    by_cell: dict[str, dict[str, QuoteCount]] = {}
    for q in quotes:
        cell = by_cell.setdefault(q["model"], {}).setdefault(
            q["condition"], {"rejected": 0, "kept": 0})
        if q["rejected"]:
            cell["rejected"] += 1
        else:
            cell["kept"] += 1

    # ---- contested items (the rubric-quality backlog)
    groups: dict[tuple[str, str, str], dict[str, Any]] = {}
    for r in rows:
        value = r.get("contested", "").strip().lower()
        if value in ("", "0", "false", "no"):
            continue
        key = _item_id(r)
        g = groups.setdefault(key, {
            "prompt": key[0], "item_type": key[1], "item_index": r.get("item_index", ""),
            "item_text": key[2], "runs": 0, "arms": Counter(), "models": Counter()})
        g["runs"] += 1
        g["arms"][f"{r.get('model', '')}/{r.get('condition', '')}"] += 1
        g["models"][r.get("model", "")] += 1
    sampled_runs = sum(n for k, n in samples.items() if k > 1)
    hist_path = (Path(history).parent if history is not None else week_dir.parent) / (
        CONTESTED_HISTORY_CSV)
    past = [r for r in _read_contested(hist_path) if r["run_key"] != run_key]
    if write and (groups or any(r["run_key"] == run_key for r in _read_contested(hist_path))):
        now = [{"run_key": run_key, "prompt": g["prompt"], "item_type": g["item_type"],
                "item_index": g["item_index"], "item_text": g["item_text"], "runs": g["runs"]}
               for g in groups.values()]
        _write_contested(hist_path, [*past, *now])
    seen_in: dict[tuple[str, str, str], set[str]] = {}
    for r in past:
        if r["run_key"] <= run_key:  # week keys are dates: later weeks are not history yet
            seen_in.setdefault(_item_id(r), set()).add(r["run_key"])
    contested: list[ContestedItem] = []
    for key, g in sorted(groups.items(), key=lambda kv: (-kv[1]["runs"], kv[0])):
        in_runs = len(seen_in.get(key, set())) + 1
        contested.append({
            "prompt": g["prompt"], "item_type": g["item_type"], "item_index": g["item_index"],
            "item_text": g["item_text"], "runs": g["runs"],
            "arms": dict(sorted(g["arms"].items())), "models": dict(g["models"]),
            "contested_in_runs": in_runs, "ambiguous": in_runs >= AMBIGUOUS_RUNS,
        })

    calibration = _read_json(week_dir / CALIBRATION_FILE)
    check = _read_json(week_dir / JUDGE_CHECK_FILE)
    graded_models = sorted(m for m in models if m)
    trust: Trust = {"state": "unmeasured", "source": None,
                    "reasons": ["no human labels yet: skilllift label, then skilllift "
                                "judge-check"],
                    "checked_utc": None, "must_agreement": None,
                    "must_agreement_wilson95": None, "must_labels": None, "kappa": None,
                    "judge_models": [], "stale": False}
    if check is not None:
        checked = [str(m) for m in check.get("judge_models", [])]
        stale = bool(checked and graded_models and sorted(checked) != graded_models)
        must = check.get("by_type", {}).get("must", {})
        trust = {
            "state": check.get("state", "unmeasured"), "source": JUDGE_CHECK_FILE,
            "reasons": list(check.get("reasons", [])), "checked_utc": check.get("checked_utc"),
            "must_agreement": (must.get("agreement") or {}).get("rate"),
            "must_agreement_wilson95": (must.get("agreement") or {}).get("wilson95"),
            "must_labels": must.get("n"), "kappa": check.get("overall", {}).get("kappa"),
            "judge_models": checked, "stale": stale,
        }
    return {
        "graded_runs": len(meta),
        "judge_models": {m: n for m, n in sorted(models.items()) if m},
        "prompt_versions": dict(sorted(versions.items())),
        "overridden_runs": sum(overridden.values()),
        "overrides": dict(sorted(overridden.items())),
        "samples_per_run": {str(k): n for k, n in sorted(samples.items())},
        "evidence_policy": dict(sorted(policies.items())),
        "judge_calls": sum(int(m.get("judge_calls") or 0) for m in with_calls)
        if with_calls else None,
        "tie_breaks": sum(int(m.get("tie_breaks") or 0) for m in meta),
        "runs_with_calls": len(with_calls),
        "sampled_runs": sampled_runs,
        "quotes_not_in_answer": quotes,
        "quotes_by_cell": by_cell,
        "rejected_quotes": sum(1 for q in quotes if q["rejected"]),
        "kept_unverified_quotes": sum(1 for q in quotes if not q["rejected"]),
        "contested": contested,
        "contested_items": sum(g["runs"] for g in contested),
        "ambiguous_items": sum(1 for g in contested if g["ambiguous"]),
        "contested_history": str(hist_path),
        "calibration": _calibration(calibration),
        "trust": trust,
        "audit": build_audit(week_dir),
    }


def _calibration(data: dict[str, Any] | None) -> Calibration | None:
    """The summary of ``<week>/calibration.json`` (written by ``skilllift calibrate``)."""
    summary = data.get("summary") if data else None
    # Written by our own tool in this shape; a hand-edited file without one is no calibration.
    if isinstance(summary, dict) and "by_type" in summary:
        return cast("Calibration", summary)
    return None


def contested_per_model(judge: JudgeReport, models: Sequence[str]) -> dict[str, int | None]:
    """Contested items per model for the history row (None when no run was multi-sampled)."""
    if not judge.get("sampled_runs"):
        return dict.fromkeys(models)
    counts: Counter[str] = Counter()
    for g in judge.get("contested", []):
        counts.update(g["models"])
    return {m: counts.get(m, 0) for m in models}
