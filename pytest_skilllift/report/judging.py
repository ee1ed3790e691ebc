"""The judge's part of the scorecard: who graded, rejected quotes, contested items, trust.

A builder (:func:`build`, week directory → the ``judge`` dict of scorecard.json) and markdown
renderers (:func:`health_lines` for Run health, :func:`render_section` for the "Judge
reliability" section, :func:`provenance_lines` for Provenance). Sources:

* ``<run>/grades.json`` of each run: the judge model, prompt version, samples per run, judge
  calls and tie-breaks, the evidence policy in force;
* ``scores.csv``: ``evidence_ok = 0`` rows (a met/violated whose quote is not in the answer;
  ``claimed_verdict`` set when it was rejected, empty when kept under the ``flag`` policy) and
  ``contested`` rows (samples disagreed);
* ``<week>/calibration.json`` (``skilllift calibrate``) and ``<week>/judge-check.json``
  (``skilllift judge-check``);
* ``contested-history.csv`` beside ``scorecard-history.csv``: which items were contested in
  which run, so an item contested run after run is flagged as ambiguous wording (the
  qdrant/skills SCORING.md: "items that come back contested week after week are worded
  ambiguously rather than hard, and that flag is the rubric-quality backlog").

Only two columns are read for every row (``contested``, ``evidence_ok``); the text columns are
read only when some row is flagged, so a large week without flags costs almost nothing.
"""

from __future__ import annotations

import csv
import json
import os
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "AMBIGUOUS_RUNS", "CONTESTED_HISTORY", "MAX_LISTED", "build", "contested_per_model",
    "health_lines", "provenance_lines", "render_section",
]

#: Weekly runs (this one included) an item must be contested in to be flagged as ambiguous.
AMBIGUOUS_RUNS = 2
CONTESTED_HISTORY = "contested-history.csv"
CONTESTED_COLUMNS = ("run_key", "prompt", "item_type", "item_index", "item_text", "runs")
#: Rows a markdown list shows; scorecard.json keeps all, and a capped list says so.
MAX_LISTED = 200

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
        path = week_dir / name / "grades.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            out.append({k: v for k, v in data.items() if k != "rows"} | {"run_id": name})
    return out


