"""``skilllift init [DIR]``: scaffold a project from the skills it already has."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_skilllift.cli import Subparsers


def add_parser(subparsers: Subparsers) -> None:
    """Register ``init`` on the ``skilllift`` subparsers (sets ``func``)."""
    p = subparsers.add_parser(
        "init",
        help="scaffold pytest.ini, one prompt file per skill and trigger files",
        description="Write a project's first files from the skills under its skills root: "
        "pytest.ini with the skill_lift_* keys, evals/test-prompts/<skill>.json per skill "
        "(name and description filled in, the prompt and rubric left as placeholders: a file "
        "that still holds one is not collected, and the session names such files in one "
        "line) and evals/triggers/<family>.json with a should- and a should-not-trigger "
        "query to write. Existing files are kept; a project whose pytest settings are in "
        "pyproject.toml, tox.ini or setup.cfg gets the keys to add there printed instead of "
        "a pytest.ini that would shadow them.",
        epilog="examples: skilllift init . --skills skills; "
               "skilllift init --skill pdf   (one skill's files and pytest.ini)",
    )
    p.add_argument("project", metavar="DIR", type=Path, nargs="?", default=Path("."),
                   help="the project directory (default: the current directory)")
    p.add_argument("--skills", metavar="SKILLS_DIR", type=Path, default=None,
                   help="the skills root (default: DIR/skills)")
    p.add_argument("--skill", metavar="NAME", action="append", default=[],
                   help="scaffold only this skill: its path under the skills root (pdf, "
                        "family/sub) or a family (all its skills); repeatable")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the subcommand; returns the exit status."""
    from pytest_skilllift.run.scaffold import (
        PROMPTS_DIR,
        ScaffoldError,
        UnknownSkill,
        scaffold,
    )

    project: Path = args.project
    skills = args.skills if args.skills is not None else project / "skills"
    if not skills.is_dir():
        print(f"skilllift init: skills root {skills} is not a directory; put your skills "
              "there (skills/<family>/SKILL.md) or name it with --skills", file=sys.stderr)
        return 2
    try:
        out = scaffold(project, skills, tuple(args.skill))
    except (ScaffoldError, UnknownSkill) as err:
        print(f"skilllift init: {err}", file=sys.stderr)
        return 2
    if not out.skills:
        print(f"skilllift init: no SKILL.md under {skills}; nothing to scaffold",
              file=sys.stderr)
        return 2
    print(f"{len(out.skills)} skill(s) under {skills}: {', '.join(out.skills)}")
    for rel in out.written:
        print(f"  wrote {project / rel}")
    for rel in out.kept:
        print(f"  kept  {project / rel} (exists)")
    if out.add_to is not None:
        file, section, text = out.add_to
        print(f"  your pytest settings are in {project / file}: no pytest.ini written (it would "
              f"shadow them); add under {section}:")
        for line in text.splitlines():
            print(f"    {line}")
    first = next((r for r in out.written if r.parent == PROMPTS_DIR), None)
    where = project / (first or PROMPTS_DIR)
    print("next:")
    print(f"  1. write the prompt and rubric of {where} (every TODO(skilllift init) text)")
    print("  2. pytest --skill-lift --collect-only -q     # lists the runs, spends nothing")
    name = first.stem if first else "<prompt>"
    print(f"  3. pytest --skill-lift -k {name}            # one real week for one prompt")
    return 0
