"""Preflight: every (agent, model) label's model asked once before the matrix starts.

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
from pytest_skilllift.runners.preflight import Problem, check, run, stop_message
from pytest_skilllift.testing.agent_script import skill_agent
from pytest_skilllift.testing.judge_script import keyword_judge
from pytest_skilllift.testing.server import StandIn

REPO = Path(__file__).resolve().parents[1]
KEY = "sk-ant-test-preflight-123456"


class Fake:
    """A scripted ``fetch``: path → (status, body); counts the calls."""

    def __init__(self, answers: Mapping[str, tuple[int, str]],
                 default: tuple[int, str] = (200, "{}")) -> None:
        self.answers, self.default = answers, default
        self.calls: list[str] = []

    def __call__(self, url: str, headers: Mapping[str, str]) -> tuple[int, str]:
        path = url.split("://", 1)[1].split("/", 1)[1]
        self.calls.append("/" + path)
        return self.answers.get("/" + path, self.default)


def env(base: str = "", key: str = "k", **more: str) -> dict[str, str]:
    """A session environment reaching Claude Code's API at ``base`` with ``key``."""
    return {"ANTHROPIC_BASE_URL": base, "ANTHROPIC_API_KEY": key, **more}


NOT_FOUND = (404, '{"type":"error","error":{"type":"not_found_error","message":"model: x"}}')


def test_a_mistyped_model_is_named_with_the_model_meant() -> None:
    fake = Fake({"/v1/models/claude-sonet-4-5": NOT_FOUND})
    problems = check([("sonnet", "claude-sonet-4-5"), ("haiku", "claude-haiku-4-5")],
                     env("https://api.example.invalid"), fetch=fake)
    assert [p.label for p in problems] == ["sonnet"]
    assert ("Claude Code's API has no model 'claude-sonet-4-5' (HTTP 404: model: x)"
            in problems[0].cause)
    assert "did you mean 'claude-sonnet-4-5'?" in problems[0].fix
    assert "sonnet=claude-sonnet-4-5" in problems[0].fix
    assert fake.calls == ["/v1/models/claude-sonet-4-5", "/v1/models?limit=1",
                          "/v1/models/claude-haiku-4-5"]


def test_a_bare_typo_label_and_an_alias() -> None:
    # `--skill-lift-models=sonet,haiku`: "sonet" goes to the API as is; "haiku" is an alias
    # the CLI resolves, so only the key is checked for it.
    fake = Fake({"/v1/models/sonet": NOT_FOUND})
    problems = check([("sonet", "sonet"), ("haiku", "haiku")], env(), fetch=fake)
    assert [(p.label, p.model_id) for p in problems] == [("sonet", "sonet")]
    assert "did you mean 'sonnet'?" in problems[0].fix
    assert "/v1/models/haiku" not in fake.calls


def test_each_model_is_asked_once_at_its_own_agents_api() -> None:
    fake = Fake({})
    assert check([("a", "claude-haiku-4-5"), ("b", "claude-haiku-4-5"), ("gpt", "codex:gpt-5.5"),
                  ("g2", "codex:gpt-5.5"), ("flash", "gemini-cli:gemini-2.5-flash"),
                  ("oc", "opencode:anthropic/claude-haiku-4-5"),
                  ("oc-other", "opencode:openai/gpt-5")], env(), fetch=fake) == []
    # Claude Code's and OpenCode's Anthropic API (same host), Codex's OpenAI API, Gemini's;
    # an OpenCode model of another provider at that provider's API (OpenAI's, here)
    assert fake.calls == ["/v1/models/claude-haiku-4-5", "/v1/models/gpt-5.5",
                          "/v1beta/models/gemini-2.5-flash", "/v1/models/claude-haiku-4-5",
                          "/v1/models/gpt-5"]


