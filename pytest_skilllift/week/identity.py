"""The week's identity: ``<week>/week.json``, what decides what a number in that week means.

A week directory collects runs over days and sessions. Its numbers only mean one thing if every
run was generated and graded under the same conditions, so the first session writes them down
(the Drupal ai_eval scoring document calls this the run-identity snapshot) and every later
session that would add runs compares its own against them:

* **identity** — models (label → id), repetitions, allowed tools (and, in a week with Harbor
  tasks, the task runs' allow-list: the session's plus the write tools), permission mode, max turns,
  per-run budget, runner (and the docker image id), CLI version, judge model, judge prompt
  version, judge samples per run, the evidence policy and the arm-leak mask (all decide the
  grades: a second sample adds a tie-break, ``reject`` takes credit from an unquoted verdict,
  the mask changes the text the judge sees), a content hash per prompt (prompt text +
  rubric) and per skill family;
* beside it, **verdict settings** — the pass threshold, the coverage minimum and the gates in
  force. They decide verdicts, not numbers: a resumed session with other ones records them
  (the earlier ones stay in ``changes``) instead of refusing;
* and what is only known once runs were graded: ``judge_overrides``, the ``skill_lift_judge``
  fixture a conftest.py overrode, by class, with the runs it graded (the fixture is resolved
  per test, so a session cannot compare it before its first run; a change is logged).

Weeks written by the qdrant pipeline have no ``week.json``; every reader treats it as absent.

The API is meant for reuse: :func:`differences` compares two identities and names each
difference; :func:`baseline_inputs` says what decides the no-skill answer for one prompt and
model (so a baseline can be reused only where those inputs match); :func:`record_grading`
keeps the record true when ``skilllift judge`` regrades a week outside a session. Pure apart
from :func:`read_week_record` / :func:`write_week_record` / :func:`locked` and the functions
built on them; no pytest.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The verdict settings' defaults are stated once (model.py, offered by config.OPTIONS); a week
# without week.json, or a week.json without the field, is read with them.
from pytest_skilllift.model import (
    CLAUDE_CODE,
    DEFAULT_MIN_COVERAGE,
    DEFAULT_PASS_THRESHOLD,
    split_agent,
)
from pytest_skilllift.week.files import (
    WEEK_JSON,
    WEEK_JSON_LOCK,
    atomic_write_text,
    file_lock,
    update_with_file,
    utc_stamp,
)

SCHEMA_VERSION = 1

#: The judge mask of a week.json written before the field existed. The mask
#: (``--skill-lift-judge-mask``, on by default) came later than week.json, and before it the
#: judge always graded the answer as written — so such a week was graded unmasked. Reading it
#: as "on" would let a session with the default silently add masked grades to an unmasked
#: week; "off" names the difference instead (a grading one: ``--skill-lift-fresh`` regrades).
MASK_WHEN_ABSENT = False

#: Scalar identity fields, in the order they are reported, with the words a message uses.
SCALAR_FIELDS: dict[str, str] = {
    "reps": "repetitions",
    "allowed_tools": "allowed tools",
    "task_tools": "task allow-list (a task run's tools)",
    "permission_mode": "permission mode",
    "max_turns": "max turns",
    "max_budget_usd": "per-run budget (USD)",
    "runner": "runner",
    "image_id": "docker image id",
    "cli_version": "CLI version",
    "judge_model": "judge model",
    "judge_prompt_version": "judge prompt version",
    "judge_samples": "judge samples per run",
    "evidence": "evidence policy",
    "judge_mask": "judge arm-leak mask",
}
#: Differences that only change how answers are graded: regrading every run
#: (``--skill-lift-fresh``) makes the week consistent again. Every other difference changes the
#: answers themselves, which only new runs (a new week) can fix.
GRADING_FIELDS: frozenset[str] = frozenset({"judge_model", "judge_prompt_version",
                                            "judge_samples", "evidence", "judge_mask",
                                            "rubric"})
#: Judge prompt versions (``judge.protocol.PROMPT_VERSION``) → the earlier versions whose
#: verdict rules are its own: the same vocabularies, evidence rule and blind, shuffled, bounded
#: layout. skilllift-judge/3 only added the judge's short reason per missing/absent/violated
#: item. A week graded with an earlier version of the set is resumed under the later one
#: without a refusal and without a regrade (the change is recorded; the runs graded before show
#: "no reason recorded"): docs/judge.md, "The judge's reasons". A version that changes how
#: verdicts are decided is never listed: it stays a grading difference.
PROMPT_VERSIONS_SAME_VERDICTS: dict[str, frozenset[str]] = {
    "skilllift-judge/3": frozenset({"skilllift-judge/2"}),
}


def same_verdict_rules(before: str, after: str) -> bool:
    """Whether judge prompt ``after`` decides verdicts as ``before`` did (equal, or declared
    in :data:`PROMPT_VERSIONS_SAME_VERDICTS`)."""
    return before == after or before in PROMPT_VERSIONS_SAME_VERDICTS.get(after, frozenset())


def newest_of_same_rules(versions: Sequence[str]) -> str | None:
    """The version among ``versions`` whose verdict rules every other one shares (a week
    graded partly before the judge gave reasons), or None when they do not all agree."""
    return next((v for v in versions if all(same_verdict_rules(o, v) for o in versions)), None)


#: Field names of :class:`Difference` beyond the scalars.
PER_KEY_FIELDS: dict[str, str] = {
    "models": "model",
    "prompt": "prompt text",
    "rubric": "rubric",
    "skill": "skill family",
    "agent_cli": "agent CLI version",
}


class WeekFileError(ValueError):
    """A ``week.json`` that cannot be read; the message names the file, the field and the fix."""


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()


@dataclass(frozen=True)
class PromptIdentity:
    """Content hashes of one prompt: its text, its rubric, and both together (``hash``)."""

    hash: str
    text: str
    rubric: str
    family: str

    @classmethod
    def of(cls, prompt_text: str, rubric: Sequence[tuple[str, str]], family: str
           ) -> PromptIdentity:
        """Hash a prompt: ``rubric`` is its (type, text) items in file order."""
        items = [[t, x] for t, x in rubric]
        return cls(hash=_sha256(_canonical({"prompt": prompt_text, "rubric": items})),
                   text=_sha256(prompt_text.encode()), rubric=_sha256(_canonical(items)),
                   family=family)


#: Folder levels the hash descends (``skill.tree.MAX_TREE_DEPTH``: the install refuses a deeper
#: family; week/ imports only model, so the number is repeated here).
_MAX_DEPTH = 64


def _tree_paths(base: Path, too_deep: list[Path]) -> list[Path]:
    """``sorted(base.rglob("*"))`` without recursion (3.11's rglob recurses: a 1,200-level
    family was a RecursionError at configure time); links listed, never entered."""
    out: list[Path] = []
    stack = [(base, 0)]
    while stack:
        here, depth = stack.pop()
        try:
            entries = list(os.scandir(here))
        except OSError:
            continue
        for entry in entries:
            out.append(Path(entry.path))
            if entry.is_dir(follow_symlinks=False):
                if depth + 1 > _MAX_DEPTH:
                    too_deep.append(Path(entry.path))
                else:
                    stack.append((Path(entry.path), depth + 1))
    return sorted(out)


def skill_family_hash(skills_root: Path, family: str) -> str:
    """SHA-256 over every file of ``<skills_root>/<family>`` (relative path + bytes, sorted).

    A symlink is hashed as its target text, never followed: the runners install links inside
    the family as links and refuse one that leaves it (``runners/install.py``), so a file
    outside the family is never read here either (nor a FIFO a link points at). Empty string
    when the family directory does not exist (the prompt's own validation names that
    problem)."""
    base = skills_root / family
    if not base.is_dir():
        return ""
    digest = hashlib.sha256()
    too_deep: list[Path] = []
    for path in _tree_paths(base, too_deep):  # no recursion: any depth
        link = path.is_symlink()
        if not link and not path.is_file():
            continue
        rel = path.relative_to(base).as_posix().encode()
        digest.update(len(rel).to_bytes(4, "big") + rel)
        try:
            if link:
                data = b"link:" + os.readlink(path).encode()
                digest.update(len(data).to_bytes(8, "big") + data)
            else:  # streamed: a 2 GiB file is never held in memory
                update_with_file(digest, path, sized=True)
        except OSError as exc:  # unreadable: the install will say so; hash the reason
            data = f"unreadable:{exc.strerror}".encode()
            digest.update(len(data).to_bytes(8, "big") + data)
    for path in sorted(too_deep):  # not read; the install refuses such a family
        data = b"too-deep:" + path.relative_to(base).as_posix().encode()
        digest.update(len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()


@dataclass(frozen=True)
class Identity:
    """The settings that decide what a week's numbers mean."""

    models: Mapping[str, str]
    reps: int
    allowed_tools: tuple[str, ...]
    permission_mode: str
    max_turns: int | None
    max_budget_usd: float | None
    runner: str
    image_id: str | None
    cli_version: str
    judge_model: str
    judge_prompt_version: str
    judge_samples: int
    evidence: str
    prompts: Mapping[str, PromptIdentity] = field(default_factory=dict)
    skills: Mapping[str, str] = field(default_factory=dict)
    #: The CLI version of every agent beside Claude Code that the labels name (``codex`` →
    #: ``0.169.0``); absent from week.json when the week runs Claude Code only.
    agent_clis: Mapping[str, str] = field(default_factory=dict)
    #: The with-skill@REF arm's revision (``run.revisions.Revision.to_json``: ref, kind,
    #: commit, tree), or None. Its families' hashes are in ``skills`` as ``<family>@<REF>``.
    revision: Mapping[str, str] | None = None
    #: Whether the judge saw the answer with arm-revealing spans masked
    #: (``--skill-lift-judge-mask``, judge/mask.py). A week.json without the field was written
    #: before the mask existed, when the judge always saw the answer as written: it reads as
    #: off (:data:`MASK_WHEN_ABSENT`).
    judge_mask: bool = False
    #: The allow-list of a Harbor task run (the session's plus the write tools,
    #: ``model.task_tools``), recorded when the week holds tasks; None: the week has no task,
    #: or its week.json was written before the field (not compared: nothing was recorded).
    task_tools: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        """The ``identity`` object of week.json."""
        extra = {"agent_clis": dict(sorted(self.agent_clis.items()))} if self.agent_clis else {}
        return {**extra,
            "models": dict(self.models), "reps": self.reps,
            "allowed_tools": list(self.allowed_tools),
            **({"task_tools": list(self.task_tools)} if self.task_tools is not None else {}),
            "permission_mode": self.permission_mode,
            "max_turns": self.max_turns, "max_budget_usd": self.max_budget_usd,
            "runner": self.runner, "image_id": self.image_id, "cli_version": self.cli_version,
            "judge_model": self.judge_model, "judge_prompt_version": self.judge_prompt_version,
            "judge_samples": self.judge_samples, "evidence": self.evidence,
            "judge_mask": self.judge_mask,
            "prompts": {name: {"hash": p.hash, "text": p.text, "rubric": p.rubric,
                               "family": p.family}
                        for name, p in sorted(self.prompts.items())},
            "skills": dict(sorted(self.skills.items())),
            **({"revision": dict(self.revision)} if self.revision else {}),
        }

    @classmethod
    def from_json(cls, data: Any, source: str = WEEK_JSON) -> Identity:
        """Inverse of :meth:`to_json`; :class:`WeekFileError` names the bad field."""
        if not isinstance(data, dict):
            raise WeekFileError(f"{source}: field 'identity' is not an object; delete "
                                f"{source} to start the week's identity afresh")

        def need(key: str, kinds: tuple[type, ...], optional: bool = False) -> Any:
            value = data.get(key)
            if value is None and optional:
                return None
            if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
                names = " or ".join(k.__name__ for k in kinds)
                raise WeekFileError(f"{source}: field 'identity.{key}' must be a {names}, got "
                                    f"{value!r}; restore it or delete {source}")
            return value

        models = need("models", (dict,))
        prompts_raw = need("prompts", (dict,))
        prompts: dict[str, PromptIdentity] = {}
        for name, p in prompts_raw.items():
            if not isinstance(p, dict) or not all(isinstance(p.get(k), str)
                                                  for k in ("hash", "text", "rubric", "family")):
                raise WeekFileError(f"{source}: field 'identity.prompts.{name}' must hold "
                                    "hash, text, rubric and family strings; restore it or "
                                    f"delete {source}")
            prompts[name] = PromptIdentity(p["hash"], p["text"], p["rubric"], p["family"])
        budget = need("max_budget_usd", (int, float), optional=True)
        return cls(
            models={str(k): str(v) for k, v in models.items()},
            reps=need("reps", (int,)),
            allowed_tools=tuple(str(t) for t in need("allowed_tools", (list,))),
            permission_mode=need("permission_mode", (str,)),
            max_turns=need("max_turns", (int,), optional=True),
            max_budget_usd=None if budget is None else float(budget),
            runner=need("runner", (str,)),
            image_id=need("image_id", (str,), optional=True),
            cli_version=need("cli_version", (str,)),
            judge_model=need("judge_model", (str,)),
            judge_prompt_version=need("judge_prompt_version", (str,)),
            judge_samples=need("judge_samples", (int,)),
            evidence=need("evidence", (str,)),
            prompts=prompts,
            skills={str(k): str(v) for k, v in need("skills", (dict,)).items()},
            agent_clis={str(k): str(v) for k, v in
                        (need("agent_clis", (dict,), optional=True) or {}).items()},
            revision=({str(k): str(v) for k, v in need("revision", (dict,)).items()}
                      if data.get("revision") is not None else None),
            judge_mask=(MASK_WHEN_ABSENT if data.get("judge_mask") is None
                        else need("judge_mask", (bool,))),
            task_tools=(tuple(str(t) for t in need("task_tools", (list,)))
                        if data.get("task_tools") is not None else None),
        )


