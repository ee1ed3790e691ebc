"""The security rules: what is looked for in every file of a skill family, how bad it is, the fix.

A skill ships instructions an agent follows and scripts it runs; a study of 31,132 marketplace
skills found at least one vulnerability in 26.1% of them, 5.2% of high severity, and skills
bundling scripts 2.12x as likely to have one (arXiv 2601.10338, "Agent Skills in the Wild").
The rule families follow that study's taxonomy and the checks of NVIDIA's SkillSpector and
Snyk's scan in the Tessl registry: remote code, destructive commands, credential access and
exfiltration, obfuscation, hidden text, prompt injection, committed secrets, and a skill's reach
beyond what it needs (allowed-tools, links leaving the family).

Precision is a requirement, not a nicety: a well-kept skill set (qdrant/skills) must produce no
high or critical finding, so every rule has a benign look-alike it leaves alone (``rm -rf
build/``, an example key marked as such, a ``curl`` of a documented API without a pipe to a
shell). Pure logic: no pytest, no file system (the scanner reads the files).

Every pattern that meets a skill's text is compiled by :func:`linear`: RE2 (google-re2), a
regex engine without backtracking, whose time is linear in the input whatever it holds. With
Python's ``re`` a 1.8 KB line could take 15 s in the high-entropy-secret rule (cubic) and a
long line of ``iex`` the PowerShell rule quadratic; the same rules run when a with-skill
family is installed. RE2 has no lookaround and no backreference: a boundary is matched as a
character (or the start/end), and the fork bomb's "same name three times" is checked by its
``accept``.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from typing import cast

import re2

#: Severities, least to most severe; ``rank`` orders them.
SEVERITIES: tuple[str, ...] = ("low", "medium", "high", "critical")

STUDY = "arXiv 2601.10338 (Agent Skills in the Wild: 31,132 skills scanned)"


def linear(pattern: str, *, ignorecase: bool = False,
           multiline: bool = False) -> re.Pattern[str]:
    """``pattern`` compiled by RE2: linear time on any input. The object has ``re``'s
    methods (``search``, ``finditer``, ``sub``; matches with ``group``, ``span``,
    ``start``); it is typed as ``re.Pattern`` for them."""
    flags = ("i" if ignorecase else "") + ("m" if multiline else "")
    return cast("re.Pattern[str]", re2.compile(f"(?{flags}){pattern}" if flags else pattern))


@functools.lru_cache(maxsize=256)
def line_has(pattern: re.Pattern[str], line: str) -> bool:
    """Whether ``pattern`` occurs in ``line``, computed once per line: an accept function
    called for each of a line's many matches would otherwise search the line again each
    time (quadratic in a line of 10,000 look-alikes)."""
    return pattern.search(line) is not None


def rank(severity: str) -> int:
    """0 (low) … 3 (critical); a ValueError names the accepted values."""
    try:
        return SEVERITIES.index(severity)
    except ValueError:
        raise ValueError(f"unknown severity {severity!r}; use one of "
                         f"{', '.join(SEVERITIES)}") from None


@dataclass(frozen=True)
class Rule:
    """One thing the scan looks for; ``id`` is stable (SARIF ``ruleId``, ``--fail-on``)."""

    id: str
    name: str
    severity: str
    summary: str
    fix: str
    source: str = STUDY
    #: Only in instruction files (SKILL.md, references: Markdown / text), not in scripts.
    docs_only: bool = False


#: ``accept(match, line) -> shown text | None``: None rejects the match (a benign look-alike).
Accept = Callable[["re.Match[str]", str], "str | None"]


@dataclass(frozen=True)
class LineRule:
    """A rule decided on one line of text."""

    rule: Rule
    pattern: re.Pattern[str]
    accept: Accept | None = None
    #: The match is a secret: only its first characters are ever shown.
    secret: bool = False
    #: Lower-case words one of which every match contains: a text holding none of them is
    #: not searched (a substring test is ~50x cheaper than the regex over the text).
    keywords: tuple[str, ...] = ()
    #: A shell-command rule: matched over the text as :func:`normalise_shell` makes it plain
    #: (keywords included), so quoting or escaping a command's name does not hide it.
    shell: bool = False
    #: ``accept`` decides by the line alone (not the match): one rejected match rejects the
    #: line, so the rest of its matches are not tried (10,000 ``iwr`` on one line: one call).
    by_line: bool = False


# ---------------------------------------------------------------------------------------------
# shared pieces

_URL = linear(r"https?://[^\s\"'`)|>;]+")
_SHELL = r"(?:sudo\s+(?:-\S+\s+)*)?(?:env\s+)?(?:ba|z|k|da|fi|c|tc)?sh\b"
_INTERP = rf"(?:{_SHELL}|(?:sudo\s+)?(?:python[23]?|perl|ruby|node|php|pwsh|powershell)\b)"
#: The end of a command word (matched as a character: RE2 has no lookahead).
_END = r"(?:$|[\s\"'`;&|)])"
#: A network tool or call on the line: where a read secret would go out.
NETWORK_SINK = linear(
    r"\b(?:curl|wget|nc|ncat|netcat|socat|scp|sftp|ftp|telnet)\b|/dev/tcp/|"
    r"\brequests\.(?:post|put|patch|get)\b|\burllib\.request\b|\bhttp\.client\b|"
    r"\bfetch\s*\(|\baxios\b|\bInvoke-(?:WebRequest|RestMethod)\b|\b(?:iwr|irm)\b|"
    r"\bhttpx\.(?:post|put)\b", ignorecase=True)
#: Words that mark a credential-looking value as an example, not a secret.
_EXAMPLE = linear(
    r"example|placeholder|your[-_ ]?(?:own[-_ ]?)?(?:api[-_ ]?)?(?:key|token|secret)|dummy|"
    r"fake|sample|redacted|changeme|xxxx|<[^>]+>|\.\.\.|\*\*\*\*|\$\{?[A-Z_]+\}?|"
    r"os\.environ|getenv|process\.env|\{\{", ignorecase=True)


_ESCAPE = linear(r"\\x([0-9a-fA-F]{2})|\\([0-7]{3})")
_CONTINUED = linear(r"\\\r?$")
_SUBST_OUTPUT = linear(r"\$\(\s*(?:printf|echo)\s+(?:-[a-z]+\s+)*([^\s()`]+)\s*\)"
                       r"|`\s*(?:printf|echo)\s+(?:-[a-z]+\s+)*([^\s()`]+)\s*`")
_REDIRECTED_SUBST = linear(r"<\s*<\(")
#: Logical lines joined at most (a continuation chain longer than this is left split).
MAX_JOINED_LINES = 64


def _unescape(m: re.Match[str]) -> str:
    code = int(m.group(1), 16) if m.group(1) else int(m.group(2), 8)
    return chr(code) if 0x20 <= code < 0x7F else m.group(0)


def normalise_shell(text: str) -> str:
    """Shell text made plain for the shell-command rules, with as many lines as ``text``
    (line N of the result is line N of the file, a continued command joined onto its first
    line): ``printf``/``$'…'`` escapes decoded (``\\x63`` → ``c``), backslash-newline
    continuations joined, ``$(printf X)`` and ``` `echo X` ``` replaced by ``X``, every quote
    and remaining backslash removed (``c"u"rl``, ``cu\\rl``, ``"bash"`` → ``curl``, ``bash``),
    and ``< <(`` written ``<(``. Each step is one linear pass."""
    if "\\" in text:
        text = _ESCAPE.sub(_unescape, text)
        lines = text.split("\n")
        out: list[str] = []
        i = 0
        while i < len(lines):
            line, joined = lines[i], 1
            while (_CONTINUED.search(line) and i + joined < len(lines)
                   and joined < MAX_JOINED_LINES):
                line = _CONTINUED.sub(" ", line) + lines[i + joined]
                joined += 1
            out.append(line)
            out.extend([""] * (joined - 1))  # the joined lines stay, empty: numbering holds
            i += joined
        text = "\n".join(out)
    text = text.replace("$'", "'").replace('$"', '"')
    text = text.replace('"', "").replace("'", "").replace("\\", "")
    if "printf" in text or "echo" in text:
        text = _SUBST_OUTPUT.sub(lambda m: m.group(1) or m.group(2), text)
    if "<(" in text:
        text = _REDIRECTED_SUBST.sub("<(", text)
    return text


def _with_url(m: re.Match[str], line: str) -> str:
    """The matched text, and the URL of the line when the match does not show it."""
    shown = m.group(0).strip()
    url = _URL.search(line)
    if url and url.group(0) not in shown:
        shown = f"{shown} ({url.group(0)})"
    return shown


def entropy(text: str) -> float:
    """Shannon entropy in bits per character (a random base64 token is near 6; words ~3)."""
    if not text:
        return 0.0
    counts = Counter(text)  # counted in C: a 2 MiB token costs milliseconds
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def redact(secret: str) -> str:
    """The first four characters and the length: enough to find it, never enough to use it."""
    return f"{secret[:4]}…[{len(secret)} chars redacted]"


def _looks_random(token: str) -> bool:
    """Letters and digits mixed, and high entropy: not a word, a path or a repeated filler."""
    return (entropy(token) >= 3.5 and any(c.isdigit() for c in token)
            and any(c.isalpha() for c in token) and len(set(token)) >= 10)


# ---------------------------------------------------------------------------------------------
# remote code run at install or use

R_PIPE_SHELL = Rule(
    "SKL101", "remote-script-piped-to-shell", "critical",
    "a downloaded script is run directly (curl/wget piped to a shell or interpreter, a "
    "python -c one-liner that downloads code and runs it)",
    "Pin what is run: download to a file, verify its checksum or signature, then run it; or "
    "install from a package manager with a pinned version.")
R_POWERSHELL = Rule(
    "SKL102", "powershell-download-and-run", "critical",
    "PowerShell runs downloaded text (iex / Invoke-Expression of iwr / DownloadString)",
    "Download the script to a file, verify its signature (Get-AuthenticodeSignature) or "
    "checksum, then run the file.")
R_PIP_URL = Rule(
    "SKL103", "pip-install-from-url", "high",
    "pip installs a package straight from a URL (no index, no pinned version, no hash)",
    "Install a pinned version from an index (pip install 'pkg==1.2.3'), or pin the URL's "
    "hash (--require-hashes).")
R_NPX = Rule(
    "SKL104", "npx-unpinned-package", "medium",
    "npx runs a package without a pinned version (whatever is newest at run time)",
    "Pin the version: npx pkg@1.2.3 (or @scope/pkg@1.2.3).")

#: A command word that may carry a path (``/bin/bash``, ``/usr/bin/env bash``).
_PATHED = r"(?:[\w.~-]*/)*"
_RUNNER = rf"(?:sudo\s+(?:-\S+\s+)*)?{_PATHED}(?:env\s+(?:-\S+\s+)*)?{_PATHED}"
_SHELLS = r"(?:ba|z|k|da|fi|c|tc)?sh"
_INTERPS = rf"(?:{_SHELLS}|python[23]?(?:\.\d+)?|perl|ruby|node|php|pwsh|powershell)"
_FETCH = r"(?:curl|wget|fetch|iwr)"
# Read over shell text made plain first (see ``normalise_shell``): quotes and backslashes
# gone, continuations joined, ``printf`` escapes decoded, ``< <(`` written ``<(``.
_PIPE_SHELL = linear(
    # fetch … | [tee … |] [sudo] [/path/]interp   (within one command list: no ; or &&)
    rf"\b{_FETCH}\b[^\n;&]*\|\s*{_RUNNER}{_INTERPS}(?:$|[\s;&|)`])"
    # interp <(fetch …) / source <(fetch …) / . <(fetch …)
    rf"|(?:^|[\s;&|(]){_RUNNER}(?:{_INTERPS}|source|\.)\s+(?:-\S+\s+)*<\(\s*{_FETCH}\b"
    # interp -c "$(fetch …)", perl -e, source "$(…)", `fetch …`
    rf"|(?:^|[\s;&|(]){_RUNNER}(?:{_INTERPS}|source|\.|eval)\s+(?:-\S+\s+)*"
    rf"(?:\$\(|`)\s*{_FETCH}\b", ignorecase=True)
#: ``curl -o FILE URL … && sh FILE`` (download, then run): the file is checked by the accept.
_DOWNLOAD_RUN = linear(
    r"\b(?:curl|wget)\b[^\n;&|]*?\s(?:-[a-zA-Z]*[oO]|--output(?:-document)?)(?:=|\s*)"
    r"([^\s;&|<>]+)", ignorecase=True)


#: A command that runs a file: ``[sudo] [interp [flags]] path`` or ``./path`` at a command's
#: start (group 1: the path run).
_RUNS_FILE = linear(
    rf"(?:^|[;&|(])\s*{_RUNNER}(?:(?:{_INTERPS}|source|\.)\s+(?:-\S+\s+)*)?"
    r"((?:[\w.~$-]*/)*[\w.~$-]+)(?:$|[\s;&|)`])")


@functools.lru_cache(maxsize=64)
def _files_run(line: str) -> dict[str, int]:
    """Each base name of a file a command of the line runs, with the last position it is run
    at: computed once per line, so each downloaded file's check is one lookup."""
    out: dict[str, int] = {}
    for m in _RUNS_FILE.finditer(line):
        path = m.group(1)
        if path.startswith("./") or "/" in path or m.group(0).strip() != path:
            out[path.rsplit("/", 1)[-1]] = m.start(1)
    return out


def _download_run(m: re.Match[str], line: str) -> str | None:
    """A file a fetch wrote (``-o FILE``) that a later command of the line runs."""
    name = m.group(1)
    base = name.rsplit("/", 1)[-1]
    if name in ("-", "/dev/null") or not base:
        return None
    if _files_run(line).get(base, -1) >= m.end():
        return _with_url(m, line)
    return None


_PS = linear(
    r"\b(?:iex|Invoke-Expression)\b[^\n]*\b(?:iwr|irm|Invoke-WebRequest|Invoke-RestMethod|"
    r"DownloadString|DownloadFile|Net\.WebClient)\b"
    r"|\b(?:iwr|irm|Invoke-WebRequest|Invoke-RestMethod)\b[^\n]*\|\s*(?:iex|Invoke-Expression)\b",
    ignorecase=True)
_PIP = linear(r"\bpip[3]?(?:\.\d+)?\s+install\b[^\n;&|]*", ignorecase=True)
_PIP_INDEX_FLAGS = {"-i", "--index-url", "--extra-index-url", "-f", "--find-links"}


def _pip_url(m: re.Match[str], line: str) -> str | None:
    """A URL given as the package (not as an index or find-links location)."""
    tokens = m.group(0).split()
    for prev, tok in pairwise(tokens):
        bare = tok.strip("\"'")
        if prev in _PIP_INDEX_FLAGS or "=" in bare.split("://")[0]:
            continue  # --index-url=https://… or a flag's value
        if re.match(r"(?:git\+)?https?://", bare):
            return f"{m.group(0).strip()} ({bare})"
    return None


_NPX = linear(r"\bnpx\s+(?:-{1,2}[\w-]+\s+)*((?:@[\w.-]+/)?[\w.-]+(?:@[\w.^~<>=*-]+)?)")


def _npx_unpinned(m: re.Match[str], line: str) -> str | None:
    pkg = m.group(1)
    name, _, version = pkg.lstrip("@").partition("@")
    if version and re.match(r"\d", version):
        return None  # pinned (pkg@1.2.3)
    if not re.search(r"[a-z]", name):
        return None
    return m.group(0).strip()


# ---------------------------------------------------------------------------------------------
# destructive commands

R_RM_ROOT = Rule(
    "SKL201", "recursive-delete-of-root-or-home", "critical",
    "a recursive delete of /, ~, $HOME or a system directory",
    "Delete only a path inside the project (rm -rf ./build); never /, ~ or $HOME.")
R_DISK = Rule(
    "SKL202", "disk-overwrite", "critical",
    "a file system is formatted or a block device overwritten (mkfs, dd of=/dev/…)",
    "Remove the command; a skill has no business formatting or overwriting disks.")
R_FORK = Rule(
    "SKL203", "fork-bomb", "critical", "a fork bomb (a function that spawns itself twice)",
    "Remove it.")
R_CHMOD = Rule(
    "SKL204", "world-writable-root", "critical",
    "everything under /, ~ or $HOME made world-writable (chmod -R 777)",
    "Give the least permission to the one path that needs it (chmod 755 ./script.sh).")

_SYSTEM_DIRS = r"(?:etc|usr|bin|sbin|boot|var|lib|lib64|home|root|opt|srv|sys|proc|dev)"
_ROOTISH = (rf"(?:/\*?|/{_SYSTEM_DIRS}/?\*?|~/?\*?|\$\{{?HOME\}}?/?\*?|%USERPROFILE%\\?)")
_RM = linear(
    r"\brm\s+(?:-[a-zA-Z]+\s+|--[a-z-]+\s+)*?(?:-[a-zA-Z]*[rR][a-zA-Z]*|--recursive)\s+"
    rf"(?:-[a-zA-Z]+\s+|--[a-z-]+\s+)*[\"']?{_ROOTISH}[\"']?{_END}"
    # find / -delete, find ~ -exec rm …: the same recursive delete
    rf"|\bfind\s+(?:-[HLP]\s+)*[\"']?{_ROOTISH}[\"']?\s[^\n;&|]*?"
    r"(?:-delete\b|-exec\s+rm\b)")
_DISK = linear(
    r"\bmkfs(?:\.\w+)?\s+(?:-\S+\s+)*/dev/"
    r"|\bdd\b[^\n]*\bof=/dev/(?:sd|hd|vd|xvd|nvme|mmcblk|disk|rdisk|mapper)"
    r"|>\s*/dev/(?:sd[a-z]|nvme\d|hd[a-z]|disk\d)")
# ``f(){ f|f& };f``: the same name four times, checked by ``_fork`` (RE2 has no \\1).
_FORK = linear(r"(\w+|:)\s*\(\)\s*\{\s*(\w+|:)\s*\|\s*(\w+|:)\s*&\s*\}\s*;\s*(\w+|:)")


def _fork(m: re.Match[str], line: str) -> str | None:
    return m.group(0).strip() if len({m.group(i) for i in range(1, 5)}) == 1 else None


_CHMOD = linear(
    r"\bchmod\s+(?:-\w*R\w*|--recursive)\s+(?:0?777|a\+rwx|ugo\+rwx)\s+"
    rf"[\"']?(?:/|~|\$\{{?HOME\}}?)/?\*?[\"']?{_END}")

# ---------------------------------------------------------------------------------------------
# credential access and exfiltration

R_CRED_READ = Rule(
    "SKL301", "credential-store-read", "high",
    "a credential store is read (SSH keys, cloud or GitHub CLI credentials, browser profiles, "
    "keychains)",
    "Never read the user's credential files; ask the user to provide the one value needed, "
    "or rely on the tool's own login (gh auth, aws sso login).")
R_CRED_MENTION = Rule(
    "SKL302", "credential-store-named", "medium",
    "a credential store is named in the instructions",
    "Make sure the skill never asks the agent to open or send it; drop the path if unused.")
R_ENV_DUMP = Rule(
    "SKL303", "environment-dump", "high",
    "the whole environment is printed or serialised (env, printenv, os.environ, process.env): "
    "it holds the session's API keys",
    "Read the one variable needed (printenv QDRANT_URL, os.environ['QDRANT_URL']).")
R_KEY_IN_URL = Rule(
    "SKL305", "secret-in-url", "high",
    "a secret from the environment is put into a URL a network tool sends (it lands in the "
    "server's, the proxies' and the shell history's logs)",
    "Send the key in a header the API documents (-H 'Authorization: Bearer …') to its own "
    "host; never in a URL.")
R_EXFIL = Rule(
    "SKL304", "credential-exfiltration", "critical",
    "a credential store or the environment is sent to a network tool",
    "Remove the command; nothing from the user's credentials or environment leaves the "
    "machine.")

_HOME = (r"(?:~|\$HOME|\$\{HOME\}|/home/[\w.-]+|/root|/Users/[\w.-]+|%USERPROFILE%"
         r"|\bos\.path\.expanduser\([\"']~)")
CREDENTIAL_STORE = linear(
    rf"{_HOME}[/\\]\.ssh(?:[/\\][\w.-]+)?"
    r"|\.aws[/\\](?:credentials|config)\b|\.config[/\\]gh\b|\.config[/\\]gcloud\b"
    r"|\.azure[/\\]|\.netrc\b|\.git-credentials\b|\.docker[/\\]config\.json|\.kube[/\\]config\b"
    r"|\.pypirc\b|\.gnupg\b|\bid_(?:rsa|ed25519|ecdsa|dsa)\b(?:\.pub)?"
    r"|\.mozilla[/\\]firefox|(?:Google[/\\]Chrome|google-chrome|chromium|BraveSoftware|"
    r"Microsoft[/\\]Edge)[/\\][^\s\"']*(?:Default|Profile|Login Data|Cookies)"
    r"|\bLogin Data\b|\bcookies\.sqlite\b|\blogins\.json\b|\bkey4\.db\b"
    r"|\bsecurity\s+(?:find-(?:generic|internet)-password|dump-keychain)\b"
    r"|\blogin\.keychain(?:-db)?\b|Library/Keychains|\bsecret-tool\s+lookup\b", ignorecase=True)
_READ_VERB = linear(
    r"\b(?:cat|cp|scp|tar|zip|base64|less|more|head|tail|xxd|strings|grep|rsync|open|read|"
    r"read_text|readFile|readFileSync|Get-Content|type|copy|upload|send|post|sqlite3)\b"
    # a keychain query is a read by itself
    r"|\bsecurity\s+(?:find-(?:generic|internet)-password|dump-keychain)\b"
    r"|\bsecret-tool\s+lookup\b", ignorecase=True)
# A backtick or a parenthesis opens a command only when the command follows it at once
# (`` `env` ``, ``(env)``, ``$(env)``) and, for the parenthesis, not a call's argument list:
# ``beta_agent_toolset(env)`` and "`ANTHROPIC_BASE_URL` env)" in prose are no dump.
ENV_DUMP = linear(
    r"(?:(?:^|[;&|]|\$\(|\bthen\b|\bdo\b|^\s*[$>#]\s*)\s*|`|(?:^|[^\w.\]])\()"
    r"(?:printenv|env|export\s+-p|declare\s+-x"
    r"|Get-ChildItem\s+env:|gci\s+env:|dir\s+env:|ls\s+env:)\s*(?:$|[|>;&)`])"
    r"|\b(?:print|pprint|json\.dumps|str|repr|dict|yaml\.dump)\s*\(\s*(?:dict\s*\(\s*)?"
    r"os\.environ\s*\)"
    r"|\bos\.environ\.(?:copy|items)\s*\(\s*\)\s*\)|JSON\.stringify\s*\(\s*process\.env\s*[,)]",
    ignorecase=True, multiline=True)


_PUBLIC = (".pub", "known_hosts")


@functools.lru_cache(maxsize=256)
def secret_store_on(line: str) -> str | None:
    """The first credential store named on the line; a public key or known_hosts is none."""
    for m in CREDENTIAL_STORE.finditer(line):
        if not m.group(0).endswith(_PUBLIC):
            return m.group(0)
    return None


def _cred_read(m: re.Match[str], line: str) -> str | None:
    """A credential path on a line that reads it (and does not send it: that is SKL304)."""
    if (line_has(NETWORK_SINK, line) or not line_has(_READ_VERB, line)
            or m.group(0).endswith(_PUBLIC)):
        return None
    return line.strip()


def _cred_mention(m: re.Match[str], line: str) -> str | None:
    if (line_has(_READ_VERB, line) or line_has(NETWORK_SINK, line)
            or m.group(0).endswith(_PUBLIC)):
        return None  # SKL301 / SKL304 speak for that line
    return m.group(0)


def _env_dump(m: re.Match[str], line: str) -> str | None:
    return None if line_has(NETWORK_SINK, line) else line.strip()


def _exfil(m: re.Match[str], line: str) -> str | None:
    """A credential store or an environment dump on a line that also uses the network."""
    if not line_has(NETWORK_SINK, line):
        return None
    if secret_store_on(line) or line_has(ENV_DUMP, line):
        return line.strip()
    return None


_KEY_IN_URL = linear(
    r"[?&;/][\w.-]*=\$\{?[A-Za-z_][A-Za-z0-9_]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)"
    r"[A-Za-z0-9_]*\}?", ignorecase=True)


def _key_in_url(m: re.Match[str], line: str) -> str | None:
    return line.strip() if line_has(NETWORK_SINK, line) else None


# ---------------------------------------------------------------------------------------------
# obfuscation

R_DECODE_RUN = Rule(
    "SKL401", "decoded-text-run", "critical",
    "encoded text is decoded and run (base64 -d | sh, eval of decoded or downloaded text)",
    "Ship the script in clear text so a reviewer can read what runs.")
R_BLOB = Rule(
    "SKL402", "encoded-blob-in-instructions", "medium",
    "a long base64/hex blob in the instructions: text a reviewer cannot read",
    "Replace it with the clear text, or ship the binary as an asset with its source named.",
    docs_only=True)

_DECODE_RUN = linear(
    rf"(?:\bbase64\s+(?:-d|--decode|-D)\b|\bb64decode\b|\batob\b|\bxxd\s+-r\b|"
    rf"\bopenssl\s+(?:enc\s+)?(?:-d\s+)?-?(?:base64|a)\b[^\n|]*-d)[^\n]*\|\s*{_INTERP}"
    r"|\beval\s*\(?\s*[\"']?\$\(\s*(?:curl|wget|echo\b[^)]*\|\s*base64|base64|printf\b[^)]*\|"
    r"\s*(?:base64|xxd))"
    r"|\b(?:exec|eval)\s*\(\s*(?:compile\s*\(\s*)?(?:base64\.b\d\ddecode|codecs\.decode|"
    r"bytes\.fromhex|zlib\.decompress|marshal\.loads|requests\.get|urllib\.request\.urlopen|"
    r"urlopen|__import__\s*\(\s*[\"']base64)"
    r"|\beval\s*\(\s*(?:atob|Buffer\.from|(?:await\s+)?fetch)\b|\bnew\s+Function\s*\(\s*atob\b",
    ignorecase=True)
#: ``python -c "…"`` (any python, flags before ``-c``) and the code after it.
_PY_ONE_LINER = linear(
    r"\bpython(?:\d(?:\.\d+)?)?(?:\.exe)?\s+(?:-[A-Za-z]+\s+)*-c\s*(?P<code>.+)",
    ignorecase=True)
#: What a one-liner downloads with (``python -c "$(curl …)"`` is a shell form: the shell rule's).
_PY_FETCH = linear(
    r"\burlopen\b|\burlretrieve\b|\b(?:requests|httpx)\.(?:get|request)\b|\bhttp\.client\b"
    r"|\baiohttp\b|\bwget\.download\b|\bsocket\.create_connection\b", ignorecase=True)
#: What runs text or a file as code.
_PY_RUN = linear(
    r"\b(?:exec|eval|compile)\s*\(|\brunpy\.|\bsubprocess\.|\bos\.(?:system|popen|exec\w*)\b"
    r"|\bimportlib\.", ignorecase=True)


def _python_fetch_run(m: re.Match[str], line: str) -> str | None:
    """A Python one-liner that downloads code and runs it (``exec(urlopen(…).read())``,
    ``urlretrieve`` then ``subprocess``), shown with its URL. A one-liner the shell rule
    already names (``curl … | sh`` inside it) is its (one finding per line)."""
    code = m.group("code")
    if line_has(_PIPE_SHELL, line):
        return None
    if _PY_FETCH.search(code) and _PY_RUN.search(code):
        return _with_url(m, line)
    return None


BLOB_MIN = 160
# The blob is group 1; the characters around it are matched, not looked at (no lookaround).
_BLOB = linear(rf"(?:^|[^\w/+])((?:[A-Za-z0-9+/]{{{BLOB_MIN},}}={{0,2}}"
               rf"|[0-9a-fA-F]{{{BLOB_MIN},}}))(?:$|[^\w/+])")
_DATA_URI = linear(r"data:[\w/+.-]+;base64,\s*$")


def _blob(m: re.Match[str], line: str) -> str | None:
    start = m.start(1)
    # The 200 characters before it only: the whole line before each blob would be quadratic.
    if _DATA_URI.search(line[max(0, start - 200):start]):
        return None  # an inline image: rendered, not read as instructions
    b = m.group(1)
    if not (any(c.isdigit() for c in b) and any(c.isalpha() for c in b)):
        return None
    return f"{b[:24]}… ({len(b)} chars)"


# ---------------------------------------------------------------------------------------------
# hidden text (checked per character by the scanner)

R_TAGS = Rule(
    "SKL501", "unicode-tag-characters", "critical",
    "Unicode tag characters (U+E0000–U+E007F): invisible text a model reads as ASCII",
    "Delete the invisible characters; every instruction must be visible to a reviewer.")
R_BIDI = Rule(
    "SKL502", "bidi-override", "high",
    "bidirectional override characters: the text shown is not the text read (Trojan Source, "
    "CVE-2021-42574)",
    "Delete the bidi control characters (U+202A–U+202E, U+2066–U+2069).")
R_ZERO_WIDTH = Rule(
    "SKL503", "zero-width-characters", "medium",
    "zero-width or invisible characters: text split or hidden from a reviewer",
    "Delete them (U+200B–U+200F, U+2060–U+2064, U+FEFF inside a file, U+00AD, U+034F, the "
    "Hangul fillers U+115F, U+1160, U+3164, U+FFA0).")

TAG_CHARS = re.compile("[\U000e0000-\U000e007f]+")
BIDI_CHARS = re.compile("[\u202a-\u202e\u2066-\u2069]+")
#: Characters that render as nothing: zero-width space/joiners, the directional marks (LRM,
#: RLM), word joiner and the invisible math operators, the soft hyphen, the combining grapheme
#: joiner, the Mongolian vowel separator, Khmer inherent vowels and the Hangul fillers
#: (invisible, yet letters to a tokenizer).
_INVISIBLE = ("\u200b-\u200f\u2060-\u2064\u180e\ufeff\u00ad\u034f\u115f\u1160\u17b4"
              "\u17b5\u3164\uffa0")
ZERO_WIDTH = re.compile(f"[{_INVISIBLE}]+")


def decode_tags(text: str) -> str:
    """What tag characters spell (each is its ASCII character + 0xE0000)."""
    return "".join(chr(ord(c) - 0xE0000) for c in text if 0xE0020 <= ord(c) <= 0xE007E)


# ---------------------------------------------------------------------------------------------
# prompt injection aimed at the agent

R_OVERRIDE = Rule(
    "SKL601", "instruction-override", "high",
    "text tells the agent to ignore or replace its earlier instructions",
    "Remove the phrase; a skill adds guidance, it never overrides the user's or the system's.")
R_CONCEAL = Rule(
    "SKL602", "conceal-from-user", "high",
    "text tells the agent to hide something from the user",
    "Remove it; the agent must be able to tell the user everything it does.")
R_SYSPROMPT = Rule(
    "SKL603", "system-prompt-extraction", "high",
    "text asks the agent to reveal, print or replace its system prompt",
    "Remove it.")
R_DISABLE = Rule(
    "SKL604", "disable-safety-or-permissions", "high",
    "text tells the agent to disable its safety checks or permission prompts "
    "(--dangerously-skip-permissions, bypassPermissions)",
    "Remove it; a skill that needs a tool lists it in allowed-tools, scoped.")

_OVERRIDE = linear(
    r"\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+)?(?:of\s+)?(?:the\s+|your\s+|"
    r"my\s+|these\s+)?(?:previous|prior|above|earlier|preceding|original|system|other)\s+"
    r"(?:instructions|prompts?|rules|directions|guidelines|messages)\b", ignorecase=True)
_CONCEAL = linear(
    r"\b(?:do\s*n[o']?t|never|without)\s+(?:tell|telling|inform|informing|notify|notifying|"
    r"alert|alerting)\s+the\s+user\b(\s+to\b)?"
    r"|\b(?:keep|hide)\s+(?:this|it|these|that)\s+(?:secret\s+|hidden\s+)?from\s+the\s+user\b"
    r"|\b(?:do\s*n[o']?t|never)\s+let\s+the\s+user\s+(?:know|see)\b", ignorecase=True)


def _conceal(m: re.Match[str], line: str) -> str | None:
    # "don't tell the user to …" is advice about wording, not hiding (group 1: the "to").
    return None if m.group(1) else m.group(0).strip()


_SYSPROMPT = linear(
    r"\b(?:reveal|print|output|show|repeat|leak|dump|override|replace|ignore)\s+(?:your|the)\s+"
    r"(?:full\s+|original\s+|hidden\s+)?system\s+(?:prompt|message|instructions)\b",
    ignorecase=True)
_DISABLE = linear(
    r"--dangerously-skip-permissions|\bbypassPermissions\b|--permission-mode[= ]bypass"
    r"|\b(?:disable|turn\s+off|bypass|ignore|skip)\s+(?:your|all|any)\s+(?:own\s+)?(?:safety|"
    r"security|permission|guardrail|content\s+filter)s?\b", ignorecase=True)

# ---------------------------------------------------------------------------------------------
# secrets committed in the skill

R_PROVIDER_KEY = Rule(
    "SKL701", "provider-api-key", "critical",
    "a provider API key (Anthropic, OpenAI, AWS, GitHub, Slack, Google, Stripe, Hugging Face, "
    "GitLab) committed in the skill",
    "Revoke the key now, remove it from the file and its history; read keys from the "
    "environment. Mark a documentation example as such (e.g. 'sk-ant-…EXAMPLE').")
R_PRIVATE_KEY = Rule(
    "SKL702", "private-key", "critical", "a private key block committed in the skill",
    "Revoke the key, remove the file and its history; never ship keys in a skill.")
R_TOKEN = Rule(
    "SKL703", "high-entropy-secret", "high",
    "a high-entropy value assigned to a key, token, secret or password",
    "Read it from the environment; if it is an example, say so (your-api-key, <TOKEN>).")

_PROVIDER_KEY = linear(
    r"\bsk-ant-[A-Za-z0-9_-]{20,}|\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_-]{20,}"
    r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b|\bgh[pousr]_[A-Za-z0-9]{36,}\b|\bgithub_pat_[A-Za-z0-9_]{22,}"
    r"|\bxox[abposr]-[A-Za-z0-9-]{10,}|\bAIza[0-9A-Za-z_-]{35}\b|\b[rs]k_live_[0-9a-zA-Z]{24,}"
    r"|\bhf_[A-Za-z]{34,}\b|\bglpat-[A-Za-z0-9_-]{20,}")
PRIVATE_KEY_BEGIN = re.compile(
    r"-----BEGIN (?:(?:RSA|DSA|EC|OPENSSH|ENCRYPTED|PGP) )?PRIVATE KEY(?: BLOCK)?-----")
_TOKEN = linear(
    r"(?i)\b[\w-]*(?:api[_-]?key|secret|token|passwd|password|access[_-]?key|auth[_-]?key)"
    r"[\w-]*[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9_\-+/=.]{20,})"
    r"|\bBearer\s+([A-Za-z0-9._\-+/=]{20,})")


def _provider_key(m: re.Match[str], line: str) -> str | None:
    key = m.group(0)
    if line_has(_EXAMPLE, line) or not _looks_random(key.split("-", 2)[-1].split("_", 1)[-1]):
        return None
    return key


def scrub(text: str) -> str:
    """``text`` with every provider key, private-key body and token value redacted: the
    matched line of any rule (an exfiltration command holding a bearer token) is shown."""
    text = _PROVIDER_KEY.sub(lambda m: redact(m.group(0)), text)

    def _value(m: re.Match[str]) -> str:
        group = 1 if m.group(1) else 2
        value = m.group(group)
        if not _looks_random(value):
            return m.group(0)
        start, end = m.span(group)
        whole = m.group(0)
        return whole[: start - m.start()] + redact(value) + whole[end - m.start():]

    return _TOKEN.sub(_value, text)


def _token(m: re.Match[str], line: str) -> str | None:
    value = m.group(1) or m.group(2)
    if line_has(_EXAMPLE, line) or _PROVIDER_KEY.search(value) or not _looks_random(value):
        return None  # an example, a provider key (SKL701 speaks) or not random enough
    return value


# ---------------------------------------------------------------------------------------------
# reach beyond the skill (checked by the scanner with the file system and the frontmatter)

R_ALLOWED_TOOLS = Rule(
    "SKL801", "broad-allowed-tools", "medium",
    "allowed-tools grants unscoped Bash (Bash, Bash(*), Bash(:*), Bash(bash:*), Bash(env:*) "
    "and the like): every command runs without a prompt",
    "Scope it to the commands the skill runs: Bash(git status:*), Bash(python scripts/x.py:*).")
R_ALLOWED_SUDO = Rule(
    "SKL802", "privileged-allowed-tools", "high",
    "allowed-tools pre-approves sudo or a destructive command (Bash(sudo:*), Bash(rm:*))",
    "Drop the entry; let the user approve privileged or destructive commands one by one.")
R_SYMLINK_OUT = Rule(
    "SKL803", "symlink-leaves-family", "high",
    "a symlink points outside the skill family (the install refuses it; a reader may follow it)",
    "Copy the file into the family, or point the link at a file inside it.")
R_TOO_DEEP = Rule(
    "SKL805", "tree-too-deep", "high",
    "folders nested deeper than the scan descends (64 levels): what is below them is not "
    "scanned, and the install refuses the family",
    "Flatten the family: no skill needs folders 64 levels deep.")
R_PATH_OUT = Rule(
    "SKL804", "relative-path-leaves-family", "medium",
    "a relative link or path (../) resolves outside the skill family: it is not installed "
    "with the skill",
    "Link to the other skill by its URL, or copy what is needed into this family.",
    docs_only=True)


_CRED_WORDS = (".ssh", ".aws", ".config", ".azure", ".netrc", ".git-credentials", ".docker",
               ".kube", ".pypirc", ".gnupg", "id_rsa", "id_ed25519", "id_ecdsa", "id_dsa",
               ".mozilla", "chrome", "chromium", "brave",
               "microsoft", "login data", "cookies", "logins.json", "key4.db", "-password",
               "keychain", "secret-tool")
#: ENV_DUMP's forms; a bare ``env`` counts only before a pipe, redirect, separator or line end.
_ENV_WORDS = ("printenv", "env|", "env |", "env>", "env >", "env;", "env &", "env&", "env)",
              "env`", "env\n", "env\r", "export -p", "declare -x", "env:", "os.environ",
              "process.env")

LINE_RULES: tuple[LineRule, ...] = (
    LineRule(R_PIPE_SHELL, _PIPE_SHELL, _with_url, keywords=("curl", "wget", "fetch", "iwr"),
             shell=True),
    LineRule(R_PIPE_SHELL, _DOWNLOAD_RUN, _download_run, keywords=("curl", "wget"),
             shell=True),
    LineRule(R_POWERSHELL, _PS, _with_url, keywords=("iex", "invoke-expression")),
    LineRule(R_PIP_URL, _PIP, _pip_url, keywords=("pip install", "pip3 install", "pip3.")),
    LineRule(R_NPX, _NPX, _npx_unpinned, keywords=("npx",)),
    LineRule(R_RM_ROOT, _RM, keywords=("rm ", "rm\t", "find "), shell=True),
    LineRule(R_DISK, _DISK, keywords=("mkfs", "/dev/")),
    LineRule(R_FORK, _FORK, _fork, keywords=("(){", "() {")),
    LineRule(R_CHMOD, _CHMOD, keywords=("chmod",)),
    LineRule(R_EXFIL, NETWORK_SINK, _exfil, keywords=_CRED_WORDS + _ENV_WORDS, by_line=True),
    LineRule(R_KEY_IN_URL, _KEY_IN_URL, _key_in_url, shell=True, by_line=True,
             keywords=("key", "token", "secret", "passw", "credential")),
    LineRule(R_CRED_READ, CREDENTIAL_STORE, _cred_read, keywords=_CRED_WORDS),
    LineRule(R_CRED_MENTION, CREDENTIAL_STORE, _cred_mention, keywords=_CRED_WORDS),
    LineRule(R_ENV_DUMP, ENV_DUMP, _env_dump, keywords=_ENV_WORDS, by_line=True),
    LineRule(R_DECODE_RUN, _DECODE_RUN, keywords=(
        "base64", "b64decode", "atob", "xxd", "openssl", "eval(", "eval (", "eval $",
        "eval \"$", "eval '$", "exec(", "exec (")),
    LineRule(R_PIPE_SHELL, _PY_ONE_LINER, _python_fetch_run, keywords=("python",)),
    LineRule(R_BLOB, _BLOB, _blob),
    LineRule(R_OVERRIDE, _OVERRIDE, keywords=("ignore", "disregard", "forget", "override")),
    LineRule(R_CONCEAL, _CONCEAL, _conceal, keywords=("tell", "inform", "notif", "alert",
                                                      "from the user", "let the user")),
    LineRule(R_SYSPROMPT, _SYSPROMPT, keywords=("system prompt", "system message",
                                                "system instructions")),
    LineRule(R_DISABLE, _DISABLE, keywords=("dangerously", "bypass", "disable", "turn off",
                                            "ignore", "skip")),
    LineRule(R_PROVIDER_KEY, _PROVIDER_KEY, _provider_key, secret=True,
             keywords=("sk-", "akia", "asia", "ghp_", "gho_", "ghu_", "ghs_", "ghr_",
                       "github_pat", "xox", "aiza", "k_live", "hf_", "glpat")),
    LineRule(R_TOKEN, _TOKEN, _token, secret=True,
             keywords=("key", "secret", "token", "passw", "bearer")),
)



def _keyword_index() -> dict[str, frozenset[int]]:
    """Each keyword and the line rules (indexes into ``LINE_RULES``) it triggers."""
    words = sorted({k for lr in LINE_RULES for k in lr.keywords})
    return {k: frozenset(i for i, lr in enumerate(LINE_RULES) if k in lr.keywords)
            for k in words}


#: Searched over a file's lower-cased text: which lines each keyed rule must look at. Every
#: match of a keyed rule contains one of its keywords (written with single spaces: a command
#: spaced out with tabs or runs of blanks is the price of not running every regex on every
#: line, ~1 ms per KB).
KEYWORD_RULES: dict[str, frozenset[int]] = _keyword_index()

#: A text without the gate holds none of the keywords containing it: one search instead of
#: several ("env" guards env|, env >, printenv, os.environ…).
_GATES = ("env", "eval", "exec", "id_", "pip", "system ", "()")
KEYWORD_GATES: dict[str, tuple[str, ...]] = {
    g: tuple(k for k in KEYWORD_RULES if g in k) for g in _GATES}
UNGATED_KEYWORDS: tuple[str, ...] = tuple(
    k for k in KEYWORD_RULES if not any(k in ks for ks in KEYWORD_GATES.values()))

#: Line rules read over the file's text, and over its text made plain (``normalise_shell``).
PLAIN_RULES: frozenset[int] = frozenset(i for i, lr in enumerate(LINE_RULES) if not lr.shell)
SHELL_RULES: frozenset[int] = frozenset(i for i, lr in enumerate(LINE_RULES) if lr.shell)

#: Hidden-text characters of SKL501-503 in one class: one search tells whether any is there.
ANY_HIDDEN = re.compile(f"[\U000e0000-\U000e007f\u202a-\u202e\u2066-\u2069{_INVISIBLE}]")

#: Every rule, in id order (SARIF's ``tool.driver.rules``, the docs' table).
RULES: tuple[Rule, ...] = tuple(sorted(
    {lr.rule for lr in LINE_RULES} | {R_TAGS, R_BIDI, R_ZERO_WIDTH, R_PRIVATE_KEY,
                                     R_ALLOWED_TOOLS, R_ALLOWED_SUDO, R_SYMLINK_OUT, R_PATH_OUT,
                                     R_TOO_DEEP},
    key=lambda r: r.id))
RULES_BY_ID: dict[str, Rule] = {r.id: r for r in RULES}
