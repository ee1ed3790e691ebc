"""A base URL holding credentials never lands in an agent's config file (issue: third round
of hostile input): OpenCode reads it through the environment, Codex (which reads a base URL
only from config.toml) refuses it before any run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_skilllift.config import DEMO_PROJECT
from pytest_skilllift.model import AgentConfig, PromptSpec, RubricItem, RunSpec
from pytest_skilllift.runners import agents

URL = "https://alice:hunter2-Secret@proxy.example.net:8443"
HOST = {"PATH": "/usr/bin", "OPENAI_API_KEY": "k1", "GEMINI_API_KEY": "k2",
        "ANTHROPIC_API_KEY": "k3", "OPENAI_BASE_URL": URL + "/v1",
        "GOOGLE_GEMINI_BASE_URL": URL, "ANTHROPIC_BASE_URL": URL}


def _spec(model_id: str) -> RunSpec:
    prompt = PromptSpec(path=Path("p.json"), name="p", product_area="x", prompt="q",
                        rubric=(RubricItem("must", "x", 1),), skill_path="fam/SKILL.md")
    return RunSpec(prompt=prompt, model_label="l", model_id=model_id, condition="with-skill",
                   rep=1, run_id="r")


def _inv(model_id: str) -> agents.Invocation:
    cfg = AgentConfig(claude_path="claude", skills_root=Path("skills"))
    return agents.invocation(_spec(model_id), cfg, "/h", base=HOST)


@pytest.mark.parametrize("model_id", ["opencode:anthropic/claude-sonnet-4-5",
                                      "gemini-cli:gemini-2.5-flash"])
def test_no_credential_is_written_to_a_config_file(model_id: str) -> None:
    inv = _inv(model_id)
    written = json.dumps(inv.files)
    assert "hunter2" not in written and "alice" not in written
    assert any("hunter2" in v for v in inv.env.values())  # it travels in the environment


def test_opencode_reads_the_url_from_the_environment() -> None:
    inv = _inv("opencode:anthropic/claude-sonnet-4-5")
    config = json.loads(inv.files[".config/opencode/opencode.json"])
    assert config["provider"]["anthropic"]["options"]["baseURL"] == (
        "{env:" + agents.OPENCODE_URL_VAR + "}")
    assert inv.env[agents.OPENCODE_URL_VAR] == URL + "/v1"
    # A URL without credentials is written as before.
    plain = agents.invocation(_spec("opencode:anthropic/claude-sonnet-4-5"),
                              AgentConfig(claude_path="claude", skills_root=Path("skills")),
                              "/h", base={**HOST, "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"})
    assert "http://127.0.0.1:9/v1" in plain.files[".config/opencode/opencode.json"]


def test_codex_refuses_a_url_with_credentials() -> None:
    with pytest.raises(agents.AgentURLError, match="OPENAI_BASE_URL holds credentials"):
        _inv("codex:gpt-5.5")
    assert agents.url_problem("codex", {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}) is None


def test_the_session_refuses_it_before_any_run(pytester: pytest.Pytester,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    (pytester.path / "evals" / "test-prompts").mkdir(parents=True)
    (pytester.path / "evals" / "test-prompts" / "p.json").write_text(
        (DEMO_PROJECT / "evals" / "test-prompts" / "git-bisect-regression.json").read_text())
    (pytester.path / "skills").symlink_to(DEMO_PROJECT / "skills")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-judge-only")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-codex")
    monkeypatch.setenv("OPENAI_BASE_URL", URL + "/v1")
    result = pytester.runpytest_subprocess("--skill-lift", "-p", "no:cacheprovider",
                                           "--skill-lift-models=gpt=codex:gpt-5.5")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "OPENAI_BASE_URL holds credentials" in err and "hunter2" not in err
    assert not list(pytester.path.rglob("config.toml"))
