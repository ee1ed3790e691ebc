"""``skilllift view --serve`` against hostile clients and files (issue: third round of hostile
input): links in the site, stalled connections, malformed label bodies, two servers on one
week, the idle timeout.

The real week (qdrant/skills week 20260808) is summarized into a temporary copy and served
on 127.0.0.1 from a thread (the HTTP is real; only the process is shared).
"""

from __future__ import annotations

import csv
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.view.labelling import LabelSession
from pytest_skilllift.view.serve import (
    REQUEST_TIMEOUT,
    ViewServer,
    make_server,
    parse_label_request,
    serve_until_idle,
)
from pytest_skilllift.view.site import build_site

FIXTURE = Path(__file__).resolve().parent / "fixtures/data/qdrant-skills/weekly/20260808"


@pytest.fixture(scope="module")
def summarized(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from pytest_skilllift.report.summarize import summarize_week

    week = tmp_path_factory.mktemp("real") / "20260808"
    shutil.copytree(FIXTURE, week)
    summarize_week(week, plots=False)
    return week


@pytest.fixture
def week(summarized: Path, tmp_path: Path) -> Path:
    w = tmp_path / "20260808"
    shutil.copytree(summarized, w)
    return w


def _start(week: Path, site: Path, sample: int = 40) -> tuple[ViewServer, threading.Thread]:
    server = make_server(week, site, sample=sample)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    return server, thread


@pytest.fixture
def served(week: Path) -> Iterator[tuple[Path, ViewServer]]:
    site = build_site(week).index.parent
    server, thread = _start(week, site)
    try:
        yield week, server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def _conn(server: ViewServer, timeout: float = 5) -> http.client.HTTPConnection:
    return http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=timeout)


def _get(server: ViewServer, path: str) -> tuple[int, bytes]:
    c = _conn(server)
    c.request("GET", path, headers={"Host": f"127.0.0.1:{server.server_address[1]}"})
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, body


def _post(server: ViewServer, body: bytes,
          timeout: float = 5) -> tuple[int, dict[str, Any]]:
    c = _conn(server, timeout)
    c.request("POST", "/api/label", body=body, headers={
        "Host": f"127.0.0.1:{server.server_address[1]}", "Content-Type": "application/json"})
    r = c.getresponse()
    data = json.loads(r.read())
    c.close()
    return r.status, data


def test_no_file_is_served_through_a_link(served: tuple[Path, ViewServer],
                                          tmp_path: Path) -> None:
    week, server = served
    site = week / "view"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("host secret\n")
    os.symlink(outside / "secret.txt", site / "leak.txt")
    os.symlink(outside, site / "assets" / "linked")
    os.symlink("/etc", site / "etc")
    os.mkfifo(site / "fifo.html")
    assert _get(server, "/index.html")[0] == 200
    assert _get(server, "/")[0] == 200
    for path in ("/leak.txt", "/assets/linked/secret.txt", "/etc/passwd", "/etc/hostname",
                 "/fifo.html", "/assets", "/../../../../etc/passwd"):
        status, body = _get(server, path)
        assert status == 404, path
        assert b"host secret" not in body and b"root:" not in body


