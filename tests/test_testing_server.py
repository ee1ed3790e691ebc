"""The Messages API stand-in, seen through the official ``anthropic`` SDK."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest

from pytest_skilllift.testing import JUDGE_MARKER, Faults, Reply, StandIn
from pytest_skilllift.testing.agent_script import (
    best_skill,
    listed_skills,
    loaded_skills,
    make_agent,
    skill_agent,
    user_prompt,
)
from pytest_skilllift.testing.server import classify, sse_events

TOOLS = [{"name": "Read", "description": "read a file",
          "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}}}]


def client(api: StandIn, **kwargs: Any) -> anthropic.Anthropic:
    """An SDK client on the stand-in; no retries unless asked, so faults surface."""
    kwargs.setdefault("max_retries", 0)
    kwargs.setdefault("timeout", 10.0)
    return anthropic.Anthropic(base_url=api.base_url, api_key="sk-ant-test-key", **kwargs)


def ask(c: anthropic.Anthropic, *, system: str = "", tools: bool = True,
        stream: bool = True) -> anthropic.types.Message:
    kwargs: dict[str, Any] = {
        "model": "claude-sonnet-4-6", "max_tokens": 256,
        "messages": [{"role": "user", "content": "hello there"}],
    }
    if system:
        kwargs["system"] = system
    if tools:
        kwargs["tools"] = TOOLS
    if stream:
        with c.messages.stream(**kwargs) as s:
            return s.get_final_message()
    message = c.messages.create(**kwargs)
    assert isinstance(message, anthropic.types.Message)  # not a stream: none was asked for
    return message


@pytest.fixture
def api() -> Iterator[StandIn]:
    with StandIn(agent=lambda body: Reply.text("The answer is 42.")) as server:
        yield server


# -- wire format ---------------------------------------------------------------------------


def test_streaming_text_is_parsed_by_the_sdk(api: StandIn) -> None:
    long = "word " * 60  # several text_delta events
    api.agent = lambda body: Reply.text(long)
    with client(api).messages.stream(
        model="claude-sonnet-4-6", max_tokens=100, tools=TOOLS,  # type: ignore[arg-type]
        messages=[{"role": "user", "content": "hi"}],
    ) as stream:
        events = [e.type for e in stream]
        msg = stream.get_final_message()
    assert msg.content[0].type == "text" and msg.content[0].text == long
    assert msg.stop_reason == "end_turn"
    assert msg.usage.input_tokens > 0 and msg.usage.output_tokens > 1
    assert msg.model == "claude-sonnet-4-6"
    assert events[0] == "message_start" and events[-1] == "message_stop"
    assert "content_block_stop" in events and "message_delta" in events
    assert api.requests[0].stream and api.requests[0].kind == "agent"


def test_streaming_tool_use_input_json_roundtrips(api: StandIn) -> None:
    tool_input = {"file_path": "/a/b/SKILL.md", "nested": {"k": [1, 2, 3]}, "u": "ünï"}
    api.agent = lambda body: Reply.tool("Read", tool_input, text="Let me read it.")
    msg = ask(client(api))
    assert [b.type for b in msg.content] == ["text", "tool_use"]
    block = msg.content[1]
    assert block.type == "tool_use"
    assert block.name == "Read" and block.input == tool_input and block.id.startswith("toolu_")
    assert msg.stop_reason == "tool_use"


def test_non_streaming_json(api: StandIn) -> None:
    api.agent = lambda body: Reply.text("plain", usage={"input_tokens": 1234}, model="snap-1")
    msg = ask(client(api), stream=False)
    assert msg.content[0].type == "text" and msg.content[0].text == "plain"
    assert msg.usage.input_tokens == 1234 and msg.model == "snap-1"
    assert not api.requests[0].stream


def test_sse_event_sequence_shape() -> None:
    msg = {"id": "m", "model": "x", "content": [{"type": "text", "text": "hi"}],
           "stop_reason": "end_turn", "usage": {"input_tokens": 5, "output_tokens": 3}}
    names = [name for name, _ in sse_events(msg)]
    assert names == ["message_start", "ping", "content_block_start", "content_block_delta",
                     "content_block_stop", "message_delta", "message_stop"]


def test_chunked_request_body(api: StandIn) -> None:
    body = json.dumps({"model": "m", "max_tokens": 5, "tools": TOOLS,
                       "messages": [{"role": "user", "content": "hi"}]}).encode()
    req = urllib.request.Request(api.base_url + "/v1/messages", method="POST",
                                 data=iter([body[:10], body[10:]]),
                                 headers={"content-type": "application/json",
                                          "transfer-encoding": "chunked"})
    with urllib.request.urlopen(req, timeout=5) as resp:
        assert json.loads(resp.read())["content"][0]["text"] == "The answer is 42."
    assert api.count("agent") == 1


def test_count_tokens_and_other_paths(api: StandIn) -> None:
    n = client(api).messages.count_tokens(
        model="claude-sonnet-4-6", messages=[{"role": "user", "content": "x" * 400}])
    assert n.input_tokens >= 100
    with urllib.request.urlopen(api.base_url + "/api/hello", timeout=5) as resp:
        assert resp.status == 200
    paths = [(r.kind, r.path) for r in api.requests]
    assert ("aux", "/api/hello") in paths
    assert api.count("aux") == 2 and api.count("agent") == 0


# -- routing -------------------------------------------------------------------------------


def test_judge_routing_and_missing_judge_is_a_clear_500(api: StandIn) -> None:
    with pytest.raises(anthropic.InternalServerError) as err:
        ask(client(api), system=f"{JUDGE_MARKER} grade this", tools=False, stream=False)
    assert "no judge handler" in str(err.value)
    api.judge = lambda body: Reply.text('{"verdicts": []}')
    msg = ask(client(api), system=f"You grade. {JUDGE_MARKER}", tools=False)
    assert msg.content[0].type == "text" and msg.content[0].text == '{"verdicts": []}'
    assert [r.kind for r in api.requests] == ["judge", "judge"]
    assert api.count("judge") == 1 and api.count("judge", ok_only=False) == 2


def test_classify() -> None:
    assert classify({"system": [{"type": "text", "text": JUDGE_MARKER}], "tools": TOOLS}) == "judge"
    assert classify({"system": "x", "tools": TOOLS}) == "agent"
    assert classify({"system": "Generate a title as JSON"}) == "aux"


def test_aux_calls_get_sensible_answers(api: StandIn) -> None:
    msg = ask(client(api), system="Generate a concise title; reply with JSON", tools=False)
    assert msg.content[0].type == "text"
    assert json.loads(msg.content[0].text)["title"]
    assert api.count("aux") == 1


def test_handler_exception_becomes_api_error(api: StandIn) -> None:
    def broken(body: dict[str, Any]) -> Reply:
        raise RuntimeError("script bug")

    api.agent = broken
    with pytest.raises(anthropic.InternalServerError, match="script bug"):
        ask(client(api))


def test_api_key_is_enforced() -> None:
    with StandIn(agent=lambda b: Reply.text("ok"), api_key="sk-ant-test-SECRET-1") as api:
        with pytest.raises(anthropic.AuthenticationError):
            ask(client(api))  # wrong key
        good = anthropic.Anthropic(base_url=api.base_url, api_key="sk-ant-test-SECRET-1",
                                   max_retries=0)
        assert ask(good).content
        bearer = anthropic.Anthropic(base_url=api.base_url, auth_token="sk-ant-test-SECRET-1",
                                     max_retries=0)
        assert ask(bearer).content
        assert [r.status for r in api.requests] == [401, 200, 200]


# -- faults --------------------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "error"), [
    ("429", anthropic.RateLimitError),
    ("529", anthropic.APIStatusError),
    ("500", anthropic.InternalServerError),
    ("reset", anthropic.APIConnectionError),
])
@pytest.mark.parametrize("stream", [True, False])
def test_fault_kinds_surface_in_the_sdk(kind: str, error: type[Exception], stream: bool) -> None:
    faults = Faults(first_n=1, kinds=(kind,), retry_after=0.25)
    with StandIn(agent=lambda b: Reply.text("fine"), faults=faults) as api:
        with pytest.raises(error) as info:
            ask(client(api), stream=stream)
        if isinstance(info.value, anthropic.APIStatusError):
            assert info.value.status_code == int(kind)
            body = info.value.body
            assert isinstance(body, dict) and body["type"] == "error"
            expected = {"429": "rate_limit_error", "529": "overloaded_error",
                        "500": "api_error"}[kind]
            assert body["error"]["type"] == expected
            if kind == "429":
                assert info.value.response.headers["retry-after"] == "0.25"
        # The fault is spent: the next request succeeds.
        assert ask(client(api), stream=stream).content
        assert api.requests[0].fault == kind and api.requests[1].fault is None
        assert api.count() == 1 and api.count(ok_only=False) == 2


def _is_transport_error(exc: BaseException) -> bool:
    """The SDK wraps transport errors in APIConnectionError for a whole response, but
    raises the HTTP library's own error (httpx2.*) when a stream breaks mid-iteration."""
    return isinstance(exc, anthropic.APIConnectionError) or type(exc).__module__.startswith(
        ("httpx", "httpcore"))


