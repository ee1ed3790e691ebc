"""``skilllift export WEEK_DIR --format skill-creator OUT``: a week in skill-creator's layout.

Anthropic's skill-creator reads a benchmark directory per skill (``references/schemas.md``
and ``scripts/aggregate_benchmark.py`` in anthropics/skills)::

    <skill>/<model>/benchmark.json
    <skill>/<model>/eval-<id>/eval_metadata.json
    <skill>/<model>/eval-<id>/{with_skill,without_skill}/run-<rep>/grading.json
    <skill>/<model>/eval-<id>/{with_skill,without_skill}/run-<rep>/outputs/answer.md

``grading.json`` holds ``expectations[{text, passed, evidence}]`` — the run's graded
``must`` items — and ``summary {passed, failed, total, pass_rate}``; a violated ``avoid``
item is listed under ``user_notes_summary.needs_review``, an ungraded item under
``uncertainties``. ``benchmark.json`` holds ``metadata``, ``runs[]`` and
``run_summary.{with_skill,without_skill,delta}``, configuration names exactly as the viewer
groups them. One benchmark per skill and model (skill-creator's ``executor_model`` is one).

Runs that were dropped from scoring (errored, invalid install, budget-capped…) are not
exported as zero-score runs: they are counted and named in ``benchmark.json`` ``notes``.
Reads ``manifest.csv`` and ``scores.csv`` (so a qdrant pipeline week exports too) plus,
when present, each run's folder (transcript, answer, judge model). No pytest here.
"""

from __future__ import annotations

import csv
import json
import math
import os
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pytest_skilllift.model import NO_SKILL, WITH_SKILL
from pytest_skilllift.week.files import (
    GRADES_FILE,
    MANIFEST_CSV,
    OK,
    RUN_FILE,
    SCORES_CSV,
    STDOUT_FILE,
    UTC_STAMP_FORMAT,
    WeekLinkError,
    atomic_write_text,
    find_link,
    no_link,
    safe_name,
)

FORMATS: tuple[str, ...] = ("skill-creator",)
#: skill-creator's configuration names (the viewer groups and colours by these strings).
CONFIGURATIONS: dict[str, str] = {WITH_SKILL: "with_skill", NO_SKILL: "without_skill"}


@dataclass
class ExportResult:
    """What an export wrote and what it left out (each left-out run with its reason)."""

    benchmarks: list[Path] = field(default_factory=list)
    gradings: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)


def _read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _stats(values: list[float]) -> dict[str, float]:
    """mean, sample stddev, min, max (skill-creator's ``calculate_stats``)."""
    if not values:
        return {"mean": 0.0, "stddev": 0.0, "min": 0.0, "max": 0.0}
    n = len(values)
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    return {"mean": round(mean, 4), "stddev": round(sd, 4), "min": round(min(values), 4),
            "max": round(max(values), 4)}


def _float(text: str | None) -> float | None:
    try:
        value = float(text or "")
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _transcript_metrics(run_dir: Path) -> dict[str, Any]:
    """Tool calls, errors, tokens from the run's transcript, when the week kept it."""
    from pytest_skilllift.trace.transcript import parse_transcript

    path = run_dir / STDOUT_FILE
    if not path.is_file():
        return {}
    tr = parse_transcript(path)
    calls: dict[str, int] = defaultdict(int)
    for use in tr.tool_uses:
        calls[use.name] += 1
    usage = (tr.result or {}).get("usage") or {}
    tokens = sum(int(usage.get(k) or 0) for k in (
        "input_tokens", "output_tokens", "cache_creation_input_tokens",
        "cache_read_input_tokens")) if isinstance(usage, dict) else 0
    return {"tool_calls": dict(calls), "total_tool_calls": sum(calls.values()),
            "errors_encountered": sum(1 for u in tr.tool_uses if u.is_error),
            "tokens": tokens or None}


