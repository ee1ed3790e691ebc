"""The docker runner end to end: the real CLI in a fresh container against the stand-in.

Needs a Docker engine (``.ci/docker-setup.sh`` starts one) and builds the offline test image
(``skilllift-test:local``) once per session when it is missing. Without an engine the whole
module is skipped with the reason. Containers run with ``network=host`` so the CLI reaches
the stand-in on 127.0.0.1; one test covers the default bridge mode through the host gateway.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import signal
import socket
import subprocess
import sys
import tarfile
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

docker = pytest.importorskip("docker", reason="the docker SDK is not installed")

from pytest_skilllift.model import (  # noqa: E402
    PINNED_CLI_VERSION,
    AgentConfig,
    PromptSpec,
    RunSpec,
)
from pytest_skilllift.runners import docker as docker_runner  # noqa: E402
from pytest_skilllift.runners.claude import bundled_claude  # noqa: E402
from pytest_skilllift.runners.docker import (  # noqa: E402
    LABEL_DEADLINE,
    LABEL_OWNER,
    LABEL_RUN_ID,
    LABEL_WEEK,
    DockerRunner,
    container_name,
    sweep_stale,
)
from pytest_skilllift.runners.image import (  # noqa: E402
    DOCKERFILE,
    LABEL_CLI_VERSION,
    TEST_IMAGE_TAG,
    build_from_local,
    image_cli_version,
)
from pytest_skilllift.testing import Reply, StandIn  # noqa: E402
from pytest_skilllift.week.files import STDERR_FILE, STDOUT_FILE  # noqa: E402

# They run the real CLI too, so `-m 'not cli'` deselects them as well.
pytestmark = [pytest.mark.docker, pytest.mark.cli]

REPO = Path(__file__).resolve().parents[1]
#: A recognisable fake key: the stand-in demands it (so it reached the CLI) and no file
#: written by the run may contain it.
API_KEY = "sk-ant-skilllift-test-" + uuid.uuid4().hex


def _engine_problem() -> str | None:
    """Why docker tests cannot run here, or None when they can."""
    try:
        client = docker.from_env()
        client.ping()
    except Exception as exc:
        return (f"no Docker engine reachable ({type(exc).__name__}: {exc}); "
                "run .ci/docker-setup.sh to start one")
    try:
        client.images.get(TEST_IMAGE_TAG)
    except docker.errors.ImageNotFound:
        if bundled_claude() is None:
            return (f"test image {TEST_IMAGE_TAG} is missing and cannot be built: no bundled "
                    "Claude Code CLI (install claude-agent-sdk)")
    finally:
        client.close()
    return None


_PROBLEM = _engine_problem()
if _PROBLEM:
    pytest.skip(_PROBLEM, allow_module_level=True)


# -- fixtures ---------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def client() -> Iterator[Any]:
    c = docker.from_env()
    yield c
    c.close()


@pytest.fixture(scope="session")
def test_image(client: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The offline image, built once if absent (a few seconds: docker import of the CLI).

    Under ``-n N`` the workers share one lock file, so only the first one builds.
    """
    lock_path = tmp_path_factory.getbasetemp().parent / "skilllift-test-image.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            client.images.get(TEST_IMAGE_TAG)
        except docker.errors.ImageNotFound:
            build_from_local(client, TEST_IMAGE_TAG, log=lambda line: None)
    return TEST_IMAGE_TAG


@pytest.fixture(scope="module")
def runner(client: Any, test_image: str) -> Iterator[DockerRunner]:
    r = DockerRunner(test_image, network="host", client=client, week="test-week")
    yield r
    r.close()


def _ours(client: Any, label: str) -> list[Any]:
    """Containers carrying ``label``, skipping any removed between the listing and the
    per-container inspect ``containers.list`` does (a sibling -n worker's sweep, a run
    ending meanwhile): without ``ignore_removed`` that inspect raises 404."""
    return list(client.containers.list(all=True, filters={"label": label}, ignore_removed=True))


def _mine(client: Any) -> list[str]:
    """Skilllift containers this test process made (other -n workers' are not ours).

    Listed with one low-level call: ``containers.list`` inspects each container it found,
    which raises 404 for one removed in between (a run ending while a test polls)."""
    owner = f"{socket.gethostname()}:{os.getpid()}"
    return [c["Id"] for c in client.api.containers(
        all=True, filters={"label": [f"{LABEL_OWNER}={owner}"]})]


