"""The viewer's data: the overview (from scorecard.json) and one record per prompt.

The overview's numbers are scorecard.json's own values, copied, never recomputed: the page and
the scorecard cannot disagree. A prompt's record joins the week's two tables as
``week.tables.load_week`` reads them (columnar: a million-item week is read in a second) —
the runs of ``manifest.csv`` and the graded items of ``scores.csv`` (verdict, evidence quote,
a rejected quote as the judge's claim, contested) — with each run's files (``view.runs``:
answer, trajectory, audit).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_skilllift.model import ARMS
from pytest_skilllift.view.runs import read_run
from pytest_skilllift.week.columns import ACTIVATIONS, INVOCATION_STATUSES, ITEM_TYPES
from pytest_skilllift.week.files import RUN_STATUSES, SCORECARD_JSON, WEEK_JSON

if TYPE_CHECKING:  # loaded by the caller (numpy's arrays: imported only where used)
    from pytest_skilllift.week.tables import Week

__all__ = ["OVERVIEW_KEYS", "Items", "RunRow", "ViewError", "items_of", "overview",
           "page_name", "prompt_records", "read_scorecard", "runs_of"]

#: scorecard.json keys the overview shows (the rest stay in the scorecard: a small index).
OVERVIEW_KEYS: tuple[str, ...] = (
    "week", "banner", "note", "verdict", "generator", "model_order", "problems", "models",
    "bootstrap", "history",
    "cells", "prompts", "coverage", "run_health", "provenance", "audit", "activation_summary",
    "cost_time", "avoid_violations", "pass_threshold", "rewards",
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
    # Per-prompt lists stay on the prompt pages (a large week's would be megabytes here).
    audit = data.get("audit")
    if isinstance(audit, dict):
        data["audit"] = {k: audit.get(k) for k in ("available", "invocation",
                                                   "top_level_only_runs", "audited_runs")}
    violations = data.get("avoid_violations")
    if isinstance(violations, list):
        data["avoid_violations"] = len(violations)
    prov = data.get("provenance")
    if isinstance(prov, dict):
        data["provenance"] = {k: v for k, v in prov.items() if not k.endswith("_by_family")}
    judge = card.get("judge")
    judge_audit = judge.get("audit") if isinstance(judge, dict) else None
    if isinstance(judge_audit, dict):  # the family warning, the panel, the bias audit
        data["judge_audit"] = judge_audit
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


def runs_of(week: Week) -> list[RunRow]:
    """Every run of a loaded week (``week.tables.Week``) with a usable prompt, model, arm."""
    ids = week.run_ids(range(week.n_runs))
    nan_none: list[float | None] = [None] * week.n_runs

    def numbers(name: str) -> list[float | None]:
        values = week.manifest.num.get(name)
        if values is None:
            return nan_none
        return [None if x != x else x for x in values.tolist()]  # NaN: empty or absent

    cost, turns, ms = numbers("total_cost_usd"), numbers("num_turns"), numbers("duration_ms")
    mf = week.manifest
    cols = zip(mf.prompt.tolist(), mf.model.tolist(), mf.cond.tolist(), mf.rep.tolist(),
               mf.status.tolist(), mf.invocation.tolist(), mf.activation.tolist(), strict=True)
    rows = []
    for i, (p, m, c, rep, st, inv, act) in enumerate(cols):
        if p < 0 or m < 0 or c < 0:
            continue  # load_week reports these rows as input problems
        prompt = week.prompts[p]
        rows.append(RunRow(
            prompt=prompt, model=week.models[m], condition=ARMS[c], rep=rep, run_id=ids[i],
            status=RUN_STATUSES[st] if 0 <= st < len(RUN_STATUSES) else "",
            invocation=INVOCATION_STATUSES[inv] if inv >= 0 else "",
            activation=ACTIVATIONS[act] if act >= 0 else "",
            cost=cost[i], turns=turns[i], duration_ms=ms[i],
            family=week.prompt_family.get(prompt, ""),
        ))
    return rows


def _strings(arr: Any, n: int) -> list[str]:
    """An Arrow string column (dictionary-encoded or not) as ``n`` Python strings."""
    if arr is None:
        return [""] * n
    import numpy as np
    import pyarrow as pa

    if pa.types.is_dictionary(arr.type):
        vals = np.array([v or "" for v in arr.dictionary.to_pylist()] + [""], dtype=object)
        idx = arr.indices.fill_null(len(vals) - 1).to_numpy(zero_copy_only=False)
        return list(vals[idx].tolist())
    return [v or "" for v in arr.to_pylist()]


@dataclass
class Items:
    """scores.csv's rows as Python lists, one entry per row (``week.tables`` read them)."""

    prompt: list[int]
    model: list[int]
    cond: list[int]
    rep: list[int]
    type: list[int]
    index: list[float]
    text: list[str]
    verdict: list[str]
    ungraded: list[bool]
    evidence: list[str]
    contested: list[bool]
    evidence_ok: list[str]
    claimed_verdict: list[str]
    claimed_evidence: list[str]
    #: The judge's short reason (scores.csv ``judge_reason``; "" in a week graded before
    #: the judge gave reasons — the viewer says "no reason recorded").
    reason: list[str]
    #: Per row: the cell is its verdict alone (no quote, claim, flag): most of a week.
    plain: list[bool]


