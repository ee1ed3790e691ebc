"""Task rewards in the scorecard: the reward lift with the must lift's statistics, the pass
rate, per-task helped / hurt, verifier errors named; gates read them; must coverage never
sees a reward."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_skilllift.report import gates as g
from pytest_skilllift.report import stats
from pytest_skilllift.report.gates import measure
from pytest_skilllift.report.summarize import summarize_week

from .test_week_io import write_week

TASKS = ("t-a", "t-b", "t-c")
#: (task, condition, rep) → reward; ("t-c", "no-skill", 2) is a verifier error.
REWARDS = {("t-a", "no-skill"): (0, 0), ("t-a", "with-skill"): (1, 1),
           ("t-b", "no-skill"): (0, 1), ("t-b", "with-skill"): (1, 1),
           ("t-c", "no-skill"): (1, None), ("t-c", "with-skill"): (0, 0)}


def _reward(run: dict[str, str]) -> str:
    if run["prompt"] not in TASKS:
        return ""
    value = REWARDS[run["prompt"], run["condition"]][int(run["rep"]) - 1]
    return "" if value is None else f"{value:.1f}"


def _status(run: dict[str, str]) -> str:
    return "verifier_error" if run["prompt"] in TASKS and _reward(run) == "" else "ok"


@pytest.fixture(scope="module")
def week(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_week(
        tmp_path_factory.mktemp("rewards") / "w", prompts=("p-a", "p-b", *TASKS),
        manifest_extra={
            "run_status": _status,
            "run_error": lambda r: ("the verifier wrote no reward (test.sh exited 2)"
                                    if _status(r) == "verifier_error" else ""),
            "task": lambda r: r["prompt"] if r["prompt"] in TASKS else "",
            "reward": _reward},
        skip_scores=lambda r: r["prompt"] in TASKS)


def test_the_reward_lift_and_its_statistics(week: Path) -> None:
    summary = summarize_week(week, write=False)
    rewards = summary.data["rewards"]
    assert rewards is not None
    m = rewards["models"]["sonnet"]
    # Per task: t-a 0 → 1, t-b 0.5 → 1, t-c 1 → 0 (its errored rep left out, never a zero).
    assert m["reward_no"] == pytest.approx(0.5) and m["reward_with"] == pytest.approx(2 / 3)
    assert m["reward_lift"] == pytest.approx((1 + 0.5 - 1) / 3)
    expected = stats.paired_lift([0.0, 0.5, 1.0], [1.0, 1.0, 0.0])  # type: ignore[arg-type]
    assert m["reward_lift_se"] == pytest.approx(expected.se)
    assert m["ci_low"] == pytest.approx(expected.ci_low) and m["n_tasks"] == 3
    assert m["sign_test"]["wins"] == 2 and m["sign_test"]["losses"] == 1
    # Pass rate over rewarded runs: no-skill 2 of 5, with-skill 4 of 6.
    assert m["pass_rate_no"] == pytest.approx(0.4) and m["runs_no"] == 5
    assert m["pass_rate_with"] == pytest.approx(4 / 6) and m["runs_with"] == 6
    assert m["pass_at_k_no"] == pytest.approx(2 / 3)
    assert m["pass_hat_k_no"] == pytest.approx(1 / 3)
    assert (m["helped"], m["hurt"], m["no_op"]) == (2, 1, 0)
    by_task = {t["task"]: t for t in rewards["tasks"]}
    assert by_task["t-c"]["effect"] == "hurt" and by_task["t-c"]["trials_no"] == 1
    assert rewards["verifier_errors"] == [{"run_id": "t-c-sonnet-no-skill-r2",
                                           "reason": "the verifier wrote no reward "
                                                     "(test.sh exited 2)"}]
    assert (rewards["rewarded_runs"], rewards["task_runs"]) == (11, 12)


def test_must_coverage_never_sees_a_reward(week: Path) -> None:
    summary = summarize_week(week, write=False)
    assert summary.data["models"]["sonnet"]["n_prompts"] == 2  # the two prompts only
    text = summary.markdown
    assert "## Task rewards" in text and "t-c-sonnet-no-skill-r2" in text
    # both headlines in the terminal, each on its own table
    lines = summary.terminal_lines()
    must = next(i for i, ln in enumerate(lines) if ln.startswith("skill lift (must_coverage"))
    reward = next(i for i, ln in enumerate(lines) if ln.startswith("task reward lift"))
    assert must < reward
    assert any("sonnet" in ln and "0.500 → 0.667" in ln and "+0.167" in ln
               for ln in lines[reward:])
    assert "reward lift sonnet +0.167 ± " in summary.closing_line()


def test_reward_gates(week: Path) -> None:
    summary = summarize_week(week, write=False)
    report = measure([g.parse_gate("reward_lift>0.1"), g.parse_gate("reward_lift_ci_low>0"),
                      g.parse_gate("sonnet.with-skill.reward_pass_rate>=0.6")],
                     summary, 0.5, "w")
    verdicts = {r.gate.expr: (r.passed, r.measured) for r in report.results}
    assert verdicts["reward_lift>0.1"][0] is True
    assert verdicts["reward_lift>0.1"][1] == pytest.approx(1 / 6)
    assert verdicts["reward_lift_ci_low>0"][0] is False  # one task hurt: not significant
    assert verdicts["sonnet.with-skill.reward_pass_rate>=0.6"][0] is True
    assert verdicts["sonnet.with-skill.reward_pass_rate>=0.6"][1] == pytest.approx(4 / 6)


def test_a_week_without_tasks_has_no_rewards_section(tmp_path: Path) -> None:
    summary = summarize_week(write_week(tmp_path / "w"), write=False)
    assert summary.data["rewards"] is None
    assert "Task rewards" not in summary.markdown


def test_a_week_of_tasks_only_names_no_missing_scores(tmp_path: Path) -> None:
    week = write_week(
        tmp_path / "w", prompts=TASKS,
        manifest_extra={"run_status": _status, "run_error": lambda r: "", "task": lambda r: "",
                        "reward": _reward},
        skip_scores=lambda r: True)
    summary = summarize_week(week, write=False)
    assert not [p for p in summary.problems if "scores.csv" in p], summary.problems
    rewards = summary.data["rewards"]
    assert rewards is not None and rewards["models"]["sonnet"]["n_tasks"] == 3
    assert summary.data["coverage"]["graded_runs"] == 11


#: (task, arm) → rewards of reps 1 and 2: every arm a session may run, on three tasks.
ARM_REWARDS = {
    "no-skill": {"t-a": (0, 0), "t-b": (0, 0), "t-c": (1, 1)},
    "with-skill": {"t-a": (1, 1), "t-b": (1, 0), "t-c": (1, 1)},
    "with-all": {"t-a": (1, 1), "t-b": (0, 0), "t-c": (0, 1)},
    "no-skill-b": {"t-a": (0, 0), "t-b": (0, 1), "t-c": (1, 1)},
    "with-skill@HEAD~1": {"t-a": (0, 1), "t-b": (0, 0), "t-c": (1, 1)},
}


def test_the_other_arms_show_on_tasks_as_they_show_for_prompts(tmp_path: Path) -> None:
    """with-all against no-skill and with-skill, with-skill@REF as the version lift, no-skill-b
    as the A/A difference: each paired by task with the lift's statistics."""
    def reward(run: dict[str, str]) -> str:
        return f"{ARM_REWARDS[run['condition']][run['prompt']][int(run['rep']) - 1]:.1f}"

    week = write_week(
        tmp_path / "w", prompts=TASKS, conditions=tuple(ARM_REWARDS),
        manifest_extra={"run_status": lambda r: "ok", "run_error": lambda r: "",
                        "task": lambda r: r["prompt"], "reward": reward},
        skip_scores=lambda r: True)
    summary = summarize_week(week, write=False)
    rewards = summary.data["rewards"]
    assert rewards is not None
    m = rewards["models"]["sonnet"]
    # the lift's two arms are as before: per-task means no [0, 0, 1], with [1, .5, 1]
    assert m["reward_lift"] == pytest.approx(0.5)
    arms = m["arms"]
    assert list(arms) == ["with-all", "no-skill-b", "with-skill@HEAD~1"]
    means = {"no-skill": [0.0, 0.0, 1.0], "with-skill": [1.0, 0.5, 1.0],
             "with-all": [1.0, 0.0, 0.5], "no-skill-b": [0.0, 0.5, 1.0],
             "with-skill@HEAD~1": [0.5, 0.0, 1.0]}

    def expect(a: str, b: str) -> Any:
        return stats.paired_lift(np.array(means[b]), np.array(means[a]))

    pairs = {"with-all": [("with-all", "no-skill"), ("with-all", "with-skill")],
             "with-skill@HEAD~1": [("with-skill", "with-skill@HEAD~1"),
                                   ("with-skill@HEAD~1", "no-skill")],
             "no-skill-b": [("no-skill-b", "no-skill")]}
    for arm, comparisons in pairs.items():
        got = arms[arm]["comparisons"]
        assert [c["comparison"] for c in got] == [f"{a} − {b}" for a, b in comparisons]
        for c, (a, b) in zip(got, comparisons, strict=True):
            want = expect(a, b)
            assert c["lift"] == pytest.approx(want.lift) and c["n_tasks"] == 3
            assert c["lift_se"] == pytest.approx(want.se)
            assert c["ci_excludes_zero"] == want.ci_excludes_zero
    assert arms["with-all"]["comparisons"][1]["lift"] == pytest.approx(-1 / 3)  # the others cost
    assert arms["with-skill@HEAD~1"]["comparisons"][0]["lift"] == pytest.approx(1 / 3)
    assert arms["no-skill-b"]["comparisons"][0]["lift"] == pytest.approx(1 / 6)  # A/A
    for arm in arms:  # three of six runs reach reward 1 in each other arm
        assert arms[arm]["pass_rate"] == pytest.approx(0.5) and arms[arm]["runs"] == 6
    assert arms["with-all"]["reward"] == pytest.approx(0.5)
    text = re.sub(r" +", " ", summary.markdown)  # the table's padding
    assert "The other arms on the tasks" in text
    assert "| sonnet | with-all | 0.500 | 50% | with-all − with-skill | -0.333 ± 0.167 | no " \
        in text
    assert "| no-skill-b − no-skill | +0.167 ± 0.167 | no " in text
    # the reward lift's own interval cell reads its SE (it once always said "need >=2")
    task_section = text[text.index("## Task rewards"):text.index("The other arms")]
    assert "| +0.500 ± 0.289 | no |" in task_section and "need >=2" not in task_section
    scopes = g.Scopes(models=("sonnet",), prompts=TASKS, conditions=tuple(ARM_REWARDS))
    report = measure([g.resolve(g.parse_gate(expr), scopes) for expr in (
        "sonnet.with-all.reward_pass_rate>=0.5", "sonnet.no-skill-b.reward_pass_rate<0.5")],
        summary, 0.5, "w")
    assert [r.passed for r in report.results] == [True, False]
    assert [r.measured for r in report.results] == pytest.approx([0.5, 0.5])
