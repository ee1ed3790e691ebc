"""Judges from other families: the OpenAI (Responses API) and Google (Gemini API) judges
through the real ``openai`` and ``google-genai`` SDKs against the stand-in, which grades their
requests with the same scripted judges; the spec syntax, families and prices."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_skilllift.judge.factory import build_judge, session_judges
from pytest_skilllift.judge.google_client import GoogleJudge
from pytest_skilllift.judge.openai_client import OpenAIJudge
from pytest_skilllift.judge.protocol import JUDGE_MARKER, TOOL_NAME
from pytest_skilllift.judge.providers import parse_judge_spec, parse_judges, price_rates
from pytest_skilllift.model import family_of, label_family, same_family_labels, split_judge
from pytest_skilllift.testing import StandIn
from pytest_skilllift.testing.judge_script import keyword_judge, make_judge
from pytest_skilllift.testing.server import Faults
from tests.test_judge_client import ANSWER, EXPECTED, ITEMS

KEY = "sk-other-test-DO-NOT-WRITE-0123456789"
SPECS = ("openai:gpt-5-mini", "google:gemini-2.5-flash")
API = {"openai:gpt-5-mini": "codex", "google:gemini-2.5-flash": "gemini-cli"}


def judge(api: StandIn, spec: str, **kw: Any) -> Any:
    options: dict[str, Any] = {"api_key": KEY, "base_url": api.base_url, "timeout_s": 5.0,
                               "backoff_base_s": 0.01, "backoff_max_s": 0.02}
    return build_judge(spec, **{**options, **kw})


def verdicts(result: Any) -> list[tuple[str, str]]:
    return [(v.item.key, v.verdict) for v in result.verdicts]


@pytest.mark.parametrize("spec", SPECS)
def test_a_judge_of_another_family_grades_through_its_own_api(spec: str) -> None:
    """One request in the provider's own API (Responses / generateContent), blind, its system
    prompt carrying the marker, the verdict function forced; the verdicts, their verified
    quotes and a price come back as the Anthropic judge's do, named provider:model."""
    with StandIn(judge=keyword_judge, api_key=KEY) as api:
        result = judge(api, spec).grade("How do I fuse dense and sparse results?", ANSWER,
                                        ITEMS, "run-1")
        sent = [r for r in api.requests if r.kind == "judge"]
    assert result.error is None, result.error
    assert verdicts(result) == EXPECTED
    assert all(v.evidence_ok for v in result.verdicts)
    assert result.model == spec and result.calls == 1 and result.cost_usd > 0
    assert len(sent) == 1 and sent[0].api == API[spec] and sent[0].ok
    sent_body = sent[0].body
    assert sent_body is not None
    body = json.dumps(sent_body)
    assert JUDGE_MARKER in body and TOOL_NAME in body and "run-1" not in body
    if spec.startswith("openai:"):
        assert sent_body["tool_choice"] == {"type": "function", "name": TOOL_NAME}
        assert sent[0].path.endswith("/responses")
    else:
        config = sent_body["toolConfig"]["functionCallingConfig"]
        assert config["mode"] == "ANY" and config["allowedFunctionNames"] == [TOOL_NAME]
    assert KEY not in repr(result) and KEY not in body


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("fault", ["429", "500", "reset", "truncate"])
def test_transient_failures_are_retried_by_our_loop(spec: str, fault: str) -> None:
    """The SDKs' own retries are off: our loop retries a 429, a 500, a dropped connection and
    a body cut in half, once each, and names the retry in the notes."""
    faults = Faults(first_n=1, kinds=(fault,), only="judge", hang_s=0.2)
    with StandIn(judge=keyword_judge, api_key=KEY, faults=faults) as api:
        result = judge(api, spec).grade("Q?", ANSWER, ITEMS, "run-1")
        attempts = [r for r in api.requests if r.kind == "judge"]
    assert result.error is None, result.error
    assert verdicts(result) == EXPECTED
    assert len(attempts) == 2 and not attempts[0].ok and attempts[1].ok
    assert len([n for n in result.notes if "retried after" in n]) == 1


@pytest.mark.parametrize("spec", SPECS)
def test_exhausted_retries_leave_the_run_ungraded_never_zero(spec: str) -> None:
    faults = Faults(first_n=10, kinds=("500",), only="judge")
    with StandIn(judge=keyword_judge, api_key=KEY, faults=faults) as api:
        result = judge(api, spec, max_retries=2).grade("Q?", ANSWER, ITEMS, "run-1")
        assert api.count("judge", ok_only=False) == 3
    assert result.error and "after 3 attempts" in result.error and "HTTP 500" in result.error
    assert result.verdicts == () and result.ungraded == ITEMS


