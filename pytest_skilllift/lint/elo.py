"""PluginEval's Elo ranking against a gold corpus: ``skilllift corpus init`` and certify's matches.

``skilllift corpus init DIR`` indexes every skill under ``DIR`` (id, name, description, path,
content hash, static composite) into ``DIR/skilllift-corpus.json``. ``certify`` then has the
skill meet every corpus entry once, each match judged in both orders (A vs B, then B vs A):

* the two verdicts agree → that result (1 win, 0.5 tie, 0 loss for the skill);
* they disagree (the verdict followed the position) → a draw, flagged as position bias.

Ratings start at 1500 (the corpus median by convention) with K = 32; the skill's rating is
replayed over the matches in corpus order, its 95 % interval from 500 bootstrap resamples of
the matches, and its corpus percentile is the share of entries it beat (a draw counts half).
A match whose either verdict is unusable is left out and named; an entry identical to the
skill (same content) does not play it.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_skilllift.lint.depth_stats import (
    ELO_BOOTSTRAP,
    ELO_K,
    ELO_START,
    elo_bootstrap_ci,
    elo_replay,
)
from pytest_skilllift.lint.skill_judge import (
    PREFERENCE_TOOL,
    PROMPT_VERSION,
    SkillJudgeClient,
    SkillJudgeReplyError,
    parse_preference,
    preference_request,
    skill_material,
)
from pytest_skilllift.lint.spend import Budget, LayerCost, Store, slug, tree_hash
from pytest_skilllift.skill.skillfile import SkillFile, find_skill_dirs, load_skill

INDEX_NAME = "skilllift-corpus.json"
INDEX_VERSION = 1
#: Characters of each skill's material per comparison (two skills share one request).
PAIR_MATERIAL_CHARS = 60_000


class CorpusError(ValueError):
    """The corpus cannot be indexed or read (the message says which file and why)."""


@dataclass(frozen=True)
class CorpusEntry:
    """One gold-corpus skill."""

    id: str
    name: str
    description: str
    path: str  # relative to the index's directory
    hash: str
    static_composite: float


@dataclass
class Corpus:
    """A loaded index."""

    index_path: Path
    entries: list[CorpusEntry]
    stale: list[str] = field(default_factory=list)  # entries whose files changed or vanished

    def skill_dir(self, entry: CorpusEntry) -> Path:
        """Where the entry lives on disk."""
        return (self.index_path.parent / entry.path).resolve()


def init_corpus(directory: Path, out: Path | None = None) -> tuple[Path, list[CorpusEntry]]:
    """Index every skill under ``directory``; returns the index path and its entries."""
    from pytest_skilllift.lint.analyze import analyze

    directory = Path(directory)
    if not directory.is_dir():
        raise CorpusError(f"{directory}: not a directory (give the folder holding the corpus "
                          "skills)")
    dirs = find_skill_dirs(directory, [])
    if not dirs:
        raise CorpusError(f"{directory}: no SKILL.md found under it")
    index = Path(out) if out is not None else directory / INDEX_NAME
    entries = []
    for d in dirs:
        skill = load_skill(d)
        report = analyze(skill)
        entries.append(CorpusEntry(
            id=skill.rel_id, name=skill.name or skill.rel_id, description=skill.description,
            path=_relpath(d, index.parent), hash=tree_hash(d),
            static_composite=report.composite.score))
    data = {
        "version": INDEX_VERSION,
        "created_utc": dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ"),
        "root": _relpath(directory, index.parent),
        "entries": [e.__dict__ for e in entries],
    }
    from pytest_skilllift.week.files import atomic_write_json

    atomic_write_json(index, data)
    return index, entries


def _relpath(path: Path, base: Path) -> str:
    import os

    return Path(os.path.relpath(Path(path).resolve(), Path(base).resolve())).as_posix()


def load_corpus(path: Path) -> Corpus:
    """Read an index (the file, or a directory holding :data:`INDEX_NAME`)."""
    path = Path(path)
    index = path / INDEX_NAME if path.is_dir() else path
    try:
        data = json.loads(index.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CorpusError(f"{index}: no corpus index; build it with `skilllift corpus init "
                          f"{path}`") from None
    except (OSError, ValueError) as exc:
        raise CorpusError(f"{index}: unreadable corpus index ({exc}); rebuild it with "
                          "`skilllift corpus init`") from exc
    raw = data.get("entries") if isinstance(data, dict) else None
    if not isinstance(raw, list):
        raise CorpusError(f"{index}: field 'entries' is missing; rebuild it with "
                          "`skilllift corpus init`")
    entries: list[CorpusEntry] = []
    for i, e in enumerate(raw, 1):
        try:
            entries.append(CorpusEntry(**e))
        except TypeError as exc:
            raise CorpusError(f"{index}: entry {i} is malformed ({exc}); rebuild the index") \
                from None
    corpus = Corpus(index, entries)
    for e in entries:
        d = corpus.skill_dir(e)
        if not (d / "SKILL.md").is_file():
            corpus.stale.append(f"{e.id}: {d} no longer holds a SKILL.md")
        elif tree_hash(d) != e.hash:
            corpus.stale.append(f"{e.id}: changed since the index was built")
    return corpus


@dataclass(frozen=True)
class Match:
    """One skill-vs-entry match, judged in both orders."""

    opponent: str
    first: str  # verdict with the skill shown as A
    second: str  # verdict with the skill shown as B
    result: float  # the skill's score: 1, 0.5, 0
    position_bias: bool

    def to_json(self) -> dict[str, Any]:
        """Reported form."""
        return {"opponent": self.opponent, "skill_as_A": self.first, "skill_as_B": self.second,
                "result": self.result, "position_bias": self.position_bias}


def combine(first: str, second: str) -> tuple[float, bool]:
    """The skill's score from both orders (see the module docstring) and the bias flag."""
    r1 = {"A": 1.0, "B": 0.0, "tie": 0.5}[first]  # skill was A
    r2 = {"B": 1.0, "A": 0.0, "tie": 0.5}[second]  # skill was B
    if r1 == r2:
        return r1, False
    return 0.5, True