def test_opencodes_other_providers_are_asked_at_their_own_api_with_their_own_key() -> None:
    seen: list[tuple[str, dict[str, str]]] = []

    def fetch(url: str, headers: Mapping[str, str]) -> tuple[int, str]:
        seen.append((url, dict(headers)))
        return 200, "{}"

    labels = [("oa", "opencode:openai/gpt-5-mini"), ("og", "opencode:google/gemini-2.5-pro")]
    keys = {"OPENAI_API_KEY": "ko", "GEMINI_API_KEY": "kg", "ANTHROPIC_API_KEY": "ka"}
    result = run(labels, keys, fetch=fetch)
    assert result.problems == [] and result.checked == ["oa", "og"] and not result.unchecked
    # without a base URL: each provider's public API, with the key the run is given
    assert seen == [("https://api.openai.com/v1/models/gpt-5-mini",
                     {"authorization": "Bearer ko", "accept": "application/json"}),
                    ("https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro",
                     {"x-goog-api-key": "kg", "accept": "application/json"})]
    # with ANTHROPIC_BASE_URL: where OpenCode's providers then go (its baseURL + /v1)
    seen.clear()
    run(labels, {**keys, "ANTHROPIC_BASE_URL": "http://gw.test/"}, fetch=fetch)
    assert [u for u, _ in seen] == ["http://gw.test/v1/models/gpt-5-mini",
                                    "http://gw.test/v1/models/gemini-2.5-pro"]


def test_a_mistyped_or_refused_opencode_provider_model_is_named() -> None:
    fake = Fake({"/v1/models/gpt-5-mni": (404, '{"error":{"message":"The model \'gpt-5-mni\' '
                                               'does not exist"}}')},
                default=(200, "{}"))
    problems = check([("oa", "opencode:openai/gpt-5-mni")], env(), fetch=fake)
    assert [(p.label, p.model_id) for p in problems] == [("oa", "opencode:openai/gpt-5-mni")]
    assert "OpenCode's API has no model 'openai/gpt-5-mni'" in problems[0].cause
    assert "did you mean 'openai/gpt-5-mini'?" in problems[0].fix
    assert "oa=opencode:openai/gpt-5-mini" in problems[0].fix
    invalid = (400, '{"error":{"code":400,"message":"API key not valid.","details":'
                    '[{"reason":"API_KEY_INVALID"}]}}')
    problems = check([("og", "opencode:google/gemini-2.5-flash")], env(),
                     fetch=Fake({}, default=invalid))
    assert len(problems) == 1 and "set GEMINI_API_KEY" in problems[0].fix


def test_what_cannot_be_checked_is_counted_and_named_in_the_preflight_line() -> None:
    fake = Fake({"/v1/models?limit=1": (200, "{}")})
    result = run([("s", "claude-haiku-4-5"), ("h", "haiku"), ("oa", "opencode:openai/gpt-5"),
                  ("mi", "opencode:mistral/codestral-latest"),
                  ("busy", "gemini-cli:gemini-2.5-pro")], env(),
                 fetch=lambda url, h: (503, "busy") if "v1beta" in url else fake(url, h))
    assert result.problems == []
    assert result.checked == ["s", "oa"]
    assert [(u.label, u.model_id) for u in result.unchecked] == [
        ("mi", "opencode:mistral/codestral-latest"), ("h", "haiku"),
        ("busy", "gemini-cli:gemini-2.5-pro")]
    line = result.line()
    assert line.startswith("skill-lift preflight: 2 of 5 labels checked (4 lookups); "
                           "3 not checked: ")
    assert ("mi (opencode:mistral/codestral-latest: OpenCode has no model lookup for "
            "'mistral/codestral-latest' here)") in line
    assert "h (haiku: a name Claude Code resolves itself; the key was checked)" in line
    assert "busy (gemini-cli:gemini-2.5-pro: HTTP 503 from" in line
    bedrock = run([("s", "claude-sonnet-4-5")], env(CLAUDE_CODE_USE_BEDROCK="1"), fetch=fake)
    assert bedrock.line() == ("skill-lift preflight: 0 of 1 label checked (0 lookups); 1 not "
                              "checked: s (claude-sonnet-4-5: Claude Code here calls another "
                              "API (Bedrock / Vertex))")


