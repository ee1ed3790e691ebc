"""Provenance: the exact model builds, CLI versions and skills commits behind the numbers, and
every mismatch among them (a model that changed mid-week is a different measurement); and
which judge graded the week — model, prompt version, and whether a conftest.py overrode the
``skill_lift_judge`` fixture (each graded run's ``grades.json`` records them; a week written
by another tool has no ``grades.json`` and shows no judge lines)."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from pytest_skilllift.model import PINNED_CLI_VERSION, cli_version_mismatch
from pytest_skilllift.report.markdown import md_table
from pytest_skilllift.week.files import GRADES_FILE

if TYPE_CHECKING:
    from pytest_skilllift.report.card import Scorecard
    from pytest_skilllift.report.context import Context


class Window(TypedDict):
    start: str
    end: str


class JudgeProvenance(TypedDict):
    """Graded runs counted by the judge that graded them."""

    graded_runs: int
    #: judge model → graded runs (``unknown`` when not recorded).
    models: dict[str, int]
    #: judge prompt version → graded runs (``unknown`` when not recorded).
    prompt_versions: dict[str, int]
    #: Runs graded through an overridden ``skill_lift_judge``, and by which class.
    overridden_runs: int
    overrides: dict[str, int]


class Provenance(TypedDict):
    #: model label → distinct snapshot strings the transcripts report.
    snapshots: dict[str, list[str]]
    #: model label → distinct model ids it was requested as.
    model_ids: dict[str, list[str]]
    cli_versions: list[str]
    #: Every distinct skills_sha of the week.
    skills_commits: list[str]
    #: skill family → its skills_sha values; more than one for a family = it changed mid-week.
    skills_commits_by_family: dict[str, list[str]]
    window: Window | None
    mismatches: list[str]
    judge: JudgeProvenance


class Data(TypedDict):
    provenance: Provenance


def build(ctx: Context) -> Data:
    week = ctx.week
    mismatches = []
    for label, snaps in week.snapshots.items():
        if len(snaps) > 1:
            mismatches.append(f"model {label}: more than one snapshot ({', '.join(snaps)})")
    for label, ids in week.model_ids.items():
        if len(ids) > 1:
            mismatches.append(f"model {label}: requested as more than one model id "
                              f"({', '.join(ids)})")
        for snap in week.snapshots.get(label, []):
            # A dated snapshot extends the requested id; anything else is a different build.
            if not any(snap.startswith(i) for i in ids):
                mismatches.append(f"model {label}: requested {', '.join(ids)} but the "
                                  f"transcripts report {snap}")
    if len(week.cli_versions) > 1:
        mismatches.append("more than one CLI version")
    for version in week.docker_cli_versions:
        if cli_version_mismatch(version):
            mismatches.append(f"docker image CLI {version} is not the pinned "
                              f"{PINNED_CLI_VERSION}")
    for family, shas in week.skills_shas_by_family.items():
        # One hash per family is normal (a tree hash per family without git); two for one
        # family means its files changed while the week ran.
        if len(shas) > 1:
            mismatches.append(f"skill family {family or '(unnamed)'}: more than one skills "
                              f"commit ({', '.join(shas)})")
    return {"provenance": {
        "snapshots": week.snapshots, "model_ids": week.model_ids,
        "cli_versions": week.cli_versions,
        "skills_commits": week.skills_shas,
        "skills_commits_by_family": week.skills_shas_by_family,
        "window": ({"start": week.window[0], "end": week.window[1]} if week.window else None),
        "mismatches": mismatches,
        "judge": judge_of(week.week_dir),
    }}


def judge_of(week_dir: Path) -> JudgeProvenance:
    """Tally every run's ``grades.json`` in ``week_dir`` (an unrecorded model or prompt
    version counts under ``"unknown"``)."""
    models: Counter[str] = Counter()
    versions: Counter[str] = Counter()
    overrides: Counter[str] = Counter()
    graded = overridden = 0
    try:
        entries = list(os.scandir(week_dir))
    except OSError:
        entries = []
    for entry in entries:
        if not entry.is_dir():
            continue
        try:
            with open(os.path.join(entry.path, GRADES_FILE), encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict):
            continue
        graded += 1
        models[str(data.get("judge_model") or "unknown")] += 1
        versions[str(data.get("judge_prompt_version") or "unknown")] += 1
        if data.get("judge_overridden"):
            overridden += 1
            overrides[str(data.get("judge_impl") or "unknown")] += 1
    return {"graded_runs": graded, "models": dict(sorted(models.items())),
            "prompt_versions": dict(sorted(versions.items())),
            "overridden_runs": overridden, "overrides": dict(sorted(overrides.items()))}


def _counts(values: dict[str, int]) -> str:
    return ", ".join(f"`{v}` ({n} runs)" for v, n in values.items()) or "_(unknown)_"


def judge_lines(judge: JudgeProvenance | None) -> list[str]:
    """The judge's bullet lines (none when no run of the week was graded by this tool)."""
    if not judge or not judge.get("graded_runs"):
        return []
    lines = [f"- judge model(s): {_counts(judge['models'])}",
             f"- judge prompt version(s): {_counts(judge['prompt_versions'])}"]
    if judge.get("overridden_runs"):
        lines.append(f"- ⚠ judge overridden (a `skill_lift_judge` fixture in conftest.py) for "
                     f"{judge['overridden_runs']} of {judge['graded_runs']} graded runs: "
                     + ", ".join(f"`{k}`" for k in judge.get("overrides", {})))
    else:
        lines.append("- judge: the configured one (`skill_lift_judge` not overridden)")
    if len(judge["models"]) > 1 or len(judge["prompt_versions"]) > 1:
        lines.append("- ⚠ more than one judge model or prompt version graded this week — "
                     "grades are not all comparable.")
    return lines