@dataclass(frozen=True)
class Difference:
    """One way two identities differ.

    ``field`` is a scalar field name (:data:`SCALAR_FIELDS`) or ``models`` / ``prompt`` /
    ``rubric`` / ``skill`` with ``key`` naming the model label, prompt or family; ``kind`` is
    ``changed``, ``added`` (only in the second) or ``removed`` (only in the first).
    """

    field: str
    before: Any
    after: Any
    key: str | None = None
    kind: str = "changed"

    @property
    def grading_only(self) -> bool:
        """Whether regrading every run is enough to reconcile it (judge, rubric)."""
        return self.field in GRADING_FIELDS

    def describe(self) -> str:
        """One line for a person: ``judge model: 'a' → 'b'``, ``prompt 'x': rubric edited``."""
        if self.key is None:
            return f"{SCALAR_FIELDS.get(self.field, self.field)}: {_show(self.before)} → " \
                   f"{_show(self.after)}"
        what = PER_KEY_FIELDS.get(self.field, self.field)
        if self.kind in ("added", "removed"):
            what = "prompt" if self.field in ("prompt", "rubric") else what
            return f"{what} {self.key!r} " + ("added" if self.kind == "added" else
                                              "only in the first")
        if self.field == "models":
            return f"model {self.key!r}: {_show(self.before)} → {_show(self.after)}"
        if self.field == "skill" and "@" in self.key:
            family, _, ref = self.key.partition("@")
            return (f"skill family {family!r} at with-skill@{ref}: its files changed (the REF "
                    "now names another revision)")
        if self.field == "skill":
            return f"skill family {self.key!r}: its files changed"
        if self.field == "agent_cli":
            return f"{self.key} CLI version: {_show(self.before)} → {_show(self.after)}"
        return f"prompt {self.key!r}: {what} edited"

    def to_json(self) -> dict[str, Any]:
        """The difference as JSON, with its text."""
        return {"field": self.field, "key": self.key, "kind": self.kind,
                "before": self.before, "after": self.after, "text": self.describe()}