def _blank(arr: Any) -> Any:
    """Per row, whether an Arrow string column's value is empty (all True when absent)."""
    import numpy as np
    import pyarrow as pa

    if arr is None:
        return True
    if pa.types.is_dictionary(arr.type):
        empty = np.array([not (v or "").strip() for v in arr.dictionary.to_pylist()] + [True])
        return empty[arr.indices.fill_null(len(empty) - 1).to_numpy(zero_copy_only=False)]
    import pyarrow.compute as pc

    return pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(arr.fill_null(""))), 0).to_numpy(
        zero_copy_only=False)


def _not_zero(arr: Any) -> Any:
    """Per row, whether ``evidence_ok`` is anything but ``0`` (a rejected quote)."""
    import numpy as np

    if arr is None:
        return True
    vals = np.array([(v or "").strip() != "0" for v in arr.dictionary.to_pylist()] + [True])
    return vals[arr.indices.fill_null(len(vals) - 1).to_numpy(zero_copy_only=False)]


def items_of(week: Week) -> Items:
    """The item columns of a loaded week."""
    import numpy as np

    n, kept = week.n_items, week.scores.kept
    index = kept.get("item_index")
    plain = (np.ones(n, bool) & _blank(week.scores.evidence) & _blank(kept.get("claimed_verdict"))
             & _blank(kept.get("claimed_evidence")) & _blank(kept.get("judge_reason"))
             & ~week.scores.contested
             & _not_zero(kept.get("evidence_ok")))
    verdict = _strings(kept.get("verdict"), n)
    for r in np.flatnonzero(week.scores.ungraded).tolist():
        verdict[r] = "ungraded"
    return Items(
        prompt=week.scores.prompt.tolist(), model=week.scores.model.tolist(),
        cond=week.scores.cond.tolist(),
        rep=week.scores.rep.tolist(), type=week.scores.type.tolist(),
        index=(index.to_numpy(zero_copy_only=False).tolist() if index is not None
               else [float("nan")] * n),
        text=_strings(week.scores.item_text, n), verdict=[v.strip() or "ungraded" for v in verdict],
        ungraded=week.scores.ungraded.tolist(), evidence=_strings(week.scores.evidence, n),
        contested=week.scores.contested.tolist(), evidence_ok=_strings(kept.get("evidence_ok"), n),
        claimed_verdict=_strings(kept.get("claimed_verdict"), n),
        claimed_evidence=_strings(kept.get("claimed_evidence"), n),
        reason=_strings(kept.get("judge_reason"), n), plain=plain.tolist(),
    )


_Col = tuple[str, int]  # (condition, rep)


def _col_order(col: _Col) -> tuple[int, int]:
    cond, rep = col
    return (ARMS.index(cond) if cond in ARMS else len(ARMS), rep)


def _cell(it: Items, r: int) -> str | dict[str, Any]:
    """A grid cell: the verdict alone (most cells: a string keeps a large week's pages
    small), or the verdict with its quote, the judge's reason, its rejected claim,
    contested."""
    v = it.verdict[r]
    q, cq, cv, ok, c, why = (it.evidence[r], it.claimed_evidence[r], it.claimed_verdict[r],
                             it.evidence_ok[r], it.contested[r], it.reason[r])
    if not (q or cq or cv or c or ok == "0" or why):
        return v
    cell: dict[str, Any] = {"v": v}
    if q:
        cell["q"] = q
    if why:
        cell["why"] = why
    if cq or cv:
        cell["cv"], cell["cq"] = cv.strip(), cq
    if ok.strip() == "0":
        cell["rejected"] = True
    if c:
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


