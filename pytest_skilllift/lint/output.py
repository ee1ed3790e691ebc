"""Where the lint commands write: a stdout that survives odd text, and the skills JSON."""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from pytest_skilllift.skill.skillfile import Finding


def write_json(payload: dict[str, Any], out: TextIO) -> None:
    """Indented JSON, except that each element of ``skills`` sits on one line.

    ``json`` only uses its C encoder without ``indent``; a 1,000-skill tree indented in pure
    Python took longer than the analysis. One skill per line stays greppable and diffable.
    """
    skills = payload.get("skills")
    if not isinstance(skills, list):
        out.write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
        return
    head = {k: v for k, v in payload.items() if k != "skills"}
    out.write("{\n")
    for k, v in head.items():
        out.write(f"  {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)},\n")
    out.write('  "skills": [\n')
    out.write(",\n".join("    " + json.dumps(s, ensure_ascii=False) for s in skills))
    out.write("\n  ]\n}\n")


def stdout() -> TextIO:
    """stdout that cannot raise on odd text: a directory named with non-UTF-8 bytes reaches
    us as lone surrogates, and printing those must not turn a finding into a traceback."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="backslashreplace")
    return sys.stdout



def write_findings(title: str, findings: list[Finding], out: TextIO) -> None:
    """A titled list of findings with their fix and the rule they come from."""
    if not findings:
        return
    print(f"\n{title}:", file=out)
    for f in findings:
        tag = " (warning)" if f.is_warning else ""
        print(f"  {f.flag}{tag}: {f.evidence}", file=out)
        print(f"    fix: {f.fix}", file=out)
        if f.source:
            print(f"    rule: {f.source}", file=out)

