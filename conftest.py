"""An example ``conftest.py`` for your own evals — a file to copy.

The demo (``pytest --skill-lift-demo``) is left out of it, so the demo from a clone reads as
the demo from the wheel (where no conftest exists): the wrapper below applies to every other
``--skill-lift`` session started from this directory (your prompts, ``--skill-lift-dry-run``).

Two things a team usually adds on top of the prompt files:

1. Checks of its own, in plain Python, over every run: ``evals/checks/test_answers.py``
   (tests that take the ``skill_lift_run`` fixture; their pass rates land in the scorecard's
   "Custom checks" section).
2. A say in how answers are graded: the ``skill_lift_judge`` fixture below. Every rubric item
   of the session is graded through it — also under ``-n`` — so wrapping it here (logging,
   caching) or replacing it (another judge model) changes how the whole week is graded, and
   the scorecard's Provenance section says the judge was overridden.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

log = logging.getLogger("skilllift.example")


class LoggingJudge:
    """Grades exactly as the judge it wraps, and logs one line per graded run
    (see them with ``--log-cli-level=INFO``)."""

    def __init__(self, judge: Any) -> None:
        self.judge = judge

    def __getattr__(self, name: str) -> Any:
        # model, prompt_version, …: the wrapped judge's, so provenance stays exact.
        return getattr(self.judge, name)

    def grade(self, prompt: str, answer: str, rubric: Any, **kwargs: Any) -> Any:
        result = self.judge.grade(prompt, answer, rubric, **kwargs)
        log.info("judge %s: %d items graded, %d ungraded, $%.4f", result.model,
                 len(result.verdicts), len(result.ungraded), result.cost_usd)
        return result


@pytest.fixture(scope="session")
def skill_lift_judge(skill_lift_judge: Any, pytestconfig: pytest.Config) -> Any:
    """Override by wrapping: request the fixture you replace, return your own object (the
    configured judge itself for the demo, which then says "not overridden", as from the
    wheel)."""
    if pytestconfig.getoption("skill_lift_demo", default=False):
        return skill_lift_judge
    return LoggingJudge(skill_lift_judge)
