"""Triggering: does each skill fire when it should, and stay quiet when it should not?

Reads ``<week>/triggers/triggers.csv`` (:mod:`pytest_skilllift.run.triggers`) and reports,
per model and skill family, over the trigger runs that ended in a measurement:

- recall = triggered should-trigger runs / should-trigger runs;
- precision = triggered should-trigger runs / all triggered runs;
- false-trigger rate (should-not runs that fired) and miss rate (should runs that did not),
  each rate with its 95% Wilson interval; the false triggers and misses by query;
- dormancy violations: should-not queries that fired at least once (a skill must stay
  dormant there: dotnet/skills' Vally contract, gate ``dormancy_violations==0``).

With several families installed at once (``--skill-lift-triggers-all``) it adds a confusion
table per model: which skill fired for queries that expected which skill.  Trigger runs
never enter the lift.  The section is empty (no markdown) when the week has no trigger runs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

import numpy as np

from pytest_skilllift.intervals import wilson_bounds
from pytest_skilllift.report.markdown import by_agent, cell, md_table
from pytest_skilllift.report.stats import cluster_bootstrap_rate
from pytest_skilllift.week.files import OK, TRIGGERS_CSV, TRIGGERS_DIR, read_trigger_table

if TYPE_CHECKING:
    from pytest_skilllift.report.context import Context

#: The confusion table's column (and row) for "no installed skill fired / none expected".
NONE = "none"

#: A rate's 95% Wilson interval ``[low, high]`` (both None when the rate has no runs).
Interval = list[float | None]


class MissedQuery(TypedDict):
    """A should-trigger query with runs where the family did not fire."""

    q: int
    #: The trigger file's stem (the family's own name for ``<family>.json``).
    file: str
    query: str
    #: Runs of this query that missed, of ``of`` measured runs.
    runs: int
    of: int


class FalseTrigger(MissedQuery):
    """A should-not query with runs where the family fired, and what fired in them."""

    fired: list[str]


class ExcludedRun(TypedDict):
    """A trigger run that ended without a measurement (never counted as a miss)."""

    run_id: str
    q: int
    file: str
    status: str
    reason: str


class FamilyTriggers(TypedDict):
    """``triggers.<model>.<family>``: the family's trigger numbers under one model."""

    recall: float | None
    recall_wilson95: Interval
    #: The same rates' 95% intervals resampling whole queries (a query's reps agree).
    recall_cluster95: Interval
    precision: float | None
    precision_wilson95: Interval
    precision_cluster95: Interval
    false_trigger_rate: float | None
    false_trigger_rate_wilson95: Interval
    miss_rate: float | None
    miss_rate_wilson95: Interval
    #: Measured runs (queries × reps) that should / should not have fired.
    n_should: int
    n_should_not: int
    true_triggers: int
    n_false_triggers: int
    n_misses: int
    false_triggers: list[FalseTrigger]
    #: Must stay dormant (the dotnet/skills Vally contract): should-not queries with at least
    #: one run that fired the skill (``false_triggers`` lists them by query).
    dormancy_violations: int
    misses: list[MissedQuery]
    #: Triggered runs whose first tool call was something else (they count as triggers).
    triggered_after_other_tools: int
    #: Skills outside the installed families (the CLI's built-ins) → runs that launched them.
    other_skills_fired: dict[str, int]
    excluded: list[ExcludedRun]
    #: Distinct queries (file, index) of this family.
    queries: int


class ConfusionQuery(TypedDict):
    """One trigger query that fired the wrong skill (or none): which fired, in how many runs."""
    family: str
    file: str
    q: int
    query: str
    expected: str
    runs: int
    #: fired skill (or ``none``) → runs.
    fired: dict[str, int]


