"""The tasks of the week and the arms a task can run (its runs: ``run.matrix.task_runs``).

A task runs the lift's two arms: ``no-skill`` (its image with ``environment/skills/``
emptied) and ``with-skill`` (as shipped). The other arms of a session (``with-all``,
``no-skill-b``, ``with-skill@REF``) install families of the project's skills root and are
not defined for a task's own skills: they are left out of tasks and said so once
(:func:`arms_left_out`).
"""

from __future__ import annotations

from pathlib import Path

from pytest_skilllift.config import Settings
from pytest_skilllift.model import CONDITIONS, PromptSpec
from pytest_skilllift.run.tasks.reader import TaskError, load_task, task_dirs

#: The arms a task runs.
TASK_ARMS: tuple[str, ...] = CONDITIONS


def arms_left_out(settings: Settings) -> tuple[str, ...]:
    """The session's arms that tasks do not run."""
    return tuple(c for c in settings.conditions if c not in TASK_ARMS)


def load_tasks(settings: Settings) -> tuple[dict[str, PromptSpec], list[str]]:
    """Every task under the tasks directory (by task directory path) and the problems of
    those that do not load (each names its file, field and fix)."""
    tasks: dict[str, PromptSpec] = {}
    problems: list[str] = []
    seen: dict[str, Path] = {}
    for folder in task_dirs(settings.tasks_dir):
        try:
            prompt = load_task(folder, settings.skills_root)
        except TaskError as exc:
            problems.append(str(exc))
            continue
        if prompt.name in seen:
            problems.append(f"{folder}: task name {prompt.name!r} is also {seen[prompt.name]}; "
                            "rename one directory (a task's name is its directory's)")
            continue
        seen[prompt.name] = folder
        tasks[str(folder)] = prompt
    return tasks, problems
