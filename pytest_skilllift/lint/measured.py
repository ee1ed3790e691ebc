"""Ground two model-based dimensions in a real week of lift runs (``--week DIR``).

PluginEval fills triggering_accuracy and output_quality from simulated prompts (Layer 3,
Monte Carlo). This project already runs every prompt with and without the skill, so it measures
them instead, and the measured values take the Monte Carlo column of the blend table:

* triggering_accuracy ← the activation rate of the skill family's with-skill runs
  (Σ activated_runs / Σ with_skill_runs over the family's prompts), with its Wilson 95 % CI.
* output_quality ← the family's mean must-coverage lift ``must_with − must_no`` over its
  (prompt, model) rows, mapped from [−1, 1] to [0, 1] as ``0.5 + lift / 2`` (no lift = 0.5,
  which grades F: a skill that does not improve answers has not earned a pass).

Input: ``<week>/scorecard.json`` (keys ``activation[]`` and ``prompts[]``), or, when only
``manifest.csv`` exists,
``pytest_skilllift.report.summarize.summarize_week(week, write=False).data``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_skilllift.intervals import wilson_bounds
from pytest_skilllift.week.files import MANIFEST_CSV, SCORECARD_JSON


class WeekError(Exception):
    """The week directory cannot provide measured data (message says why)."""


def load_scorecard(week_dir: Path) -> dict[str, Any]:
    """The scorecard data of a week: scorecard.json, or summarised lazily from manifest.csv."""
    week_dir = Path(week_dir)
    if not week_dir.is_dir():
        raise WeekError(f"--week {week_dir}: not a directory")
    card = week_dir / SCORECARD_JSON
    if card.is_file():
        try:
            data = json.loads(card.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise WeekError(f"{card}: unreadable scorecard ({exc})") from exc
        if not isinstance(data, dict):
            raise WeekError(f"{card}: expected a JSON object")
        return data
    if (week_dir / MANIFEST_CSV).is_file():
        try:
            from pytest_skilllift.report.summarize import summarize_week
        except ImportError as exc:
            raise WeekError(
                f"{week_dir} has no scorecard.json and pytest_skilllift.report.summarize is not "
                f"available to build one ({exc})"
            ) from exc
        result = summarize_week(week_dir, write=False)
        data = getattr(result, "data", result)
        if not isinstance(data, Mapping):
            raise WeekError(f"summarize_week({week_dir}) returned no scorecard data")
        return dict(data)
    raise WeekError(f"{week_dir}: neither scorecard.json nor manifest.csv found")


@dataclass(frozen=True)
class Measured:
    """What one week says about one skill family."""

    family: str
    with_skill_runs: int
    activated_runs: int
    activation_ci: tuple[float, float] | None
    reached_leaf: float | None
    activation_prompts: int
    must_lift: float | None
    lift_rows: int

    @property
    def activation_rate(self) -> float | None:
        """Activated / with-skill runs (None with no runs)."""
        return self.activated_runs / self.with_skill_runs if self.with_skill_runs else None

    @property
    def output_quality(self) -> float | None:
        """``0.5 + lift / 2`` clamped to [0, 1] (None without lift rows)."""
        if self.must_lift is None:
            return None
        return min(1.0, max(0.0, 0.5 + self.must_lift / 2.0))

    def layer_scores(self) -> dict[str, float]:
        """Dimension -> measured score, for the dimensions this week can measure."""
        out: dict[str, float] = {}
        if self.activation_rate is not None:
            out["triggering_accuracy"] = self.activation_rate
        if self.output_quality is not None:
            out["output_quality"] = self.output_quality
        return out

    def to_json(self) -> dict[str, Any]:
        """The ``measured`` layer's detail in the JSON report."""
        rate = self.activation_rate
        return {
            "family": self.family,
            "activation_rate": None if rate is None else round(rate, 4),
            "activation_ci95": None
            if self.activation_ci is None
            else [round(self.activation_ci[0], 4), round(self.activation_ci[1], 4)],
            "activated_runs": self.activated_runs,
            "with_skill_runs": self.with_skill_runs,
            "reached_leaf": self.reached_leaf,
            "activation_prompts": self.activation_prompts,
            "must_lift": None if self.must_lift is None else round(self.must_lift, 4),
            "lift_rows": self.lift_rows,
            "output_quality": None
            if self.output_quality is None
            else round(self.output_quality, 4),
        }


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def measured_for_family(data: Mapping[str, Any], family: str) -> Measured | None:
    """Aggregate the week's activation and lift rows for ``family`` (None if it has none)."""
    activation = [
        a
        for a in data.get("activation") or []
        if isinstance(a, Mapping) and a.get("skill_family") == family
    ]
    prompts_of_family = {a.get("prompt") for a in activation}
    runs = sum(_int(a.get("with_skill_runs")) for a in activation)
    hits = sum(_int(a.get("activated_runs")) for a in activation)
    leaf_values = [a.get("reached_leaf") for a in activation if "reached_leaf" in a]
    # reached_leaf is a run count in the contract; tolerate a rate (float) without truncating it
    nums = [v for v in leaf_values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    reached: float | None = sum(nums) if nums else None
    lifts: list[float] = []
    for row in data.get("prompts") or []:
        if not isinstance(row, Mapping):
            continue
        in_family = row.get("skill_family") == family or row.get("prompt") in prompts_of_family
        lift = row.get("must_lift")
        if in_family and isinstance(lift, (int, float)) and math.isfinite(lift):
            lifts.append(float(lift))
    if not activation and not lifts:
        return None
    return Measured(
        family=family,
        with_skill_runs=runs,
        activated_runs=hits,
        activation_ci=wilson_bounds(hits, runs),
        reached_leaf=reached,
        activation_prompts=len(prompts_of_family),
        must_lift=sum(lifts) / len(lifts) if lifts else None,
        lift_rows=len(lifts),
    )