def test_an_opencode_run_gets_its_models_providers_key_only() -> None:
    from pytest_skilllift.agents.registry import agent
    from pytest_skilllift.model import AgentConfig, PromptSpec, RubricItem, RunSpec

    prompt = PromptSpec(path=Path("p.json"), name="p", product_area="x", prompt="q",
                        rubric=(RubricItem("must", "x", 1),), skill_path="fam/SKILL.md")
    host = {"PATH": "/bin", "ANTHROPIC_API_KEY": "ka", "OPENAI_API_KEY": "ko",
            "GEMINI_API_KEY": "kg"}
    keys = {}
    for model in ("anthropic/claude-haiku-4-5", "openai/gpt-5", "google/gemini-2.5-pro",
                  "mistral/codestral-latest"):
        spec = RunSpec(prompt=prompt, model_label="l", model_id=f"opencode:{model}",
                       condition="no-skill", rep=1, run_id="r")
        inv = agent("opencode").invocation("opencode", spec, AgentConfig(
            claude_path="claude", skills_root=Path("s")), "/h", dict(host), False)
        keys[model] = sorted(k for k in inv.env if k.endswith("_API_KEY"))
    assert keys == {"anthropic/claude-haiku-4-5": ["ANTHROPIC_API_KEY"],
                    "openai/gpt-5": ["OPENAI_API_KEY"], "google/gemini-2.5-pro": ["GEMINI_API_KEY"],
                    "mistral/codestral-latest": ["ANTHROPIC_API_KEY"]}


def test_each_agent_is_asked_with_its_own_url_and_key() -> None:
    seen: list[tuple[str, dict[str, str]]] = []

    def fetch(url: str, headers: Mapping[str, str]) -> tuple[int, str]:
        seen.append((url, dict(headers)))
        return 200, "{}"

    check([("s", "claude-haiku-4-5"), ("gpt", "codex:gpt-5-mini"),
           ("flash", "gemini-cli:gemini-2.5-flash"),
              ("oc", "opencode:anthropic/claude-haiku-4-5")],
          env("http://a.test", "ka", OPENAI_BASE_URL="http://o.test/v1/", OPENAI_API_KEY="ko",
              GOOGLE_GEMINI_BASE_URL="http://g.test", GEMINI_API_KEY="kg"), fetch=fetch)
    urls = [u for u, _ in seen]
    assert urls == ["http://a.test/v1/models/claude-haiku-4-5", "http://o.test/v1/models/gpt-5-mini",
                    "http://g.test/v1beta/models/gemini-2.5-flash",
                    "http://a.test/v1/models/claude-haiku-4-5"]
    assert seen[0][1]["x-api-key"] == "ka" and seen[1][1]["authorization"] == "Bearer ko"
    assert seen[2][1]["x-goog-api-key"] == "kg" and seen[3][1]["x-api-key"] == "ka"
    # without a base URL: each agent's public API
    seen.clear()
    check([("gpt", "codex:gpt-5"), ("flash", "gemini-cli:gemini-2.5-pro")], {}, fetch=fetch)
    assert [u for u, _ in seen] == ["https://api.openai.com/v1/models/gpt-5",
                                    "https://generativelanguage.googleapis.com/v1beta/models/"
                                    "gemini-2.5-pro"]


def test_a_mistyped_codex_or_gemini_model_is_named_with_its_agent() -> None:
    fake = Fake({"/v1/models/gpt-5-mni": (404, '{"error":{"message":"The model \'gpt-5-mni\' '
                                               'does not exist","code":"model_not_found"}}'),
                 "/v1beta/models/gemini-2.5-flsh": (404, '{"error":{"code":404,"message":'
                                                    '"models/gemini-2.5-flsh is not found"}}')})
    problems = check([("gpt", "codex:gpt-5-mni"), ("flash", "gemini-cli:gemini-2.5-flsh")],
                     env(), fetch=fake)
    assert [(p.label, p.model_id) for p in problems] == [
        ("gpt", "codex:gpt-5-mni"), ("flash", "gemini-cli:gemini-2.5-flsh")]
    assert "Codex CLI's API has no model 'gpt-5-mni'" in problems[0].cause
    assert "does not exist" in problems[0].cause
    assert "did you mean 'gpt-5-mini'?" in problems[0].fix
    assert "gpt=codex:gpt-5-mini" in problems[0].fix
    assert "did you mean 'gemini-2.5-flash'?" in problems[1].fix
    assert "flash=gemini-cli:gemini-2.5-flash" in problems[1].fix


