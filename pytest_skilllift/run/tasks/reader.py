"""Read and check a Harbor task directory (the format SkillsBench publishes its tasks in).

A task directory, as Harbor lays it out::

    <task>/
      task.toml            metadata, [agent] / [verifier] / [environment] settings
      instruction.md       the prompt (both arms)
      environment/         the build context: Dockerfile, files, skills/<family>/SKILL.md…
      tests/test.sh        the verifier's entry point (+ what it needs: test_*.py…)
      solution/solve.sh    optional: the reference solution (never shown to the agent)
      rubric.json          optional: must / bonus / avoid items for the blind judge
                           (``run/tasks/rubric.py``)

:func:`load_task` returns a :class:`~pytest_skilllift.model.TaskSpec` (what the runner needs)
wrapped in the :class:`~pytest_skilllift.model.PromptSpec` every arm, item and report already
speaks; :func:`task_dirs` lists the task directories under a folder. A malformed task raises
:class:`TaskError` naming the file, the field and the fix. Nothing here runs anything, so
``skilllift tasks check`` or an importer can build on it.

The skills: SkillsBench's convention holds — the families under ``environment/skills/`` are the
task's skills (the no-skill image is built with that directory emptied). A task may instead
name a family of the project's skills root (``[metadata] skill = "<family>"``), installed the
usual way.
"""

from __future__ import annotations

import ast
import math
import tomllib
from pathlib import Path
from typing import Any

from pytest_skilllift.model import PromptSpec, TaskSpec
from pytest_skilllift.run.tasks.rubric import RubricFileError, load_rubric

TASK_TOML = "task.toml"
INSTRUCTION = "instruction.md"
ENVIRONMENT = "environment"
DOCKERFILE = "Dockerfile"
TESTS = "tests"
TEST_SH = "test.sh"
SKILLS_DIR = "skills"
#: Harbor's defaults when task.toml leaves a timeout out (seconds).
DEFAULT_AGENT_TIMEOUT_S = 600.0
DEFAULT_VERIFIER_TIMEOUT_S = 600.0
DEFAULT_BUILD_TIMEOUT_S = 600.0
#: The keys each table may hold; anything else is named with the known keys (a typo of
#: ``timeout_sec`` must not silently leave the default in force).
_KNOWN: dict[str, frozenset[str]] = {
    "": frozenset({"version", "metadata", "agent", "verifier", "environment", "solution",
                   "source"}),
    "agent": frozenset({"timeout_sec"}),
    "verifier": frozenset({"timeout_sec", "env", "reward_key"}),
    "environment": frozenset({"build_timeout_sec", "cpus", "memory_mb", "memory", "storage_mb",
                              "storage", "gpus", "allow_internet", "docker_image"}),
}


class TaskError(ValueError):
    """A task directory that cannot be run: the message names the file, the field and the fix."""

    def __init__(self, path: Path, field: str, problem: str, fix: str) -> None:
        where = f"{path}: {field}: " if field else f"{path}: "
        super().__init__(f"{where}{problem}; {fix}")
        self.path, self.field = path, field


def is_task_dir(path: Path) -> bool:
    """Whether ``path`` is a task directory (holds ``task.toml``)."""
    return (path / TASK_TOML).is_file()


def task_dirs(root: Path) -> list[Path]:
    """The task directories under ``root`` (each holding a ``task.toml``), sorted; nested
    task directories are not looked into (a task's own files are not tasks)."""
    if not root.is_dir():
        return []
    found: list[Path] = []
    for toml in sorted(root.rglob(TASK_TOML)):
        folder = toml.parent
        if not any(parent in found for parent in folder.parents):
            found.append(folder)
    return found


