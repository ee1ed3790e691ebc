"""Inputs collected beside the prompt files: trigger files and skill-creator evals.json.

The plugin asks two things of this module: which paths a bare ``pytest --skill-lift`` walks
besides the prompts directory (:func:`extra_args`), and which node a file becomes
(:func:`collect_extra_file`).
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from pytest_skilllift.config import Settings
from pytest_skilllift.run.skill_creator import find_evals_files


def trigger_files(settings: Settings) -> list[Path]:
    """The trigger files under the triggers directory."""
    root = settings.triggers_dir
    return sorted(root.glob("*.json")) if root.is_dir() else []


def skill_creator_files(settings: Settings) -> list[Path]:
    """skill-creator evals.json files, unless ``skill_lift_skill_creator_evals = false``."""
    if settings.skill_creator_evals is False:
        return []
    return find_evals_files(settings.rootdir, settings.skills_root)


def extra_args(settings: Settings) -> list[str]:
    """Paths a bare ``pytest --skill-lift`` collects besides the prompts directory."""
    prompts = settings.prompts_dir.resolve()
    out: list[str] = []
    candidates = ([settings.triggers_dir] if trigger_files(settings) else []) + \
        skill_creator_files(settings) + ([settings.tasks_dir] if has_tasks(settings) else [])
    for path in candidates:
        resolved = path.resolve()
        if resolved == prompts or prompts in resolved.parents:
            continue  # already walked with the prompts directory
        out.append(str(path))
    return out


def has_inputs(settings: Settings) -> bool:
    """Whether there is anything besides prompt files to run."""
    return bool(trigger_files(settings) or skill_creator_files(settings) or has_tasks(settings))


def has_tasks(settings: Settings) -> bool:
    """Whether the tasks directory holds a Harbor task (a ``task.toml`` below it)."""
    from pytest_skilllift.run.tasks.reader import task_dirs

    return bool(task_dirs(settings.tasks_dir))


@functools.lru_cache(maxsize=64)
def resolved_dir(path: Path) -> Path:
    """A configured directory, resolved once per process (collection asks for every file)."""
    return path.resolve()


def collect_extra_file(file_path: Path, parent: pytest.Collector, settings: Settings,
                       resolved: Path | None = None) -> pytest.File | None:
    """A trigger file or a skill-creator evals.json as its node; None for anything else.
    ``resolved`` is ``file_path.resolve()`` when the caller has it."""
    resolved = resolved or file_path.resolve()
    if resolved_dir(settings.triggers_dir) in resolved.parents:
        from pytest_skilllift.plugin.collect.triggers import TriggerFile

        return TriggerFile.from_parent(parent, path=file_path)
    if file_path.name == "evals.json" and resolved in {
            p.resolve() for p in skill_creator_files(settings)}:
        from pytest_skilllift.plugin.collect.skill_creator import SkillCreatorFile

        return SkillCreatorFile.from_parent(parent, path=file_path)
    return None
