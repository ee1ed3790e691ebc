"""``skilllift judge-check WEEK_DIR --labels LABELS.csv``: the judge against people.

The qdrant/skills SCORING.md calls the judge the linchpin: *before trusting any number, confirm
its grades match a human's; if the judge and a human disagree, the framework is measuring
noise.* This module measures that agreement on a week's graded items, the way Drupal ai_eval's
"Trusting your judges" does: raw agreement hides a judge that passes everything, so the report
gives the true-positive and true-negative rates separately, each with its Wilson interval.

Labels (one row per item a person graded; extra columns are ignored)::

    prompt,model,condition,rep,item_type,item_index,verdict
    qdrant-edge,haiku,with-skill,1,must,2,missing

``item_text`` may stand in for ``item_index``. ``verdict`` uses the item type's vocabulary
(must ``met|missing``, bonus ``met|absent``, avoid ``violated|clean``); a row with an empty
verdict is a sheet row not labelled yet (``skilllift label`` writes such sheets) and is only
counted. A row that matches no graded item, or whose verdict is not of its vocabulary, is
reported with its row number — never silently dropped.

Metrics, overall and per item type: labelled items, raw agreement, Cohen's kappa (binary:
the type's positive verdict or not); for must/bonus the judge's TPR (of the items the person
marked met, the share the judge marked met) and TNR; for avoid the violation detection rate
(of the violations the person found, the share the judge found) and the false-alarm rate (of
the items the person found clean, the share the judge called violated). Wilson 95% intervals.

Trust state (written to ``WEEK_DIR/judge-check.json``, shown in the scorecard's provenance):

* ``unmeasured`` — fewer than :data:`MIN_MUST_LABELS` labelled must items;
* ``trusted`` — must agreement >= :data:`TRUSTED_MUST_AGREEMENT` and kappa (all labelled
  items) >= :data:`TRUSTED_KAPPA`;
* ``provisional`` — not trusted, but must agreement >= :data:`PROVISIONAL_MUST_AGREEMENT`
  and kappa >= :data:`PROVISIONAL_KAPPA` (substantial agreement on the Landis–Koch scale);
* ``untrusted`` — below that.

A trust state qualifies the numbers; it never changes them or the exit status (Drupal
ai_eval: trust states warn, they do not flip a verdict). Exit status: 0 when every label row
matched, 1 when some did not (or had an invalid verdict), 2 when the inputs are unusable.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_skilllift.intervals import kappa, wilson_bounds
from pytest_skilllift.judge.graded import (
    GradedItem,
    ItemKey,
    read_graded_items,
    rep_key,
    text_key,
)
from pytest_skilllift.judge.labels import unsheet_cell
from pytest_skilllift.week.columns import ITEM_TYPES, VERDICTS
from pytest_skilllift.week.files import JUDGE_CHECK_FILE, utc_stamp

__all__ = [
    "CHECK_FILE", "MIN_MUST_LABELS", "PROVISIONAL_KAPPA", "PROVISIONAL_MUST_AGREEMENT",
    "TRUSTED_KAPPA", "TRUSTED_MUST_AGREEMENT", "TRUST_STATES", "Confusion", "LabelError",
    "LabelRow", "check_week", "cohens_kappa", "confusion_stats", "match_labels",
    "read_labels", "trust_state",
]

CHECK_FILE = JUDGE_CHECK_FILE
MIN_MUST_LABELS = 20
TRUSTED_MUST_AGREEMENT = 0.95
TRUSTED_KAPPA = 0.80
PROVISIONAL_MUST_AGREEMENT = 0.85
PROVISIONAL_KAPPA = 0.60
TRUST_STATES: tuple[str, ...] = ("trusted", "provisional", "untrusted", "unmeasured")

#: Columns a label file must have (``item_text`` may replace ``item_index``).
LABEL_KEY_COLUMNS: tuple[str, ...] = ("prompt", "model", "condition", "rep", "item_type")


class LabelError(Exception):
    """The label file cannot be used at all (missing, no header, missing columns)."""


# ---------------------------------------------------------------------------------------------
# Metrics (pure)


@dataclass(frozen=True)
class Confusion:
    """Judge vs person on one binary question: is the item's positive verdict right?

    ``tp``: both positive; ``fp``: judge positive, person negative; ``fn``: judge negative,
    person positive; ``tn``: both negative.
    """

    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    @property
    def n(self) -> int:
        """The number of items counted (all four cells)."""
        return self.tp + self.fp + self.fn + self.tn

    @classmethod
    def of(cls, pairs: Iterable[tuple[bool, bool]]) -> Confusion:
        """From ``(judge_positive, human_positive)`` pairs."""
        tp = fp = fn = tn = 0
        for judge, human in pairs:
            if judge and human:
                tp += 1
            elif judge:
                fp += 1
            elif human:
                fn += 1
            else:
                tn += 1
        return cls(tp, fp, fn, tn)


def cohens_kappa(c: Confusion) -> float | None:
    """Cohen's kappa of a 2x2 table; None when undefined (no items, or chance agreement 1:
    both raters gave one and the same verdict to everything)."""
    n = c.n
    if n == 0:
        return None
    observed = (c.tp + c.tn) / n
    judge_pos, human_pos = (c.tp + c.fp) / n, (c.tp + c.fn) / n
    expected = judge_pos * human_pos + (1 - judge_pos) * (1 - human_pos)
    return kappa(observed, expected)


def _rate(k: int, n: int) -> dict[str, Any]:
    return {"k": k, "n": n, "rate": (k / n) if n else None,
            "wilson95": list(wilson_bounds(k, n) or (None, None))}


def confusion_stats(c: Confusion, item_type: str | None) -> dict[str, Any]:
    """Agreement, kappa and the type's rates for one table (``item_type`` None = overall)."""
    out: dict[str, Any] = {
        "n": c.n,
        "agreement": _rate(c.tp + c.tn, c.n),
        "kappa": cohens_kappa(c),
        "confusion": {"tp": c.tp, "fp": c.fp, "fn": c.fn, "tn": c.tn},
    }
    if item_type in ("must", "bonus"):
        out["tpr"] = _rate(c.tp, c.tp + c.fn)
        out["tnr"] = _rate(c.tn, c.tn + c.fp)
    elif item_type == "avoid":
        out["violation_detection"] = _rate(c.tp, c.tp + c.fn)
        out["false_alarm"] = _rate(c.fp, c.fp + c.tn)
    return out