def _show(value: Any) -> str:
    if isinstance(value, bool):  # the judge mask: the option's own words
        return "'on'" if value else "'off'"
    if isinstance(value, (list, tuple)):
        return "'" + ",".join(str(v) for v in value) + "'"
    return "(none)" if value is None else repr(value)


def differences(a: Identity, b: Identity) -> list[Difference]:
    """Every way ``b`` differs from ``a``, scalars first, then per model, prompt and family.

    Allowed tools compare as a set (their order on the command line means nothing), the task
    allow-list too, and only when both sides recorded one (a week or a session without tasks
    has none)."""
    out: list[Difference] = []
    for name in SCALAR_FIELDS:
        va, vb = getattr(a, name), getattr(b, name)
        if name == "task_tools" and (va is None or vb is None):
            continue
        same = (sorted(va) == sorted(vb)) if name in ("allowed_tools", "task_tools") \
            else va == vb
        if not same:
            out.append(Difference(name, _plain(va), _plain(vb)))
    out += _keyed("models", a.models, b.models)
    for name in sorted(set(a.prompts) | set(b.prompts)):
        pa, pb = a.prompts.get(name), b.prompts.get(name)
        if pa is None or pb is None:
            out.append(Difference("prompt", pa and pa.hash, pb and pb.hash, name,
                                  "added" if pa is None else "removed"))
            continue
        if pa.text != pb.text:
            out.append(Difference("prompt", pa.text, pb.text, name))
        if pa.rubric != pb.rubric:
            out.append(Difference("rubric", pa.rubric, pb.rubric, name))
    out += _keyed("skill", a.skills, b.skills)
    out += _keyed("agent_cli", a.agent_clis, b.agent_clis)
    return out


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _keyed(name: str, a: Mapping[str, str], b: Mapping[str, str]) -> list[Difference]:
    out = []
    for key in sorted(set(a) | set(b)):
        va, vb = a.get(key), b.get(key)
        if va is None:
            out.append(Difference(name, None, vb, key, "added"))
        elif vb is None:
            out.append(Difference(name, va, None, key, "removed"))
        elif va != vb:
            out.append(Difference(name, va, vb, key))
    return out


