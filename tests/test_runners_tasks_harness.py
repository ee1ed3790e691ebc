"""The task runner's own steps, against a recording stand-in for the engine's API (no docker):
what it asks the engine per run is the harness's time (benchmarks/README.md, "Harbor tasks"),
so a round trip it does not need must not happen."""

from __future__ import annotations

import io
import tarfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.runners.task_docker import TaskRunner, _overlapped

#: Go's os.FileMode directory bit (what docker's path stat reports for a directory).
_DIR_MODE = 1 << 31


def _tar(name: str, data: bytes) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


class FakeAPI:
    """The engine's answers for one container whose workdir ``/app`` the agent changed."""

    def __init__(self, files: dict[str, bytes], dirs: set[str],
                 changes: list[dict[str, Any]]) -> None:
        self.files, self.dirs, self.changes = files, dirs, changes
        self.archived: list[str] = []

    def diff(self, container: str) -> list[dict[str, Any]]:
        return self.changes

    def get_archive(self, container: str, path: str) -> tuple[Any, dict[str, Any]]:
        self.archived.append(path)
        if path in self.dirs:
            return iter([b"a whole directory"]), {"mode": _DIR_MODE, "size": 4096}
        data = self.files[path]
        return iter([_tar(path.rsplit("/", 1)[1], data)]), {"mode": 0o644, "size": len(data)}


class FakeClient:
    def __init__(self, api: FakeAPI) -> None:
        self.api = api

    def ping(self) -> bool:
        return True


def test_the_copy_of_the_agents_work_fetches_files_not_directories(tmp_path: Path) -> None:
    api = FakeAPI(
        files={"/app/report.json": b'{"total": 1}', "/app/out/notes.md": b"notes"},
        dirs={"/app", "/app/out", "/root/.claude"},
        changes=[{"Path": "/app", "Kind": 0}, {"Path": "/app/out", "Kind": 1},
                 {"Path": "/app/out/notes.md", "Kind": 1},
                 {"Path": "/app/report.json", "Kind": 1}, {"Path": "/app/old.csv", "Kind": 2},
                 {"Path": "/root/.claude", "Kind": 0}, {"Path": "/tests", "Kind": 1}])
    cli = tmp_path / "claude"
    cli.write_bytes(b"cli")
    runner = TaskRunner(client=FakeClient(api), claude=cli)
    got = runner._artifacts("c1", "/app", "/root", tmp_path / "artifacts")
    # one archive per changed file: the directories holding them are never fetched
    assert sorted(api.archived) == ["/app/out/notes.md", "/app/report.json"]
    assert got["files"] == [{"path": "out/notes.md", "bytes": 5},
                            {"path": "report.json", "bytes": 12}]
    assert got["deleted"] == ["/app/old.csv"] and got["cut"] == []
    assert (tmp_path / "artifacts" / "report.json").read_bytes() == b'{"total": 1}'


def test_two_round_trips_are_overlapped_and_a_failure_is_not_lost() -> None:
    seen: list[str] = []
    both = threading.Barrier(2, timeout=5)  # each waits for the other: they must overlap

    def first() -> str:
        both.wait()
        seen.append("first")
        return "started"

    def second() -> bool:
        both.wait()
        seen.append("second")
        return True

    t0 = time.monotonic()
    assert _overlapped(first, second) == ("started", True)
    assert sorted(seen) == ["first", "second"] and time.monotonic() - t0 < 5

    def broken() -> bool:
        raise RuntimeError("put_archive refused")

    with pytest.raises(RuntimeError, match="put_archive refused"):
        _overlapped(lambda: "started", broken)


class IsolateAPI:
    """The engine's answer to the stop before the verifier: the script's output."""

    def __init__(self, output: bytes) -> None:
        self.output = output
        self.commands: list[list[str]] = []

    def exec_create(self, container: str, cmd: list[str], **kwargs: Any) -> dict[str, str]:
        assert kwargs["user"] == "0"  # root: every process of the run can be stopped
        self.commands.append(cmd)
        return {"Id": "e1"}

    def exec_start(self, exec_id: str) -> bytes:
        return self.output


@pytest.mark.parametrize(("output", "killed", "problem"), [
    (b"skilllift-isolated 3 0\n", 3, ""),
    (b"noise from the agent's comm\nskilllift-isolated 0 0\n", 0, ""),
    (b"skilllift-isolated 4 2\n", None, "2 process(es) the agent left survived SIGKILL"),
    (b"sh: can't open /proc\n", None, "could not stop the processes the agent left"),
])
def test_the_stop_before_the_verifier_counts_the_killed_and_refuses_survivors(
        tmp_path: Path, output: bytes, killed: int | None, problem: str) -> None:
    from pytest_skilllift.runners.task_docker import _Failed

    api = IsolateAPI(output)
    cli = tmp_path / "claude"
    cli.write_bytes(b"cli")
    runner = TaskRunner(client=FakeClient(api), claude=cli)  # type: ignore[arg-type]
    if killed is not None:
        assert runner._isolate("c1") == killed
    else:
        with pytest.raises(_Failed, match=problem.replace("(", r"\(").replace(")", r"\)")):
            runner._isolate("c1")
    assert api.commands[0][:2] == ["sh", "-c"]
