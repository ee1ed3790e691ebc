"""The pytest nodes of Anthropic skill-creator ``evals.json`` files.

An evals.json is collected as it is: one child per eval (named ``<skill>-eval-<id>``), then
the same model → condition → rep → rubric-item nodes as a prompt file, so ids read
``<skill>/evals/evals.json::<skill>-eval-<id>::<model>::<condition>::r<rep>::must-<i>``. A
bad eval is a collection error of that eval only; the file's other evals still run.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from pytest_skilllift.model import PromptSpec
from pytest_skilllift.plugin.collect.items import (
    SESSION_KEY,
    declared_prompt_names,
    model_nodes,
)
from pytest_skilllift.run.matrix import keywords_of
from pytest_skilllift.run.prompts import PromptError
from pytest_skilllift.run.skill_creator import load_evals

if TYPE_CHECKING:
    from _pytest._code.code import ExceptionInfo, TerminalRepr, TracebackStyle


class SkillCreatorFile(pytest.File):
    """A skill-creator evals.json: one child per eval."""

    def collect(self) -> Iterator[pytest.Collector]:
        settings = self.config.stash[SESSION_KEY].settings
        for name, spec in load_evals(self.path, settings.skills_root):
            yield EvalNode.from_parent(self, name=name, spec=spec)

    def repr_failure(self, excinfo: ExceptionInfo[BaseException],
                     style: TracebackStyle | None = None) -> str | TerminalRepr:
        if isinstance(excinfo.value, PromptError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


class EvalNode(pytest.Collector):
    """One eval of the file: a prompt of its skill, one child per model."""

    def __init__(self, *, spec: PromptSpec | PromptError, **kw: Any) -> None:
        super().__init__(**kw)
        self.spec = spec

    def collect(self) -> Iterator[pytest.Collector]:
        if isinstance(self.spec, PromptError):
            raise self.spec
        owners = declared_prompt_names(self.config).get(self.spec.name)
        if owners:  # one name, one set of runs (run ids and directories use the name)
            raise PromptError(self.path, "id", f"makes the eval's name {self.spec.name!r}, "
                              f"already the name of the prompt file {owners[0]} (the two "
                              "would share their runs and verdicts)",
                              "rename that prompt file's \"name\" or give the eval another id")
        # Like a prompt file's items: `-k <family>` / `-m "skill_lift(family=…)"` select it.
        family, leaf = keywords_of(self.spec)
        self.extra_keyword_matches.update((family, leaf))
        self.add_marker(pytest.mark.skill_lift(family=family, skill=leaf, prompt=self.spec.name))
        yield from model_nodes(self, self.spec)

    def repr_failure(self, excinfo: ExceptionInfo[BaseException],
                     style: TracebackStyle | None = None) -> str | TerminalRepr:
        if isinstance(excinfo.value, PromptError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)
