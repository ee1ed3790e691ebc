"""Baseline reuse: ``--skill-lift-baseline-from=WEEKDIR`` takes this week's no-skill runs from
an earlier week where nothing that decides a no-skill answer changed.

A skill-only change then costs the with-skill arm only.  What decides a no-skill answer, and
its grade, for one prompt and model is the week identity's *baseline inputs* (prompt text and
rubric, model id, CLI version, allowed tools, permission mode, max turns, budget, runner and
image, judge model and judge prompt version; never the skills, which the no-skill arm does not
install).  Two weeks whose inputs are equal for a (prompt, model) made its no-skill runs under
the same conditions, so one week's runs can stand in for the other's.

The flow:

1. before the first run the controller compares the two weeks' inputs per (prompt, model) and
   writes the decision, with the reason for every pair it cannot reuse, to
   ``<week>/baseline.json`` (:func:`plan_reuse`, :meth:`BaselinePlan.save`);
2. the engine, asked for a no-skill run it does not have, calls :meth:`BaselineSource.adopt`:
   a reusable pair's run is copied in from WEEKDIR (transcript, grades, judge cost…), its
   ``run.json`` marked ``baseline_from`` = the source week, and no agent or judge is called;
   otherwise the run is generated as usual and its ``run.json`` carries ``baseline_reason``.

Both marks reach the manifest as extra columns (after the qdrant ones).  A reused run keeps
its own timestamps and generation cost, but not the source week's ``judge_cost.txt``: the
scorecard, the spend cap and ``spend.json`` leave it out of this week's spend (and the run
window), and the scorecard says that a reused baseline shares the source week's sampling
noise.

The with-skill@REF arm is reused the same way (docs/versions.md): its run of a (prompt, model)
comes from the source week's **with-skill** run when the baseline inputs are equal and the
family's files at REF hash the same as the family the source week installed (``<family>@<REF>``
and ``<family>`` in the two identities' ``skills``) — the earlier version was measured then.

No pytest; the only I/O is reading the two weeks' ``week.json`` and the run directories, and
copying a reused run.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_skilllift.model import NO_SKILL, WITH_REF_PREFIX, WITH_SKILL, RunSpec, arm_ref
from pytest_skilllift.run.engine import make_run_id
from pytest_skilllift.week import identity as ident
from pytest_skilllift.week.files import (
    BASELINE_FILE,
    GRADES_FILE,
    JUDGE_COST_FILE,
    LOCK_FILE,
    RETRY_ON_RERUN,
    RUN_FILE,
    WeekLinkError,
    atomic_write_json,
    copy_tree_nofollow,
    find_link,
    read_text_nofollow,
    utc_stamp,
)
from pytest_skilllift.week.ledger import Ledger

#: (prompt, model label) → the inputs that decide that pair's no-skill answer and grade;
#: raises ``KeyError`` (its message saying what is missing) when the week has no such pair.
InputsOf = Callable[[str, str], Mapping[str, Any]]

#: How a differing input is named in a reason (the keys of the week identity's baseline
#: inputs).  Hash-valued inputs say "edited" rather than showing two hashes.
INPUT_WORDS: dict[str, str] = {
    "model_id": "model id", "prompt_text": "prompt text", "rubric": "rubric",
    "allowed_tools": "allowed tools", "permission_mode": "permission mode",
    "max_turns": "max turns", "max_budget_usd": "per-run budget (USD)", "runner": "runner",
    "image_id": "docker image id", "cli_version": "CLI version", "judge_model": "judge model",
    "judge_prompt_version": "judge prompt version", "judge_samples": "judge samples",
    "evidence": "evidence policy", "judge_mask": "judge arm-leak mask",
}
HASHED_INPUTS: frozenset[str] = frozenset({"prompt_text", "rubric", "image_id"})

#: run.json / manifest fields: the week a run was reused from, or why it was generated.
REUSED_FROM, REUSE_REASON, REUSED_RUN_ID = "baseline_from", "baseline_reason", "baseline_run_id"


class BaselineError(ValueError):
    """WEEKDIR cannot serve as a baseline; the message names it and the fix."""


def describe_change(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """Every input that differs, in words: ``CLI version '2.1.1' → '2.1.2'; rubric edited``."""
    parts = []
    for key in list(before) + [k for k in after if k not in before]:
        a, b = before.get(key), after.get(key)
        if a == b:
            continue
        word = INPUT_WORDS.get(key, key.replace("_", " "))
        parts.append(f"{word} edited" if key in HASHED_INPUTS and a and b
                     else f"{word} {_show(a)} → {_show(b)}")
    return "; ".join(parts)


def _show(value: Any) -> str:
    if isinstance(value, bool):  # the judge mask, in the option's words
        return "'on'" if value else "'off'"
    if isinstance(value, (list, tuple)):
        return "'" + ",".join(str(v) for v in value) + "'"
    return "(none)" if value is None else repr(value)


@dataclass(frozen=True)
class Decision:
    """Whether one (prompt, model)'s no-skill runs are taken from the source week, and why not."""

    prompt: str
    model: str
    reuse: bool
    reason: str = ""


