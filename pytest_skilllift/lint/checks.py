"""The six static sub-checks of PluginEval's Layer 1, each a score in [0, 1] with its reasons.

PluginEval names what each sub-check measures and a few anchors (the 200-600 line sweet spot,
"< 100 lines score only 0.20", a 0.15-0.25 references/ bonus, an assets/ bonus, >= 4 H2/H3
headings, >= 3 code blocks, an Examples and a Troubleshooting section, < 1 MUST/ALWAYS/NEVER
per 10 lines, the orchestrator words to avoid, "related"/"see also"). It does not give the
exact arithmetic, so every rule below is a documented deduction from 1.0 (or, for
progressive_disclosure, a base plus bonuses) that honours those anchors. Each deduction leaves
a reason, so a low score always says what lowered it. See docs/static-analysis.md.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from pytest_skilllift.lint.antipatterns import (
    EMPTY_DESCRIPTION_MIN,
    NAME_MAX,
    has_trigger,
    resolve_links,
    skill_directives,
)
from pytest_skilllift.skill.skillfile import SkillFile

SUB_CHECKS: tuple[str, ...] = (
    "frontmatter_quality",
    "orchestration_wiring",
    "progressive_disclosure",
    "structural_completeness",
    "token_efficiency",
    "ecosystem_coherence",
)


@dataclass(frozen=True)
class SubScore:
    """One sub-check's result."""

    check: str
    score: float
    reasons: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        """``{"score": float, "reasons": [...]}``."""
        return {"score": round(self.score, 4), "reasons": list(self.reasons)}


class _Tally:
    """Start at ``start``; every deduction or bonus is kept as a human-readable reason."""

    def __init__(self, start: float = 1.0) -> None:
        self.score = start
        self.reasons: list[str] = []

    def lose(self, amount: float, why: str) -> None:
        if amount <= 0:
            return
        self.score -= amount
        self.reasons.append(f"-{amount:g}: {why}")

    def note(self, why: str) -> None:
        self.reasons.append(why)

    def result(self, check: str) -> SubScore:
        return SubScore(check, min(1.0, max(0.0, round(self.score, 6))), tuple(self.reasons))


_NAME_OK = re.compile(r"^[a-z0-9-]+$")


def _headings(skill: SkillFile) -> str:
    """All heading texts, one per line: one regex search instead of one per heading."""
    joined = skill.cache.get("headings")
    if joined is None:
        joined = skill.cache["headings"] = "\n".join(skill.facts.headings_all)
    return str(joined)


def _prose(skill: SkillFile) -> str:
    """Lower-cased body text outside code fences (shared by two checks)."""
    prose = skill.cache.get("prose")
    if prose is None:
        prose = skill.cache["prose"] = "\n".join(skill.facts.prose_lines).lower()
    return str(prose)


def frontmatter_quality(skill: SkillFile) -> SubScore:
    """Name presence, description length, trigger-phrase quality (the routing signal)."""
    t = _Tally()
    name = skill.name.strip()
    if not name:
        t.lose(0.15, "no frontmatter name")
    elif not _NAME_OK.match(name) or len(name) > NAME_MAX:
        t.lose(0.10, f"name {name!r} breaks Claude Code's name rule")
    desc = skill.description.strip()
    n = len(desc)
    if n < EMPTY_DESCRIPTION_MIN:
        t.lose(0.25, f"description is {n} characters (< {EMPTY_DESCRIPTION_MIN})")
    elif n < 60:
        t.lose(0.15, f"description is {n} characters (PluginEval recommends 60-120+)")
    elif n < 100:
        t.lose(0.05, f"description is {n} characters (< 100)")
    elif n > 1024:
        t.lose(0.10, f"description is {n} characters (> 1024, Claude Code's limit)")
    if not has_trigger(skill.description):
        # The trigger clause is what lets the model route to the skill: weighted heaviest.
        t.lose(0.40, "description has no 'Use when' / 'Use this skill when' style trigger")
    if desc and "," not in desc and " or " not in desc.lower():
        t.lose(0.10, "description names a single context (no comma- or 'or'-separated cases)")
    return t.result("frontmatter_quality")


