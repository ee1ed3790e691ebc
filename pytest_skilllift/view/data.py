"""The viewer's data: the overview (from scorecard.json) and one record per prompt.

The overview's numbers are scorecard.json's own values, copied, never recomputed: the page and
the scorecard cannot disagree. A prompt's record joins three readers of the week: the runs of
``manifest.csv`` (``week.tables.load_week``), the graded items of ``scores.csv``
(``judge.graded.read_graded_items``: verdict, evidence quote, a rejected quote as the judge's
claim, contested) and each run's files (``view.runs``: answer, trajectory, audit).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_skilllift.judge.graded import GradedItem
from pytest_skilllift.view.runs import read_run
from pytest_skilllift.week.columns import ACTIVATIONS, ARMS, INVOCATION_STATUSES, ITEM_TYPES
from pytest_skilllift.week.files import RUN_STATUSES, SCORECARD_JSON, WEEK_JSON

__all__ = ["OVERVIEW_KEYS", "PromptRecord", "RunRow", "ViewError", "overview", "page_name",
           "prompt_records", "read_scorecard", "runs_of"]

#: scorecard.json keys the overview shows (the rest stay in the scorecard: a small index).
OVERVIEW_KEYS: tuple[str, ...] = (
    "week", "banner", "generator", "model_order", "problems", "models", "bootstrap", "history",
    "cells", "prompts", "coverage", "run_health", "provenance", "audit", "activation_summary",
    "cost_time", "avoid_violations", "gates", "verdicts",
)


class ViewError(Exception):
    """The week cannot be shown; the message names the file and the fix."""


def read_scorecard(week_dir: Path) -> dict[str, Any]:
    """``WEEKDIR/scorecard.json``, or :class:`ViewError` saying how to write it."""
    path = week_dir / SCORECARD_JSON
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ViewError(f"{path}: not found; write it first with skilllift summarize "
                        f"{week_dir}") from None
    except (OSError, ValueError) as err:
        raise ViewError(f"{path}: unreadable ({err}); write it again with skilllift "
                        f"summarize {week_dir}") from None
    if not isinstance(data, dict):
        raise ViewError(f"{path}: not a JSON object; write it again with skilllift summarize")
    return data


def page_name(prompt: str) -> str:
    """A prompt's page file name: its name made file-safe, plus a hash when that changed it
    (two hostile names never share a page, and none escapes the prompts folder)."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", prompt)[:80] or "_"
    if safe != prompt:
        safe += "-" + hashlib.sha1(prompt.encode("utf-8")).hexdigest()[:10]
    return f"{safe}.html"


