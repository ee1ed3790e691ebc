"""``skilllift judge WEEK_DIR``: the command of :mod:`pytest_skilllift.run.regrade` (grade a
generated week again, without regenerating a run); the planning and grading stay there, this
module parses the arguments, prints the progress and writes the scorecard at the end."""

from __future__ import annotations

import argparse
import os
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_skilllift.config import OPTIONS
from pytest_skilllift.judge.protocol import EVIDENCE_POLICIES, Grader
from pytest_skilllift.run.engine import GradedRun
from pytest_skilllift.run.regrade import (
    FreshPass,
    RegradeError,
    RegradePlan,
    copy_week,
    grade_direct,
    plan_regrade,
    same_judge,
    week_judge_models,
)
from pytest_skilllift.week.files import HISTORY_CSV, OK
from pytest_skilllift.week.ledger import Ledger

if TYPE_CHECKING:
    from pytest_skilllift.cli import Subparsers
    from pytest_skilllift.report.summarize import Summary

#: The pytest options' defaults (stated once, in ``config.OPTIONS``) for the same settings.
_DEFAULTS = {o.name: o.default for o in OPTIONS}


def finish(week_dir: Path, *, history: Path | None = None) -> Summary:
    """Rebuild the CSVs from the run directories and write the scorecard; the Summary."""
    from pytest_skilllift.report.summarize import summarize_week

    Ledger(Path(week_dir)).rebuild_csvs()
    return summarize_week(Path(week_dir), history=history)


def _make_grader(args: argparse.Namespace, model: str, target: Path | None = None,
                 families: Sequence[str] = ()) -> Grader:
    """The judge (or with ``--judges`` the panel) the runs are graded by, behind the arm-leak
    mask; a panel keeps each judge's result in the runs' panel.json (``target``'s)."""
    from pytest_skilllift.judge.factory import build_judge, session_judges
    from pytest_skilllift.judge.mask import MaskingGrader
    from pytest_skilllift.judge.panel import PanelCache, PanelJudge
    from pytest_skilllift.judge.samples import SampledJudge

    specs = session_judges(model, args.judges.split(",") if args.judges else ())
    graders = [(spec.name, SampledJudge(build_judge(spec, evidence=args.evidence),
                                        samples=args.samples)) for spec in specs]
    grader: Grader = graders[0][1] if len(graders) == 1 else PanelJudge(
        graders, cache=PanelCache(target) if target is not None else None,
        evidence_policy=args.evidence)
    return MaskingGrader(grader, families, mask=args.mask != "off")


def _missing_keys(model: str, judges: str) -> list[str]:
    """The key variables of the judges' providers that are not set (one per provider)."""
    from pytest_skilllift.judge.factory import session_judges
    from pytest_skilllift.judge.providers import KEY_VARS

    specs = session_judges(model, judges.split(",") if judges else ())
    missing = []
    for spec in specs:
        if spec.provider == "anthropic" and os.environ.get("ANTHROPIC_AUTH_TOKEN"):
            continue
        if spec.key() is None:
            names = " or ".join(KEY_VARS[spec.provider])
            if names not in missing:
                missing.append(names)
    return missing


def _grade_in_batches(args: argparse.Namespace, plan: RegradePlan, target: Path, model: str,
                      fresh: FreshPass | None, progress: Callable[[GradedRun], None]) -> None:
    """``--batch``: the planned runs in batches, each judge through its provider's batch API
    (half price; an interrupted command resumes polling the batches on file instead of
    submitting them again); a panel's judges at once, each judge a run already has in its
    panel.json not requested again."""
    from pytest_skilllift.judge.batch import BATCH_PRICE_FACTOR, forget_batches
    from pytest_skilllift.judge.factory import build_batch_judges, session_judges
    from pytest_skilllift.judge.panel import PanelCache
    from pytest_skilllift.run.batch_grade import grade_plan_in_batches, panel_of

    if fresh is not None and not fresh.resumed:
        forget_batches(target)  # a new --fresh pass reuses no earlier batch result
    specs = session_judges(model, args.judges.split(",") if args.judges else ())
    judge = build_batch_judges(specs, target, evidence=args.evidence, poll_s=args.batch_poll,
                               log=lambda line: print(f"  {line}", file=sys.stderr))
    pairs = panel_of(judge)
    for name, one in pairs:
        print(f"  {name}: through the {one.api_name} API, priced at "
              f"{BATCH_PRICE_FACTOR:.0%} of the list price", file=sys.stderr)
    try:
        grade_plan_in_batches(Ledger(target), plan.specs, judge, samples=args.samples,
                              families=sorted({sp.prompt.family for sp in plan.specs}),
                              mask=args.mask != "off",
                              on_graded=progress,
                              regrade_pass=fresh.pass_id if fresh is not None else "",
                              cache=PanelCache(target) if len(pairs) > 1 else None,
                              evidence_policy=args.evidence)
    finally:
        for _name, one in pairs:
            one.close()