@dataclass
class BaselinePlan:
    """The decision for every (prompt, model) of the session (``<week>/baseline.json``)."""

    source: Path
    decisions: dict[tuple[str, str], Decision] = field(default_factory=dict)
    created_utc: str = ""
    #: The with-skill@REF arm (``with-skill@HEAD~1``) and its decisions: taken from the
    #: source week's with-skill runs where the family at REF is the family measured there.
    arm: str = ""
    arm_decisions: dict[tuple[str, str], Decision] = field(default_factory=dict)

    @property
    def source_week(self) -> str:
        """The source week's key (its directory name), as run ids and the scorecard use it."""
        return self.source.name

    def to_json(self) -> dict[str, Any]:
        """The plan as the week's baseline file stores it."""
        return {"source": str(self.source), "source_week": self.source_week,
                "created_utc": self.created_utc,
                "pairs": _pairs(self.decisions),
                **({"arm": self.arm, "arm_pairs": _pairs(self.arm_decisions)}
                   if self.arm else {})}

    @classmethod
    def from_json(cls, data: Any) -> BaselinePlan:
        """The plan from its stored JSON."""
        plan = cls(source=Path(str(data["source"])), created_utc=str(data.get("created_utc", "")),
                   arm=str(data.get("arm", "")))
        for key, into in (("pairs", plan.decisions), ("arm_pairs", plan.arm_decisions)):
            for p in data.get(key, []):
                d = Decision(str(p["prompt"]), str(p["model"]), bool(p["reuse"]),
                             str(p.get("reason", "")))
                into[(d.prompt, d.model)] = d
        return plan

    def save(self, week_dir: Path) -> Path:
        """Write the plan into ``week_dir``; its path."""
        path = Path(week_dir) / BASELINE_FILE
        atomic_write_json(path, self.to_json())
        return path

    @classmethod
    def load(cls, week_dir: Path) -> BaselinePlan | None:
        """The week's plan, or None when it has none (or it cannot be read)."""
        try:
            data = json.loads((Path(week_dir) / BASELINE_FILE).read_text(encoding="utf-8"))
            return cls.from_json(data)
        except (OSError, ValueError, KeyError, TypeError):
            return None


def _pairs(decisions: Mapping[tuple[str, str], Decision]) -> list[dict[str, Any]]:
    return [{"prompt": d.prompt, "model": d.model, "reuse": d.reuse, "reason": d.reason}
            for _, d in sorted(decisions.items())]


def check_source(source: Path, out_dir: Path) -> None:
    """WEEKDIR must be another week directory holding runs; :class:`BaselineError` says why
    not and what to pass instead."""
    flag = "--skill-lift-baseline-from"
    if not source.is_dir():
        raise BaselineError(f"{flag}={source}: no such directory; pass an earlier week "
                            "directory, e.g. evals/weekly/<yyyymmdd>")
    if source.resolve() == Path(out_dir).resolve():
        raise BaselineError(f"{flag}={source} is this week's own directory; pass an earlier "
                            "week (a rerun of this week already reuses its finished runs)")
    if not any(source.glob(f"*/{RUN_FILE}")):
        raise BaselineError(f"{flag}={source} holds no runs (no <run_id>/{RUN_FILE}); pass a "
                            "week directory written by pytest --skill-lift")


