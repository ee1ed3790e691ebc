"""``skilllift merge OUT SHARD...``: the shards of a week, put together as one week directory.

Each shard (``pytest --skill-lift --skill-lift-shard=I/N``) is a complete week directory of its
own. Merging copies their run directories into ``OUT`` and checks, before anything is copied:

* that the shards were cut from the same week: the same split in every ``shard.json`` (and in
  ``OUT``'s ``merge.json`` from an earlier merge) — :class:`MergeRefused` names the runs that
  differ — and the same identity in every ``week.json`` (:mod:`pytest_skilllift.week.identity`,
  when the week has one), refused with each difference named;
* that no run appears twice with different content. The same run twice with identical files is
  a retried shard and fine; a copy that adds the grades another copy lacks (a shard graded
  later) replaces it; two different generations, or two different gradings, of one run are a
  conflict, refused with the files that differ.

Then it reports the runs planned but missing from every shard (with the shard they belong to)
and records the merge in ``OUT/merge.json``; the caller rebuilds the CSVs (and the trigger
table: trigger runs under ``triggers/`` are merged the same way) and summarizes.
Merging is idempotent and can run as shards arrive: a second merge of the same shards copies
nothing, and a later shard adds its runs. Each run directory is copied to a hidden temporary
directory and renamed into place, so an interrupted merge leaves no half-copied run. No pytest.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_skilllift.week.files import (
    GRADES_FILE,
    GRADING_FILES,
    LOCK_FILE,
    MERGE_FILE,
    MERGE_LOCK,
    RUN_FILE,
    TRIGGERS_DIR,
    VIEW_DIR,
    WeekLinkError,
    atomic_write_json,
    copy_tree_nofollow,
    file_lock,
    find_link,
    utc_stamp,
)
from pytest_skilllift.week.guard import NotAWeek, check_week_dir
from pytest_skilllift.week.shards import ShardPlan, ShardPlanError, read_plan
from pytest_skilllift.week.spend import read_spend, update_spend

_TMP_PREFIX = ".merge-"
#: At most this many run ids are listed per shard in messages (all are in merge.json).
SHOWN = 10


class MergeRefused(Exception):
    """The shards cannot be merged; ``problems`` says why, each with the way out."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = list(problems)


def _files(run_dir: Path) -> dict[str, str]:
    """Relative path → SHA-256 of every file of a run directory (the lock excluded). A link
    in it refuses the merge (:class:`~pytest_skilllift.week.files.WeekLinkError`): a merge
    never copies a link's target into OUT."""
    link = find_link(run_dir)
    if link is not None:
        raise MergeRefused([f"{WeekLinkError(link, 'and is never copied')}"])
    out: dict[str, str] = {}
    for current, _dirs, names in os.walk(run_dir):
        for name in names:
            path = Path(current) / name
            rel = path.relative_to(run_dir).as_posix()
            if rel == LOCK_FILE:
                continue
            digest = hashlib.sha256()
            with path.open("rb") as fh:
                while chunk := fh.read(1 << 20):
                    digest.update(chunk)
            out[rel] = digest.hexdigest()
    return dict(sorted(out.items()))


@dataclass(frozen=True)
class RunCopy:
    """One copy of a run: where it is, its generation files and its grading files."""

    source: Path  # the week directory holding it
    generation: dict[str, str]
    grading: dict[str, str]

    @classmethod
    def of(cls, week_dir: Path, run_id: str) -> RunCopy:
        """The run's files in ``week_dir``, split into generation and grading."""
        files = _files(week_dir / run_id)
        gen = {k: v for k, v in files.items() if k not in GRADING_FILES}
        grading = {k: v for k, v in files.items() if k in GRADING_FILES}
        return cls(week_dir, gen, grading)

    @property
    def graded(self) -> bool:
        """Whether the copy has its grades."""
        return GRADES_FILE in self.grading


def _run_dirs(week_dir: Path, incomplete: list[tuple[Path, str]]) -> list[str]:
    """The finished runs of a week directory, as paths relative to it: the lift's run
    directories and the trigger runs under ``triggers/``. A directory without ``run.json``
    that holds more than its lock (a run that never finished) goes to ``incomplete``."""
    out: list[str] = []
    for folder, prefix in ((week_dir, ""), (week_dir / TRIGGERS_DIR, f"{TRIGGERS_DIR}/")):
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.is_symlink() and not entry.name.startswith("."):
                raise MergeRefused([f"{WeekLinkError(Path(entry.path), '(a run folder)')}"])
            if not entry.is_dir() or entry.name.startswith(".") or (
                    not prefix and entry.name in (TRIGGERS_DIR, VIEW_DIR)):
                continue
            if (Path(entry.path) / RUN_FILE).is_file():
                out.append(prefix + entry.name)
            elif any(c.name != LOCK_FILE for c in Path(entry.path).iterdir()):
                incomplete.append((week_dir, prefix + entry.name))
            # else only a lock: a run that never started (the spend cap), not a torn one
    return out