@pytest.mark.parametrize("stream", [True, False])
def test_truncated_response_is_an_error_for_the_sdk(stream: bool) -> None:
    with StandIn(agent=lambda b: Reply.text("x" * 400),
                 faults=Faults(first_n=1, kinds=("truncate",))) as api:
        with pytest.raises(Exception) as info:
            ask(client(api), stream=stream)
        assert _is_transport_error(info.value), repr(info.value)
        text = f"{info.value} {info.value.__cause__}"
        assert "incomplete" in text or "closed" in text, text
        assert [r.fault for r in api.requests] == ["truncate"]
        assert api.count() == 0


def test_timeout_fault_is_bounded_and_times_out_the_client() -> None:
    with StandIn(agent=lambda b: Reply.text("late"),
                 faults=Faults(first_n=1, kinds=("timeout",), hang_s=2.0)) as api:
        t0 = time.monotonic()
        with pytest.raises(anthropic.APITimeoutError):
            ask(client(api, timeout=0.5))
        assert time.monotonic() - t0 < 2.0
    # stop() woke the hanging handler; nothing lingers.


@pytest.mark.slow
def test_sdk_retries_through_faults() -> None:
    faults = Faults(first_n=2, kinds=("529", "reset"))
    with StandIn(agent=lambda b: Reply.text("eventually"), faults=faults) as api:
        msg = ask(client(api, max_retries=3))
        assert msg.content[0].type == "text" and msg.content[0].text == "eventually"
        assert [r.fault for r in api.requests] == ["529", "reset", None]