_OUTPUT_HEADING = re.compile(r"\b(output|returns?|result|response|deliverable|report)s?\b")
_OUTPUT_WORDS = re.compile(r"\b(outputs?|returns?|produces?|respond|report|deliver)\b")
_INPUT_WORDS = re.compile(r"\b(inputs?|receives?|accepts?|parameters?|arguments?)\b|\$arguments")
# Supervisor language: the role nouns, or the verbs with what a supervisor directs a few words
# on (PluginEval's "orchestrate", "coordinate", "dispatch", "manage workflow"). The words
# alone are not: "an orchestrated moment" (motion design) and "x, y coordinates" direct
# nothing.
_ORCHESTRATOR = re.compile(
    r"\b((?:orchestrat|coordinat|dispatch)(?:or|ors|er|ers)\b"
    r"|(?:orchestrat\w*|coordinat(?:e|es|ed|ing|ion)|dispatch(?:es|ed|ing)?)\b"
    r"(?:\W+\w+){0,4}?\W+(?:(?:sub-?)?agents?|workers?|tasks?|tools?|skills?|steps?|jobs?"
    r"|calls?|processes|workflows?|pipelines?|models?|requests?)\b"
    r"|manage\s+(?:the\s+)?workflows?)\b"
)

# Substrings every match must contain: a plain `in` test is far cheaper than running a
# word-boundary regex over a long body that does not contain the word at all.
_OUTPUT_HINTS = ("output", "return", "produce", "respond", "report", "deliver")
_INPUT_HINTS = ("input", "receive", "accept", "parameter", "argument")
_ORCHESTRATOR_HINTS = ("orchestrat", "coordinat", "dispatch", "manage")


def _search(pattern: re.Pattern[str], hints: tuple[str, ...], text: str) -> re.Match[str] | None:
    return pattern.search(text) if any(h in text for h in hints) else None


def orchestration_wiring(skill: SkillFile) -> SubScore:
    """Does the skill read as a worker: inputs and outputs documented, concrete code, and no
    supervisor language (PluginEval: avoid "orchestrate", "coordinate", "dispatch", "manage
    workflow")."""
    t = _Tally()
    prose = _prose(skill)
    if not _OUTPUT_HEADING.search(_headings(skill)):
        t.lose(0.10, "no output section (a heading such as 'Output format')")
    if not _search(_OUTPUT_WORDS, _OUTPUT_HINTS, prose):
        t.lose(0.10, "never says what the skill returns or produces")
    if not _search(_INPUT_WORDS, _INPUT_HINTS, prose):
        t.lose(0.10, "never says what input the skill receives")
    blocks = skill.facts.code_blocks
    if blocks == 0:
        t.lose(0.10, "no code block showing concrete worker behaviour (PluginEval: 2+)")
    elif blocks == 1:
        t.lose(0.05, "one code block (PluginEval: 2+)")
    m = _search(_ORCHESTRATOR, _ORCHESTRATOR_HINTS, prose)
    if m:
        t.lose(
            0.20, f"reads as an orchestrator ({m.group(1)!r}); supervisor logic belongs in agents"
        )
    return t.result("orchestration_wiring")


