"""PluginEval's six anti-pattern flags, Claude Code's frontmatter rules, and dead links.

Anti-pattern triggers follow PluginEval's evaluation methodology word for word:

* OVER_CONSTRAINED   more than 15 occurrences of MUST, ALWAYS or NEVER in the SKILL.md
* EMPTY_DESCRIPTION  frontmatter ``description`` shorter than 20 characters after stripping
* MISSING_TRIGGER    description contains none of "use when", "use this skill when",
                     "use proactively", "trigger when" (case-insensitive), nor one of the
                     trigger clauses real skill sets write instead (``TRIGGER_CLAUSE``)
* BLOATED_SKILL      SKILL.md exceeds 800 lines AND the skill has no references/ directory
* ORPHAN_REFERENCE   a Markdown link ``[text](references/filename)`` whose file does not exist
* DEAD_CROSS_REF     a relative path to another skill or agent that cannot be resolved

Only these six count toward the penalty ``max(0.5, 1 - 0.05 * count)``. Frontmatter-rule and
dead-link findings are reported (and fail their own ``--skill-lint`` tests) but do not touch
the penalty, so the composite stays PluginEval's number.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass
from urllib.parse import unquote

from pytest_skilllift.lint.agentskills import spec_findings
from pytest_skilllift.skill.skillfile import Finding, Link, SkillFile

OVER_CONSTRAINED_THRESHOLD = 15  # "more than 15"
EMPTY_DESCRIPTION_MIN = 20  # "fewer than 20 characters after stripping"
BLOATED_LINES = 800  # "exceeds 800 lines"
TRIGGER_PHRASES: tuple[str, ...] = (
    "use when",
    "use this skill when",
    "use proactively",
    "trigger when",
)
#: The trigger clauses real skill sets write besides PluginEval's four phrases (measured on
#: anthropics/skills and qdrant/skills, docs/static-analysis.md): "Use this when …", "Use it
#: when …", "Use for …" opening a sentence, "Invoke/Apply this skill when …", "TRIGGER — …
#: whenever …", "Triggers: …", and "when(ever) the user / someone asks …". A description
#: holding one names when to route to the skill as PluginEval's phrases do.
TRIGGER_CLAUSE = re.compile(
    r"\buse (?:this(?: skill)? |it |the skill |these )?(?:when|whenever)\b"
    r"|(?:^|[.;:!?)\]]\s+|[—–]\s*)use (?:this(?: skill)? |it )?(?:for|if|before|after)\b"
    r"|\b(?:invoke|activate|apply|load|consult|call) (?:this(?: skill)?|it|the skill) "
    r"(?:when|whenever|for|if|before)\b"
    r"|\btrigger(?:s|ed)?\b[^.]{0,240}?\bwhen(?:ever)?\b|\btriggers?\s*[:—–]"
    r"|\bwhen(?:ever)? (?:the |a )?(?:users?|someone|customers?|you are asked|asked|requested)"
    r"\b")
ANTI_PATTERN_FLAGS: tuple[str, ...] = (
    "OVER_CONSTRAINED",
    "EMPTY_DESCRIPTION",
    "MISSING_TRIGGER",
    "BLOATED_SKILL",
    "ORPHAN_REFERENCE",
    "DEAD_CROSS_REF",
)

# Claude Code's frontmatter rules. Sources (checked 2026-11, via the docs search index):
# * code.claude.com/docs/en/skills, "Required Frontmatter Fields" (as mirrored in
#   EveryInc compound-engineering references/official-spec.md, 2026-01): `name` — "lowercase
#   letters, numbers, and hyphens only (max 64 characters)"; `description` — "What the Skill
#   does and when to use it (max 1024 characters)"; both marked required.
# * platform.claude.com "Skill authoring best practices" (mirrored in cusy's
#   agentic-software-engineering docs, skill-md-structure): name "No reserved words such as
#   claude", description "Must not be empty, Maximum 1024 characters"; the Agent Skills
#   overview adds "cannot contain XML tags" for both fields.
# Newer Claude Code releases default a missing `name` to the directory name; this project
# still requires it (issue 5) because the qdrant tree installs nested skills whose directory
# names are not their skill names.
NAME_MAX = 64
DESCRIPTION_MAX = 1024
_NAME_OK = re.compile(r"^[a-z0-9-]+$")
_RESERVED = ("anthropic", "claude")
_XML_TAG = re.compile(r"</?[A-Za-z][\w:-]*(\s[^<>]*)?/?>")

_DIRECTIVE = re.compile(r"\b(MUST|ALWAYS|NEVER)\b")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_WS = re.compile(r"\s+")

FRONTMATTER_CHECK = "FRONTMATTER_RULES"
LINKS_CHECK = "LINKS"
#: Where the name/description rules come from (cited in each finding's ``source``).
_CC_SOURCE = "Claude Code skills page (code.claude.com/docs/en/skills), Required Frontmatter Fields"
_BP_SOURCE = "Anthropic's skill authoring best practices (platform.claude.com), YAML frontmatter"


def directive_count(text: str) -> Counter[str]:
    """MUST / ALWAYS / NEVER occurrences, upper-case whole words (the shouted directives).

    Lower-case "never" is ordinary English; PluginEval's flag is about capitalised commands.
    """
    return Counter(_DIRECTIVE.findall(text))


def skill_directives(skill: SkillFile) -> Counter[str]:
    """:func:`directive_count` of the whole SKILL.md, computed once per skill."""
    cached = skill.cache.get("directives")
    if cached is None:
        cached = skill.cache["directives"] = directive_count(skill.text)
    return Counter(cached)


def has_trigger(description: str) -> bool:
    """Whether the description holds one of PluginEval's four trigger phrases or a trigger
    clause real skills write instead (``TRIGGER_CLAUSE``: "Use it when", "Use this when",
    "TRIGGER — … whenever", "Use for …").

    Whitespace is collapsed first so a YAML-folded "Use\\n  when" still counts.
    """
    norm = _WS.sub(" ", description).lower().strip()
    return any(p in norm for p in TRIGGER_PHRASES) or TRIGGER_CLAUSE.search(norm) is not None


def detect_anti_patterns(skill: SkillFile) -> list[Finding]:
    """PluginEval's anti-patterns for ``skill`` (each a Finding with anti_pattern=True)."""
    out: list[Finding] = []
    counts = skill_directives(skill)
    total = sum(counts.values())
    if total > OVER_CONSTRAINED_THRESHOLD:
        first_lines: list[str] = []
        for i, ln in enumerate(skill.lines):
            if _DIRECTIVE.search(ln):
                first_lines.append(str(i + 1))
                if len(first_lines) == 5:
                    break
        detail = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        out.append(
            Finding(
                "OVER_CONSTRAINED",
                f"{total} MUST/ALWAYS/NEVER in SKILL.md ({detail}); the limit is "
                f"{OVER_CONSTRAINED_THRESHOLD}. First at lines {', '.join(first_lines)}",
                "Replace directive language with the reason behind it; keep hard constraints "
                "for real safety or correctness rules (aim for < 1 per 10 lines).",
                "OVER_CONSTRAINED",
                anti_pattern=True,
            )
        )
    desc = skill.description.strip()
    if len(desc) < EMPTY_DESCRIPTION_MIN:
        shown = f"{desc!r}" if desc else "missing or empty"
        out.append(
            Finding(
                "EMPTY_DESCRIPTION",
                f"description is {len(desc)} characters ({shown}); needs at least "
                f"{EMPTY_DESCRIPTION_MIN}",
                "Write a 60-120 character description with a 'Use when ...' clause naming two "
                "or more concrete situations.",
                "EMPTY_DESCRIPTION",
                anti_pattern=True,
            )
        )
    if not has_trigger(skill.description):
        out.append(
            Finding(
                "MISSING_TRIGGER",
                "description has no trigger clause: none of "
                + ", ".join(f'"{p}"' for p in TRIGGER_PHRASES)
                + ' (nor "use it/this when", "use for …", "TRIGGER … whenever", "when the '
                'user asks …")'
                + (f": {_clip(desc)!r}" if desc else " (no description)"),
                "Add 'Use this skill when ...' followed by the specific situations that "
                "should trigger it.",
                "MISSING_TRIGGER",
                anti_pattern=True,
            )
        )
    if skill.line_count > BLOATED_LINES and not skill.has_references_dir:
        out.append(
            Finding(
                "BLOATED_SKILL",
                f"SKILL.md has {skill.line_count} lines (> {BLOATED_LINES}) and the skill has "
                "no references/ directory",
                "Create references/ and move detail there (rubrics, extended examples, config "
                "tables), linking it as [text](references/file.md).",
                "BLOATED_SKILL",
                anti_pattern=True,
            )
        )
    out.extend(_link_findings(skill))
    return out


