"""``skilllift init``: a project's first files, from the skills it already has.

One prompt file per skill (a directory holding a ``SKILL.md``) under the skills root, its name
and description filled in from the frontmatter and every text a person must write left as a
placeholder (``PLACEHOLDER``: such a file is not collected, and the session names every one of
them in a line), one trigger file per family with a
should- and a should-not-trigger query stubbed, and a ``pytest.ini`` naming the ini keys.
Nothing that exists is overwritten: an existing file is kept and reported as kept. A project
whose pytest settings already live in ``pyproject.toml``, ``tox.ini`` or ``setup.cfg`` gets no
``pytest.ini`` (pytest would read it first and stop reading the others: the project's own
tests would stop being collected); ``init`` prints the keys to add there instead.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from pytest_skilllift.run.prompts import PLACEHOLDER

PROMPTS_DIR = Path("evals") / "test-prompts"
TRIGGERS_DIR = Path("evals") / "triggers"
INI_FILE = "pytest.ini"


class ScaffoldError(Exception):
    """A file ``init`` cannot write (a dangling link on its path, a file where a folder goes);
    the message names the path and the fix."""


@dataclass
class Scaffold:
    """What ``init`` wrote and what it left alone (paths relative to the project)."""

    written: list[Path] = field(default_factory=list)
    kept: list[Path] = field(default_factory=list)
    skills: list[str] = field(default_factory=list)
    #: ``(file, section, text)`` when the project's pytest settings live in another file:
    #: the keys to add there (no pytest.ini was written to shadow it).
    add_to: tuple[str, str, str] | None = None


def prompt_name(rel_id: str) -> str:
    """A prompt name from a skill's path: ``family/sub`` → ``family-sub`` (the names the
    collection accepts: letters, digits, ``.``, ``_``, ``-``)."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", rel_id.replace("/", "-")).strip("-.")
    return name[:100] or "skill"


def prompt_file(rel_id: str, skill_md: str, name: str, description: str) -> dict[str, object]:
    """The prompt file of one skill: real fields filled in, the rest placeholders."""
    about = f"{name}: {description}" if description else name
    return {
        "name": prompt_name(rel_id),
        "product_area": rel_id.split("/")[0],
        "skill": skill_md,
        "prompt": f"{PLACEHOLDER} a question a user of {about!r} would ask, answered "
                  "without naming the skill",
        "rubric": [
            {"type": "must", "text": f"{PLACEHOLDER} a fact or step a correct answer must "
                                     "contain (3 to 5 must items)"},
            {"type": "bonus", "text": f"{PLACEHOLDER} what a great answer adds (1 to 3)"},
            {"type": "avoid", "text": f"{PLACEHOLDER} a mistake a plausible answer makes "
                                      "(1 to 3)"},
        ],
    }


def trigger_file(family: str, description: str) -> dict[str, object]:
    """A family's trigger file: one query of each kind, as placeholders."""
    return {
        "skill": family,
        "queries": [
            {"query": f"{PLACEHOLDER} a request that should make the agent use {family}"
                      + (f" ({description})" if description else ""), "should_trigger": True},
            {"query": f"{PLACEHOLDER} a nearby request {family} should NOT fire for",
             "should_trigger": False},
        ],
    }


def ini_text(skills: str) -> str:
    """``pytest.ini`` with the keys a project usually sets (defaults shown, commented)."""
    return (
        "[pytest]\n"
        "# pytest-skilllift: `pytest --skill-lift` runs the week; docs list every key.\n"
        f"skill_lift_prompts = {PROMPTS_DIR.as_posix()}\n"
        f"skill_lift_skills = {skills}\n"
        f"skill_lift_triggers = {TRIGGERS_DIR.as_posix()}\n"
        "# skill_lift_models = sonnet=claude-sonnet-4-5,haiku=claude-haiku-4-5\n"
        "# skill_lift_reps = 2\n"
        "# skill_lift_site = https://skills.example.com/\n"
        "# skill_lift_gates = must_lift_ci_low>0\n"
    )


def pytest_config(project: Path) -> tuple[str, str] | None:
    """``(file, section)`` of the project's pytest settings when they live in a file other
    than pytest.ini (pyproject.toml's ``[tool.pytest.ini_options]``, tox.ini's ``[pytest]``,
    setup.cfg's ``[tool:pytest]``), else None."""
    import configparser
    import tomllib

    pyproject = project / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            data = {}
        if isinstance(data.get("tool"), dict) and "pytest" in data["tool"]:
            return "pyproject.toml", "[tool.pytest.ini_options]"
    for name, section in (("tox.ini", "pytest"), ("setup.cfg", "tool:pytest")):
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read(project / name, encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError):
            continue
        if parser.has_section(section):
            return name, f"[{section}]"
    return None


