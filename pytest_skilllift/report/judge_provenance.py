"""Which judge graded the week: model, prompt version, and whether a conftest overrode it.

Every graded run's ``grades.json`` records the judge model that answered, the judge prompt's
version and whether the ``skill_lift_judge`` fixture was overridden (and by what class). This
module tallies them for the scorecard's Provenance section (``provenance.judge`` in
scorecard.json) and renders its lines. A week written by another tool has no ``grades.json``
and shows the judge as unknown. Pure: no pytest.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

__all__ = ["build", "render_lines"]

GRADES_FILE = "grades.json"


def build(week_dir: Path) -> dict[str, Any]:
    """``{graded_runs, models, prompt_versions, overridden_runs, overrides}`` (counts by
    value; an unrecorded prompt version counts under ``"unknown"``)."""
    models: Counter[str] = Counter()
    versions: Counter[str] = Counter()
    overrides: Counter[str] = Counter()
    graded = overridden = 0
    try:
        entries = list(os.scandir(week_dir))
    except OSError:
        entries = []
    for entry in entries:
        if not entry.is_dir():
            continue
        try:
            with open(os.path.join(entry.path, GRADES_FILE), encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict):
            continue
        graded += 1
        models[str(data.get("judge_model") or "unknown")] += 1
        versions[str(data.get("judge_prompt_version") or "unknown")] += 1
        if data.get("judge_overridden"):
            overridden += 1
            overrides[str(data.get("judge_impl") or "unknown")] += 1
    return {"graded_runs": graded, "models": dict(sorted(models.items())),
            "prompt_versions": dict(sorted(versions.items())),
            "overridden_runs": overridden, "overrides": dict(sorted(overrides.items()))}


def _counts(values: dict[str, int]) -> str:
    return ", ".join(f"`{v}` ({n} runs)" for v, n in values.items()) or "_(unknown)_"


def render_lines(judge: dict[str, Any] | None) -> list[str]:
    """Bullet lines for the Provenance section (none when no run of the week was graded
    by this tool)."""
    if not judge or not judge.get("graded_runs"):
        return []
    lines = [f"- judge model(s): {_counts(judge['models'])}",
             f"- judge prompt version(s): {_counts(judge['prompt_versions'])}"]
    if judge.get("overridden_runs"):
        lines.append(f"- ⚠ judge overridden (a `skill_lift_judge` fixture in conftest.py) for "
                     f"{judge['overridden_runs']} of {judge['graded_runs']} graded runs: "
                     + ", ".join(f"`{k}`" for k in judge.get("overrides", {})))
    else:
        lines.append("- judge: the configured one (`skill_lift_judge` not overridden)")
    if len(judge["models"]) > 1 or len(judge["prompt_versions"]) > 1:
        lines.append("- ⚠ more than one judge model or prompt version graded this week — "
                     "grades are not all comparable.")
    return lines