def _differ(a: dict[str, str], b: dict[str, str]) -> list[str]:
    return sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))


@dataclass
class MergeResult:
    """What a merge did, and what the week still lacks."""

    out: Path
    shards: list[tuple[Path, str, int]] = field(default_factory=list)  # path, "I/N", runs
    copied: list[str] = field(default_factory=list)
    #: Runs whose copy in OUT was replaced by a graded copy of the same generation.
    updated: list[str] = field(default_factory=list)
    unchanged: int = 0
    #: Planned runs in no shard: shard index → run ids.
    missing: dict[int, list[str]] = field(default_factory=dict)
    #: Shard indices of the plan never given to any merge into OUT.
    shards_not_merged: list[int] = field(default_factory=list)
    #: Run directories without run.json (a run that never finished), per shard path.
    incomplete: list[tuple[Path, str]] = field(default_factory=list)
    planned: int = 0
    not_run_spend_cap: list[str] = field(default_factory=list)

    @property
    def n_missing(self) -> int:
        """Runs of the plan that no shard had."""
        return sum(len(v) for v in self.missing.values())

    def lines(self) -> list[str]:
        """A report for a person: what was merged, and every missing run by shard."""
        out = [f"merged {len(self.shards)} shard(s) into {self.out}: "
               f"{len(self.copied)} run(s) copied, {len(self.updated)} replaced by a graded "
               f"copy, {self.unchanged} already there"]
        for path, shard, runs in self.shards:
            out.append(f"  {path}: shard {shard or '(not sharded)'}, {runs} run(s)")
        for path, run_id in self.incomplete:
            out.append(f"  not copied: {path}/{run_id} has no run.json (the run never "
                       "finished; rerun that shard to finish it)")
        if self.planned:
            have = self.planned - self.n_missing
            out.append(f"the week plans {self.planned} run(s): {have} present, "
                       f"{self.n_missing} missing from every shard")
        for index, ids in sorted(self.missing.items()):
            shown = ", ".join(ids[:SHOWN]) + (f" … ({len(ids) - SHOWN} more in "
                                              f"{MERGE_FILE})" if len(ids) > SHOWN else "")
            never = " (that shard was never merged)" if index in self.shards_not_merged else ""
            out.append(f"  missing, shard {index}{never}: {len(ids)} run(s): {shown}")
        if self.not_run_spend_cap:
            out.append(f"  {len(self.not_run_spend_cap)} of the missing run(s) were not run: "
                       "spend cap")
        return out

    def to_json(self, plan: ShardPlan | None, merged: list[dict[str, Any]]) -> dict[str, Any]:
        """The merge as its record stores it, with the plan and the shards merged."""
        return {
            "updated_utc": utc_stamp(),
            "plan": plan.to_json() if plan is not None else None,
            "shards": merged,
            "planned_runs": self.planned,
            "missing": {str(k): v for k, v in sorted(self.missing.items())},
            "shards_not_merged": self.shards_not_merged,
        }