def _clip(text: str, n: int = 80) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


# ---------------------------------------------------------------------------------------------
# links


def relative_link_path(target: str) -> str | None:
    """The filesystem path a Markdown link points at, or None for URLs / anchors / absolute."""
    t = target.strip()
    if not t or t.startswith(("#", "/", "\\")) or _SCHEME.match(t):
        return None
    path = unquote(t.split("#", 1)[0].split("?", 1)[0])
    while path.startswith("./"):
        path = path[2:]
    return path or None


def is_cross_ref(path: str) -> bool:
    """A link to another skill or agent: a SKILL.md, an ``agents/`` file, or a path going up.

    Links into the skill's own references/ and assets/ are not cross-references (ORPHAN_
    REFERENCE covers the former); other same-directory files are ordinary links.
    """
    low = path.lower()
    return (
        low.endswith("skill.md")
        or low.startswith("../")
        or low.startswith("agents/")
        or "/agents/" in low
        or low.startswith("skills/")
    )


def _exists(skill: SkillFile, base: str, rel: str) -> bool:
    """Whether ``base/rel`` exists, memoised in the run-wide ``fs`` cache when one is shared
    (sibling skills link to the same targets; a tree of 1,000 skills repeats many stats)."""
    p = os.path.join(base, rel)  # not normpath: ".." must resolve through symlinks, as the OS does
    memo = skill.cache.get("fs")
    if memo is not None and p in memo:
        return bool(memo[p])
    try:
        found = os.path.exists(p)  # str paths: pathlib's overhead dominated 1,000 skills
    except (OSError, ValueError):  # name too long, NUL in path
        found = False
    if memo is not None:
        memo[p] = found
    return found