def config_lines(file: str, skills: str) -> str:
    """The ini keys of :func:`ini_text` as ``file`` writes them (TOML strings in
    pyproject.toml, ``key = value`` in an ini file)."""
    keys = ini_text(skills).splitlines()[2:5]
    if file != "pyproject.toml":
        return "\n".join(keys) + "\n"
    return "\n".join(f'{k.strip()} = "{v.strip()}"'
                     for k, v in (line.split("=", 1) for line in keys)) + "\n"


def _dangling(project: Path, rel: Path) -> Path | None:
    """The first component of ``project/rel``'s folders that is a link to nothing."""
    path = project
    for part in rel.parent.parts:
        path = path / part
        if path.is_symlink() and not path.exists():
            return path
    return None


def _write(project: Path, rel: Path, text: str, out: Scaffold) -> None:
    path = project / rel
    if path.exists() or path.is_symlink():
        out.kept.append(rel)
        return
    link = _dangling(project, rel)
    if link is not None:
        raise ScaffoldError(f"{link} is a symbolic link to {os.readlink(link)}, which does not "
                            f"exist, so {rel} cannot be written; fix: create the folder it "
                            "names, or remove the link")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ScaffoldError(f"cannot write {path}: {exc.strerror or exc}; fix the path (a "
                            "file where a folder goes, or a folder you cannot write)") from None
    out.written.append(rel)


class UnknownSkill(ValueError):
    """``init --skill NAME`` named no skill under the skills root (the message lists them)."""


def scaffold(project: Path, skills_root: Path, only: tuple[str, ...] = ()) -> Scaffold:
    """Write the project's first files under ``project`` for every skill of ``skills_root``,
    or only for the skills ``only`` names (a skill's path under the root such as ``pdf`` or
    ``family/sub``, or a family, which takes the family's skills). Raises ``UnknownSkill``
    before writing anything when a name matches no skill."""
    from pytest_skilllift.skill.skillfile import find_skill_dirs, load_skill

    out = Scaffold()
    if only:
        known = [load_skill(d, skills_root.resolve()).rel_id
                 for d in find_skill_dirs(skills_root.resolve())]
        for name in only:
            if not any(_selected(rel, (name,)) for rel in known):
                import difflib

                close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise UnknownSkill(f"no skill {name!r} under {skills_root}; {hint}the skills "
                                   f"there: {', '.join(r for r in known if r not in ('', '.'))}")
    root = skills_root.resolve()
    try:
        skills_rel = root.relative_to(project.resolve()).as_posix()
    except ValueError:
        skills_rel = str(root)
    families: dict[str, str] = {}
    for skill_dir in find_skill_dirs(root):
        skill = load_skill(skill_dir, root)
        rel_id = skill.rel_id
        if rel_id in ("", "."):  # a SKILL.md at the root itself: not a family
            continue
        if only and not _selected(rel_id, only):
            continue
        out.skills.append(rel_id)
        body = prompt_file(rel_id, f"{rel_id}/SKILL.md", skill.name or rel_id,
                           " ".join(skill.description.split()))
        _write(project, PROMPTS_DIR / f"{body['name']}.json", _json(body), out)
        if rel_id == skill.family:
            families[skill.family] = " ".join(skill.description.split())
        else:
            families.setdefault(skill.family, "")
    for family, description in sorted(families.items()):
        _write(project, TRIGGERS_DIR / f"{family}.json", _json(trigger_file(family, description)),
               out)
    config = pytest_config(project)
    if config is not None and not (project / INI_FILE).exists():
        out.add_to = (config[0], config[1], config_lines(config[0], skills_rel))
    else:
        _write(project, Path(INI_FILE), ini_text(skills_rel), out)
    return out


def _selected(rel_id: str, only: tuple[str, ...]) -> bool:
    """Whether ``init --skill`` names this skill: its path, its prompt name or its family."""
    names = {n.strip("/") for n in only}
    return (rel_id in names or prompt_name(rel_id) in names
            or rel_id.split("/")[0] in names)


def _json(data: object) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