def _recorded_protocol(week_dir: Path, args: argparse.Namespace) -> list[str]:
    """Fill the judging options left unset from the week's recorded protocol (week.json:
    judge model, samples, evidence policy), so a regrade grades the way the week was graded;
    an option that differs from the record is named (and recorded in week.json after the
    regrade). A week without week.json (the qdrant pipeline's) takes the defaults."""
    from pytest_skilllift.judge.client import default_judge_model
    from pytest_skilllift.judge.protocol import PROMPT_VERSION
    from pytest_skilllift.week import identity

    try:
        record = identity.read_week_record(week_dir)
    except identity.WeekFileError as exc:
        raise RegradeError(f"{week_dir}: {exc}") from None
    recorded = record.identity if record is not None else None
    given = {"judge_model": args.judge_model or None, "judge_samples": args.samples,
             "evidence": args.evidence, "judge_mask": args.mask}
    fallback = {"judge_model": default_judge_model(), "judge_samples": _DEFAULTS["judge-samples"],
                "evidence": _DEFAULTS["evidence"], "judge_mask": _DEFAULTS["judge-mask"]}
    notes, value = [], {}
    for key, option in (("judge_model", "--judge-model"), ("judge_samples", "--samples"),
                        ("evidence", "--evidence"), ("judge_mask", "--mask")):
        then = getattr(recorded, key) if recorded is not None else None
        if key == "judge_mask" and then is not None:  # week.json's bool, the option's words
            then = "on" if then else "off"
        value[key] = given[key] if given[key] is not None else (
            then if then not in (None, "") else fallback[key])
        if given[key] is not None and then not in (None, "") and given[key] != then:
            notes.append(f"judging protocol: {option} {given[key]} instead of the week's "
                         f"recorded {then}; week.json records the change once every run is "
                         "regraded")
    if recorded is not None and recorded.judge_prompt_version not in ("", PROMPT_VERSION):
        same = identity.same_verdict_rules(recorded.judge_prompt_version, PROMPT_VERSION)
        notes.append(f"judging protocol: the week was graded with judge prompt "
                     f"{recorded.judge_prompt_version}; this version of pytest-skilllift "
                     f"grades with {PROMPT_VERSION}"
                     + (" (the same verdict rules; its grades also carry the judge's reasons)"
                        if same else ""))
    args.judge_model, args.samples, args.evidence, args.mask = (
        value["judge_model"], int(value["judge_samples"]), value["evidence"],
        value["judge_mask"])
    return notes