def cross_ref_resolves(skill: SkillFile, path: str) -> bool:
    """Markdown resolves links against the file's directory; the methodology also accepts paths
    written from the skills/ directory, so both are tried (and the root's parent for
    ``skills/...`` spellings)."""
    bases = (str(skill.dir), str(skill.root), str(skill.root.parent))
    return any(_exists(skill, b, path) for b in bases)


@dataclass(frozen=True)
class ResolvedLink:
    """A distinct relative link of a SKILL.md, classified and checked once."""

    kind: str  # "reference" | "cross_ref" | "other"
    path: str
    link: Link  # first occurrence
    resolves: bool


def resolve_links(skill: SkillFile) -> list[ResolvedLink]:
    """Every distinct relative link, classified and resolved (cached on the skill: both the
    anti-patterns and ecosystem_coherence need it, and stat calls are the costly part)."""
    cached = skill.cache.get("links")
    if cached is not None:
        return list(cached)
    out: list[ResolvedLink] = []
    seen: set[str] = set()
    base = str(skill.dir)
    for link in skill.facts.links:
        path = relative_link_path(link.target)
        if path is None or path in seen:
            continue
        seen.add(path)
        if path.startswith("references/") or path == "references":
            out.append(ResolvedLink("reference", path, link, _exists(skill, base, path)))
        elif is_cross_ref(path):
            out.append(ResolvedLink("cross_ref", path, link, cross_ref_resolves(skill, path)))
        else:
            out.append(ResolvedLink("other", path, link, _exists(skill, base, path)))
    skill.cache["links"] = out
    return list(out)


def _link_findings(skill: SkillFile) -> list[Finding]:
    out: list[Finding] = []
    for r in resolve_links(skill):
        if r.resolves:
            continue
        link = r.link
        if r.kind == "reference":
            out.append(_orphan(skill, link, r.path))
        elif r.kind == "cross_ref":
            out.append(
                Finding(
                    "DEAD_CROSS_REF",
                    f"line {link.line}: link to {link.target!r} resolves neither from "
                    f"{skill.rel_id}/ nor from the skills root {skill.root}",
                    "Point the link at an existing skill (e.g. ../other-skill/SKILL.md) or "
                    "remove it.",
                    "DEAD_CROSS_REF",
                    anti_pattern=True,
                    line=link.line,
                )
            )
        else:
            out.append(
                Finding(
                    "DEAD_LINK",
                    f"line {link.line}: relative link {link.target!r} does not exist in "
                    f"{skill.rel_id}/",
                    "Create the file or fix the link (this one is not a PluginEval anti-pattern "
                    "and does not change the score).",
                    LINKS_CHECK,
                    line=link.line,
                )
            )
    return out


