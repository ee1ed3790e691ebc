"""The agent CLI layer of a task image (``runners/task_cli.py``), the image names that carry it
(``runners/task_image.py``), the argv of another agent's task run (``runners/task_docker.py``),
its skill-free proof read from its own listing (``run/tasks/record.py``), and the stand-in's
write/shell tools in each agent's dialect (``testing/dialects.py``). No docker."""

from __future__ import annotations

import io
import json
import os
import tarfile
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.agents.registry import agent, others
from pytest_skilllift.config import DEMO_TASKS
from pytest_skilllift.model import AgentConfig, RunSpec
from pytest_skilllift.run.tasks.reader import load_task
from pytest_skilllift.run.tasks.record import apply_verifier, listed_skills
from pytest_skilllift.runners.agents import find_cli
from pytest_skilllift.runners.task_cli import (
    CLI_BIN,
    CLI_LIB,
    CLI_ROOT,
    CLI_RPATH,
    TASK_CLAUDE,
    claude_layer,
    extra_libraries,
    npm_layer,
    plan_files,
)
from pytest_skilllift.runners.task_docker import TaskRunner
from pytest_skilllift.runners.task_image import (
    _cli_rootfs,
    cli_image_tag,
    context_hash,
    image_tag,
)
from pytest_skilllift.testing.dialects import BASH, CODEX, GEMINI, OPENCODE, WRITE, Dialect
from pytest_skilllift.testing.task_script import working_directory
from pytest_skilllift.week.files import AGENT_SKILLS_FILE, INVALID, OK

DEMO = DEMO_TASKS / "sales-report"
GLIBC = ("libc.so", "libm.so", "libpthread.so", "libdl.so", "ld-linux")


def _fake_npm(tmp_path: Path, agent_name: str) -> str:
    """A fake npm install of ``agent_name``'s package: its launcher and a native binary of
    the size a real one has (no ELF: ``ldd`` lists nothing)."""
    defn = agent(agent_name)
    assert defn.image is not None and defn.image.native is not None
    binary, under = defn.image.native
    package = tmp_path / "lib" / "node_modules" / defn.package
    (package / "bin").mkdir(parents=True)
    launcher = package / "bin" / f"{defn.binary}.js"
    launcher.write_text("#!/usr/bin/env node\n")
    native = tmp_path / "lib" / "node_modules" / under / "vendor" / binary
    native.parent.mkdir(parents=True, exist_ok=True)
    native.write_bytes(b"\0" * 1_100_000)
    native.chmod(0o755)
    return str(launcher)


def test_a_layer_names_its_content_and_keeps_out_of_the_image(tmp_path: Path) -> None:
    cli = _fake_npm(tmp_path, "codex")
    layer = npm_layer("codex", cli)
    assert layer.command == f"{CLI_BIN}/codex"
    root = layer.plan()
    assert all(p.startswith(CLI_ROOT) or CLI_ROOT.startswith(p) for p in root.entries), (
        sorted(root.entries))
    # A changed CLI is a new layer: new CLI image, new task images.
    native = tmp_path / "lib" / "node_modules" / "@openai" / "vendor" / "codex"
    native.write_bytes(b"\1" * 1_200_000)
    changed = npm_layer("codex", cli)
    assert changed.identity != layer.identity
    assert cli_image_tag(changed) != cli_image_tag(layer)
    spec = load_task(DEMO, tmp_path).task
    assert spec is not None
    assert context_hash(spec, True, changed) != context_hash(spec, True, layer)


