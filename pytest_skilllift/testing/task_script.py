"""A scripted agent that does work: for Harbor task runs, through the CLI's own tools.

When the instruction names a file by its absolute path (``/app/report.json``: a task's
instruction says where the work goes) and the request offers the ``Write`` tool, the agent
works instead of only answering (the CLI lists Write in prompt runs too, where it is not
allowed; a question that names no file is answered as before):

1. a listed skill that matches the instruction is launched with ``Skill`` (the same choice
   as :func:`~pytest_skilllift.testing.agent_script.best_skill`), or its listed SKILL.md
   read with ``Read`` by an agent without a skill tool (Codex CLI);
2. once the skill's body is in the conversation, each fenced ```` ```bash ```` block of it is
   run, in order, with the CLI's ``Bash`` tool (inside the task's container), then it answers;
3. with no skill to follow, it makes a generic attempt — ``Write`` of ``ATTEMPT.md`` in the
   working directory the CLI reports, holding the generic answer — and answers.

So a task's outcome changes with the skill only because the CLI listed it, delivered its body
and ran its commands: the with-skill container does what the skill says, the no-skill one
what any prompt-only agent would. Without ``Write`` offered it is the wrapped agent.

The other agents meet the same script through their dialects
(:mod:`~pytest_skilllift.testing.dialects`): ``Write`` and ``Bash`` become Codex CLI's
shell tool (a here-document for the write), Gemini CLI's ``write_file`` and
``run_shell_command``, OpenCode's ``write`` and ``bash`` — each CLI's own tools do the work.
"""

from __future__ import annotations

import re
from typing import Any

from pytest_skilllift.testing.agent_script import (
    best_skill,
    generic_answer,
    iter_blocks,
    listed_skills,
    loaded_skills,
    skill_launched,
    skill_locations,
    tool_names,
    user_prompt,
)
from pytest_skilllift.testing.replies import Handler, Reply

_BASH_BLOCK = re.compile(r"```(?:bash|sh)\n(.*?)```", re.S)
#: An absolute file path in the instruction (``/app/sales.csv``): what makes it a task.
_FILE_PATH = re.compile(r"(?:^|\s)/[\w.-]+(?:/[\w.-]+)*\.\w+")
#: The working directory as each CLI states it: Claude Code's and OpenCode's system prompt,
#: Codex's ``<environment_context>``, Gemini CLI's workspace directories (the cwd first).
_WORKDIR = re.compile(r"[Ww]orking directory: (/\S*)|<cwd>(/[^<\s]*)</cwd>"
                      r"|\*\*Workspace Directories:\*\*\s*- (/\S*)")
#: The file the no-skill attempt writes (in the working directory).
ATTEMPT_FILE = "ATTEMPT.md"


def skill_commands(text: str) -> list[str]:
    """The fenced bash blocks of a skill body, in order."""
    return [block.strip() for block in _BASH_BLOCK.findall(text) if block.strip()]


def _tool_inputs(body: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [dict(b.get("input") or {}) for b in iter_blocks(body, "assistant")
            if b.get("type") == "tool_use" and b.get("name") == name]


def working_directory(body: dict[str, Any]) -> str:
    """The working directory the CLI states in its system prompt ("/tmp" when absent)."""
    system = body.get("system")
    texts = [str(b.get("text", "")) for b in system if isinstance(b, dict)] \
        if isinstance(system, list) else [str(system or "")]
    texts += [str(b.get("text", "")) for b in iter_blocks(body, "user") if b.get("type") == "text"]
    for text in texts:
        match = _WORKDIR.search(text)
        if match:
            return next(g for g in match.groups() if g)
    return "/tmp"


def task_agent(inner: Handler, *, min_score: float = 5.0) -> Handler:
    """The working agent above for an instruction naming a file; ``inner`` otherwise."""

    def agent(body: dict[str, Any]) -> Reply:
        tools = tool_names(body)
        prompt = user_prompt(body)
        if "Write" not in tools or not _FILE_PATH.search(prompt):
            return inner(body)
        loaded = loaded_skills(body)
        if loaded:
            ran = {str(i.get("command", "")).strip() for i in _tool_inputs(body, "Bash")}
            for command in skill_commands("\n".join(s.text for s in loaded)):
                if command not in ran and "Bash" in tools:
                    return Reply.tool("Bash", {"command": command,
                                               "description": "Run the skill's step"})
            return Reply.text("Done: I followed the skill's steps and ran each of its "
                              "commands.")
        if not skill_launched(body):
            choice = best_skill(prompt, listed_skills(body), min_score)
            located = skill_locations(body).get(choice or "")
            if choice is not None and "Skill" in tools:
                return Reply.tool("Skill", {"skill": choice})
            if located and "Read" in tools and not any(
                    i.get("file_path") == located for i in _tool_inputs(body, "Read")):
                # An agent without a skill tool (Codex) opens the listed SKILL.md.
                return Reply.tool("Read", {"file_path": located})
        if not _tool_inputs(body, "Write"):
            path = f"{working_directory(body).rstrip('/')}/{ATTEMPT_FILE}"
            return Reply.tool("Write", {"file_path": path, "content": generic_answer(prompt)})
        return Reply.text(generic_answer(prompt))

    return agent
