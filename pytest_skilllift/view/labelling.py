"""Blind labelling behind ``skilllift view --serve``: the sample, the label file, agreement.

The sample is the one ``skilllift label`` draws (``judge.labels.stratified_sample``, same week
and seed, same items); a person may also label every item of a run they pick. The page sees
an item as an opaque id, its rubric text, the verdicts its type allows, the prompt and the
run's final answer: never the model, the arm or the judge's verdict (a person who sees them
anchors on them). Each label is written at once into ``WEEKDIR/labels.csv`` in the columns
``skilllift judge-check`` reads; agreement and Cohen's kappa so far come from
``judge.agreement.check_week`` on that same file, so the page and judge-check cannot differ.

A label is read-modify-written into labels.csv under a lock held across processes
(``week.files.file_lock`` on ``.labels.csv.lock``) and threads: two servers on one week, or
many clients of one, lose no acknowledged label.
"""

from __future__ import annotations

import csv
import io
import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_skilllift.judge.graded import GradedItem, read_graded_items
from pytest_skilllift.week.columns import VERDICTS
from pytest_skilllift.week.files import RUN_FILE, atomic_write_text, file_lock, read_text_nofollow

__all__ = ["LABELS_FILE", "LABELS_LOCK", "LABEL_COLUMNS", "LabelSession", "LabellingError"]

LABELS_FILE = "labels.csv"
#: The lock every writer of labels.csv holds around its read-modify-write.
LABELS_LOCK = ".labels.csv.lock"
#: The label file's columns: those ``skilllift judge-check`` reads, plus the item's text.
LABEL_COLUMNS: tuple[str, ...] = (
    "prompt", "model", "condition", "rep", "item_type", "item_index", "item_text", "verdict",
)
_KEY_COLUMNS = LABEL_COLUMNS[:6]


class LabellingError(Exception):
    """A label request that cannot be honoured (unknown item, verdict not of its type)."""


def _row_key(row: dict[str, str]) -> tuple[str, ...]:
    return tuple((row.get(c) or "").strip() for c in _KEY_COLUMNS)


def _item_row(item: GradedItem, verdict: str) -> dict[str, str]:
    return {"prompt": item.prompt, "model": item.model, "condition": item.condition,
            "rep": str(item.rep), "item_type": item.item_type,
            "item_index": str(item.item_index), "item_text": item.item_text,
            "verdict": verdict}


