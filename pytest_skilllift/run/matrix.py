"""The week's run matrix (prompt × model × condition × rep) outside the prompt-file tree.

A check that requests ``skill_lift_run`` is parametrized over the same runs as the rubric
items, with ids ``<prompt>::<model>::<condition>::r<rep>``; ``narrow`` applies the
``skill_lift(prompts=…, families=…, models=…, conditions=…)`` marker; ``run_scope`` tells the
xdist scheduler which run a test id belongs to, so a run's rubric items and checks travel to
one worker together. No pytest here.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_skilllift.config import Settings
from pytest_skilllift.model import (
    ARMS,
    WITH_ALL,
    WITH_REF,
    WITH_REF_PREFIX,
    PromptSpec,
    RunSpec,
)
from pytest_skilllift.run.arms import arm_prompt
from pytest_skilllift.run.engine import make_run_id
from pytest_skilllift.run.prompt_names import check_unique, declared_names, prompt_files
from pytest_skilllift.run.prompts import (
    PromptError,
    holds_placeholder,
    is_heldout,
    load_prompt,
)
from pytest_skilllift.run.revisions import session_revision
from pytest_skilllift.run.triggers import skill_families

__all__ = ["NARROWING_KEYS", "Matrix", "keywords_of", "load_matrix", "narrow", "prompt_runs",
           "run_key", "run_scope"]

#: Keyword arguments of ``@pytest.mark.skill_lift(...)`` on a check, each a glob or a list.
NARROWING_KEYS = ("prompts", "families", "models", "conditions", "agents")


def run_key(spec: RunSpec) -> str:
    """A run's id within a parametrized check: ``<prompt>::<model>::<condition>::r<rep>``."""
    return f"{spec.prompt.name}::{spec.model_label}::{spec.condition}::r{spec.rep}"


def keywords_of(prompt: PromptSpec) -> tuple[str, str]:
    """The ``-k`` keywords of every item of a prompt: its skill family and its leaf skill
    (the SKILL.md's directory under the skills root, e.g. ``qdrant-scaling/minimize-latency``)."""
    leaf = prompt.leaf.removesuffix("SKILL.md").rstrip("/") or prompt.family
    return prompt.family, leaf


@dataclass(frozen=True)
class Matrix:
    """Every run of the configured week, in collection order, and the prompt files that
    could not be read (named: they are collection errors of the rubric items too)."""

    runs: tuple[RunSpec, ...]
    problems: tuple[str, ...]
    #: The prompt files read without a problem, by path (as globbed under the prompts dir):
    #: collection reuses them instead of reading and validating every file again.
    prompts: Mapping[str, PromptSpec] = field(default_factory=dict)
    #: Prompt name → the files declaring it (``prompt_names.declared_names``).
    owners: Mapping[str, list[Path]] = field(default_factory=dict)

    def prompt_at(self, path: Path) -> PromptSpec | None:
        """The prompt read from ``path`` when the matrix has it (None: read it yourself)."""
        return self.prompts.get(str(path))

    def names_by_path(self, rootdir: Path) -> dict[str, str]:
        """Prompt file path relative to ``rootdir`` (as in a test id) → prompt name; a prompts
        directory outside the rootdir gives ids of bare file names, keyed here too."""
        out: dict[str, str] = {}
        for spec in self.runs:
            # A task's items hang below its directory, a prompt's below its file.
            path = spec.prompt.task.root if spec.prompt.task is not None else spec.prompt.path
            out.setdefault(path.name, spec.prompt.name)
            try:
                out[path.resolve().relative_to(rootdir.resolve()).as_posix()] = spec.prompt.name
            except ValueError:
                continue
        return out


def load_matrix(settings: Settings) -> Matrix:
    """All runs of the week the settings describe (held-out prompts only with ``heldout``)."""
    runs: list[RunSpec] = []
    problems: list[str] = []
    prompts: dict[str, PromptSpec] = {}
    folder = settings.prompts_dir
    paths = sorted(folder.glob("*.json")) if folder.is_dir() else []
    families = skill_families(settings.skills_root) if WITH_ALL in settings.conditions else ()
    revision = session_revision(settings.conditions, settings.skills_root,
                                rootdir=settings.rootdir, week_dir=settings.out_dir)
    revision_root = revision.root if revision else None
    # A name declared by two files belongs to the first (as in collection): the second is a
    # problem, so no two prompts share runs.
    owners = declared_names(prompt_files(folder, settings.heldout))
    for path in paths:
        if (is_heldout(path) and not settings.heldout) or holds_placeholder(path):
            continue  # a file init left to write is named in one line, not a problem
        try:
            prompt = load_prompt(path, settings.skills_root, settings.site)
            check_unique(path.resolve(), prompt.name, owners)
        except PromptError as exc:
            problems.append(str(exc))
            continue
        prompts[str(path)] = prompt
        runs += prompt_runs(prompt, settings, families=families, revision_root=revision_root)
    # Harbor tasks (run/tasks): keyed by their directory, as collection finds them.
    from pytest_skilllift.run.tasks.plan import load_tasks

    tasks, task_problems = load_tasks(settings)
    problems += task_problems
    for key, task in tasks.items():
        prompts[key] = task
        runs += task_runs(task, settings)
    return Matrix(tuple(runs), tuple(problems), prompts, owners)


