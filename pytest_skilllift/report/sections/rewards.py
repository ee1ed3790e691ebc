"""Task rewards: the lift on what the agent made (Harbor / SkillsBench tasks, docs/tasks.md).

Per model, over the tasks with both arms rewarded: **reward lift** = mean over tasks of
(with-skill − no-skill mean reward over reps), with the paired SE, the t interval's "≠ 0?"
flag, the seeded bootstrap and the one-vote-per-task sign test — the same functions as the
must-coverage lift (``report/stats.py``, ``report/verdicts.py``). Beside it: the pass rate
per arm (a run passes when its reward reaches the pass reward, 1 by default: SkillsBench's
binary reward), pass@k / pass^k over reps, per task helped / hurt / no-op by the SkillsBench
audit's ±10 pp rule with the trial counts it rests on, and the runs whose verifier gave no
reward (``verifier_error``), each named with its cause. Rewards never enter must coverage:
a week with prompts and tasks shows both headlines side by side.

The session's other arms show for tasks as they do for prompts (docs/tasks.md, "Arms"): per
model, each arm's mean reward, pass rate and comparisons, paired by task with the same paired
SE, t interval and sign test — ``with-all`` against no-skill and against with-skill (what the
project's other families cost or add), ``with-skill@REF`` as the version lift (with-skill −
with-skill@REF) and its own lift, ``no-skill-b`` as the A/A difference (no-skill-b − no-skill:
a false lift when its interval excludes 0).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, TypedDict

import numpy as np

from pytest_skilllift.model import ARMS, NO_SKILL, NO_SKILL_B, WITH_ALL, WITH_REF, WITH_SKILL
from pytest_skilllift.report import stats, verdicts
from pytest_skilllift.report.context import json_float
from pytest_skilllift.report.markdown import cap_note, ci_flag, fmt, md_table, signed, untrusted
from pytest_skilllift.week.files import RUN_STATUSES, STATUS_OK, VERIFIER_ERROR

if TYPE_CHECKING:
    from pytest_skilllift.report.context import Context

_NO, _WITH = ARMS.index(NO_SKILL), ARMS.index(WITH_SKILL)
_ALL, _B, _REF = ARMS.index(WITH_ALL), ARMS.index(NO_SKILL_B), ARMS.index(WITH_REF)
#: Per other arm, its comparisons as prompts show them: (minuend, subtrahend) arm codes.
_COMPARISONS: dict[int, tuple[tuple[int, int], ...]] = {
    _ALL: ((_ALL, _NO), (_ALL, _WITH)),
    _B: ((_B, _NO),),
    _REF: ((_WITH, _REF), (_REF, _NO)),
}
_VERIFIER_ERROR = RUN_STATUSES.index(VERIFIER_ERROR)
#: A task run passes when its primary reward reaches this (SkillsBench: binary, 1 = solved).
PASS_REWARD = 1.0
#: The SkillsBench audit's per-task rule: a skill helped (hurt) a task when its mean reward
#: rose (fell) by at least 10 points; anything smaller is a no-op at these trial counts.
IMPACT_THRESHOLD = 0.10
MAX_ROWS = 50


class RewardComparison(TypedDict):
    """``rewards.models.<label>.arms.<arm>.comparisons[]``: one arm against another, paired
    by task (mean reward over reps per task, then the mean of the differences)."""

    #: ``with-all − no-skill``, ``with-skill − with-skill@HEAD~1``, ``no-skill-b − no-skill``…
    comparison: str
    lift: float | None
    lift_se: float | None
    ci_low: float | None
    ci_high: float | None
    ci_excludes_zero: bool | None
    sign_test: verdicts.SignTestData
    n_tasks: int


class RewardArm(TypedDict):
    """``rewards.models.<label>.arms.<arm>``: an arm beyond the lift's two."""

    reward: float | None
    pass_rate: float | None
    runs: int
    comparisons: list[RewardComparison]


class RewardModel(TypedDict):
    """``rewards.models.<label>``."""

    reward_no: float | None
    reward_with: float | None
    reward_lift: float | None
    reward_lift_se: float | None
    ci_low: float | None
    ci_high: float | None
    ci_excludes_zero: bool | None
    bootstrap_low: float | None
    bootstrap_high: float | None
    sign_test: verdicts.SignTestData
    n_tasks: int
    #: Share of rewarded runs whose reward reaches the pass reward, per arm.
    pass_rate_no: float | None
    pass_rate_with: float | None
    runs_no: int
    runs_with: int
    #: Share of tasks with some rep passing (pass@k) / every rep passing (pass^k), per arm.
    pass_at_k_no: float | None
    pass_at_k_with: float | None
    pass_hat_k_no: float | None
    pass_hat_k_with: float | None
    helped: int
    hurt: int
    no_op: int
    #: The session's other arms (with-all, no-skill-b, with-skill@REF) by the week's name for
    #: each; empty when the week ran the lift's two only.
    arms: dict[str, RewardArm]


