"""The judge as the ``skill_lift_judge`` fixture hands it out, and how the week grades through it.

:class:`SessionJudge` is the fixture's default value: the configured judge of the session
(:class:`~pytest_skilllift.judge.samples.SampledJudge` around the
:class:`~pytest_skilllift.judge.client.Judge`, or under ``-n`` the controller's shared one
reached through :class:`~pytest_skilllift.judge.service.RemoteGrader`) behind one small
method, ``grade(prompt, answer, rubric)``. It adds nothing to grading — the blind protocol,
the shuffle, the evidence policy, the judge samples and tie-break, retries and cost
accounting all stay in the wrapped judge, and its result (``calls``, ``samples``,
``contested`` items…) comes back as is.

:class:`FixtureGrader` adapts whatever the fixture returns (the default, a wrapper of it, or a
replacement from a ``conftest.py``) to what the run engine calls, so a user's judge can never
turn a grading failure into a crash or a silent zero: an exception or a wrong return type
leaves the run ungraded, with a reason naming the implementation (the methodology's
"errored, never zero"). No pytest here.
"""

from __future__ import annotations

import inspect
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from pytest_skilllift.judge.protocol import PROMPT_VERSION, Grader
from pytest_skilllift.model import JudgeResult, PromptSpec, RubricItem
from pytest_skilllift.week.columns import ITEM_TYPES

__all__ = ["FixtureGrader", "SessionJudge", "SkillLiftJudge", "as_rubric", "describe"]


def as_rubric(rubric: Sequence[RubricItem | Mapping[str, Any]]) -> tuple[RubricItem, ...]:
    """Rubric items from ``RubricItem`` objects or ``{"type", "text"}`` dicts (a prompt file's
    shape); dicts are numbered per type in order, as in a prompt file."""
    counters = dict.fromkeys(ITEM_TYPES, 0)
    items: list[RubricItem] = []
    for pos, entry in enumerate(rubric):
        if isinstance(entry, RubricItem):
            items.append(entry)
            continue
        if not isinstance(entry, Mapping):
            raise TypeError(f"rubric[{pos}] is a {type(entry).__name__}; pass RubricItem "
                            "objects or {\"type\": \"must\", \"text\": \"…\"} dicts")
        kind, text = entry.get("type"), entry.get("text")
        if kind not in counters:
            raise ValueError(f"rubric[{pos}].type is {kind!r}; use one of "
                             f"{', '.join(ITEM_TYPES)}")
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"rubric[{pos}].text must be a non-empty string")
        counters[kind] += 1
        items.append(RubricItem(type=kind, text=text.strip(), index=counters[kind]))
    return tuple(items)


class SkillLiftJudge(Protocol):
    """What a ``skill_lift_judge`` fixture gives: at least ``grade(prompt, answer, rubric)``
    returning a :class:`~pytest_skilllift.model.JudgeResult` (a ``seed`` keyword is passed
    when ``grade`` accepts one). :class:`SessionJudge`, the default, is one; so is a
    ``conftest.py`` replacement or wrapper."""

    def grade(self, prompt: str, answer: str, rubric: Sequence[RubricItem], /) -> JudgeResult:
        """Grade ``answer`` to ``prompt`` against ``rubric``."""
        ...


