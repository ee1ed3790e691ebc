"""The week as the ``skill_lift_week`` fixture gives it to a user's whole-week checks.

Plain data over a summarized week (its numbers are computed by ``report/summarize.py``);
exported from the package root, so it imports nothing of the package.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:  # for the type only: at run time this module imports nothing of the package
    from pytest_skilllift.report.summarize import Summary


class SkillLiftWeek:
    """The week as ``skill_lift_week`` gives it: ``path`` (the week directory), ``data`` (the
    scorecard.json dict: ``models``, ``cells``, ``prompts``, ``coverage``…), ``summary`` (the
    full :class:`pytest_skilllift.report.summarize.Summary`)."""

    def __init__(self, path: Path, summary: Summary) -> None:
        self.path = path
        self.summary = summary
        # the scorecard as the plain JSON dict it is on disk: a user's check reads any key,
        # a hook's extra sections too, so not the ``Scorecard`` TypedDict of the builders
        self.data = cast("dict[str, Any]", summary.data)

    @property
    def models(self) -> dict[str, Any]:
        """Per model label: ``must_no``, ``must_with``, ``must_lift``, ``must_lift_se``…"""
        return dict(self.data.get("models", {}))

    def lift(self, model: str) -> float | None:
        """The model's must-coverage lift (with − no), None when it cannot be computed."""
        value = self.data.get("models", {}).get(model, {}).get("must_lift")
        return None if value is None else float(value)
