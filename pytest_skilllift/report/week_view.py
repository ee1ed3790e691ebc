"""The week as the ``skill_lift_week`` fixture gives it to a user's whole-week checks.

Plain data over a summarized week (its numbers are computed by ``report/summarize.py``);
exported from the package root, so it imports nothing of the package.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


class SkillLiftWeek:
    """The week as ``skill_lift_week`` gives it: ``path`` (the week directory), ``data`` (the
    scorecard.json dict: ``models``, ``cells``, ``prompts``, ``coverage``…), ``summary`` (the
    full :class:`pytest_skilllift.report.summarize.Summary`)."""

    # ``summary`` is a ``report.summarize.Summary``, left ``Any``: this class is exported from
    # the package root, and naming Summary, even for the type only, closes an import cycle
    # through the root (modules below the summarizer read its ``__version__``), which
    # tests/test_layout.py refuses.
    def __init__(self, path: Path, summary: Any) -> None:
        self.path = path
        self.summary = summary
        self.data: dict[str, Any] = summary.data

    @property
    def models(self) -> dict[str, Any]:
        """Per model label: ``must_no``, ``must_with``, ``must_lift``, ``must_lift_se``…"""
        return dict(self.data.get("models", {}))

    def lift(self, model: str) -> float | None:
        """The model's must-coverage lift (with − no), None when it cannot be computed."""
        value = self.data.get("models", {}).get(model, {}).get("must_lift")
        return None if value is None else float(value)
