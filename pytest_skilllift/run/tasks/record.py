"""A task run's record and items: what the engine asks of a run that has a verifier.

``apply_verifier`` turns the verifier's outcome (``results.read_result``) into the run's
status and record fields: a completed run with a reward is ``ok`` (an empty final message does
not matter: the work is in the files); one without is ``verifier_error`` with the cause; a
no-skill run whose CLI listed one of the task's skills is ``invalid`` (the no-skill container
was not skill-free, so it measures nothing). ``verifier_rows`` gives the graded run's rows,
one per verifier test plus the ``reward`` item, keyed as the items are.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_skilllift.agents.claude_code import init_event
from pytest_skilllift.model import CLAUDE_CODE, RunSpec
from pytest_skilllift.run.tasks.results import PASSED, read_result, task_fields
from pytest_skilllift.week.files import (
    AGENT_SKILLS_FILE,
    COMPLETED,
    INVALID,
    OK,
    STDOUT_FILE,
    VERIFIER_ERROR,
)

#: The item every task run has beside its verifier tests: the reward against the threshold.
REWARD_ITEM = "reward"
#: A run passes when its primary reward reaches this (SkillsBench's binary reward: 1).
DEFAULT_PASS_REWARD = 1.0


def listed_skills(stdout: Path, max_lines: int = 50,
                  agent: str = CLAUDE_CODE) -> tuple[str, ...] | None:
    """The skills the CLI listed (None: no listing read): Claude Code's init event, another
    agent's listing command's output beside the transcript (``AGENT_SKILLS_FILE``)."""
    if agent != CLAUDE_CODE:
        from pytest_skilllift.trace.agent_streams import listed_skills as agent_listed

        try:
            text = (stdout.parent / AGENT_SKILLS_FILE).read_bytes().decode("utf-8", "replace")
        except OSError:
            return None
        return agent_listed(agent, text)
    event = init_event(stdout, max_lines)
    if event is None:
        return None
    raw = event.get("skills")
    return tuple(str(s.get("name") if isinstance(s, dict) else s)
                 for s in (raw if isinstance(raw, list) else []))


def apply_verifier(spec: RunSpec, record: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """``record`` with the task's fields and its status decided by the verifier."""
    task = spec.prompt.task
    assert task is not None
    result = read_result(run_dir, task)
    out = {**record, **task_fields(run_dir, task, result)}
    families = set(task.bundled_families) | {spec.prompt.family}
    listed = listed_skills(run_dir / STDOUT_FILE, agent=spec.agent)
    leaked = sorted(families & set(listed or ()))
    out["task_skills_listed"] = leaked
    status = record.get("run_status")
    if status not in COMPLETED:
        return out
    if not spec.with_skill and leaked:
        out["run_status"], out["run_error"] = INVALID, (
            f"the no-skill run listed the task's skill(s) {', '.join(leaked)}: its container "
            "is not skill-free (a COPY outside environment/skills?)")
    elif result.reward is None:
        out["run_status"], out["run_error"] = VERIFIER_ERROR, result.error
    else:
        out["run_status"], out["run_error"] = OK, ""
    return out


def verifier_rows(spec: RunSpec, record: dict[str, Any],
                  pass_reward: float = DEFAULT_PASS_REWARD) -> dict[str, dict[str, Any]]:
    """Item key → row (``verdict``: passed / failed / skipped…) of an ``ok`` task run."""
    task = spec.prompt.task
    assert task is not None
    tests = record.get("verifier_tests") or {}
    rows: dict[str, dict[str, Any]] = {}
    for name in task.verifier_tests:
        if name in tests:
            rows[name] = {"verdict": str(tests[name]), "item": name}
    reward = record.get("reward")
    if isinstance(reward, int | float):
        rows[REWARD_ITEM] = {"verdict": PASSED if reward >= pass_reward else "failed",
                             "item": REWARD_ITEM, "reward": float(reward)}
    return rows


def extra_tests(spec: RunSpec, record: dict[str, Any]) -> list[str]:
    """Tests the verifier reported that collection did not find in ``tests/`` (counted and
    named: they have no item of their own)."""
    task = spec.prompt.task
    known = set(task.verifier_tests) if task is not None else set()
    return sorted(set(record.get("verifier_tests") or {}) - known)
