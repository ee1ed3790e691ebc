"""Spend cap and shards: the week's spend next to its ``--skill-lift-max-spend`` cap (with the
runs the cap kept from starting), and for a sharded week which shards it holds and which
planned runs are missing. Both are absent (null) for a week that used neither."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from pytest_skilllift.report.markdown import money
from pytest_skilllift.week.files import MERGE_FILE, SHARD_FILE, SPEND_FILE

if TYPE_CHECKING:
    from pathlib import Path

    from pytest_skilllift.report.context import Context
    from pytest_skilllift.week.spend import SpendRecord

#: At most this many missing run ids per shard in the markdown (all are in scorecard.json).
SHOWN = 20


class SpendCap(TypedDict):
    """The week's spend beside its cap, and the runs the cap kept from starting."""
    cap_usd: float | None
    #: Generation + judge, from the week's run files (what the cap is checked against).
    spent_usd: float
    generation_usd: float
    judge_usd: float
    reached: bool
    #: Runs the cap kept from starting that the week still lacks.
    not_run_spend_cap: int
    not_run: list[str]


class MergedShard(TypedDict):
    """One shard merged into the week, with its number of runs."""
    shard: str
    runs: int


class Shards(TypedDict):
    """The week's shard plan: its shards, the runs planned and those no shard brought."""
    count: int
    #: This week directory's own shard ("I/N"), or "" for a merged week.
    shard: str
    merged: list[MergedShard]
    planned_runs: int
    missing_runs: int
    #: Shard index → the planned run ids no shard brought.
    missing: dict[str, list[str]]
    shards_not_merged: list[int]


class Data(TypedDict):
    """The Spend cap and shards section's keys in scorecard.json."""
    spend: SpendCap | None
    shards: Shards | None


def _read_spend(week_dir: Path) -> SpendRecord | None:
    """The week's spend.json (None without one: week.spend, the session side, then stays
    unimported — most weeks never had a cap)."""
    if not (week_dir / SPEND_FILE).exists():
        return None
    from pytest_skilllift.week.spend import read_spend

    return read_spend(week_dir)


def _spend(ctx: Context) -> SpendCap | None:
    record = _read_spend(ctx.week.week_dir)
    if record is None:
        return None
    from pytest_skilllift.week.spend import SpendMeter

    now = SpendMeter(ctx.week.week_dir).spent()
    cap = record.cap_usd
    return {"cap_usd": cap, "spent_usd": now.total_usd, "generation_usd": now.generation_usd,
            "judge_usd": now.judge_usd,
            "reached": cap is not None and (now.total_usd >= cap
                                            or bool(record.not_run_spend_cap)),
            "not_run_spend_cap": len(record.not_run_spend_cap),
            "not_run": list(record.not_run_spend_cap)}


def _shards(ctx: Context) -> Shards | None:
    import json

    week_dir = ctx.week.week_dir
    try:
        merge = json.loads((week_dir / MERGE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        merge = None
    if isinstance(merge, dict) and isinstance(merge.get("plan"), dict):
        plan = merge["plan"]
        missing = {str(k): list(v) for k, v in (merge.get("missing") or {}).items()}
        return {"count": int(plan.get("count", 0)), "shard": "",
                "merged": [{"shard": str(m.get("shard", "")), "runs": int(m.get("runs", 0))}
                           for m in merge.get("shards", []) if isinstance(m, dict)],
                "planned_runs": int(merge.get("planned_runs", 0)),
                "missing_runs": sum(len(v) for v in missing.values()),
                "missing": missing,
                "shards_not_merged": [int(i) for i in merge.get("shards_not_merged", [])]}
    if not (week_dir / SHARD_FILE).exists():
        return None  # not a shard (week.shards, the session side, stays unimported)
    from pytest_skilllift.week.shards import ShardPlanError, read_plan

    try:
        own = read_plan(week_dir)
    except ShardPlanError:
        own = None
    if own is None:
        return None
    mine = set(own.mine)
    lacking = sorted(r for r in mine if not (week_dir / r / "run.json").is_file())
    return {"count": own.shard.count, "shard": str(own.shard), "merged": [],
            "planned_runs": len(mine), "missing_runs": len(lacking),
            "missing": {str(own.shard.index): lacking} if lacking else {},
            "shards_not_merged": []}


def build(ctx: Context) -> Data:
    """The Spend cap and shards section's scorecard.json keys, from the week's numbers."""
    return {"spend": _spend(ctx), "shards": _shards(ctx)}


def not_run_spend_cap(ctx: Context) -> int:
    """``coverage.not_run_spend_cap``: runs the spend cap kept from starting."""
    record = _read_spend(ctx.week.week_dir)
    return len(record.not_run_spend_cap) if record is not None else 0


def not_run_outage(ctx: Context) -> int:
    """``coverage.not_run_outage``: runs the circuit breaker held back after an outage."""
    record = _read_spend(ctx.week.week_dir)
    return len(record.not_run_outage) if record is not None else 0


def render(card: Data) -> list[str]:
    """The Spend cap and shards section of scorecard.md, as markdown lines."""
    L: list[str] = []
    spend = card.get("spend")
    if spend is not None:
        L.append("## Spend cap\n")
        cap = spend["cap_usd"]
        L.append(f"- spent: **{money(spend['spent_usd'])}** of the **{money(cap)}** cap "
                 f"(generation {money(spend['generation_usd'])}, judge "
                 f"{money(spend['judge_usd'])}; from the week's run files)")
        if spend["not_run_spend_cap"]:
            L.append(f"- cap reached: no new run started after it; **"
                     f"{spend['not_run_spend_cap']} run(s) not run: spend cap** (listed in "
                     f"`{SPEND_FILE}`; raise `--skill-lift-max-spend` and run again to finish "
                     "the week)")
        elif spend["reached"]:
            L.append("- cap reached, after every run of the week had started")
        L.append("")
    shards = card.get("shards")
    if shards is not None:
        L.append("## Shards\n")
        if shards["shard"]:
            L.append(f"- this is shard **{shards['shard']}**: {shards['planned_runs']} of the "
                     "week's runs; merge the shards with `skilllift merge`")
        else:
            got = ", ".join(f"{m['shard'] or '(not sharded)'} ({m['runs']} runs)"
                            for m in shards["merged"])
            L.append(f"- merged from {len(shards['merged'])} shard director(ies) of "
                     f"{shards['count']} shards: {got}")
            L.append(f"- planned runs: {shards['planned_runs']}; missing from every shard: "
                     f"**{shards['missing_runs']}**")
            if shards["shards_not_merged"]:
                never = ", ".join(f"{i}/{shards['count']}" for i in shards["shards_not_merged"])
                L.append(f"- shards never merged: **{never}**")
        for index, ids in sorted(shards["missing"].items(), key=lambda kv: int(kv[0])):
            shown = ", ".join(f"`{r}`" for r in ids[:SHOWN])
            more = f" … and {len(ids) - SHOWN} more (scorecard.json)" if len(ids) > SHOWN \
                else ""
            L.append(f"- missing, shard {index}: {len(ids)} run(s): {shown}{more}")
        L.append("")
    return L
