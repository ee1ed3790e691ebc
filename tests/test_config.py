"""Settings: one object, command line over ini, clear errors, safe to ship to workers."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.config import OPTIONS, Option, Settings, SettingsError, parse_models


def build(**overrides: Any) -> Settings:
    values = {o.name: o.default for o in OPTIONS}
    values.update(overrides)
    return Settings.from_values(lambda o: values[o.name], enabled=True, rootdir=Path("/proj"),
                                today=dt.date(2026, 8, 8))


def test_models_parse_labels_and_bare_ids() -> None:
    assert parse_models("sonnet=claude-sonnet-4-5, haiku") == (
        ("sonnet", "claude-sonnet-4-5"), ("haiku", "haiku"))
    for bad in ("", "a=x,a=y", "a:b=x"):
        with pytest.raises(SettingsError):
            parse_models(bad)


def test_defaults_follow_the_methodology() -> None:
    s = build()
    assert s.reps == 2 and s.permission_mode == "dontAsk" and s.max_budget_usd == 2.0
    assert s.allowed_tools == ("Skill", "WebSearch", "WebFetch", "Read", "Grep", "Glob", "Bash")
    assert s.out_dir == Path("/proj/evals/weekly/20260808") and s.week == "20260808"
    assert s.prompts_dir == Path("/proj/evals/test-prompts")


def test_judge_defaults_one_sample_and_reject() -> None:
    s = build()
    assert (s.judge_samples, s.evidence) == (1, "reject")
    assert (build(**{"judge-samples": 2, "evidence": "flag"}).judge_samples,
            build(evidence="flag").evidence) == (2, "flag")


def test_demo_has_its_own_tree_and_models() -> None:
    s = build(demo=True)
    assert s.enabled and s.out_dir == Path("/proj/evals/weekly-demo/20260808")
    assert [m[0] for m in s.models] == ["sonnet", "haiku"]


@pytest.mark.parametrize(("key", "value", "match"), [
    ("reps", 0, "at least 1"),
    ("min-coverage", 1.5, "within"),
    ("runner", "k8s", "not one of"),
    ("judge-samples", 0, "judge-samples must be at least 1"),
    ("evidence", "trust", "not one of"),
])
def test_bad_values_are_usage_errors(key: str, value: Any, match: str) -> None:
    with pytest.raises(SettingsError, match=match):
        build(**{key: value})


def test_demo_in_docker_needs_host_network() -> None:
    with pytest.raises(SettingsError, match="docker-network=host"):
        build(demo=True, runner="docker")


def test_wire_round_trip_is_lossless() -> None:
    s = build(models="a=x,b", **{"max-turns": 3})
    assert Settings.from_wire(s.to_wire()) == s


def test_every_option_has_flag_and_ini_names() -> None:
    o = Option("max-turns", "h")
    assert o.flag == "--skill-lift-max-turns" and o.dest == "skill_lift_max_turns"
