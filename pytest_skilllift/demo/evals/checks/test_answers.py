"""Checks of our own over every run of the week (collected with the prompts).

A test that takes ``skill_lift_run`` runs once per (prompt, model, condition, rep) — ids end
in ``[<prompt>::<model>::<condition>::r<rep>]`` — on the same run its rubric items grade: no
extra agent call. An excluded run skips the check with the reason. Pass rates per model and
arm, and the with − no difference, are in the scorecard's "Custom checks" section.
"""

from __future__ import annotations

import pytest

from pytest_skilllift import SkillLiftRun


def test_answer_is_short(skill_lift_run: SkillLiftRun) -> None:
    """A reader should get the answer in under a minute: 350 words at most."""
    words = len(skill_lift_run.final_answer.split())
    assert 0 < words <= 350, f"{words} words"


@pytest.mark.skill_lift(conditions="with-skill")  # narrows: only runs that had the skill
def test_skill_costs_few_turns(skill_lift_run: SkillLiftRun) -> None:
    """Reading a skill costs turns; a skill that sends the agent on a long walk is a smell.
    (Whether the skill was reached at all is the ``…::invoked`` item's question.)"""
    turns = skill_lift_run.signals.num_turns
    if turns is None:
        pytest.skip("the CLI reported no turn count for this run")
    assert turns <= 10, f"{turns} turns with the {skill_lift_run.family} skill"
