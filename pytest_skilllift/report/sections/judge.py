"""Judge reliability: quotes not found in the answer, contested items (the rubric-quality
backlog across weeks) and the judge's self-agreement (``skilllift calibrate``).

The data is read from the week directory by :mod:`pytest_skilllift.report.judging` before the
section is built (the history rows carry its contested counts); Run health (rejected quotes,
contested items) and Provenance (which judge, how sampled, trusted or not) render their judge
lines from the same ``judge`` key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from pytest_skilllift.report.judging import AMBIGUOUS_RUNS, JudgeReport
from pytest_skilllift.report.markdown import by_agent, md_table, untrusted
from pytest_skilllift.report.sections.judge_audit import render_audit

if TYPE_CHECKING:
    from pytest_skilllift.report.context import Context

#: Rows a markdown list shows; scorecard.json keeps all, and a capped list says so.
MAX_LISTED = 200


class Data(TypedDict):
    """The Judge reliability section's keys in scorecard.json."""
    judge: JudgeReport


def build(ctx: Context) -> Data:
    """The Judge reliability section's scorecard.json keys, from the week's numbers."""
    return {"judge": ctx.judge}


def _cell(text: object, width: int = 0) -> str:
    value = " ".join(str(text).split())
    return untrusted(value[:width] if width else value)


def _capped(shown: int, total: int, what: str) -> list[str]:
    if shown >= total:
        return []
    return ["", f"_Showing the first {shown} of {total} {what}; all are in `scorecard.json` "
            "under `judge`._"]


def render(card: Data) -> list[str]:
    """The Judge reliability section of scorecard.md, as markdown lines."""
    j = card.get("judge")
    if not j:
        return []
    L = ["## Judge reliability\n"]
    L += render_audit(j.get("audit"))
    L.append("### Quotes not found in the answer\n")
    quotes = j["quotes_not_in_answer"]
    if not quotes:
        L.append("_None: every met/violated verdict quoted the answer verbatim._\n")
    else:
        shown = quotes[:MAX_LISTED]
        L += md_table(*by_agent(card, ["prompt", "model", "condition", "rep", "item", "judge said",
                                       "recorded",
                       "quote (not in the answer)"],
                      [[q["prompt"], q["model"], q["condition"], q["rep"],
                        _cell(f"{q['item_type']}-{q['item_index']}: {q['item_text']}", 70),
                        q["claimed_verdict"], q["recorded_verdict"], _cell(q["quote"], 100)]
                       for q in shown]))
        L += _capped(len(shown), len(quotes), "quotes")
        L.append("\n_A judge that paraphrases instead of quoting shows up here, not in the "
                 "lift: the item is scored by the recorded verdict._\n")
    L.append("### Contested items — rubric-quality backlog\n")
    if not j["sampled_runs"]:
        L.append("_Not measured: every run was graded by one judge sample. With "
                 "`--skill-lift-judge-samples=2` (or `skilllift judge --samples 2`) an item whose "
                 "samples disagree gets a tie-breaking third sample and is flagged here._\n")
    elif not j["contested"]:
        L.append(f"_None: the judge samples agreed on every item of {j['sampled_runs']} "
                 "multi-sample run(s)._\n")
    else:
        shown_items = j["contested"][:MAX_LISTED]
        L += md_table(["prompt", "item", "runs contested", "arms", "across weeks"],
                      [[g["prompt"], _cell(f"{g['item_type']}-{g['item_index']}: "
                                           f"{g['item_text']}", 80), g["runs"],
                        ", ".join(f"{a} ×{n}" for a, n in g["arms"].items()),
                        (f"⚠ ambiguous wording (contested in {g['contested_in_runs']} weeks)"
                         if g["ambiguous"] else "first week")] for g in shown_items])
        L += _capped(len(shown_items), len(j["contested"]), "contested items")
        L.append(f"\n_Contested: the judge samples disagreed and a tie-break decided. An item "
                 f"contested in {AMBIGUOUS_RUNS} or more weeks is worded ambiguously rather "
                 "than hard: reword it._\n")
    L.append("### Judge self-agreement (calibration)\n")
    cal = j.get("calibration")
    if not cal:
        L.append("_Not run for this week: `skilllift calibrate WEEKDIR --runs 5` grades a "
                 "handful of answers several times and reports how often a verdict flips._\n")
    else:
        rows = [[t, s["items"], s["unanimous"], s["split"],
                 "n/a" if s["flip_rate"] is None else f"{s['flip_rate']:.1%}"]
                for t, s in cal["by_type"].items()]
        L += md_table(["item type", "items", "unanimous", "split", "flip rate"], rows)
        share = cal.get("must_unanimous_share")
        verdict = "meets" if cal.get("passed") else "misses"
        L.append(f"\n{cal['runs']} run(s) graded {'/'.join(map(str, cal['samples']))} times "
                 f"each; musts unanimous {'n/a' if share is None else f'{share:.1%}'}, which "
                 f"{verdict} the ≥{cal['bar']:.0%} bar for one judge sample per run.\n")
    return L
