"""Provenance: the exact model builds, CLI versions and skills commits behind the numbers, and
every mismatch among them (a model that changed mid-week is a different measurement); the
judge that graded them, how (and whether a conftest.py overrode the ``skill_lift_judge``
fixture), and whether people have checked it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict

from pytest_skilllift.agents.registry import AGENTS
from pytest_skilllift.model import (
    CLAUDE_CODE,
    PINNED_CLI_VERSION,
    cli_version_mismatch,
    split_agent,
)
from pytest_skilllift.report.markdown import by_agent, md_table
from pytest_skilllift.week.identity import newest_of_same_rules

if TYPE_CHECKING:
    from pytest_skilllift.report.context import Context
    from pytest_skilllift.report.sections import header, judge


class Window(TypedDict):
    """When the runs ran: the first start and the last end (UTC)."""
    start: str
    end: str


class Provenance(TypedDict):
    #: model label → distinct snapshot strings the transcripts report.
    """The model builds, model ids, CLI versions and skills commits behind the numbers."""
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
    #: agent → the labels it ran (docs/agents.md); one ``claude-code`` entry in most weeks.
    agents: dict[str, list[str]]
    #: agent → distinct CLI versions its labels' runs report.
    cli_versions_by_agent: dict[str, list[str]]
    #: week.json's record of the with-skill@REF arm's revision (ref, kind, commit, tree).
    skills_revision: dict[str, str] | None


class Data(TypedDict):
    """The Provenance section's keys in scorecard.json."""
    provenance: Provenance


if TYPE_CHECKING:
    class Reads(Data, header.Data, judge.Data):
        """What ``render`` and ``judge_lines`` read of the scorecard: these keys, the head's
        and the judge's."""


def _agents(week: Any) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Labels by agent (from the requested model ids) and each agent's CLI versions."""
    labels: dict[str, list[str]] = {}
    versions: dict[str, set[str]] = {}
    for label, ids in week.model_ids.items():
        agent = split_agent(ids[0])[0] if ids else CLAUDE_CODE
        labels.setdefault(agent, []).append(label)
        versions.setdefault(agent, set()).update(week.cli_versions_by_model.get(label, ()))
    return labels, {a: sorted(v) for a, v in versions.items()}


def build(ctx: Context) -> Data:
    """The Provenance section's scorecard.json keys, from the week's numbers."""
    week = ctx.week
    mismatches = []
    agents, agent_clis = _agents(week)
    for label, snaps in week.snapshots.items():
        if len(snaps) > 1:
            mismatches.append(f"model {label}: more than one snapshot ({', '.join(snaps)})")
    for label, ids in week.model_ids.items():
        if len(ids) > 1:
            mismatches.append(f"model {label}: requested as more than one model id "
                              f"({', '.join(ids)})")
        for snap in week.snapshots.get(label, []):
            # A dated snapshot extends the requested id (less its agent); anything else is a
            # different build.
            if not any(snap.startswith(split_agent(i)[1]) for i in ids):
                mismatches.append(f"model {label}: requested {', '.join(ids)} but the "
                                  f"transcripts report {snap}")
    if agent_clis and len(agents) > 1:  # each agent is pinned on its own
        for agent, seen in agent_clis.items():
            if len(seen) > 1:
                mismatches.append(f"{agent}: more than one CLI version")
            pinned = AGENTS[agent].version if agent in AGENTS else ""
            for version in seen if pinned else ():
                if version != pinned:
                    mismatches.append(f"{agent} CLI {version} is not the pinned {pinned}")
    elif len(week.cli_versions) > 1:
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
        "mismatches": mismatches, "agents": agents, "cli_versions_by_agent": agent_clis,
        "skills_revision": recorded_revision(ctx),
    }}


def recorded_revision(ctx: Context) -> dict[str, str] | None:
    """week.json's record of the with-skill@REF revision (None: none, or unreadable)."""
    from pytest_skilllift.week.identity import WeekFileError, read_week_record

    try:
        record = read_week_record(ctx.week.week_dir)
    except WeekFileError:
        return None
    rev = record.identity.revision if record else None
    return dict(rev) if rev else None