class Confusion(TypedDict):
    """``trigger_confusion.<model>``: expected skill × fired skill over runs that had more
    than one family installed (``--skill-lift-triggers-all``)."""

    skills: list[str]
    #: expected skill → fired skill → runs (a run that fired two skills counts in both).
    matrix: dict[str, dict[str, int]]
    runs: int
    routed_correctly: int
    routing_accuracy: float | None
    routing_accuracy_wilson95: Interval
    multi_fired_runs: int
    queries: list[ConfusionQuery]


class TriggerRuns(TypedDict):
    """The trigger runs: how many, measured, excluded, their turn caps and their table."""
    total: int
    measured: int
    excluded: int
    #: The ``--max-turns`` values the trigger runs were stopped at.
    max_turns: list[str]
    #: The table's path relative to the week directory (None when there are no runs).
    table: str | None


class Data(TypedDict):
    #: model → family → numbers.
    """The Triggering section's keys in scorecard.json."""
    triggers: dict[str, dict[str, FamilyTriggers]]
    trigger_confusion: dict[str, Confusion]
    trigger_runs: TriggerRuns


Row = dict[str, str]


def _rate(k: int, n: int) -> tuple[float | None, Interval]:
    ci = wilson_bounds(k, n)
    return (None, [None, None]) if ci is None else (k / n, list(ci))


def _query_interval(rows: list[Row], hit: Callable[[Row], bool],
              trial: Callable[[Row], bool]) -> Interval:
    """A rate's 95% interval resampling whole queries (``stats.cluster_bootstrap_rate``)."""
    k: dict[tuple[str, int], int] = defaultdict(int)
    n: dict[tuple[str, int], int] = defaultdict(int)
    for r in rows:
        key = (_file(r), _q(r))
        n[key] += trial(r)
        k[key] += hit(r) and trial(r)
    keys = sorted(n)
    lo, hi = cluster_bootstrap_rate(np.array([k[q] for q in keys]),
                                    np.array([n[q] for q in keys]))
    return [lo, hi]


def _split(value: str | None) -> list[str]:
    return [x for x in (value or "").split(";") if x]


def _file(row: Row) -> str:
    """The trigger file (stem) a row came from; the family's own name for the usual
    ``evals/triggers/<family>.json``."""
    return row.get("trigger_set") or row.get("family", "")


def _q(row: Row) -> int:
    return int(row.get("query_index") or 0)


def _where(family: str, file: str, q: int) -> str:
    """``git-bisect q3``, naming the file too when it is not ``<family>.json``."""
    file = file or family
    return f"{family} q{q}" if file == family else f"{family} ({file}.json) q{q}"


def _expected(row: Row) -> str:
    if row.get("expected_skill"):
        return row["expected_skill"]
    return row["family"] if row.get("should_trigger") == "1" else NONE


def build(ctx: Context) -> Data:
    """The Triggering section's scorecard.json keys, from the week's numbers."""
    return trigger_data(ctx.week.week_dir)


def trigger_data(week_dir: Path) -> Data:
    """``triggers``, ``trigger_confusion`` and ``trigger_runs`` for scorecard.json.

    ``n_should``/``n_should_not`` count runs (queries × reps) that ended in a measurement;
    excluded runs are listed, never counted as misses.
    """
    rows = read_trigger_table(week_dir)
    groups: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for row in rows:
        groups[(row.get("model", ""), row.get("family", ""))].append(row)
    triggers: dict[str, dict[str, FamilyTriggers]] = {}
    for (label, family), group in sorted(groups.items()):
        triggers.setdefault(label, {})[family] = _family_numbers(group)
    excluded = sum(1 for r in rows if r.get("run_status") != OK)
    return {
        "triggers": triggers,
        "trigger_confusion": _confusion(rows),
        "trigger_runs": {
            "total": len(rows), "measured": len(rows) - excluded, "excluded": excluded,
            "max_turns": sorted({r.get("max_turns", "") for r in rows} - {""}),
            "table": f"{TRIGGERS_DIR}/{TRIGGERS_CSV}" if rows else None,
        },
    }