class LabelSession:
    """The items a person labels in one served session, and the label file they fill."""

    def __init__(self, week_dir: Path, *, sample: int = 30, seed: str = "0") -> None:
        from pytest_skilllift.judge.labels import stratified_sample

        self.week_dir = Path(week_dir)
        self.path = self.week_dir / LABELS_FILE
        self.items: list[GradedItem] = read_graded_items(self.week_dir)
        self.sample, _counts = stratified_sample(self.items, sample, seed)
        self._ids: dict[int, GradedItem] = {}
        self._by_key: dict[tuple[Any, ...], int] = {}
        self._answers: dict[tuple[str, str, str, int], str] = {}
        self._prompts: dict[str, str] = {}
        # The handler threads of one server share the caches above and the label file.
        self._mutex = threading.RLock()

    # -- what the page sees -----------------------------------------------------------
    def _id(self, item: GradedItem) -> int:
        with self._mutex:
            if item.key not in self._by_key:
                self._by_key[item.key] = len(self._ids) + 1
                self._ids[self._by_key[item.key]] = item
            return self._by_key[item.key]

    def _answer(self, item: GradedItem) -> str:
        from pytest_skilllift.judge.labels import _answers  # the sheet's own answer lookup
        from pytest_skilllift.trace.transcript import final_answer

        run = (item.prompt, item.model, item.condition, item.rep)
        if run not in self._answers:
            self._answers.update(_answers(self.week_dir, [item], final_answer))
        return self._answers[run]

    def _prompt_text(self, item: GradedItem) -> str:
        if item.prompt not in self._prompts:
            from pytest_skilllift.view.data import _prompt_text

            paths = []
            try:
                record = json.loads((self.week_dir / item.run_id / RUN_FILE).read_text(
                    encoding="utf-8")) if item.run_id else {}
                if isinstance(record, dict) and isinstance(record.get("prompt_path"), str):
                    paths.append(record["prompt_path"])
            except (OSError, ValueError):
                pass
            text, note = _prompt_text(self.week_dir, paths)
            self._prompts[item.prompt] = text if text is not None else f"({note})"
        return self._prompts[item.prompt]

    def items_of(self, run_id: str | None = None) -> list[GradedItem]:
        """The sample, or every graded item of one run."""
        if run_id is None:
            return list(self.sample)
        return [i for i in self.items if i.run_id == run_id and i.graded]

    def blind(self, items: Sequence[GradedItem]) -> list[dict[str, Any]]:
        """The items as the page shows them: no model, no arm, no judge verdict."""
        given = self.given()
        return [{"id": self._id(i), "item_type": i.item_type, "item_text": i.item_text,
                 "choices": list(VERDICTS[i.item_type]), "prompt": i.prompt,
                 "prompt_text": self._prompt_text(i), "answer": self._answer(i),
                 "label": given.get(_row_key(_item_row(i, "")), "")} for i in items]

    # -- the label file ---------------------------------------------------------------
    def _read(self) -> tuple[list[str], list[dict[str, str]]]:
        try:
            text = read_text_nofollow(self.path)
        except FileNotFoundError:
            return list(LABEL_COLUMNS), []
        with io.StringIO(text.removeprefix("\ufeff"), newline="") as fh:
            reader = csv.DictReader(fh)
            header = [h for h in (reader.fieldnames or []) if h]
            rows = [{k: v or "" for k, v in r.items() if k} for r in reader]
        header += [c for c in LABEL_COLUMNS if c not in header]
        return header, rows

    def given(self) -> dict[tuple[str, ...], str]:
        """Labels already in the file, by item key."""
        return {_row_key(r): (r.get("verdict") or "").strip() for r in self._read()[1]
                if (r.get("verdict") or "").strip()}

    def save(self, item_id: int, verdict: str) -> dict[str, Any] | None:
        """Write one label (replacing an earlier label of the same item); the agreement so far."""
        item = self._ids.get(item_id)
        if item is None:
            raise LabellingError(f"no item {item_id} in this labelling session; reload the page")
        if verdict not in VERDICTS[item.item_type]:
            positive, negative = VERDICTS[item.item_type]
            raise LabellingError(f"verdict {verdict!r} is not {positive} or {negative} "
                                 f"(a {item.item_type} item)")
        with self._mutex, file_lock(self.week_dir / LABELS_LOCK):
            header, rows = self._read()
            new = _item_row(item, verdict)
            key = _row_key(new)
            for row in rows:
                if _row_key(row) == key:
                    row.update(new)
                    break
            else:
                rows.append(new)
            out = io.StringIO()
            writer = csv.DictWriter(out, fieldnames=header, lineterminator="\n",
                                    extrasaction="ignore")
            writer.writeheader()
            writer.writerows(rows)
            atomic_write_text(self.path, out.getvalue())
        return self.agreement()

    def agreement(self) -> dict[str, Any] | None:
        """Agreement and Cohen's kappa of the labels so far (judge-check's numbers; the
        disagreements themselves stay off the blind page)."""
        if not self.path.is_file():
            return None
        from pytest_skilllift.judge.agreement import LabelError, check_week

        try:
            report = check_week(self.week_dir, self.path)
        except LabelError as err:
            return {"n": 0, "agreement": None, "kappa": None, "state": str(err)}
        overall = report["overall"]
        return {"n": overall["n"], "agreement": overall["agreement"]["rate"],
                "kappa": overall["kappa"], "state": report["state"],
                "unmatched": len(report["unmatched"])}
