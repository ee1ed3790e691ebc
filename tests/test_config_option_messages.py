"""Errors about option values name where the value came from: an ini value names its ini key
(and the ini file) with the shape it must have, a command-line value names its flag; and
``--skill-lift-models`` refuses empty model ids, empty labels and duplicate labels."""

from __future__ import annotations

import pytest

from pytest_skilllift.config import SettingsError, parse_models

pytest_plugins = ["pytester"]


def _usage_error(pytester: pytest.Pytester, *args: str) -> str:
    """Run a session that must stop at a usage error; its stderr."""
    result = pytester.runpytest_subprocess("--skill-lift", "-p", "no:cacheprovider", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    return result.stderr.str()


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("skill_lift_reps = two", "skill_lift_reps in pytest.ini: 'two' does not parse; write a "
         "whole number, e.g. skill_lift_reps = 2"),
        ("skill_lift_timeout = soon", "skill_lift_timeout in pytest.ini: 'soon' does not parse; "
         "write a number"),
        ("skill_lift_fresh = maybe", "skill_lift_fresh in pytest.ini: invalid truth value "
         "'maybe'; write true or false"),
        ("skill_lift_reps = 0", "skill_lift_reps in pytest.ini must be at least 1, got 0"),
        ("skill_lift_runner = dockr", "skill_lift_runner in pytest.ini: 'dockr' is not one of "
         "local, docker"),
        ("skill_lift_models = sonnet=", "skill_lift_models in pytest.ini: 'sonnet=' in 'sonnet=' "
         "has an empty model id"),
        ("skill_lift_conditions = no-skill,with-skil", "skill_lift_conditions in pytest.ini: "
         "unknown arm 'with-skil'"),
        ("skill_lift_shard = 5/4", "skill_lift_shard in pytest.ini: '5/4': I must be within"),
    ],
)
def test_a_bad_ini_value_names_the_ini_key_and_the_shape(
    pytester: pytest.Pytester, line: str, expected: str
) -> None:
    pytester.makefile(".ini", pytest=f"[pytest]\n{line}\n")
    err = _usage_error(pytester)
    assert expected in err
    assert "--skill-lift-" not in err  # the user wrote no flag: naming one misleads


@pytest.mark.parametrize(
    ("flag", "expected"),
    [
        ("--skill-lift-reps=two", "argument --skill-lift-reps: invalid int value: 'two'"),
        ("--skill-lift-reps=0", "--skill-lift-reps must be at least 1, got 0"),
        ("--skill-lift-runner=dockr", "--skill-lift-runner: invalid choice: 'dockr' (choose from"),
        ("--skill-lift-models=sonnet=", "--skill-lift-models: 'sonnet=' in 'sonnet=' has an "
         "empty model id"),
    ],
)
def test_a_bad_command_line_value_names_the_flag(
    pytester: pytest.Pytester, flag: str, expected: str
) -> None:
    pytester.makefile(".ini", pytest="[pytest]\nskill_lift_reps = 3\nskill_lift_runner = local\n")
    err = _usage_error(pytester, flag)
    assert expected in err
    assert "in pytest.ini" not in err


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("sonnet=", "'sonnet=' in 'sonnet=' has an empty model id after '='"),
        ("sonnet=claude-sonnet-4-5,haiku= ", "'haiku=' in 'sonnet=claude-sonnet-4-5,haiku= ' "
         "has an empty model id"),
        ("=x", "'=x' in '=x' has no label before '='"),
        ("sonnet=a, =b", "'=b' in 'sonnet=a, =b' has no label"),
        ("sonnet=a,sonnet=b", "label 'sonnet' is given twice in 'sonnet=a,sonnet=b'"),
        ("haiku,haiku", "label 'haiku' is given twice"),
        (",", "no model given; write label=model_id"),
    ],
)
def test_models_refuse_empty_ids_empty_labels_and_duplicates(text: str, expected: str) -> None:
    with pytest.raises(SettingsError) as err:
        parse_models(text)
    assert str(err.value).startswith("--skill-lift-models: ")
    assert expected in str(err.value)
    assert "e.g. sonnet=claude-sonnet-4-5,haiku" in str(err.value)  # the shape that works


def test_models_still_take_bare_labels_and_pairs() -> None:
    assert parse_models("sonnet=claude-sonnet-4-5, haiku") == (
        ("sonnet", "claude-sonnet-4-5"), ("haiku", "haiku"))


def test_models_error_names_the_setting_given() -> None:
    with pytest.raises(SettingsError, match=r"^skill_lift_models in tox\.ini: '=x'"):
        parse_models("=x", where="skill_lift_models in tox.ini")
