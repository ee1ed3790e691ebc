"""``skilllift calibrate``: the judge's self-agreement check (qdrant/skills SCORING.md,
"Grading: The Judge").

Grades one run's final answer N times (each sample sees its own shuffle), then reports per
item whether every sample agreed, and the share of must items that were unanimous against
the bar that justifies a single judge sample per item (>= 95% on musts). The methodology
re-runs it "across a handful of transcripts": ``--run`` may be given several times, and
``--runs K`` picks K graded runs of the week at random (``--seed``).

Inputs come from the week directory: ``<week>/<run_id>/run.json`` (written by the run; its
``prompt_path`` names the prompt file, its ``final_answer`` is the graded text) and, when the
answer is not recorded there, the transcript ``<week>/<run_id>/stdout.txt``.
The report is printed and written to ``<week>/<run_id>/calibration.json``; every calibrated
run is also kept in ``<week>/calibration.json`` with a summary over all of them (per item type:
items, unanimous, split, flip rate; the must share against the bar), which the scorecard shows.

Exit status: 0 when the must share meets the bar, 1 when it does not, 2 when calibration
could not be done (missing inputs, fewer than two samples graded).
"""

from __future__ import annotations

import json
import os
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_skilllift.judge.protocol import Grader
from pytest_skilllift.model import RubricItem
from pytest_skilllift.week.columns import ITEM_TYPES
from pytest_skilllift.week.files import (
    CALIBRATION_FILE,
    GRADES_FILE,
    OK,
    RUN_FILE,
    STDOUT_FILE,
    atomic_write_json,
)

#: Share of must items that must come back unanimous for one judge sample to stand.
MUST_UNANIMITY_BAR = 0.95


class CalibrationError(Exception):
    """Calibration cannot run; the message says what is missing."""


@dataclass
class ItemAgreement:
    """One item's verdicts across the samples that graded it."""

    item: RubricItem
    verdicts: list[str] = field(default_factory=list)

    def status(self, graded_samples: int) -> str:
        """``unanimous``, ``split`` or ``incomplete`` (ungraded in some sample: not counted)."""
        if len(self.verdicts) < graded_samples:
            return "incomplete"
        return "unanimous" if len(set(self.verdicts)) == 1 else "split"


@dataclass
class Calibration:
    """The outcome of one calibration."""

    run_id: str
    judge_model: str
    samples: int
    graded_samples: int
    items: list[ItemAgreement]
    sample_errors: list[str]
    cost_usd: float
    bar: float = MUST_UNANIMITY_BAR

    def _musts(self, status: str) -> int:
        return sum(1 for a in self.items
                   if a.item.type == "must" and a.status(self.graded_samples) == status)

    @property
    def must_share(self) -> float | None:
        """Unanimous musts over musts graded in every sample (None when there are none)."""
        counted = self._musts("unanimous") + self._musts("split")
        return self._musts("unanimous") / counted if counted else None

    @property
    def passed(self) -> bool:
        """Whether the must items' agreement share reaches the bar."""
        share = self.must_share
        return share is not None and share >= self.bar

    def to_json(self) -> dict[str, Any]:
        """The run's calibration as calibration.json stores it."""
        return {
            "run_id": self.run_id, "judge_model": self.judge_model, "samples": self.samples,
            "graded_samples": self.graded_samples, "sample_errors": self.sample_errors,
            "cost_usd": round(self.cost_usd, 6), "bar": self.bar,
            "must_unanimous_share": self.must_share, "passed": self.passed,
            "items": [{"item": a.item.key, "type": a.item.type, "text": a.item.text,
                       "verdicts": a.verdicts, "status": a.status(self.graded_samples)}
                      for a in self.items],
        }

    def lines(self) -> list[str]:
        """The human report."""
        out = [f"calibration of {self.run_id}: {self.graded_samples} of {self.samples} samples "
               f"graded by {self.judge_model} (cost ${self.cost_usd:.4f})"]
        out += [f"  sample error: {e}" for e in self.sample_errors]
        for a in self.items:
            status = a.status(self.graded_samples)
            out.append(f"  {a.item.key:<9} {status:<10} {' '.join(a.verdicts) or '-':<28} "
                       f"{a.item.text[:60]}")
        counted = self._musts("unanimous") + self._musts("split")
        share = self.must_share
        shown = "n/a" if share is None else f"{share:.0%}"
        verdict = "PASS" if self.passed else "FAIL"
        out.append(f"musts unanimous: {self._musts('unanimous')}/{counted} = {shown} "
                   f"(bar >= {self.bar:.0%}) -> {verdict}")
        incomplete = self._musts("incomplete")
        if incomplete:
            out.append(f"  {incomplete} must item(s) ungraded in some sample, not counted")
        return out


def read_prompt(path: Path) -> tuple[str, tuple[RubricItem, ...]]:
    """The prompt text and rubric of a prompt file (1-based indices within each type)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        counters = dict.fromkeys(ITEM_TYPES, 0)
        items = []
        for entry in data["rubric"]:
            counters[entry["type"]] += 1
            items.append(RubricItem(entry["type"], str(entry["text"]).strip(),
                                    counters[entry["type"]]))
        return str(data["prompt"]), tuple(items)
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise CalibrationError(f"cannot read the prompt file {path}: {err!r}") from None


#: The final answer parsed from a run's transcript (``trace.transcript.final_answer``: the
#: commands hand it in, so the judge never imports the run layer).
TranscriptAnswer = Callable[[Path], str]


def read_answer(run_dir: Path, record: dict[str, Any],
                transcript_answer: TranscriptAnswer) -> str:
    """The run's final answer: from ``run.json``, else parsed from the transcript."""
    answer = record.get("final_answer")
    if isinstance(answer, str) and answer.strip():
        return answer
    stdout = run_dir / STDOUT_FILE
    if os.path.islink(run_dir) or os.path.islink(stdout):
        # never read through: a link may name any file of the host
        raise CalibrationError(f"{stdout if os.path.islink(stdout) else run_dir} is a symbolic "
                               "link; nothing in a week directory is followed out of it")
    if not stdout.is_file():
        raise CalibrationError(f"{run_dir} has no final_answer in {RUN_FILE} and no "
                               f"{STDOUT_FILE}")
    answer = transcript_answer(stdout)
    if not answer.strip():
        raise CalibrationError(f"{stdout} holds no final answer to grade")
    return answer


