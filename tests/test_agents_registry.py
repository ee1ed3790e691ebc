"""Every registered agent (``agents/<name>.py`` behind ``agents.registry``) through one
contract: the names agree with ``model.AGENTS``, a run's command line and environment keep
tool parity and the agent's own key only, nothing secret reaches a config file, the listing
and stream readers read nothing into garbage, the outage readers stay quiet on ordinary
events and read the agent's own rate-limit retries (what ``run.ratelimits`` counts), and
``.ci/run`` installs exactly the registry's pins."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from pytest_skilllift import model
from pytest_skilllift.agents.base import Agent, Invocation
from pytest_skilllift.agents.registry import AGENTS, others, prices, stderr_signal, stdout_signal
from pytest_skilllift.model import CLAUDE_CODE, AgentConfig, PromptSpec, RubricItem, RunSpec
from pytest_skilllift.run.ratelimits import Retry, count_run, stderr_retry, stdout_retry
from pytest_skilllift.testing import dialects
from pytest_skilllift.trace.agent_streams import parse_agent_stream
from pytest_skilllift.trace.transcript import parse_events

REPO = Path(__file__).resolve().parents[1]
HOST = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "AWS_SECRET_ACCESS_KEY": "aws-SECRET-0",
        **{a.key_var: f"key-SECRET-{a.name}" for a in AGENTS.values()},
        **{a.base_url_var: "http://127.0.0.1:9" + a.stand_in_path for a in AGENTS.values()}}
PROMPT = "-a prompt that starts with a dash"


def _spec(agent: Agent, condition: str) -> RunSpec:
    prompt = PromptSpec(path=Path("p.json"), name="p", product_area="x", prompt=PROMPT,
                        rubric=(RubricItem("must", "x", 1),), skill_path="fam/SKILL.md")
    model_id = "m" if agent.name == CLAUDE_CODE else f"{agent.name}:prov/m"
    return RunSpec(prompt=prompt, model_label="l", model_id=model_id, condition=condition,
                   rep=1, run_id="r")


def _invocation(agent: Agent, condition: str = "with-skill", *,
                container: bool = False) -> Invocation:
    cfg = AgentConfig(claude_path="claude", skills_root=Path("skills"))
    return agent.invocation("/opt/bin/cli", _spec(agent, condition), cfg, "/h", dict(HOST),
                            container)


def test_the_registry_holds_every_named_agent_in_order() -> None:
    assert tuple(AGENTS) == model.AGENTS
    assert all(name == a.name for name, a in AGENTS.items())
    assert [a.name for a in others()] == [n for n in model.AGENTS if n != CLAUDE_CODE]


@pytest.mark.parametrize("name", list(AGENTS))
def test_every_agent_keeps_the_same_contract(name: str) -> None:
    agent = AGENTS[name]
    with_skill, no_skill = _invocation(agent), _invocation(agent, "no-skill")
    # Tool parity: both arms run the same command line, environment and config.
    assert with_skill == no_skill
    assert with_skill.argv[0] == "/opt/bin/cli"
    assert PROMPT not in with_skill.argv  # the prompt goes in on standard input
    env = with_skill.env
    assert env["HOME"] == "/h"
    assert env[agent.key_var] == HOST[agent.key_var]  # its own key …
    leaked = {k for k, v in env.items() if "SECRET" in v and k != agent.key_var}
    assert leaked == set()  # … and no other agent's, nor the host's other secrets
    for rel, text in with_skill.files.items():  # config files: relative, never a key
        assert not rel.startswith("/") and ".." not in rel
        assert "SECRET" not in text
    assert not agent.skill_root.startswith("/") and agent.skill_root
    if agent.listing_args:
        assert with_skill.preflight == ["/opt/bin/cli", *agent.listing_args]
        assert agent.skill_root in with_skill.dirs  # the install dir exists in both arms
        assert agent.listed_skills is not None
        assert agent.listed_skills("sh: 1: cli: not found") is None  # unknown, not "none"
    else:  # the agent's own stream lists the skills (Claude Code's init event)
        assert with_skill.preflight == [] and agent.listed_skills is None


@pytest.mark.parametrize("name", list(AGENTS))
def test_an_empty_or_garbage_stream_is_no_result(name: str) -> None:
    if name == CLAUDE_CODE:
        tr = parse_events([])
    else:
        assert AGENTS[name].read_stream is not None
        tr = parse_agent_stream(name, "not json\n{\"type\": \"nonsense\"}\n", None, model="m")
        assert tr.bad_lines == 1 and tr.agent == name
        assert tr.skill_root == AGENTS[name].skill_root
    assert tr.result is None and not tr.ok


@pytest.mark.parametrize("name", list(AGENTS))
def test_outage_readers_stay_quiet_on_ordinary_events(name: str) -> None:
    agent = AGENTS[name]
    for event in ({}, {"type": "assistant", "message": {"content": []}},
                  {"type": "result", "is_error": False, "result": "fine"},
                  {"type": "error", "message": "something odd"}):
        assert agent.outage_event is None or agent.outage_event(event) is None, event
    for line in ("", "Loaded cached credentials.", "status of the week: fine"):
        assert agent.outage_stderr is None or agent.outage_stderr(line, False) is None


#: Each agent's words for one retry of a 429, where it prints them and the wait it announces
#: (captured from each CLI against the stand-in: docs/agents.md); None: it retries without a
#: word (OpenCode). A new agent fails the test below until it is here.
RATE_LIMITED: dict[str, tuple[str, str, int] | None] = {
    "claude-code": ("stdout", '{"type":"system","subtype":"api_retry","attempt":1,'
                    '"max_retries":10,"retry_delay_ms":3054,"error_status":429,'
                    '"error":"rate_limit","session_id":"49e2b4f5"}', 3054),
    "codex": ("stdout", '{"type":"error","message":"Reconnecting... 1/5 (unexpected status '
              '429 Too Many Requests: slow down)"}', 0),
    "gemini-cli": ("stderr", "Attempt 1 failed with status 429. Retrying with backoff... "
                   "Error: quota", 0),
    "opencode": None,
}


@pytest.mark.parametrize("name", list(AGENTS))
def test_every_agent_reads_its_own_rate_limit_retries(name: str, tmp_path: Path) -> None:
    assert set(RATE_LIMITED) == set(AGENTS)
    sample = RATE_LIMITED[name]
    if sample is None:
        return
    where, line, wait = sample
    read = stdout_retry if where == "stdout" else stderr_retry
    # run.ratelimits counts what the agent's own outage reader says (one reader, two users)
    assert read(line, name) == read(line) == Retry(429, wait)
    said = (stdout_signal if where == "stdout" else stderr_signal)(line, name=name)
    assert said is not None and said.kind == "retry" and said.rate_limited
    overloaded = line.replace("429", "529")
    assert read(overloaded, name) == Retry(529, wait)
    # a retry of another fault is the outage watch's, not a rate limit
    other = (stdout_signal if where == "stdout" else stderr_signal)(
        line.replace("429", "500"), name=name)
    assert other is not None and other.kind == "retry" and other.status == 500
    assert not other.rate_limited and read(line.replace("429", "500"), name) is None
    # another agent's reader does not read this agent's words
    assert all(read(line, a) is None for a in AGENTS if a != name)
    out, err = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
    (out if where == "stdout" else err).write_text(f"{line}\n{overloaded}\n")
    (err if where == "stdout" else out).write_text("")
    counted = count_run(out, err, name)
    assert (counted.retries, counted.wait_ms) == (2, 2 * wait)


_ASK = "Which commit introduced the regression?"
#: The request each agent's CLI sends for a model turn: the path after its base URL, and a
#: body in its API's shape (what docs/agents.md "The stand-in speaks every agent's API"
#: says). A new agent fails the test below until its API is here and the stand-in routes it.
GENERATION: dict[str, tuple[str, dict[str, object]]] = {
    "claude-code": ("/v1/messages", {
        "model": "claude-haiku-4-5", "max_tokens": 64, "tools": [{"name": "Read"}],
        "messages": [{"role": "user", "content": _ASK}]}),
    "codex": ("/responses", {
        "model": "gpt-5.5", "stream": True, "tools": [{"type": "function",
                                                      "name": "exec_command"}],
        "input": [{"type": "message", "role": "user",
                   "content": [{"type": "input_text", "text": _ASK}]}]}),
    "gemini-cli": ("/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", {
        "tools": [{"functionDeclarations": [{"name": "read_file"}]}],
        "contents": [{"role": "user", "parts": [{"text": _ASK}]}]}),
    "opencode": ("/v1/messages", {
        "model": "claude-haiku-4-5", "max_tokens": 64, "tools": [{"name": "read"}],
        "messages": [{"role": "user", "content": _ASK}]}),
}


def test_the_stand_in_routes_every_agents_api_to_its_dialect() -> None:
    """``testing/server.py`` routes by path and body; each registered agent's model turn,
    sent where its base-URL variable points at the stand-in (``stand_in_path``), reaches the
    dialect named for that agent (Claude Code's: the Messages API itself)."""
    import urllib.request

    from pytest_skilllift.testing.agent_script import skill_agent
    from pytest_skilllift.testing.server import StandIn

    assert set(GENERATION) == set(AGENTS)
    with StandIn(agent=skill_agent) as api:
        for name, (path, body) in GENERATION.items():
            url = api.base_url + AGENTS[name].stand_in_path + path
            request = urllib.request.Request(url, json.dumps(body).encode(),
                                             {"content-type": "application/json"})
            with urllib.request.urlopen(request, timeout=10) as resp:
                assert resp.status == 200, name
            dialect = "messages" if name == CLAUDE_CODE else name
            assert api.requests[-1].api == dialect and api.requests[-1].kind == "agent", name
    assert {d.name for d in (dialects.CODEX, dialects.GEMINI, dialects.OPENCODE)} == {
        a.name for a in others()}


@pytest.mark.parametrize("agent", others(), ids=lambda a: a.name)
def test_every_npm_agent_is_pinned_installable_and_played_by_the_stand_in(agent: Agent) -> None:
    assert agent.registry == "npm"
    assert re.fullmatch(r"\d+\.\d+\.\d+", agent.version)
    assert agent.pinned == f"{agent.package}@{agent.version}"
    assert agent.image is not None and (agent.image.native or agent.image.node_bundle)
    # The local stand-in speaks its API, so its end-to-end tests and the demo can run it.
    assert agent.name in {d.name for d in (dialects.CODEX, dialects.GEMINI, dialects.OPENCODE)}
    # docs/agents.md's table states the same pin.
    table = (REPO / "docs" / "agents.md").read_text(encoding="utf-8")
    assert f"| {agent.title} | `{agent.package}` | {agent.version} |" in table


def test_no_two_agents_price_the_same_model() -> None:
    assert len(prices()) == sum(len(a.prices) for a in AGENTS.values())


def _ci_npm_packages() -> set[str]:
    """The packages of ``.ci/run``'s global npm install of the agent CLIs."""
    text = (REPO / ".ci" / "run").read_text(encoding="utf-8").replace("\\\n", " ")
    lines = [ln for ln in text.splitlines() if re.search(r"\bnpm install -g\b", ln)]
    assert len(lines) == 1, lines
    words = shlex.split(lines[0].split("||")[0])
    return {w for w in words[words.index("-g") + 1:] if not w.startswith("-")}


def test_ci_installs_exactly_the_registry_pins() -> None:
    assert _ci_npm_packages() == {a.pinned for a in others()}


def test_the_init_event_is_read_once_for_the_cli_version_and_the_listed_skills(
        tmp_path: Path) -> None:
    """One reader of Claude Code's init event serves the runners (the CLI version) and the
    task runs (the skills listed): both read what it returns, and agree on its absence."""
    from pytest_skilllift.agents.claude_code import init_event
    from pytest_skilllift.run.tasks.record import listed_skills
    from pytest_skilllift.runners.base import transcript_cli_version

    out = tmp_path / "stdout.txt"
    out.write_text("not json\n" + json.dumps({"type": "system", "subtype": "init",
                                              "claude_code_version": "2.1.332",
                                              "skills": [{"name": "pdf"}, "xlsx"]}) + "\n")
    assert init_event(out) is not None
    assert transcript_cli_version(out) == "2.1.332"
    assert listed_skills(out) == ("pdf", "xlsx")
    assert init_event(out, max_lines=1) is None  # only the first lines are read
    missing = tmp_path / "none.txt"
    assert (init_event(missing), transcript_cli_version(missing), listed_skills(missing)) == (
        None, "", None)
