"""pytest-skilllift: measure whether agent skills make Claude Code answer better.

The names users write code against (custom checks, the fixtures' types, judges, runners and
their images, tests with the stand-in) are importable from here, and the docs and the shipped
demo import only from here (tests/test_docs_public_surface.py). Each is loaded on first use
(module ``__getattr__``, PEP 562), so ``import pytest_skilllift`` — which every pytest
process does — imports nothing else.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: public name -> the module that defines it
_EXPORTS: dict[str, str] = {
    "SkillLiftRun": "pytest_skilllift.run.view",
    "SkillLiftWeek": "pytest_skilllift.report.week_view",
    "Grader": "pytest_skilllift.judge.protocol",
    "SkillLiftJudge": "pytest_skilllift.judge.session_judge",
    "SessionJudge": "pytest_skilllift.judge.session_judge",
    "Judge": "pytest_skilllift.judge.client",
    "SampledJudge": "pytest_skilllift.judge.samples",
    "JudgeResult": "pytest_skilllift.model",
    "ItemVerdict": "pytest_skilllift.model",
    "RubricItem": "pytest_skilllift.model",
    "PromptSpec": "pytest_skilllift.model",
    "RunSpec": "pytest_skilllift.model",
    "RunOutcome": "pytest_skilllift.model",
    "AgentConfig": "pytest_skilllift.model",
    "Signals": "pytest_skilllift.model",
    "cli_version_mismatch": "pytest_skilllift.model",
    "Runner": "pytest_skilllift.runners.base",
    "LocalRunner": "pytest_skilllift.runners.local",
    "DockerRunner": "pytest_skilllift.runners.docker",
    "sweep_stale": "pytest_skilllift.runners.docker",
    "sweep_stale_names": "pytest_skilllift.runners.docker",
    "build_from_local": "pytest_skilllift.runners.image",
    "build_from_dockerfile": "pytest_skilllift.runners.image",
    "image_cli_version": "pytest_skilllift.runners.image",
    "StandIn": "pytest_skilllift.testing.server",
    "Faults": "pytest_skilllift.testing.server",
    "skill_agent": "pytest_skilllift.testing.agent_script",
    "keyword_judge": "pytest_skilllift.testing.judge_script",
}

__all__ = [  # = _EXPORTS and the version (tests/test_plugin_startup.py checks)
    "AgentConfig",
    "DockerRunner",
    "Faults",
    "Grader",
    "ItemVerdict",
    "Judge",
    "JudgeResult",
    "LocalRunner",
    "PromptSpec",
    "RubricItem",
    "RunOutcome",
    "RunSpec",
    "Runner",
    "SampledJudge",
    "SessionJudge",
    "Signals",
    "SkillLiftJudge",
    "SkillLiftRun",
    "SkillLiftWeek",
    "StandIn",
    "__version__",
    "build_from_dockerfile",
    "build_from_local",
    "cli_version_mismatch",
    "image_cli_version",
    "keyword_judge",
    "skill_agent",
    "sweep_stale",
    "sweep_stale_names",
]

if TYPE_CHECKING:
    from pytest_skilllift.judge.client import Judge
    from pytest_skilllift.judge.protocol import Grader
    from pytest_skilllift.judge.samples import SampledJudge
    from pytest_skilllift.judge.session_judge import SessionJudge, SkillLiftJudge
    from pytest_skilllift.model import (
        AgentConfig,
        ItemVerdict,
        JudgeResult,
        PromptSpec,
        RubricItem,
        RunOutcome,
        RunSpec,
        Signals,
        cli_version_mismatch,
    )
    from pytest_skilllift.report.week_view import SkillLiftWeek
    from pytest_skilllift.run.view import SkillLiftRun
    from pytest_skilllift.runners.base import Runner
    from pytest_skilllift.runners.docker import DockerRunner, sweep_stale, sweep_stale_names
    from pytest_skilllift.runners.image import (
        build_from_dockerfile,
        build_from_local,
        image_cli_version,
    )
    from pytest_skilllift.runners.local import LocalRunner
    from pytest_skilllift.testing.agent_script import skill_agent
    from pytest_skilllift.testing.judge_script import keyword_judge
    from pytest_skilllift.testing.server import Faults, StandIn


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next access is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