def _run(args: argparse.Namespace) -> int:
    week_dir = Path(args.week_dir)
    err = sys.stderr
    if not week_dir.is_dir():
        print(f"skilllift judge: {week_dir}: not a directory", file=err)
        return 2
    try:
        for note in _recorded_protocol(week_dir, args):
            print(note, file=err)
    except RegradeError as exc:
        print(f"skilllift judge: {exc}", file=err)
        return 2
    if args.samples < 1 or args.jobs < 1:
        print("skilllift judge: --samples and -j must be at least 1", file=err)
        return 2
    if args.judges:
        # A panel replaces the week's judge on every run (in place: what each judge already
        # graded is kept, in panel.json or the run's one-judge grades.json, and not paid again).
        from pytest_skilllift.judge.panel import panel_name
        from pytest_skilllift.judge.providers import parse_judges

        try:
            specs = parse_judges(args.judges)
        except ValueError as exc:
            print(f"skilllift judge: --judges: {exc}", file=err)
            return 2
        if len(specs) < 2:
            print("skilllift judge: --judges names two or more judges (one judge: "
                  "--judge-model)", file=err)
            return 2
        args.judge_model = panel_name([spec.name for spec in specs])
        args.fresh = True
    try:
        missing = _missing_keys(args.judge_model, args.judges)
    except ValueError as exc:
        print(f"skilllift judge: --judge-model: {exc}", file=err)
        return 2
    if missing:
        print(f"skilllift judge: the judge needs {', '.join(missing)} in the environment",
              file=err)
        return 2
    model = args.judge_model
    graded_by = week_judge_models(week_dir)
    other = sorted(m for m in graded_by if not same_judge(m, model))
    target, history = week_dir, None
    try:
        if args.out:
            target = Path(args.out)
            copied = copy_week(week_dir, target)
            # The copy is a judge trial, not a week: its history stays inside it.
            history = target / HISTORY_CSV
            print(f"copied {copied} generated run(s) into {target} (grades not copied)",
                  file=err)
        elif other and not args.fresh:
            raise RegradeError(
                f"{week_dir} was graded by {', '.join(other)}; grading it with {model} would "
                "mix two judges in one week. Write to a copy with --out DIR (the week keeps "
                "its judge), or pass --fresh to regrade every run of this week with "
                f"{model}")
        plan = plan_regrade(target, fresh=args.fresh,
                            prompts_dir=Path(args.prompts) if args.prompts else None)
    except RegradeError as exc:
        print(f"skilllift judge: {exc}", file=err)
        return 2
    fresh = FreshPass(target, model) if args.fresh else None
    if fresh is not None:
        fresh.start(plan)
        if fresh.resumed:
            print(f"resuming an interrupted --fresh pass: {plan.kept} run(s) already regraded "
                  "are kept", file=err)
    total = len(plan.specs)
    print(f"grading {total} run(s) of {target} with {model} ({args.samples} sample(s) per "
          f"run, {'in batches' if args.batch else f'{args.jobs} at a time'}); "
          f"{plan.kept} already graded, "
          f"{len(plan.skipped)} not gradeable, {len(plan.unreadable)} without a readable "
          "prompt file", file=err)
    for run_id, reason in plan.skipped:
        print(f"  skipped {run_id}: {reason}", file=err)
    for run_id, reason in plan.unreadable:
        print(f"  NOT GRADED {run_id}: {reason}", file=err)
    done = {"n": 0, "failed": 0}
    lock = threading.Lock()

    def progress(graded: GradedRun) -> None:
        with lock:
            done["n"] += 1
            if graded.judge_error or graded.status != OK:
                done["failed"] += 1
                what = "kept its earlier grades" if graded.rows else "ungraded"
                print(f"  [{done['n']}/{total}] {graded.run_id}: {what} "
                      f"({graded.judge_error or graded.reason})", file=err)
            else:
                print(f"  [{done['n']}/{total}] {graded.run_id}: graded", file=err)
        if fresh is not None and not graded.judge_error and graded.status == OK:
            fresh.graded(graded.run_id)

    if args.batch:  # the judges' batch APIs take the grading step's place
        _grade_in_batches(args, plan, target, model, fresh, progress)
    else:
        grade_direct(plan, _make_grader(args, model, target,
                                        sorted({sp.prompt.family for sp in plan.specs})),
                     jobs=args.jobs, on_graded=progress,
                     regrade_pass=fresh.pass_id if fresh is not None else "")
    if fresh is not None:
        fresh.finish(complete=done["failed"] == 0)
    if args.out or (fresh is not None and done["failed"] == 0):
        # Every run of the target is now this judge's: its week.json says so.
        _record_grading(target, model, args, source=week_dir if args.out else None)
    summary = finish(target, history=history)
    for line in summary.terminal_lines():
        print(line)
    if done["failed"]:
        print(f"{done['failed']} run(s) are still ungraded; run the same command again to "
              "grade them", file=err)
    return 1 if done["failed"] or plan.unreadable else 0