def progressive_disclosure(skill: SkillFile) -> SubScore:
    """Line count against the 200-600 sweet spot, plus references/ and assets/ bonuses.

    Base: < 100 lines 0.20 (PluginEval's number), 100-199 0.55, 200-600 0.75, 601-800 0.50,
    > 800 0.25. Bonuses: non-empty references/ +0.15 (+0.25 above 400 lines, where offloading
    matters more) — or, without one, reference documents SKILL.md links inside the skill's
    directory (``linked_reference_docs``) — non-empty assets/ +0.10. Sub-skills in child
    directories are not counted as references.
    """
    lines = skill.line_count
    if lines < 100:
        base, why = 0.20, f"{lines} lines: a stub (< 100)"
    elif lines < 200:
        base, why = 0.55, f"{lines} lines: under the 200-600 sweet spot"
    elif lines <= 600:
        base, why = 0.75, ""
    elif lines <= 800:
        base, why = 0.50, f"{lines} lines: over the 200-600 sweet spot"
    else:
        base, why = 0.25, f"{lines} lines: far over the sweet spot (> 800)"
    t = _Tally(base)
    if why:
        t.note(f"base {base:.2f}: {why}")
    refs = [f for f in skill.references if f.size > 0]
    bonus = 0.25 if lines > 400 else 0.15
    linked = [] if refs else linked_reference_docs(skill)
    if refs:
        t.score += bonus
    elif linked:
        # Anthropic's own skills keep their reference files beside SKILL.md (pdf/forms.md,
        # docx/ooxml.md) and link them: the same progressive disclosure as references/.
        t.score += bonus
        t.note(f"+{bonus:.2f}: {len(linked)} reference file(s) linked from SKILL.md "
               f"({', '.join(linked[:3])}{', …' if len(linked) > 3 else ''})")
    elif skill.has_references_dir:
        t.note(f"no +{bonus:.2f} bonus: references/ exists but holds no non-empty file")
    else:
        t.note(f"no +{bonus:.2f} bonus: no references/ directory")
    if any(f.size > 0 for f in skill.assets):
        t.score += 0.10
    else:
        t.note("no +0.10 bonus: no non-empty assets/")
    return t.result("progressive_disclosure")


#: Files a model reads as reference text.
_DOC_SUFFIXES = (".md", ".markdown", ".mdx", ".txt", ".rst")


#: A path in inline code: ``examples/3p-updates.md``, ``themes/``.
_CODE_PATH = re.compile(r"`([A-Za-z0-9_][\w.-]*(?:/[\w.-]+)*(?:/|\.(?:md|markdown|mdx|txt|rst)))`")


def linked_reference_docs(skill: SkillFile) -> list[str]:
    """Reference documents outside references/ that SKILL.md points to and that exist,
    non-empty, inside the skill's own directory (not SKILL.md, not a sub-skill's folder): the
    layout of anthropics/skills — a link (``[forms.md](forms.md)``, ``shared/models.md``) or a
    path in inline code (`` `examples/3p-updates.md` ``, a folder: `` `themes/` ``)."""
    home = skill.dir.resolve()
    named = [link.path for link in resolve_links(skill) if link.kind == "other"]
    named += [m.group(1) for m in _CODE_PATH.finditer(skill.body)] if "`" in skill.body else []
    out: list[str] = []
    for rel in dict.fromkeys(named):
        path = (skill.dir / rel).resolve()
        try:
            if not path.is_relative_to(home) or path == home:
                continue
            files = ([f for f in sorted(path.iterdir()) if f.is_file()] if path.is_dir()
                     else [path] if path.is_file() else [])
            docs = [f for f in files if f.name != "SKILL.md" and f.suffix.lower()
                    in _DOC_SUFFIXES and f.stat().st_size > 0]
        except OSError:
            continue
        if docs and not any((d / "SKILL.md").exists() for d in docs[0].parents
                            if d != home and d.is_relative_to(home)):
            out.append(rel)
    return out


_EXAMPLES = re.compile(r"\bexamples?\b")
_TROUBLE = re.compile(
    r"troubleshoot|edge cases?|pitfalls?|gotchas?|common (mistakes|errors|issues|problems)|\bfaq\b"
    r"|failure modes?|when things go wrong"
)