def baseline_inputs(identity: Identity, prompt: str, model: str) -> dict[str, Any]:
    """What decides the no-skill answer to ``prompt`` by model label ``model``, and its grade.

    Two weeks whose ``baseline_inputs`` are equal for (prompt, model) produced their no-skill
    runs of that pair under the same conditions, so one can stand in for the other. Skills are
    not part of it (the no-skill arm installs none), nor are the repetitions (a rep is a rep).
    Raises ``KeyError`` naming what is missing when the identity has no such prompt or model.
    """
    if prompt not in identity.prompts:
        raise KeyError(f"prompt {prompt!r} is not in this identity "
                       f"(it has {', '.join(sorted(identity.prompts)) or 'none'})")
    if model not in identity.models:
        raise KeyError(f"model {model!r} is not in this identity "
                       f"(it has {', '.join(identity.models) or 'none'})")
    p = identity.prompts[prompt]
    agent = split_agent(identity.models[model])[0]
    # Another agent's answer depends on its own CLI, not Claude Code's (docs/agents.md).
    cli = identity.cli_version if agent == CLAUDE_CODE else identity.agent_clis.get(agent, "")
    return {
        "model_id": identity.models[model], "prompt_text": p.text, "rubric": p.rubric,
        "allowed_tools": sorted(identity.allowed_tools),
        "permission_mode": identity.permission_mode, "max_turns": identity.max_turns,
        "max_budget_usd": identity.max_budget_usd, "runner": identity.runner,
        "image_id": identity.image_id, "cli_version": cli,
        "judge_model": identity.judge_model,
        "judge_prompt_version": identity.judge_prompt_version,
        "judge_samples": identity.judge_samples, "evidence": identity.evidence,
        "judge_mask": identity.judge_mask,
    }