@dataclass
class EloResult:
    """Certify's ranking of one skill."""

    corpus: str
    matches: list[Match] = field(default_factory=list)
    unscored: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    cost: LayerCost = field(default_factory=LayerCost)

    @property
    def scored(self) -> bool:
        """At least one match was judged in both orders."""
        return bool(self.matches)

    def rating(self) -> float | None:
        """The skill's Elo after the matches (None without matches)."""
        if not self.matches:
            return None
        return elo_replay([(m.opponent, m.result) for m in self.matches])

    def ci(self) -> tuple[float, float] | None:
        """500-sample bootstrap 95 % interval of the rating."""
        return elo_bootstrap_ci([(m.opponent, m.result) for m in self.matches])

    def percentile(self) -> float | None:
        """Share of corpus entries beaten, in percent (draws count half)."""
        if not self.matches:
            return None
        return 100.0 * sum(m.result for m in self.matches) / len(self.matches)

    def to_json(self) -> dict[str, Any]:
        """The ``elo`` entry of the report's ``layers``."""
        rating, ci = self.rating(), self.ci()
        wins = sum(1 for m in self.matches if m.result == 1.0)
        losses = sum(1 for m in self.matches if m.result == 0.0)
        return {
            "layer": "elo",
            "scored": self.scored,
            "unscored_reason": None if self.scored else (
                "no match was judged in both orders" + (
                    f" ({'; '.join(self.unscored[:3])})" if self.unscored else "")),
            "corpus": self.corpus,
            "start": ELO_START, "k": ELO_K, "bootstrap_samples": ELO_BOOTSTRAP,
            "rating": None if rating is None else round(rating, 1),
            "ci95": None if ci is None else [round(ci[0], 1), round(ci[1], 1)],
            "percentile": None if self.percentile() is None else round(self.percentile() or 0, 1),
            "wins": wins, "draws": len(self.matches) - wins - losses, "losses": losses,
            "position_bias": sum(1 for m in self.matches if m.position_bias),
            "matches": [m.to_json() for m in self.matches],
            "unscored_matches": self.unscored,
            "skipped": self.skipped,
            "stale_entries": self.stale,
            "cost": self.cost.to_json(),
        }


def play_corpus(
    skill: SkillFile,
    corpus: Corpus,
    client: SkillJudgeClient,
    *,
    budget: Budget,
    store: Store,
    skill_hash: str,
) -> EloResult:
    """The skill meets every entry, in both orders; verdicts are stored and reused."""
    result = EloResult(corpus=str(corpus.index_path), stale=list(corpus.stale))
    mine = skill_material(skill, budget=PAIR_MATERIAL_CHARS)
    for entry in corpus.entries:
        d = corpus.skill_dir(entry)
        if not (d / "SKILL.md").is_file():
            result.unscored.append(f"{entry.id}: missing on disk")
            continue
        other_hash = tree_hash(d)
        if other_hash == skill_hash or d == skill.dir.resolve():
            result.skipped.append(f"{entry.id}: the skill itself")
            continue
        theirs = skill_material(load_skill(d), budget=PAIR_MATERIAL_CHARS)
        verdicts: list[str] = []
        missing: list[str] = []
        for order, (a, b) in enumerate(((mine, theirs), (theirs, mine)), 1):
            key = (f"elo/{skill_hash}-vs-{other_hash}-{slug(client.model)}-"
                   f"{slug(PROMPT_VERSION)}-order{order}.json")
            stored = store.get(key)
            if isinstance(stored, dict) and stored.get("better") in ("A", "B", "tie"):
                verdicts.append(str(stored["better"]))
                result.cost.reused += 1
                continue
            if budget.exhausted():
                result.cost.not_run_spend_cap += 1
                verdicts.append("")
                missing.append(f"order {order} not run (--max-spend reached)")
                continue
            reply = client.call_tool(preference_request(a, b), PREFERENCE_TOOL)
            result.cost.add_usage(reply.usage, reply.cost_usd)
            budget.charge(reply.cost_usd)
            try:
                if reply.payload is None:
                    raise SkillJudgeReplyError(reply.error or "no reply")
                verdict = parse_preference(reply.payload)
            except SkillJudgeReplyError as exc:
                missing.append(f"order {order}: unusable reply: {exc}")
                verdicts.append("")
                continue
            store.put(key, {"better": verdict, "reason": reply.payload.get("reason", "")})
            verdicts.append(verdict)
        if missing:
            result.unscored.append(f"{entry.id}: {'; '.join(missing)}")
            continue
        score, bias = combine(verdicts[0], verdicts[1])
        result.matches.append(Match(entry.id, verdicts[0], verdicts[1], score, bias))
    return result
