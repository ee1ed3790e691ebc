"""SARIF 2.1.0 output of ``skilllift scan``, for GitHub code scanning (upload-sarif).

The shape follows the OASIS SARIF 2.1.0 standard and GitHub's "SARIF support for code
scanning" page: ``runs[].tool.driver`` with its ``rules`` (id, name, short and full
description, help, ``properties.security-severity`` so GitHub ranks the alert), and
``results[]`` with ``ruleId``, ``level``, ``message`` and a physical location whose URI is
relative to the repository (``uriBaseId`` ``%SRCROOT%``). Pure logic.
"""

from __future__ import annotations

from typing import Any

from pytest_skilllift import __version__
from pytest_skilllift.skill.security.rules import RULES, Rule
from pytest_skilllift.skill.security.scanner import ScanResult, SecurityFinding

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
#: SARIF's result levels for our severities.
LEVELS: dict[str, str] = {"critical": "error", "high": "error", "medium": "warning",
                          "low": "note"}
#: GitHub's security-severity score (critical > 9.0, high 7.0–8.9, medium 4.0–6.9, low < 4).
SECURITY_SEVERITY: dict[str, str] = {"critical": "9.5", "high": "8.0", "medium": "5.0",
                                     "low": "2.0"}


def _rule(rule: Rule) -> dict[str, Any]:
    return {
        "id": rule.id,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": f"{rule.summary}. Source: {rule.source}."},
        "help": {"text": f"Fix: {rule.fix}"},
        "defaultConfiguration": {"level": LEVELS[rule.severity]},
        "properties": {"security-severity": SECURITY_SEVERITY[rule.severity],
                       "tags": ["security", rule.severity]},
    }


def _result(f: SecurityFinding, prefix: str) -> dict[str, Any]:
    return {
        "ruleId": f.rule_id,
        "ruleIndex": [r.id for r in RULES].index(f.rule_id),
        "level": LEVELS[f.severity],
        "message": {"text": f"{f.rule.summary}: {f.match}. Fix: {f.rule.fix}"},
        "locations": [{
            "physicalLocation": {
                "artifactLocation": {"uri": prefix + f.path, "uriBaseId": "%SRCROOT%"},
                "region": {"startLine": f.line, "startColumn": f.column},
            },
        }],
        "partialFingerprints": {"skilllift/v1": f"{f.rule_id}:{prefix}{f.path}:{f.match}"},
    }


def to_sarif(result: ScanResult, *, uri_prefix: str = "") -> dict[str, Any]:
    """The scan as one SARIF 2.1.0 log; ``uri_prefix`` makes paths relative to the repository
    root (e.g. ``skills/`` when the scan root is the repository's skills directory)."""
    prefix = uri_prefix.rstrip("/") + "/" if uri_prefix else ""
    return {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [{
            "tool": {"driver": {
                "name": "skilllift-scan",
                "version": __version__,
                "rules": [_rule(r) for r in RULES],
            }},
            "results": [_result(f, prefix) for f in result.findings],
            "invocations": [{
                "executionSuccessful": True,
                "toolExecutionNotifications": [
                    {"level": "note", "message": {"text": f"{path}: {why}"}}
                    for path, why in result.skipped],
            }],
        }],
    }
