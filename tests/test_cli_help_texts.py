"""Every ``--help`` a user reads obeys the same rules, so new options and subcommands do too:
no literal ``%%``, one name for the week argument (WEEK_DIR), help on every argument, a real
metavar on every option that takes a value (never argparse's upper-cased dest or ``VALUE``),
choices listed as ``{a,b}``, and ``skilllift --help`` ends with examples."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator

import pytest

from pytest_skilllift.cli.main import build_parser
from pytest_skilllift.config import OPTIONS

pytest_plugins = ["pytester"]

WEEK_NAME = "WEEK_DIR"


def _parsers() -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """``skilllift`` and every subcommand at any depth (``image build``, ``corpus init``)."""
    todo = [("skilllift", build_parser())]
    while todo:
        name, parser = todo.pop()
        yield name, parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                todo += [(f"{name} {sub}", p) for sub, p in action.choices.items()]


PARSERS = dict(_parsers())


def test_the_walk_reaches_every_subcommand() -> None:
    assert {"skilllift summarize", "skilllift image build", "skilllift corpus init",
            "skilllift view", "skilllift init"} <= set(PARSERS)
    assert len(PARSERS) >= 19


def _problems(name: str, parser: argparse.ArgumentParser) -> list[str]:
    text = parser.format_help()
    bad: list[str] = []
    if "%%" in text:
        bad.append("a literal %% (descriptions are not %-formatted: write one %)")
    if re.search(r"WEEKDIR|WEEK_B\b", text):
        bad.append(f"the week argument is not called {WEEK_NAME}")
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
            continue
        label = "/".join(action.option_strings) or str(action.metavar or action.dest)
        if isinstance(action, argparse._SubParsersAction):
            bad += [f"subcommand {sub!r} has no help" for sub in action.choices
                    if not any(c.dest == sub and c.help for c in action._choices_actions)]
            if not action.help:
                bad.append(f"{label}: no help")
            continue
        if not action.help:
            bad.append(f"{label}: no help")
        takes_value = action.nargs != 0
        if not takes_value:
            continue
        if action.choices is not None:
            if action.metavar is not None:
                bad.append(f"{label}: metavar {action.metavar!r} hides the choices")
            continue
        metavar = action.metavar
        if metavar is None:
            bad.append(f"{label}: no metavar (argparse would show {action.dest.upper()!r})")
        elif metavar == "VALUE" or not re.fullmatch(r"[A-Z][A-Z0-9_]*(\[,…\])?(\.[a-z]+)?",
                                                    str(metavar)):
            bad.append(f"{label}: metavar {metavar!r} is not a real one")
        elif "WEEK" in str(metavar) and not str(metavar).endswith(WEEK_NAME):
            bad.append(f"{label}: a week directory is called {WEEK_NAME}, not {metavar!r}")
    return bad


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_each_skilllift_help_obeys_the_rules(name: str) -> None:
    assert _problems(name, PARSERS[name]) == []


def test_the_rules_catch_a_bad_parser() -> None:
    p = argparse.ArgumentParser(description="95%% sure")
    p.add_argument("weekdir", metavar="WEEKDIR")
    p.add_argument("--history")
    p.add_argument("--runner", choices=["local", "docker"], metavar="R", help="where")
    problems = _problems("bad", p)
    assert any("%%" in x for x in problems)
    assert any("WEEK_DIR" in x for x in problems)
    assert "WEEKDIR: no help" in problems
    assert "--history: no metavar (argparse would show 'HISTORY')" in problems
    assert "--runner: metavar 'R' hides the choices" in problems


def test_skilllift_help_ends_with_examples(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--help"])
    out = capsys.readouterr().out
    epilog = out.split("examples:", 1)
    assert len(epilog) == 2, out
    commands = re.findall(r"^\s+(skilllift|pytest) ", epilog[1], flags=re.M)
    assert len(commands) >= 4  # each example on its own, indented line (not re-wrapped)
    assert "skilllift init" in epilog[1] and "skilllift summarize" in epilog[1]


def test_week_positional_is_called_week_dir_everywhere() -> None:
    """The subcommands that take a week directory all call it the same."""
    week_commands = ["summarize", "gate", "judge", "judge-check", "label", "calibrate",
                     "view", "export"]
    for cmd in week_commands:
        positionals = [a.metavar for a in PARSERS[f"skilllift {cmd}"]._actions
                       if not a.option_strings]
        assert positionals[0] == WEEK_NAME, (cmd, positionals)


@pytest.fixture(scope="module")
def pytest_help(pytester_module: str) -> str:
    return pytester_module


@pytest.fixture(scope="module")
def pytester_module(tmp_path_factory: pytest.TempPathFactory) -> str:
    import subprocess
    import sys

    cwd = tmp_path_factory.mktemp("help")
    proc = subprocess.run([sys.executable, "-m", "pytest", "--help", "-p", "no:cacheprovider"],
                          cwd=cwd, capture_output=True, text=True, check=True,
                          env={"COLUMNS": "200", "PATH": ""})
    return proc.stdout


def test_pytest_help_has_no_literal_percent_signs(pytest_help: str) -> None:
    assert "--skill-lift-reps" in pytest_help
    assert "%%" not in pytest_help


@pytest.mark.parametrize("option", [o for o in OPTIONS if o.cli], ids=lambda o: o.name)
def test_each_skill_lift_option_shows_a_real_metavar_or_its_choices(
    pytest_help: str, option: object
) -> None:
    from pytest_skilllift.config import Option

    assert isinstance(option, Option)
    assert option.help.strip()
    shown = re.search(rf"^\s+{re.escape(option.flag)}(=\S+)?\s", pytest_help, flags=re.M)
    assert shown, f"{option.flag} is not in pytest --help"
    value = shown.group(1)
    if option.kind == "bool":
        assert value is None
    elif option.choices:
        assert value == "={" + ",".join(option.choices) + "}"
    else:
        # Stated on the Option itself, so a new option must say what its value looks like.
        assert option.metavar, f"{option.flag}: give the Option a metavar"
        assert value == f"={option.metavar}"
        assert option.metavar != "VALUE" and option.metavar.upper() == option.metavar
    if "WEEK" in (value or ""):
        assert value == f"={WEEK_NAME}"


def test_named_metavars_of_the_issue(pytest_help: str) -> None:
    for shown in ("--skill-lift-models=LABEL=MODEL[,…]", "--skill-lift-reps=N",
                  "--skill-lift-claude=PATH", "--skill-lift-max-spend=USD",
                  "--skill-lift-timeout=SECONDS", "--skill-lift-runner={local,docker}",
                  "--skill-lift-out=WEEK_DIR", "--skill-lint-path=PATH"):
        assert shown in pytest_help
    assert "=VALUE" not in pytest_help
