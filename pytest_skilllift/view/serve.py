"""``skilllift view --serve``: the site on 127.0.0.1, plus the labelling page and its API.

The standard library's ``http.server``, bound to the loopback only. It serves the written
site's files and three more paths: ``/label.html`` (the blind labelling page),
``GET /api/sample[?run=RUN_ID]`` and ``POST /api/label``. A label is accepted only as a JSON
body from a page of this server (Host and Origin checked): a web page elsewhere cannot write
into the week through the loopback.

Hostile clients and files: a file is served only when it is a regular file reached without
following a symbolic link (the week's own rule), each connection is handled in its own thread
with a socket timeout (a client that stalls mid-request is dropped, the others are answered),
every malformed label body is a 400 with its reason, and labels.csv is written under a lock
across processes (two servers on one week lose no label). With nobody requesting anything for
``idle_timeout`` seconds the server stops by itself (a parent that was killed leaves no server
behind for long).
"""

from __future__ import annotations

import errno
import json
import os
import stat
import sys
import threading
import time
from functools import partial
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from pytest_skilllift.view.labelling import LabellingError, LabelSession
from pytest_skilllift.view.site import CSP_SERVED, page_html

__all__ = ["DEFAULT_IDLE_TIMEOUT", "HOST", "REQUEST_TIMEOUT", "ViewServer", "make_server",
           "parse_label_request", "serve"]

HOST = "127.0.0.1"
#: Largest label request body read (one label is ~50 bytes).
MAX_BODY = 4096
#: Seconds a connection may stay silent (request line, headers, body) before it is dropped.
REQUEST_TIMEOUT = 10.0
#: Seconds without any request after which ``--serve`` stops by itself (``--idle-timeout``).
DEFAULT_IDLE_TIMEOUT = 1800.0


class ViewServer(ThreadingHTTPServer):
    """The HTTP server, holding the labelling session its handlers share.

    One thread per connection (a stalled client holds only its own thread, dropped after
    :data:`REQUEST_TIMEOUT`); the label session serialises its writes itself."""

    daemon_threads = True
    #: Connections waiting to be accepted (socketserver's 5 refuses a burst of clients).
    request_queue_size = 64
    labels: LabelSession
    site_dir: Path
    #: ``time.monotonic()`` of the last request begun (the idle timeout counts from it).
    last_request: float = 0.0

    def touch(self) -> None:
        """Record that a request arrived (the idle timeout restarts)."""
        self.last_request = time.monotonic()


class LabelRequestError(ValueError):
    """A label request body that is not ``{"id": <positive int>, "verdict": <str>}``."""


def parse_label_request(body: bytes) -> tuple[int, str]:
    """``(id, verdict)`` of a label request body, types checked exactly.

    :class:`LabelRequestError` (with the reason) for anything else: not UTF-8, not JSON, a
    number JSON cannot hold as a float (``1e400``), nesting deeper than the parser allows, a
    bool for the id (JSON ``true`` is not item 1), a verdict that is not a string, extra keys."""
    try:
        req = json.loads(body.decode("utf-8"), parse_constant=_no_constant)
    except UnicodeDecodeError:
        raise LabelRequestError("the body is not UTF-8") from None
    except RecursionError:
        raise LabelRequestError("the body nests too deeply") from None
    except ValueError as err:
        raise LabelRequestError(f"the body is not JSON ({err})") from None
    if not isinstance(req, dict):
        raise LabelRequestError(f"the body is a JSON {type(req).__name__}, not an object "
                                '{"id": N, "verdict": "..."}')
    extra = sorted(set(req) - {"id", "verdict"})
    if extra:
        raise LabelRequestError(f"unknown key(s) {', '.join(map(repr, extra))[:200]}")
    item_id, verdict = req.get("id"), req.get("verdict")
    if type(item_id) is not int or item_id < 1:
        raise LabelRequestError(f"id must be a positive integer, not a JSON "
                                f"{_json_type(item_id)}")
    if type(verdict) is not str:
        raise LabelRequestError(f"verdict must be a string, not a JSON {_json_type(verdict)}")
    return item_id, verdict


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _json_type(value: Any) -> str:
    if value is None:
        return "null (or missing)"
    return {bool: "boolean", int: "integer", float: "number", str: "string", list: "array",
            dict: "object"}.get(type(value), type(value).__name__)


