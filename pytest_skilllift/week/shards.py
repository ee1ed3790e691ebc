"""``--skill-lift-shard=I/N``: which runs one CI job generates and grades, and
``<week>/shard.json``, the split as the shard's session recorded it.

A week is split by run (every rubric item of a run lands in the run's shard), balanced by
expected work, and the split depends only on the set of runs: the same prompt files, models and
repetitions give the same shards on every machine, whatever ``-n``, the collection order or the
week directory.

Balance: runs are placed longest first (LPT: each run goes to the shard with the least expected
work so far, ties to the lowest shard), with a with-skill run counting
:data:`WITH_SKILL_WEIGHT` against a no-skill run's :data:`NO_SKILL_WEIGHT` — the with-skill
arm reads the skill (more turns, more tokens). Runs of equal weight are placed in the order of
their key (prompt, model, condition, rep), so the split is a function of the run set alone.

Every shard records the whole split — each run id of the week with its shard and its rubric
item count — not only its own share, so ``skilllift merge`` can name the runs missing from
every shard it was given (and the shards it was not given), and refuse a shard cut from another
prompt set. No pytest here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_skilllift.week.files import SHARD_FILE, atomic_write_json

#: Relative expected work of a run by arm (a with-skill run reads SKILL.md and its references;
#: a trigger run stops after a turn or two).
WITH_SKILL_WEIGHT = 3
NO_SKILL_WEIGHT = 2
TRIGGER_WEIGHT = 1
#: The condition of a trigger run's key (its run directory is under ``triggers/``).
TRIGGER = "trigger"

_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


class ShardError(ValueError):
    """A ``--skill-lift-shard`` value that is not ``I/N`` with 1 <= I <= N."""


@dataclass(frozen=True, order=True)
class Shard:
    """One share of a week: ``index`` of ``count`` (1-based, as CI matrices count)."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"2/4"`` → ``Shard(2, 4)``; :class:`ShardError` says what is wrong and the fix."""
        m = _SHARD.match(text)
        if not m:
            raise ShardError(f"--skill-lift-shard={text!r}: write it as I/N, e.g. 1/4 for the "
                             "first of four shards")
        index, count = int(m[1]), int(m[2])
        if count < 1 or not 1 <= index <= count:
            raise ShardError(f"--skill-lift-shard={text!r}: I must be within 1..N and N at "
                             f"least 1 (shards are numbered 1/{max(count, 1)} to "
                             f"{max(count, 1)}/{max(count, 1)})")
        return cls(index, count)

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


@dataclass(frozen=True)
class RunKey:
    """What identifies a run across machines (the run id also carries the week's name)."""

    prompt: str
    model: str
    condition: str
    rep: int
    with_skill: bool

    @property
    def weight(self) -> int:
        """The run's expected work relative to others' (by arm): what the shards balance."""
        if self.condition == TRIGGER:
            return TRIGGER_WEIGHT
        return WITH_SKILL_WEIGHT if self.with_skill else NO_SKILL_WEIGHT

    @property
    def sort_key(self) -> tuple[str, str, str, int]:
        """``(prompt, model, condition, rep)``."""
        return (self.prompt, self.model, self.condition, self.rep)


def assign(runs: Iterable[RunKey], count: int) -> dict[RunKey, int]:
    """Each run's shard (1-based), balanced by :attr:`RunKey.weight` (see the module doc).

    Duplicates are placed once. Deterministic: depends only on the set of runs and ``count``.
    """
    if count < 1:
        raise ShardError(f"a week is split into at least 1 shard, not {count}")
    unique = sorted(set(runs), key=lambda r: (-r.weight, r.sort_key))
    load = [0] * count
    placed: dict[RunKey, int] = {}
    for run in unique:
        target = min(range(count), key=lambda i: (load[i], i))
        load[target] += run.weight
        placed[run] = target + 1
    return placed


def shard_loads(placed: Mapping[RunKey, int], count: int) -> list[int]:
    """Expected work per shard (index 0 = shard 1), for reports and tests."""
    load = [0] * count
    for run, shard in placed.items():
        load[shard - 1] += run.weight
    return load


