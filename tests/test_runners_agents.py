"""Each agent's invocation (tool parity, own key only, nothing secret on disk), the stand-in's
other APIs, and a missing agent CLI as a usage error naming its npm package."""

from __future__ import annotations

import csv
import json
import os
import shutil
import tomllib
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.config import DEMO_PROJECT, OPTIONS, Settings
from pytest_skilllift.model import AgentConfig, PromptSpec, RubricItem, RunSpec
from pytest_skilllift.run import wiring
from pytest_skilllift.run.wiring import leave_out_missing_agents
from pytest_skilllift.runners import agents
from pytest_skilllift.testing.agent_script import make_agent
from pytest_skilllift.testing.server import StandIn

HOST = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "OPENAI_API_KEY": "sk-openai-SECRET-1",
        "GEMINI_API_KEY": "gm-SECRET-2", "ANTHROPIC_API_KEY": "sk-ant-SECRET-3",
        "AWS_SECRET_ACCESS_KEY": "aws-SECRET-4", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
        "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:9", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
SECRETS = ("SECRET-1", "SECRET-2", "SECRET-3", "SECRET-4")


def spec(model_id: str, condition: str = "with-skill") -> RunSpec:
    prompt = PromptSpec(path=Path("p.json"), name="p", product_area="x", prompt="-starts with a "
                        "dash", rubric=(RubricItem("must", "x", 1),), skill_path="fam/SKILL.md")
    return RunSpec(prompt=prompt, model_label="l", model_id=model_id, condition=condition,
                   rep=1, run_id="r")


def invocation(model_id: str) -> agents.Invocation:
    cfg = AgentConfig(claude_path="claude", skills_root=Path("skills"))
    return agents.invocation(spec(model_id), cfg, "/h", base=HOST)


@pytest.mark.parametrize("model_id,key", [("codex:gpt-5.5", "OPENAI_API_KEY"),
                                          ("gemini-cli:gemini-2.5-flash", "GEMINI_API_KEY"),
                                          ("opencode:anthropic/claude-sonnet-4-5",
                                           "ANTHROPIC_API_KEY")])
def test_each_agent_gets_only_its_own_key_and_no_secret_is_written(model_id: str,
                                                                   key: str) -> None:
    inv = invocation(model_id)
    keys = {k for k in inv.env if "KEY" in k}
    assert keys == {key}
    assert inv.env["HOME"] == "/h"
    written = json.dumps(inv.files)
    assert not any(s in written for s in SECRETS)
    # The prompt goes in on standard input, never argv (a leading dash stays a prompt).
    assert not any("dash" in a for a in inv.argv)
    assert agents.skill_root(spec(model_id).agent) == ".agents/skills"
    assert ".agents/skills" in inv.dirs  # created in both arms, so both see the same dirs


def test_codex_config_turns_off_bundled_skills_plugins_and_web_search() -> None:
    inv = invocation("codex:gpt-5.5")
    config = tomllib.loads(inv.files[".codex/config.toml"])
    assert config["skills"]["bundled"]["enabled"] is False
    assert config["features"]["plugins"] is False and config["web_search"] == "disabled"
    # OPENAI_BASE_URL is ignored by Codex: it becomes a provider reading OPENAI_API_KEY.
    assert config["model_provider"] == "skilllift"
    assert config["model_providers"]["skilllift"] == {
        "name": "skilllift", "base_url": "http://127.0.0.1:9/v1", "env_key": "OPENAI_API_KEY",
        "wire_api": "responses"}
    assert inv.env["CODEX_HOME"] == "/h/.codex"
    assert inv.argv[-1] == "-" and "gpt-5.5" in inv.argv
    assert inv.preflight[1:] == ["debug", "prompt-input", "x"]


def test_gemini_and_opencode_disable_their_own_skills_and_web_tools() -> None:
    gem = invocation("gemini-cli:gemini-2.5-flash")
    settings = json.loads(gem.files[".gemini/settings.json"])
    assert settings["skills"]["disabled"] == ["skill-creator", "antigravity-support"]
    assert settings["tools"]["exclude"] == ["google_web_search", "web_fetch"]
    assert gem.env["GOOGLE_GEMINI_BASE_URL"] == "http://127.0.0.1:9"
    assert "GEMINI_CLI_NO_RELAUNCH" not in gem.env  # it hangs after answering
    assert gem.argv[gem.argv.index("--include-directories") + 1] == "/h/.agents/skills"
    oc = invocation("opencode:anthropic/claude-sonnet-4-5")
    config = json.loads(oc.files[".config/opencode/opencode.json"])
    assert config["permission"] == {"skill": {"customize-opencode": "deny"},
                                    "webfetch": "deny", "websearch": "deny"}
    assert config["provider"] == {"anthropic": {"options": {
        "baseURL": "http://127.0.0.1:9/v1"}}}
    assert oc.env["OPENCODE_DISABLE_MODELS_FETCH"] == "1"