def baseline_key(identity: Identity, prompt: str, model: str) -> str:
    """A SHA-256 of :func:`baseline_inputs`: equal keys, interchangeable no-skill runs."""
    return _sha256(_canonical(baseline_inputs(identity, prompt, model)))


# --------------------------------------------------------------------------- week.json


#: week.json's key for the published skills site's host the runs watched for ("" for none;
#: absent in a week written before it, or by the qdrant pipeline: treated as unknown).
SKILLS_SITE = "skills_site"


def skills_site(week_dir: Path) -> str | None:
    """The week's recorded skills-site host ("" = none configured), None when unknown."""
    try:
        record = read_week_record(week_dir)
    except WeekFileError:
        return None
    value = record.extra.get(SKILLS_SITE) if record else None
    return value if isinstance(value, str) else None


@dataclass
class WeekRecord:
    """The whole of week.json: identity, verdict settings, the log of changes.

    ``shard`` is kept for sharded weeks (``--skill-lift-shard``); keys this version does not
    know are kept in ``extra`` and written back unchanged.
    """

    identity: Identity
    pass_threshold: float = DEFAULT_PASS_THRESHOLD
    min_coverage: float = DEFAULT_MIN_COVERAGE
    gates: tuple[str, ...] = ()
    #: Overriding ``skill_lift_judge`` class (``module.QualName``) → runs it graded.
    judge_overrides: dict[str, int] = field(default_factory=dict)
    shard: Any = None
    created_utc: str = ""
    updated_utc: str = ""
    runs: int | None = None
    changes: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The record as week.json stores it (unknown keys kept)."""
        return {
            **self.extra,
            "schema": SCHEMA_VERSION, "created_utc": self.created_utc,
            "updated_utc": self.updated_utc, "runs": self.runs,
            "identity": self.identity.to_json(),
            "pass_threshold": self.pass_threshold, "min_coverage": self.min_coverage,
            "gates": list(self.gates), "judge_overrides": dict(self.judge_overrides),
            "shard": self.shard, "changes": self.changes,
        }

    @classmethod
    def from_json(cls, data: Any, source: str = WEEK_JSON) -> WeekRecord:
        """The record from week.json's data; WeekFileError names what is wrong."""
        if not isinstance(data, dict):
            raise WeekFileError(f"{source}: holds a JSON {type(data).__name__}, not an "
                                f"object; restore it or delete {source}")
        schema = data.get("schema")
        if schema != SCHEMA_VERSION:
            raise WeekFileError(f"{source}: field 'schema' is {schema!r}; this version reads "
                                f"schema {SCHEMA_VERSION}. Upgrade pytest-skilllift or use a "
                                "new week directory")
        gates = data.get("gates", [])
        if not isinstance(gates, list) or not all(isinstance(g, str) for g in gates):
            raise WeekFileError(f"{source}: field 'gates' must be a list of gate expressions; "
                                "fix it or delete the field")
        overrides = data.get("judge_overrides", {})
        if not isinstance(overrides, dict) or not all(
                isinstance(k, str) and isinstance(v, int) for k, v in overrides.items()):
            raise WeekFileError(f"{source}: field 'judge_overrides' must map a judge class to "
                                "its run count; fix it or delete the field")
        threshold = _number(data, "pass_threshold", DEFAULT_PASS_THRESHOLD, source)
        coverage = _number(data, "min_coverage", DEFAULT_MIN_COVERAGE, source)
        changes = data.get("changes", [])
        known = {"schema", "created_utc", "updated_utc", "runs", "identity", "pass_threshold",
                 "min_coverage", "gates", "judge_overrides", "shard", "changes"}
        runs = data.get("runs")
        return cls(
            identity=Identity.from_json(data.get("identity"), source),
            pass_threshold=threshold, min_coverage=coverage, gates=tuple(gates),
            judge_overrides=dict(overrides),
            shard=data.get("shard"), created_utc=str(data.get("created_utc") or ""),
            updated_utc=str(data.get("updated_utc") or ""),
            runs=runs if isinstance(runs, int) else None,
            changes=changes if isinstance(changes, list) else [],
            extra={k: v for k, v in data.items() if k not in known},
        )