def test_claude_codes_image_names_are_unchanged(tmp_path: Path) -> None:
    """Claude Code's layer hashes as the binary always did: its existing images stay valid."""
    cli = tmp_path / "claude"
    cli.write_bytes(b"cli")
    spec = load_task(DEMO, tmp_path).task
    assert spec is not None
    assert context_hash(spec, True, cli) == context_hash(spec, True, claude_layer(cli))
    assert cli_image_tag(cli) == cli_image_tag(claude_layer(cli))
    assert image_tag(spec, True, "abc") == "skilllift-task-sales-report:skills-abc"
    assert image_tag(spec, False, "abc", "codex") == \
        "skilllift-task-sales-report:noskills-codex-abc"
    # The CLI-only image holds the binary at TASK_CLAUDE, executable, and nothing else.
    tar_path = _cli_rootfs(cli)
    try:
        with tarfile.open(tar_path) as tar:
            files = {m.name: m.mode for m in tar.getmembers() if m.isfile()}
    finally:
        tar_path.unlink()
    assert files == {TASK_CLAUDE.lstrip("/"): 0o755}


@pytest.mark.parametrize("name", [a.name for a in others()])
def test_each_installed_cli_is_layered_without_the_images_glibc(name: str) -> None:
    cli = find_cli(name)
    if cli is None:
        pytest.skip(f"the {name} CLI is not installed (bash .ci/run installs it)")
    plan = plan_files(name, cli)
    files, data, patched, command = plan.files, plan.data, plan.patched, plan.command
    assert command == f"{CLI_BIN}/{agent(name).binary}"
    assert npm_layer(name, cli).version == agent(name).version  # the pin .ci/run installs
    assert command in files or command in data or command in patched
    dests = [*files, *data, *patched]
    assert all(d.startswith(CLI_ROOT + "/") for d in dests), dests
    # glibc stays the image's own; what else a binary needs comes with it, found through
    # the binary's own library path: no wrapper exports LD_LIBRARY_PATH to the agent's
    # commands.
    assert not [d for d in dests if Path(d).name.startswith(GLIBC)], dests
    for dest, text in data.items():
        script = text.decode()
        assert script.startswith("#!/bin/sh\n") and '"$@"' in script
        assert "LD_LIBRARY_PATH" not in script, script
        target = script.split("exec ", 1)[1].split()[0]
        assert target in files or target in data or target in patched, (dest, script)
    for dest, source in patched.items():
        assert dest.startswith(f"{CLI_BIN}/")
        needed = {Path(lib).name for lib in extra_libraries(source)}
        assert needed and needed <= {Path(d).name for d in files if d.startswith(CLI_LIB)}
    if name == "codex":  # a static binary: no wrapper, no library
        assert command in files and not data and not patched
    if name == "gemini-cli":  # node and the bundle
        script = data[command].decode()
        assert f"{CLI_BIN}/node " in script and f"{CLI_ROOT}/gemini-cli/" in script
        assert script.split()[-2] in files  # the bundle's entry point is copied
    if name == "opencode":  # ripgrep beside it, found on the run's PATH
        assert f"{CLI_BIN}/rg" in dests


def test_a_binary_needing_more_than_glibc_finds_it_through_its_own_rpath(
        tmp_path: Path) -> None:
    """The patched copy loads its libraries from the layer's lib/ beside bin/ with no
    environment variable — and a child it starts loads none of them (the leak an
    LD_LIBRARY_PATH wrapper had: every command the agent ran inherited it)."""
    import shutil
    import subprocess

    from pytest_skilllift.runners.task_cli import LayerFiles, with_rpath

    node = shutil.which("node")
    if node is None or not extra_libraries(os.path.realpath(node)):
        pytest.skip("no dynamically linked node here (bash .ci/run installs one)")
    plan = LayerFiles()
    dest = plan.executable(os.path.realpath(node), "node")
    assert dest == f"{CLI_BIN}/node" and dest in plan.patched and not plan.data
    # the layer laid out under tmp_path: bin/node (patched) and lib/ with its libraries
    (tmp_path / "bin").mkdir()
    (tmp_path / "lib").mkdir()
    binary = tmp_path / "bin" / "node"
    binary.write_bytes(with_rpath(plan.patched[dest]))
    binary.chmod(0o755)
    for d, source in plan.files.items():
        shutil.copyfile(source, tmp_path / "lib" / Path(d).name)
    assert CLI_RPATH == "$ORIGIN/../lib"
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    proc = subprocess.run(
        [str(binary), "-e", "const cp = require('child_process');"
         "console.log(JSON.stringify({exec: process.execPath, child: cp.execSync("
         "'echo ${LD_LIBRARY_PATH-unset}').toString().trim()}))"],
        capture_output=True, text=True, check=True, timeout=60,
        env={**env, "LD_DEBUG": "libs", "LD_DEBUG_OUTPUT": str(tmp_path / "ld")})
    out = json.loads(proc.stdout)
    # it is itself (Gemini CLI relaunches process.execPath), and its child sees no path
    assert out == {"exec": str(binary), "child": "unset"}
    logs = [p.read_text() for p in tmp_path.glob("ld.*")]  # one per process
    loaded = "\n".join(logs)
    for lib in (tmp_path / "lib").iterdir():
        assert f"calling init: {tmp_path}/bin/../lib/{lib.name}" in loaded, lib.name
    # node alone looked there: the shell it started did not
    assert len(logs) >= 2 and sum(f"{tmp_path}/bin/../lib" in log for log in logs) == 1


