"""The session's other arms on Harbor tasks (docs/tasks.md, "Arms"): what each arm of a task
installs and builds its image from, without docker — with-all every family of the skills
root beside the task's own, no-skill-b nothing, with-skill@REF the task's skills as they were
at REF (a ``[metadata] skill`` family from the skills root's revision, ``environment/skills``
from the task's git history), and the (task, arm) pairs that cannot run named."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.config import DEMO_PROJECT, DEMO_TASKS, OPTIONS, Settings
from pytest_skilllift.model import PromptSpec
from pytest_skilllift.run.matrix import load_matrix, task_runs
from pytest_skilllift.run.tasks.plan import arms_left_out, left_out_line, task_arm
from pytest_skilllift.runners.task_docker import task_installs
from pytest_skilllift.runners.task_image import (
    REVISION_MARKER,
    _context_files,
    context_hash,
    skills_source,
)

ARMS = "no-skill,with-skill,with-all,no-skill-b,with-skill@HEAD~1"
OLD_SKILL = "the skill as it was at HEAD~1\n"


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A git repository: two families of a skills root, the demo task (skills bundled) and a
    task naming a family of the root; its second commit edits both tasks' skills."""
    root = tmp_path / "proj"
    (root / "skills").mkdir(parents=True)
    for family in ("git-bisect", "python-packaging"):
        shutil.copytree(DEMO_PROJECT / "skills" / family, root / "skills" / family)
    tasks = root / "evals" / "tasks"
    shutil.copytree(DEMO_TASKS / "sales-report", tasks / "sales-report")
    named = tasks / "named"
    shutil.copytree(DEMO_TASKS / "sales-report", named)
    shutil.rmtree(named / "environment" / "skills")
    toml = named / "task.toml"
    toml.write_text(toml.read_text().replace('[metadata]\n', '[metadata]\nskill = "git-bisect"\n'))
    bundled = tasks / "sales-report" / "environment" / "skills" / "csv-report" / "SKILL.md"
    shipped, bisect = bundled.read_text(), (root / "skills" / "git-bisect" / "SKILL.md")
    bundled.write_text(shipped.replace("# Sales ledger", OLD_SKILL + "# Sales ledger"))
    new_bisect = bisect.read_text()
    bisect.write_text(new_bisect + OLD_SKILL)
    git(root, "init", "-q")
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "add", "-A")
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "v1")
    bundled.write_text(shipped)
    bisect.write_text(new_bisect)
    git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qam", "v2")
    return root


def settings(root: Path, conditions: str = ARMS) -> Settings:
    values: dict[str, Any] = {o.name: o.default for o in OPTIONS}
    values.update(models="sonnet=claude-sonnet-4-5", reps=1, conditions=conditions,
                  out=str(root / "week"))
    return Settings.from_values(lambda o: values[o.name], enabled=True, rootdir=root)


def tasks_of(s: Settings) -> dict[str, PromptSpec]:
    return {p.name: p for p in load_matrix(s).prompts.values() if p.task is not None}


def test_every_arm_of_the_session_runs_on_tasks(project: Path) -> None:
    s = settings(project)
    runs = task_runs(tasks_of(s)["sales-report"], s)
    assert [r.condition for r in runs] == ARMS.split(",")
    assert [r.with_skill for r in runs] == [False, True, True, False, True]
    assert len({r.run_id for r in runs}) == 5
    assert arms_left_out(tasks_of(s).values(), s) == []
    # the A/A arm is built and installed as no-skill is: skills emptied, nothing installed
    no, no_b = runs[0], runs[3]
    assert no_b.prompt == no.prompt and task_installs(no_b, _cfg(s)) == []
    assert no_b.prompt.task is not None and skills_source(no_b.prompt.task, False) is None


def _cfg(s: Settings) -> Any:
    from pytest_skilllift.model import AgentConfig

    return AgentConfig(claude_path="claude", skills_root=s.skills_root)


