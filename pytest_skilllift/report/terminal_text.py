"""Untrusted text (a model's answer, a judge's quote, a run's reason) made inert for a
terminal or a CI log. Pure.

- control characters (ANSI escape sequences start with ESC; a carriage return rewrites the
  line; bidirectional overrides reorder it) are shown as visible escapes (``\\x1b``), never
  sent to the terminal;
- a GitHub Actions workflow command — a line that starts, after blanks, with ``::``
  (``::error …``, ``::add-mask::``, ``::stop-commands::``) — is prefixed with a backslash,
  so the runner reads it as text, not as a command (GitHub's runner trims leading blanks
  before it looks for ``::``).
"""

from __future__ import annotations

import re

#: C0 controls but tab and newline, DEL, C1 controls, line/paragraph separators, bidi marks.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f"
                      "\u202a-\u202e\u2066-\u2069]")
_WORKFLOW_COMMAND = re.compile(r"(?m)^([ \t]*)::")


def _visible(m: re.Match[str]) -> str:
    code = ord(m[0])
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_safe(text: object) -> str:
    """``text`` with control characters escaped and workflow-command lines neutralised."""
    value = _CONTROL.sub(_visible, str(text))
    return _WORKFLOW_COMMAND.sub(lambda m: m[1] + "\\::", value)