def calibrate(week_dir: Path, run_id: str, samples: int, judge: Grader,
              bar: float = MUST_UNANIMITY_BAR, *,
              transcript_answer: TranscriptAnswer) -> Calibration:
    """Grade the run's answer ``samples`` times and tally agreement per item."""
    if samples < 2:
        raise CalibrationError(f"--samples must be at least 2, not {samples}")
    run_dir = week_dir / run_id
    try:
        record = json.loads((run_dir / RUN_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise CalibrationError(f"cannot read {run_dir / RUN_FILE}: {err!r}") from None
    prompt_path = record.get("prompt_path")
    if not prompt_path:
        raise CalibrationError(f"{run_dir / RUN_FILE} records no prompt_path")
    prompt_text, items = read_prompt(Path(prompt_path))
    answer = read_answer(run_dir, record, transcript_answer)

    agreement = [ItemAgreement(item) for item in items]
    errors: list[str] = []
    graded = 0
    cost = 0.0
    for k in range(1, samples + 1):
        print(f"sample {k}/{samples} ...", file=sys.stderr, flush=True)
        # A distinct seed per sample: order effects are part of what calibration measures.
        result = judge.grade(prompt_text, answer, items, f"{run_id}#calibrate-{k}")
        cost += result.cost_usd
        if result.error is not None:
            errors.append(f"sample {k}: {result.error}")  # excluded, never counted as a flip
            continue
        graded += 1
        by_item = {v.item: v.verdict for v in result.verdicts}
        for entry in agreement:
            if entry.item in by_item:
                entry.verdicts.append(by_item[entry.item])
    return Calibration(run_id=run_id, judge_model=judge.model, samples=samples,
                       graded_samples=graded, items=agreement, sample_errors=errors,
                       cost_usd=cost, bar=bar)


def calibration_summary(runs: dict[str, dict[str, Any]],
                        bar: float = MUST_UNANIMITY_BAR) -> dict[str, Any]:
    """Summary over calibrated runs (their ``Calibration.to_json()``): per item type the items
    graded in every sample, how many were unanimous or split, and the flip rate (split share);
    the share of unanimous musts against ``bar``. Pure."""
    per_type: dict[str, dict[str, Any]] = {}
    for item_type in ITEM_TYPES:
        statuses = [i["status"] for r in runs.values() for i in r.get("items", [])
                    if i.get("type") == item_type]
        unanimous, split = statuses.count("unanimous"), statuses.count("split")
        counted = unanimous + split
        per_type[item_type] = {
            "items": counted, "unanimous": unanimous, "split": split,
            "incomplete": statuses.count("incomplete"),
            "flip_rate": split / counted if counted else None,
        }
    musts = per_type["must"]
    share = musts["unanimous"] / musts["items"] if musts["items"] else None
    return {
        "runs": len(runs), "run_ids": sorted(runs),
        "samples": sorted({int(r.get("graded_samples", 0)) for r in runs.values()}),
        "judge_models": sorted({str(r.get("judge_model", "")) for r in runs.values()} - {""}),
        "by_type": per_type, "must_unanimous_share": share, "bar": bar,
        "passed": share is not None and share >= bar,
    }


def record_week_calibration(week: Path, result: Calibration) -> dict[str, Any]:
    """Upsert one run's calibration into ``<week>/calibration.json``; returns the file's dict."""
    runs = read_week_calibration(week).get("runs")
    runs = runs if isinstance(runs, dict) else {}
    runs[result.run_id] = result.to_json()
    data = {"runs": runs, "summary": calibration_summary(runs, result.bar)}
    atomic_write_json(week / CALIBRATION_FILE, data)
    return data


def earlier_calibration(week: Path, run_id: str, judge_model: str, samples: int,
                        bar: float) -> dict[str, Any] | None:
    """The run's entry in ``<week>/calibration.json`` when an earlier pass (one that was
    interrupted, say) calibrated it the same way — judge model, samples, bar — with at least
    two samples graded; else None. Resuming keeps it instead of paying for it again."""
    runs = read_week_calibration(week).get("runs")
    entry = runs.get(run_id) if isinstance(runs, dict) else None
    if (isinstance(entry, dict) and entry.get("judge_model") == judge_model
            and entry.get("samples") == samples and entry.get("bar") == bar
            and isinstance(entry.get("graded_samples"), int) and entry["graded_samples"] >= 2):
        return entry
    return None


def read_week_calibration(week: Path) -> dict[str, Any]:
    """``<week>/calibration.json`` as a dict (``{}`` when absent or unreadable)."""
    try:
        data = json.loads((week / CALIBRATION_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def pick_runs(week: Path, count: int, seed: str) -> list[str]:
    """``count`` graded ``ok`` runs of the week, drawn with ``random.Random(seed)``."""
    eligible = []
    for path in sorted(week.glob(f"*/{RUN_FILE}")):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if (isinstance(record, dict) and record.get("run_status", OK) == OK
                and (path.parent / GRADES_FILE).is_file()):
            eligible.append(path.parent.name)
    return sorted(random.Random(seed).sample(eligible, min(count, len(eligible))))