def test_a_refused_gemini_key_and_an_unreachable_codex_api_name_their_variables() -> None:
    invalid = (400, '{"error":{"code":400,"message":"API key not valid. Please pass a valid '
                    'API key.","status":"INVALID_ARGUMENT","details":[{"reason":'
                    '"API_KEY_INVALID"}]}}')
    problems = check([("flash", "gemini-cli:gemini-2.5-flash"),
                      ("pro", "gemini-cli:gemini-2.5-pro")], env(), fetch=Fake({}, default=invalid))
    assert len(problems) == 1 and "refused the key (HTTP 400: API key not valid" in \
        problems[0].cause and "set GEMINI_API_KEY" in problems[0].fix
    problems = check([("gpt", "codex:gpt-5"), ("s", "claude-haiku-4-5")],
                     env(OPENAI_BASE_URL="http://127.0.0.1:9/v1"),
                     fetch=lambda url, h: (0, "refused") if "127.0.0.1:9" in url else (200, "{}"))
    assert [p.label for p in problems] == ["gpt"]
    assert "Codex CLI's API at http://127.0.0.1:9/v1 did not answer (refused)" in \
        problems[0].cause and "check OPENAI_BASE_URL" in problems[0].fix


def test_every_agent_declares_how_its_labels_are_checked() -> None:
    from pytest_skilllift.agents import registry

    assert all(a.model_probe is not None for a in registry.AGENTS.values())


def test_bedrock_and_vertex_are_not_asked() -> None:
    fake = Fake({}, default=NOT_FOUND)
    assert check([("s", "claude-sonet-4-5")], env(CLAUDE_CODE_USE_BEDROCK="1"), fetch=fake) == []
    assert fake.calls == []


@pytest.mark.parametrize(("answer", "said"), [
    ((401, '{"type":"error","error":{"type":"authentication_error","message":"invalid '
           'x-api-key"}}'), "refused the key (HTTP 401: invalid x-api-key)"),
    ((0, "[Errno 111] Connection refused"), "did not answer ([Errno 111] Connection refused)"),
])
def test_a_refused_key_or_no_answer_is_one_problem_for_all_labels(
        answer: tuple[int, str], said: str) -> None:
    fake = Fake({}, default=answer)
    problems = check([("sonnet", "claude-sonnet-4-5"), ("haiku", "claude-haiku-4-5")],
                     env("http://127.0.0.1:9"), fetch=fake)
    assert len(problems) == 1 and len(fake.calls) == 1
    assert said in problems[0].cause and problems[0].fix


def test_a_gateway_without_a_models_api_is_not_refused() -> None:
    # a proxy that only serves /v1/messages: 404 for every models path, which says nothing
    fake = Fake({}, default=(404, "Not Found"))
    assert check([("sonnet", "claude-sonnet-4-5")], env("http://gw"), fetch=fake) == []
    assert check([("gpt", "codex:gpt-5")], env(), fetch=fake) == []


def test_passing_faults_do_not_stop_the_session() -> None:
    for status in (429, 500, 529):
        assert check([("s", "claude-sonnet-4-5"), ("g", "gemini-cli:gemini-2.5-pro")], env(),
                     fetch=Fake({}, default=(status, "busy"))) == []


def test_the_stop_message_names_label_cause_and_fix() -> None:
    text = stop_message([Problem("sonet", "sonet", "the API has no model 'sonet'", "use x")])
    assert "preflight stopped the session before any run (1 problem)" in text
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


def test_the_stand_in_answers_the_openai_and_gemini_model_lookups() -> None:
    from pytest_skilllift.runners.preflight import http_get

    with StandIn(api_key=KEY, models=frozenset({"gpt-5-mini", "gemini-2.5-flash"})) as api:
        bearer = {"authorization": f"Bearer {KEY}"}
        status, body = http_get(api.base_url + "/v1/models/gpt-5-mini", bearer)
        assert status == 200 and '"id": "gpt-5-mini"' in body
        status, body = http_get(api.base_url + "/v1/models/gpt-5-mni", bearer)
        assert status == 404 and "model_not_found" in body
        assert http_get(api.base_url + "/v1/models/gpt-5-mini",
                        {"authorization": "Bearer no"})[0] == 401
        goog = {"x-goog-api-key": KEY}
        assert http_get(api.base_url + "/v1beta/models/gemini-2.5-flash", goog)[0] == 200
        status, body = http_get(api.base_url + "/v1beta/models/gemini-2.5-flsh", goog)
        assert status == 404 and "NOT_FOUND" in body
        status, body = http_get(api.base_url + "/v1beta/models/gemini-2.5-flash",
                                {"x-goog-api-key": "no"})
        assert status == 400 and "API_KEY_INVALID" in body


