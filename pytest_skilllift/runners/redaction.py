"""What a run's files never hold: the secrets of the environment the runner passes.

Redacted, wherever the CLI's output or our own messages about a run are written
(``stdout.txt``, ``stderr.txt``, ``run.json``):

- the value of every secret-bearing variable (a name holding ``KEY``, ``TOKEN``, ``SECRET``,
  ``PASSWORD``, ``PASSWD``, ``CREDENTIAL`` or ``AUTH``), long enough to be worth redacting;
- the credentials inside any URL's userinfo (``https://user:pass@host``,
  ``HTTPS_PROXY=http://u:p@proxy``): a variable's name says nothing about a password in its
  value, so every URL-valued variable is searched, and every URL in the text is rewritten to
  ``scheme://[REDACTED]@host`` whether or not it came from the environment.

Pure: bytes and strings in, bytes and strings out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from urllib.parse import unquote, urlsplit

#: Environment variable names whose values are treated as secrets and redacted from output.
SECRET_MARKERS: tuple[str, ...] = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD",
                                   "CREDENTIAL", "AUTH")
REDACTED = b"[REDACTED]"
#: Shorter values are not redacted (``AUTH=1`` would blank every "1" of a transcript).
MIN_SECRET = 8
#: ``scheme://userinfo@``: the userinfo part (no ``/``, whitespace or ``@`` in it).
_USERINFO = re.compile(rb"(?i)\b([a-z][a-z0-9+.\-]*://)([^/\s@\"'<>]+)@")


def _url_credentials(value: str) -> list[str]:
    """The userinfo of a URL value, whole and its password alone (raw and unquoted)."""
    try:
        parts = urlsplit(value.strip())
    except ValueError:
        return []
    if not parts.scheme or "@" not in parts.netloc:
        return []
    userinfo = parts.netloc.rsplit("@", 1)[0]
    out = [userinfo, unquote(userinfo)]
    if parts.password:
        out += [parts.password, unquote(parts.password)]
    return out


def secret_values(env: Mapping[str, str]) -> list[bytes]:
    """Every value of ``env`` that must not reach disk, longest first (a secret containing
    another is redacted whole)."""
    out: set[bytes] = set()
    for name, value in env.items():
        if any(m in name.upper() for m in SECRET_MARKERS) and len(value) >= MIN_SECRET:
            out.add(value.encode())
        for cred in _url_credentials(value):
            if len(cred) >= 4:  # a URL's password is a secret whatever its length
                out.add(cred.encode())
    return sorted(out, key=len, reverse=True)


def redact(data: bytes, secrets: Iterable[bytes]) -> bytes:
    """Replace each secret, and the credentials of every URL, with ``[REDACTED]``."""
    for s in secrets:
        if s and s in data:
            data = data.replace(s, REDACTED)
    if b"@" in data:
        data = _USERINFO.sub(lambda m: m[1] + REDACTED + b"@", data)
    return data


def redact_text(text: str, secrets: Iterable[bytes]) -> str:
    """:func:`redact` on text."""
    return redact(text.encode("utf-8", "surrogateescape"), secrets).decode(
        "utf-8", "surrogateescape")


def redact_value(value: object, secrets: list[bytes]) -> object:
    """Every string inside ``value`` (a run record: dicts, lists, strings) redacted."""
    if isinstance(value, str):
        return redact_text(value, secrets)
    if isinstance(value, dict):
        return {k: redact_value(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_value(v, secrets) for v in value]
    return value
