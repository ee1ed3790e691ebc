"""The tasks of the week and the arms a task runs (its runs: ``run.matrix.task_runs``).

A task runs every arm of the session, each as prompts have it (docs/tasks.md, "Arms"):

* ``no-skill`` and ``no-skill-b`` (the A/A arm): the image with ``environment/skills/``
  emptied, nothing installed;
* ``with-skill``: the image as shipped, plus the family ``[metadata] skill`` names;
* ``with-all``: the image as shipped, plus every family of the project's skills root
  (SkillsBench's "all skills" condition; a family named like one of the task's own is the
  task's own copy, not installed twice);
* ``with-skill@REF``: the task's skills as they were at REF — a ``[metadata] skill`` family
  from the skills root at REF (``run.revisions``, as for prompts), ``environment/skills/``
  from the git repository holding the task at REF (the image built with that copy). An arm
  that cannot be had for a task (a directory REF for a task's own skills, a task outside
  git, ``environment/skills`` that did not exist at REF) is left out of that task and named
  (:func:`arms_left_out`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from pathlib import Path

from pytest_skilllift.config import Settings
from pytest_skilllift.model import ARMS, WITH_ALL, PromptSpec, arm_ref
from pytest_skilllift.run.revisions import RevisionError, directory_at, session_revision
from pytest_skilllift.run.tasks.reader import SKILLS_DIR, TaskError, load_task, task_dirs
from pytest_skilllift.run.triggers import skill_families

#: The arms a task can run (every arm; ``with-skill@REF`` stands for any REF).
TASK_ARMS: tuple[str, ...] = ARMS


class ArmLeftOut(Exception):
    """An arm a task cannot run; the message says why and the fix."""


def task_arm(prompt: PromptSpec, condition: str, settings: Settings) -> PromptSpec:
    """The task as ``condition`` runs it (see the module's docstring); raises
    :class:`ArmLeftOut` when the task cannot run that arm."""
    task = prompt.task
    assert task is not None
    ref = arm_ref(condition)
    if condition == WITH_ALL:
        families = skill_families(settings.skills_root)
        own = tuple(f for f in task.installs if f in families)
        others = tuple(f for f in families if f not in own and f not in task.bundled_families)
        return dataclasses.replace(
            prompt, sibling_families=(*prompt.sibling_families, *others),
            task=dataclasses.replace(task, installs=(*own, *others)))
    if ref is None:
        return prompt
    try:  # resolved once per process: collection, the matrix and the identity all ask
        revision = session_revision((condition,), settings.skills_root,
                                    rootdir=settings.rootdir, week_dir=settings.out_dir)
    except RevisionError as exc:
        raise ArmLeftOut(str(exc)) from None
    assert revision is not None
    if task.installs:  # a family of the skills root: from the root at REF, as for prompts
        return dataclasses.replace(prompt, skills_root=revision.root, task=dataclasses.replace(
            task, installs_root=revision.root))
    # The task's own skills (environment/skills) as they were at REF, in git.
    if revision.kind != "git":
        raise ArmLeftOut(f"with-skill@{ref}: a directory REF holds earlier families of the "
                         "skills root, not a task's environment/skills; fix: give a git REF")
    try:
        at_ref = directory_at(task.environment / SKILLS_DIR, ref, week_dir=settings.out_dir)
    except RevisionError as exc:
        raise ArmLeftOut(str(exc)) from None
    return dataclasses.replace(prompt, skills_root=at_ref,
                               task=dataclasses.replace(task, skills_dir=at_ref))


def task_arms(prompt: PromptSpec, settings: Settings) -> tuple[list[tuple[str, PromptSpec]],
                                                               list[str]]:
    """``(condition, the task as that arm runs it)`` for each arm of the session the task can
    run, and why each other arm is left out (``<task>: <condition>: <why>``)."""
    arms: list[tuple[str, PromptSpec]] = []
    left_out: list[str] = []
    for condition in settings.conditions:
        try:
            arms.append((condition, task_arm(prompt, condition, settings)))
        except ArmLeftOut as exc:
            left_out.append(f"{prompt.name}: {condition} left out: {exc}")
    return arms, left_out


def arms_left_out(tasks: Iterable[PromptSpec], settings: Settings) -> list[str]:
    """Every (task, arm) of the session that is not run, each named with its cause."""
    return [line for prompt in tasks for line in task_arms(prompt, settings)[1]]


def left_out_line(tasks: Iterable[PromptSpec], settings: Settings) -> str | None:
    """The line collection prints when some (task, arm) of the session is not run (None:
    every task runs every arm)."""
    lines = arms_left_out(tasks, settings)
    if not lines:
        return None
    return (f"skill-lift tasks: {len(lines)} (task, arm) pair(s) not run:\n  "
            + "\n  ".join(lines))


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