def _number(data: dict[str, Any], key: str, default: float, source: str) -> float:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise WeekFileError(f"{source}: field {key!r} must be a number within [0, 1], got "
                            f"{value!r}; fix it or delete the field (default {default})")
    return float(value)


def read_week_record(week_dir: Path) -> WeekRecord | None:
    """The week's record, or None when it has no week.json (e.g. a qdrant pipeline week)."""
    path = Path(week_dir) / WEEK_JSON
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise WeekFileError(f"{path}: cannot be read ({exc}); restore it or delete it") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise WeekFileError(f"{path}: is not valid JSON ({exc.msg} at line {exc.lineno}); "
                            "restore it or delete it to start the week's identity afresh"
                            ) from None
    return WeekRecord.from_json(data, str(path))


def write_week_record(week_dir: Path, record: WeekRecord) -> Path:
    """Write week.json atomically (readers see the old or the new file, never a torn one)."""
    path = Path(week_dir) / WEEK_JSON
    atomic_write_text(path, json.dumps(record.to_json(), indent=2, ensure_ascii=False) + "\n")
    return path


@contextlib.contextmanager
def locked(week_dir: Path) -> Iterator[None]:
    """Exclusive lock on the week's record across processes (concurrent sessions)."""
    with file_lock(week_dir / WEEK_JSON_LOCK):
        yield


# --------------------------------------------------------------------------- a session opens a week


class IdentityRefused(ValueError):
    """A session would add runs to a week measured under another identity."""

    def __init__(self, message: str, blocking: Sequence[Difference]) -> None:
        super().__init__(message)
        self.blocking = tuple(blocking)


#: ``has_runs(model=None, prompt=None, with_skill_family=None)`` → whether the week holds a
#: finished run matching every given filter (no filter: any run at all).
HasRuns = Callable[..., bool]


def _affects_existing_runs(d: Difference, has_runs: HasRuns, recorded: Identity) -> bool:
    """Whether runs already in the week were made under the differing setting."""
    if d.kind == "added":
        return False  # new in this session: nothing was measured under the old value
    if d.kind == "removed":
        return False  # this session just does not touch it; the week keeps what it has
    if d.field == "models":
        return has_runs(model=d.key)
    if d.field in ("prompt", "rubric"):
        return has_runs(prompt=d.key)
    if d.field == "skill":
        return has_runs(with_skill_family=d.key)
    return has_runs()


