"""Preflight: each (agent, model) label's model checked once, before the first run.

A mistyped model (``sonet``, ``claude-sonet-4-5``, ``codex:gpt-5-mni``), a refused key or an
unreachable endpoint otherwise shows only after runs have started (and, under ``-n``, only in
skip reasons). Each agent's definition says how its API is asked (``Agent.model_probe``:
the cheapest call it offers, a free model lookup): Claude Code and OpenCode's ``anthropic/``
models ``GET /v1/models/{id}`` (Anthropic), Codex ``GET {OPENAI_BASE_URL}/models/{id}``
(OpenAI), Gemini CLI ``GET v1beta/models/{id}`` (Gemini API). The answer is read as:

- 200: the model exists for this key;
- 401 / 403 (Gemini: 400 ``API_KEY_INVALID``): the key is refused, for every label of that
  agent (one problem, named once);
- 404: the model does not exist, unless the endpoint has no models API at all (a gateway
  that only proxies the generation calls: the model listing is 404 too), which is not
  checked;
- no answer (refused connection, DNS, TLS, timeout): the endpoint is unreachable;
- anything else (429, 5xx): a passing fault, not a reason to stop; the run's own outage
  handling (``runners.outage``) sees it if it lasts.

Claude Code's model aliases (``sonnet``, ``opus``, ``haiku``, …) are resolved by the CLI, not
the API: for them only the key is checked (the model listing). An OpenCode model of another
provider than ``anthropic`` is not checked (its key is not the run's).
"""

from __future__ import annotations

import difflib
import json
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pytest_skilllift.agents import registry
from pytest_skilllift.model import CLAUDE_CODE, split_agent

#: Seconds one check waits for an answer.
TIMEOUT_S = 10.0


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


def check(models: Sequence[tuple[str, str]], env: Mapping[str, str], *,
          fetch: Fetch = http_get) -> list[Problem]:
    """The problems of the labels among ``models`` (label, ``AGENT:MODEL`` id), each agent's
    API reached as ``env`` says (its base-URL and key variables) and each model asked once; a
    refused key or an unreachable endpoint is one problem for all of that agent's labels."""
    by_agent: dict[str, list[tuple[str, str]]] = {}
    for label, mid in models:
        agent, model_id = split_agent(mid)
        by_agent.setdefault(agent, []).append((label, model_id))
    out: list[Problem] = []
    for name, labels in by_agent.items():
        out += _check_agent(name, labels, env, fetch)
    return out


def _check_agent(name: str, labels: list[tuple[str, str]], env: Mapping[str, str],
                 fetch: Fetch) -> list[Problem]:
    agent = registry.agent(name)
    probe = agent.model_probe
    endpoint = probe.endpoint(env) if probe is not None else None
    if probe is None or endpoint is None:
        return []
    base, headers, key_var = endpoint
    prefix = "" if name == CLAUDE_CODE else f"{name}:"
    out: list[Problem] = []
    asked: dict[str, tuple[int, str]] = {}
    for label, model_id in labels:
        path = probe.model_path(model_id)
        if path is None:
            continue
        if path not in asked:
            asked[path] = fetch(base + path, headers)
        status, body = asked[path]
        if status == 0:
            return [Problem(label, prefix + model_id,
                            f"{agent.title}'s API at {base} did not answer ({body})",
                            f"check {agent.base_url_var} (unset: {agent.default_url}), the "
                            "network and any proxy; nothing was run")]
        if probe.refused(status, body):
            return [Problem(label, prefix + model_id,
                            f"{agent.title}'s API at {base} refused the key (HTTP "
                            f"{status}: {_message(body)})",
                            f"set {key_var} to a valid key for this endpoint")]
        if status == 404 and path != probe.list_path:
            if probe.list_path not in asked:
                asked[probe.list_path] = fetch(base + probe.list_path, headers)
            if asked[probe.list_path][0] == 404:
                continue  # the endpoint has no models API: nothing to check it against
            out.append(Problem(label, prefix + model_id,
                               f"{agent.title}'s API has no model {model_id!r} (HTTP 404: "
                               f"{_message(body)})",
                               _model_fix(label, model_id, prefix, probe.known)))
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


def _model_fix(label: str, model_id: str, prefix: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(model_id, list(known), n=1, cutoff=0.6)
    meant = f"did you mean {close[0]!r}? " if close else ""
    example = close[0] if close else (known[-1] if known else "MODEL")
    return (f"{meant}give the label a model the API serves in skill_lift_models / "
            f"--skill-lift-models, e.g. {label}={prefix}{example}")


def stop_message(problems: Sequence[Problem]) -> str:
    """The usage error that stops the session before any run."""
    lines = "\n".join(f"  - {p.text()}" for p in problems)
    return (f"--skill-lift: preflight stopped the session before any run "
            f"({len(problems)} problem{'s' * (len(problems) != 1)}):\n{lines}\n"
            "(each label's model was asked once with its API's model lookup, e.g. "
            "GET /v1/models/ID, which costs nothing; --skill-lift-preflight=off skips it)")
