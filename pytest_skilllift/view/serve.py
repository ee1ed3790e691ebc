"""``skilllift view --serve``: the site on 127.0.0.1, plus the labelling page and its API.

The standard library's ``http.server``, bound to the loopback only. It serves the written
site's files and three more paths: ``/label.html`` (the blind labelling page),
``GET /api/sample[?run=RUN_ID]`` and ``POST /api/label``. A label is accepted only as a JSON
body from a page of this server (Host and Origin checked): a web page elsewhere cannot write
into the week through the loopback.
"""

from __future__ import annotations

import json
import sys
from functools import partial
from http import HTTPStatus
from http.server import HTTPServer, SimpleHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from pytest_skilllift.view.labelling import LabellingError, LabelSession
from pytest_skilllift.view.site import CSP_SERVED, page_html

__all__ = ["HOST", "ViewServer", "make_server", "serve"]

HOST = "127.0.0.1"
#: Largest label request body read (one label is ~50 bytes).
MAX_BODY = 4096


class ViewServer(HTTPServer):
    """The HTTP server, holding the labelling session its handlers share."""

    labels: LabelSession
    # One request at a time: labels.csv has one writer.


class _Handler(SimpleHTTPRequestHandler):
    server: ViewServer

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
            length = int(self.headers.get("Content-Length", "0"))
            if not 0 < length <= MAX_BODY:
                raise ValueError(f"body of {length} bytes (at most {MAX_BODY})")
            req = json.loads(self.rfile.read(length))
            item_id, verdict = int(req["id"]), str(req["verdict"])
        except (ValueError, KeyError, TypeError) as err:
            self._json(HTTPStatus.BAD_REQUEST, {"error": f"bad label request: {err}"})
            return
        try:
            agreement = self.server.labels.save(item_id, verdict)
        except LabellingError as err:
            self._json(HTTPStatus.BAD_REQUEST, {"error": str(err)})
            return
        self._json(HTTPStatus.OK, {"saved": str(self.server.labels.path.name),
                                   "agreement": agreement})


def make_server(week_dir: Path, site_dir: Path, *, port: int = 0, sample: int = 30,
                seed: str = "0") -> ViewServer:
    """A server for ``site_dir`` on 127.0.0.1 (``port`` 0: a free one), not yet serving."""
    server = ViewServer((HOST, port), partial(_Handler, directory=str(site_dir)))
    server.labels = LabelSession(Path(week_dir), sample=sample, seed=seed)
    return server


def serve(week_dir: Path, site_dir: Path, *, port: int = 0, sample: int = 30,
          seed: str = "0") -> int:
    """Serve until interrupted; the exit status."""
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
    print(f"serving {site_dir} at {url} (labelling: {url}label.html; labels go to "
          f"{server.labels.path}); Ctrl-C stops", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