def test_every_agents_preflight_against_the_stand_in() -> None:
    # the agents' probes against the stand-in through real HTTP, as a session would send them
    models = frozenset({"claude-haiku-4-5", "gpt-5-mini", "gemini-2.5-flash"})
    labels = [("h", "claude-haiku-4-5"), ("gpt", "codex:gpt-5-mini"),
              ("flash", "gemini-cli:gemini-2.5-flash"),
              ("oc", "opencode:anthropic/claude-haiku-4-5"),
              ("oc-gpt", "opencode:openai/gpt-5-mini"),
              ("oc-flash", "opencode:google/gemini-2.5-flash")]
    with StandIn(api_key=KEY, models=models) as api:
        good = env(api.base_url, KEY, OPENAI_BASE_URL=api.base_url + "/v1", OPENAI_API_KEY=KEY,
                   GOOGLE_GEMINI_BASE_URL=api.base_url, GEMINI_API_KEY=KEY)
        assert check(labels, good) == []
        typos = [("h", "claude-haiku-4-6"), ("gpt", "codex:gpt-5-mni"),
                 ("flash", "gemini-cli:gemini-2.5-flsh"),
                 ("oc", "opencode:anthropic/claude-haku-4-5"),
                 ("oc-gpt", "opencode:openai/gpt-5-mni"),
                 ("oc-flash", "opencode:google/gemini-2.5-flsh")]
        assert [p.label for p in check(typos, good)] == ["h", "gpt", "flash", "oc", "oc-gpt",
                                                         "oc-flash"]
        wrong = {**good, "OPENAI_API_KEY": "no", "GEMINI_API_KEY": "no"}
        refused = check(labels, wrong)
        assert [(p.label, p.fix) for p in refused] == [
            ("gpt", "set OPENAI_API_KEY to a valid key for this endpoint"),
            ("flash", "set GEMINI_API_KEY to a valid key for this endpoint"),
            ("oc-gpt", "set OPENAI_API_KEY to a valid key for this endpoint"),
            ("oc-flash", "set GEMINI_API_KEY to a valid key for this endpoint")]
        assert "HTTP 400: API key not valid" in refused[-1].cause  # the Gemini API's answer


# -- a real session: stopped before any run, serial and -n 2 ---------------------------------


def _project(root: Path, models: str) -> None:
    shutil.copytree(DEMO_PROJECT / "skills", root / "skills")
    prompts = root / "evals" / "test-prompts"
    prompts.mkdir(parents=True)
    shutil.copy(DEMO_PROJECT / "evals" / "test-prompts" / "git-bisect-regression.json", prompts)
    (root / "pytest.ini").write_text(f"[pytest]\nskill_lift_models = {models}\n"
                                     "skill_lift_reps = 1\nskill_lift_out = week\n")


def _session(root: Path, base_url: str, key: str, *args: str,
             extra: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "PYTEST_", "OPENAI_", "GEMINI_", "GOOGLE_"))}
    env.update(ANTHROPIC_BASE_URL=base_url, ANTHROPIC_API_KEY=key, PYTHONPATH=str(REPO))
    env.update(extra or {})
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
    assert "label 'sonnet' (model 'claude-sonet-4-5'): Claude Code's API has no model" in out
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


def _needs(*clis: str) -> pytest.MarkDecorator:
    missing = bundled_claude() is None or not all(shutil.which(c) for c in clis)
    return pytest.mark.skipif(missing, reason=f"claude-agent-sdk (bundled CLI) or "
                                              f"{' / '.join(clis)} missing")


