"""The built-in demo's two scripted "models".

They differ the way the methodology expects a large and a small model to, through mechanics
rather than scripted outcomes: the ``sonnet`` stand-in follows progressive disclosure into a
linked sub-skill when the link matches the question; the ``haiku`` stand-in stops at the
top-level SKILL.md and only reaches for a skill on a clear match (a higher trigger threshold),
so a weaker description shows up as a real trigger miss in its numbers.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pytest_skilllift.testing.agent_script import make_agent
from pytest_skilllift.testing.replies import Handler, Reply

#: Trigger threshold of the small stand-in (the default agent's is 5.0; see ``best_skill``).
SMALL_MODEL_MIN_SCORE = 10.0


def demo_agent() -> Handler:
    """Route each request by its ``model``: ids containing ``haiku`` get the small stand-in."""
    from pytest_skilllift.testing.task_script import task_agent

    # Task runs (the write tools offered) do the work through the CLI's tools.
    large = task_agent(make_agent("skill", follow_leaf=True))
    small = task_agent(make_agent("skill", follow_leaf=False, min_score=SMALL_MODEL_MIN_SCORE),
                       min_score=SMALL_MODEL_MIN_SCORE)

    def route(body: dict[str, Any]) -> Reply:
        return (small if "haiku" in str(body.get("model", "")) else large)(body)

    return route


#: The match share of the demo's judge per family (``judge_script.decide``): the Claude
#: judge the keyword judge's own, the OpenAI judge stricter, the Google judge more lenient —
#: a panel of the three then disagrees on the items near the threshold, as judges do.
DEMO_JUDGE_SHARES: dict[str, float] = {"anthropic": 0.5, "openai": 0.6, "google": 0.4}


def demo_judge() -> Handler:
    """The demo's judge: the keyword judge, its match share by the requested model's family
    (:data:`DEMO_JUDGE_SHARES`; a Claude id or an unknown one gets the keyword judge's)."""
    from pytest_skilllift.judge.providers import family_of
    from pytest_skilllift.testing.judge_script import threshold_judge

    judges = {fam: threshold_judge(share) for fam, share in DEMO_JUDGE_SHARES.items()}

    def route(body: dict[str, Any]) -> Reply:
        family = family_of(str(body.get("model", "")))
        return judges.get(family, judges["anthropic"])(body)

    return route


#: The demo's earlier revision of its skills (``skills-v1`` beside the demo project's
#: ``skills``, in ``config.DEMO_PROJECT``): the git-bisect skill without its ``git bisect
#: run`` and ``git bisect skip`` lines, the other families unchanged. Where the scripted agent
#: (which answers from the skill's lines) loads git-bisect, the current version meets more of
#: git-bisect-regression's must items than this one, and the other prompts' answers are the
#: same: a version comparison whose effect is known.
DEMO_SKILLS_BEFORE = "skills-v1"


def write_skills_history(repo: Path, before: Path, after: Path) -> tuple[str, str]:
    """Make ``repo`` a git repository whose first commit holds ``before``'s families and whose
    second (HEAD) holds ``after``'s: ``with-skill@HEAD~1`` is then ``before``. Returns the two
    commits. For the demo and its tests (git with a fixed, local identity)."""
    import shutil
    import subprocess

    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull,
           "GIT_AUTHOR_NAME": "demo", "GIT_AUTHOR_EMAIL": "demo@example.org",
           "GIT_COMMITTER_NAME": "demo", "GIT_COMMITTER_EMAIL": "demo@example.org"}

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(repo), *args], check=True, env=env,
                              capture_output=True, text=True).stdout.strip()

    repo.mkdir(parents=True, exist_ok=True)
    git("init", "-q")
    commits = []
    for label, source in (("before", before), ("after", after)):
        for child in repo.iterdir():
            if child.name != ".git":
                shutil.rmtree(child) if child.is_dir() else child.unlink()
        for family in sorted(p for p in source.iterdir() if (p / "SKILL.md").is_file()):
            shutil.copytree(family, repo / family.name)
        git("add", "-A")
        git("commit", "-q", "--allow-empty", "-m", f"skills: {label}")
        commits.append(git("rev-parse", "HEAD"))
    return commits[0], commits[1]