def test_a_missing_npm_cli_names_its_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_skilllift.runners import agents as runner_agents
    from pytest_skilllift.runners import task_docker
    from pytest_skilllift.runners.task_image import TaskImageError

    # task_docker looks the CLI up through the runners.agents module, patched here
    monkeypatch.setattr(runner_agents, "find_cli", lambda name: None)
    with pytest.raises(TaskImageError, match=r"npm install -g @openai/codex@0\.169\.0"):
        task_docker.agent_layer("codex")


class _Client:
    """Enough of a docker client for the runner's constructor (the engine answers)."""

    def ping(self) -> bool:
        return True


def _task_spec(tmp_path: Path, model_id: str, condition: str = "with-skill") -> RunSpec:
    return RunSpec(prompt=load_task(DEMO, tmp_path), model_label="m", model_id=model_id,
                   condition=condition, rep=1, run_id="r")


@pytest.mark.parametrize(("model_id", "flag"), [("codex:gpt-5.5",
                                                  "--dangerously-bypass-approvals-and-sandbox"),
                                                 ("gemini-cli:gemini-2.5-flash", "--yolo"),
                                                 ("opencode:anthropic/claude-sonnet-4-5", "run")])
def test_another_agents_task_argv_runs_the_layers_cli(tmp_path: Path, model_id: str,
                                                       flag: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    claude = tmp_path / "claude"
    claude.write_bytes(b"cli")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:9")
    runner = TaskRunner(client=_Client(), claude=claude, network="bridge")
    runner.home = "/home/worker"
    spec = _task_spec(tmp_path, model_id)
    command = f"{CLI_BIN}/{agent(spec.agent).binary}"
    inv = runner._agent(spec, AgentConfig(claude_path="", skills_root=tmp_path),
                        {spec.agent: command})
    assert inv is not None
    assert inv.argv[0] == command and flag in inv.argv
    assert inv.preflight[0] == command  # the listing runs the same CLI
    assert inv.env["HOME"] == "/home/worker"
    assert ".agents/skills" in inv.dirs  # made empty in both arms
    # A loopback API is reached through docker's host gateway in a bridged container.
    text = json.dumps([inv.env, inv.files])
    assert "127.0.0.1" not in text and "host.docker.internal" in text


def test_a_no_skill_run_of_another_agent_that_lists_the_skill_is_invalid(
        tmp_path: Path) -> None:
    """The skill-free proof of another agent is its own listing command's output."""
    run = tmp_path / "run"
    (run / "verifier").mkdir(parents=True)
    (run / "task.json").write_text(json.dumps({"tools": [], "verifier": {"exit_code": 0}}))
    (run / "verifier" / "reward.txt").write_text("0")
    (run / "stdout.txt").write_text("")
    listing = [{"name": "customize-opencode", "description": "built in"},
               {"name": "csv-report", "description": "x", "location": "/root/.claude/skills"}]
    (run / AGENT_SKILLS_FILE).write_text(json.dumps(listing))
    spec = _task_spec(tmp_path, "opencode:anthropic/claude-sonnet-4-5", "no-skill")
    assert listed_skills(run / "stdout.txt", agent="opencode") == (
        "customize-opencode", "csv-report")
    record = apply_verifier(spec, {"run_status": OK}, run)
    assert record["run_status"] == INVALID and record["task_skills_listed"] == ["csv-report"]
    (run / AGENT_SKILLS_FILE).write_text(json.dumps(listing[:1]))
    record = apply_verifier(spec, {"run_status": OK}, run)
    assert record["run_status"] == OK and record["task_skills_listed"] == []
    # Claude Code's listing is its init event, not this file.
    assert listed_skills(run / "stdout.txt") is None


@pytest.mark.parametrize("dialect", [CODEX, GEMINI, OPENCODE], ids=lambda d: d.name)
def test_the_scripts_write_and_shell_calls_are_each_clis_own_tools(dialect: Dialect) -> None:
    content = "# Attempt\n\nline with 'quotes' and $VARS\nSKILLLIFT_EOF inside\n"
    for call in ((WRITE, {"file_path": "/app/ATTEMPT.md", "content": content}),
                 (BASH, {"command": "python3 - <<'PY'\nprint(1)\nPY"})):
        name, args = dialect.native_call(*call)
        assert name not in (WRITE, BASH)  # the CLI's own tool, never Claude Code's name
        back_name, back = dialect.canonical_call(name, args)
        assert back_name == call[0]
        assert {k: back.get(k) for k in call[1]} == call[1]
    native = {"codex": {"exec_command"}, "gemini-cli": {"write_file", "run_shell_command"},
              "opencode": {"write", "bash"}}[dialect.name]
    assert {WRITE, BASH} <= set(dialect.tool_names(native))


def test_codexs_write_is_a_here_document_the_shell_runs(tmp_path: Path) -> None:
    content = "a 'b' $c\nSKILLLIFT_EOF\nend"
    _, args = CODEX.native_call(WRITE, {"file_path": str(tmp_path / "out file.md"),
                                        "content": content})
    import subprocess

    subprocess.run(["bash", "-c", args["cmd"]], check=True)
    assert (tmp_path / "out file.md").read_text() == content + "\n"


@pytest.mark.parametrize(("text", "where"), [
    ("<env>\n  Working directory: /app\n</env>", "/app"),
    ("<environment_context>\n  <cwd>/home/worker/app</cwd>\n</environment_context>",
     "/home/worker/app"),
    ("- **Workspace Directories:**\n  - /srv/task\n  - /root/.agents/skills", "/srv/task"),
])
def test_the_working_directory_as_each_cli_states_it(text: str, where: str) -> None:
    body: dict[str, Any] = {"system": "", "messages": [
        {"role": "user", "content": [{"type": "text", "text": text}]}]}
    assert working_directory(body) == where


def test_fake_layers_tar_is_what_docker_import_gets(tmp_path: Path) -> None:
    """The CLI-only image's tar holds the layer's files with their modes, under CLI_ROOT."""
    layer = npm_layer("opencode", _fake_npm(tmp_path, "opencode")) if _has_rg() else None
    if layer is None:
        pytest.skip("ripgrep (rg) is not installed (OpenCode's layer copies it)")
    tar_path = _cli_rootfs(layer)
    try:
        with tarfile.open(tar_path) as tar:
            members = {m.name: m for m in tar.getmembers()}
            cli = members[layer.command.lstrip("/")]
            assert cli.isfile() and cli.mode & 0o111
            fh = tar.extractfile(cli)
            assert fh is not None and len(io.BytesIO(fh.read()).getvalue()) == 1_100_000
    finally:
        tar_path.unlink()
    assert all(n.startswith(CLI_ROOT.lstrip("/")) or CLI_ROOT.lstrip("/").startswith(n)
               for n in members)


def _has_rg() -> bool:
    return any(os.access(os.path.join(d, "rg"), os.X_OK)
               for d in os.environ.get("PATH", "").split(os.pathsep))
