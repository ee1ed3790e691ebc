"""Settings: one object, command line over ini, clear errors, safe to ship to workers."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.config import OPTIONS, Option, Settings, SettingsError, parse_models
from pytest_skilllift.model import split_agent


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
    assert [m[0] for m in s.models] == ["sonnet", "haiku", "gpt", "flash"]
    assert [split_agent(m)[0] for _, m in s.models] == [
        "claude-code", "claude-code", "codex", "gemini-cli"]
    # Only the demo's own other-agent labels may be left out for a missing CLI …
    assert s.optional_labels == ("gpt", "flash")
    # … never labels a user asked for, also in the demo.
    assert build(demo=True, models="gpt=codex:gpt-5.5").optional_labels == ()
    assert build(models="gpt=codex:gpt-5.5").optional_labels == ()


def test_an_optional_label_left_out_is_named_and_survives_the_wire() -> None:
    s = build(demo=True).without_labels({"gpt": "codex CLI not installed",
                                         "sonnet": "never optional"})
    assert [m[0] for m in s.models] == ["sonnet", "haiku", "flash"]
    assert s.labels_not_run == ("label gpt not run: codex CLI not installed",)
    back = Settings.from_wire(s.to_wire())
    assert back == s


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


def test_each_default_is_stated_once() -> None:
    """OPTIONS holds the defaults; help shows them from there, Settings has none of its own,
    and the run defaults AgentConfig falls back on are the same values."""
    import dataclasses

    from pytest_skilllift.model import AgentConfig

    for o in OPTIONS:
        assert "default" not in o.help.lower(), f"{o.flag}: say the default in Option.default"
    assert Option("reps", "Repetitions.", "int", 2).help_text == "Repetitions. (default: 2)"
    assert Option("t", "Timeout.", "float", 600.0).help_text == "Timeout. (default: 600)"
    assert Option("x", "Flag.", "bool", False).help_text == "Flag."
    option_fields = {f.name for f in dataclasses.fields(Settings)} - {  # set by the session
        "base_url", "judge_url", "judge_token", "extra_env", "optional_labels",
        "labels_not_run"}
    for f in dataclasses.fields(Settings):
        if f.name in option_fields:
            assert f.default is dataclasses.MISSING, f"Settings.{f.name} restates a default"
    s, agent = build(), AgentConfig(claude_path="claude", skills_root=Path("."))
    assert (s.allowed_tools, s.permission_mode, s.max_budget_usd, s.timeout_s) == (
        agent.allowed_tools, agent.permission_mode, agent.max_budget_usd, agent.timeout_s)


def test_conditions_default_to_the_lift_arms_and_keep_their_order() -> None:
    assert build().conditions == ("no-skill", "with-skill")
    assert build(conditions="with-all, no-skill,with-skill").conditions == (
        "no-skill", "with-skill", "with-all")
    assert build(aa=True).conditions == ("no-skill", "no-skill-b")
    assert build(aa=True, conditions="no-skill,no-skill-b").conditions == (
        "no-skill", "no-skill-b")
    s = build(conditions="no-skill,with-skill,with-all")
    assert Settings.from_wire(s.to_wire()) == s


@pytest.mark.parametrize(("conditions", "aa", "match"), [
    ("no-skill,with-skills", False, "unknown arm 'with-skills'"),
    ("with-skill,with-all", False, "needs no-skill"),
    ("no-skill", False, "at least one other arm"),
    ("no-skill,with-skill,no-skill", False, "given twice"),
    ("no-skill,with-skill,with-all", True, "--skill-lift-aa runs the arms no-skill,no-skill-b"),
])
def test_bad_conditions_say_what_to_write(conditions: str, aa: bool, match: str) -> None:
    with pytest.raises(SettingsError, match=match):
        build(conditions=conditions, aa=aa)


def test_a_label_names_its_agent_and_no_prefix_is_claude_code() -> None:
    models = parse_models("sonnet=claude-sonnet-4-5,gpt=codex:gpt-5.5,"
                          "flash=gemini-cli:gemini-2.5-flash,"
                          "oc=opencode:anthropic/claude-sonnet-4-5,"
                          "cc=claude-code:claude-haiku-4-5,br=us.anthropic.claude-v2:0")
    assert models == (("sonnet", "claude-sonnet-4-5"), ("gpt", "codex:gpt-5.5"),
                      ("flash", "gemini-cli:gemini-2.5-flash"),
                      ("oc", "opencode:anthropic/claude-sonnet-4-5"),
                      # an explicit claude-code prefix means the same week as none
                      ("cc", "claude-haiku-4-5"),
                      # a Bedrock id's ':' is not an agent
                      ("br", "us.anthropic.claude-v2:0"))
    assert [split_agent(m) for _, m in models][1:3] == [("codex", "gpt-5.5"),
                                                        ("gemini-cli", "gemini-2.5-flash")]


@pytest.mark.parametrize("text,message", [
    ("g=gemini:gemini-2.5-flash", "names agent 'gemini', which is not one of claude-code, "
                                  "codex, gemini-cli, opencode"),
    ("g=codex:", "names agent 'codex' but no model; write g=codex:MODEL"),
])
def test_a_bad_agent_prefix_names_the_agents(text: str, message: str) -> None:
    with pytest.raises(SettingsError) as err:
        parse_models(text)
    assert message in str(err.value)
