"""``skilllift label WEEK_DIR --sample 30 --seed S > labels.csv``: a sheet for a person to fill.

The cheapest way to get the human labels ``skilllift judge-check`` needs: a stratified random
sample of the week's graded items, with the run's final answer beside each, and an empty
``verdict`` column for the person.

Strata are (item type, judge verdict): must met / missing, bonus met / absent, avoid violated /
clean. The sample is split **equally** across the strata present (a stratum smaller than its
share gives all it has and the rest goes to the others), not in proportion to their size: the
rare strata (an avoid violation, a missing must) are where a judge's false alarms and misses
show, and a proportional sample would leave them nearly empty. Within a stratum items are drawn
with ``random.Random(seed)`` from a canonical order, so the same week and seed always give the
same sheet.

The judge's own verdict is deliberately **not** on the sheet: a person who sees it anchors on
it. The columns are those ``judge-check`` reads, plus ``item_text``, ``choices`` (the verdicts
allowed for the item's type) and ``final_answer``; rows of one answer sit together.
"""

from __future__ import annotations

import csv
import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from pytest_skilllift.judge.calibrate import CalibrationError, TranscriptAnswer, read_answer
from pytest_skilllift.judge.graded import GradedItem
from pytest_skilllift.week.columns import ITEM_TYPES, VERDICTS
from pytest_skilllift.week.files import MANIFEST_CSV, RUN_FILE, no_link, read_text_nofollow

__all__ = ["FORMULA_START", "SHEET_COLUMNS", "allocate", "sheet_cell", "stratified_sample",
           "unsheet_cell", "write_sheet"]

#: What makes a spreadsheet read a cell as a formula (OWASP's CSV-injection list): the
#: sheet is made to be opened in one, so a text cell starting with one of these is written
#: with a leading ``'`` (shown as text) and :func:`unsheet_cell` takes it off on reading back.
FORMULA_START: tuple[str, ...] = ("=", "+", "-", "@", "\t", "\r")

SHEET_COLUMNS: tuple[str, ...] = (
    "prompt", "model", "condition", "rep", "item_type", "item_index", "item_text", "choices",
    "verdict", "final_answer",
)

Stratum = tuple[str, str]  # (item_type, verdict)


def _strata_order() -> list[Stratum]:
    return [(t, v) for t in ITEM_TYPES for v in VERDICTS[t]]


def allocate(sizes: dict[Stratum, int], total: int) -> dict[Stratum, int]:
    """Split ``total`` equally over the non-empty strata, capped by each stratum's size.

    Leftover from small strata is spread over the others, in the canonical stratum order
    (must met, must missing, bonus met, ...), so the split is deterministic.
    """
    want = {s: 0 for s in sizes}
    open_strata = [s for s in _strata_order() if sizes.get(s, 0) > 0]
    left = min(total, sum(sizes.values()))
    while left > 0 and open_strata:
        share, extra = divmod(left, len(open_strata))
        for i, s in enumerate(list(open_strata)):
            give = min(share + (1 if i < extra else 0), sizes[s] - want[s])
            want[s] += give
            left -= give
        open_strata = [s for s in open_strata if want[s] < sizes[s]]
    return want


def _order_key(item: GradedItem) -> tuple[Any, ...]:
    return (item.prompt, item.model, item.condition, item.rep,
            ITEM_TYPES.index(item.item_type), item.item_index)


def stratified_sample(items: Sequence[GradedItem], size: int,
                      seed: int | str) -> tuple[list[GradedItem], dict[Stratum, tuple[int, int]]]:
    """The sampled items (in sheet order) and, per stratum, ``(taken, available)``."""
    strata: dict[Stratum, list[GradedItem]] = {}
    for item in sorted((i for i in items if i.graded), key=_order_key):
        strata.setdefault((item.item_type, item.verdict), []).append(item)
    want = allocate({s: len(v) for s, v in strata.items()}, size)
    rng = random.Random(f"{seed}")
    taken: list[GradedItem] = []
    for stratum in _strata_order():  # fixed order: each draw consumes the RNG the same way
        pool = strata.get(stratum, [])
        taken.extend(rng.sample(pool, want.get(stratum, 0)))
    counts = {s: (want.get(s, 0), len(strata.get(s, []))) for s in _strata_order()
              if strata.get(s)}
    return sorted(taken, key=_order_key), counts


RunKey = tuple[str, str, str, int]  # (prompt, model, condition, rep)


def _answers(week_dir: Path, items: Sequence[GradedItem],
             transcript_answer: TranscriptAnswer) -> dict[RunKey, str]:
    """The final answer of each run of ``items``; a run is found by its scores.csv run_id,
    else through manifest.csv (a qdrant week's scores carry no run_id)."""
    manifest: dict[tuple[str, str, str, int], str] = {}
    path = week_dir / MANIFEST_CSV
    if path.is_file():
        with path.open(newline="", encoding="utf-8") as fh:
            for row in csv.DictReader(fh):
                try:
                    rep = int(float(row.get("rep", "")))
                except ValueError:
                    continue
                manifest[(row.get("prompt", ""), row.get("model", ""), row.get("condition", ""),
                          rep)] = row.get("run_id", "")
    out: dict[RunKey, str] = {}
    for item in items:
        run: RunKey = (item.prompt, item.model, item.condition, item.rep)
        if run in out:
            continue
        run_id = item.run_id or manifest.get(run, "")
        if not run_id:
            out[run] = "(final answer not found: no run of this item in manifest.csv)"
            continue
        run_dir = week_dir / run_id
        try:  # never through a link: a run folder or run.json that is one names a host file
            record = json.loads(read_text_nofollow(no_link(run_dir) / RUN_FILE))
        except (OSError, ValueError, RecursionError):
            record = {}
        try:
            out[run] = read_answer(run_dir, record if isinstance(record, dict) else {},
                                   transcript_answer)
        except CalibrationError as err:
            out[run] = f"(final answer not found: {err})"
    return out


def sheet_cell(text: str) -> str:
    """``text`` as a spreadsheet shows it as text: a leading ``'`` before a formula start."""
    return "'" + text if text.startswith(FORMULA_START) else text


def unsheet_cell(text: str) -> str:
    """:func:`sheet_cell` undone (a label sheet read back by ``skilllift judge-check``)."""
    return text[1:] if text.startswith("'") and text[1:].startswith(FORMULA_START) else text


def write_sheet(out: TextIO, week_dir: Path, sample: Sequence[GradedItem],
                transcript_answer: TranscriptAnswer) -> int:
    """Write the label sheet as CSV; returns how many answers could not be found."""
    answers = _answers(week_dir, sample, transcript_answer)
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(SHEET_COLUMNS)
    missing = 0
    for item in sample:
        answer = answers[(item.prompt, item.model, item.condition, item.rep)]
        if answer.startswith("(final answer not found"):
            missing += 1
        positive, negative = VERDICTS[item.item_type]
        # The week's CSVs stay exact (docs/safety.md); this sheet is for a spreadsheet.
        writer.writerow([sheet_cell(item.prompt), sheet_cell(item.model),
                         sheet_cell(item.condition), item.rep, item.item_type,
                         item.item_index, sheet_cell(item.item_text), f"{positive}|{negative}",
                         "", sheet_cell(answer)])
    return missing
