"""Preflight: every Claude Code label's model asked once before the matrix starts.

A 404 (no such model), a 401 (key refused) or an unreachable API stops the session before any
run, naming the label, the cause and the fix — serially and under ``-n 2``.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from pytest_skilllift.config import DEMO_PROJECT
from pytest_skilllift.runners.claude import bundled_claude
from pytest_skilllift.runners.preflight import Problem, check, stop_message
from pytest_skilllift.testing.agent_script import skill_agent
from pytest_skilllift.testing.judge_script import keyword_judge
from pytest_skilllift.testing.server import StandIn

REPO = Path(__file__).resolve().parents[1]
KEY = "sk-ant-test-preflight-123456"


class Fake:
    """A scripted ``fetch``: path → (status, body); counts the calls."""

    def __init__(self, answers: Mapping[str, tuple[int, str]],
                 default: tuple[int, str] = (200, "{}")) -> None:
        self.answers, self.default, self.calls = answers, default, []  # type: list[str]

    def __call__(self, url: str, headers: Mapping[str, str]) -> tuple[int, str]:
        path = url.split("://", 1)[1].split("/", 1)[1]
        self.calls.append("/" + path)
        return self.answers.get("/" + path, self.default)


NOT_FOUND = (404, '{"type":"error","error":{"type":"not_found_error","message":"model: x"}}')


def test_a_mistyped_model_is_named_with_the_model_meant() -> None:
    fake = Fake({"/v1/models/claude-sonet-4-5": NOT_FOUND})
    problems = check([("sonnet", "claude-sonet-4-5"), ("haiku", "claude-haiku-4-5")],
                     base_url="https://api.example.invalid", key="k", fetch=fake)
    assert [p.label for p in problems] == ["sonnet"]
    assert "the API has no model 'claude-sonet-4-5' (HTTP 404: model: x)" in problems[0].cause
    assert "did you mean 'claude-sonnet-4-5'?" in problems[0].fix
    assert "sonnet=claude-sonnet-4-5" in problems[0].fix
    assert fake.calls == ["/v1/models/claude-sonet-4-5", "/v1/models?limit=1",
                          "/v1/models/claude-haiku-4-5"]


def test_a_bare_typo_label_and_an_alias() -> None:
    # `--skill-lift-models=sonet,haiku`: "sonet" goes to the API as is; "haiku" is an alias
    # the CLI resolves, so only the key is checked for it.
    fake = Fake({"/v1/models/sonet": NOT_FOUND})
    problems = check([("sonet", "sonet"), ("haiku", "haiku")], base_url="", key="k", fetch=fake)
    assert [(p.label, p.model_id) for p in problems] == [("sonet", "sonet")]
    assert "did you mean 'sonnet'?" in problems[0].fix
    assert "/v1/models/haiku" not in fake.calls


def test_each_model_is_asked_once_and_other_agents_are_not_asked() -> None:
    fake = Fake({})
    assert check([("a", "claude-haiku-4-5"), ("b", "claude-haiku-4-5"), ("gpt", "codex:gpt-5.5"),
                  ("flash", "gemini-cli:gemini-2.5-flash")], base_url="", key="k",
                 fetch=fake) == []
    assert fake.calls == ["/v1/models/claude-haiku-4-5"]


@pytest.mark.parametrize(("answer", "said"), [
    ((401, '{"type":"error","error":{"type":"authentication_error","message":"invalid '
           'x-api-key"}}'), "refused the key (HTTP 401: invalid x-api-key)"),
    ((0, "[Errno 111] Connection refused"), "did not answer ([Errno 111] Connection refused)"),
])
def test_a_refused_key_or_no_answer_is_one_problem_for_all_labels(
        answer: tuple[int, str], said: str) -> None:
    fake = Fake({}, default=answer)
    problems = check([("sonnet", "claude-sonnet-4-5"), ("haiku", "claude-haiku-4-5")],
                     base_url="http://127.0.0.1:9", key="k", fetch=fake)
    assert len(problems) == 1 and len(fake.calls) == 1
    assert said in problems[0].cause and problems[0].fix


def test_a_gateway_without_a_models_api_is_not_refused() -> None:
    # a proxy that only serves /v1/messages: 404 for every models path, which says nothing
    fake = Fake({}, default=(404, "Not Found"))
    assert check([("sonnet", "claude-sonnet-4-5")], base_url="http://gw", key="k",
                 fetch=fake) == []


def test_passing_faults_do_not_stop_the_session() -> None:
    for status in (429, 500, 529):
        assert check([("s", "claude-sonnet-4-5")], base_url="", key="k",
                     fetch=Fake({}, default=(status, "busy"))) == []


def test_the_stop_message_names_label_cause_and_fix() -> None:
    text = stop_message([Problem("sonet", "sonet", "the API has no model 'sonet'", "use x")],
                        "http://127.0.0.1:1")
    assert "preflight against http://127.0.0.1:1 stopped the session before any run" in text
    assert "label 'sonet' (model 'sonet'): the API has no model 'sonet'. Fix: use x" in text


def test_the_stand_in_answers_the_models_api_like_the_real_one() -> None:
    from pytest_skilllift.runners.preflight import http_get

    with StandIn(api_key=KEY, models=frozenset({"claude-haiku-4-5"})) as api:
        ok = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
        assert http_get(api.base_url + "/v1/models/claude-haiku-4-5", ok)[0] == 200
        status, body = http_get(api.base_url + "/v1/models/claude-nope", ok)
        assert status == 404 and "not_found_error" in body
        assert http_get(api.base_url + "/v1/models/claude-haiku-4-5",
                        {"x-api-key": "no", "anthropic-version": "2023-06-01"})[0] == 401
        # another agent's model listing (no anthropic-version) keeps the plain answer
        assert http_get(api.base_url + "/v1/models", {"authorization": f"Bearer {KEY}"}) == (
            200, "{}")


# -- a real session: stopped before any run, serial and -n 2 ---------------------------------


def _project(root: Path, models: str) -> None:
    shutil.copytree(DEMO_PROJECT / "skills", root / "skills")
    prompts = root / "evals" / "test-prompts"
    prompts.mkdir(parents=True)
    shutil.copy(DEMO_PROJECT / "evals" / "test-prompts" / "git-bisect-regression.json", prompts)
    (root / "pytest.ini").write_text(f"[pytest]\nskill_lift_models = {models}\n"
                                     "skill_lift_reps = 1\nskill_lift_out = week\n")


def _session(root: Path, base_url: str, key: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "PYTEST_"))}
    env.update(ANTHROPIC_BASE_URL=base_url, ANTHROPIC_API_KEY=key, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "pytest", "--skill-lift", "-p",
                           "no:cacheprovider", "-p", "no:randomly", *args], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
@pytest.mark.cli
@pytest.mark.skipif(bundled_claude() is None, reason="claude-agent-sdk (bundled CLI) missing")
@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "n2"])
def test_a_session_with_a_mistyped_model_stops_before_any_run(tmp_path: Path,
                                                              workers: tuple[str, ...]) -> None:
    _project(tmp_path, "sonnet=claude-sonet-4-5,haiku=claude-haiku-4-5")
    with StandIn(agent=skill_agent, judge=keyword_judge, api_key=KEY,
                 models=frozenset({"claude-haiku-4-5", "claude-sonnet-4-5"})) as api:
        result = _session(tmp_path, api.base_url, KEY, *workers)
        agent_calls = api.count("agent")
    out = result.stdout + result.stderr
    assert result.returncode == pytest.ExitCode.USAGE_ERROR, out
    assert "stopped the session before any run" in out
    assert "label 'sonnet' (model 'claude-sonet-4-5'): the API has no model" in out
    assert "did you mean 'claude-sonnet-4-5'?" in out
    assert "label 'haiku'" not in out
    assert agent_calls == 0 and not list((tmp_path / "week").glob("*/run.json"))


@pytest.mark.slow
@pytest.mark.cli
@pytest.mark.skipif(bundled_claude() is None, reason="claude-agent-sdk (bundled CLI) missing")
def test_a_refused_key_and_an_unreachable_api_stop_the_session_up_front(tmp_path: Path) -> None:
    _project(tmp_path, "haiku=claude-haiku-4-5")
    with StandIn(agent=skill_agent, judge=keyword_judge, api_key=KEY) as api:
        refused = _session(tmp_path, api.base_url, "sk-ant-wrong-key-000000")
        assert api.count("agent") == 0
    out = refused.stdout + refused.stderr
    assert refused.returncode == pytest.ExitCode.USAGE_ERROR, out
    assert "refused the key (HTTP 401" in out and "set ANTHROPIC_API_KEY" in out
    dead = _session(tmp_path, f"http://127.0.0.1:{_dead_port()}", KEY, "-n", "2")
    out = dead.stdout + dead.stderr
    assert dead.returncode == pytest.ExitCode.USAGE_ERROR, out
    assert "did not answer" in out and "check ANTHROPIC_BASE_URL" in out
    # off: the runs find out themselves (their outage handling and circuit breaker)
    off = _session(tmp_path, f"http://127.0.0.1:{_dead_port()}", KEY,
                   "--skill-lift-preflight=off", "--skill-lift-breaker=1")
    assert off.returncode != pytest.ExitCode.USAGE_ERROR
    assert "stopped the session before any run" not in off.stdout + off.stderr