class ShardPlanError(ValueError):
    """A ``shard.json`` that cannot be read; the message names the file and the fix."""


@dataclass(frozen=True)
class ShardPlan:
    """This week directory's shard, and the shard of every run of the week."""

    shard: Shard
    #: run id → shard index (1-based), for every run of the week (a trigger run as
    #: ``triggers/<run id>``: its directory relative to the week).
    runs: Mapping[str, int] = field(default_factory=dict)
    #: run id → rubric items of that run.
    items: Mapping[str, int] = field(default_factory=dict)

    def of(self, index: int) -> list[str]:
        """The run ids of shard ``index``, sorted."""
        return sorted(r for r, s in self.runs.items() if s == index)

    @property
    def mine(self) -> list[str]:
        """The run ids of this week directory's own shard."""
        return self.of(self.shard.index)

    def items_of(self, run_ids: list[str]) -> int:
        """How many items the runs have."""
        return sum(self.items.get(r, 0) for r in run_ids)

    def to_json(self) -> dict[str, Any]:
        """The plan as the week's shard file stores it."""
        return {"shard": str(self.shard), "index": self.shard.index, "count": self.shard.count,
                "runs": {r: {"shard": s, "items": self.items.get(r, 0)}
                         for r, s in sorted(self.runs.items())}}

    @classmethod
    def from_json(cls, data: Any, source: str) -> ShardPlan:
        """The plan from its stored JSON; an error names ``source`` and what is wrong."""
        try:
            shard = Shard.parse(str(data["shard"]))
            runs_raw = data["runs"]
            runs = {str(r): int(v["shard"]) for r, v in runs_raw.items()}
            items = {str(r): int(v.get("items", 0)) for r, v in runs_raw.items()}
        except (KeyError, TypeError, ValueError, AttributeError, ShardError) as exc:
            raise ShardPlanError(
                f"{source}: not a shard plan ({type(exc).__name__}: {exc}); it is rewritten "
                "by the next pytest --skill-lift --skill-lift-shard=I/N session of this week "
                "directory") from None
        bad = sorted(r for r, s in runs.items() if not 1 <= s <= shard.count)
        if bad:
            raise ShardPlanError(f"{source}: field 'runs.{bad[0]}.shard' is outside "
                                 f"1..{shard.count}; rerun the shard's session to rewrite it")
        return cls(shard=shard, runs=runs, items=items)


def read_plan(week_dir: Path) -> ShardPlan | None:
    """The week directory's plan, or None when it is not a shard."""
    path = Path(week_dir) / SHARD_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ShardPlanError(f"{path}: cannot be read ({exc}); rerun the shard's session to "
                             "rewrite it") from None
    return ShardPlan.from_json(data, str(path))


def write_plan(week_dir: Path, plan: ShardPlan) -> Path:
    """Write shard.json (atomically; left alone when it already says the same)."""
    path = Path(week_dir) / SHARD_FILE
    data = plan.to_json()
    try:
        if json.loads(path.read_text(encoding="utf-8")) == data:
            return path
    except (OSError, ValueError):
        pass
    atomic_write_json(path, data)
    return path


def record_shard(week_dir: Path, shard: Shard) -> bool:
    """Record the shard in the week's ``week.json`` (written before the first run by the week
    identity); returns whether it changed. :class:`ShardError` when the directory already holds
    another shard of the week (each shard writes a week directory of its own)."""
    from pytest_skilllift.week import identity as ident

    want = {"index": shard.index, "count": shard.count}
    with ident.locked(Path(week_dir)):
        record = ident.read_week_record(Path(week_dir))
        if record is None or record.shard == want:
            return False
        if record.shard is not None:
            had = record.shard
            spec = (f"{had.get('index')}/{had.get('count')}" if isinstance(had, dict)
                    else str(had))
            raise ShardError(
                f"{week_dir} holds shard {spec} of this week; shard {shard} goes to a week "
                "directory of its own, of the same name (e.g. --skill-lift-out="
                f"shards/{shard.index}/{Path(week_dir).name}); merge them with skilllift merge")
        record.shard = want
        ident.write_week_record(Path(week_dir), record)
        return True