def _family_numbers(group: list[Row]) -> FamilyTriggers:
    ok = [r for r in group if r.get("run_status") == OK]
    should = [r for r in ok if r.get("should_trigger") == "1"]
    should_not = [r for r in ok if r.get("should_trigger") != "1"]
    tp = sum(1 for r in should if r.get("triggered") == "1")
    fp = sum(1 for r in should_not if r.get("triggered") == "1")
    fn = len(should) - tp
    recall, recall_ci = _rate(tp, len(should))
    precision, precision_ci = _rate(tp, tp + fp)
    ft_rate, ft_ci = _rate(fp, len(should_not))
    miss_rate, miss_ci = _rate(fn, len(should))
    return {
        "recall": recall, "recall_wilson95": recall_ci,
        "recall_cluster95": _query_interval(should, lambda r: r.get("triggered") == "1",
                                            lambda r: True),
        "precision": precision, "precision_wilson95": precision_ci,
        "precision_cluster95": _query_interval(ok, lambda r: r.get("triggered") == "1"
                                               and r.get("should_trigger") == "1",
                                               lambda r: r.get("triggered") == "1"),
        "false_trigger_rate": ft_rate, "false_trigger_rate_wilson95": ft_ci,
        "miss_rate": miss_rate, "miss_rate_wilson95": miss_ci,
        "n_should": len(should), "n_should_not": len(should_not),
        "true_triggers": tp, "n_false_triggers": fp, "n_misses": fn,
        "false_triggers": _false_triggers(should_not),
        "dormancy_violations": len(_false_triggers(should_not)),
        "misses": _misses(should),
        # Evidence that a load after other tool calls counts: triggered runs whose first
        # tool call was something else.
        "triggered_after_other_tools": sum(
            1 for r in ok if r.get("triggered") == "1"
            and (r.get("tools_before_skill") or "0") not in ("", "0")),
        "other_skills_fired": _other_skills(ok),
        "excluded": [{"run_id": r.get("run_id", ""), "q": _q(r), "file": _file(r),
                      "status": r.get("run_status", ""), "reason": r.get("run_error", "")}
                     for r in group if r.get("run_status") != OK],
        "queries": len({(_file(r), r.get("query_index")) for r in group}),
    }


def _by_query(rows: list[Row], want: str) -> list[tuple[Row, int, int, list[str]]]:
    """Per query (file, index), sorted: its first row, the runs where ``triggered == want``
    (at least one), all its runs, and the skills those runs fired."""
    per: dict[tuple[str, int], tuple[Row, list[int], list[str]]] = {}
    for r in rows:
        _, counts, fired = per.setdefault((_file(r), _q(r)), (r, [0, 0], []))
        counts[1] += 1
        if (r.get("triggered") or "0") == want:
            counts[0] += 1
            for f in _split(r.get("fired")) + _split(r.get("fired_other")):
                if f not in fired:
                    fired.append(f)
    return [(first, counts[0], counts[1], fired)
            for _, (first, counts, fired) in sorted(per.items()) if counts[0]]


def _false_triggers(should_not: list[Row]) -> list[FalseTrigger]:
    return [{"q": _q(r), "file": _file(r), "query": r.get("query", ""), "runs": runs,
             "of": of, "fired": fired} for r, runs, of, fired in _by_query(should_not, "1")]


def _misses(should: list[Row]) -> list[MissedQuery]:
    # A miss fired nothing of this family; other skills show under other_skills_fired.
    return [{"q": _q(r), "file": _file(r), "query": r.get("query", ""), "runs": runs,
             "of": of} for r, runs, of, _ in _by_query(should, "0")]


def _other_skills(rows: list[Row]) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for r in rows:
        for name in _split(r.get("fired_other")):
            counts[name] += 1
    return dict(sorted(counts.items()))