def test_with_all_installs_every_family_of_the_skills_root(project: Path) -> None:
    s = settings(project)
    tasks = tasks_of(s)
    bundled = task_arm(tasks["sales-report"], "with-all", s)
    assert bundled.task is not None
    # the task's own skill stays in its image; every family of the root is installed beside
    assert bundled.task.installs == ("git-bisect", "python-packaging")
    assert bundled.task.skills_dir is None
    named = task_arm(tasks["named"], "with-all", s)
    assert named.task is not None and named.task.installs == ("git-bisect", "python-packaging")
    assert named.family == "git-bisect"  # its own family first, the audit's family
    run = next(r for r in task_runs(tasks["named"], s) if r.condition == "with-all")
    assert task_installs(run, _cfg(s)) == [s.skills_root / "git-bisect",
                                           s.skills_root / "python-packaging"]


def test_with_skill_at_ref_builds_the_tasks_skills_as_they_were(project: Path,
                                                                tmp_path: Path) -> None:
    s = settings(project)
    tasks = tasks_of(s)
    cli = tmp_path / "claude"
    cli.write_bytes(b"cli")
    shipped = tasks["sales-report"].task
    at_ref = task_arm(tasks["sales-report"], "with-skill@HEAD~1", s).task
    assert shipped is not None and at_ref is not None and at_ref.skills_dir is not None
    assert at_ref.skills_dir.is_relative_to(s.out_dir / ".revisions")
    assert OLD_SKILL in (at_ref.skills_dir / "csv-report" / "SKILL.md").read_text()
    files = dict(_context_files(at_ref, True))
    assert files["skills/csv-report/SKILL.md"] == at_ref.skills_dir / "csv-report" / "SKILL.md"
    assert not any(REVISION_MARKER in rel for rel in files)  # the marker is not a skill's
    assert files["Dockerfile"] == shipped.environment / "Dockerfile"
    # another image than with-skill's; the no-skill image is the same whatever the REF
    assert context_hash(at_ref, True, cli) != context_hash(shipped, True, cli)
    assert context_hash(at_ref, False, cli) == context_hash(shipped, False, cli)
    # a REF whose skills are the shipped ones builds (and reuses) the shipped image
    same = task_arm(tasks["sales-report"], "with-skill@HEAD", settings(
        project, "no-skill,with-skill@HEAD")).task
    assert same is not None and context_hash(same, True, cli) == context_hash(shipped, True, cli)
    # a task naming a family of the root installs it from the root's revision, as prompts do
    named = task_arm(tasks["named"], "with-skill@HEAD~1", s)
    assert named.task is not None and named.task.installs == ("git-bisect",)
    assert named.task.installs_root is not None and named.task.skills_dir is None
    assert OLD_SKILL in (named.task.installs_root / "git-bisect" / "SKILL.md").read_text()
    run = next(r for r in task_runs(tasks["named"], s) if r.condition == "with-skill@HEAD~1")
    assert task_installs(run, _cfg(s)) == [named.task.installs_root / "git-bisect"]


def test_an_arm_a_task_cannot_run_is_left_out_and_named(project: Path) -> None:
    # a task added after REF: its environment/skills did not exist then
    shutil.copytree(project / "evals" / "tasks" / "sales-report",
                    project / "evals" / "tasks" / "new-task")
    s = settings(project)
    tasks = tasks_of(s)
    runs = task_runs(tasks["new-task"], s)
    assert [r.condition for r in runs] == ["no-skill", "with-skill", "with-all", "no-skill-b"]
    (line,) = arms_left_out(tasks.values(), s)
    assert line.startswith("new-task: with-skill@HEAD~1 left out: with-skill@HEAD~1: ")
    assert "did not exist at commit" in line and "pick a later revision" in line
    shown = left_out_line(tasks.values(), s)
    assert shown is not None and shown.startswith("skill-lift tasks: 1 (task, arm) pair(s) "
                                                  "not run:") and "new-task" in shown
    # a directory REF (earlier families of the skills root) has no task's environment/skills
    shutil.copytree(project / "skills", project / "skills-v1")
    d = settings(project, "no-skill,with-skill@skills-v1")
    lines = arms_left_out(tasks_of(d).values(), d)
    assert {ln.split(":", 1)[0] for ln in lines} == {"new-task", "sales-report"}
    assert all("a directory REF" in ln and "give a git REF" in ln for ln in lines)
    named = task_arm(tasks_of(d)["named"], "with-skill@skills-v1", d)
    assert named.task is not None and named.task.installs_root == (project / "skills-v1"
                                                                   ).resolve()