class SessionJudge:
    """The session's configured judge, as the ``skill_lift_judge`` fixture gives it.

    ``grade(prompt, answer, rubric)`` returns a :class:`~pytest_skilllift.model.JudgeResult`:
    ``verdicts`` (one :class:`~pytest_skilllift.model.ItemVerdict` per graded item, with its
    evidence quote and whether the quote was found in the answer), ``ungraded``, ``error``,
    ``cost_usd``, ``model`` and ``notes``. It never raises for an API failure: the result
    carries ``error`` instead. ``calls`` and ``cost_usd`` count what went through this object
    in this process.
    """

    def __init__(self, grader: Callable[[], Grader]) -> None:
        # A factory: building the client imports the SDK, which the session warms up in the
        # background; the fixture must not wait for it before the first run needs it.
        self._grader = grader
        self.calls = 0
        self.cost_usd = 0.0

    @property
    def model(self) -> str:
        """The judge model id (under ``-n`` known once the controller has answered once)."""
        return str(getattr(self._grader(), "model", "") or "")

    @property
    def prompt_version(self) -> str:
        """Version of the judge prompt's wording (recorded with every grade)."""
        return str(getattr(self._grader(), "prompt_version", PROMPT_VERSION))

    def grade(self, prompt: str | PromptSpec, answer: str,
              rubric: Sequence[RubricItem | Mapping[str, Any]], *,
              seed: int | str | None = None) -> JudgeResult:
        """Grade ``answer`` to ``prompt`` against ``rubric``: one blind, shuffled judge call.

        ``seed`` fixes the shuffle (the week passes the run id, so a regrade shows the items
        in the same order); by default it derives from the prompt text.
        """
        text = prompt.prompt if isinstance(prompt, PromptSpec) else str(prompt)
        items = as_rubric(rubric)
        if seed is None:
            seed = zlib.crc32(text.encode("utf-8"))
        result: JudgeResult = self._grader().grade(text, answer, items, seed)
        self.calls += 1
        self.cost_usd += result.cost_usd
        return result

    def __repr__(self) -> str:
        # Not the client's repr: building it imports the SDK (and may need credentials).
        return f"SessionJudge(calls={self.calls}, cost_usd={self.cost_usd:.4f})"


def describe(obj: object) -> str:
    """``module.QualName`` of an object's class (how provenance and errors name a judge)."""
    cls = type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


def _takes_seed(grade: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(grade).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "seed" or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


class FixtureGrader:
    """What the run engine grades through: the ``skill_lift_judge`` fixture's value.

    ``seed`` is passed when the judge's ``grade`` accepts it (or ``**kwargs``), so a minimal
    replacement may define just ``grade(prompt, answer, rubric)``. ``provenance`` is written
    into each graded run's ``grades.json``.
    """

    def __init__(self, judge: object, default: object) -> None:
        self.judge = judge
        self.overridden = judge is not default
        self.name = describe(judge)
        grade = getattr(judge, "grade", None)
        if not callable(grade):
            raise TypeError(f"skill_lift_judge returned {self.name}, which has no grade() "
                            "method; return an object with grade(prompt, answer, rubric)")
        self._grade = grade
        self._seed = _takes_seed(grade)

    @property
    def model(self) -> str:
        """The fixture judge's ``model`` ("" when it has none)."""
        return str(getattr(self.judge, "model", "") or "")

    @property
    def provenance(self) -> dict[str, Any]:
        """What each graded run's grades.json records of the judge: its prompt version, whether
        the fixture was overridden, and by what."""
        version = getattr(self.judge, "prompt_version", "")
        return {"prompt_version": str(version or ""),
                "judge_overridden": self.overridden,
                "judge_impl": self.name}

    def grade(self, prompt_text: str, answer: str, items: Sequence[RubricItem],
              seed: int | str) -> JudgeResult:
        """Grade through the fixture's judge; what it raises or a reply that is not a
        JudgeResult is the run's judge error."""
        items = tuple(items)
        try:
            if self._seed:
                result = self._grade(prompt_text, answer, items, seed=seed)
            else:
                result = self._grade(prompt_text, answer, items)
        except Exception as exc:
            return self._failed(items, f"skill_lift_judge ({self.name}) raised "
                                       f"{type(exc).__name__}: {exc}")
        if not isinstance(result, JudgeResult):
            return self._failed(items, f"skill_lift_judge ({self.name}) returned a "
                                       f"{type(result).__name__}, not a JudgeResult; return "
                                       "the wrapped judge's result (or build a JudgeResult)")
        return result

    def _failed(self, items: tuple[RubricItem, ...], reason: str) -> JudgeResult:
        # Same contract as an exhausted API retry: ungraded and flagged, never scored as zero.
        return JudgeResult(verdicts=(), cost_usd=0.0, model=self.model, error=reason,
                           ungraded=items)