#: (labels, the session's other variables, the mistyped label and what it meant, the label
#: whose key is refused, whose API it is): the same stop for each agent's own API.
_STOPS = {
    "codex-gemini": ("haiku=claude-haiku-4-5,gpt=codex:gpt-5-mni,flash=gemini-cli:gemini-2.5-flash",
                     {"OPENAI_BASE_URL": "{url}/v1", "GOOGLE_GEMINI_BASE_URL": "{url}"},
                     ("gpt", "codex:gpt-5-mni", "Codex CLI", "gpt-5-mini"),
                     ("flash", "gemini-cli:gemini-2.5-flash", "Gemini CLI")),
    # OpenCode's openai/ and google/ models at their providers' APIs (the stand-in's, as
    # OpenCode reaches them through ANTHROPIC_BASE_URL)
    "opencode": ("haiku=claude-haiku-4-5,oc-gpt=opencode:openai/gpt-5-mni,"
                 "oc-flash=opencode:google/gemini-2.5-flash", {},
                 ("oc-gpt", "opencode:openai/gpt-5-mni", "OpenCode", "openai/gpt-5-mini"),
                 ("oc-flash", "opencode:google/gemini-2.5-flash", "OpenCode")),
}


@pytest.mark.slow
@pytest.mark.cli
@pytest.mark.parametrize("case", [pytest.param("codex-gemini", marks=_needs("codex", "gemini")),
                                  pytest.param("opencode", marks=_needs("opencode"))])
@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "n2"])
def test_other_agents_labels_are_checked_before_any_run(tmp_path: Path, case: str,
                                                        workers: tuple[str, ...]) -> None:
    models, urls, (typo, typo_id, title, meant), (refused, refused_id, refused_title) = \
        _STOPS[case]
    _project(tmp_path, models)
    with StandIn(agent=skill_agent, judge=keyword_judge, api_key=KEY,
                 models=frozenset({"claude-haiku-4-5", "gpt-5-mini", "gemini-2.5-flash"})) as api:
        result = _session(tmp_path, api.base_url, KEY, *workers, extra={
            **{k: v.format(url=api.base_url) for k, v in urls.items()},
            "OPENAI_API_KEY": KEY, "GEMINI_API_KEY": "not-the-key"})
        runs = api.count("agent", ok_only=False)
    out = result.stdout + result.stderr
    assert result.returncode == pytest.ExitCode.USAGE_ERROR, out
    assert "preflight stopped the session before any run (2 problems)" in out
    assert f"label '{typo}' (model '{typo_id}'): {title}'s API has no model" in out
    assert f"did you mean '{meant}'?" in out
    assert f"label '{refused}' (model '{refused_id}'): {refused_title}'s API at" in out
    assert "refused the key (HTTP 400" in out and "set GEMINI_API_KEY" in out
    assert "label 'haiku'" not in out
    assert runs == 0 and not list((tmp_path / "week").glob("*/run.json"))


@pytest.mark.slow
@pytest.mark.cli
@_needs("opencode")
@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "n2"])
def test_the_preflight_line_counts_and_names_what_it_could_not_check(
        tmp_path: Path, workers: tuple[str, ...]) -> None:
    # oc-mi's provider has no lookup here: named in the line; its runs are deselected, so
    # only haiku's two runs go to the stand-in
    _project(tmp_path, "haiku=claude-haiku-4-5,oc-gpt=opencode:openai/gpt-5-mini,"
                       "oc-mi=opencode:mistral/codestral-latest")
    with StandIn(agent=skill_agent, judge=keyword_judge, api_key=KEY,
                 models=frozenset({"claude-haiku-4-5", "gpt-5-mini"})) as api:
        result = _session(tmp_path, api.base_url, KEY, *workers, "-k", "haiku",
                          extra={"OPENAI_API_KEY": KEY})
        lookups = [r.path for r in api.requests if r.method == "GET"]
    out = result.stdout + result.stderr
    assert "stopped the session" not in out, out
    assert ("skill-lift preflight: 2 of 3 labels checked (2 lookups); 1 not checked: oc-mi "
            "(opencode:mistral/codestral-latest: OpenCode has no model lookup for "
            "'mistral/codestral-latest' here)") in out
    assert sorted(lookups) == ["/v1/models/claude-haiku-4-5", "/v1/models/gpt-5-mini"]
