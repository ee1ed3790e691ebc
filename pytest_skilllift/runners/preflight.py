"""Preflight: each (agent, model) label's model checked once, before the first run.

A mistyped model (``sonet``, ``claude-sonet-4-5``, ``codex:gpt-5-mni``), a refused key or an
unreachable endpoint otherwise shows only after runs have started (and, under ``-n``, only in
skip reasons). Each agent's definition says how its API is asked (``Agent.probe_for``:
the cheapest call it offers, a free model lookup): Claude Code ``GET /v1/models/{id}``
(Anthropic), Codex ``GET {OPENAI_BASE_URL}/models/{id}`` (OpenAI), Gemini CLI ``GET
v1beta/models/{id}`` (Gemini API), and OpenCode its model's provider's: ``anthropic/…`` at
Anthropic's, ``openai/…`` at OpenAI's (``OPENAI_API_KEY``), ``google/…`` at the Gemini API
(``GEMINI_API_KEY``), each where the run's calls go. The answer is read as:

- 200: the model exists for this key;
- 401 / 403 (Gemini: 400 ``API_KEY_INVALID``): the key is refused, for every label of that
  API (one problem, named once);
- 404: the model does not exist, unless the endpoint has no models API at all (a gateway
  that only proxies the generation calls: the model listing is 404 too);
- no answer (refused connection, DNS, TLS, timeout): the endpoint is unreachable;
- anything else (429, 5xx): a passing fault, not a reason to stop; the run's own outage
  handling (``runners.outage``) sees it if it lasts.

What could not be checked is counted and named in the session's preflight line
(:meth:`Preflight.line`), never skipped in silence: Claude Code's aliases (``sonnet``,
``haiku``…, resolved by the CLI: only the key is asked), Claude Code on Bedrock / Vertex
(another API), an endpoint without a models API, a passing fault, an OpenCode model of a
provider with no lookup here (``mistral/…``).
"""

from __future__ import annotations

import difflib
import json
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from pytest_skilllift.agents import registry
from pytest_skilllift.agents.base import Agent, ModelProbe
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


@dataclass(frozen=True)
class Unchecked:
    """A label whose model the preflight could not ask about, and why (counted and named
    in the preflight line, never dropped in silence)."""

    label: str
    model_id: str
    why: str


@dataclass
class Preflight:
    """What the preflight found: the labels that cannot run, the labels checked, and the
    labels it could not check."""

    problems: list[Problem] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)
    unchecked: list[Unchecked] = field(default_factory=list)
    #: How many lookups were sent (each model once per API, and the listings).
    asked: int = 0

    def line(self) -> str:
        """The session's one preflight line: ``skill-lift preflight: 3 of 4 labels checked
        (3 lookups); not checked: oc (opencode:mistral/m: …)``."""
        total = len(self.checked) + len(self.unchecked)
        text = (f"skill-lift preflight: {len(self.checked)} of {total} "
                f"label{'s' * (total != 1)} checked ({self.asked} "
                f"lookup{'s' * (self.asked != 1)})")
        if self.unchecked:
            text += f"; {len(self.unchecked)} not checked: " + "; ".join(
                f"{u.label} ({u.model_id}: {u.why})" for u in self.unchecked)
        return text


def check(models: Sequence[tuple[str, str]], env: Mapping[str, str], *,
          fetch: Fetch = http_get) -> list[Problem]:
    """The problems of the labels among ``models`` (:func:`run`'s)."""
    return run(models, env, fetch=fetch).problems


def run(models: Sequence[tuple[str, str]], env: Mapping[str, str], *,
        fetch: Fetch = http_get) -> Preflight:
    """Ask about the labels among ``models`` (label, ``AGENT:MODEL`` id), each model's API
    reached as ``env`` says (its base-URL and key variables; an OpenCode model's provider's,
    ``Agent.probe_for``) and each model asked once; a refused key or an unreachable endpoint
    is one problem for all of that API's labels."""
    by_api: dict[tuple[str, ModelProbe], list[tuple[str, str]]] = {}
    out = Preflight()
    for label, mid in models:
        name, model_id = split_agent(mid)
        agent = registry.agent(name)
        probe = agent.probe_for(model_id)
        if probe is None:
            out.unchecked.append(Unchecked(label, mid, f"{agent.title} has no model lookup "
                                                        f"for {model_id!r} here"))
            continue
        by_api.setdefault((name, probe), []).append((label, model_id))
    for (name, api), labels in by_api.items():
        _check_api(registry.agent(name), api, labels, env, fetch, out)
    return out


def _check_api(agent: Agent, probe: ModelProbe, labels: list[tuple[str, str]],
               env: Mapping[str, str], fetch: Fetch, out: Preflight) -> None:
    prefix = "" if agent.name == CLAUDE_CODE else f"{agent.name}:"
    endpoint = probe.endpoint(env)
    if endpoint is None:
        out.unchecked += [Unchecked(label, prefix + model_id,
                                    f"{agent.title} here calls another API (Bedrock / Vertex)")
                          for label, model_id in labels]
        return
    base, headers, key_var = endpoint
    asked: dict[str, tuple[int, str]] = {}

    def ask(path: str) -> tuple[int, str]:
        if path not in asked:
            asked[path] = fetch(base + path, headers)
            out.asked += 1
        return asked[path]

    for label, model_id in labels:
        path = probe.model_path(model_id)
        if path is None:
            out.unchecked.append(Unchecked(label, prefix + model_id,
                                           f"{agent.title} has no model lookup for it here"))
            continue
        status, body = ask(path)
        if status == 0:
            out.problems.append(Problem(
                label, prefix + model_id, f"{agent.title}'s API at {base} did not answer "
                f"({body})", f"check {agent.base_url_var} (unset: {_public(agent, probe)}), "
                "the network and any proxy; nothing was run"))
            return
        if probe.refused(status, body):
            out.problems.append(Problem(
                label, prefix + model_id, f"{agent.title}'s API at {base} refused the key "
                f"(HTTP {status}: {_message(body)})",
                f"set {key_var} to a valid key for this endpoint"))
            return
        if path == probe.list_path and status in (200, 404):
            # a name the CLI resolves itself (Claude Code's aliases): only the key is asked
            out.unchecked.append(Unchecked(
                label, prefix + model_id, f"a name {agent.title} resolves itself; the key "
                "was checked" if status == 200 else f"the API at {base} has no models API"))
            continue
        if status == 404:
            if ask(probe.list_path)[0] == 404:
                # the endpoint has no models API: nothing to check it against
                out.unchecked.append(Unchecked(label, prefix + model_id,
                                               f"the API at {base} has no models API"))
                continue
            out.checked.append(label)
            out.problems.append(Problem(label, prefix + model_id,
                                        f"{agent.title}'s API has no model {model_id!r} (HTTP "
                                        f"404: {_message(body)})",
                                        _model_fix(label, model_id, prefix, probe.known)))
        elif status == 200:
            out.checked.append(label)
        else:  # a passing fault (429, 5xx): the runs' own outage handling sees it if it lasts
            out.unchecked.append(Unchecked(label, prefix + model_id,
                                           f"HTTP {status} from {base}, a passing fault"))


def _public(agent: Agent, probe: ModelProbe) -> str:
    """The API a probe reaches when no base URL is set (an OpenCode provider's own)."""
    endpoint = probe.endpoint({})
    return endpoint[0] if endpoint is not None else agent.default_url


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