class RewardTask(TypedDict):
    """``rewards.tasks[]``: one (task, model)."""

    task: str
    model: str
    reward_no: float | None
    reward_with: float | None
    delta: float | None
    #: helped / hurt / no-op (±10 pp), or "n/a" without both arms.
    effect: str
    trials_no: int
    trials_with: int


class VerifierError(TypedDict):
    """A task run whose verifier failed, and why."""
    run_id: str
    reason: str


class Rewards(TypedDict):
    """The tasks' verifier rewards: lift per model, per task, and the verifier errors."""
    models: dict[str, RewardModel]
    tasks: list[RewardTask]
    verifier_errors: list[VerifierError]
    pass_reward: float
    effect_threshold: float
    #: Task runs rewarded, and task runs in the week (any status).
    rewarded_runs: int
    task_runs: int


class Data(TypedDict):
    """The Task rewards section's keys in scorecard.json."""
    rewards: Rewards | None


def _effect(delta: float | None) -> str:
    if delta is None:
        return "n/a"
    if delta >= IMPACT_THRESHOLD:
        return "helped"
    if delta <= -IMPACT_THRESHOLD:
        return "hurt"
    return "no-op"


def build(ctx: Context) -> Data:
    """The Task rewards section's scorecard.json keys, from the week's numbers."""
    week, f = ctx.week, json_float
    mf = week.manifest
    reward = mf.num.get("reward")
    if reward is None or not mf.present:
        return {"rewards": None}
    is_task = ~np.isnan(reward) | (mf.status == _VERIFIER_ERROR)
    if not np.any(is_task):
        return {"rewards": None}
    ok = is_task & (mf.status == STATUS_OK) & ~np.isnan(reward)
    n_p = len(week.prompts)
    errors: list[VerifierError] = []
    ids = mf.run_id.to_pylist() if mf.run_id is not None else [""] * len(reward)
    why = mf.run_error.to_pylist() if mf.run_error is not None else [""] * len(reward)
    for r in np.flatnonzero(mf.status == _VERIFIER_ERROR):
        errors.append({"run_id": str(ids[r] or ""), "reason": str(why[r] or "")})
    models: dict[str, RewardModel] = {}
    tasks: list[RewardTask] = []
    names = week.arm_names
    for mi, label in enumerate(week.models):
        arms: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
        for ci in (_NO, _WITH, _ALL, _B, _REF):
            sel = ok & (mf.model == mi) & (mf.cond == ci) & (mf.prompt >= 0)
            p = mf.prompt[sel].astype(np.int64)
            sums = np.bincount(p, weights=reward[sel], minlength=n_p)
            trials = np.bincount(p, minlength=n_p)
            passed = np.bincount(p, weights=(reward[sel] >= PASS_REWARD).astype(float),
                                 minlength=n_p)
            with np.errstate(invalid="ignore", divide="ignore"):
                mean = np.where(trials > 0, sums / np.maximum(trials, 1), np.nan)
            arms[ci] = (mean, trials, passed, sel)
        no, with_ = arms[_NO][0], arms[_WITH][0]
        if all(np.all(np.isnan(arms[ci][0])) for ci in arms):
            continue
        lift = stats.paired_lift(no, with_)
        boot = stats.paired_bootstrap(no, with_)
        sign = verdicts.sign_test(no, with_)
        counts = {"helped": 0, "hurt": 0, "no-op": 0}
        for pi in range(n_p):
            t_no, t_with = int(arms[_NO][1][pi]), int(arms[_WITH][1][pi])
            if t_no == 0 and t_with == 0:
                continue
            both = t_no > 0 and t_with > 0
            delta = float(with_[pi] - no[pi]) if both else None
            effect = _effect(delta)
            if effect in counts:
                counts[effect] += 1
            tasks.append({"task": week.prompts[pi], "model": label,
                          "reward_no": f(no[pi]) if t_no else None,
                          "reward_with": f(with_[pi]) if t_with else None,
                          "delta": delta, "effect": effect, "trials_no": t_no,
                          "trials_with": t_with})

        (rate_no, runs_no), (rate_with, runs_with) = (_rate(*arms[_NO][1:3]),
                                                      _rate(*arms[_WITH][1:3]))
        models[label] = {
            "reward_no": f(stats.nan_mean(no)), "reward_with": f(stats.nan_mean(with_)),
            "reward_lift": f(lift.lift), "reward_lift_se": f(lift.se),
            "ci_low": f(lift.ci_low), "ci_high": f(lift.ci_high),
            "ci_excludes_zero": lift.ci_excludes_zero,
            "bootstrap_low": f(boot.low), "bootstrap_high": f(boot.high),
            "sign_test": sign.to_json(), "n_tasks": lift.n,
            "pass_rate_no": rate_no, "pass_rate_with": rate_with,
            "runs_no": runs_no, "runs_with": runs_with,
            "pass_at_k_no": _pass_k(*arms[_NO][1:3], every=False),
            "pass_at_k_with": _pass_k(*arms[_WITH][1:3], every=False),
            "pass_hat_k_no": _pass_k(*arms[_NO][1:3], every=True),
            "pass_hat_k_with": _pass_k(*arms[_WITH][1:3], every=True),
            "helped": counts["helped"], "hurt": counts["hurt"], "no_op": counts["no-op"],
            "arms": {names[ci]: _other_arm(ci, arms, names) for ci in _COMPARISONS
                     if not np.all(np.isnan(arms[ci][0]))},
        }
    return {"rewards": {"models": models, "tasks": tasks, "verifier_errors": errors,
                        "pass_reward": PASS_REWARD, "effect_threshold": IMPACT_THRESHOLD,
                        "rewarded_runs": int(np.count_nonzero(ok)),
                        "task_runs": int(np.count_nonzero(is_task))}}