def _confusion(rows: list[Row]) -> dict[str, Confusion]:
    """Per model: expected skill (rows) × fired skill (columns), over runs that had more
    than one family installed.  A run that fired two skills counts in both columns."""
    out: dict[str, Confusion] = {}
    multi = [r for r in rows if r.get("run_status") == OK and len(_split(r.get("installed")))
             > 1]
    by_model: dict[str, list[Row]] = defaultdict(list)
    for r in multi:
        by_model[r.get("model", "")].append(r)
    for label, group in sorted(by_model.items()):
        skills = sorted({s for r in group for s in _split(r["installed"])})
        matrix: dict[str, dict[str, int]] = {}
        queries: dict[tuple[str, str, int], ConfusionQuery] = {}
        routed = 0
        multi_fired = 0
        for r in group:
            exp = _expected(r)
            fired = _split(r.get("fired"))
            cols = fired or [NONE]
            row = matrix.setdefault(exp, {})
            for c in cols:
                row[c] = row.get(c, 0) + 1
            # Routed right: the expected skill fired first (or nothing fired when none was).
            if (fired[:1] == [exp]) if exp != NONE else not fired:
                routed += 1
            multi_fired += len(fired) > 1
            key = (r["family"], _file(r), _q(r))
            q = queries.setdefault(key, {"family": r["family"], "file": key[1], "q": key[2],
                                         "query": r.get("query", ""), "expected": exp,
                                         "runs": 0, "fired": {}})
            q["runs"] += 1
            for c in cols:
                q["fired"][c] = q["fired"].get(c, 0) + 1
        acc, acc_ci = _rate(routed, len(group))
        out[label] = {
            "skills": skills, "matrix": matrix, "runs": len(group),
            "routed_correctly": routed, "routing_accuracy": acc,
            "routing_accuracy_wilson95": acc_ci, "multi_fired_runs": multi_fired,
            "queries": [queries[k] for k in sorted(queries)],
        }
    return out


# -- markdown ----------------------------------------------------------------------------------


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def _ci(pair: Interval, mark: str = "") -> str:
    lo, hi = pair
    return "" if lo is None or hi is None else f" [{lo:.2f}, {hi:.2f}]{mark}"


def render(card: Data) -> list[str]:
    """The Triggering section of scorecard.md, as markdown lines."""
    return render_triggering(card)


