"""Checks of our own over every run of the week (collected with the prompts).

A test that takes ``skill_lift_run`` runs once per (prompt, model, condition, rep) — ids end
in ``[<prompt>::<model>::<condition>::r<rep>]`` — on the same run its rubric items grade: no
extra agent call. An excluded run skips the check with the reason. Pass rates per model and
arm, and the with − no difference, are in the scorecard's "Custom checks" section.
"""

from __future__ import annotations

import pytest

from pytest_skilllift.run.view import SkillLiftRun


def test_answer_is_short(skill_lift_run: SkillLiftRun) -> None:
    """A reader should get the answer in under a minute: 350 words at most."""
    words = len(skill_lift_run.final_answer.split())
    assert 0 < words <= 350, f"{words} words"


@pytest.mark.skill_lift(conditions="with-skill")  # narrows: only runs that had the skill
def test_installed_skill_is_used(skill_lift_run: SkillLiftRun) -> None:
    """A skill that is installed but never reached is a trigger miss, whatever the grades."""
    assert skill_lift_run.signals.skill_activation != "none", (
        f"the {skill_lift_run.family} skill was installed but never used")