@pytest.mark.parametrize("spec", SPECS)
def test_a_wrong_key_is_not_retried(spec: str) -> None:
    with StandIn(judge=keyword_judge, api_key=KEY) as api:
        result = judge(api, spec, api_key="wrong-key").grade("Q?", ANSWER, ITEMS, "run-1")
        assert api.count("judge", ok_only=False) == 1
    assert result.error and "not retryable" in result.error and "401" in result.error
    assert "wrong-key" not in json.dumps(result.notes) + result.error


@pytest.mark.parametrize("spec", SPECS)
def test_a_quote_not_in_the_answer_earns_nothing_for_every_provider(spec: str) -> None:
    with StandIn(judge=make_judge("fabricated-evidence"), api_key=KEY) as api:
        result = judge(api, spec).grade("Q?", ANSWER, ITEMS, "run-1")
    assert result.error is None
    rejected = [v for v in result.verdicts if not v.evidence_ok]
    assert rejected and all(v.credit == 0 and v.claimed_verdict for v in rejected)


def test_a_google_judge_without_a_key_names_the_variables(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    with StandIn(judge=keyword_judge) as api:
        result = GoogleJudge("gemini-2.5-flash", base_url=api.base_url).grade(
            "Q?", ANSWER, ITEMS, "run-1")
        assert api.count("judge", ok_only=False) == 0
    assert result.error and "GEMINI_API_KEY" in result.error


def test_the_provider_variables_reach_the_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    """OPENAI_BASE_URL / OPENAI_API_KEY and GOOGLE_GEMINI_BASE_URL / GEMINI_API_KEY: each
    judge finds its endpoint and key in its own variables."""
    with StandIn(judge=keyword_judge, api_key=KEY) as api:
        for var in ("OPENAI_BASE_URL", "GOOGLE_GEMINI_BASE_URL"):
            monkeypatch.setenv(var, api.base_url)
        for var in ("OPENAI_API_KEY", "GEMINI_API_KEY"):
            monkeypatch.setenv(var, KEY)
        for spec in SPECS:
            j = build_judge(spec)
            assert isinstance(j, OpenAIJudge | GoogleJudge) and j.base_url == api.base_url
            assert j.grade("Q?", ANSWER, ITEMS, "s").error is None
        assert api.count("judge") == 2


def test_judge_specs_parse_and_name_the_fix() -> None:
    assert split_judge("openai:gpt-5") == ("openai", "gpt-5")
    assert split_judge("claude-sonnet-4-5") == ("anthropic", "claude-sonnet-4-5")
    # A Bedrock-style Claude id keeps its colon.
    assert split_judge("anthropic.claude-3-haiku-v1:0")[0] == "anthropic"
    with pytest.raises(ValueError, match=r"unknown provider 'mistral'.*openai:MODEL"):
        split_judge("mistral:large")
    with pytest.raises(ValueError, match="no model after google"):
        split_judge("google:")
    assert parse_judge_spec("google:gemini-2.5-pro").name == "google:gemini-2.5-pro"
    assert parse_judge_spec("claude-opus-4-5").name == "claude-opus-4-5"
    with pytest.raises(ValueError, match="named twice"):
        parse_judges("openai:gpt-5,openai:gpt-5")
    assert [s.name for s in session_judges("", ("a-claude", "openai:o3"))] == [
        "a-claude", "openai:o3"]


def test_families_of_judges_and_labels() -> None:
    assert [family_of(m) for m in ("claude-sonnet-4-5", "demo-haiku", "openai:gpt-5",
                                   "gpt-5.5", "o3", "google:gemini-2.5-pro",
                                   "gemini-2.5-flash", "llama-3")] == [
        "anthropic", "anthropic", "openai", "openai", "openai", "google", "google", ""]
    assert label_family("codex", "gpt-5.5") == "openai"
    assert label_family("gemini-cli", "some-model") == "google"
    assert same_family_labels(["claude-sonnet-4-5", "openai:gpt-5"],
                              {"sonnet": "anthropic", "flash": "google"}) == {
        "sonnet": ["claude-sonnet-4-5"]}


def test_other_providers_prices() -> None:
    assert price_rates("openai", "gpt-5-mini-2025-08-07")[:2] == (0.25, 2.0)
    assert price_rates("google", "gemini-2.5-flash")[:2] == (0.30, 2.50)
    rate_in, rate_out, note = price_rates("openai", "gpt-9-ultra")
    assert note and "not in the openai price table" in note and (rate_in, rate_out) > (0, 0)


def test_a_recorded_panel_is_read_back_as_its_judges() -> None:
    """week.json records a panel as its judges joined by commas: a regrade reads them back."""
    assert [s.name for s in session_judges("claude-sonnet-4-5,openai:gpt-5", ())] == [
        "claude-sonnet-4-5", "openai:gpt-5"]
    assert [s.name for s in session_judges("", ())] != []  # the pinned default
