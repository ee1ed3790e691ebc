"""Scripted agents for the stand-in: deterministic, and honest about what they saw.

The default :func:`skill_agent` behaves like a diligent model would under Claude Code's
progressive disclosure, using only what the CLI actually sent in the request:

1. when the request offers the ``Skill`` tool, the CLI lists available skills (in a
   ``<system-reminder>`` "The following skills are available for use with the Skill tool"),
   and no skill has been loaded yet, it calls ``Skill`` with the listed skill whose name and
   description best match the user's prompt;
2. once the conversation contains the skill body (the CLI injects the SKILL.md text after the
   ``Launching skill: <name>`` tool result) — or a ``Read`` of a SKILL.md returned it — it
   answers with the body's key lines;
3. with no relevant skill listed, it gives a generic answer built from the prompt's words.

Nothing is hard-coded about outcomes: a with-skill run reaches the skill only because the
CLI registered and listed it, and the answer contains the skill's content only because the
CLI delivered it. :func:`make_agent` builds variants for other paths (read the file, always
answer directly, misuse, endless tool loop).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pytest_skilllift.testing.replies import Handler, Reply, new_tool_id

#: How the CLI introduces the skill listing (2.1.x, in a system-reminder).
SKILL_LISTING_HEADER = "The following skills are available for use with the Skill tool"
#: How the CLI introduces an injected skill body (2.1.x).
SKILL_BODY_PREFIX = "Base directory for this skill:"
LAUNCHING_PREFIX = "Launching skill:"

MODES: tuple[str, ...] = ("skill", "read", "final", "misuse", "loop")

_STOPWORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "can", "do", "does", "for", "from",
    "has", "have", "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "need", "of",
    "on", "or", "our", "should", "so", "some", "that", "the", "their", "them", "then", "there",
    "these", "this", "to", "use", "used", "using", "want", "was", "we", "what", "when",
    "where", "which", "while", "who", "why", "will", "with", "would", "you", "your", "someone",
    "asks", "about", "also", "any", "get", "not", "more",
))
_WORD = re.compile(r"[a-z0-9]+")
_LINK = re.compile(r"\]\(([^)\s]+/SKILL\.md)\)")


# -- reading the request -------------------------------------------------------------------


def _texts(content: Any) -> Iterator[str]:
    """Every text string inside a message ``content`` (string, blocks, tool results)."""
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text":
                yield str(block.get("text", ""))
            elif block.get("type") == "tool_result":
                yield from _texts(block.get("content"))


def tool_names(body: dict[str, Any]) -> set[str]:
    """Names of the tools the request offers."""
    return {str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict)}


def listed_skills(body: dict[str, Any]) -> dict[str, str]:
    """Skills the CLI listed as available, ``{name: description}``, in listing order.

    2.1.x lists them in a user-turn system-reminder as ``- name: description`` lines; older
    versions put an ``<available_skills>`` block in the Skill tool description — both are read.
    """
    skills: dict[str, str] = {}
    sources: list[str] = []
    for msg in body.get("messages") or []:
        if isinstance(msg, dict):
            sources.extend(_texts(msg.get("content")))
    system = body.get("system")
    sources.extend(_texts(system) if isinstance(system, list) else [str(system or "")])
    for tool in body.get("tools") or []:
        if isinstance(tool, dict) and tool.get("name") == "Skill":
            sources.append(str(tool.get("description", "")))
    for text in sources:
        if SKILL_LISTING_HEADER in text:
            listing = text.split(SKILL_LISTING_HEADER, 1)[1]
            for line in listing.splitlines():
                m = re.match(r"^- ([^\s:]+):\s*(.*)$", line.strip())
                if m:
                    skills.setdefault(m.group(1), m.group(2))
        for block in re.findall(r"<skill>(.*?)</skill>", text, flags=re.S):
            name = re.search(r"<name>\s*(.*?)\s*</name>", block, flags=re.S)
            desc = re.search(r"<description>\s*(.*?)\s*</description>", block, flags=re.S)
            if name:
                skills.setdefault(name.group(1), desc.group(1) if desc else "")
    return skills


def skill_locations(body: dict[str, Any]) -> dict[str, str]:
    """``{name: SKILL.md path}`` from ``<skill>`` listings that give a ``<location>`` (the
    other agents' listings, see :mod:`~pytest_skilllift.testing.dialects`)."""
    system = body.get("system")
    text = "\n".join(_texts(system)) if isinstance(system, list) else str(system or "")
    out: dict[str, str] = {}
    for block in re.findall(r"<skill>(.*?)</skill>", text, flags=re.S):
        name = re.search(r"<name>\s*(.*?)\s*</name>", block, flags=re.S)
        where = re.search(r"<location>\s*(.*?)\s*</location>", block, flags=re.S)
        if name and where:
            out.setdefault(name.group(1), where.group(1).removeprefix("file://"))
    return out


def user_prompt(body: dict[str, Any]) -> str:
    """The user's actual question: the first user turn's text that is not a system-reminder."""
    for msg in body.get("messages") or []:
        if not isinstance(msg, dict) or msg.get("role") != "user":
            continue
        texts = [t for t in _texts(msg.get("content")) if not _is_reminder(t)]
        if texts:
            return texts[-1].strip()
    return ""


def _is_reminder(text: str) -> bool:
    return text.lstrip().startswith("<system-reminder>")


@dataclass(frozen=True)
class LoadedSkill:
    """A skill body that reached the conversation, and how."""

    text: str
    via: str  # "skill_tool" | "read"
    base_dir: str = ""


def loaded_skills(body: dict[str, Any]) -> list[LoadedSkill]:
    """Skill bodies present in the conversation, oldest first."""
    found: list[LoadedSkill] = []
    read_paths = {
        str(b.get("id")): str((b.get("input") or {}).get("file_path", ""))
        for b in iter_blocks(body, "assistant")
        if b.get("type") == "tool_use" and b.get("name") == "Read"
    }
    for msg in body.get("messages") or []:
        if not isinstance(msg, dict) or msg.get("role") != "user":
            continue
        content = msg.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        for block in blocks:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text":
                text = str(block.get("text", ""))
                if text.startswith(SKILL_BODY_PREFIX):
                    first, _, rest = text.partition("\n")
                    base = first[len(SKILL_BODY_PREFIX):].strip()
                    found.append(LoadedSkill(rest, "skill_tool", base))
            elif block.get("type") == "tool_result" and not block.get("is_error"):
                text = "\n".join(_texts(block.get("content")))
                stripped = _strip_line_numbers(text)
                if stripped.lstrip().startswith("---") and "\nname:" in stripped:
                    path = read_paths.get(str(block.get("tool_use_id")), "")
                    found.append(LoadedSkill(stripped, "read", path.rpartition("/")[0]))
    return found


def skill_launched(body: dict[str, Any]) -> bool:
    """Whether a ``Skill`` call has already returned (successfully or not)."""
    for msg in body.get("messages") or []:
        if not isinstance(msg, dict):
            continue
        content = msg.get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                text = "\n".join(_texts(block.get("content")))
                if LAUNCHING_PREFIX in text or "Unknown skill" in text:
                    return True
    return False


def tool_results(body: dict[str, Any]) -> int:
    """How many tool results the conversation holds (the agent's completed turns)."""
    return sum(
        1
        for msg in body.get("messages") or []
        if isinstance(msg, dict) and isinstance(msg.get("content"), list)
        for block in msg["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    )


def _strip_line_numbers(text: str) -> str:
    """Undo the Read tool's ``cat -n`` formatting (``   12\tline``).

    The CLI may append system-reminders after the numbered file lines, so only the leading
    run of numbered lines is kept when the text starts numbered.
    """
    lines = text.splitlines()
    if not lines or not re.match(r"^\s*\d+\t", lines[0]):
        return text
    kept: list[str] = []
    for ln in lines:
        m = re.match(r"^\s*\d+\t(.*)$", ln)
        if not m:
            break
        kept.append(m.group(1))
    return "\n".join(kept)


# -- choosing and answering ----------------------------------------------------------------


def _words(text: str) -> set[str]:
    out = set()
    for w in _WORD.findall(text.lower()):
        if w in _STOPWORDS or len(w) < 3:
            continue
        # A crude stem (first six letters) so "calibrate" meets "calibration".
        out.add(w[:6])
    return out


def match_scores(prompt: str, skills: dict[str, str]) -> dict[str, float]:
    """How well each listed skill fits the prompt.

    Word overlap weighted by inverse document frequency over the listing, so words that
    many skills mention (the CLI's built-in skills have long catch-all descriptions) count
    little. Name words (four letters or more) weigh three times; a description's overlap is
    damped by its length so a long description cannot win on volume alone.
    """
    words = _words(prompt)
    docs = {k: (_words(k.replace("-", " ")), _words(v)) for k, v in skills.items()}
    df: dict[str, int] = {}
    for name_words, desc_words in docs.values():
        for w in name_words | desc_words:
            df[w] = df.get(w, 0) + 1
    # A floor on the corpus size keeps short listings (a test's hand-made body) from
    # flattening every weight; the real CLI lists a dozen built-in skills anyway.
    n = max(len(docs), 10)

    def idf(w: str) -> float:
        return math.log((n + 1) / (df.get(w, 0) + 0.5))

    scores = {}
    for skill, (name_words, desc_words) in docs.items():
        by_name = sum(idf(w) for w in name_words & words if len(w) >= 4)
        by_desc = sum(idf(w) for w in desc_words & words)
        scores[skill] = 3.0 * by_name + by_desc / max(1.0, math.sqrt(len(desc_words) / 15))
    return scores


def best_skill(prompt: str, skills: dict[str, str], min_score: float = 5.0) -> str | None:
    """The listed skill that best matches the prompt, or None when nothing clears
    ``min_score`` (about one distinctive name word, or several distinctive description
    words). Ties keep listing order.

    On the qdrant prompts with the CLI's built-in skills listed beside the family, the
    default threshold picks the family for about four prompts in five (the rest are trigger
    misses, as with a real model) and a built-in skill rarely.
    """
    best: tuple[float, str] | None = None
    for name, score in match_scores(prompt, skills).items():
        if score >= min_score and (best is None or score > best[0]):
            best = (score, name)
    return best[1] if best else None


def skill_key_lines(text: str, limit: int = 12) -> list[str]:
    """The substance of a skill body: bullets and sentences, without frontmatter/headings."""
    body = text
    if body.lstrip().startswith("---"):
        parts = body.lstrip().split("---", 2)
        body = parts[2] if len(parts) == 3 else body
    lines: list[str] = []
    for raw in body.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", "```", "|", "<")) or line.startswith("---"):
            continue
        line = re.sub(r"^([-*+]|\d+[.)])\s+", "", line)
        if len(line) < 12:
            continue
        lines.append(line)
        if len(lines) >= limit:
            break
    return lines


def answer_from_skill(prompt: str, skill: LoadedSkill, name: str | None = None) -> str:
    """A final answer assembled from the skill body's key lines."""
    head = f"Following the {name} skill" if name else "Following the skill's guidance"
    lines = skill_key_lines(skill.text)
    bullets = "\n".join(f"- {ln}" for ln in lines) or "- (the skill gave no specific steps)"
    return f"{head}, here is how to approach it:\n\n{bullets}\n"


def generic_answer(prompt: str) -> str:
    """A plausible, content-light answer built only from the prompt's own words."""
    seen: list[str] = []
    for w in _WORD.findall(prompt.lower()):
        if w not in _STOPWORDS and len(w) > 2 and w not in seen:
            seen.append(w)
    topic = ", ".join(seen[:6]) or "your question"
    return (
        f"Here is a general approach regarding {topic}:\n\n"
        "- Start from the official documentation for the component involved.\n"
        "- Reproduce the situation on a small example before changing production.\n"
        "- Measure before and after each change, and change one thing at a time.\n"
    )


def _linked_leaf(skill: LoadedSkill, prompt: str) -> str | None:
    """A sub-skill the loaded body links to whose path matches the prompt (absolute path)."""
    if not skill.base_dir:
        return None
    best: tuple[int, str] | None = None
    words = _words(prompt)
    for link in _LINK.findall(skill.text):
        score = len(words & _words(link.replace("/", " ").replace("-", " ")))
        if score and (best is None or score > best[0]):
            best = (score, link)
    return f"{skill.base_dir.rstrip('/')}/{best[1]}" if best else None


def _read_paths(body: dict[str, Any]) -> set[str]:
    paths: set[str] = set()
    for msg in body.get("messages") or []:
        if isinstance(msg, dict) and msg.get("role") == "assistant":
            for block in msg.get("content") or []:
                if (isinstance(block, dict) and block.get("type") == "tool_use"
                        and block.get("name") == "Read"):
                    paths.add(str((block.get("input") or {}).get("file_path", "")))
    return paths


def make_agent(
    mode: str = "skill",
    *,
    skill: str | None = None,
    follow_leaf: bool = True,
    min_score: float = 5.0,
    skills_dir: str = "~/.claude/skills",
    loop_tool: str = "Bash",
    usage: dict[str, Any] | None = None,
) -> Handler:
    """Build a scripted agent.

    ``mode``:
      - ``"skill"`` (default): progressive disclosure through the ``Skill`` tool;
      - ``"read"``: reach the skill by ``Read`` of ``<skills_dir>/<name>/SKILL.md``
        (activation ``file_read``); the Read tool expands ``~``;
      - ``"final"``: answer at once from the prompt, never touching a tool;
      - ``"misuse"``: call ``Skill`` with a name that is not listed (the CLI rejects it),
        then answer generically;
      - ``"loop"``: call ``loop_tool`` forever (for ``--max-turns`` / budget tests).

    ``skill`` forces which listed skill to pick (it must still be listed); ``follow_leaf``
    also reads a sub-skill the loaded body links to when its path matches the prompt;
    ``usage`` overrides the reported token usage of every reply (e.g. huge input counts to
    exhaust a budget quickly).
    """
    if mode not in MODES:
        raise ValueError(f"unknown agent mode {mode!r}; expected one of {', '.join(MODES)}")

    def finish(reply: Reply) -> Reply:
        if usage:
            reply.usage = dict(usage)
        return reply

    def agent(body: dict[str, Any]) -> Reply:
        prompt = user_prompt(body)
        tools = tool_names(body)
        if mode == "final":
            return finish(Reply.text(generic_answer(prompt)))
        if mode == "loop":
            n = tool_results(body) + 1
            if loop_tool == "Bash":
                call = {"command": f"echo turn {n}", "description": f"Turn {n}"}
            else:
                call = {"file_path": "/etc/hostname"}
            return finish(Reply(content=[{"type": "tool_use", "id": new_tool_id(),
                                          "name": loop_tool, "input": call}],
                                stop_reason="tool_use"))

        listing = listed_skills(body)
        loaded = loaded_skills(body)
        if loaded:
            if follow_leaf:
                leaf = _linked_leaf(loaded[0], prompt)
                if leaf and leaf not in _read_paths(body) and "Read" in tools:
                    return finish(Reply.tool("Read", {"file_path": leaf}))
            name = skill or best_skill(prompt, listing, min_score)
            # The most specific content (a sub-skill read last) leads the answer.
            text = "\n".join(s.text for s in reversed(loaded))
            merged = LoadedSkill(text, loaded[0].via)
            return finish(Reply.text(answer_from_skill(prompt, merged, name)))

        if mode == "misuse":
            if "Skill" in tools and not skill_launched(body):
                return finish(Reply.tool("Skill", {"skill": "no-such-skill-xyz"}))
            return finish(Reply.text(generic_answer(prompt)))

        if skill_launched(body):
            # The skill was launched but no body arrived (e.g. it was denied or unknown).
            return finish(Reply.text(generic_answer(prompt)))
        choice = skill if skill in listing else best_skill(prompt, listing, min_score)
        if choice is None:
            return finish(Reply.text(generic_answer(prompt)))
        # Another agent's listing names each skill's file; Claude Code's does not.
        located = skill_locations(body).get(choice)
        if mode == "read":
            path = located or f"{skills_dir.rstrip('/')}/{choice}/SKILL.md"
            if "Read" in tools and path not in _read_paths(body):
                return finish(Reply.tool("Read", {"file_path": path}))
            return finish(Reply.text(generic_answer(prompt)))
        if "Skill" in tools:
            return finish(Reply.tool("Skill", {"skill": choice}))
        if located and "Read" in tools and located not in _read_paths(body):
            # An agent without a skill tool (Codex) is told to open the listed SKILL.md.
            return finish(Reply.tool("Read", {"file_path": located}))
        return finish(Reply.text(generic_answer(prompt)))

    return agent


_DEFAULT_AGENT = make_agent()


def skill_agent(request: dict[str, Any]) -> Reply:
    """The default scripted agent: progressive disclosure through the ``Skill`` tool.

    Same as ``make_agent()``: invoke the best-matching listed skill, read a linked sub-skill
    that matches the prompt, then answer from the skill's content; a generic answer when no
    listed skill fits.
    """
    return _DEFAULT_AGENT(request)


def prompt_words(prompt: str) -> list[str]:
    """The content words of a prompt (exposed for tests and variants)."""
    return sorted(_words(prompt))


def iter_blocks(body: dict[str, Any], role: str | None = None) -> Iterable[dict[str, Any]]:
    """Every content block of the conversation (optionally of one role), oldest first."""
    for msg in body.get("messages") or []:
        if not isinstance(msg, dict) or (role and msg.get("role") != role):
            continue
        content = msg.get("content")
        if isinstance(content, list):
            yield from (b for b in content if isinstance(b, dict))
