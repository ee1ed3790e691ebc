"""Preflight: each Claude Code label's model checked once, before the first run.

A mistyped model (``sonet``, ``claude-sonet-4-5``), a refused key or an unreachable endpoint
otherwise shows only after runs have started (and, under ``-n``, only in skip reasons). The
cheapest call the Messages API offers answers it: ``GET /v1/models/{model_id}`` (free, no
tokens). Its answer is read as:

- 200: the model exists for this key;
- 401 / 403: the key is refused, for every label (one problem, named once);
- 404: the model does not exist, unless the endpoint has no models API at all (a gateway
  that only proxies ``/v1/messages``: ``GET /v1/models`` is 404 too), which is not checked;
- no answer (refused connection, DNS, TLS, timeout): the endpoint is unreachable;
- anything else (429, 5xx): a passing fault, not a reason to stop; the run's own outage
  handling (``runners.outage``) sees it if it lasts.

Claude Code's model aliases (``sonnet``, ``opus``, ``haiku``, …) are resolved by the CLI, not
the API: for them only the key is checked (``GET /v1/models?limit=1``). Codex CLI, Gemini CLI
and OpenCode labels are not checked here (their CLIs hold their own login); the run's
outage handling still names a 404 or 401 from them.
"""

from __future__ import annotations

import difflib
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pytest_skilllift.model import CLAUDE_CODE, split_agent

#: The public endpoint when ``ANTHROPIC_BASE_URL`` is not set.
DEFAULT_BASE_URL = "https://api.anthropic.com"
#: Seconds one check waits for an answer.
TIMEOUT_S = 10.0
#: Model names Claude Code resolves itself (``claude --model sonnet``); a ``[1m]`` suffix too.
CLI_ALIASES = ("default", "sonnet", "opus", "haiku", "opusplan", "best", "sonnet[1m]",
               "opus[1m]")
#: Model ids offered as "did you mean" beside the aliases.
KNOWN_IDS = ("claude-sonnet-4-5", "claude-opus-4-5", "claude-haiku-4-5", "claude-opus-4-1",
             "claude-sonnet-4-0", "claude-opus-4-0")


@dataclass(frozen=True)
class Problem:
    """A label that cannot run: which, why and what to change."""

    label: str
    model_id: str
    cause: str
    fix: str

    def text(self) -> str:
        """``label 'sonet' (model 'sonet'): <cause>. Fix: <fix>``."""
        return f"label {self.label!r} (model {self.model_id!r}): {self.cause}. Fix: {self.fix}"


#: ``(url, headers) -> (status, body)``; status 0 with the reason as body = no answer.
Fetch = Callable[[str, Mapping[str, str]], tuple[int, str]]


def http_get(url: str, headers: Mapping[str, str]) -> tuple[int, str]:
    """One GET: ``(status, body)``; ``(0, reason)`` when nothing answered."""
    request = urllib.request.Request(url, headers=dict(headers), method="GET")
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as resp:
            return int(resp.status), resp.read(65536).decode("utf-8", "replace")
    except urllib.error.HTTPError as err:
        return int(err.code), err.read(65536).decode("utf-8", "replace")
    except (urllib.error.URLError, OSError, ValueError) as err:
        reason = getattr(err, "reason", None) or err
        return 0, str(reason)


def is_alias(model_id: str) -> bool:
    """Whether Claude Code resolves this name itself (``sonnet``, ``opus[1m]``)."""
    return model_id.lower() in CLI_ALIASES


def check(models: Sequence[tuple[str, str]], *, base_url: str, key: str, bearer: bool = False,
          fetch: Fetch = http_get) -> list[Problem]:
    """The problems of the Claude Code labels among ``models`` (label, model id), each model
    asked once; a refused key or an unreachable endpoint is one problem for all labels."""
    base = (base_url or DEFAULT_BASE_URL).rstrip("/")
    headers = {"anthropic-version": "2023-06-01", "accept": "application/json"}
    if bearer:
        headers["authorization"] = f"Bearer {key}"
    else:
        headers["x-api-key"] = key
    labels = [(label, split_agent(mid)[1]) for label, mid in models
              if split_agent(mid)[0] == CLAUDE_CODE]
    out: list[Problem] = []
    asked: dict[str, tuple[int, str]] = {}
    for label, model_id in labels:
        path = ("/v1/models?limit=1" if is_alias(model_id)
                else f"/v1/models/{urllib.parse.quote(model_id, safe='')}")
        if path not in asked:
            asked[path] = fetch(base + path, headers)
        status, body = asked[path]
        if status == 0:
            return [Problem(label, model_id, f"the API at {base} did not answer ({body})",
                            "check ANTHROPIC_BASE_URL (unset: the public API), the network "
                            "and any proxy; nothing was run")]
        if status in (401, 403):
            var = "ANTHROPIC_AUTH_TOKEN" if bearer else "ANTHROPIC_API_KEY"
            return [Problem(label, model_id, f"the API at {base} refused the key (HTTP "
                            f"{status}: {_message(body)})",
                            f"set {var} to a valid key for this endpoint")]
        if status == 404 and not is_alias(model_id):
            if "/v1/models?limit=1" not in asked:
                asked["/v1/models?limit=1"] = fetch(base + "/v1/models?limit=1", headers)
            if asked["/v1/models?limit=1"][0] == 404:
                continue  # the endpoint has no models API: nothing to check it against
            out.append(Problem(label, model_id, f"the API has no model {model_id!r} (HTTP "
                               f"404: {_message(body)})", _model_fix(label, model_id)))
    return out


def _message(body: str) -> str:
    """The API's error message, else the body's start."""
    try:
        data = json.loads(body)
        msg = data.get("error", {}).get("message") if isinstance(data, dict) else None
    except (ValueError, AttributeError):
        msg = None
    text = str(msg or body or "no body").strip()
    return text[:200]


def _model_fix(label: str, model_id: str) -> str:
    close = difflib.get_close_matches(model_id, [*CLI_ALIASES, *KNOWN_IDS], n=1, cutoff=0.6)
    meant = f"did you mean {close[0]!r}? " if close else ""
    return (f"{meant}give the label a model the API serves in skill_lift_models / "
            f"--skill-lift-models, e.g. {label}={close[0] if close else 'claude-sonnet-4-5'}")


def stop_message(problems: Sequence[Problem], base_url: str) -> str:
    """The usage error that stops the session before any run."""
    lines = "\n".join(f"  - {p.text()}" for p in problems)
    where = base_url or DEFAULT_BASE_URL
    return (f"--skill-lift: preflight against {where} stopped the session before any run "
            f"({len(problems)} problem{'s' * (len(problems) != 1)}):\n{lines}\n"
            "(each Claude Code label's model was asked once with GET /v1/models, which costs "
            "nothing)")