def open_week(
    week_dir: Path, proposed: Identity, *, pass_threshold: float, min_coverage: float,
    gates: Sequence[str], fresh: bool, has_runs: HasRuns, new_week_hint: str = "",
    now: str | None = None,
) -> tuple[WeekRecord, list[str]]:
    """Compare a session's identity with the week's record and write the new record.

    Returns the record written and human-readable notes of what changed (new prompts, other
    gates…). Raises :class:`IdentityRefused` when a difference affects runs the week already
    holds: grading-only differences (judge, rubric) are accepted with ``fresh`` (every run is
    regraded), anything that changes the answers themselves needs a new week. Raises
    :class:`WeekFileError` for an unreadable week.json. Call under :func:`locked`.

    A judge prompt version with the same verdict rules as the recorded one
    (:func:`same_verdict_rules`: a version that only added the judge's reasons) is recorded
    and named, never refused and never a regrade: the runs graded before keep their grades.
    """
    now = now or utc_stamp()
    current = read_week_record(week_dir)
    notes: list[str] = []
    if current is None:
        record = WeekRecord(identity=proposed, pass_threshold=pass_threshold,
                            min_coverage=min_coverage, gates=tuple(gates), created_utc=now,
                            updated_utc=now, changes=[])
        if has_runs():
            # Runs from before week.json existed: nothing to compare them with, so say so.
            record.changes.append({"at": now, "what": "identity first recorded on a week that "
                                   "already had runs"})
            notes.append("week.json written for a week that already had runs: their "
                         "settings were not recorded, so they could not be checked")
        write_week_record(week_dir, record)
        return record, notes

    diffs = differences(current.identity, proposed)
    compatible = [d for d in diffs if d.field == "judge_prompt_version" and not fresh
                  and same_verdict_rules(str(d.before), str(d.after))]
    blocking = [d for d in diffs if d not in compatible
                and _affects_existing_runs(d, has_runs, current.identity)]
    if blocking and not (fresh and all(d.grading_only for d in blocking)):
        raise IdentityRefused(_refusal(week_dir, blocking, fresh, new_week_hint), blocking)

    record = current
    # Prompts, models and families keep the union: a session that runs a subset does not
    # forget what the week holds; new ones are recorded; changed ones take the new value.
    merged = Identity(
        models={**current.identity.models, **proposed.models},
        **{name: getattr(proposed, name) for name in SCALAR_FIELDS
           if name != "task_tools"},
        # A session without tasks keeps the week's recorded task allow-list.
        task_tools=(proposed.task_tools if proposed.task_tools is not None
                    else current.identity.task_tools),
        prompts={**current.identity.prompts, **proposed.prompts},
        skills={**current.identity.skills, **proposed.skills},
        revision=proposed.revision or current.identity.revision,
        # Kept like the families: a resumed session must still compare the agents' CLIs.
        agent_clis={**current.identity.agent_clis, **proposed.agent_clis},
    )
    for d in diffs:
        if d.kind == "removed":
            continue
        record.changes.append({"at": now, "what": d.field, "key": d.key, "kind": d.kind,
                               "before": d.before, "after": d.after})
        if d.kind == "added":
            notes.append(f"{d.describe()} (recorded in week.json)")
        elif d in blocking:
            notes.append(f"{d.describe()}: every run is regraded (--skill-lift-fresh)")
        elif d in compatible and has_runs():
            notes.append(f"{d.describe()}: same verdict rules, the judge now also gives a "
                         "reason per missing or violated item; runs graded before keep their "
                         "grades and show no reason (--skill-lift-fresh regrades them)")
        else:
            notes.append(f"{d.describe()} (no run of the week was made under the old value)")
    record.identity = merged
    for what, before, after in (("pass_threshold", current.pass_threshold, pass_threshold),
                                ("min_coverage", current.min_coverage, min_coverage),
                                ("gates", list(current.gates), list(gates))):
        if before != after:
            record.changes.append({"at": now, "what": what, "before": before, "after": after})
            notes.append(f"{what.replace('_', ' ')} changed from {_show(before)} to "
                         f"{_show(after)} (the earlier value is kept in week.json)")
    record.pass_threshold, record.min_coverage = pass_threshold, min_coverage
    record.gates = tuple(gates)
    record.updated_utc = now
    write_week_record(week_dir, record)
    return record, notes