def test_fault_rate_is_seeded_and_only_targets_one_kind() -> None:
    def pattern(seed: int) -> list[str | None]:
        faults = Faults(rate=0.5, kinds=("500",), seed=seed, only="agent")
        with StandIn(agent=lambda b: Reply.text("a"), judge=lambda b: Reply.text("j"),
                     faults=faults) as api:
            c = client(api)
            for _ in range(12):
                with _SwallowInjected500():
                    ask(c, stream=False)
                ask(c, system=JUDGE_MARKER, tools=False, stream=False)  # never faulted
            assert all(r.fault is None for r in api.requests if r.kind == "judge")
            return [r.fault for r in api.requests if r.kind == "agent"]

    first, again, other = pattern(7), pattern(7), pattern(8)
    assert first == again
    assert first != other
    assert 0 < first.count("500") < 12


class _SwallowInjected500:
    """Swallow the injected 500 only (a context manager for the rate test)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, typ: object, exc: object, tb: object) -> bool:
        return isinstance(exc, anthropic.InternalServerError)


def test_faults_validate_their_arguments() -> None:
    with pytest.raises(ValueError, match="unknown fault"):
        Faults(kinds=("418",))
    with pytest.raises(ValueError, match="only"):
        Faults(only="aux")


@pytest.mark.slow
def test_latency_and_concurrent_counting() -> None:
    """Requests are served side by side, each after the latency, and all are counted.

    Side by side: the agent answers only once all six requests are inside it at once (a
    barrier a server that took one request at a time could never pass). The latency: every
    answer left after the last request's arrival (the server's own timestamps) plus the
    latency. Both are lower bounds and orderings, so a loaded machine cannot fail them; the
    timeouts only stop a broken server from hanging the test."""
    n, latency = 6, 0.3
    inside = threading.Barrier(n)

    def agent(body: dict[str, Any]) -> Reply:
        inside.wait(timeout=120)  # BrokenBarrierError → the request is answered 500
        return Reply.text("slow")

    answered: list[float] = []
    errors: list[BaseException] = []

    def one(api: StandIn) -> None:
        try:
            ask(client(api, timeout=180.0))
            answered.append(time.time())
        except BaseException as exc:
            errors.append(exc)

    with StandIn(agent=agent, latency_s=latency) as api:
        threads = [threading.Thread(target=one, args=(api,)) for _ in range(n)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert errors == [] and len(answered) == n
        assert api.count("agent") == n and len(api.requests) == n
        assert all(r.ok for r in api.requests)  # the barrier held: all six were inside at once
        last_arrival = max(r.ts for r in api.requests)
        assert min(answered) >= last_arrival + latency


# -- the scripted agent (request-level, no CLI) --------------------------------------------

LISTING = (
    "<system-reminder>\nThe following skills are available for use with the Skill tool:\n\n"
    "- debug: Debug a failing program step by step.\n"
    "- demo-widgets: Guides widget assembly and tuning. Use when someone asks how to "
    "calibrate widget torque.\n</system-reminder>"
)


def _body(*extra: dict[str, Any], prompt: str = "How do I calibrate widget torque?"
          ) -> dict[str, Any]:
    return {
        "model": "m",
        "tools": [{"name": "Skill"}, {"name": "Read"}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": LISTING},
                                                  {"type": "text", "text": prompt}]}, *extra],
    }


def test_agent_reads_the_listing_and_picks_the_best_skill() -> None:
    body = _body()
    assert listed_skills(body) == {
        "debug": "Debug a failing program step by step.",
        "demo-widgets": "Guides widget assembly and tuning. Use when someone asks how to "
                        "calibrate widget torque.",
    }
    assert user_prompt(body) == "How do I calibrate widget torque?"
    reply = skill_agent(body)
    assert reply.stop_reason == "tool_use"
    assert reply.content[0]["name"] == "Skill"
    assert reply.content[0]["input"] == {"skill": "demo-widgets"}
    assert best_skill("bake a cake", listed_skills(body)) is None


def test_agent_answers_from_the_injected_skill_body() -> None:
    body = _body(
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Skill",
                                           "input": {"skill": "demo-widgets"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1",
             "content": "Launching skill: demo-widgets"},
            {"type": "text", "text": "Base directory for this skill: /h/.claude/skills/demo-widgets"
                                     "\n\n# Demo\n\n- Use the WX-7 torque profile always.\n"},
        ]},
    )
    assert loaded_skills(body)[0].base_dir == "/h/.claude/skills/demo-widgets"
    reply = skill_agent(body)
    assert reply.stop_reason == "end_turn"
    assert "WX-7 torque profile" in reply.content[0]["text"]


def test_agent_without_skills_answers_generically() -> None:
    body = {"tools": [{"name": "Read"}], "messages": [
        {"role": "user", "content": "How do I calibrate widget torque?"}]}
    reply = skill_agent(body)
    assert reply.stop_reason == "end_turn" and "torque" in reply.content[0]["text"]


def test_agent_variants() -> None:
    read = make_agent("read")(_body())
    assert read.content[0]["name"] == "Read"
    assert read.content[0]["input"]["file_path"] == "~/.claude/skills/demo-widgets/SKILL.md"
    assert make_agent("final")(_body()).stop_reason == "end_turn"
    misuse = make_agent("misuse")(_body())
    assert misuse.content[0]["input"]["skill"] not in listed_skills(_body())
    loop = make_agent("loop", usage={"input_tokens": 10})(_body())
    assert loop.content[0]["name"] == "Bash" and loop.usage == {"input_tokens": 10}
    with pytest.raises(ValueError, match="unknown agent mode"):
        make_agent("bogus")