@pytest.fixture(autouse=True)
def no_container_left(client: Any) -> Iterator[None]:
    """Every test must leave no container of ours behind, whatever happened in the run."""
    yield
    assert _mine(client) == []


def _tool_result_text(body: dict[str, Any]) -> str | None:
    """The text of the tool_result in the last user message, if it has one."""
    last = body["messages"][-1]
    content = last.get("content")
    if not isinstance(content, list):
        return None
    for block in content:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            inner = block.get("content")
            if isinstance(inner, list):
                return "".join(str(b.get("text", "")) for b in inner if isinstance(b, dict))
            return str(inner or "")
    return None


def probe_agent(body: dict[str, Any]) -> Reply:
    """Asks the container who it runs as (via the CLI's Bash tool), then answers with it."""
    seen = _tool_result_text(body)
    if seen is None:
        return Reply.tool("Bash", {"command": "id -u; id -un", "description": "identity"})
    return Reply.text(f"Final answer. Identity probe: {seen.strip()}")


@pytest.fixture
def standin() -> Iterator[StandIn]:
    api = StandIn(agent=probe_agent, api_key=API_KEY)
    api.start()
    yield api
    api.stop()


def _family(root: Path, name: str, skill_md: str, rel: str = "SKILL.md") -> Path:
    path = root / name / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(skill_md)
    (root / name / "reference.md").write_text("More detail for the skill.\n")
    return root / name


def _good_skill(name: str) -> str:
    return textwrap.dedent(f"""\
        ---
        name: {name}
        description: Use when the user asks about {name}; a test skill for the docker runner.
        ---
        # {name}
        Answer with the word widget.
        """)


def _spec(family: str, condition: str, prompt: str = "How do I tune widgets?") -> RunSpec:
    p = PromptSpec(path=Path(f"{family}.json"), name=family, product_area="test",
                   prompt=prompt, rubric=(), skill_path=f"{family}/SKILL.md")
    return RunSpec(prompt=p, model_label="sonnet", model_id="claude-sonnet-4-5",
                   condition=condition, rep=1, run_id=f"{family}-{condition}-r1")


def _cfg(skills_root: Path, base_url: str, timeout_s: float = 90.0) -> AgentConfig:
    return AgentConfig(claude_path="claude", skills_root=skills_root, timeout_s=timeout_s,
                       env={"ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": API_KEY})


def _events(run_dir: Path) -> list[dict[str, Any]]:
    lines = (run_dir / STDOUT_FILE).read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _init_skills(run_dir: Path) -> list[str]:
    init = next(e for e in _events(run_dir) if e.get("type") == "system"
                and e.get("subtype") == "init")
    return list(init.get("skills") or [])


def _signals(run_dir: Path, family: str) -> Any:
    from pytest_skilllift.trace.transcript import extract_signals, parse_transcript

    return extract_signals(parse_transcript(run_dir / STDOUT_FILE), family=family,
                           leaf=f"{family}/SKILL.md", site_host=None)


def _assert_no_secret(run_dir: Path) -> None:
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert API_KEY.encode() not in path.read_bytes(), f"API key written to {path}"


# -- both arms ---------------------------------------------------------------------------------


