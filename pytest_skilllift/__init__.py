"""pytest-skilllift: measure whether agent skills make Claude Code answer better.

The names users write code against (custom checks, judges, runners, tests with the stand-in)
are importable from here; each is loaded on first use (module ``__getattr__``, PEP 562), so
``import pytest_skilllift`` — which every pytest process does — imports nothing else.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: public name -> the module that defines it
_EXPORTS: dict[str, str] = {
    "SkillLiftRun": "pytest_skilllift.run.view",
    "Grader": "pytest_skilllift.judge.protocol",
    "SkillLiftJudge": "pytest_skilllift.judge.session_judge",
    "SessionJudge": "pytest_skilllift.judge.session_judge",
    "JudgeResult": "pytest_skilllift.model",
    "ItemVerdict": "pytest_skilllift.model",
    "RubricItem": "pytest_skilllift.model",
    "PromptSpec": "pytest_skilllift.model",
    "RunSpec": "pytest_skilllift.model",
    "RunOutcome": "pytest_skilllift.model",
    "AgentConfig": "pytest_skilllift.model",
    "Signals": "pytest_skilllift.model",
    "Runner": "pytest_skilllift.runners.base",
    "StandIn": "pytest_skilllift.testing.server",
}

__all__ = [  # = _EXPORTS and the version (tests/test_startup.py checks)
    "AgentConfig", "Grader", "ItemVerdict", "JudgeResult", "PromptSpec", "RubricItem",
    "RunOutcome", "RunSpec", "Runner", "SessionJudge", "Signals", "SkillLiftJudge",
    "SkillLiftRun", "StandIn", "__version__",
]

if TYPE_CHECKING:
    from pytest_skilllift.judge.protocol import Grader
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
    )
    from pytest_skilllift.run.view import SkillLiftRun
    from pytest_skilllift.runners.base import Runner
    from pytest_skilllift.testing.server import StandIn


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next access is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
