"""``skilllift score`` and ``skilllift compare``.

    skilllift score PATH [--depth quick] [--output text|json] [--threshold N] [--week DIR]
    skilllift compare A B [--output text|json]

Exit status: 0 fine; 1 a skill scored under ``--threshold``; 2 usage error (bad path, no
skills, unreadable week, a skill compared with a week).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from pytest_skilllift.cli.certify import add_depth_arguments, run_depth, unused_options
from pytest_skilllift.intervals import EPS
from pytest_skilllift.lint.analyze import LintUsageError, SkillReport, score_path
from pytest_skilllift.lint.composite import DIMENSION_WEIGHTS, STATIC_TO_DIMENSION, grade
from pytest_skilllift.lint.measured import WeekError, load_scorecard
from pytest_skilllift.lint.output import stdout as _stdout
from pytest_skilllift.lint.output import write_findings as _write_findings
from pytest_skilllift.lint.output import write_json
from pytest_skilllift.skill.skillfile import SKILL_FILENAME, Finding
from pytest_skilllift.week.files import MANIFEST_CSV, SCORES_CSV

if TYPE_CHECKING:
    from pytest_skilllift.cli import Subparsers


def add_parser(subparsers: Subparsers) -> None:
    """Register ``score`` and ``compare`` on the ``skilllift`` sub-parser set."""
    p = subparsers.add_parser(
        "score",
        help="PluginEval quality layers of skills: static (quick), + LLM judge (standard), "
        "+ Monte Carlo on the real CLI (deep); composite, grades, anti-patterns",
        description="Score a skill (a SKILL.md, a skill directory, or a tree of skills). "
        "--depth quick needs no model; --week grounds triggering accuracy and output quality "
        "in a week of runs.",
    )
    p.add_argument("path", type=Path, metavar="PATH",
                   help="SKILL.md, a skill directory, or a tree of skills")
    p.add_argument(
        "--depth",
        choices=["quick", "standard", "deep"],
        default="quick",
        help="quick = static layer only (no model call); standard = + LLM judge; "
        "deep = + Monte Carlo runs of the real CLI (see also `skilllift certify`)",
    )
    p.add_argument("--output", choices=["text", "json"], default="text",
                   help="report format on stdout (default text)")
    p.add_argument(
        "--threshold",
        type=float,
        default=None,
        metavar="N",
        help="exit 1 when any skill's composite is under N (0-100)",
    )
    p.add_argument(
        "--week",
        type=Path,
        default=None,
        metavar="DIR",
        help="week directory: measured activation rate -> triggering_accuracy, "
        "must-coverage lift -> output_quality",
    )
    add_depth_arguments(p)
    p.set_defaults(func=run_score)

    c = subparsers.add_parser(
        "compare",
        help="compare two skills dimension by dimension, or two week directories",
        description="Two skills: a before/after table per dimension. Two week directories "
        "(holding manifest.csv or scores.csv): the week-over-week comparison.",
    )
    c.add_argument("a", type=Path, metavar="A",
                   help="the skill (SKILL.md or its directory) or week directory before")
    c.add_argument("b", type=Path, metavar="B",
                   help="the skill or week directory after, of the same kind as A")
    c.add_argument("--output", choices=["text", "json"], default="text",
                   help="report format on stdout (default text)")
    c.add_argument("--fail-on-regression", action="store_true",
                   help="two weeks: exit 1 when the skill's lift regressed: a model's "
                   "week-level drop of the per-prompt must lift (with − no-skill), or a "
                   "prompt's lift drop beyond its own rep noise (family-wise 5%%, split between "
                   "the two)")
    c.add_argument("--fail-on-level-regression", action="store_true",
                   help="two weeks: exit 1 when the with-skill composite level regressed (the "
                   "same test on the level: a drift that lowers both arms counts here, not in "
                   "--fail-on-regression)")
    c.add_argument("--margin", type=float, default=EPS, metavar="X",
                   help="two weeks: a prompt moved when its must lift (and, for the level, its "
                   "with-skill composite) changed by more than X (default 1e-9: any change)")
    c.add_argument("--arm", default="with-skill", metavar="ARM",
                   help="two weeks: the arm compared per prompt: with-skill (default), "
                   "with-all, or with-skill@REF (an earlier revision's runs: did they drift "
                   "between the weeks?; docs/versions.md)")
    c.set_defaults(func=run_compare)


# ---------------------------------------------------------------------------------------------
# score


def run_score(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """``skilllift score``."""
    if getattr(args, "depth", "quick") != "quick":
        return run_depth(args, out)
    unused = unused_options(args) if hasattr(args, "judges") else []
    if unused:
        print(f"skilllift score: {'; '.join(unused)}", file=sys.stderr)
        return 2
    out = out or _stdout()
    week_data = None
    week = None
    try:
        if args.week is not None:
            week_data = load_scorecard(args.week)
            week = str(args.week)
        run = score_path(args.path, week_data, week)
    except (LintUsageError, WeekError) as exc:
        print(f"skilllift score: {exc}", file=sys.stderr)
        return 2
    threshold = args.threshold
    under = [r for r in run.reports if threshold is not None and r.composite.score < threshold]
    if args.output == "json":
        payload: dict[str, Any]
        if run.single:
            payload = run.reports[0].to_json()
        else:
            payload = {
                "root": str(run.root),
                "n_skills": len(run.reports),
                "skills": [r.to_json() for r in run.reports],
                "walk_findings": [f.to_json() for f in run.walk_findings],
            }
        if threshold is not None:
            payload["threshold"] = {
                "value": threshold,
                "passed": not under,
                "under": [r.skill.rel_id for r in under],
            }
        write_json(payload, out)
    else:
        if run.single:
            write_skill_text(run.reports[0], out)
        else:
            write_tree_text(run.reports, run.walk_findings, out, root=args.path)
        if threshold is not None:
            verdict = (
                f"threshold {threshold:g}: {len(under)} of {len(run.reports)} skill(s) under"
                if under
                else f"threshold {threshold:g}: all {len(run.reports)} skill(s) pass"
            )
            print(verdict, file=out)
    return 1 if under else 0



def _measured_cells(r: SkillReport) -> str:
    m = r.measured
    rate = None if m is None else m.activation_rate
    act = "-" if m is None or rate is None else f"{rate:.2f} ({m.with_skill_runs})"
    lift = "-" if m is None or m.must_lift is None else f"{m.must_lift:+.3f}"
    return f"  {act:>14}  {lift:>9}"



def _flags(r: SkillReport) -> str:
    return ",".join(f.flag for f in r.all_findings) or "-"


def write_skill_text(r: SkillReport, out: TextIO) -> None:
    """The human report of one skill."""
    c = r.composite
    s = r.skill
    print(f"{s.name or s.rel_id}  ({s.dir}, {s.line_count} lines)", file=out)
    print(
        f"composite {c.score:.1f}/100  grade {c.grade_text()}  badge {c.badge_text()}  "
        f"penalty {c.penalty:.2f} ({c.anti_pattern_count} anti-pattern(s))",
        file=out,
    )
    print(
        f"over {len(c.dimensions)} of {len(DIMENSION_WEIGHTS)} dimensions "
        f"(weight {c.weight_covered:.2f}, renormalised); unmeasured: "
        f"{', '.join(c.unmeasured) or 'none'}",
        file=out,
    )
    if r.week is not None:
        m = r.measured
        if m is None:
            print(f"week {r.week}: no runs of family {s.family!r}", file=out)
        else:
            rate = m.activation_rate
            rate_s = "n/a" if rate is None else f"{rate:.2f}"
            lift_s = "n/a" if m.must_lift is None else f"{m.must_lift:+.3f}"
            ci = m.activation_ci
            ci_s = "n/a" if ci is None else f"[{ci[0]:.2f}, {ci[1]:.2f}]"
            print(
                f"week {r.week}: activation {rate_s} ({m.activated_runs}/{m.with_skill_runs} "
                f"with-skill runs, Wilson 95% {ci_s}); must lift {lift_s} over {m.lift_rows} "
                "prompt x model rows",
                file=out,
            )
    print("", file=out)
    print(f"{'dimension':<26}{'weight':>7}{'score':>8}  grade  layers", file=out)
    for dim, d in c.dimensions.items():
        layers = " ".join(f"{k} {v:.2f}" for k, v in d["layers"].items())
        print(
            f"{dim:<26}{d['weight']:>7.2f}{d['score']:>8.2f}  {d['grade']:<5}  {layers}", file=out
        )
    lowered = [(k, v) for k, v in r.sub_scores.items() if v.reasons]
    if lowered:
        print("\nwhat lowered the sub-checks:", file=out)
        for name, sub in lowered:
            print(f"  {name} {sub.score:.2f}", file=out)
            for why in sub.reasons:
                print(f"    {why}", file=out)
    _write_findings("anti-patterns (count toward the penalty)", r.anti_patterns, out)
    _write_findings("other findings (no penalty)", r.findings, out)



#: How many findings a tree's report shows per skill; the rest are counted, and the skill's
#: own report (``skilllift score ROOT/<skill>``) shows every one.
TOP_FINDINGS = 3


def top_findings(r: SkillReport) -> list[str]:
    """What costs the skill most, first: its anti-patterns and other findings (with their
    fix), then the reasons its static sub-checks lost points, the heaviest sub-check first
    (the points it lost times its dimension's weight)."""
    items = [f"{f.flag}: {f.evidence}\n      fix: {f.fix}" for f in r.all_findings]

    def cost(name: str) -> float:
        weight = DIMENSION_WEIGHTS.get(STATIC_TO_DIMENSION.get(name, ""), 0.0)
        return (1.0 - r.sub_scores[name].score) * weight

    lowered = sorted((n for n, sub in r.sub_scores.items() if sub.reasons),
                     key=lambda n: (-cost(n), n))
    # Round robin over the sub-checks (each one's first reason, then each one's second …):
    # the top lines name the different things to fix, not one check's whole list.
    depth = max((len(r.sub_scores[n].reasons) for n in lowered), default=0)
    items += [f"{name} {r.sub_scores[name].score:.2f}: {r.sub_scores[name].reasons[i]}"
              for i in range(depth) for name in lowered if i < len(r.sub_scores[name].reasons)]
    return items


def write_tree_text(reports: list[SkillReport], walk: list[Finding], out: TextIO,
                    root: Path | None = None) -> None:
    """One line per skill, then each skill's top findings (``TOP_FINDINGS``; the count of
    the others and the command that shows them)."""
    width = max([len(r.skill.rel_id) for r in reports] + [5])
    week = any(r.week is not None for r in reports)
    extra = "  activation (n)  must lift" if week else ""
    print(f"{'skill':<{width}}  score  grade  badge   {extra}  findings", file=out)
    for r in reports:
        c = r.composite
        print(
            f"{r.skill.rel_id:<{width}}  {c.score:5.1f}  "
            f"{c.grade + ('*' if c.provisional else ''):<5}  {c.badge or '-':<8}"
            f"{_measured_cells(r) if week else ''}  {_flags(r)}",
            file=out,
        )
    qualifiers = sorted({r.composite.qualifier for r in reports if r.composite.qualifier})
    for q in qualifiers:
        print(f"* grade and badge: {q}", file=out)
    scores = [r.composite.score for r in reports]
    print(
        f"\n{len(reports)} skills: mean {sum(scores) / len(scores):.1f}, "
        f"min {min(scores):.1f}, max {max(scores):.1f}; "
        f"{sum(1 for r in reports if r.all_findings)} with findings",
        file=out,
    )
    shown_root = root if root is not None else Path("ROOT")
    hidden = 0
    for r in sorted(reports, key=lambda r: (r.composite.score, r.skill.rel_id)):
        items = top_findings(r)
        if not items:
            continue
        print(f"\n{r.skill.rel_id} ({r.composite.score:.1f}): top findings", file=out)
        for item in items[:TOP_FINDINGS]:
            print(f"  {item}", file=out)
        more = len(items) - TOP_FINDINGS
        if more > 0:
            hidden += 1
            print(f"  … {more} more: skilllift score {_skill_path(shown_root, r)}", file=out)
    if hidden:
        print(f"\nevery finding of a skill: skilllift score {shown_root}/<skill>; of all "
              "skills at once: --output json", file=out)
    if walk:
        _write_findings("while walking the tree", walk, out)


def _skill_path(root: Path, r: SkillReport) -> str:
    """The path that scores one skill of the tree (``root`` as the user wrote it)."""
    return str(root / r.skill.rel_id) if root.is_dir() else str(r.skill.dir)


# ---------------------------------------------------------------------------------------------
# compare


def classify(path: Path) -> str:
    """``"week"`` (holds manifest.csv or scores.csv), ``"skill"`` (a SKILL.md or a directory
    holding one), or ``"unknown"``."""
    try:
        if path.is_dir():
            if (path / MANIFEST_CSV).is_file() or (path / SCORES_CSV).is_file():
                return "week"
            if (path / SKILL_FILENAME).exists():
                return "skill"
        elif path.is_file() and path.name == SKILL_FILENAME:
            return "skill"
    except OSError:
        pass
    return "unknown"


def run_compare(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """``skilllift compare``: skills side by side, or delegate two weeks to compare_weeks."""
    out = out or _stdout()
    kinds = (classify(args.a), classify(args.b))
    if kinds == ("week", "week"):
        return _compare_weeks(args, out)
    if kinds != ("skill", "skill"):
        described = ", ".join(
            f"{p} is {k if k != 'unknown' else 'neither'}"
            for p, k in zip((args.a, args.b), kinds, strict=True)
        )
        print(
            "skilllift compare: give two skills (SKILL.md or its directory) or two week "
            f"directories (holding manifest.csv or scores.csv); {described}",
            file=sys.stderr,
        )
        return 2
    try:
        a = score_path(args.a).reports[0]
        b = score_path(args.b).reports[0]
    except LintUsageError as exc:
        print(f"skilllift compare: {exc}", file=sys.stderr)
        return 2
    if args.output == "json":
        json.dump(compare_json(a, b), out, indent=2, ensure_ascii=False)
        out.write("\n")
    else:
        write_compare_text(a, b, out)
    return 0


def compare_json(a: SkillReport, b: SkillReport) -> dict[str, Any]:
    """Before/after per dimension, composite and flags."""
    dims: dict[str, Any] = {}
    for dim in DIMENSION_WEIGHTS:
        da = a.composite.dimensions.get(dim)
        db = b.composite.dimensions.get(dim)
        if da is None and db is None:
            continue
        sa = None if da is None else da["score"]
        sb = None if db is None else db["score"]
        dims[dim] = {
            "a": sa,
            "b": sb,
            "delta": None if sa is None or sb is None else round(sb - sa, 4),
        }
    fa = {f.flag for f in a.all_findings}
    fb = {f.flag for f in b.all_findings}
    return {
        "a": {"path": str(a.skill.dir), "composite": a.composite.to_json()},
        "b": {"path": str(b.skill.dir), "composite": b.composite.to_json()},
        "composite_delta": round(b.composite.score - a.composite.score, 2),
        "dimensions": dims,
        "findings_fixed": sorted(fa - fb),
        "findings_new": sorted(fb - fa),
    }


def write_compare_text(a: SkillReport, b: SkillReport, out: TextIO) -> None:
    """The dimension-by-dimension before/after table."""
    data = compare_json(a, b)
    print(f"A: {a.skill.dir}\nB: {b.skill.dir}\n", file=out)
    print(f"{'dimension':<26}{'weight':>7}{'A':>7}{'B':>7}{'delta':>8}  grade", file=out)
    for dim, d in data["dimensions"].items():
        sa, sb, delta = d["a"], d["b"], d["delta"]
        ga = "-" if sa is None else grade(sa)
        gb = "-" if sb is None else grade(sb)
        print(
            f"{dim:<26}{DIMENSION_WEIGHTS[dim]:>7.2f}{_num(sa):>7}{_num(sb):>7}"
            f"{'' if delta is None else f'{delta:+.2f}':>8}  {ga} -> {gb}",
            file=out,
        )
    ca, cb = a.composite, b.composite
    print(
        f"{'composite':<26}{'':>7}{ca.score:>7.1f}{cb.score:>7.1f}"
        f"{cb.score - ca.score:>+8.1f}  {ca.grade} -> {cb.grade}",
        file=out,
    )
    print(
        f"{'anti-patterns':<26}{'':>7}{ca.anti_pattern_count:>7}{cb.anti_pattern_count:>7}",
        file=out,
    )
    if data["findings_fixed"]:
        print(f"fixed: {', '.join(data['findings_fixed'])}", file=out)
    if data["findings_new"]:
        print(f"new:   {', '.join(data['findings_new'])}", file=out)


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def _compare_weeks(args: argparse.Namespace, out: TextIO) -> int:
    """Two weeks: the comparison kind, per-prompt changes, the paired test per model."""
    import importlib

    # import_module reads sys.modules, so a test can stand in for the report side.
    compare_weeks = importlib.import_module("pytest_skilllift.report.compare_weeks")
    code: int = compare_weeks.run(args.a, args.b, output=args.output,
                                  margin=getattr(args, "margin", EPS),
                                  fail_on_regression=getattr(args, "fail_on_regression", False),
                                  fail_on_level_regression=getattr(
                                      args, "fail_on_level_regression", False),
                                  out=out, arm=getattr(args, "arm", "with-skill"))
    return code


def main(argv: list[str] | None = None) -> int:
    """Standalone entry (``python -m pytest_skilllift.cli.score score ...``): the same
    subcommands (score, compare, certify, corpus) without the rest of the ``skilllift`` script."""
    from pytest_skilllift.cli import certify as depth_cli

    parser = argparse.ArgumentParser(prog="skilllift")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    add_parser(sub)
    depth_cli.add_parser(sub)
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 2
    return int(args.func(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