def structural_completeness(skill: SkillFile) -> SubScore:
    """Four equal parts (0.25 each): >= 4 H2/H3 headings, >= 3 code blocks, an Examples
    section, a Troubleshooting (or Edge cases / Pitfalls) section; half credit for 2-3
    headings or 1-2 code blocks."""
    t = _Tally()
    h = len(skill.facts.h2_h3)
    if h < 2:
        t.lose(0.25, f"{h} H2/H3 headings (PluginEval: at least 4)")
    elif h < 4:
        t.lose(0.125, f"{h} H2/H3 headings (PluginEval: at least 4)")
    c = skill.facts.code_blocks
    if c == 0:
        t.lose(0.25, "no fenced code blocks (PluginEval: at least 3)")
    elif c < 3:
        t.lose(0.125, f"{c} fenced code blocks (PluginEval: at least 3)")
    if not _EXAMPLES.search(_headings(skill)):
        t.lose(0.25, "no Examples section")
    if not _TROUBLE.search(_headings(skill)):
        t.lose(0.25, "no Troubleshooting / Edge cases section")
    return t.result("structural_completeness")


_TABLE_RULE = re.compile(r"^[\s|:\-+]*$")


def token_efficiency(skill: SkillFile) -> SubScore:
    """MUST/NEVER/ALWAYS density (target < 1 per 10 lines) and duplicate-line repetition.

    Density d = directives / lines: d <= 0.1 no loss, <= 0.2 -0.10, <= 0.5 -0.25, else -0.40.
    Repetition: among prose lines of 16+ characters (outside code, not table rules), the share
    that repeats an earlier line, r; loss min(0.40, 2r).
    """
    t = _Tally()
    lines = max(skill.line_count, 1)
    n = sum(skill_directives(skill).values())
    d = n / lines
    if d > 0.5:
        t.lose(0.40, f"{n} MUST/ALWAYS/NEVER in {lines} lines ({d:.2f} per line; target < 0.1)")
    elif d > 0.2:
        t.lose(0.25, f"{n} MUST/ALWAYS/NEVER in {lines} lines ({d:.2f} per line; target < 0.1)")
    elif d > 0.1:
        t.lose(0.10, f"{n} MUST/ALWAYS/NEVER in {lines} lines ({d:.2f} per line; target < 0.1)")
    candidates = [
        s
        for s in (ln.strip() for ln in skill.facts.prose_lines)
        if len(s) >= 16 and not _TABLE_RULE.match(s)
    ]
    if candidates:
        counts = Counter(candidates)
        dup = len(candidates) - len(counts)
        if dup:
            r = dup / len(candidates)
            top, k = counts.most_common(1)[0]
            t.lose(
                round(min(0.40, 2 * r), 4),
                f"{dup} of {len(candidates)} lines repeat an earlier line ({r:.0%}); "
                f"most repeated ({k}x): {top[:60]!r}",
            )
    return t.result("token_efficiency")


_RELATED = re.compile(r"\brelated\b|\bsee also\b")


def ecosystem_coherence(skill: SkillFile) -> SubScore:
    """Cross-references to other skills/agents and a "Related"/"See also" mention.

    -0.30 with no resolvable cross-reference, -0.30 with no "related"/"see also", and -0.10 per
    dead cross-reference (at most -0.30; each one is also a DEAD_CROSS_REF anti-pattern).
    """
    t = _Tally()
    refs = [r for r in resolve_links(skill) if r.kind == "cross_ref"]
    good = sum(1 for r in refs if r.resolves)
    dead = len(refs) - good
    if not good:
        t.lose(0.30, "no working cross-reference to another skill or agent")
    prose = _prose(skill)
    if not _search(_RELATED, ("related", "see also"), prose):
        t.lose(0.30, "no 'Related' / 'See also' mention")
    if dead:
        t.lose(min(0.30, 0.10 * dead), f"{dead} cross-reference(s) do not resolve")
    return t.result("ecosystem_coherence")


def run_checks(skill: SkillFile) -> dict[str, SubScore]:
    """All six sub-checks, keyed by name, in PluginEval's order."""
    return {
        "frontmatter_quality": frontmatter_quality(skill),
        "orchestration_wiring": orchestration_wiring(skill),
        "progressive_disclosure": progressive_disclosure(skill),
        "structural_completeness": structural_completeness(skill),
        "token_efficiency": token_efficiency(skill),
        "ecosystem_coherence": ecosystem_coherence(skill),
    }