class _Handler(SimpleHTTPRequestHandler):
    server: ViewServer
    # The socket timeout of each connection (StreamRequestHandler applies it): a client that
    # sends nothing, half a request line or a body that never comes is dropped, not waited for.
    timeout = REQUEST_TIMEOUT

    def handle_one_request(self) -> None:
        self.server.touch()
        try:
            super().handle_one_request()
        except TimeoutError:
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the terminal shows where the site is, not every request

    def end_headers(self) -> None:
        self.send_header("Content-Security-Policy", CSP_SERVED + "; frame-ancestors 'none'")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def _json(self, status: int, data: Any) -> None:
        body = json.dumps(data).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _same_origin(self) -> bool:
        port = self.server.server_address[1]
        hosts = {f"{HOST}:{port}", f"localhost:{port}"}
        if self.headers.get("Host", "") not in hosts:
            return False
        origin = self.headers.get("Origin")
        return origin is None or origin in {f"http://{h}" for h in hosts}

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if not self._same_origin():
            self._json(HTTPStatus.FORBIDDEN, {"error": "requests only from this server's pages"})
        elif url.path == "/label.html":
            body = page_html("label", "label a sample", {}, "", csp=CSP_SERVED).encode("utf-8")
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif url.path == "/api/sample":
            run = parse_qs(url.query).get("run", [None])[0]
            labels = self.server.labels
            items = labels.items_of(run)
            if not items:
                what = f"run {run} has no graded item" if run else "the week has no graded item"
                self._json(HTTPStatus.NOT_FOUND, {"error": what})
                return
            self._json(HTTPStatus.OK, {"items": labels.blind(items),
                                       "agreement": labels.agreement()})
        else:
            super().do_GET()

    def send_head(self) -> Any:
        """A regular file of the site, opened without following any link: a path whose
        folder or file is a symbolic link (or a FIFO, a device) is a 404, never read."""
        path = urlsplit(self.path).path
        if path.endswith("/"):
            path += "index.html"
        fh = _open_in_site(self.server.site_dir, self.translate_path(path))
        if fh is None:
            self.send_error(HTTPStatus.NOT_FOUND, "File not found")
            return None
        size = os.fstat(fh.fileno()).st_size
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", self.guess_type(path))
        self.send_header("Content-Length", str(size))
        self.end_headers()
        return fh

    def do_POST(self) -> None:
        if urlsplit(self.path).path != "/api/label":
            self._json(HTTPStatus.NOT_FOUND, {"error": "no such endpoint"})
            return
        if not self._same_origin() or not self.headers.get("Content-Type", "").startswith(
                "application/json"):
            self._json(HTTPStatus.FORBIDDEN, {"error": "labels only as JSON from this server's "
                                                       "labelling page"})
            return
        try:
            raw = self.headers.get("Content-Length", "")
            length = int(raw) if raw.isdigit() and len(raw) <= 6 else -1
            if not 0 < length <= MAX_BODY:
                raise LabelRequestError(f"Content-Length {raw[:20]!r}: a body of 1 to "
                                        f"{MAX_BODY} bytes is expected")
            body = self.rfile.read(length)
            if len(body) < length:
                raise LabelRequestError(f"the body ended after {len(body)} of {length} bytes")
            item_id, verdict = parse_label_request(body)
        except LabelRequestError as err:
            self.close_connection = True
            self._json(HTTPStatus.BAD_REQUEST, {"error": f"bad label request: {err}"})
            return
        try:
            agreement = self.server.labels.save(item_id, verdict)
        except LabellingError as err:
            self._json(HTTPStatus.BAD_REQUEST, {"error": str(err)})
            return
        self._json(HTTPStatus.OK, {"saved": str(self.server.labels.path.name),
                                   "agreement": agreement})


def _open_in_site(site: Path, target: str) -> Any:
    """``target`` opened for reading when it is a regular file under ``site`` reached through
    real folders only (each component ``O_NOFOLLOW``, relative to the one before), else None."""
    try:
        rel = Path(target).relative_to(site)
    except ValueError:
        return None
    parts = [p for p in rel.parts if p not in ("", ".")]
    if not parts or ".." in parts:
        return None
    flags = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(site, flags | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return None
    try:
        for part in parts[:-1]:
            nxt = os.open(part, flags | getattr(os, "O_DIRECTORY", 0), dir_fd=fd)
            os.close(fd)
            fd = nxt
        leaf = os.open(parts[-1], flags, dir_fd=fd)
    except OSError as err:
        if err.errno not in (errno.ELOOP, errno.ENOENT, errno.ENOTDIR, errno.EACCES,
                             errno.EISDIR, errno.ENXIO):
            raise
        return None
    finally:
        os.close(fd)
    if not stat.S_ISREG(os.fstat(leaf).st_mode):
        os.close(leaf)
        return None
    return os.fdopen(leaf, "rb")


def make_server(week_dir: Path, site_dir: Path, *, port: int = 0, sample: int = 30,
                seed: str = "0") -> ViewServer:
    """A server for ``site_dir`` on 127.0.0.1 (``port`` 0: a free one), not yet serving."""
    site = Path(os.path.abspath(site_dir))
    server = ViewServer((HOST, port), partial(_Handler, directory=str(site)))
    server.site_dir = site
    server.labels = LabelSession(Path(week_dir), sample=sample, seed=seed)
    server.touch()
    return server


def serve_until_idle(server: ViewServer, idle_timeout: float) -> bool:
    """Serve until no request came for ``idle_timeout`` seconds (0: until interrupted);
    True when it stopped for being idle."""
    worker = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2},
                              daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.5)
            if idle_timeout > 0 and time.monotonic() - server.last_request > idle_timeout:
                return True
        return False
    finally:
        server.shutdown()


def serve(week_dir: Path, site_dir: Path, *, port: int = 0, sample: int = 30,
          seed: str = "0", idle_timeout: float = DEFAULT_IDLE_TIMEOUT) -> int:
    """Serve until interrupted or idle for ``idle_timeout`` seconds; the exit status."""
    from pytest_skilllift.judge.graded import GradedWeekError

    try:
        server = make_server(week_dir, site_dir, port=port, sample=sample, seed=seed)
    except GradedWeekError as err:
        print(f"skilllift view --serve: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        print(f"skilllift view --serve: cannot listen on {HOST}:{port}: {err}", file=sys.stderr)
        return 2
    url = f"http://{HOST}:{server.server_address[1]}/"
    idle = (f"; it stops by itself after {idle_timeout:g} s without a request"
            if idle_timeout > 0 else "")
    print(f"serving {site_dir} at {url} (labelling: {url}label.html; labels go to "
          f"{server.labels.path}); Ctrl-C stops{idle}", flush=True)
    try:
        if serve_until_idle(server, idle_timeout):
            print(f"skilllift view --serve: no request for {idle_timeout:g} s; stopped",
                  flush=True)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
