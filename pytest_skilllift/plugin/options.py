"""``config.OPTIONS`` given to pytest and read back: the pytest half of the settings.

``add_options`` registers a family of the one option table (``--skill-lift-*`` for the weekly
run, ``--skill-lint-*`` for the static lint, each with its ini key); ``settings_from_pytest``
and ``lint_settings_from_pytest`` read them (command line over ini, ini over the default) into
the core's :class:`~pytest_skilllift.config.Settings` / ``LintSettings``, which are built from
plain values and never see pytest.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.config import (
    LIFT,
    LINT,
    OPTIONS,
    LintSettings,
    Option,
    Settings,
    SettingsError,
    coerce_ini,
    ini_error,
    resolve_path,
)

_GROUPS = {LIFT: ("skill-lift", "skill lift (measure whether skills help)"),
           LINT: ("skill-lint", "static SKILL.md analysis (no model)")}


def add_options(parser: pytest.Parser, prefix: str = LIFT) -> None:
    """Register ``--skill-lift`` (or ``--skill-lint``) and every ``OPTIONS`` entry of that
    family (flag and ini). Each plugin registers its own family: the lint plugin loads
    without the weekly run's, and an ini key registered twice is an error."""
    group = parser.getgroup(*_GROUPS[prefix])
    if prefix == LIFT:
        group.addoption(
            "--skill-lift", action="store_true", dest="skill_lift", default=False,
            help="Run the skill-lift suite: collect prompt files, run the CLI, judge, score.",
        )
    else:
        group.addoption(
            "--skill-lint", action="store_true", dest="skill_lint", default=False,
            help="collect every skill under the skills root; each check is a test",
        )
    for o in OPTIONS:
        if o.prefix != prefix:
            continue
        if not o.in_ini:
            pass
        elif o.kind == "bool":
            parser.addini(o.dest, o.help_text, type="bool", default=None)
        elif o.kind == "lines":
            parser.addini(o.ini_name, o.help_text, type="linelist", default=[])
        else:
            parser.addini(o.dest, o.help_text, type="string", default=None)
        if not o.cli:
            continue
        if o.kind == "lines":
            group.addoption(o.flag, action="append", dest=o.dest, default=None,
                            metavar=o.shown_metavar, help=o.help_text)
        elif o.kind == "bool":
            group.addoption(o.flag, action="store_true", dest=o.dest, default=None,
                            help=o.help_text)
        else:
            conv: Callable[[str], Any] = {"int": int, "float": float}.get(o.kind, str)
            group.addoption(o.flag, dest=o.dest, type=conv, default=None,
                            metavar=o.shown_metavar,
                            choices=list(o.choices) if o.choices else None, help=o.help_text)


def settings_from_pytest(config: pytest.Config) -> Settings:
    """Read every weekly-run option: the command line wins over ini, ini over the default."""
    inifile = Path(str(config.inipath)).name if config.inipath else "the ini file"
    from_ini: set[str] = set()

    def get(o: Option) -> Any:
        value = config.getoption(o.dest) if o.cli else None
        if value is None or value is False:
            try:
                ini = config.getini(o.ini_name)
            except (ValueError, pytest.UsageError) as exc:  # pytest's parse of a bool
                raise SettingsError(ini_error(o, inifile, str(exc))) from None
            if ini not in (None, "", []):
                from_ini.add(o.name)
                return coerce_ini(o, ini, inifile)
            return value if value is not None else o.default
        return value

    def named(o: Option) -> str:
        return f"{o.ini_name} in {inifile}" if o.name in from_ini else o.flag

    return Settings.from_values(
        get,
        enabled=bool(config.getoption("skill_lift")),
        rootdir=config.rootpath,
        inifile=str(config.inipath or ""),
        named=named,
    )


def _lint_option(name: str) -> Option:
    return next(o for o in OPTIONS if o.prefix == LINT and o.name == name)


def lint_settings_from_pytest(config: pytest.Config) -> LintSettings:
    """``pytest --skill-lint``'s settings. The roots: ``--skill-lint-path`` (relative to the
    invocation dir); else the directories given as arguments that hold a SKILL.md (``pytest
    --skill-lint skills/other``); else the ini ``skill_lift_skills`` (relative to the
    rootdir), else ``<rootdir>/skills``."""
    enabled = bool(config.getoption("skill_lint"))
    opt = config.getoption(_lint_option("path").dest)
    if opt:
        root = Path(opt)
        roots = [root if root.is_absolute() else Path(config.invocation_params.dir) / root]
    else:
        roots = _skill_dirs_in_args(config) if enabled else []
        if not roots:
            try:
                value: Any = config.getini("skill_lift_skills")
            except ValueError:  # the main plugin is not loaded: its ini key is unknown
                value = None
            roots = [resolve_path(config.rootpath, str(value or "skills"))]
    threshold_o, depth_o = _lint_option("threshold"), _lint_option("depth")
    raw = str(config.getini(threshold_o.ini_name) or threshold_o.default).strip()
    try:
        threshold = float(raw) if raw else None
    except ValueError:
        raise SettingsError(f"{threshold_o.ini_name} = {raw!r} is not a number") from None
    labels = []
    for root in roots:
        try:
            label = (root.resolve().relative_to(config.rootpath.resolve()).as_posix()
                     or root.name)
        except (ValueError, OSError):
            label = root.name
        labels.append(label)
    depth = str(config.getini(depth_o.ini_name) or depth_o.default).strip()
    if depth_o.choices and depth not in depth_o.choices:
        raise SettingsError(f"{depth_o.ini_name} = {depth!r}: expected "
                            f"{', '.join(depth_o.choices[:-1])} or {depth_o.choices[-1]}")
    return LintSettings(enabled=enabled, roots=tuple(roots), labels=tuple(labels),
                        threshold=threshold, depth=depth)


def _skill_dirs_in_args(config: pytest.Config) -> list[Path]:
    """Directories named on the command line that hold a SKILL.md (themselves or below):
    with ``--skill-lint`` they are skills roots, whatever else pytest makes of them."""
    if config.args_source.name != "ARGS":  # testpaths or the invocation dir: not "given"
        return []
    out = []
    for arg in config.args:
        path = Path(config.invocation_params.dir) / arg.split("::", 1)[0]
        if path.is_dir() and next(path.rglob("SKILL.md"), None) is not None:
            out.append(path)
    return out
