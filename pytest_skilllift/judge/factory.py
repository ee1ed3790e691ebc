"""The judge clients ``--skill-lift-judge-model`` / ``--skill-lift-judges`` name, built.

Above the provider modules (``judge.client``, ``judge.openai_client``,
``judge.google_client``), which import :mod:`~pytest_skilllift.judge.providers` for
prices and key variables: the factory that imports them lives here, so nothing cycles.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_skilllift.judge.providers import JudgeSpec, parse_judge_spec, parse_judges
from pytest_skilllift.model import GOOGLE, OPENAI

if TYPE_CHECKING:  # the modules themselves are imported on use (they import the SDK's glue)
    from pytest_skilllift.judge.batch import BatchJudge
    from pytest_skilllift.judge.client import Judge

__all__ = ["build_batch_judge", "build_batch_judges", "build_judge", "session_judges"]


def session_judges(judge_model: str, judges: Sequence[str]) -> list[JudgeSpec]:
    """The judges a session grades with: the panel when ``judges`` names one (or
    ``judge_model`` is a recorded panel, its judges joined by commas), else the one
    ``judge_model`` (the pinned default when empty)."""
    from pytest_skilllift.judge.client import default_judge_model

    default = default_judge_model()
    if not judges and "," in judge_model:
        judges = judge_model.split(",")  # a panel as week.json records it (judge.panel)
    if judges:
        return parse_judges(",".join(judges), default_model=default)
    return [parse_judge_spec(judge_model or default, default_model=default)]



def build_judge(spec: JudgeSpec | str, *, env: Mapping[str, str] | None = None,
                api_key: str | None = None, base_url: str | None = None,
                **kwargs: Any) -> Judge:
    """The judge client for ``spec`` (a :class:`JudgeSpec` or its text): a
    :class:`~pytest_skilllift.judge.client.Judge` for ``anthropic:``, an
    :class:`~pytest_skilllift.judge.openai_client.OpenAIJudge` or a
    :class:`~pytest_skilllift.judge.google_client.GoogleJudge`. The key and base URL come from
    the arguments, else ``env`` (the session's, e.g. the demo's), else the provider's
    variables; ``kwargs`` are the judge's knobs (evidence, retries, deadlines…). No SDK is
    imported here (the judge imports it on first use, or in ``prepare``)."""
    if isinstance(spec, str):
        from pytest_skilllift.judge.client import default_judge_model

        spec = parse_judge_spec(spec or default_judge_model(),
                                default_model=default_judge_model())
    key = api_key or spec.key(env)
    url = base_url or spec.base_url(env)
    if spec.provider == OPENAI:
        from pytest_skilllift.judge.openai_client import OpenAIJudge

        return OpenAIJudge(spec.model, api_key=key, base_url=url, **kwargs)
    if spec.provider == GOOGLE:
        from pytest_skilllift.judge.google_client import GoogleJudge

        return GoogleJudge(spec.model, api_key=key, base_url=url, **kwargs)
    from pytest_skilllift.judge.client import Judge

    return Judge(spec.model, api_key=key, base_url=url, **kwargs)


def build_batch_judge(spec: JudgeSpec, week_dir: Path, *, env: Mapping[str, str] | None = None,
                      api_key: str | None = None, base_url: str | None = None,
                      **kwargs: Any) -> BatchJudge:
    """The batch client for ``spec`` (``--skill-lift-judge-batch``, ``skilllift judge
    --batch``): :class:`~pytest_skilllift.judge.batch.BatchJudge` (Message Batches) for
    ``anthropic:``, :class:`~pytest_skilllift.judge.foreign_batch.OpenAIBatchJudge` (OpenAI's
    Batch API) or :class:`~pytest_skilllift.judge.foreign_batch.GoogleBatchJudge` (Gemini's
    batch mode). Key and base URL as :func:`build_judge` finds them; ``kwargs`` are the batch
    judge's knobs (poll, log, evidence, ``store``…)."""
    key = api_key or spec.key(env)
    url = base_url or spec.base_url(env)
    if spec.provider in (OPENAI, GOOGLE):
        from pytest_skilllift.judge.foreign_batch import GoogleBatchJudge, OpenAIBatchJudge

        cls = OpenAIBatchJudge if spec.provider == OPENAI else GoogleBatchJudge
        return cls(week_dir, spec.model, api_key=key, base_url=url, **kwargs)
    from pytest_skilllift.judge.batch import BatchJudge

    return BatchJudge(week_dir, spec.model, api_key=key, base_url=url, **kwargs)


def build_batch_judges(specs: Sequence[JudgeSpec], week_dir: Path, **kwargs: Any
                       ) -> BatchJudge | list[tuple[str, BatchJudge]]:
    """One batch judge (a single spec), or a panel's ``(name, judge)`` pairs sharing one
    batch file — what :func:`~pytest_skilllift.run.batch_grade.grade_in_batches` takes."""
    from pytest_skilllift.judge.batch import BatchStore

    if len(specs) == 1:
        return build_batch_judge(specs[0], week_dir, **kwargs)
    store = BatchStore(week_dir)
    return [(spec.name, build_batch_judge(spec, week_dir, store=store, **kwargs))
            for spec in specs]