def trust_state(must: dict[str, Any], overall: dict[str, Any]) -> tuple[str, list[str]]:
    """``(state, reasons)`` from the must-item and overall statistics (see module docs)."""
    n_must = must["n"]
    if n_must < MIN_MUST_LABELS:
        return "unmeasured", [f"{n_must} labelled must item(s); at least {MIN_MUST_LABELS} "
                              "are needed to measure the judge"]
    agreement = must["agreement"]["rate"]
    kappa = overall["kappa"]
    shown_kappa = "undefined" if kappa is None else f"{kappa:.2f}"
    facts = (f"must agreement {agreement:.3f} over {n_must} labelled musts, "
             f"kappa {shown_kappa} over {overall['n']} labelled items")
    if kappa is None:
        why = ("kappa is undefined (judge and person gave one verdict to every item): label "
               "items of both verdicts")
        state = "provisional" if agreement >= PROVISIONAL_MUST_AGREEMENT else "untrusted"
        return state, [facts, why]
    if agreement >= TRUSTED_MUST_AGREEMENT and kappa >= TRUSTED_KAPPA:
        return "trusted", [facts, f"meets must agreement >= {TRUSTED_MUST_AGREEMENT} and "
                                  f"kappa >= {TRUSTED_KAPPA}"]
    short = []
    if agreement < TRUSTED_MUST_AGREEMENT:
        short.append(f"must agreement below {TRUSTED_MUST_AGREEMENT}")
    if kappa < TRUSTED_KAPPA:
        short.append(f"kappa below {TRUSTED_KAPPA}")
    if agreement >= PROVISIONAL_MUST_AGREEMENT and kappa >= PROVISIONAL_KAPPA:
        return "provisional", [facts, "; ".join(short)]
    return "untrusted", [facts, "; ".join(short) + f" (and under the provisional bar: must "
                         f"agreement {PROVISIONAL_MUST_AGREEMENT}, kappa {PROVISIONAL_KAPPA})"]


# ---------------------------------------------------------------------------------------------
# Labels


@dataclass(frozen=True)
class LabelRow:
    """One row of a label file (``row`` is the 1-based data row; the header is row 0)."""

    row: int
    prompt: str
    model: str
    condition: str
    rep: int | None
    item_type: str
    item_index: int | None
    item_text: str
    verdict: str