def _read_merge(out: Path) -> dict[str, Any]:
    try:
        data = json.loads((out / MERGE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _plan_difference(a: ShardPlan, b: ShardPlan) -> str:
    if a.shard.count != b.shard.count:
        return f"{a.shard.count} shards against {b.shard.count}"
    only_a = sorted(set(a.runs) - set(b.runs))
    only_b = sorted(set(b.runs) - set(a.runs))
    moved = sorted(r for r in set(a.runs) & set(b.runs) if a.runs[r] != b.runs[r])
    parts = []
    if only_a:
        parts.append(f"{len(only_a)} run(s) only in the first (e.g. {only_a[0]})")
    if only_b:
        parts.append(f"{len(only_b)} run(s) only in the second (e.g. {only_b[0]})")
    if moved:
        parts.append(f"{len(moved)} run(s) in another shard (e.g. {moved[0]})")
    return "; ".join(parts) or "the same runs"


def _identity_problems(week_dirs: Sequence[Path]) -> tuple[list[str], Any]:
    """Differences between the week.json identities (the first one found is the reference).

    Returns (problems, the reference record or None). Weeks without week.json (the qdrant
    pipeline's, or older ones) are not compared."""
    from pytest_skilllift.week import identity as ident

    problems: list[str] = []
    ref: Any = None
    ref_dir: Path | None = None
    for week_dir in week_dirs:
        try:
            record = ident.read_week_record(week_dir)
        except ident.WeekFileError as exc:
            problems.append(str(exc))
            continue
        if record is None:
            continue
        if ref is None:
            ref, ref_dir = record, week_dir
            continue
        diffs = ident.differences(ref.identity, record.identity)
        if diffs:
            named = "; ".join(d.describe() for d in diffs)
            problems.append(f"{week_dir} was measured under another identity than {ref_dir} "
                            f"(week.json): {named}. The shards of a week run with the same "
                            "settings, CLI, judge, prompts and skills; rerun the odd shard "
                            "with the others'")
    return problems, ref


def merge_shards(out: Path, shards: Sequence[Path]) -> MergeResult:
    """Merge ``shards`` into ``out`` (see the module docstring); :class:`MergeRefused` when
    they cannot be merged, before anything is copied. Holds ``OUT``'s merge lock throughout:
    concurrent merges into one directory take turns."""
    out = Path(out)
    try:
        check_week_dir(out, "OUT")
    except NotAWeek as exc:
        raise MergeRefused([str(exc)]) from None
    with file_lock(out.absolute().parent / MERGE_LOCK.format(name=out.absolute().name)):
        return _merge_locked(out, shards)


def _merge_locked(out: Path, shards: Sequence[Path]) -> MergeResult:
    problems: list[str] = []
    shards = list(dict.fromkeys(Path(s) for s in shards))  # the same path twice is one
    for s in shards:
        if not s.is_dir():
            problems.append(f"{s}: not a directory (a shard's week directory, as pytest "
                            "--skill-lift --skill-lift-shard=I/N wrote it)")
        elif out.exists() and s.resolve() == out.resolve():
            problems.append(f"{s}: is the output directory itself; merge into another one")
    if problems:
        raise MergeRefused(problems)

    # -- the split -----------------------------------------------------------------------------
    previous = _read_merge(out)
    plans: list[tuple[Path, ShardPlan | None]] = []
    for s in shards:
        try:
            plans.append((s, read_plan(s)))
        except ShardPlanError as exc:
            problems.append(str(exc))
    ref_plan: ShardPlan | None = None
    ref_src = ""
    if isinstance(previous.get("plan"), dict):
        try:
            ref_plan = ShardPlan.from_json(previous["plan"], str(out / MERGE_FILE))
            ref_src = f"{out} (merged before)"
        except ShardPlanError as exc:
            problems.append(str(exc))
    for s, plan in plans:
        if plan is None:
            continue
        if ref_plan is None:
            ref_plan, ref_src = plan, str(s)
        elif plan.runs != ref_plan.runs or plan.shard.count != ref_plan.shard.count:
            problems.append(f"{s} was split from another week than {ref_src}: "
                            f"{_plan_difference(ref_plan, plan)}. Shards of one week come from "
                            "the same prompt files, models, repetitions and week directory "
                            "name (--skill-lift-out)")

    # -- the identity --------------------------------------------------------------------------
    id_problems, ref_record = _identity_problems([*([out] if out.is_dir() else []), *shards])
    problems += id_problems
    if problems:
        raise MergeRefused(problems)

    # -- the runs ------------------------------------------------------------------------------
    result = MergeResult(out=out)
    copies: dict[str, list[RunCopy]] = {}
    for s, plan in plans:
        n = 0
        for rel in _run_dirs(s, result.incomplete):
            copies.setdefault(rel, []).append(RunCopy.of(s, rel))
            n += 1
        result.shards.append((s, str(plan.shard) if plan else "", n))
    actions: list[tuple[str, RunCopy, bool]] = []  # run id, copy to install, replaces OUT's
    for run_id, found in sorted(copies.items()):
        existing = RunCopy.of(out, run_id) if (out / run_id / RUN_FILE).is_file() else None
        every = ([existing] if existing else []) + found
        gen_ref = every[0]
        conflict = ""
        for c in every[1:]:
            diff = _differ(gen_ref.generation, c.generation)
            if diff:
                conflict = (f"run {run_id} was generated differently in {gen_ref.source} and "
                            f"{c.source} (files differ: {', '.join(diff)})")
                break
        if not conflict:
            graded = [c for c in every if c.graded]
            for c in graded[1:]:
                diff = _differ(graded[0].grading, c.grading)
                if diff:
                    conflict = (f"run {run_id} was graded differently in {graded[0].source} "
                                f"and {c.source} (files differ: {', '.join(diff)})")
                    break
        if conflict:
            problems.append(conflict + ". Keep one: delete that run's directory from the "
                            "shard you do not trust, then merge again")
            continue
        best = next((c for c in every if c.graded), every[0])
        if existing is None:
            actions.append((run_id, best, False))
        elif best is not existing and _differ(existing.grading, best.grading):
            actions.append((run_id, best, True))
        else:
            result.unchanged += 1
    if problems:
        raise MergeRefused(problems)

    # -- copy ----------------------------------------------------------------------------------
    out.mkdir(parents=True, exist_ok=True)
    for stale in [*out.glob(f"{_TMP_PREFIX}*"), *out.glob(f"{TRIGGERS_DIR}/{_TMP_PREFIX}*")]:
        shutil.rmtree(stale, ignore_errors=True)  # left by an interrupted merge
    for run_id, copy, replaces in actions:
        target = out / run_id
        target.parent.mkdir(parents=True, exist_ok=True)
        # A run directory is replaced whole, so not atomic_write_* (one file each): copied
        # beside it, then renamed into place.
        tmp = target.parent / f"{_TMP_PREFIX}{target.name}"
        copy_tree_nofollow(copy.source / run_id, tmp, skip=frozenset({LOCK_FILE}))
        if replaces:
            old = target.parent / f"{_TMP_PREFIX}old-{target.name}"
            os.replace(target, old)
            os.replace(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
            result.updated.append(run_id)
        else:
            if target.exists():  # an empty or unfinished directory of that name
                shutil.rmtree(target)
            os.replace(tmp, target)
            result.copied.append(run_id)

    # -- what is missing, the records ----------------------------------------------------------
    merged = [m for m in previous.get("shards", []) if isinstance(m, dict)]
    for s, shard, n_runs in result.shards:
        record = {"path": str(s), "shard": shard, "runs": n_runs, "merged_utc": utc_stamp()}
        merged = [m for m in merged if m.get("path") != str(s)] + [record]
    # In shard order, whatever order the shards were given in: merging is idempotent.
    merged.sort(key=lambda m: (int(str(m.get("shard") or "0/0").split("/")[0]),
                               str(m.get("path", ""))))
    if ref_plan is not None:
        result.planned = len(ref_plan.runs)
        for run_id, index in sorted(ref_plan.runs.items()):
            if not (out / run_id / RUN_FILE).is_file():
                result.missing.setdefault(index, []).append(run_id)
        seen = {str(m.get("shard", "")).split("/")[0] for m in merged}
        result.shards_not_merged = [i for i in range(1, ref_plan.shard.count + 1)
                                    if str(i) not in seen]
    not_run: list[str] = []
    cap: float | None = None
    for s in shards:
        rec = read_spend(s)
        if rec is not None:
            not_run += rec.not_run_spend_cap
            cap = rec.cap_usd if cap is None else cap
    spend = update_spend(out, cap, not_run)
    result.not_run_spend_cap = list(spend.not_run_spend_cap)
    atomic_write_json(out / MERGE_FILE, result.to_json(ref_plan, merged))
    if ref_record is not None:
        _write_identity(out, ref_record, [shard for _, shard, _ in result.shards])
    return result



def _write_identity(out: Path, record: Any, shards: Sequence[str]) -> None:
    """OUT's week.json: the shards' common identity and verdict settings, no longer a shard;
    the merge logged in its changes (once per set of shards)."""
    import dataclasses

    from pytest_skilllift.week import identity as ident

    with ident.locked(out):
        current = ident.read_week_record(out)
        base = current if current is not None else dataclasses.replace(
            record, shard=None, changes=list(record.changes), runs=None)
        what = "merged from shards " + ", ".join(sorted({s for s in shards if s}))
        if any(c.get("what") == what for c in base.changes if isinstance(c, dict)):
            return
        base.changes.append({"at": utc_stamp(), "what": what})
        base.updated_utc = utc_stamp()
        ident.write_week_record(out, base)