def _record_grading(target: Path, model: str, args: argparse.Namespace,
                    source: Path | None) -> None:
    """Record the judge that graded ``target`` in its week.json (``week.identity``)."""
    from pytest_skilllift.judge.protocol import PROMPT_VERSION
    from pytest_skilllift.week import identity

    try:
        notes = identity.record_grading(target, judge_model=model,
                                        judge_prompt_version=PROMPT_VERSION,
                                        judge_samples=args.samples, evidence=args.evidence,
                                        judge_mask=args.mask != "off", source=source)
    except identity.WeekFileError as exc:
        print(f"skilllift judge: graded, but the week's identity was not updated: {exc}",
              file=sys.stderr)
        return
    for note in notes:
        print(f"week.json: {note}", file=sys.stderr)


def add_parser(subparsers: Subparsers) -> None:
    """Register ``skilllift judge``."""
    parser = subparsers.add_parser(
        "judge",
        help="grade a generated week's runs (ungraded ones, or all with --fresh) without "
             "regenerating, then rebuild its CSVs and scorecard",
        description="Grade every generated, ungraded run of a week (with --fresh, every run) "
                    "with the blind judge, concurrently and resumably, then rebuild "
                    "manifest.csv, scores.csv and the scorecard. No run is regenerated. A "
                    "judge model other than the one that graded the week writes to a copy "
                    "(--out DIR) unless --fresh regrades the week in place.",
    )
    parser.add_argument("week_dir", metavar="WEEK_DIR", help="the week directory")
    parser.add_argument("--fresh", action="store_true",
                        help="regrade all runs; a run's grades are replaced only by a regrade "
                             "that succeeded, so a failing judge keeps them (resumable: rerun "
                             "the same command after an interruption)")
    parser.add_argument("--judge-model", default="", metavar="M",
                        help="judge model (default: the one week.json records, else "
                             f"{_DEFAULTS['judge-model']})")
    parser.add_argument("--judges", default="", metavar="JUDGE[,…]",
                        help="grade every run with a panel of judges (PROVIDER:MODEL, "
                             "comma-separated; e.g. claude-sonnet-4-5,openai:gpt-5,"
                             "google:gemini-2.5-pro): adds or replaces judges on a graded "
                             "week in place, without any agent call; a judge that already "
                             "graded a run is not called again (docs/judge.md)")
    parser.add_argument("--mask", choices=("on", "off"), default=None,
                        help="mask the skill family's name and skill phrasing in the answer "
                             "the judge sees (default: as week.json records — off for a week "
                             f"recorded before the mask existed — else {_DEFAULTS['judge-mask']})")
    parser.add_argument("--samples", type=int, default=None, metavar="N",
                        help="independent judge samples per run; with 2, items whose samples "
                             "disagree get a tie-breaking third and are flagged contested "
                             "(default: as week.json records, else "
                             f"{_DEFAULTS['judge-samples']})")
    parser.add_argument("-j", "--jobs", type=int, default=4, metavar="CONCURRENCY",
                        help="runs graded at the same time (default 4)")
    parser.add_argument("--out", default="", metavar="DIR",
                        help="grade a copy of the week in DIR (its generated runs, no grades); "
                             "required for a different judge model unless --fresh")
    parser.add_argument("--evidence", choices=EVIDENCE_POLICIES, default=None,
                        help="a met/violated whose quote is not in the answer: reject (scored "
                             "as missing/absent/clean) or flag (kept, evidence_ok=0) (default: "
                             f"as week.json records, else {_DEFAULTS['evidence']})")
    parser.add_argument("--batch", action="store_true",
                        help="grade through each judge's batch API — anthropic: Message "
                             "Batches, openai: OpenAI's Batch API, google: Gemini's batch mode "
                             "(with --judges, each judge through its own): half the price, "
                             "results within 24 h; the batch ids are kept in "
                             "WEEK_DIR/judge-batches.json so an interrupted command resumes "
                             "polling instead of paying again")
    parser.add_argument("--batch-poll", type=float, default=_DEFAULTS["judge-batch-poll"],
                        metavar="SECONDS",
                        help="seconds between polls of a pending batch (default "
                             f"{_DEFAULTS['judge-batch-poll']:g})")
    parser.add_argument("--prompts", default="", metavar="DIR",
                        help="directory of the prompt files, when they moved since the week "
                             "was generated (default: each run's recorded prompt_path)")
    parser.set_defaults(func=_run)
