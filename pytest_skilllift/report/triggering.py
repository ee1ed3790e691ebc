"""The "Triggering" scorecard section: builder (week → numbers) and renderer (numbers → md).

Reads ``<week>/triggers/triggers.csv`` (:mod:`pytest_skilllift.run.triggers`) and reports,
per model and skill family, over the trigger runs that ended in a measurement:

- recall = triggered should-trigger runs / should-trigger runs;
- precision = triggered should-trigger runs / all triggered runs;
- false-trigger rate (should-not runs that fired) and miss rate (should runs that did not),
  each rate with its 95% Wilson interval; the false triggers and misses by query.

With several families installed at once (``--skill-lift-triggers-all``) it adds a confusion
table per model: which skill fired for queries that expected which skill. Trigger runs
never enter the lift. Pure: no pytest.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any

from pytest_skilllift.report.stats import wilson_interval
from pytest_skilllift.run.triggers import OK, read_trigger_table

NONE = "none"


def _rate(k: int, n: int) -> tuple[float | None, list[float | None]]:
    if n <= 0:
        return None, [None, None]
    lo, hi = wilson_interval(k, n)
    return k / n, [None if math.isnan(lo) else lo, None if math.isnan(hi) else hi]


def _split(value: str) -> list[str]:
    return [x for x in (value or "").split(";") if x]


def _file(row: dict[str, str]) -> str:
    """The trigger file (stem) a row came from; the family's own name for the usual
    ``evals/triggers/<family>.json``."""
    return row.get("trigger_set") or row.get("family", "")


def _where(family: str, entry: dict[str, Any]) -> str:
    """``git-bisect q3``, naming the file too when it is not ``<family>.json``."""
    file = entry.get("file") or family
    return f"{family} q{entry['q']}" if file == family else f"{family} ({file}.json) q{entry['q']}"


def _expected(row: dict[str, str]) -> str:
    if row.get("expected_skill"):
        return row["expected_skill"]
    return row["family"] if row.get("should_trigger") == "1" else NONE


def trigger_data(week_dir: Path) -> dict[str, Any]:
    """``triggers``, ``trigger_confusion`` and ``trigger_runs`` for scorecard.json.

    ``triggers.<label>.<family>`` = ``{recall, precision, n_should, n_should_not,
    false_triggers, misses, …}``; ``n_should``/``n_should_not`` count runs (queries × reps)
    that ended in a measurement; excluded runs are listed, never counted as misses.
    """
    rows = read_trigger_table(week_dir)
    groups: dict[tuple[str, str], list[dict[str, str]]] = defaultdict(list)
    for row in rows:
        groups[(row.get("model", ""), row.get("family", ""))].append(row)
    triggers: dict[str, dict[str, Any]] = {}
    for (label, family), group in sorted(groups.items()):
        triggers.setdefault(label, {})[family] = _family_numbers(group)
    excluded = sum(1 for r in rows if r.get("run_status") != OK)
    return {
        "triggers": triggers,
        "trigger_confusion": _confusion(rows),
        "trigger_runs": {
            "total": len(rows), "measured": len(rows) - excluded, "excluded": excluded,
            "max_turns": sorted({r.get("max_turns", "") for r in rows} - {""}),
            "table": "triggers/triggers.csv" if rows else None,
        },
    }


def _family_numbers(group: list[dict[str, str]]) -> dict[str, Any]:
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
        "precision": precision, "precision_wilson95": precision_ci,
        "false_trigger_rate": ft_rate, "false_trigger_rate_wilson95": ft_ci,
        "miss_rate": miss_rate, "miss_rate_wilson95": miss_ci,
        "n_should": len(should), "n_should_not": len(should_not),
        "true_triggers": tp, "n_false_triggers": fp, "n_misses": fn,
        "false_triggers": _by_query(should_not, want="1"),
        "misses": _by_query(should, want="0"),
        # Evidence that a load after other tool calls counts: triggered runs whose first
        # tool call was something else.
        "triggered_after_other_tools": sum(
            1 for r in ok if r.get("triggered") == "1"
            and (r.get("tools_before_skill") or "0") not in ("", "0")),
        "other_skills_fired": _other_skills(ok),
        "excluded": [{"run_id": r.get("run_id", ""), "q": int(r.get("query_index") or 0),
                      "file": _file(r), "status": r.get("run_status", ""),
                      "reason": r.get("run_error", "")}
                     for r in group if r.get("run_status") != OK],
        "queries": len({(_file(r), r.get("query_index")) for r in group}),
    }


def _by_query(rows: list[dict[str, str]], *, want: str) -> list[dict[str, Any]]:
    """Queries with at least one run where ``triggered == want``, with counts."""
    per: dict[tuple[str, int], dict[str, Any]] = {}
    for r in rows:
        q = int(r.get("query_index") or 0)
        entry = per.setdefault((_file(r), q), {"q": q, "file": _file(r),
                                               "query": r.get("query", ""), "runs": 0,
                                               "of": 0, "fired": []})
        entry["of"] += 1
        if (r.get("triggered") or "0") == want:
            entry["runs"] += 1
            for f in _split(r.get("fired", "")) + _split(r.get("fired_other", "")):
                if f not in entry["fired"]:
                    entry["fired"].append(f)
    out = [e for e in per.values() if e["runs"]]
    for e in out:
        if want == "0":
            del e["fired"]  # a miss fired nothing of this family; other skills are below
    return sorted(out, key=lambda e: (e["file"], e["q"]))


def _other_skills(rows: list[dict[str, str]]) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for r in rows:
        for name in _split(r.get("fired_other", "")):
            counts[name] += 1
    return dict(sorted(counts.items()))


def _confusion(rows: list[dict[str, str]]) -> dict[str, Any]:
    """Per model: expected skill (rows) × fired skill (columns), over runs that had more
    than one family installed. A run that fired two skills counts in both columns."""
    out: dict[str, Any] = {}
    multi = [r for r in rows if r.get("run_status") == OK and len(_split(r.get("installed", "")))
             > 1]
    by_model: dict[str, list[dict[str, str]]] = defaultdict(list)
    for r in multi:
        by_model[r.get("model", "")].append(r)
    for label, group in sorted(by_model.items()):
        skills = sorted({s for r in group for s in _split(r["installed"])})
        matrix: dict[str, dict[str, int]] = {}
        queries: dict[tuple[str, str, int], dict[str, Any]] = {}
        routed = 0
        multi_fired = 0
        for r in group:
            exp = _expected(r)
            fired = _split(r.get("fired", ""))
            cols = fired or [NONE]
            row = matrix.setdefault(exp, {})
            for c in cols:
                row[c] = row.get(c, 0) + 1
            # Routed right: the expected skill fired first (or nothing fired when none was).
            if (fired[:1] == [exp]) if exp != NONE else not fired:
                routed += 1
            multi_fired += len(fired) > 1
            key = (r["family"], _file(r), int(r.get("query_index") or 0))
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


def _ci(pair: list[float | None]) -> str:
    lo, hi = pair
    return "" if lo is None or hi is None else f" [{lo:.2f}, {hi:.2f}]"


def _cell(text: str) -> str:
    return text.replace("\r", " ").replace("\n", " ").replace("|", "\\|")


def render_triggering(data: dict[str, Any]) -> list[str]:
    """The "Triggering" section's markdown lines; nothing when the week has no trigger runs."""
    from pytest_skilllift.report.scorecard import md_table

    trig: dict[str, Any] = data.get("triggers") or {}
    runs = data.get("trigger_runs") or {}
    if not trig:
        return []
    turns = ", ".join(runs.get("max_turns") or []) or "the CLI's default"
    L = ["## Triggering\n",
         f"Trigger tests: each query run through the real CLI with the skill installed as "
         f"in the with-skill arm, stopped at --max-turns {turns}, no judge. A run is "
         "triggered when the transcript audit finds the skill loaded (Skill tool, or a Read "
         "of its files) — also after other tool calls. Rates are over runs (queries × reps) "
         "that ended in a measurement, with 95% Wilson intervals; "
         f"{runs.get('measured', 0)} of {runs.get('total', 0)} runs measured. Trigger runs "
         "are not part of the lift.\n"]
    table = []
    for label in sorted(trig):
        for family, m in sorted(trig[label].items()):
            table.append((
                label, family,
                _pct(m["recall"]) + _ci(m["recall_wilson95"]),
                _pct(m["precision"]) + _ci(m["precision_wilson95"]),
                _pct(m["false_trigger_rate"]) + _ci(m["false_trigger_rate_wilson95"]),
                _pct(m["miss_rate"]) + _ci(m["miss_rate_wilson95"]),
                m["n_should"], m["n_should_not"], len(m["excluded"]),
            ))
    L += md_table(("model", "skill", "recall", "precision", "false-trigger rate",
                   "miss rate", "n should", "n should-not", "excluded"), table)
    after = sum(m["triggered_after_other_tools"] for fam in trig.values() for m in fam.values())
    if after:
        L.append(f"\n{after} triggered run(s) loaded the skill after calling another tool "
                 "first; they count as triggers.")
    for title, key in (("False triggers (should not have fired)", "false_triggers"),
                       ("Misses (should have fired, did not)", "misses")):
        items = [(label, family, e) for label in sorted(trig)
                 for family, m in sorted(trig[label].items()) for e in m[key]]
        L.append(f"\n**{title}:**" + (" none." if not items else ""))
        for label, family, e in items:
            fired = f"; fired: {', '.join(e['fired'])}" if e.get("fired") else ""
            L.append(f"- {label} / {_where(family, e)}: \"{_cell(e['query'])}\" — "
                     f"{e['runs']} of {e['of']} run(s){fired}")
    excluded = [(label, family, x) for label in sorted(trig)
                for family, m in sorted(trig[label].items()) for x in m["excluded"]]
    if excluded:
        L.append(f"\n**Not measured ({len(excluded)} run(s), never counted as a miss):**")
        for label, family, x in excluded:
            L.append(f"- {label} / {_where(family, x)} `{x['run_id']}`: {x['status']} — "
                     f"{_cell(x['reason'])}")
    for label, conf in sorted((data.get("trigger_confusion") or {}).items()):
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


def trigger_terminal_lines(data: dict[str, Any]) -> list[str]:
    """A compact recall / precision line per model and skill for the terminal summary."""
    trig: dict[str, Any] = data.get("triggers") or {}
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
