"""Hooks pytest-skilllift calls, for a ``conftest.py`` or another plugin to implement.

Registered through ``pytest_addhooks`` (as pytest-xdist does with its ``newhooks.py``).
Implement one by defining a function of the same name in a ``conftest.py`` or a plugin;
pytest passes only the arguments the implementation names. Examples: docs/extending.md.

Each run hook is called exactly once per run of the week, in the process that did the work
(an xdist worker under ``-n``): a resumed session does not announce runs an earlier session
finished. An implementation that raises is reported by name (its plugin and function) in the
terminal summary, and the session exits 1, like a bad prompt file; the other implementations
still run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_skilllift.model import ItemVerdict
    from pytest_skilllift.run.view import SkillLiftRun
    from pytest_skilllift.runners.base import Runner


@pytest.hookspec(firstresult=True)
def pytest_skilllift_make_runner(config: pytest.Config) -> Runner | None:
    """Return the runner every run of this process executes in, or None for the configured
    one (``--skill-lift-runner``: local or docker).

    A runner has ``name``, ``run(spec, cfg, run_dir) -> RunOutcome`` (the real CLI, writing
    the stream-json transcript to ``run_dir/stdout.txt``) and ``close()``; see
    ``pytest_skilllift.runners.base.Runner`` for the contract (a fresh environment per run,
    the skill family installed only in the with-skill arm). Called once per process, when
    its first run is generated. The first non-None result wins.
    """


@pytest.hookspec
def pytest_skilllift_run_finished(config: pytest.Config, run: SkillLiftRun) -> None:
    """A run was just generated (``run.status`` says whether it will be scored), before it is
    graded. ``run`` is a :class:`pytest_skilllift.run.view.SkillLiftRun`: final answer,
    transcript path and parsed events, signals, audit status, cost."""


@pytest.hookspec
def pytest_skilllift_run_graded(config: pytest.Config, run: SkillLiftRun,
                                verdicts: tuple[ItemVerdict, ...]) -> None:
    """A run was just graded by the ``skill_lift_judge`` fixture: ``verdicts`` holds one
    :class:`pytest_skilllift.model.ItemVerdict` per graded rubric item (``item``,
    ``verdict``, ``evidence``, ``evidence_ok``…), and ``run.grades`` the stored rows. Not
    called for an excluded run, nor when the judge failed (the run is graded later)."""


@pytest.hookspec
def pytest_skilllift_scorecard_sections(config: pytest.Config,
                                        scorecard: dict[str, Any]) -> Any:
    """Return extra scorecard sections: ``(title, markdown)``, ``(title, markdown, data)``
    or a list of them (or None). ``scorecard`` is the scorecard.json dict, written once the
    session ends (on the controller under ``-n``). Each section is appended to scorecard.md
    as ``## <title>``; scorecard.json lists them under ``extra`` with their ``data``.
    ``skilllift summarize`` (no pytest session) leaves them out."""