def read_labels(path: Path) -> list[LabelRow]:
    """Every data row of a label file; raises :class:`LabelError` for an unusable file."""
    try:
        with Path(path).open(newline="", encoding="utf-8-sig") as fh:
            reader = csv.DictReader(fh)
            header = [h.strip() for h in (reader.fieldnames or [])]
            missing = [c for c in (*LABEL_KEY_COLUMNS, "verdict") if c not in header]
            if "item_index" not in header and "item_text" not in header:
                missing.append("item_index (or item_text)")
            if missing:
                raise LabelError(
                    f"{path}: column(s) {', '.join(missing)} missing from the header; a label "
                    "file has prompt,model,condition,rep,item_type,item_index,verdict "
                    "(skilllift label WEEK_DIR writes one to fill in)")
            rows = []
            for n, raw in enumerate(reader, start=1):
                # a sheet of skilllift label: its formula guard (a leading ') taken off
                row = {k.strip(): unsheet_cell((v or "").strip()) for k, v in raw.items() if k}
                rows.append(LabelRow(
                    row=n, prompt=row.get("prompt", ""), model=row.get("model", ""),
                    condition=row.get("condition", ""), rep=rep_key(row.get("rep", "")),
                    item_type=row.get("item_type", "").lower(),
                    item_index=rep_key(row.get("item_index", "")) or None,
                    item_text=row.get("item_text", ""), verdict=row.get("verdict", "").lower()))
            return rows
    except FileNotFoundError:
        raise LabelError(f"{path}: not found") from None
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise LabelError(f"{path}: unreadable ({exc})") from exc


@dataclass
class Matched:
    """Label rows paired with graded items, and the rows that could not be used."""

    pairs: list[tuple[LabelRow, GradedItem]] = field(default_factory=list)
    unmatched: list[dict[str, Any]] = field(default_factory=list)
    unlabelled: int = 0


def _where(label: LabelRow) -> str:
    item = (f"{label.item_type}-{label.item_index}" if label.item_index is not None
            else f"{label.item_type} {label.item_text[:60]!r}")
    return f"{label.prompt} / {label.model} / {label.condition} / r{label.rep} / {item}"


def match_labels(labels: Sequence[LabelRow], items: Sequence[GradedItem]) -> Matched:
    """Pair each labelled row with the graded item it names (see the module docstring)."""
    by_key: dict[ItemKey, GradedItem] = {}
    by_text: dict[tuple[str, str, str, int, str, str], GradedItem] = {}
    for item in items:
        by_key.setdefault(item.key, item)
        by_text.setdefault((*item.key[:5], text_key(item.item_text)), item)
    out = Matched()
    seen: dict[ItemKey, int] = {}

    def reject(label: LabelRow, reason: str) -> None:
        out.unmatched.append({"row": label.row, "item": _where(label), "reason": reason})

    for label in labels:
        if not label.verdict:
            out.unlabelled += 1
            continue
        if label.item_type not in VERDICTS:
            reject(label, f"item_type {label.item_type!r} is not one of {', '.join(ITEM_TYPES)}")
            continue
        if label.verdict not in VERDICTS[label.item_type]:
            positive, negative = VERDICTS[label.item_type]
            reject(label, f"verdict {label.verdict!r} is not {positive} or {negative} "
                          f"(a {label.item_type} item)")
            continue
        if label.rep is None:
            reject(label, "rep is not a whole number")
            continue
        base = (label.prompt, label.model, label.condition, label.rep, label.item_type)
        found = (by_key.get((*base, label.item_index)) if label.item_index is not None
                else by_text.get((*base, text_key(label.item_text))))
        if found is None:
            reject(label, "matches no item of this week's scores.csv (check prompt, model, "
                          "condition, rep and the item's index or text)")
            continue
        if not found.graded:
            reject(label, "the judge gave this item no verdict (ungraded), so there is "
                          "nothing to compare")
            continue
        if found.key in seen:
            reject(label, f"labels the same item as row {seen[found.key]}; the first is used")
            continue
        seen[found.key] = label.row
        out.pairs.append((label, found))
    return out


# ---------------------------------------------------------------------------------------------
# The check


def _judge_models(week_dir: Path) -> list[str]:
    models: set[str] = set()
    for path in week_dir.glob("*/grades.json"):
        try:
            model = json.loads(path.read_text(encoding="utf-8")).get("judge_model")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(model, str) and model:
            models.add(model)
    return sorted(models)


