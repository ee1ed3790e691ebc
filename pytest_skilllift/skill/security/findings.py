"""The security scan as lint findings: what ``skilllift score`` and ``pytest --skill-lint`` show.

One ``SECURITY`` check per skill. A critical finding is an error (it fails the skill's
SECURITY test); high, medium and low are warnings (reported, a pytest warning, never a
failure), so a well-kept skill set is not failed for a pre-approved ``Bash``. None of them
counts toward PluginEval's anti-pattern penalty: the composite measures quality, the scan
measures harm. Pure logic.
"""

from __future__ import annotations

from pytest_skilllift.skill.security.rules import STUDY
from pytest_skilllift.skill.security.scanner import SecurityFinding, scan_skill
from pytest_skilllift.skill.skillfile import Finding, SkillFile

SECURITY_CHECK = "SECURITY"


def as_finding(f: SecurityFinding) -> Finding:
    """One scan finding as a lint finding (flag = rule id, severity error only if critical)."""
    return Finding(
        flag=f.rule_id,
        evidence=f"{f.severity} {f.rule.name} at {f.location}: {f.match!r} ({f.rule.summary})",
        fix=f.rule.fix,
        check=SECURITY_CHECK,
        line=f.line,
        severity="error" if f.severity == "critical" else "warning",
        source=STUDY if f.rule.source == STUDY else f.rule.source,
    )


def security_findings(skill: SkillFile) -> list[Finding]:
    """The files this skill owns, scanned; paths start at the family's directory name."""
    fam = skill.root / skill.family
    family_dir = fam if fam == skill.dir or fam in skill.dir.parents else skill.dir
    result = scan_skill(skill.dir, family_dir, family_dir.parent)
    out = [as_finding(f) for f in result.findings]
    out += [Finding("SCAN_SKIPPED", line, "Nothing to do unless the file should be "
                    "text; it was not scanned.", SECURITY_CHECK, severity="warning")
            for line in result.skipped_lines()]
    return out
