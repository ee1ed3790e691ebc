"""``skilllift scan``: the security scan of skill families.

    skilllift scan PATH [--output text|json|sarif] [--fail-on SEVERITY] [--uri-prefix P]

PATH is a skill family (a directory holding SKILL.md), a SKILL.md, or a skills root (each
first-level directory holding a SKILL.md is a family). Exit status: 0 no finding at or above
``--fail-on`` (default critical); 1 there is one; 2 usage error (bad path, no skills).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from pytest_skilllift.cli import Subparsers
    from pytest_skilllift.skill.security.scanner import ScanResult

FAIL_ON_CHOICES = ("critical", "high", "medium", "low", "none")


def add_parser(subparsers: Subparsers) -> None:
    """Register ``scan`` on the ``skilllift`` sub-parser set."""
    p = subparsers.add_parser(
        "scan",
        help="security scan of skills: remote code, destructive commands, credential access, "
        "obfuscation, hidden text, prompt injection, secrets, broad allowed-tools",
        description="Scan every file of each skill family (SKILL.md, references, scripts, "
        "assets). Each finding has a rule id, a severity, file:line, the matched text "
        "(secrets redacted) and a fix. Rules: docs/security-scan.md.",
    )
    p.add_argument("path", type=Path, metavar="PATH",
                   help="a skill family, a SKILL.md, or a skills root")
    p.add_argument("--output", choices=["text", "json", "sarif"], default="text",
                   help="sarif = SARIF 2.1.0 for GitHub code scanning (upload-sarif)")
    p.add_argument("--fail-on", choices=FAIL_ON_CHOICES, default="critical",
                   help="exit 1 when a finding of this severity or worse exists "
                   "(default: critical; none = always 0)")
    p.add_argument("--uri-prefix", default="", metavar="P",
                   help="SARIF: prefix of every file path so it is relative to the repository "
                   "root (e.g. skills/ when PATH is the repository's skills directory)")
    p.set_defaults(func=run_scan)


def run_scan(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """``skilllift scan``."""
    from pytest_skilllift.lint.output import stdout
    from pytest_skilllift.skill.security.scanner import ScanUsageError, scan_path

    out = out or stdout()
    try:
        result = scan_path(args.path)
    except ScanUsageError as exc:
        print(f"skilllift scan: {exc}", file=sys.stderr)
        return 2
    if args.output == "sarif":
        from pytest_skilllift.skill.security.sarif import to_sarif

        json.dump(to_sarif(result, uri_prefix=args.uri_prefix), out, indent=2,
                  ensure_ascii=False)
        out.write("\n")
    elif args.output == "json":
        payload = result.to_json()
        payload["fail_on"] = args.fail_on
        json.dump(payload, out, indent=2, ensure_ascii=False)
        out.write("\n")
    else:
        write_text(result, out)
    failing = [] if args.fail_on == "none" else result.at_least(args.fail_on)
    if failing and args.output == "text":
        print(f"--fail-on {args.fail_on}: {len(failing)} finding(s) at or above it", file=out)
    return 1 if failing else 0


def write_text(result: ScanResult, out: TextIO) -> None:
    """The human report: one block per finding, then the counts."""
    for f in result.findings:
        print(f.text(), file=out)
        print(f"    fix: {f.rule.fix}", file=out)
    for line in result.skipped_lines():
        print(f"not scanned: {line}", file=out)
    counts = ", ".join(f"{n} {s}" for s, n in result.counts().items())
    print(f"{len(result.families)} famil{'y' if len(result.families) == 1 else 'ies'}, "
          f"{result.files_scanned} file(s) scanned: {counts}", file=out)
