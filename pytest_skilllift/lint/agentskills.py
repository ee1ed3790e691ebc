"""Frontmatter rules of the Agent Skills specification that Claude Code's own rules leave out.

The Agent Skills specification (https://agentskills.io/specification, "Frontmatter") and the
validator Anthropic ships with it (anthropics/skills, ``skills/skill-creator/scripts/
quick_validate.py``) agree on these rules:

* ``name`` — lowercase letters, digits and hyphens, at most 64 characters, and it "must not
  start or end with a hyphen" nor "contain consecutive hyphens (``--``)";
* ``compatibility`` — optional; when present a non-empty string of at most 500 characters;
* the allowed top-level keys are ``name``, ``description``, ``license``, ``allowed-tools``,
  ``metadata`` and ``compatibility`` (anything else belongs under ``metadata``).

The first two are errors here, as in the validator. Unknown keys are a *warning*: Claude Code
reads several keys of its own (its skills page, code.claude.com/docs/en/skills, "Frontmatter
reference"), and a skill written for Claude Code only must not fail for using them. The
warning names which of the unknown keys Claude Code reads and which nothing reads.

The character-set and length rules of ``name`` and ``description`` live with Claude Code's
rules in :func:`pytest_skilllift.lint.antipatterns.frontmatter_rule_findings`.
"""

from __future__ import annotations

from typing import Any

from pytest_skilllift.skill.skillfile import Finding

SPEC = "Agent Skills specification (agentskills.io/specification), Frontmatter"
VALIDATOR = "anthropics/skills skill-creator scripts/quick_validate.py"
CLAUDE_CODE_SKILLS = (
    "Claude Code skills page (code.claude.com/docs/en/skills), Frontmatter reference"
)

#: Top-level keys the specification allows (quick_validate.py's ALLOWED_PROPERTIES).
SPEC_KEYS: frozenset[str] = frozenset(
    {"name", "description", "license", "allowed-tools", "metadata", "compatibility"}
)
#: Keys Claude Code reads beyond the specification (its skills page; ``version`` appears in
#: Claude Code plugin skills). Used only to word the unknown-keys warning.
CLAUDE_CODE_KEYS: frozenset[str] = frozenset(
    {
        "when_to_use", "argument-hint", "arguments", "disable-model-invocation",
        "user-invocable", "model", "effort", "context", "agent", "hooks", "paths", "shell",
        "version",
    }
)
COMPATIBILITY_MAX = 500

FRONTMATTER_CHECK = "FRONTMATTER_RULES"  # the same test as Claude Code's rules


def spec_findings(frontmatter: dict[str, Any], name: str) -> list[Finding]:
    """The specification's rules for a parsed frontmatter mapping (see the module docstring).

    ``name`` is the frontmatter ``name`` as text ('' when absent).
    """
    out: list[Finding] = []
    stripped = name.strip()
    if stripped and (stripped.startswith("-") or stripped.endswith("-")):
        out.append(
            Finding(
                "NAME_HYPHEN_EDGE",
                f"name {stripped!r} starts or ends with a hyphen",
                f"Rename to {_single_hyphens(stripped).strip('-') or 'my-skill'!r}.",
                FRONTMATTER_CHECK,
                source=f"{SPEC}: name 'must not start or end with a hyphen' ({VALIDATOR})",
            )
        )
    if "--" in stripped:
        out.append(
            Finding(
                "NAME_CONSECUTIVE_HYPHENS",
                f"name {stripped!r} contains consecutive hyphens ('--')",
                f"Rename to {_single_hyphens(stripped).strip('-') or 'my-skill'!r}.",
                FRONTMATTER_CHECK,
                source=f"{SPEC}: name 'must not contain consecutive hyphens' ({VALIDATOR})",
            )
        )
    if "compatibility" in frontmatter:
        value = frontmatter["compatibility"]
        if not isinstance(value, str) or not value.strip():
            kind = "empty" if value is None or value == "" else f"a YAML {type(value).__name__}"
            out.append(
                Finding(
                    "COMPATIBILITY_INVALID",
                    f"compatibility is {kind}; it must be a non-empty string",
                    "Write one line of environment requirements (e.g. 'Requires git and "
                    "network access'), or remove the key.",
                    FRONTMATTER_CHECK,
                    source=f"{SPEC}: compatibility '1-500 characters if provided' ({VALIDATOR})",
                )
            )
        elif len(value) > COMPATIBILITY_MAX:
            out.append(
                Finding(
                    "COMPATIBILITY_TOO_LONG",
                    f"compatibility is {len(value)} characters; the specification allows at "
                    f"most {COMPATIBILITY_MAX}",
                    "Keep compatibility to the environment requirements; move the rest into "
                    "the body.",
                    FRONTMATTER_CHECK,
                    source=f"{SPEC}: compatibility 'max 500 characters' ({VALIDATOR})",
                )
            )
    unknown = sorted(str(k) for k in frontmatter if str(k) not in SPEC_KEYS)
    if unknown:
        claude = [k for k in unknown if k in CLAUDE_CODE_KEYS]
        nobody = [k for k in unknown if k not in CLAUDE_CODE_KEYS]
        parts = [f"keys outside the specification's set: {', '.join(unknown)}"]
        if claude:
            parts.append(
                f"Claude Code reads {', '.join(claude)} (fine for a Claude Code skill; other "
                "agents ignore them)"
            )
        if nobody:
            parts.append(f"nothing reads {', '.join(nobody)} (a typo?)")
        out.append(
            Finding(
                "UNKNOWN_FRONTMATTER_KEYS",
                "; ".join(parts),
                "For a portable skill, move custom keys under 'metadata:'; keep Claude Code "
                "keys only if the skill targets Claude Code.",
                FRONTMATTER_CHECK,
                severity="warning",
                source=f"{SPEC}: allowed keys name, description, license, allowed-tools, "
                f"metadata, compatibility ({VALIDATOR}); Claude Code keys from the "
                f"{CLAUDE_CODE_SKILLS}",
            )
        )
    return out


def _single_hyphens(name: str) -> str:
    while "--" in name:
        name = name.replace("--", "-")
    return name