def prompt_runs(prompt: PromptSpec, settings: Settings, *, families: Sequence[str],
                revision_root: Path | None,
                arms: Sequence[tuple[str, PromptSpec]] | None = None) -> list[RunSpec]:
    """One prompt's runs of the week, model × condition × rep in collection order: the one
    derivation of the run set, which the matrix lists and collection makes nodes of (so a
    check's ``skill_lift_run`` parameters and the rubric items name the same runs).

    ``families`` are the skills root's families (installed together by ``with-all``; only
    read when that arm runs) and ``revision_root`` the with-skill@REF arm's tree, both
    resolved once per session by the caller. ``arms``: the (condition, prompt as that arm
    runs it) pairs when the caller derived them itself (a Harbor task's, ``task_runs``).
    """
    if arms is None:
        arms = [(condition, arm_prompt(prompt, condition, families, revision_root))
                for condition in settings.conditions]  # the arms of the session
    runs: list[RunSpec] = []
    for label, model_id in settings.models:
        for condition, arm in arms:
            runs += [RunSpec(prompt=arm, model_label=label, model_id=model_id,
                             condition=condition, rep=rep,
                             run_id=make_run_id(prompt.name, label, condition, rep,
                                                settings.week))
                     for rep in range(1, settings.reps + 1)]
    return runs


def task_runs(prompt: PromptSpec, settings: Settings) -> list[RunSpec]:
    """A Harbor task's runs, model × arm × rep in collection order, each arm the task as that
    arm runs it (``run.tasks.plan.task_arms``: the arms it cannot run are left out, named)."""
    from pytest_skilllift.run.tasks.plan import task_arms

    arms, _left_out = task_arms(prompt, settings)
    arms, _left_out = task_arms(prompt, settings)
    # Every agent's labels run tasks (its CLI layered into the task's image: docs/tasks.md).
    return prompt_runs(prompt, settings, families=(), revision_root=None, arms=arms)


def _patterns(key: str, value: Any) -> tuple[str, ...]:
    values = (value,) if isinstance(value, str) else tuple(value) if isinstance(
        value, (list, tuple, set, frozenset)) else None
    if not values or not all(isinstance(v, str) and v for v in values):
        raise ValueError(f"skill_lift({key}=…) must be a glob or a list of globs, "
                         f"e.g. {key}=\"qdrant-*\"; got {value!r}")
    return values


def narrow(runs: Iterable[RunSpec], options: Mapping[str, Any]) -> list[RunSpec]:
    """The runs a ``skill_lift(...)`` marker selects: every given key must match (globs,
    ``fnmatch`` rules, case-sensitive). Raises ``ValueError`` naming a bad key or value."""
    unknown = sorted(set(options) - set(NARROWING_KEYS))
    if unknown:
        raise ValueError(f"skill_lift marker: unknown argument(s) {', '.join(unknown)}; use "
                         f"{', '.join(NARROWING_KEYS)} (each a glob or a list of globs)")
    pats = {k: _patterns(k, v) for k, v in options.items()}
    for cond in pats.get("conditions", ()):
        arms = [a for a in ARMS if a != WITH_REF]
        if not any(fnmatch.fnmatchcase(c, cond) for c in arms) and not cond.startswith(
                WITH_REF_PREFIX):
            raise ValueError(f"skill_lift(conditions={cond!r}) matches no condition; use "
                             f"{' or '.join(ARMS)}")

    def hit(key: str, value: str) -> bool:
        return key not in pats or any(fnmatch.fnmatchcase(value, p) for p in pats[key])

    return [r for r in runs
            if hit("prompts", r.prompt.name) and hit("families", r.prompt.family)
            and hit("models", r.model_label) and hit("conditions", r.condition)
            and hit("agents", r.agent)]


_ARM_ALTERNATIVES = "|".join([re.escape(WITH_REF_PREFIX) + r"[^:\[\]]+", *(
    re.escape(a) for a in sorted(ARMS, key=len, reverse=True) if a != WITH_REF)])
_RUN_TAIL = re.compile(rf"::([^:\[\]]+)::({_ARM_ALTERNATIVES})::r(\d+)")


def run_scope(nodeid: str, names_by_path: Mapping[str, str],
              names: Iterable[str]) -> str | None:
    """``run:<prompt>::<model>::<condition>::r<rep>`` for a rubric item or a parametrized
    check of one run; None for any other test id.

    Rubric items: ``<prompt file>::<model>::<condition>::r<rep>::<item>``. Checks:
    ``<file>::<test>[…<prompt>::<model>::<condition>::r<rep>…]`` (other parameters may be
    joined to the run's id with ``-``, so the prompt is the longest known name there).
    """
    head, sep, rest = nodeid.partition("::")
    if not sep:
        return None
    if "[" not in rest:
        parts = rest.split("::")
        name = names_by_path.get(head)
        # A task's verifier test items add ``<file>::<test>`` after the run's id.
        if name is None or len(parts) < 4:
            return None
        return f"run:{name}::{parts[0]}::{parts[1]}::{parts[2]}"
    params = rest.partition("[")[2].removesuffix("]")
    known = sorted(set(names), key=len, reverse=True)
    for match in _RUN_TAIL.finditer(params):
        before = params[:match.start()]
        for name in known:
            if before.endswith(name) and (len(before) == len(name)
                                          or before[-len(name) - 1] == "-"):
                return f"run:{name}{match.group(0)}"
    return None