def _other_arm(ci: int, arms: Mapping[int, tuple[np.ndarray, ...]],
               names: tuple[str, ...]) -> RewardArm:
    """An arm beyond the lift's two: its reward, pass rate and comparisons, paired by task."""
    f = json_float
    comparisons: list[RewardComparison] = []
    for a, b in _COMPARISONS[ci]:
        lift = stats.paired_lift(arms[b][0], arms[a][0])
        comparisons.append({
            "comparison": f"{names[a]} − {names[b]}", "lift": f(lift.lift),
            "lift_se": f(lift.se), "ci_low": f(lift.ci_low), "ci_high": f(lift.ci_high),
            "ci_excludes_zero": lift.ci_excludes_zero,
            "sign_test": verdicts.sign_test(arms[b][0], arms[a][0]).to_json(),
            "n_tasks": lift.n})
    rate, runs = _rate(arms[ci][1], arms[ci][2])
    return {"reward": f(stats.nan_mean(arms[ci][0])), "pass_rate": rate, "runs": runs,
            "comparisons": comparisons}


def _rate(trials: np.ndarray, passed: np.ndarray) -> tuple[float | None, int]:
    """(share of rewarded runs that passed, rewarded runs) of one arm."""
    n = int(trials.sum())
    return (float(passed.sum() / n) if n else None), n


def _pass_k(trials: np.ndarray, passed: np.ndarray, *, every: bool) -> float | None:
    """Share of tasks with some rep passing (pass@k) or every rep passing (pass^k)."""
    have = trials > 0
    if not np.any(have):
        return None
    hit = (passed[have] >= trials[have]) if every else (passed[have] > 0)
    return float(np.mean(hit))


def terminal_lines(card: Data) -> list[str]:
    """The task-reward headline for the terminal summary (nothing for a week of prompts)."""
    data = card.get("rewards")
    if not data or not data.get("models"):
        return []
    rows = [("model", "reward no → with", "lift ± SE", "95% CI ≠ 0?", "pass no → with",
             "n tasks")]
    for label, m in data["models"].items():
        se = fmt(m["reward_lift_se"]) if m["reward_lift_se"] is not None else "n/a"
        rows.append((label, f"{fmt(m['reward_no'])} → {fmt(m['reward_with'])}",
                     f"{signed(m['reward_lift'])} ± {se}",
                     _ci(m["ci_excludes_zero"], m["reward_lift_se"]),
                     f"{_pct(m['pass_rate_no'])} → {_pct(m['pass_rate_with'])}",
                     str(m["n_tasks"])))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["task reward lift (verifier reward, with-skill − no-skill):"]
    lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
              for r in rows]
    lines.append(f"  rewarded {data['rewarded_runs']} of {data['task_runs']} task runs; "
                 f"verifier errors {len(data['verifier_errors'])}")
    return lines