def _identity(week_dir: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((week_dir / WEEK_JSON).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    ident = data.get("identity") if isinstance(data, dict) else None
    if not isinstance(ident, dict):
        return None
    # The per-prompt hashes are the week's long tail; the overview names what was measured.
    return {k: v for k, v in ident.items() if k != "prompts"}


def overview(card: dict[str, Any], week_dir: Path, pages: dict[str, str]) -> dict[str, Any]:
    """The overview page's data: scorecard.json's values, the identity, the prompt pages."""
    data = {k: card.get(k) for k in OVERVIEW_KEYS if k in card}
    data["identity"] = _identity(week_dir)
    data["pages"] = pages
    return data


@dataclass
class RunRow:
    """One run of ``manifest.csv`` as the viewer shows it."""

    prompt: str
    model: str
    condition: str
    rep: int
    run_id: str
    status: str
    invocation: str
    activation: str
    cost: float | None
    turns: float | None
    duration_ms: float | None
    family: str = ""


def _num(values: Any, i: int) -> float | None:
    if values is None:
        return None
    x = float(values[i])
    return None if x != x else x  # NaN: the column is empty or absent


def runs_of(week: Any) -> list[RunRow]:
    """Every run of a loaded week (``week.tables.Week``) with a usable prompt, model, arm."""
    ids = week.run_ids(range(week.n_runs))
    rows = []
    num = week.m_num
    for i in range(week.n_runs):
        p, m, c = int(week.m_prompt[i]), int(week.m_model[i]), int(week.m_cond[i])
        if p < 0 or m < 0 or c < 0:
            continue  # load_week reports these rows as input problems
        inv, act, st = int(week.m_invocation[i]), int(week.m_activation[i]), int(week.m_status[i])
        prompt = week.prompts[p]
        rows.append(RunRow(
            prompt=prompt, model=week.models[m], condition=ARMS[c], rep=int(week.m_rep[i]),
            run_id=ids[i], status=RUN_STATUSES[st] if 0 <= st < len(RUN_STATUSES) else "",
            invocation=INVOCATION_STATUSES[inv] if inv >= 0 else "",
            activation=ACTIVATIONS[act] if act >= 0 else "",
            cost=_num(num.get("total_cost_usd"), i), turns=_num(num.get("num_turns"), i),
            duration_ms=_num(num.get("duration_ms"), i),
            family=week.prompt_family.get(prompt, ""),
        ))
    return rows


@dataclass
class PromptRecord:
    """A prompt's runs and graded items, before its page data is built."""

    prompt: str
    runs: list[RunRow] = field(default_factory=list)
    items: list[GradedItem] = field(default_factory=list)


def group_by_prompt(runs: Sequence[RunRow], items: Sequence[GradedItem]) -> dict[str,
                                                                                PromptRecord]:
    """Runs and items by prompt, in prompt-name order."""
    out: dict[str, PromptRecord] = {}
    for r in runs:
        out.setdefault(r.prompt, PromptRecord(r.prompt)).runs.append(r)
    for it in items:
        out.setdefault(it.prompt, PromptRecord(it.prompt)).items.append(it)
    return dict(sorted(out.items()))


_Col = tuple[str, int]  # (condition, rep)


def _col_order(col: _Col) -> tuple[int, int]:
    cond, rep = col
    return (ARMS.index(cond) if cond in ARMS else len(ARMS), rep)


def _cell(it: GradedItem) -> dict[str, Any]:
    cell: dict[str, Any] = {"v": it.verdict or "ungraded"}
    if it.evidence:
        cell["q"] = it.evidence
    if it.claimed_evidence or it.claimed_verdict:
        cell["cv"], cell["cq"] = it.claimed_verdict, it.claimed_evidence
    if it.evidence_ok == "0":
        cell["rejected"] = True
    if it.contested:
        cell["c"] = True
    return cell


def _run_facts(r: RunRow | None) -> dict[str, Any]:
    if r is None:
        return {"run_id": "", "status": "not in manifest.csv"}
    return {"run_id": r.run_id, "status": r.status, "invocation": r.invocation,
            "activation": r.activation, "cost": r.cost, "turns": r.turns,
            "duration_ms": r.duration_ms,
            # A with-skill run that never reached its skill: a trigger miss (SkillsBench audit).
            "trigger_miss": r.condition != ARMS[0] and r.activation == "none"}


def _model_block(model: str, runs: list[RunRow], items: list[GradedItem],
                 run_files: dict[str, dict[str, Any]]) -> dict[str, Any]:
    by_col = {(r.condition, r.rep): r for r in runs}
    cols = sorted(set(by_col) | {(i.condition, i.rep) for i in items}, key=_col_order)
    col_at = {c: n for n, c in enumerate(cols)}
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    for it in items:
        row = rows.setdefault((it.item_type, it.item_index), {
            "type": it.item_type, "index": it.item_index, "text": it.item_text,
            "cells": [None] * len(cols)})
        row["cells"][col_at[(it.condition, it.rep)]] = _cell(it)
    columns = []
    for cond, rep in cols:
        run = by_col.get((cond, rep))
        facts = _run_facts(run)
        facts.update(run_files.get(run.run_id, {}) if run is not None else {})
        columns.append({"condition": cond, "rep": rep, **facts})
    ordered = sorted(rows.values(), key=lambda r: (ITEM_TYPES.index(r["type"]), r["index"]))
    return {"model": model, "columns": columns, "items": ordered}


def _prompt_text(week_dir: Path, paths: list[str]) -> tuple[str | None, str]:
    from pytest_skilllift.judge.calibrate import CalibrationError, read_prompt

    for raw in paths:
        path = Path(raw) if Path(raw).is_absolute() else week_dir / raw
        if path.is_file():
            try:
                return read_prompt(path)[0], ""
            except CalibrationError as err:
                return None, str(err)
    return None, ("the prompt file recorded in run.json (prompt_path) is not on this machine"
                  if paths else "no run of this prompt records its prompt file")


def prompt_page(week_dir: Path, rec: PromptRecord, card_rows: list[dict[str, Any]],
                run_dirs: set[str], model_order: Sequence[str]) -> dict[str, Any]:
    """One prompt's page data: the prompt, and per model its rubric × runs grid."""
    run_files = {r.run_id: read_run(week_dir, r.run_id) for r in rec.runs
                 if r.run_id in run_dirs}
    text, note = _prompt_text(week_dir, [f["prompt_path"] for f in run_files.values()
                                         if f.get("prompt_path")])
    for f in run_files.values():
        f.pop("prompt_path", None)
    models = list(dict.fromkeys([*model_order, *(r.model for r in rec.runs),
                                 *(i.model for i in rec.items)]))
    blocks = []
    for m in models:
        runs = [r for r in rec.runs if r.model == m]
        items = [i for i in rec.items if i.model == m]
        if runs or items:
            blocks.append(_model_block(m, runs, items, run_files))
    family = next((r.family for r in rec.runs if r.family), "")
    return {"prompt": rec.prompt, "family": family, "text": text, "text_note": note,
            "lift": card_rows,
            "models": blocks}


def prompt_records(week_dir: Path, week: Any, items: Sequence[GradedItem],
                   card: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(prompt, page data)`` for every prompt of the week, one at a time (a large week's
    pages are built and written one by one, never all held at once)."""
    rows: dict[str, list[dict[str, Any]]] = {}
    card_prompts = card.get("prompts")
    for row in card_prompts if isinstance(card_prompts, list) else []:
        if isinstance(row, dict):
            rows.setdefault(str(row.get("prompt")), []).append(row)
    order = card.get("model_order") or list(week.models)
    for prompt, rec in group_by_prompt(runs_of(week), items).items():
        yield prompt, prompt_page(week_dir, rec, rows.get(prompt, []), week.run_dirs, order)