def plan_reuse(source: Path, pairs: Iterable[tuple[str, str]], current: InputsOf,
               previous: InputsOf | None, *, unknown: str = "") -> BaselinePlan:
    """Decide every (prompt, model): reuse when the source week's inputs equal this session's.

    ``previous`` is None when the source week's inputs are unknown (``unknown`` says why):
    then nothing is reused.
    """
    plan = BaselinePlan(source=Path(source), created_utc=utc_stamp())
    for prompt, model in pairs:
        if previous is None:
            d = Decision(prompt, model, False, unknown or f"{source.name}: its inputs are unknown")
        else:
            try:
                before = previous(prompt, model)
            except KeyError as exc:
                d = Decision(prompt, model, False, f"not in {source.name}: {exc.args[0]}")
            else:
                change = describe_change(before, current(prompt, model))
                d = Decision(prompt, model, not change, change)
        plan.decisions[(prompt, model)] = d
    return plan


def prepare(source: Path, out_dir: Path, current: ident.Identity, models: Iterable[str]
            ) -> BaselinePlan:
    """The plan of a session whose identity is ``current``: every (prompt, model) of it
    against the source week's ``week.json``. Raises :class:`BaselineError` for a WEEKDIR that
    is not an earlier week with runs, or whose week.json cannot be read."""
    check_source(source, out_dir)
    try:
        record = ident.read_week_record(source)
    except ident.WeekFileError as exc:
        raise BaselineError(f"--skill-lift-baseline-from={source}: {exc}") from None
    pairs = [(p, m) for p in sorted(current.prompts) for m in models]

    def now(prompt: str, model: str) -> Mapping[str, Any]:
        return ident.baseline_inputs(current, prompt, model)

    if record is None:
        return plan_reuse(source, pairs, now, None, unknown=(
            f"{source.name} has no week.json (a qdrant pipeline week, or one written before the "
            "week identity was recorded): the inputs of its no-skill runs are unknown"))
    before = record.identity

    def then(prompt: str, model: str) -> Mapping[str, Any]:
        return ident.baseline_inputs(before, prompt, model)

    plan = plan_reuse(source, pairs, now, then)
    if current.revision:
        plan_arm_reuse(plan, current, before)
    return plan


def plan_arm_reuse(plan: BaselinePlan, current: ident.Identity,
                   before: ident.Identity) -> None:
    """The with-skill@REF decisions: a (prompt, model) whose baseline inputs are reusable and
    whose family at REF has the files the source week's with-skill arm installed."""
    ref = (current.revision or {}).get("ref", "")
    plan.arm = f"{WITH_REF_PREFIX}{ref}"
    for (prompt, model), d in plan.decisions.items():
        family = current.prompts[prompt].family
        at_ref, then = current.skills.get(f"{family}@{ref}"), before.skills.get(family)
        if not d.reuse:
            reason = d.reason
        elif not at_ref or not then:
            reason = f"{plan.source_week} recorded no hash of the family {family!r}"
        elif at_ref != then:
            reason = (f"the family {family!r} at {ref} is not the one {plan.source_week}'s "
                      "with-skill arm installed")
        else:
            reason = ""
        plan.arm_decisions[(prompt, model)] = Decision(prompt, model, not reason, reason)


def plan_summary(plan: BaselinePlan) -> str:
    """One line for the terminal: how many pairs are reusable, and the first reason not."""
    reusable = sum(d.reuse for d in plan.decisions.values())
    line = (f"baseline from {plan.source_week}: {reusable} of {len(plan.decisions)} (prompt, "
            "model) pairs reuse its no-skill runs")
    why = next((d for d in plan.decisions.values() if not d.reuse), None)
    if why is not None:
        line += f"; e.g. {why.prompt} on {why.model} does not: {why.reason}"
    if plan.arm:
        arm_reusable = sum(d.reuse for d in plan.arm_decisions.values())
        line += (f"; {plan.arm}: {arm_reusable} of {len(plan.arm_decisions)} pairs reuse its "
                 "with-skill runs (the family unchanged since)")
    return line


