"""One judge client per session, shared by every xdist worker over loopback.

Importing the ``anthropic`` SDK costs seconds of CPU; with ``-n 4`` on a small machine every
worker paying it (while the CLI runs compete for the same cores) was the largest overhead of a
parallel week. The controller instead owns the only ``Judge``, and workers send it
``(prompt, answer, items, seed)`` over HTTP on 127.0.0.1. A single client also means a single
connection pool and one place where rate-limit backoff happens. A random token, handed to
workers through xdist's workerinput, keeps other local processes from spending the key.
"""

from __future__ import annotations

import dataclasses
import hmac
import json
import secrets
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pytest_skilllift.judge.protocol import Grader
from pytest_skilllift.model import ItemVerdict, JudgeResult, RubricItem, SampleVote
from pytest_skilllift.warm import Warmed

TOKEN_HEADER = "X-Skilllift-Token"


def result_to_dict(result: JudgeResult) -> dict[str, Any]:
    """JSON-able form of a ``JudgeResult`` (all plain dataclasses)."""
    return dataclasses.asdict(result)


def result_from_dict(data: dict[str, Any]) -> JudgeResult:
    """Inverse of ``result_to_dict``."""
    verdicts = tuple(
        ItemVerdict(**{**v, "item": RubricItem(**v["item"]),
                       "samples": tuple(SampleVote(**s) for s in v.get("samples", ()))})
        for v in data["verdicts"]
    )
    return JudgeResult(
        verdicts=verdicts, cost_usd=float(data["cost_usd"]), model=data["model"],
        error=data.get("error"), ungraded=tuple(RubricItem(**i) for i in data["ungraded"]),
        notes=tuple(data.get("notes", ())), calls=int(data.get("calls", 0)),
        samples=int(data.get("samples", 1)), tie_breaks=int(data.get("tie_breaks", 0)),
        evidence_policy=str(data.get("evidence_policy", "reject")),
        arm_leaks=int(data.get("arm_leaks", 0)), masked=bool(data.get("masked", False)),
    )


class JudgeService:
    """Serves ``grader.grade`` on 127.0.0.1 to the session's workers."""

    def __init__(self, grader: Callable[[], Grader]) -> None:
        self.grader: Warmed[Grader] = Warmed(grader)
        self.token = secrets.token_hex(16)
        self._server: ThreadingHTTPServer | None = None
        self.url = ""

    def start(self, *, warm: bool = True) -> str:
        """Serve on 127.0.0.1; with ``warm``, build the client now in the background
        (otherwise on ``grader.warm`` or the first request)."""
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                if not hmac.compare_digest(self.headers.get(TOKEN_HEADER, ""), service.token):
                    self.send_error(403)
                    return
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                items = [RubricItem(**i) for i in body["items"]]
                model = ""
                try:
                    grader = service.grader.get()
                    model = grader.model
                    result = grader.grade(body["prompt_text"], body["answer"], items,
                                          body["seed"])
                except Exception as exc:
                    # Same contract as an exhausted API retry: ungraded, flagged, never zero.
                    result = JudgeResult(verdicts=(), cost_usd=0.0, model=model,
                                         error=f"judge failed: {exc}", ungraded=tuple(items))
                payload = json.dumps({"model": model,
                                      "result": result_to_dict(result)}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                return  # quiet: pytest's output is the user's

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        # A short poll: stop() (``shutdown``) waits up to one poll interval, at session end.
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                         name="skilllift-judge-service", daemon=True).start()
        if warm:  # build the client (the SDK import) now, while the runs generate
            self.grader.warm("skilllift-judge-warmup")
        host, port = self._server.server_address[:2]
        self.url = f"http://{host!s}:{port}"
        return self.url

    def stop(self) -> None:
        """Shut the service down (nothing when it is not running)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


class RemoteGrader:
    """A worker's ``Grader``: forwards each grade to the controller's ``JudgeService``."""

    def __init__(self, url: str, token: str, timeout_s: float = 1800.0) -> None:
        self.url, self.token, self.timeout_s = url, token, timeout_s
        self.model = ""

    def grade(self, prompt_text: str, answer: str, items: Sequence[RubricItem],
              seed: int | str) -> JudgeResult:
        """Grade through the controller's judge service (one HTTP request)."""
        body = json.dumps({"prompt_text": prompt_text, "answer": answer, "seed": seed,
                           "items": [dataclasses.asdict(i) for i in items]}).encode()
        request = urllib.request.Request(
            self.url, data=body, method="POST",
            headers={"Content-Type": "application/json", TOKEN_HEADER: self.token})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                data = json.loads(response.read())
        except (OSError, urllib.error.URLError, ValueError) as exc:
            # The controller's judge is unreachable: the run stays ungraded and is retried
            # on the next session, exactly like an exhausted API retry.
            return JudgeResult(verdicts=(), cost_usd=0.0, model=self.model,
                               error=f"judge service unreachable: {exc}",
                               ungraded=tuple(items))
        self.model = data["model"]
        return result_from_dict(data["result"])