def load_task(folder: Path, skills_root: Path) -> PromptSpec:
    """The task in ``folder`` as the prompt every arm runs; raises :class:`TaskError`.

    ``skills_root`` is the project's skills root, used only by a task that names a family
    (``[metadata] skill``)."""
    toml_path = folder / TASK_TOML
    try:
        data = tomllib.loads(toml_path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise TaskError(toml_path, "", f"cannot be read ({exc.strerror})",
                        "make it a readable file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise TaskError(toml_path, "", f"is not valid TOML ({exc})",
                        "fix the syntax (https://toml.io)") from None
    _check_keys(toml_path, data)
    instruction = _read_text(folder / INSTRUCTION, "write the task's prompt there")
    if not instruction.strip():
        raise TaskError(folder / INSTRUCTION, "", "is empty", "write the task's prompt there")
    environment = folder / ENVIRONMENT
    if not (environment / DOCKERFILE).is_file():
        raise TaskError(environment / DOCKERFILE, "", "is missing",
                        "add the Dockerfile the task's container is built from")
    if not (folder / TESTS / TEST_SH).is_file():
        raise TaskError(folder / TESTS / TEST_SH, "", "is missing",
                        "add the verifier script that writes /logs/verifier/reward.txt")
    agent, verifier, env = (_table(toml_path, data, k)
                            for k in ("agent", "verifier", "environment"))
    metadata = _table(toml_path, data, "metadata")
    bundled = tuple(sorted(p.name for p in (environment / SKILLS_DIR).iterdir()
                           if (p / "SKILL.md").is_file())) \
        if (environment / SKILLS_DIR).is_dir() else ()
    named = metadata.get("skill")
    if named is not None and (not isinstance(named, str) or not named.strip("/ ")):
        raise TaskError(toml_path, "metadata.skill", f"must be a family name, got {named!r}",
                        'write skill = "<family>" (a folder of the skills root)')
    if named:
        family = named.strip("/ ").split("/", 1)[0]
        if not (skills_root / family / "SKILL.md").is_file():
            raise TaskError(toml_path, "metadata.skill",
                            f"names {family!r}, which has no SKILL.md under {skills_root}",
                            "name a family of the skills root (skill_lift_skills)")
        skill_path, root = f"{family}/SKILL.md", None
        siblings: tuple[str, ...] = ()
    elif bundled:
        skill_path, siblings = f"{bundled[0]}/SKILL.md", bundled[1:]
        root = environment / SKILLS_DIR
    else:
        raise TaskError(environment / SKILLS_DIR, "", "holds no skill family (no "
                        "<family>/SKILL.md) and task.toml names none",
                        'add environment/skills/<family>/SKILL.md, or set [metadata] '
                        'skill = "<family>" to install a family of the skills root')
    env_pairs = verifier.get("env", {})
    if not isinstance(env_pairs, dict) or not all(
            isinstance(k, str) and isinstance(v, str | int | float) for k, v in env_pairs.items()):
        raise TaskError(toml_path, "verifier.env", "must be a table of strings",
                        'write env = { NAME = "value" }')
    reward_key = verifier.get("reward_key", "")
    if not isinstance(reward_key, str):
        raise TaskError(toml_path, "verifier.reward_key", "must be a string",
                        "name the reward.json key that is the primary reward")
    try:
        rubric = load_rubric(folder)
    except RubricFileError as err:
        raise TaskError(err.path, err.field, err.problem, err.fix) from None
    task = TaskSpec(
        root=folder,
        agent_timeout_s=_seconds(toml_path, agent, "agent", DEFAULT_AGENT_TIMEOUT_S),
        verifier_timeout_s=_seconds(toml_path, verifier, "verifier",
                                    DEFAULT_VERIFIER_TIMEOUT_S),
        build_timeout_s=_seconds(toml_path, env, "environment", DEFAULT_BUILD_TIMEOUT_S,
                                 key="build_timeout_sec"),
        verifier_env=tuple(sorted((k, str(v)) for k, v in env_pairs.items())),
        cpus=_positive(toml_path, env, "environment.cpus", "cpus"),
        memory_mb=_memory_mb(toml_path, env),
        bundled_families=bundled,
        reward_key=reward_key,
        verifier_tests=verifier_tests(folder / TESTS),
        installs=(skill_path.split("/", 1)[0],) if root is None else (),
    )
    return PromptSpec(path=toml_path, name=folder.name, product_area=str(
        metadata.get("category", "")), prompt=instruction, rubric=rubric, skill_path=skill_path,
        sibling_families=siblings, skills_root=root, task=task)


def verifier_tests(tests: Path) -> tuple[str, ...]:
    """The pytest tests the verifier holds, as ``<file>::<test>`` (``<file>::<Class>::<test>``
    for test classes), read from ``tests/test_*.py`` and ``tests/*_test.py`` without running
    anything. A file that does not parse contributes nothing (its outcomes still arrive in the
    verifier's report and are counted there)."""
    names: list[str] = []
    files = sorted({*tests.glob("test_*.py"), *tests.glob("*_test.py")})
    for path in files:
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and \
                    node.name.startswith("test"):
                names.append(f"{path.name}::{node.name}")
            elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                names += [f"{path.name}::{node.name}::{m.name}" for m in node.body
                          if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef)
                          and m.name.startswith("test")]
    return tuple(names)


def _read_text(path: Path, fix: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TaskError(path, "", "is missing", fix) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskError(path, "", f"cannot be read ({exc})", "make it UTF-8 text") from None


def _check_keys(path: Path, data: dict[str, Any]) -> None:
    import difflib

    def check(table: dict[str, Any], known: frozenset[str], prefix: str) -> None:
        for key in table:
            if key not in known:
                close = difflib.get_close_matches(key, sorted(known), n=1)
                hint = f"did you mean {prefix}{close[0]}?" if close else (
                    "known keys: " + ", ".join(sorted(known)))
                raise TaskError(path, prefix + key, "is not a key of Harbor's task.toml", hint)

    check(data, _KNOWN[""], "")
    for table in ("agent", "verifier", "environment"):
        value = data.get(table)
        if isinstance(value, dict):
            check(value, _KNOWN[table], f"{table}.")


def _table(path: Path, data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise TaskError(path, key, f"must be a table, got {type(value).__name__}",
                        f"write it as [{key}]")
    return value


def _seconds(path: Path, table: dict[str, Any], name: str, default: float, *,
             key: str = "timeout_sec") -> float:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
            math.isfinite(value) and value > 0):
        raise TaskError(path, f"{name}.{key}", f"must be a positive number of seconds, got "
                        f"{value!r}", f"write e.g. {key} = {default:g}")
    return float(value)


def _positive(path: Path, table: dict[str, Any], field: str, key: str) -> float | None:
    value = table.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise TaskError(path, field, f"must be a positive number, got {value!r}",
                        f"write e.g. {key} = 1")
    return float(value)


def _memory_mb(path: Path, table: dict[str, Any]) -> int | None:
    """``memory_mb = 2048`` or Harbor's older ``memory = "2G"`` (M / G suffixes)."""
    if "memory_mb" in table:
        value = _positive(path, table, "environment.memory_mb", "memory_mb")
        return None if value is None else int(value)
    text = table.get("memory")
    if text is None:
        return None
    units = {"m": 1, "mb": 1, "g": 1024, "gb": 1024}
    raw = str(text).strip().lower()
    number = raw.rstrip("bmg")
    unit = raw[len(number):] or "mb"
    try:
        amount = float(number)
    except ValueError:
        amount = -1.0
    if unit not in units or amount <= 0:
        raise TaskError(path, "environment.memory", f"cannot read {text!r}",
                        'write memory_mb = 2048 (or memory = "2G")')
    return int(amount * units[unit])