def render_triggering(data: Data) -> list[str]:
    """The "Triggering" section's markdown lines; nothing when the week has no trigger runs."""
    trig = data.get("triggers") or {}
    if not trig:
        return []
    runs = data["trigger_runs"]
    turns = ", ".join(runs["max_turns"]) or "the CLI's default"
    L = ["## Triggering\n",
         f"Trigger tests: each query run through the real CLI with the skill installed as "
         f"in the with-skill arm, stopped at --max-turns {turns}, no judge. A run is "
         "triggered when the transcript audit finds the skill loaded (Skill tool, or a Read "
         "of its files) — also after other tool calls. Rates are over runs (queries × reps) "
         "that ended in a measurement, with 95% Wilson intervals and, marked q, 95% "
         "intervals resampling whole queries (a query's reps agree more often than chance, so "
         "the q interval is the honest width); "
         f"{runs['measured']} of {runs['total']} runs measured. Trigger runs "
         "are not part of the lift.\n"]
    table = []
    for label in sorted(trig):
        for family, m in sorted(trig[label].items()):
            table.append((
                label, family,
                _pct(m["recall"]) + _ci(m["recall_wilson95"])
                + _ci(m.get("recall_cluster95", [None, None]), "q"),
                _pct(m["precision"]) + _ci(m["precision_wilson95"])
                + _ci(m.get("precision_cluster95", [None, None]), "q"),
                _pct(m["false_trigger_rate"]) + _ci(m["false_trigger_rate_wilson95"]),
                _pct(m["miss_rate"]) + _ci(m["miss_rate_wilson95"]),
                m["n_should"], m["n_should_not"], m["dormancy_violations"],
                len(m["excluded"]),
            ))
    L += md_table(*by_agent(data, ("model", "skill", "recall", "precision", "false-trigger rate",
                   "miss rate", "n should", "n should-not", "dormancy violations",
                   "excluded"), table))
    L.append("\n_Dormancy violations: should-not queries (`should_trigger: false`) that fired "
             "the skill in at least one run — each must stay dormant (dotnet/skills' Vally "
             "contract; gate `dormancy_violations==0`). They are listed by query under False "
             "triggers._")
    after = sum(m["triggered_after_other_tools"] for fam in trig.values() for m in fam.values())
    if after:
        L.append(f"\n{after} triggered run(s) loaded the skill after calling another tool "
                 "first; they count as triggers.")
    found: tuple[tuple[str, list[tuple[str, str, MissedQuery, list[str]]]], ...] = (
        ("False triggers — dormancy violations (should not have fired)",
         [(label, family, e, e["fired"]) for label in sorted(trig)
          for family, m in sorted(trig[label].items()) for e in m["false_triggers"]]),
        ("Misses (should have fired, did not)",
         [(label, family, e, []) for label in sorted(trig)
          for family, m in sorted(trig[label].items()) for e in m["misses"]]),
    )
    for title, items in found:
        L.append(f"\n**{title}:**" + (" none." if not items else ""))
        for label, family, e, fired_names in items:
            fired = f"; fired: {', '.join(fired_names)}" if fired_names else ""
            L.append(f"- {label} / {_where(family, e['file'], e['q'])}: "
                     f"\"{cell(e['query'])}\" — {e['runs']} of {e['of']} run(s){fired}")
    excluded = [(label, family, x) for label in sorted(trig)
                for family, m in sorted(trig[label].items()) for x in m["excluded"]]
    if excluded:
        L.append(f"\n**Not measured ({len(excluded)} run(s), never counted as a miss):**")
        for label, family, x in excluded:
            L.append(f"- {label} / {_where(family, x['file'], x['q'])} `{x['run_id']}`: "
                     f"{x['status']} — {cell(x['reason'])}")
    for label, conf in sorted(data["trigger_confusion"].items()):
        cols = [*conf["skills"], NONE]
        rows_out = []
        for exp in sorted(conf["matrix"], key=lambda e: (e == NONE, e)):
            row = conf["matrix"][exp]
            rows_out.append((f"**{exp}**", *(row.get(c, 0) or "·" for c in cols)))
        L.append(f"\n**Which skill fired — {label}** (rows: expected skill; columns: skill "
                 f"that fired; {conf['runs']} runs with all {len(conf['skills'])} skills "
                 f"installed; routed right {conf['routed_correctly']} of {conf['runs']}"
                 f" = {_pct(conf['routing_accuracy'])}"
                 f"{_ci(conf['routing_accuracy_wilson95'])}):\n")
        L += md_table(("expected \\ fired", *cols), rows_out)
        if conf["multi_fired_runs"]:
            L.append(f"\n{conf['multi_fired_runs']} run(s) fired more than one skill "
                     "(counted in each column).")
    L.append("")
    return L


def trigger_terminal_lines(data: Data) -> list[str]:
    """A compact recall / precision line per model and skill for the terminal summary."""
    trig = data.get("triggers") or {}
    if not trig:
        return []
    lines = ["triggering (recall / precision over runs, 95% Wilson):"]
    for label in sorted(trig):
        for family, m in sorted(trig[label].items()):
            lines.append(
                f"  {label} {family}: recall {_pct(m['recall'])}{_ci(m['recall_wilson95'])}"
                f" ({m['n_should']} should), precision {_pct(m['precision'])}"
                f"{_ci(m['precision_wilson95'])}; {m['n_false_triggers']} false trigger(s), "
                f"{m['n_misses']} miss(es)" + (f", {len(m['excluded'])} not measured"
                                              if m["excluded"] else ""))
    return lines