class BaselineSource:
    """What the engine asks for each no-skill run it does not have yet (any process: the plan
    is read from the week directory on first use, so xdist workers share the controller's)."""

    def __init__(self, week_root: Path) -> None:
        self.week_root = Path(week_root)
        self._plan: BaselinePlan | None = None
        self._loaded = False

    @property
    def plan(self) -> BaselinePlan | None:
        """The week's baseline plan (None without one), read once."""
        if not self._loaded:
            self._plan, self._loaded = BaselinePlan.load(self.week_root), True
        return self._plan

    def adopt(self, spec: RunSpec, ledger: Ledger) -> tuple[dict[str, Any] | None, str]:
        """Copy ``spec``'s run in from the source week when its pair is reusable.

        Returns (the run's record, "") when it was copied, else (None, why not). Call under
        the run's lock, with its directory empty (a fresh or reset run).
        """
        is_ref = arm_ref(spec.condition) is not None
        if spec.condition != NO_SKILL and not is_ref:
            return None, ""
        plan = self.plan
        if plan is None:
            return None, f"no baseline plan ({BASELINE_FILE}) in this week"
        if is_ref and plan.arm != spec.condition:
            return None, f"the baseline plan has no decision for {spec.condition}"
        decisions = plan.arm_decisions if is_ref else plan.decisions
        d = decisions.get((spec.prompt.name, spec.model_label))
        if d is None:
            return None, "not in the baseline plan (the prompt or model was added after it)"
        if not d.reuse:
            return None, d.reason
        source_arm = WITH_SKILL if is_ref else NO_SKILL  # the earlier version, measured then
        old_id = make_run_id(spec.prompt.name, spec.model_label, source_arm, spec.rep,
                             plan.source_week)
        src = plan.source / old_id
        link = find_link(src) if src.exists() or src.is_symlink() else None
        if link is not None:  # never copy a link's target (a host file) into this week
            return None, f"not reused: {WeekLinkError(link, 'and is never copied')}"
        record = _read(src / RUN_FILE)
        if not isinstance(record, dict):
            return None, f"{plan.source_week} has no finished {source_arm} run r{spec.rep}"
        if record.get("run_status") in RETRY_ON_RERUN:
            return None, f"its run in {plan.source_week} {record.get('run_status')}"
        return self._copy(src, old_id, record, spec, plan, ledger), ""

    @staticmethod
    def _copy(src: Path, old_id: str, record: dict[str, Any], spec: RunSpec,
              plan: BaselinePlan, ledger: Ledger) -> dict[str, Any]:
        new_id = spec.run_id
        dest = ledger.run_dir(new_id)
        dest.mkdir(parents=True, exist_ok=True)
        # The judge's cost stays with the week that paid it (grades.json keeps the figure):
        # this week's spend, its cap and judge_cost.txt sums hold what this week spent.
        copy_tree_nofollow(src, dest, skip=frozenset({LOCK_FILE, RUN_FILE, GRADES_FILE,
                                                      JUDGE_COST_FILE}))
        grades = _read(src / GRADES_FILE)
        if isinstance(grades, dict):
            for row in grades.get("rows") or []:
                if isinstance(row, dict) and "run_id" in row:
                    row["run_id"] = new_id
                if isinstance(row, dict) and "condition" in row:
                    row["condition"] = spec.condition
            atomic_write_json(dest / GRADES_FILE, grades)
        # run.json last: it is what marks the run finished.
        out = {**record, "run_id": new_id, "condition": spec.condition,
               REUSED_FROM: plan.source_week,
               REUSED_RUN_ID: old_id, REUSE_REASON: ""}
        ledger.save_run(new_id, out)
        return out


def _read(path: Path) -> Any | None:
    try:
        return json.loads(read_text_nofollow(path))
    except (OSError, ValueError):
        return None


def plan_session(source: str, out_dir: Path, current: ident.Identity,
                 models: Iterable[str]) -> str:
    """``--skill-lift-baseline-from``, before the first run (controller): decide which
    no-skill runs come from the source week, write the plan into the week directory (where
    every process's :func:`session_source` reads it) and return its one line. Raises
    :class:`BaselineError` naming a source week that cannot serve."""
    plan = prepare(Path(source), out_dir, current, models)
    plan.save(out_dir)
    return plan_summary(plan)


def session_source(source: str, out_dir: Path) -> BaselineSource | None:
    """Where the engine asks for no-skill runs first with ``--skill-lift-baseline-from``
    (the plan the controller wrote before the first run); None without it."""
    return BaselineSource(out_dir) if source else None