def _model_block(model: str, runs: list[RunRow], it: Items, rows: list[int],
                 run_files: dict[str, dict[str, Any]]) -> dict[str, Any]:
    by_col = {(r.condition, r.rep): r for r in runs}
    cols = sorted(set(by_col) | {(ARMS[it.cond[r]], it.rep[r]) for r in rows}, key=_col_order)
    col_at = {(ARMS.index(c) if c in ARMS else -1, rep): n for n, (c, rep) in enumerate(cols)}
    grid: dict[tuple[int, int], dict[str, Any]] = {}
    position: dict[tuple[int, int, int], int] = {}
    types, conds, reps, indices = it.type, it.cond, it.rep, it.index
    plain, verdict = it.plain, it.verdict
    width = len(cols)
    for r in rows:
        t, c, rep = types[r], conds[r], reps[r]
        x = indices[r]
        if x == x and x >= 1:
            index = int(x)
        else:
            # A qdrant week has no item_index: an item is its place among its run's items
            # of its type, which is how the rubric numbers them (judge.graded does the same).
            index = position[(c, rep, t)] = position.get((c, rep, t), 0) + 1
        row = grid.get((t, index))
        if row is None:
            row = grid[(t, index)] = {"type": ITEM_TYPES[t], "index": index,
                                      "text": it.text[r], "cells": [None] * width}
        row["cells"][col_at[(c, rep)]] = verdict[r] if plain[r] else _cell(it, r)
    columns = []
    for cond, rep in cols:
        run = by_col.get((cond, rep))
        facts = _run_facts(run)
        facts.update(run_files.get(run.run_id, {}) if run is not None else {})
        columns.append({"condition": cond, "rep": rep, **facts})
    return {"model": model, "columns": columns,
            "items": [grid[k] for k in sorted(grid)]}


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


def prompt_page(week_dir: Path, prompt: str, runs: list[RunRow], it: Items, rows: list[int],
                models: Sequence[str], card_rows: list[dict[str, Any]],
                run_dirs: set[str]) -> dict[str, Any]:
    """One prompt's page data: the prompt, and per model its rubric × runs grid."""
    run_files = {r.run_id: read_run(week_dir, r.run_id) for r in runs if r.run_id in run_dirs}
    text, note = _prompt_text(week_dir, [f["prompt_path"] for f in run_files.values()
                                         if f.get("prompt_path")])
    for f in run_files.values():
        f.pop("prompt_path", None)
    by_model: dict[int, list[int]] = {}
    for r in rows:
        by_model.setdefault(it.model[r], []).append(r)
    blocks = []
    for m, name in enumerate(models):
        model_runs = [r for r in runs if r.model == name]
        if model_runs or m in by_model:
            blocks.append(_model_block(name, model_runs, it, by_model.get(m, []), run_files))
    family = next((r.family for r in runs if r.family), "")
    return {"prompt": prompt, "family": family, "text": text, "text_note": note,
            "lift": card_rows, "models": blocks}


def prompt_records(week_dir: Path, week: Week,
                   card: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(prompt, page data)`` for every prompt of the week, one at a time (a large week's
    pages are built and written one by one, never all held at once)."""
    import numpy as np

    from pytest_skilllift.view.tasks import is_task_run, task_page

    rows: dict[str, list[dict[str, Any]]] = {}
    card_prompts = card.get("prompts")
    for row in card_prompts if isinstance(card_prompts, list) else []:
        if isinstance(row, dict):
            rows.setdefault(str(row.get("prompt")), []).append(row)
    runs: dict[str, list[RunRow]] = {}
    for run in runs_of(week):
        runs.setdefault(run.prompt, []).append(run)
    it = items_of(week)
    # Usable rows (a prompt, a model, an arm, a rep, an item type), grouped by prompt in
    # file order; load_week reports the others as input problems.
    sc = week.scores
    ok = ((sc.prompt >= 0) & (sc.model >= 0) & (sc.cond >= 0) & (sc.rep >= 0) & (sc.type >= 0))
    usable = np.flatnonzero(ok)
    order = usable[np.argsort(week.scores.prompt[usable], kind="stable")]
    starts = np.searchsorted(week.scores.prompt[order], np.arange(len(week.prompts) + 1))
    for p, prompt in enumerate(week.prompts):
        item_rows = order[starts[p]:starts[p + 1]].tolist()
        if not item_rows and prompt not in runs:
            continue
        mine = runs.get(prompt, [])
        if not item_rows and any(is_task_run(week_dir, r.run_id) for r in mine[:1]):
            # A Harbor task: its verifier's tests are its rows (view/tasks.py).
            yield prompt, {**task_page(week_dir, prompt, mine, list(week.models), card),
                           "kind": "task"}
            continue
        yield prompt, prompt_page(week_dir, prompt, runs.get(prompt, []), it, item_rows,
                                  week.models, rows.get(prompt, []), week.run_dirs)