def _orphan(skill: SkillFile, link: Link, path: str) -> Finding:
    have = [f.rel for f in skill.references][:8]
    if not skill.has_references_dir:
        where = "the skill has no references/ directory"
    elif have:
        where = "references/ holds: " + ", ".join(have)
    else:
        where = "references/ is empty"
    return Finding(
        "ORPHAN_REFERENCE",
        f"line {link.line}: [..]({link.target}) but {path} does not exist ({where})",
        f"Create {path} or remove the link.",
        "ORPHAN_REFERENCE",
        anti_pattern=True,
        line=link.line,
    )


# ---------------------------------------------------------------------------------------------
# Claude Code frontmatter rules


def frontmatter_rule_findings(skill: SkillFile) -> list[Finding]:
    """Claude Code's documented rules for ``name`` and ``description`` (see the note above).

    Only checked when the frontmatter parsed; NO_FRONTMATTER / BROKEN_FRONTMATTER already say
    why nothing else could be checked.
    """
    if not skill.frontmatter_ok:
        return []
    out: list[Finding] = []
    fm = skill.frontmatter
    raw_name = fm.get("name")
    name = skill.name
    if raw_name is None or not name.strip():
        out.append(
            Finding(
                "NAME_MISSING",
                "frontmatter has no 'name'",
                f"Add 'name: {_suggest_name(skill.dir.name)}' (lowercase letters, digits, "
                "hyphens).",
                FRONTMATTER_CHECK,
                source=_CC_SOURCE,
            )
        )
    else:
        if not isinstance(raw_name, str) or not _NAME_OK.match(name):
            bad = sorted({c for c in name if not re.match(r"[a-z0-9-]", c)})
            out.append(
                Finding(
                    "NAME_INVALID",
                    f"name {name!r} may only use lowercase letters, digits and hyphens"
                    + (f" (found {''.join(bad)!r})" if bad else ""),
                    f"Rename to {_suggest_name(name)!r}.",
                    FRONTMATTER_CHECK,
                source=_CC_SOURCE,
                )
            )
        if len(name) > NAME_MAX:
            out.append(
                Finding(
                    "NAME_TOO_LONG",
                    f"name is {len(name)} characters; Claude Code allows at most {NAME_MAX}",
                    f"Shorten the name to {NAME_MAX} characters or fewer.",
                    FRONTMATTER_CHECK,
                source=_CC_SOURCE,
                )
            )
        hit = [w for w in _RESERVED if w in name.lower()]
        if hit:
            out.append(
                Finding(
                    "NAME_RESERVED",
                    f"name {name!r} contains the reserved word {hit[0]!r}",
                    "Pick a name without 'anthropic' or 'claude'.",
                    FRONTMATTER_CHECK,
                    source=_BP_SOURCE,
                )
            )
    raw_desc = fm.get("description")
    if isinstance(raw_desc, (dict, list)):
        out.append(
            Finding(
                "DESCRIPTION_NOT_TEXT",
                f"description is a YAML {type(raw_desc).__name__}, not text",
                "Write the description as one string (quote it if it contains ': ').",
                FRONTMATTER_CHECK,
                source=_CC_SOURCE,
            )
        )
    elif raw_desc is None or not skill.description.strip():
        out.append(
            Finding(
                "DESCRIPTION_MISSING",
                "frontmatter has no 'description' (Claude Code requires one: it is all the "
                "model sees when deciding to load the skill)",
                "Add 'description: <what it does>. Use when <situations>.'",
                FRONTMATTER_CHECK,
                source=_CC_SOURCE,
            )
        )
    desc = skill.description
    if len(desc) > DESCRIPTION_MAX:
        out.append(
            Finding(
                "DESCRIPTION_TOO_LONG",
                f"description is {len(desc)} characters; Claude Code allows at most "
                f"{DESCRIPTION_MAX}",
                "Cut the description to the trigger situations; move detail into the body.",
                FRONTMATTER_CHECK,
                source=_CC_SOURCE,
            )
        )
    for field_name, value in (("name", name), ("description", desc)):
        m = _XML_TAG.search(value)
        if m:
            out.append(
                Finding(
                    "XML_IN_FRONTMATTER",
                    f"{field_name} contains the XML tag {m.group(0)!r}",
                    f"Remove angle-bracket tags from {field_name}.",
                    FRONTMATTER_CHECK,
                    source=_BP_SOURCE,
                )
            )
    # The Agent Skills specification's own rules (hyphens, compatibility, allowed keys).
    out += spec_findings(fm, name if raw_name is not None else "")
    return out


def _suggest_name(raw: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", raw.lower()).strip("-")
    for w in _RESERVED:
        s = s.replace(w, "").strip("-")
    return (s or "my-skill")[:NAME_MAX]