def test_a_stalled_client_blocks_nobody(served: tuple[Path, ViewServer]) -> None:
    _week, server = served
    port = server.server_address[1]
    stalled = []
    for raw in (b"", b"GET /inde", f"POST /api/label HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                f"Content-Type: application/json\r\nContent-Length: 40\r\n\r\n{{\"id\"".encode()):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(raw)
        stalled.append(s)
    try:
        start = time.monotonic()
        status, _ = _get(server, "/index.html")
        # Blocked behind a stalled client, the answer would wait for that client's socket
        # timeout; half of it leaves a loaded machine room (the old 3 s did not).
        assert status == 200 and time.monotonic() - start < REQUEST_TIMEOUT / 2
        items = json.loads(_get(server, "/api/sample")[1])["items"]
        status, data = _post(server, json.dumps({"id": items[0]["id"],
                                                 "verdict": items[0]["choices"][0]}).encode())
        assert status == 200, data
    finally:
        for s in stalled:
            s.close()


@pytest.mark.parametrize(("body", "reason"), [
    (b'{"id": 1e400, "verdict": "met"}', "positive integer"),
    (b'{"id": true, "verdict": "met"}', "boolean"),
    (b'{"id": 1, "verdict": ' + b"[" * 2000 + b"]" * 2000 + b"}", "nests too deeply"),
    (b"[" * 4000 + b"]" * 4000, "nests too deeply"),
    (b'{"id": 1, "verdict": ["met"]}', "verdict must be a string"),
    (b'{"id": 1, "verdict": {"a": 1}}', "verdict must be a string"),
    (b'{"id": "1", "verdict": "met"}', "not a JSON string"),
    (b'{"id": 1.0, "verdict": "met"}', "positive integer"),
    (b'{"id": NaN, "verdict": "met"}', "not JSON"),
    (b'{"id": 0, "verdict": "met"}', "positive integer"),
    (b'{"id": 1, "verdict": "met", "x": 1}', "unknown key"),
    (b'"met"', "not an object"),
    (b"\xff\xfe", "not UTF-8"),
    (b"{", "not JSON"),
])
def test_every_malformed_body_is_a_400_with_its_reason(
        served: tuple[Path, ViewServer], body: bytes, reason: str) -> None:
    _week, server = served
    status, data = _post(server, body[:4096])
    assert status == 400 and reason in data["error"], data
    assert _get(server, "/index.html")[0] == 200  # and it answers the next request
    if b"nests" not in body:  # the parser alone says the same
        with pytest.raises(ValueError, match=reason):
            parse_label_request(body)


def test_a_short_body_is_a_400_not_a_wait(served: tuple[Path, ViewServer]) -> None:
    _week, server = served
    c = _conn(server)
    c.putrequest("POST", "/api/label", skip_host=True)
    c.putheader("Host", f"127.0.0.1:{server.server_address[1]}")
    c.putheader("Content-Type", "application/json")
    c.putheader("Content-Length", "1e3")
    c.endheaders(b"{}")
    r = c.getresponse()
    assert r.status == 400 and "Content-Length" in json.loads(r.read())["error"]


def _label_in_process(week: str, sample: int, ids: list[int], conn: object) -> None:
    session = LabelSession(Path(week), sample=sample)
    items = session.items_of()
    shown = {s["id"]: s for s in session.blind(items)}
    done = []
    for i in ids:
        session.save(i, shown[i]["choices"][0])
        done.append(i)
    conn.send(done)  # type: ignore[attr-defined]


def test_two_servers_lose_no_label(week: Path) -> None:
    """Two processes (each a server's LabelSession) and threads inside each write labels at
    once: every acknowledged label is in labels.csv afterwards."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    n = 36
    procs, pipes = [], []
    for k in range(2):
        recv, send = ctx.Pipe(duplex=False)
        p = ctx.Process(target=_label_in_process,
                        args=(str(week), n, list(range(1 + k, n + 1, 2)), send))
        p.start()
        procs.append(p)
        pipes.append(recv)
    acked = [i for r in pipes for i in r.recv()]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    with (week / "labels.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(acked) == n and len(rows) == n


def test_threads_of_one_server_lose_no_label(served: tuple[Path, ViewServer]) -> None:
    week, server = served
    items = json.loads(_get(server, "/api/sample")[1])["items"]
    results: list[int | str] = []

    def label(item: dict[str, Any]) -> None:
        try:  # 40 at once on a shared machine: each waits its turn at the label file
            status, _ = _post(server, json.dumps({"id": item["id"],
                                                  "verdict": item["choices"][1]}).encode(),
                              timeout=120)
        except OSError as exc:
            results.append(repr(exc))
        else:
            results.append(status)

    threads = [threading.Thread(target=label, args=(i,)) for i in items]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    with (week / "labels.csv").open() as fh:
        assert len(list(csv.DictReader(fh))) == len(items) == results.count(200)


def test_the_server_stops_when_idle(week: Path) -> None:
    site = build_site(week).index.parent
    server = make_server(week, site, sample=4)
    start = time.monotonic()
    try:
        assert serve_until_idle(server, 0.6) is True
    finally:
        server.server_close()
    assert 0.5 < time.monotonic() - start < 5


@pytest.mark.slow
def test_idle_timeout_from_the_command_line(summarized: Path, tmp_path: Path) -> None:
    help_text = subprocess.run([sys.executable, "-m", "pytest_skilllift.cli", "view", "--help"],
                               capture_output=True, text=True, check=True).stdout
    assert "--idle-timeout" in help_text and "Ctrl-C" in help_text
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_skilllift.cli", "view", str(summarized), "--out",
         str(tmp_path / "site"), "--serve", "--idle-timeout", "1", "--sample", "2"],
        capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "no request for 1 s; stopped" in proc.stdout