def _run_record(run_dir: Path) -> dict[str, Any]:
    try:
        data = json.loads((run_dir / RUN_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _judge_model(run_dir: Path) -> str:
    try:
        data = json.loads((run_dir / GRADES_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    return str(data.get("judge_model") or "") if isinstance(data, dict) else ""


def _eval_ids(rows: list[dict[str, str]]) -> dict[str, Any]:
    """prompt name → skill-creator eval id: the file's own id for prompts collected from an
    evals.json, else 1, 2, … in name order within the skill."""
    out: dict[str, Any] = {}
    by_skill: dict[str, set[str]] = defaultdict(set)
    cache: dict[str, dict[str, Any]] = {}
    for r in rows:
        name, path = r.get("prompt", ""), r.get("prompt_path", "")
        if path.endswith("evals.json") and "-eval-" in name:
            if path not in cache:
                cache[path] = _file_ids(Path(path))
            suffix = name.rpartition("-eval-")[2]
            if suffix in cache[path]:
                out[name] = cache[path][suffix]
                continue
        by_skill[r.get("skill_family", "")].add(name)
    for names in by_skill.values():
        for i, name in enumerate(sorted(names), start=1):
            out.setdefault(name, i)
    return out


def _file_ids(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    ids: dict[str, Any] = {}
    for entry in data.get("evals") or [] if isinstance(data, dict) else []:
        raw = entry.get("id") if isinstance(entry, dict) else None
        if isinstance(raw, (int, str)) and not isinstance(raw, bool):
            ids.setdefault(safe_name(str(raw)), raw)
    return ids


def export_skill_creator(week_dir: Path, out: Path) -> ExportResult:
    """Write the skill-creator layout of ``week_dir`` under ``out``; see the module doc.
    A CSV or a run folder of the week that is (or holds) a symbolic link raises
    :class:`~pytest_skilllift.week.files.WeekLinkError`: an export never carries a link's
    target (a host file) out of the week."""
    manifest = _read_csv(no_link(week_dir / MANIFEST_CSV))
    scores = _read_csv(no_link(week_dir / SCORES_CSV))
    for row in manifest:
        run_dir = week_dir / row.get("run_id", "")
        link = find_link(run_dir) if os.path.lexists(run_dir) else None
        if link is not None:
            raise WeekLinkError(link, "and is not exported")
    items: dict[tuple[str, str, str, str], list[dict[str, str]]] = defaultdict(list)
    for s in scores:
        items[(s.get("prompt", ""), s.get("model", ""), s.get("condition", ""),
               s.get("rep", ""))].append(s)
    records = {row.get("run_id", ""): _run_record(week_dir / row.get("run_id", ""))
               for row in manifest}
    for row in manifest:  # the prompt file is named in run.json, not in manifest.csv
        row.setdefault("prompt_path", str(records[row.get("run_id", "")].get("prompt_path")
                                          or ""))
    ids = _eval_ids(manifest)
    result = ExportResult()
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    notes: dict[tuple[str, str], list[str]] = defaultdict(list)
    meta: dict[tuple[str, str], dict[str, Any]] = {}
    for row in manifest:
        key = (row.get("prompt", ""), row.get("model", ""), row.get("condition", ""),
               row.get("rep", ""))
        skill, model = row.get("skill_family", ""), row.get("model", "")
        group = (skill, model)
        run_id = row.get("run_id", "")
        status = row.get("run_status") or OK  # a qdrant week has no status: all scored
        config = CONFIGURATIONS.get(row.get("condition", ""))
        graded = [s for s in items.get(key, []) if s.get("item_type") == "must"
                  and s.get("verdict") in ("met", "missing")]
        reason = ("unknown condition" if config is None else
                  f"dropped ({status}): {row.get('run_error') or 'not scored'}"
                  if status != OK else "" if graded else "no graded must item")
        if reason:
            result.skipped.append((run_id, reason))
            notes[group].append(f"run {run_id} not exported: {reason}")
            continue
        assert config is not None
        run_dir = week_dir / run_id
        record = records[run_id]
        metrics = _transcript_metrics(run_dir)
        eval_id = ids.get(row.get("prompt", ""), row.get("prompt", ""))
        rep = int(_float(row.get("rep")) or 1)
        # A missing item's evidence is the verdict and, when the judge gave one, its reason
        # (scores.csv judge_reason; a qdrant week and an older one have none).
        expectations = [{"text": s.get("item_text", ""), "passed": s["verdict"] == "met",
                         "evidence": s.get("evidence_quote") or f"judge verdict: {s['verdict']}"
                         + (f" — {s['judge_reason']}" if s.get("judge_reason") else "")}
                        for s in graded]
        passed = sum(1 for e in expectations if e["passed"])
        total = len(expectations)
        ungraded = [s.get("item_text", "") for s in items.get(key, [])
                    if s.get("item_type") == "must" and not s.get("verdict")]
        violated = [f"avoid violated: {s.get('item_text', '')}"
                    + (f" — \"{s['evidence_quote']}\"" if s.get("evidence_quote") else "")
                    for s in items.get(key, [])
                    if s.get("item_type") == "avoid" and s.get("verdict") == "violated"]
        seconds = (_float(row.get("duration_ms")) or _float(row.get("wall_ms")) or 0.0) / 1000
        grading: dict[str, Any] = {
            "expectations": expectations,
            "summary": {"passed": passed, "failed": total - passed, "total": total,
                        "pass_rate": round(passed / total, 4)},
            "timing": {"executor_duration_seconds": round(seconds, 3),
                       "total_duration_seconds": round(seconds, 3)},
            "user_notes_summary": {
                "uncertainties": [f"ungraded (the judge gave no usable verdict): {t}"
                                  for t in ungraded],
                "needs_review": violated, "workarounds": []},
        }
        if metrics:
            grading["execution_metrics"] = {
                "tool_calls": metrics["tool_calls"],
                "total_tool_calls": metrics["total_tool_calls"],
                "errors_encountered": metrics["errors_encountered"],
                "output_chars": len(str(record.get("final_answer") or "")),
            }
        eval_dir = out / safe_name(skill) / safe_name(model) / f"eval-{safe_name(str(eval_id))}"
        run_out = eval_dir / config / f"run-{rep}"
        (run_out / "outputs").mkdir(parents=True, exist_ok=True)
        atomic_write_text(run_out / "grading.json", json.dumps(grading, indent=2,
                                                               ensure_ascii=False) + "\n")
        if record.get("final_answer"):
            atomic_write_text(run_out / "outputs" / "answer.md", str(record["final_answer"]))
        atomic_write_text(eval_dir / "eval_metadata.json", json.dumps({
            "eval_id": eval_id, "eval_name": row.get("prompt", ""),
            "prompt": _prompt_text(row, record), "assertions": [e["text"] for e in expectations],
        }, indent=2, ensure_ascii=False) + "\n")
        result.gradings += 1
        groups[group].append({
            "eval_id": eval_id, "eval_name": row.get("prompt", ""), "configuration": config,
            "run_number": rep,
            "result": {"pass_rate": grading["summary"]["pass_rate"], "passed": passed,
                       "failed": total - passed, "total": total,
                       "time_seconds": round(seconds, 3),
                       "tokens": metrics.get("tokens") or 0,
                       "tool_calls": metrics.get("total_tool_calls", 0),
                       "errors": metrics.get("errors_encountered", 0)},
            "expectations": expectations,
            "notes": grading["user_notes_summary"]["uncertainties"] + violated,
            "_tokens_known": bool(metrics.get("tokens")),
        })
        m = meta.setdefault(group, {"skill_path": skill,  # the installed folder
                                    "executor_model": row.get("model_id") or model,
                                    "analyzer_model": "", "timestamp": "", "reps": 0})
        m["analyzer_model"] = m["analyzer_model"] or _judge_model(run_dir)
        m["timestamp"] = max(m["timestamp"], row.get("ended_utc") or row.get("timestamp", ""))
        m["reps"] = max(m["reps"], rep)
    for group in sorted(set(groups) | set(notes)):
        result.benchmarks.append(_write_benchmark(out, group, groups.get(group, []),
                                                  meta.get(group), notes.get(group, []),
                                                  week_dir.name))
    return result


def _prompt_text(row: dict[str, str], record: dict[str, Any]) -> str:
    """The prompt as sent: from the prompt file when the week names it."""
    path = Path(row.get("prompt_path") or "")
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    except (OSError, ValueError):
        data = None
    if isinstance(data, dict) and isinstance(data.get("prompt"), str):
        return str(data["prompt"])
    if isinstance(data, dict):  # an evals.json: find the eval by its id suffix
        suffix = row.get("prompt", "").rpartition("-eval-")[2]
        for entry in data.get("evals") or []:
            if isinstance(entry, dict) and safe_name(str(entry.get("id"))) == suffix:
                return str(entry.get("prompt", ""))
    return str(record.get("prompt") or "")


def _iso(stamp: str) -> str:
    """The manifest's stamp (``20260808T073237Z``) → ISO 8601 (``2026-08-08T07:32:37Z``);
    other text unchanged."""
    try:
        return datetime.strptime(stamp, UTC_STAMP_FORMAT).strftime("%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return stamp


def _write_benchmark(out: Path, group: tuple[str, str], runs: list[dict[str, Any]],
                     meta: dict[str, Any] | None, notes: list[str], week: str) -> Path:
    skill, model = group
    summary: dict[str, Any] = {}
    extra_notes = [f"exported by pytest-skilllift from week {week}; pass_rate = share of "
                   "the run's graded must items met (the lift's must coverage per run)"]
    for config in CONFIGURATIONS.values():
        mine = [r for r in runs if r["configuration"] == config]
        if not mine:
            extra_notes.append(f"no {config} runs were exported: its summary reads 0")
        known = [r for r in mine if r["_tokens_known"]]
        if len(known) < len(mine):
            extra_notes.append(f"{config}: tokens unknown for {len(mine) - len(known)} of "
                               f"{len(mine)} runs (no transcript kept); summarized over "
                               f"{len(known)}")
        summary[config] = {
            "pass_rate": _stats([r["result"]["pass_rate"] for r in mine]),
            "time_seconds": _stats([r["result"]["time_seconds"] for r in mine]),
            "tokens": _stats([float(r["result"]["tokens"]) for r in known]),
        }
    ws, ns = summary["with_skill"], summary["without_skill"]
    summary["delta"] = {
        "pass_rate": f"{ws['pass_rate']['mean'] - ns['pass_rate']['mean']:+.2f}",
        "time_seconds": f"{ws['time_seconds']['mean'] - ns['time_seconds']['mean']:+.1f}",
        "tokens": f"{ws['tokens']['mean'] - ns['tokens']['mean']:+.0f}",
    }
    m = meta or {"skill_path": "", "executor_model": model, "analyzer_model": "",
                 "timestamp": "", "reps": 0}
    order = {"with_skill": 0, "without_skill": 1}
    runs_out = [{k: v for k, v in r.items() if not k.startswith("_")}
                for r in sorted(runs, key=lambda r: (str(r["eval_id"]),
                                                     order[r["configuration"]],
                                                     r["run_number"]))]
    benchmark = {
        "metadata": {
            "skill_name": skill, "skill_path": m["skill_path"],
            "executor_model": m["executor_model"], "analyzer_model": m["analyzer_model"],
            "timestamp": _iso(m["timestamp"]),
            "evals_run": sorted({r["eval_id"] for r in runs}, key=str),
            "runs_per_configuration": m["reps"],
        },
        "runs": runs_out,
        "run_summary": summary,
        "notes": extra_notes + notes,
    }
    path = out / safe_name(skill) / safe_name(model) / "benchmark.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(benchmark, indent=2, ensure_ascii=False) + "\n")
    return path