def render(card: Reads) -> list[str]:
    """The Provenance section of scorecard.md, as markdown lines."""
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
    L += md_table(*by_agent(card, ["model", "exact snapshot string"], rows))
    L.append("")
    cli = p.get("cli_versions", [])
    sha = p.get("skills_commits", [])
    L.append(f"- CLI version(s): {', '.join(f'`{v}`' for v in cli) or '_(unknown)_'}")
    L.append(f"- skills commit(s): {', '.join(f'`{v}`' for v in sha) or '_(unknown)_'}")
    rev = p.get("skills_revision")
    if rev:
        what = (f"commit `{rev.get('commit', '')}`, skills tree `{rev.get('tree', '')}`"
                if rev.get("kind") == "git" else f"a directory, content `{rev.get('tree', '')}`")
        L.append(f"- with-skill@{rev.get('ref', '')}: {what}")
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
    agents = p.get("agents") or {}
    if len(agents) > 1 or any(a != CLAUDE_CODE for a in agents):
        versions_of = p.get("cli_versions_by_agent") or {}
        L.append("- agents: " + "; ".join(
            f"{a} ({', '.join(labels)}) CLI "
            f"{', '.join(f'`{v}`' for v in versions_of.get(a, [])) or '_(unknown)_'}"
            for a, labels in agents.items()))
        for mm in p.get("mismatches", []):
            if "CLI" in mm and not mm.startswith(("docker", "model ")):
                L.append(f"- ⚠ {mm}")
    elif len(cli) > 1:
        L.append("- ⚠ more than one CLI version present — versions were not pinned across runs.")
    for family, shas in p.get("skills_commits_by_family", {}).items():
        if len(shas) > 1:
            L.append(f"- ⚠ skill family {family or '(unnamed)'} has more than one skills commit "
                     f"({', '.join(f'`{v}`' for v in shas)}) — it changed mid-week.")
    L.append("- Note: an alias like `claude-sonnet-5` can float to a newer build without "
             "changing name; the run window is the only correlate for such a silent swap. "
             "Pass a dated model id if byte-level pinning matters.")
    L += judge_lines(card)
    L.append("")
    return L


def judge_lines(card: judge.Data) -> list[str]:
    """The judge's bullets: which judge graded, how, and whether people trust it, from the
    ``judge`` key (:mod:`.judge`)."""
    j = card.get("judge")
    if not j:
        return []
    L = []
    models = j["judge_models"]
    if models:
        L.append("- judge: " + ", ".join(f"`{m}` ({n} runs)" for m, n in models.items())
                 + " — prompt " + ", ".join(f"`{v}`" for v in j["prompt_versions"]))
        if len(models) > 1:
            L.append("- ⚠ more than one judge model graded this week — its numbers mix two "
                     "measurements (regrade with `skilllift judge WEEKDIR --fresh`)")
        versions = list(j["prompt_versions"])
        newest = newest_of_same_rules(versions) if len(versions) > 1 else None
        if newest is not None:
            older = ", ".join(f"`{v}`" for v in versions if v != newest)
            L.append(f"- judge prompts {older} and `{newest}` decide verdicts the same way; "
                     f"the runs graded with {older} have no judge's reasons (regrade them with "
                     "`skilllift judge WEEKDIR --fresh` for reasons throughout)")
        elif len(versions) > 1:
            L.append("- ⚠ more than one judge prompt version graded this week — grades are "
                     "not all comparable (regrade with `skilllift judge WEEKDIR --fresh`)")
    else:
        L.append("- judge: not recorded (no run has a grades.json)")
    if j["graded_runs"]:
        samples = ", ".join(f"{k} per run ({n} runs)" for k, n in j["samples_per_run"].items())
        calls = ("" if j["judge_calls"] is None else
                 f"; judge calls {j['judge_calls']} (incl. {j['tie_breaks']} tie-breaks)")
        L.append(f"- judge samples: {samples}{calls}")
        policies = j["evidence_policy"]
        if "flag" in policies:
            L.append(f"- ⚠ evidence policy **flag** ({policies['flag']} runs): a met/violated "
                     "whose quote is not in the answer still scores "
                     "(`--skill-lift-evidence=flag`)")
        else:
            L.append("- evidence policy: reject — a met/violated whose quote is not in the "
                     "answer scores nothing")
        if j["overridden_runs"]:
            L.append(f"- ⚠ judge overridden (a `skill_lift_judge` fixture in conftest.py) for "
                     f"{j['overridden_runs']} of {j['graded_runs']} graded runs: "
                     + ", ".join(f"`{k}`" for k in j["overrides"]))
        else:
            L.append("- judge: the configured one (`skill_lift_judge` not overridden)")
    t = j["trust"]
    if t["source"] is None:
        L.append("- judge trust: **unmeasured** — no human labels yet (`skilllift label` "
                 "then `skilllift judge-check`)")
    else:
        agreement = t["must_agreement"]
        kappa = t["kappa"]
        facts = (f"must agreement {'n/a' if agreement is None else f'{agreement:.3f}'} over "
                 f"{t['must_labels'] or 0} labelled musts, κ "
                 f"{'n/a' if kappa is None else f'{kappa:.2f}'}")
        L.append(f"- judge trust: **{t['state']}** — {facts} (judge-check "
                 f"{t['checked_utc'] or '?'})")
        if t["stale"]:
            L.append(f"- ⚠ the judge-check measured {', '.join(t['judge_models'])}, but this "
                     "week is now graded by another judge: run it again")
    return L
