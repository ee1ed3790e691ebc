"""Scripted agents for trigger tests: a model that looks around before reaching for a skill.

Real models often call another tool first (list the files, grep the project) and load the
skill only afterwards. :func:`explore_first` scripts that from the query itself: when the
user's message mentions the project's files (``repo``, ``repository``, ``codebase``…), the
first turn is a ``Glob`` (or ``Bash``) call; every later turn is the wrapped agent's, which
still decides from the CLI's own skill listing whether a skill fits. A trigger test must
count such a run as triggered — a check of the first tool call alone would call it a miss.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pytest_skilllift.testing.agent_script import (
    prompt_words,
    skill_agent,
    tool_names,
    tool_results,
    user_prompt,
)
from pytest_skilllift.testing.replies import Handler, Reply

#: Query words that make the scripted model explore the working directory first.
EXPLORE_WORDS: tuple[str, ...] = ("repo", "repository", "codebase", "project", "checkout")


def explore_first(agent: Handler | None = None, *, tool: str = "Glob",
                  words: Iterable[str] = EXPLORE_WORDS) -> Handler:
    """Wrap ``agent`` (default :func:`skill_agent`): when the query mentions one of
    ``words`` and the request offers ``tool``, the first turn calls ``tool`` on the working
    directory; from then on ``agent`` answers."""
    base = agent or skill_agent
    # prompt_words stems to six letters; stem the triggers the same way.
    stems = {w for word in words for w in prompt_words(word)}

    def handler(body: dict[str, Any]) -> Reply:
        query = user_prompt(body)
        if (tool_results(body) == 0 and tool in tool_names(body)
                and stems & set(prompt_words(query))):
            call = ({"pattern": "**/*"} if tool == "Glob"
                    else {"command": "ls -la", "description": "List the project files"})
            return Reply.tool(tool, call, text="Let me look at the project first.")
        return base(body)

    return handler