def render(card: Scorecard) -> list[str]:
    p = card.get("provenance", {})
    L = ["## Provenance\n", "Exact model builds and versions these numbers were produced with:\n"]
    snaps = p.get("snapshots", {})
    order = card.get("model_order", [])
    listed = list(order) + sorted(set(snaps) - set(order))
    rows = []
    for m in listed:
        s = snaps.get(m, [])
        if not s:
            rows.append([m, "(unknown)"])
        elif len(s) == 1:
            rows.append([m, f"`{s[0]}`"])
        else:
            rows.append([m, f"⚠ multiple (`{'`, `'.join(s)}`) — model changed mid-week"])
    L += md_table(["model", "exact snapshot string"], rows)
    L.append("")
    cli = p.get("cli_versions", [])
    sha = p.get("skills_commits", [])
    L.append(f"- CLI version(s): {', '.join(f'`{v}`' for v in cli) or '_(unknown)_'}")
    L.append(f"- skills commit(s): {', '.join(f'`{v}`' for v in sha) or '_(unknown)_'}")
    w = p.get("window")
    if w:
        lo, hi = w["start"], w["end"]
        L.append(f"- run window (UTC): {'`' + lo + '`' if lo == hi else f'`{lo}` – `{hi}`'}")
    ids = p.get("model_ids") or {}
    if ids:
        L.append("- requested model id(s): " + ", ".join(
            f"{m} → {', '.join(f'`{i}`' for i in v)}" for m, v in ids.items()))
    for mm in p.get("mismatches", []):
        if mm.startswith("model ") and "requested" in mm:  # snapshot splits are in the table
            L.append(f"- ⚠ {mm}")
    if len(cli) > 1:
        L.append("- ⚠ more than one CLI version present — versions were not pinned across runs.")
    for family, shas in p.get("skills_commits_by_family", {}).items():
        if len(shas) > 1:
            L.append(f"- ⚠ skill family {family or '(unnamed)'} has more than one skills commit "
                     f"({', '.join(f'`{v}`' for v in shas)}) — it changed mid-week.")
    L += judge_lines(p.get("judge"))
    L.append("- Note: an alias like `claude-sonnet-5` can float to a newer build without "
             "changing name; the run window is the only correlate for such a silent swap. "
             "Pass a dated model id if byte-level pinning matters.")
    L.append("")
    return L