def closing_part(card: Data) -> str:
    """``reward lift sonnet +1.000 ± 0.000`` for the session's last line ("" without tasks)."""
    data = card.get("rewards")
    models = (data.get("models") or {}) if data else {}
    lifts = [f"{label} {signed(m['reward_lift'])}"
             + (f" ± {fmt(m['reward_lift_se'])}" if m["reward_lift_se"] is not None else "")
             for label, m in models.items()
             if m.get("reward_lift") is not None]
    return f"reward lift {', '.join(lifts)}" if lifts else ""


def _ci(excludes_zero: bool | None, se: float | None) -> str:
    """The "95% CI ≠ 0?" cell (``ci_flag`` reads a must lift's keys: given its SE here, so a
    reward lift with an SE is not shown as "need ≥ 2")."""
    return ci_flag({"ci_excludes_zero": excludes_zero, "must_lift_se": se})


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.0f}%"


def render(card: Data) -> list[str]:
    """The Task rewards section of scorecard.md, as markdown lines."""
    data = card.get("rewards")
    if not data:
        return []
    L = ["## Task rewards (verifier, with-skill − no-skill)", "",
         f"Reward lift per model: mean over tasks of (with-skill − no-skill mean reward over "
         f"reps); {data['rewarded_runs']} of {data['task_runs']} task runs rewarded. A run "
         f"passes at reward ≥ {data['pass_reward']:g}. Never mixed into must coverage.", ""]
    rows = []
    for label, m in data["models"].items():
        se = fmt(m["reward_lift_se"]) if m["reward_lift_se"] is not None else "n/a"
        rows.append([untrusted(label), f"{fmt(m['reward_no'])} → {fmt(m['reward_with'])}",
                     f"{signed(m['reward_lift'])} ± {se}",
                     _ci(m["ci_excludes_zero"], m["reward_lift_se"]),
                     m["sign_test"].get("verdict", "n/a"),
                     f"{_pct(m['pass_rate_no'])} → {_pct(m['pass_rate_with'])} "
                     f"({m['runs_no']}/{m['runs_with']} runs)",
                     f"{m['helped']}/{m['hurt']}/{m['no_op']}", str(m["n_tasks"])])
    L += md_table(["model", "reward no → with", "lift ± SE", "95% CI ≠ 0?", "sign test",
                   "pass rate no → with", "helped/hurt/no-op", "n tasks"], rows)
    arm_rows = [[untrusted(label), untrusted(arm), fmt(a["reward"]), _pct(a["pass_rate"]),
                 untrusted(c["comparison"]), f"{signed(c['lift'])} ± {fmt(c['lift_se'])}",
                 _ci(c["ci_excludes_zero"], c["lift_se"]),
                 c["sign_test"].get("verdict", "n/a"), str(c["n_tasks"])]
                for label, m in data["models"].items() for arm, a in m["arms"].items()
                for c in a["comparisons"]]
    if arm_rows:
        L += ["", "The other arms on the tasks (paired by task, as for prompts: with-all − "
              "no-skill is the lift among every family, with-all − with-skill what the others "
              "cost; with-skill − with-skill@REF the version lift; no-skill-b − no-skill the "
              "A/A difference, a false lift when its interval excludes 0):", ""]
        L += md_table(["model", "arm", "reward", "pass rate", "comparison", "Δ ± SE",
                       "95% CI ≠ 0?", "sign test", "n tasks"], arm_rows)
    shown = data["tasks"][:MAX_ROWS]
    if shown:
        L += ["", f"Per task (±{100 * data['effect_threshold']:.0f} pp rule; trials are the "
              "rewarded runs each mean rests on — with 1–2 trials a task's call is noise):", ""]
        L += md_table(["task", "model", "reward no → with", "Δ", "effect", "trials no/with"],
                      [[untrusted(t["task"]), untrusted(t["model"]),
                        f"{fmt(t['reward_no'])} → {fmt(t['reward_with'])}", signed(t["delta"]),
                        t["effect"], f"{t['trials_no']}/{t['trials_with']}"] for t in shown])
        L += cap_note(len(shown), len(data["tasks"]), "task rows")
    if data["verifier_errors"]:
        L += ["", f"Verifier errors — excluded, never scored 0 ({len(data['verifier_errors'])}):",
              ""]
        L += [f"- `{untrusted(e['run_id'])}`: {untrusted(e['reason'])}"
              for e in data["verifier_errors"][:MAX_ROWS]]
        L += cap_note(min(MAX_ROWS, len(data["verifier_errors"])),
                      len(data["verifier_errors"]), "verifier errors")
    return [*L, ""]