def _post(url: str, body: dict[str, Any]) -> str:
    req = urllib.request.Request(url, json.dumps(body).encode(),
                                 {"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        answer = resp.read()
    assert isinstance(answer, bytes)
    return answer.decode()


LISTING = ("<skills_instructions>\n### Skill roots\n- `r0` = `/h/.agents/skills`\n"
           "### Available skills\n- git-bisect: Find the commit that introduced a regression "
           "with git bisect. (file: r0/git-bisect/SKILL.md)\n</skills_instructions>")
QUESTION = "Which commit introduced the regression? Use git bisect to find it."


def test_standin_speaks_responses_and_gemini_with_the_same_script() -> None:
    with StandIn(agent=make_agent("skill")) as api:
        codex = _post(api.base_url + "/v1/responses", {
            "model": "gpt-5.5", "stream": True, "tools": [{"type": "function",
                                                          "name": "exec_command"}],
            "input": [{"type": "message", "role": "developer",
                       "content": [{"type": "input_text", "text": LISTING}]},
                      {"type": "message", "role": "user",
                       "content": [{"type": "input_text", "text": QUESTION}]}]})
        events = [json.loads(ln[6:]) for ln in codex.splitlines() if ln.startswith("data: ")]
        assert events[0]["type"] == "response.created"
        assert events[-1]["type"] == "response.completed"
        call = events[-1]["response"]["output"][0]
        # Codex has no skill tool: the script reads the listed file with a shell cat.
        assert call["name"] == "exec_command"
        assert json.loads(call["arguments"]) == {
            "cmd": "cat /h/.agents/skills/git-bisect/SKILL.md"}
        gem = _post(api.base_url + "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
                    "?alt=sse", {
                        "systemInstruction": {"parts": [{"text": (
                            "<available_skills><skill><name>git-bisect</name><description>"
                            "Find the commit that introduced a regression with git bisect."
                            "</description><location>/h/.agents/skills/git-bisect/SKILL.md"
                            "</location></skill></available_skills>")}]},
                        "tools": [{"functionDeclarations": [{"name": "activate_skill"},
                                                            {"name": "read_file"}]}],
                        "contents": [{"role": "user", "parts": [{"text": QUESTION}]}]})
        chunks = [json.loads(ln[6:]) for ln in gem.splitlines() if ln.startswith("data: ")]
        part = chunks[-1]["candidates"][0]["content"]["parts"][0]
        assert part == {"functionCall": {"name": "activate_skill",
                                         "args": {"name": "git-bisect"}}}
        assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"
        assert [r.api for r in api.requests] == ["codex", "gemini-cli"]
        # Without the listing the same script answers at once, no tool.
        plain = _post(api.base_url + "/v1/responses", {
            "model": "gpt-5.5", "tools": [{"type": "function", "name": "exec_command"}],
            "input": [{"type": "message", "role": "user",
                       "content": [{"type": "input_text", "text": QUESTION}]}]})
        assert '"function_call"' not in plain and "response.output_text.delta" in plain


def test_a_missing_agent_cli_is_a_usage_error_naming_the_npm_package(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    (pytester.path / "evals" / "test-prompts").mkdir(parents=True)
    (pytester.path / "evals" / "test-prompts" / "p.json").write_text(
        (DEMO_PROJECT / "evals" / "test-prompts" / "git-bisect-regression.json").read_text())
    (pytester.path / "skills").symlink_to(DEMO_PROJECT / "skills")
    # No npm CLIs on it (.ci/run installs them into /usr/bin, so not even the default PATH).
    (pytester.path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(pytester.path / "bin"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(pytester.path / "cache"))  # nor in the cache
    result = pytester.runpytest_subprocess(
        "--skill-lift", "--skill-lift-demo", "-p", "no:cacheprovider",
        "--skill-lift-models=gpt=codex:gpt-5.5,gem=gemini-cli:gemini-2.5-flash")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "npm install -g @openai/codex@0.169.0" in err
    assert "npm install -g @google/gemini-cli@0.61.0" in err
    assert "--skill-lift-agent-install" in err


def test_a_labels_agent_key_is_required_before_any_run(pytester: pytest.Pytester,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    (pytester.path / "evals" / "test-prompts").mkdir(parents=True)
    (pytester.path / "evals" / "test-prompts" / "p.json").write_text(
        (DEMO_PROJECT / "evals" / "test-prompts" / "git-bisect-regression.json").read_text())
    (pytester.path / "skills").symlink_to(DEMO_PROJECT / "skills")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-judge-only")
    for var in ("OPENAI_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    result = pytester.runpytest_subprocess("--skill-lift", "-p", "no:cacheprovider",
                                           "--skill-lift-models=gpt=codex:gpt-5.5")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "need OPENAI_API_KEY in the environment" in result.stderr.str()


# -- the demo's Codex and Gemini CLI labels where their CLIs are missing ----------------------

#: The npm CLIs (and npm itself) hidden from the PATH of the tests below.
NPM_TOOLS = ("codex", "gemini", "opencode", "npm", "npx")


def demo_settings(**overrides: Any) -> Settings:
    values: dict[str, Any] = {o.name: o.default for o in OPTIONS}
    values.update(demo=True, **overrides)
    return Settings.from_values(lambda o: values[o.name], enabled=True, rootdir=Path("/proj"))


def path_without(tmp: Path, names: tuple[str, ...]) -> str:
    """A PATH of one directory linking every command on this PATH except ``names`` (the npm
    CLIs are installed machine-wide, beside everything else, so no real PATH lacks them)."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if not folder or not Path(folder).is_dir():
            continue
        for entry in Path(folder).iterdir():
            link = bin_dir / entry.name
            if entry.name not in names and not link.exists() and os.access(entry, os.X_OK):
                link.symlink_to(entry)
    return str(bin_dir)


def test_the_demo_leaves_out_only_its_own_labels_whose_cli_is_missing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "codex").write_text("#!/bin/sh\n")
    (tmp_path / "bin" / "codex").chmod(0o755)  # only found, never run: gemini stays missing
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    s = leave_out_missing_agents(demo_settings())
    assert [label for label, _ in s.models] == ["sonnet", "haiku", "gpt"]
    assert s.labels_not_run == ("label flash not run: gemini-cli CLI not installed (npm i -g "
                                "@google/gemini-cli@0.61.0, or --skill-lift-agent-install)",)
    # With --skill-lift-agent-install nothing is left out: the session installs it.
    assert leave_out_missing_agents(demo_settings(**{"agent-install": True})).models == \
        demo_settings().models
    # A label the user named is never left out (its missing CLI is a usage error instead).
    asked = demo_settings(models="flash=gemini-cli:gemini-2.5-flash")
    assert leave_out_missing_agents(asked) == asked


def test_the_demo_on_docker_leaves_out_the_agents_its_image_lacks(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wiring, "image_agents", lambda image: {"codex": "0.169.0"})
    s = leave_out_missing_agents(demo_settings(runner="docker", **{"docker-network": "host"}))
    assert [label for label, _ in s.models] == ["sonnet", "haiku", "gpt"]
    assert s.labels_not_run == (
        f"label flash not run: gemini-cli CLI not in the docker image {s.image} (skilllift "
        f"image add-agents --base {s.image} --tag TAG, then --skill-lift-image=TAG)",)


def demo_project(pytester: pytest.Pytester) -> None:
    """The demo as it ships (its prompts, skills and checks), one rep, into ``week``."""
    pytester.makeini("[pytest]\nskill_lift_reps = 1\nskill_lift_out = week\n")


def manifest(week: Path) -> list[dict[str, str]]:
    with (week / "manifest.csv").open(newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.cli
def test_the_demo_runs_without_the_npm_clis_and_names_the_labels_not_run(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    demo_project(pytester)
    monkeypatch.setenv("PATH", path_without(pytester.path, NPM_TOOLS))
    monkeypatch.setenv("XDG_CACHE_HOME", str(pytester.path / "cache"))
    result = pytester.runpytest_subprocess("--skill-lift-demo", "-p", "no:cacheprovider",
                                           "-p", "no:xdist", timeout=600)
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.OK, out + result.stderr.str()
    one_line = ("2 labels not run (agent CLI missing): gpt — codex CLI not installed (npm i -g "
                "@openai/codex@0.169.0, or --skill-lift-agent-install); flash — gemini-cli CLI "
                "not installed (npm i -g @google/gemini-cli@0.61.0, or "
                "--skill-lift-agent-install)")
    assert out.count(one_line) == 1 and "label gpt not run" not in out  # one line, not four
    assert result.stdout.lines[-1].endswith("· 2 labels not run (agent CLI missing, see above)")
    # The rest of the demo ran: both Claude Code labels, both arms, every run fine.
    rows = manifest(pytester.path / "week")
    assert sorted({r["model"] for r in rows}) == ["haiku", "sonnet"] and len(rows) == 12
    assert all(r["run_status"] == "ok" for r in rows)
    card = (pytester.path / "week" / "scorecard.md").read_text()
    # one plain line under the banner; the banner (and so the forest plot's title) is the
    # demo's alone
    assert f"\n_{one_line}_\n" in card
    banner = json.loads((pytester.path / "week" / "scorecard.json").read_text())["banner"]
    assert "not run" not in banner and "DEMO" in banner


#: What the stand-in for npm below installs: package → its executable.
NPM_PACKAGES = {"@openai/codex@0.169.0": "codex", "@google/gemini-cli@0.61.0": "gemini"}


@pytest.mark.cli
@pytest.mark.skipif(not all(shutil.which(b) for b in NPM_PACKAGES.values()),
                    reason="the npm agent CLIs are not installed (bash .ci/run installs them)")
def test_agent_install_runs_npm_for_the_missing_clis_and_the_demo_runs_them(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--skill-lift-agent-install`` with codex and gemini off PATH. ``npm`` here is a shim
    that records its argv and "installs" a package by linking this machine's own CLI into
    ``--prefix``'s ``node_modules/.bin`` (where npm puts it): the command line is checked
    exactly, the runs are the real CLIs' (a real install is 500 MB from the registry)."""
    # The demo with one of its prompts and no trigger files: every label, fewer slow runs.
    (pytester.path / "prompts").mkdir()
    (pytester.path / "prompts" / "p.json").write_text(
        (DEMO_PROJECT / "evals" / "test-prompts" / "git-bisect-regression.json").read_text())
    (pytester.path / "triggers").mkdir()
    pytester.makeini("[pytest]\nskill_lift_reps = 1\nskill_lift_out = week\n"
                     "skill_lift_prompts = prompts\nskill_lift_triggers = triggers\n")
    path = path_without(pytester.path, NPM_TOOLS)
    log = pytester.path / "npm-argv.txt"
    links = "\n".join(f'    {pkg}) ln -s {shutil.which(binary)} "$prefix/node_modules/.bin/"'
                      f"{binary} ;;" for pkg, binary in NPM_PACKAGES.items())
    npm = Path(path) / "npm"
    npm.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" >> {log}\necho -- >> {log}\nprefix=""\n'
                   'prev=""\nfor a in "$@"; do\n  [ "$prev" = --prefix ] && prefix="$a"\n'
                   '  prev="$a"\ndone\nmkdir -p "$prefix/node_modules/.bin"\n'
                   f'for a in "$@"; do\n  case "$a" in\n{links}\n  esac\ndone\n')
    npm.chmod(0o755)
    monkeypatch.setenv("PATH", path)
    cache = pytester.path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    result = pytester.runpytest_subprocess("--skill-lift-demo", "--skill-lift-agent-install",
                                           "-p", "no:cacheprovider", "-p", "no:xdist",
                                           timeout=600)
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.OK, out + result.stderr.str()
    # One npm call, the pinned packages of the missing CLIs, into the per-user cache.
    assert log.read_text().splitlines() == [
        "install", "--no-audit", "--no-fund", "--prefix", str(cache / "pytest-skilllift" /
                                                              "agents"),
        *NPM_PACKAGES, "--"]
    assert "not run" not in out
    rows = manifest(pytester.path / "week")
    assert sorted({r["model"] for r in rows}) == ["flash", "gpt", "haiku", "sonnet"]
    assert len(rows) == 8  # one prompt, two arms, four labels
    assert all(r["run_status"] == "ok" for r in rows)
    versions = {r["model"]: r["cli_version"] for r in rows if r["model"] in ("gpt", "flash")}
    assert versions == {"gpt": "0.169.0", "flash": "0.61.0"}