def check_week(week_dir: Path, labels_path: Path) -> dict[str, Any]:
    """The judge-check report of a week against a label file (the judge-check.json dict).

    Raises :class:`LabelError` / :class:`~pytest_skilllift.judge.graded.GradedWeekError`
    when an input is unusable.
    """
    week_dir = Path(week_dir)
    items = read_graded_items(week_dir)
    matched = match_labels(read_labels(labels_path), items)

    def pairs_of(item_type: str | None) -> list[tuple[bool, bool]]:
        return [(item.positive, label.verdict == VERDICTS[item.item_type][0])
                for label, item in matched.pairs
                if item_type is None or item.item_type == item_type]

    overall = confusion_stats(Confusion.of(pairs_of(None)), None)
    by_type = {t: confusion_stats(Confusion.of(pairs_of(t)), t) for t in ITEM_TYPES}
    state, reasons = trust_state(by_type["must"], overall)
    disagreements = [
        {"row": label.row, "prompt": item.prompt, "model": item.model,
         "condition": item.condition, "rep": item.rep, "item_type": item.item_type,
         "item_index": item.item_index, "item_text": item.item_text,
         "judge_verdict": item.verdict, "human_verdict": label.verdict,
         "evidence": item.evidence, "claimed_verdict": item.claimed_verdict,
         "claimed_evidence": item.claimed_evidence, "run_id": item.run_id}
        for label, item in matched.pairs if label.verdict != item.verdict
    ]
    return {
        "week": week_dir.name,
        "labels": str(labels_path),
        "checked_utc": utc_stamp(),
        "judge_models": _judge_models(week_dir),
        "state": state,
        "reasons": reasons,
        "thresholds": {"min_must_labels": MIN_MUST_LABELS,
                       "trusted_must_agreement": TRUSTED_MUST_AGREEMENT,
                       "trusted_kappa": TRUSTED_KAPPA,
                       "provisional_must_agreement": PROVISIONAL_MUST_AGREEMENT,
                       "provisional_kappa": PROVISIONAL_KAPPA},
        "overall": overall,
        "by_type": by_type,
        "disagreements": disagreements,
        "unmatched": matched.unmatched,
        "unlabelled_rows": matched.unlabelled,
    }


def _fmt_rate(r: dict[str, Any]) -> str:
    if r["rate"] is None:
        return "n/a (0 items)"
    lo, hi = r["wilson95"]
    return f"{r['rate']:.3f} [{lo:.2f}, {hi:.2f}] ({r['k']}/{r['n']})"


def report_lines(report: dict[str, Any]) -> list[str]:
    """The human-readable report."""
    judges = ", ".join(report["judge_models"]) or "unknown judge"
    out = [f"judge-check of week {report['week']} against {report['labels']} ({judges})"]
    n_types = ", ".join(f"{t} {report['by_type'][t]['n']}" for t in ITEM_TYPES)
    out.append(f"labelled items compared: {report['overall']['n']} ({n_types}); unmatched "
               f"rows: {len(report['unmatched'])}; rows not labelled yet: "
               f"{report['unlabelled_rows']}")
    for name, s in (("overall", report["overall"]), *report["by_type"].items()):
        kappa = "undefined" if s["kappa"] is None else f"{s['kappa']:.3f}"
        line = (f"  {name:<8} n={s['n']:<4} agreement {_fmt_rate(s['agreement'])}  "
                f"kappa {kappa}")
        if "tpr" in s:
            line += f"\n           TPR {_fmt_rate(s['tpr'])}  TNR {_fmt_rate(s['tnr'])}"
        if "violation_detection" in s:
            line += (f"\n           violation detection {_fmt_rate(s['violation_detection'])}"
                     f"  false alarm {_fmt_rate(s['false_alarm'])}")
        out.append(line)
    out.append(f"trust: {report['state']} — " + "; ".join(report["reasons"]))
    if report["disagreements"]:
        out.append(f"disagreements ({len(report['disagreements'])}):")
        for d in report["disagreements"]:
            evidence = d["evidence"] or d["claimed_evidence"]
            quote = f' evidence: "{" ".join(evidence.split())[:160]}"' if evidence else ""
            claim = (f" (the judge claimed {d['claimed_verdict']}; its quote is not in the "
                     "answer)" if d["claimed_verdict"] else "")
            out.append(f"  - row {d['row']}: {d['prompt']} / {d['model']} / {d['condition']} / "
                       f"r{d['rep']} / {d['item_type']}-{d['item_index']} "
                       f"{d['item_text'][:70]!r}: judge {d['judge_verdict']}, person "
                       f"{d['human_verdict']}{claim}.{quote}")
    if report["unmatched"]:
        out.append(f"label rows not used ({len(report['unmatched'])}):")
        out += [f"  - row {u['row']} ({u['item']}): {u['reason']}" for u in report["unmatched"]]
    return out