def test_with_skill_installs_family_and_runs_as_non_root(
    runner: DockerRunner, standin: StandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    skills = tmp_path / "skills"
    _family(skills, "widget-tuning", _good_skill("widget-tuning"))
    created: list[dict[str, Any]] = []
    real_create = runner.client.api.create_container

    def spy(*args: Any, **kwargs: Any) -> Any:
        created.append(kwargs)
        return real_create(*args, **kwargs)

    monkeypatch.setattr(runner.client.api, "create_container", spy)
    run_dir = tmp_path / "run"
    outcome = runner.run(_spec("widget-tuning", "with-skill"), _cfg(skills, standin.base_url),
                         run_dir)

    assert outcome.error is None, (outcome, (run_dir / STDERR_FILE).read_text())
    assert outcome.exit_code == 0 and not outcome.timed_out
    assert outcome.runner == "docker" and outcome.cli_version == PINNED_CLI_VERSION
    assert "widget-tuning" in _init_skills(run_dir)
    assert _signals(run_dir, "widget-tuning").skill_available is True
    # The Bash probe ran inside the container: the CLI is not root.
    result = next(e for e in _events(run_dir) if e.get("type") == "result")
    assert "Identity probe: 1000" in result["result"] and "agent" in result["result"]
    assert standin.count("agent") >= 2  # the key reached the CLI: the stand-in demands it
    _assert_no_secret(run_dir)

    # The container as created: non-root, limited, nothing mounted, no key in its config.
    (kwargs,) = created
    host = kwargs["host_config"]
    assert kwargs["user"] == "agent"
    assert host["Memory"] == 2 * 1024**3 and host["PidsLimit"] == 512
    assert host["NanoCpus"] == 1_000_000_000 and host["CapDrop"] == ["ALL"]
    assert "Binds" not in host and "Mounts" not in host
    assert API_KEY not in json.dumps(kwargs)
    assert kwargs["labels"][LABEL_RUN_ID] == "widget-tuning-with-skill-r1"
    assert kwargs["labels"][LABEL_WEEK] == "test-week"
    assert kwargs["name"].startswith("skilllift-widget-tuning-with-skill-r1-")


def test_api_key_is_not_visible_to_docker_inspect_during_the_run(
    runner: DockerRunner, client: Any, tmp_path: Path,
) -> None:
    """While the CLI runs (the stand-in is mid-request), inspect the live container and its
    exec the way ``docker inspect`` would: the key must be in neither."""
    seen: list[str] = []

    def inspecting_agent(body: dict[str, Any]) -> Reply:
        for c in _mine(client):
            info = client.api.inspect_container(c)
            seen.append(json.dumps(info))
            seen.extend(json.dumps(client.api.exec_inspect(e)) for e in info.get("ExecIDs") or [])
        return Reply.text("Final answer.")

    api = StandIn(agent=inspecting_agent, api_key=API_KEY)
    api.start()
    try:
        outcome = runner.run(_spec("widget-tuning", "no-skill"), _cfg(tmp_path, api.base_url),
                             tmp_path / "run")
    finally:
        api.stop()
    assert outcome.exit_code == 0, outcome
    assert len(seen) >= 2  # the container and at least the CLI's exec were inspected
    assert all(API_KEY not in text for text in seen)
    assert any('"Running": true' in text for text in seen)


def test_no_skill_installs_nothing(runner: DockerRunner, standin: StandIn,
                                   tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    _family(skills, "widget-tuning", _good_skill("widget-tuning"))
    run_dir = tmp_path / "run"
    outcome = runner.run(_spec("widget-tuning", "no-skill"), _cfg(skills, standin.base_url),
                         run_dir)
    assert outcome.error is None and outcome.exit_code == 0
    assert "widget-tuning" not in _init_skills(run_dir)
    assert _signals(run_dir, "widget-tuning").skill_available is False
    _assert_no_secret(run_dir)


@pytest.mark.parametrize("broken", ["bad-frontmatter", "wrong-path"])
def test_broken_install_is_caught_by_the_availability_check(
    runner: DockerRunner, standin: StandIn, tmp_path: Path, broken: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A family that is copied but does not register: the run's init ``skills`` lacks it,
    so the availability check marks the run invalid (SCORING.md's hard check)."""
    skills = tmp_path / "skills"
    if broken == "bad-frontmatter":
        _family(skills, "widget-tuning",
                "---\nname: widget-tuning\ndescription: [unclosed\n  : : bad\n---\nbody\n")
    else:
        # Image drift: the family lands beside ~/.claude/skills, not in it (a changed HOME
        # layout or install path), so the CLI never sees it.
        _family(skills, "widget-tuning", _good_skill("widget-tuning"))
        real_archive = docker_runner.skill_archive

        def misplaced(family_dir: Path, *args: Any, **kwargs: Any) -> bytes:
            data = io.BytesIO(real_archive(family_dir, *args, **kwargs))
            buf = io.BytesIO()
            with tarfile.open(fileobj=data) as src, tarfile.open(fileobj=buf, mode="w") as dst:
                for member in src.getmembers():
                    member.name = member.name.replace(".claude/skills", ".claude/skillz")
                    dst.addfile(member, src.extractfile(member) if member.isfile() else None)
            return buf.getvalue()

        monkeypatch.setattr(docker_runner, "skill_archive", misplaced)
    run_dir = tmp_path / "run"
    outcome = runner.run(_spec("widget-tuning", "with-skill"), _cfg(skills, standin.base_url),
                         run_dir)
    assert outcome.error is None and outcome.exit_code == 0  # the CLI itself ran fine
    assert "widget-tuning" not in _init_skills(run_dir)
    assert _signals(run_dir, "widget-tuning").skill_available is False


def test_skill_archive_is_owned_by_the_agent_and_skips_vcs(tmp_path: Path) -> None:
    family = _family(tmp_path, "widget-tuning", _good_skill("widget-tuning"))
    (family / ".git").mkdir()
    (family / ".git" / "config").write_text("[core]\n")
    (family / "run.sh").write_text("#!/bin/sh\n")
    (family / "run.sh").chmod(0o700)
    with tarfile.open(fileobj=io.BytesIO(docker_runner.skill_archive(family))) as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert set(members) == {
        ".claude", ".claude/skills", ".claude/skills/widget-tuning",
        ".claude/skills/widget-tuning/SKILL.md", ".claude/skills/widget-tuning/reference.md",
        ".claude/skills/widget-tuning/run.sh",
    }
    assert {(m.uid, m.gid, m.uname) for m in members.values()} == {(1000, 1000, "agent")}
    assert members[".claude/skills/widget-tuning/run.sh"].mode == 0o755
    assert members[".claude/skills/widget-tuning/SKILL.md"].mode == 0o644


def test_missing_family_dir_is_a_harness_error(runner: DockerRunner, standin: StandIn,
                                               tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    outcome = runner.run(_spec("nowhere", "with-skill"), _cfg(tmp_path, standin.base_url),
                         run_dir)
    assert outcome.exit_code is None and "'nowhere' not found" in (outcome.error or "")
    assert (run_dir / STDOUT_FILE).exists()
    assert "not found" in (run_dir / STDERR_FILE).read_text()
    assert standin.count("agent") == 0


def test_prompt_is_never_shell_interpreted(runner: DockerRunner, tmp_path: Path) -> None:
    """Shell metacharacters in the prompt reach the model verbatim."""
    prompt = "Explain $(id -u) and `whoami`; echo 'x' | cat > /tmp/pwned && \"$HOME\""
    api = StandIn(agent=lambda body: Reply.text("Final answer."), api_key=API_KEY)
    api.start()
    try:
        run_dir = tmp_path / "run"
        outcome = runner.run(_spec("widget-tuning", "no-skill", prompt),
                             _cfg(tmp_path, api.base_url), run_dir)
        assert outcome.exit_code == 0, outcome
        first = api.bodies("agent")[0]["messages"][0]["content"]
        text = first if isinstance(first, str) else json.dumps(first)
        assert "$(id -u)" in text and "`whoami`" in text
    finally:
        api.stop()


# -- timeout, interrupt, sweep ------------------------------------------------------------------


def test_timeout_kills_the_container(runner: DockerRunner, tmp_path: Path) -> None:
    # The API would answer after ANSWER_S: a run that ends well before that was cut by its
    # timeout, whatever the set-up and the kill cost on a loaded machine (the old bound, 20 s
    # for a 4 s timeout, measured docker's speed, not the timeout).
    answer_s = 600
    api = StandIn(agent=probe_agent, api_key=API_KEY, latency_s=answer_s)
    api.start()
    try:
        run_dir = tmp_path / "run"
        started = time.monotonic()
        outcome = runner.run(_spec("widget-tuning", "no-skill"),
                             _cfg(tmp_path, api.base_url, timeout_s=4), run_dir)
        elapsed = time.monotonic() - started
    finally:
        api.stop()  # wakes the request sleeping in its latency
    assert outcome.timed_out and outcome.exit_code is None
    assert "timed out after 4s" in (outcome.error or "") and "killed" in (outcome.error or "")
    assert 4 <= elapsed < answer_s / 10, elapsed
    # What the CLI wrote before the kill is kept (the init event streamed as it arrived).
    assert "widget-tuning" not in _init_skills(run_dir)


def test_a_broken_output_stream_is_reported_not_silently_truncated(
    runner: DockerRunner, standin: StandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_start = runner.client.api.exec_start

    def breaking_start(*args: Any, **kwargs: Any) -> Iterator[tuple[bytes | None, bytes | None]]:
        yield next(iter(real_start(*args, **kwargs)))
        raise ConnectionError("stream cut")

    monkeypatch.setattr(runner.client.api, "exec_start", breaking_start)
    outcome = runner.run(_spec("widget-tuning", "no-skill"), _cfg(tmp_path, standin.base_url),
                         tmp_path / "run")
    # The CLI loses its stdout with the stream and ends (its exit code is kept); the run
    # says its transcript may be incomplete instead of passing a truncated one as whole.
    assert outcome.exit_code is not None and not outcome.timed_out
    assert "output stream broke (ConnectionError: stream cut)" in (outcome.error or "")


def test_keyboard_interrupt_removes_the_container(runner: DockerRunner, client: Any,
                                                  tmp_path: Path) -> None:
    # Neither answered nor timed out before the Ctrl-C (with 60 s, a loaded engine let the
    # run time out first: DID NOT RAISE KeyboardInterrupt, measured); stop() wakes it.
    api = StandIn(agent=probe_agent, api_key=API_KEY, latency_s=600)
    api.start()
    seen: list[int] = []

    def interrupt() -> None:
        # Wait until the run's container exists (a deadline, not a count of polls: creating
        # it takes seconds on a loaded engine), then Ctrl-C the main thread.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if mine := _mine(client):
                seen.append(len(mine))
                break
            time.sleep(0.05)
        time.sleep(0.5)
        signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)

    timer = threading.Thread(target=interrupt, daemon=True)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            runner.run(_spec("widget-tuning", "no-skill"),
                       _cfg(tmp_path, api.base_url, timeout_s=600), tmp_path / "run")
    finally:
        api.stop()
        timer.join(5)
    assert seen == [1]
    assert _mine(client) == []


def test_memory_limit_kills_the_cli_and_says_so(client: Any, test_image: str,
                                                standin: StandIn, tmp_path: Path) -> None:
    """48 MB is far below what the CLI needs: the kernel kills it and the run says why."""
    small = DockerRunner(test_image, network="host", memory="48m", client=client)
    try:
        outcome = small.run(_spec("widget-tuning", "no-skill"), _cfg(tmp_path, standin.base_url),
                            tmp_path / "run")
    finally:
        small.close()
    assert outcome.exit_code == 137 and not outcome.timed_out
    assert "out of memory" in (outcome.error or "") and "48m" in (outcome.error or "")


_KILLED_SESSION = """
import sys, time
from pathlib import Path
from pytest_skilllift.model import AgentConfig, PromptSpec, RunSpec
from pytest_skilllift.runners.docker import DockerRunner
from pytest_skilllift.testing import StandIn
api = StandIn(latency_s=120); url = api.start()
p = PromptSpec(Path("x.json"), "x", "t", "hello", (), "fam/SKILL.md")
spec = RunSpec(p, "sonnet", "claude-sonnet-4-5", "no-skill", 1, "killed-session-r1")
cfg = AgentConfig("claude", Path(sys.argv[2]), timeout_s=600,
                  env={"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "k"})
DockerRunner(sys.argv[1], network="host").run(spec, cfg, Path(sys.argv[2]) / "run")
"""


def test_sweep_removes_containers_of_a_killed_session(client: Any, test_image: str,
                                                      tmp_path: Path) -> None:
    """SIGKILL a session mid-run: its container survives it; the next start sweeps it."""
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_SESSION, test_image, str(tmp_path)])
    owner = f"{socket.gethostname()}:{proc.pid}"
    try:
        left: list[Any] = []
        # A deadline (the session imports, starts its stand-in, creates the container: tens
        # of seconds under load), not a count of polls.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            left = _ours(client, f"{LABEL_OWNER}={owner}")
            if left and left[0].status == "running":
                break
            time.sleep(0.1)
        assert left, "the session never started its run"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        # A killed session cannot clean up: the container is still there (unless, under -n,
        # a sibling worker's runner start-up swept it first — the exact check is serial-only).
        survived = _ours(client, f"{LABEL_OWNER}={owner}")
        removed = sweep_stale(client)
        if "PYTEST_XDIST_WORKER" not in os.environ:
            assert survived and removed >= 1
        assert not _ours(client, f"{LABEL_OWNER}={owner}")
    finally:
        with contextlib.suppress(Exception):
            proc.kill()
        for c in _ours(client, f"{LABEL_OWNER}={owner}"):
            c.remove(force=True)


def test_sweep_spares_live_runs_and_honours_week(client: Any, test_image: str) -> None:
    """Stale = dead owner or past deadline; a live owner's young container (another ``-n``
    worker's run) is never removed, and ``week`` narrows the sweep."""
    me = f"{socket.gethostname()}:{os.getpid()}"
    now = int(time.time())
    made = {
        "live": {LABEL_OWNER: me, LABEL_DEADLINE: str(now + 600)},
        "expired": {LABEL_OWNER: "elsewhere:1", LABEL_DEADLINE: str(now - 1)},
        "dead-owner": {LABEL_OWNER: f"{socket.gethostname()}:{_dead_pid()}",
                       LABEL_DEADLINE: str(now + 600)},
        "other-week": {LABEL_OWNER: "elsewhere:1", LABEL_DEADLINE: str(now - 1)},
    }
    ids = {}
    for key, labels in made.items():
        week = "other" if key == "other-week" else "sweep-week"
        ids[key] = client.api.create_container(
            test_image, command=["true"], name=container_name(f"sweep-{key}"),
            labels={LABEL_RUN_ID: f"sweep-{key}", LABEL_WEEK: week, **labels})["Id"]
    try:
        removed = sweep_stale(client, week="sweep-week")
        remaining = {c.id for c in _ours(client, LABEL_RUN_ID)}
        assert ids["live"] in remaining
        assert ids["expired"] not in remaining and ids["dead-owner"] not in remaining
        # Under -n N a sibling worker's runner start-up sweeps every week, so the stale
        # containers may already be gone by its hand: the exact count is a serial-run check.
        if "PYTEST_XDIST_WORKER" not in os.environ:
            assert removed == 2 and ids["other-week"] in remaining
    finally:
        for cid in ids.values():
            with contextlib.suppress(docker.errors.NotFound):
                client.api.remove_container(cid, force=True)


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


# -- network modes, image ----------------------------------------------------------------------


def _docker0_ip() -> str | None:
    try:
        out = subprocess.run(["ip", "-4", "-o", "addr", "show", "docker0"], capture_output=True,
                             text=True, timeout=5, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    parts = out.split()
    return parts[parts.index("inet") + 1].split("/")[0] if "inet" in parts else None


def _forward(listen: socket.socket, target: tuple[str, int], stop: threading.Event) -> None:
    """A tiny TCP relay: the stand-in listens on loopback only, the bridge reaches docker0."""
    listen.settimeout(0.2)

    def pipe(a: socket.socket, b: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := a.recv(65536):
                b.sendall(data)
        with contextlib.suppress(OSError):
            b.shutdown(socket.SHUT_WR)

    while not stop.is_set():
        try:
            conn, _ = listen.accept()
        except (TimeoutError, OSError):
            continue
        upstream = socket.create_connection(target)
        for a, b in ((conn, upstream), (upstream, conn)):
            threading.Thread(target=pipe, args=(a, b), daemon=True).start()


def test_bridge_mode_reaches_a_loopback_url_through_the_host_gateway(
    client: Any, test_image: str, standin: StandIn, tmp_path: Path,
) -> None:
    """The default network: ``ANTHROPIC_BASE_URL`` on 127.0.0.1 is rewritten to
    ``host.docker.internal`` (docker's host gateway); a relay on docker0 stands for a server
    listening where the bridge can reach it."""
    gateway = _docker0_ip()
    if gateway is None or os.environ.get("DOCKER_HOST", "unix://").split("://")[0] != "unix":
        pytest.skip("bridge test needs a local engine with a docker0 interface")
    port = int(standin.base_url.rsplit(":", 1)[1])
    listen = socket.socket()
    listen.bind((gateway, port))
    listen.listen(16)
    stop = threading.Event()
    relay = threading.Thread(target=_forward, args=(listen, ("127.0.0.1", port), stop),
                             daemon=True)
    relay.start()
    bridged = DockerRunner(test_image, client=client)  # network="bridge" by default
    try:
        assert bridged.container_base_url(standin.base_url) == \
            f"http://host.docker.internal:{port}"
        run_dir = tmp_path / "run"
        outcome = bridged.run(_spec("widget-tuning", "no-skill"),
                              _cfg(tmp_path, standin.base_url, timeout_s=60), run_dir)
        assert outcome.exit_code == 0, (outcome, (run_dir / STDERR_FILE).read_text())
        assert standin.count("agent") >= 2
    finally:
        bridged.close()
        stop.set()
        relay.join(2)
        listen.close()


def test_image_cli_version_matches_the_pin(client: Any, test_image: str) -> None:
    assert image_cli_version(client, test_image) == PINNED_CLI_VERSION
    labels = client.images.get(test_image).labels
    assert labels[LABEL_CLI_VERSION] == PINNED_CLI_VERSION
    # The image holds no secret: nothing in its config names a key.
    assert "ANTHROPIC_API_KEY" not in json.dumps(client.images.get(test_image).attrs["Config"])


def test_runner_refuses_a_missing_image(client: Any) -> None:
    with pytest.raises(RuntimeError, match="image build"):
        DockerRunner("skilllift-no-such-image:none", client=client)


def test_packaged_dockerfile_matches_the_repo_copy() -> None:
    assert (REPO / "docker" / "Dockerfile").read_text() == DOCKERFILE
    assert f"CLAUDE_CODE_VERSION={PINNED_CLI_VERSION}" in DOCKERFILE


def test_an_unreachable_api_is_named_and_the_container_removed(client: Any, test_image: str,
                                                               tmp_path: Path) -> None:
    """Nothing listening at the base URL: named from the CLI's api_retry events within 30 s
    (the host's probe confirms it), not after the run's timeout."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    runner = DockerRunner(test_image, network="host", client=client, week="test-week")
    try:
        out = runner.run(_spec("widget-tuning", "no-skill"),
                         _cfg(tmp_path, f"http://127.0.0.1:{port}", timeout_s=300),
                         tmp_path / "run")
    finally:
        runner.close()
    assert out.outage == (f"API unreachable at 127.0.0.1:{port}: connection refused; check "
                          "ANTHROPIC_BASE_URL")
    assert out.error is not None and out.error.startswith(out.outage)
    assert out.wall_ms < 30_000 and not out.timed_out
    assert _mine(client) == []


@pytest.mark.parametrize("after_s", [0.0, 0.5], ids=["while-set-up", "while-running"])
def test_the_session_stopping_removes_the_container(client: Any, test_image: str,
                                                    tmp_path: Path, after_s: float) -> None:
    """Another process of the session is interrupted (its registry says stop): the run in
    flight here is stopped, its container removed, and nothing is reported for it — also
    when the stop lands while the container is being set up (the skill archive, its start),
    where the removed container makes the docker call fail."""
    from pytest_skilllift.runners.inflight import Inflight, RunInterrupted

    inflight = Inflight(tmp_path / "registry")
    runner = DockerRunner(test_image, network="host", client=client, week="test-week",
                          inflight=inflight)
    api = StandIn(agent=probe_agent, api_key=API_KEY, latency_s=60)
    api.start()
    stopped: list[list[str]] = []

    def stop_when_running() -> None:
        for _ in range(400):
            if inflight.entries():
                break
            time.sleep(0.05)
        time.sleep(after_s)
        stopped.append(inflight.stop_all())

    stopper = threading.Thread(target=stop_when_running, daemon=True)
    stopper.start()
    try:
        started = time.monotonic()
        with pytest.raises(RunInterrupted):
            runner.run(_spec("widget-tuning", "no-skill"),
                       _cfg(tmp_path, api.base_url, timeout_s=60), tmp_path / "run")
        assert time.monotonic() - started < 30
    finally:
        api.stop()
        stopper.join(10)
        runner.close()
    assert stopped == [["widget-tuning-no-skill-r1"]]
    assert inflight.stopped_runs() == ["widget-tuning-no-skill-r1"]
    assert _mine(client) == []