def _refusal(week_dir: Path, blocking: Sequence[Difference], fresh: bool, hint: str) -> str:
    lines = [f"week {week_dir} was measured under another identity (see its {WEEK_JSON}); "
             "adding runs would mix two measurements in one week. What differs:"]
    for d in blocking:
        kind = "grading" if d.grading_only else "generation"
        lines.append(f"  - {d.describe()} [{kind}]")
    new_week = f"--skill-lift-out={hint}" if hint else "--skill-lift-out=<new directory>"
    grading = all(d.grading_only for d in blocking)
    if grading:
        lines.append(f"Way out: start a new week with {new_week}, or regrade every run of "
                     "this week under the new settings with --skill-lift-fresh.")
    else:
        lines.append(f"Way out: start a new week with {new_week}."
                     + (" --skill-lift-fresh regrades existing answers but cannot regenerate "
                        "them, so it does not reconcile a generation difference."
                        if fresh else " (--skill-lift-fresh only reconciles grading "
                        "differences: it regrades, it does not regenerate.)"))
    return "\n".join(lines)


# --------------------------------------------------------------------------- a week regraded

#: The identity fields a regrade sets (``skilllift judge``): how the week was graded.
JUDGE_FIELDS: tuple[str, ...] = ("judge_model", "judge_prompt_version", "judge_samples",
                                 "evidence", "judge_mask")


def record_grading(week_dir: Path, *, judge_model: str, judge_prompt_version: str,
                   judge_samples: int, evidence: str, judge_mask: bool,
                   source: Path | None = None,
                   now: str | None = None) -> list[str]:
    """After every run of ``week_dir`` was graded again outside a session (``skilllift judge
    --fresh``, or a copy graded with ``--out``): its week.json takes the judge that graded it,
    each change logged, so a later session or comparison sees the week as it now is.

    A copy (``source`` given) without its own week.json starts from the source week's record.
    Returns notes of what changed; nothing happens when neither has a week.json (a qdrant
    pipeline week). Raises :class:`WeekFileError` for an unreadable one."""
    now = now or utc_stamp()
    with locked(week_dir):
        record = read_week_record(week_dir)
        notes: list[str] = []
        if record is None and source is not None:
            record = read_week_record(source)
            if record is not None:
                record.created_utc = now
                record.changes = [*record.changes, {"at": now, "what": "copied",
                                                    "from": str(source)}]
                notes.append(f"{WEEK_JSON} copied from {source}")
        if record is None:
            return notes
        graded: dict[str, object] = {
            "judge_model": judge_model, "judge_prompt_version": judge_prompt_version,
            "judge_samples": judge_samples, "evidence": evidence, "judge_mask": judge_mask}
        before = record.identity
        for name in JUDGE_FIELDS:
            if getattr(before, name) != graded[name]:
                d = Difference(name, getattr(before, name), graded[name])
                record.changes.append({"at": now, "what": name, "key": None,
                                       "kind": "changed", "before": d.before,
                                       "after": d.after, "by": "skilllift judge"})
                notes.append(f"{d.describe()} (every run regraded; recorded in {WEEK_JSON})")
        record.identity = dataclasses.replace(
            before, judge_model=judge_model, judge_prompt_version=judge_prompt_version,
            judge_samples=judge_samples, evidence=evidence, judge_mask=judge_mask)
        # skilllift judge grades through the configured judge, never a conftest.py override.
        notes += _set_overrides(record, {}, now)
        record.updated_utc = now
        write_week_record(week_dir, record)
        return notes


def _set_overrides(record: WeekRecord, overrides: Mapping[str, int], now: str) -> list[str]:
    """Record which ``skill_lift_judge`` overrides graded the week; a change is logged."""
    after = dict(sorted(overrides.items()))
    if sorted(record.judge_overrides) == sorted(after):
        record.judge_overrides = after  # the run counts move; only the set of judges matters
        return []
    before = record.judge_overrides
    record.changes.append({"at": now, "what": "judge_overrides", "before": before,
                           "after": after})
    record.judge_overrides = after
    if not after:
        return [f"the judge is the configured one again (was overridden by "
                f"{', '.join(before)}; recorded in {WEEK_JSON})"]
    return [f"judge overridden by a skill_lift_judge fixture: {', '.join(after)} "
            f"({sum(after.values())} graded runs; recorded in {WEEK_JSON})"]


def record_session_end(week_dir: Path, *, runs: int, judge_overrides: Mapping[str, int],
                       now: str | None = None) -> list[str]:
    """At the end of a session: the week's run count and the ``skill_lift_judge`` overrides
    that graded its runs (the scorecard's judge report). Returns notes of what changed; does
    nothing for a week without week.json."""
    now = now or utc_stamp()
    with locked(week_dir):
        record = read_week_record(week_dir)
        if record is None:
            return []
        record.runs = runs
        notes = _set_overrides(record, judge_overrides, now)
        record.updated_utc = now
        write_week_record(week_dir, record)
        return notes