def _flagged_rows(scores: Path) -> list[dict[str, str]]:
    """Rows of scores.csv with ``evidence_ok`` = 0 or a truthy ``contested``."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv

    if not scores.is_file() or scores.stat().st_size == 0:
        return []
    with scores.open(newline="", encoding="utf-8-sig") as fh:
        header = next(csv.reader([fh.readline()]), [])
    header = [h.strip() for h in header]
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
        picked = full.take(pa.array(np.flatnonzero(mask)))
    except (pa.ArrowInvalid, OSError):
        return []  # summarize's own reader reports an unreadable scores.csv
    return [{k: (v or "") for k, v in row.items()} for row in picked.to_pylist()]


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
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=CONTESTED_COLUMNS, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(rows)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# ---------------------------------------------------------------------------------------------
# Builder


def build(week_dir: Path, *, history: Path | None = None, run_key: str | None = None,
          write: bool = False) -> dict[str, Any]:
    """The ``judge`` dict of scorecard.json for a week directory.

    ``history`` is the scorecard history file; the contested-items history lives beside it
    and is updated when ``write`` (one idempotent upsert per run key).
    """
    week_dir = Path(week_dir)
    run_key = run_key or week_dir.name
    meta = _run_meta(week_dir)
    models = Counter(str(m.get("judge_model") or "") for m in meta)
    samples = Counter(int(m.get("judge_samples") or 1) for m in meta)
    policies = Counter(str(m.get("evidence_policy") or "unrecorded") for m in meta)
    versions = Counter(str(m.get("prompt_version") or "unrecorded") for m in meta)
    with_calls = [m for m in meta if "judge_calls" in m]
    rows = _flagged_rows(week_dir / "scores.csv")

    # ---- quotes not found in the answer
    quotes: list[dict[str, Any]] = []
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
    by_cell: dict[str, dict[str, dict[str, int]]] = {}
    for q in quotes:
        cell = by_cell.setdefault(q["model"], {}).setdefault(
            q["condition"], {"rejected": 0, "kept": 0})
        cell["rejected" if q["rejected"] else "kept"] += 1

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
        CONTESTED_HISTORY)
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
    contested = []
    for key, g in sorted(groups.items(), key=lambda kv: (-kv[1]["runs"], kv[0])):
        in_runs = len(seen_in.get(key, set())) + 1
        contested.append({
            "prompt": g["prompt"], "item_type": g["item_type"], "item_index": g["item_index"],
            "item_text": g["item_text"], "runs": g["runs"],
            "arms": dict(sorted(g["arms"].items())), "models": dict(g["models"]),
            "contested_in_runs": in_runs, "ambiguous": in_runs >= AMBIGUOUS_RUNS,
        })

    calibration = _read_json(week_dir / "calibration.json")
    check = _read_json(week_dir / "judge-check.json")
    graded_models = sorted(m for m in models if m)
    trust: dict[str, Any] = {"state": "unmeasured", "source": None,
                             "reasons": ["no human labels yet: skilllift label, then "
                                         "skilllift judge-check"]}
    if check is not None:
        checked = [str(m) for m in check.get("judge_models", [])]
        stale = bool(checked and graded_models and sorted(checked) != graded_models)
        must = check.get("by_type", {}).get("must", {})
        trust = {
            "state": check.get("state", "unmeasured"), "source": "judge-check.json",
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
        "calibration": calibration.get("summary") if calibration else None,
        "trust": trust,
    }


def contested_per_model(judge: dict[str, Any], models: Sequence[str]) -> dict[str, int | None]:
    """Contested items per model for the history row (None when no run was multi-sampled)."""
    if not judge.get("sampled_runs"):
        return dict.fromkeys(models)
    counts: Counter[str] = Counter()
    for g in judge.get("contested", []):
        counts.update(g["models"])
    return {m: counts.get(m, 0) for m in models}


# ---------------------------------------------------------------------------------------------
# Markdown


def _cell(text: Any, width: int = 0) -> str:
    value = " ".join(str(text).split()).replace("|", "\\|")
    return value[:width] if width else value


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    from pytest_skilllift.report.scorecard import md_table

    return md_table(headers, rows)


def _capped(shown: int, total: int, what: str) -> list[str]:
    if shown >= total:
        return []
    return ["", f"_Showing the first {shown} of {total} {what}; all are in `scorecard.json` "
            "under `judge`._"]


def health_lines(data: dict[str, Any]) -> list[str]:
    """Run-health bullets: quotes not found in the answer, per model and condition."""
    j = data.get("judge")
    if not j:
        return []
    cells = ", ".join(f"{m}/{c} {n['rejected'] + n['kept']}"
                      for m, per in sorted(j["quotes_by_cell"].items())
                      for c, n in sorted(per.items()))
    lines = [f"- rejected quotes (met/violated whose quote is not in the answer, scored as "
             f"missing/absent/clean): {j['rejected_quotes']}"
             + (f" — {cells}" if cells and not j["kept_unverified_quotes"] else "")]
    if j["kept_unverified_quotes"]:
        lines.append(f"- ⚠ quotes not in the answer but **kept** (evidence policy flag): "
                     f"{j['kept_unverified_quotes']} — {cells}")
    if j["contested_items"]:
        lines.append(f"- contested rubric items: {len(j['contested'])} distinct (in "
                     f"{j['contested_items']} runs), {j['ambiguous_items']} flagged as ambiguous "
                     "wording (see Judge reliability)")
    return lines


def render_section(data: dict[str, Any]) -> list[str]:
    """The "Judge reliability" section."""
    j = data.get("judge")
    if not j:
        return []
    L = ["## Judge reliability\n"]
    L.append("### Quotes not found in the answer\n")
    quotes = j["quotes_not_in_answer"]
    if not quotes:
        L.append("_None: every met/violated verdict quoted the answer verbatim._\n")
    else:
        shown = quotes[:MAX_LISTED]
        L += _table(["prompt", "model", "condition", "rep", "item", "judge said", "recorded",
                     "quote (not in the answer)"],
                    [[q["prompt"], q["model"], q["condition"], q["rep"],
                      _cell(f"{q['item_type']}-{q['item_index']}: {q['item_text']}", 70),
                      q["claimed_verdict"], q["recorded_verdict"], _cell(q["quote"], 100)]
                     for q in shown])
        L += _capped(len(shown), len(quotes), "quotes")
        L.append("\n_A judge that paraphrases instead of quoting shows up here, not in the "
                 "lift: the item is scored by the recorded verdict._\n")
    L.append("### Contested items — rubric-quality backlog\n")
    if not j["sampled_runs"]:
        L.append("_Not measured: every run was graded by one judge sample. With "
                 "`--skill-lift-judge-samples=2` (or `skilllift judge --samples 2`) an item whose "
                 "samples disagree gets a tie-breaking third sample and is flagged here._\n")
    elif not j["contested"]:
        L.append(f"_None: the judge samples agreed on every item of {j['sampled_runs']} "
                 "multi-sample run(s)._\n")
    else:
        shown = j["contested"][:MAX_LISTED]
        L += _table(["prompt", "item", "runs contested", "arms", "across weeks"],
                    [[g["prompt"], _cell(f"{g['item_type']}-{g['item_index']}: "
                                         f"{g['item_text']}", 80), g["runs"],
                      ", ".join(f"{a} ×{n}" for a, n in g["arms"].items()),
                      (f"⚠ ambiguous wording (contested in {g['contested_in_runs']} weeks)"
                       if g["ambiguous"] else "first week")] for g in shown])
        L += _capped(len(shown), len(j["contested"]), "contested items")
        L.append(f"\n_Contested: the judge samples disagreed and a tie-break decided. An item "
                 f"contested in {AMBIGUOUS_RUNS} or more weeks is worded ambiguously rather "
                 "than hard: reword it._\n")
    L.append("### Judge self-agreement (calibration)\n")
    cal = j.get("calibration")
    if not cal:
        L.append("_Not run for this week: `skilllift calibrate WEEKDIR --runs 5` grades a "
                 "handful of answers several times and reports how often a verdict flips._\n")
    else:
        rows = [[t, s["items"], s["unanimous"], s["split"],
                 "n/a" if s["flip_rate"] is None else f"{s['flip_rate']:.1%}"]
                for t, s in cal["by_type"].items()]
        L += _table(["item type", "items", "unanimous", "split", "flip rate"], rows)
        share = cal.get("must_unanimous_share")
        verdict = "meets" if cal.get("passed") else "misses"
        L.append(f"\n{cal['runs']} run(s) graded {'/'.join(map(str, cal['samples']))} times "
                 f"each; musts unanimous {'n/a' if share is None else f'{share:.1%}'}, which "
                 f"{verdict} the ≥{cal['bar']:.0%} bar for one judge sample per run.\n")
    return L


def provenance_lines(data: dict[str, Any]) -> list[str]:
    """Provenance bullets: which judge graded, how, and whether people trust it."""
    j = data.get("judge")
    if not j:
        return []
    L = []
    models = j["judge_models"]
    if models:
        L.append("- judge: " + ", ".join(f"`{m}` ({n} runs)" for m, n in models.items())
                 + " — prompt " + ", ".join(f"`{v}`" for v in j["prompt_versions"]))
        if len(models) > 1:
            L.append("- ⚠ more than one judge model graded this week — its numbers mix two "
                     "measurements (regrade with `skilllift judge WEEKDIR --fresh`)")
    else:
        L.append("- judge: not recorded (no run has a grades.json)")
    if j["graded_runs"]:
        samples = ", ".join(f"{k} per run ({n} runs)" for k, n in j["samples_per_run"].items())
        calls = ("" if j["judge_calls"] is None else
                 f"; judge calls {j['judge_calls']} (incl. {j['tie_breaks']} tie-breaks)")
        L.append(f"- judge samples: {samples}{calls}")
        policies = j["evidence_policy"]
        if "flag" in policies:
            L.append(f"- ⚠ evidence policy **flag** ({policies['flag']} runs): a met/violated "
                     "whose quote is not in the answer still scores "
                     "(`--skill-lift-evidence=flag`)")
        else:
            L.append("- evidence policy: reject — a met/violated whose quote is not in the "
                     "answer scores nothing")
    t = j["trust"]
    if t["source"] is None:
        L.append("- judge trust: **unmeasured** — no human labels yet (`skilllift label` "
                 "then `skilllift judge-check`)")
    else:
        agreement = t.get("must_agreement")
        kappa = t.get("kappa")
        facts = (f"must agreement {'n/a' if agreement is None else f'{agreement:.3f}'} over "
                 f"{t.get('must_labels', 0)} labelled musts, κ "
                 f"{'n/a' if kappa is None else f'{kappa:.2f}'}")
        L.append(f"- judge trust: **{t['state']}** — {facts} (judge-check "
                 f"{t.get('checked_utc') or '?'})")
        if t.get("stale"):
            L.append(f"- ⚠ the judge-check measured {', '.join(t['judge_models'])}, but this "
                     "week is now graded by another judge: run it again")
    return L
