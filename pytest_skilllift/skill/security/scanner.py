"""Scanning a skill family: every file read once, every rule applied, findings with file:line.

A family is what Claude Code installs (``skills_root/<family>/``, sub-skills, references,
scripts and assets alike). Nothing is silently left out: a binary file, an unreadable one or
the part of a file past ``MAX_BYTES`` is listed in ``ScanResult.skipped`` with the reason.
Pure logic: no pytest import.
"""

from __future__ import annotations

import os
import re
import stat
import string
import time
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pytest_skilllift.skill.security import rules as R
from pytest_skilllift.skill.security.rules import Rule, rank
from pytest_skilllift.skill.tree import MAX_TREE_DEPTH, walk_nofollow

# The C loader when PyYAML has it (~10x faster), as in skill/skillfile.py.
_YamlLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
#: Bytes of one file scanned; the rest is reported in ``skipped`` (never silent).
MAX_BYTES = 2 * 1024 * 1024
#: Never scanned (version-control and bytecode noise; the install skips them too).
IGNORED_DIRS = frozenset({".git", "__pycache__"})
#: Instruction files: what the agent reads as text (SKILL.md, references).
DOC_SUFFIXES = frozenset({".md", ".markdown", ".txt", ".rst", ".mdx"})
#: Files a shell or an interpreter runs by their name: scanned as text whatever bytes they
#: hold (one NUL byte in a comment does not make ``setup.sh`` binary to ``sh``).
SCRIPT_SUFFIXES = frozenset({
    ".sh", ".bash", ".zsh", ".ksh", ".fish", ".command", ".py", ".pyw", ".rb", ".pl", ".pm",
    ".php", ".js", ".mjs", ".cjs", ".ts", ".ps1", ".psm1", ".bat", ".cmd", ".lua", ".tcl",
    ".r", ".awk", ".sed", ".mk", ".makefile"})
SCRIPT_NAMES = frozenset({"Makefile", "makefile", "GNUmakefile", "Dockerfile", "Justfile",
                          "Rakefile", ".bashrc", ".profile", ".envrc"})
SKILL_FILENAME = "SKILL.md"

_NEWLINE = re.compile("\n")
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_MD_LINK = R.linear(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
# The path is group 1; the character before it is matched (RE2 has no lookbehind).
_BARE_PARENT = R.linear(r"(?:^|[^\w/.])((?:\.\./)+[\w.\-/]+)")


@dataclass(frozen=True)
class SecurityFinding:
    """One finding: the rule, where (path relative to the scan root, 1-based line), what."""

    rule: Rule
    path: str
    line: int
    match: str  # already redacted when the rule is about secrets
    column: int = 1

    @property
    def rule_id(self) -> str:
        """The rule's stable id."""
        return self.rule.id

    @property
    def severity(self) -> str:
        """critical / high / medium / low."""
        return self.rule.severity

    @property
    def location(self) -> str:
        """``path:line``."""
        return f"{self.path}:{self.line}"

    def to_json(self) -> dict[str, Any]:
        """The finding in ``skilllift scan --output json``."""
        return {"rule": self.rule.id, "name": self.rule.name, "severity": self.severity,
                "file": self.path, "line": self.line, "column": self.column,
                "match": self.match, "message": self.rule.summary, "fix": self.rule.fix}

    def text(self) -> str:
        """One line: ``severity rule file:line: summary: match``."""
        return (f"{self.severity.upper():<8} {self.rule.id} {self.location}: "
                f"{self.rule.summary}: {self.match!r}")


@dataclass
class ScanResult:
    """What one scan found, over one or more families."""

    root: Path
    families: list[str] = field(default_factory=list)
    files_scanned: int = 0
    #: Files not reached because the scan's deadline passed (the install's run timeout).
    files_unscanned: int = 0
    #: ``(path, reason)`` for every file or part of a file not scanned.
    skipped: list[tuple[str, str]] = field(default_factory=list)
    findings: list[SecurityFinding] = field(default_factory=list)

    def at_least(self, severity: str) -> list[SecurityFinding]:
        """Findings of ``severity`` or worse."""
        floor = rank(severity)
        return [f for f in self.findings if rank(f.severity) >= floor]

    def counts(self) -> dict[str, int]:
        """Findings per severity, most severe first."""
        return {s: sum(1 for f in self.findings if f.severity == s)
                for s in reversed(R.SEVERITIES)}

    def skipped_lines(self) -> list[str]:
        """What was not scanned, for a person: the binary files (fonts, images, archives)
        in one line counted by kind, every other reason (unreadable, cut at ``MAX_BYTES``)
        one line per file. ``to_json`` lists every file."""
        binary = [p for p, why in self.skipped if why == BINARY]
        out = [f"{p}: {why}" for p, why in self.skipped if why != BINARY]
        if binary:
            kinds = Counter(_kind(p) for p in binary)
            shown = ", ".join(f"{n} {k}" for k, n in kinds.most_common())
            out.insert(0, f"{len(binary)} binary file{'s' * (len(binary) != 1)} ({shown}): "
                          "not text, so not scanned (--output json lists them)")
        return out

    def to_json(self) -> dict[str, Any]:
        """``skilllift scan --output json``."""
        return {"root": str(self.root), "families": self.families,
                "files_scanned": self.files_scanned, "counts": self.counts(),
                "skipped": [{"file": p, "reason": why} for p, why in self.skipped],
                "findings": [f.to_json() for f in self.findings]}


class ScanUsageError(Exception):
    """The path cannot be scanned at all (missing, or holds no SKILL.md)."""


class ScanDeadline(Exception):
    """The scan did not finish before its deadline (the message says how far it got)."""


# ---------------------------------------------------------------------------------------------
# entry points


def families_at(path: Path) -> tuple[Path, list[Path]]:
    """``(display_root, family_dirs)``: a family (a directory holding SKILL.md, or a SKILL.md;
    a sub-skill stands for the family above it) or a skills root whose first-level
    directories holding a SKILL.md somewhere are families."""
    path = Path(path)
    if path.is_file() and path.name == SKILL_FILENAME:
        path = path.parent
    if not path.is_dir():
        raise ScanUsageError(f"{path}: no such skill directory (give a skill family, a "
                             "SKILL.md or a skills root)")
    if (path / SKILL_FILENAME).is_file():
        # A sub-skill is scanned as the family that holds it: the unit Claude Code installs.
        while (path.parent / SKILL_FILENAME).is_file():
            path = path.parent
        return path.parent, [path]
    fams = sorted(d for d in path.iterdir()
                  if d.is_dir() and not d.is_symlink() and d.name not in IGNORED_DIRS
                  and _holds_skill(d))
    if not fams:
        raise ScanUsageError(f"{path}: no {SKILL_FILENAME} found under it")
    return path, fams


def _holds_skill(d: Path) -> bool:
    for _, dirs, files in walk_nofollow(d):
        dirs[:] = [x for x in dirs if x not in IGNORED_DIRS]
        if SKILL_FILENAME in files:
            return True
    return False


def scan_path(path: Path) -> ScanResult:
    """Scan every family at ``path`` (see :func:`families_at`)."""
    root, fams = families_at(path)
    result = ScanResult(root=root)
    for fam in fams:
        scan_family(fam, root, result)
    return result


def scan_family(family_dir: Path, display_root: Path | None = None,
                result: ScanResult | None = None, *,
                deadline: float | None = None) -> ScanResult:
    """Scan one family; paths are shown relative to ``display_root`` (default: its parent).
    ``deadline`` (``time.monotonic()``): :class:`ScanDeadline` when it passes mid-scan."""
    family_dir = Path(family_dir)
    display_root = Path(display_root) if display_root is not None else family_dir.parent
    result = result if result is not None else ScanResult(root=display_root)
    result.families.append(family_dir.name)
    too_deep: list[Path] = []
    _scan_files(_walk(family_dir, too_deep=too_deep), family_dir.resolve(), display_root,
                result, deadline=deadline)
    _too_deep_findings(too_deep, display_root, result)
    return result


def _too_deep_findings(too_deep: list[Path], display_root: Path, result: ScanResult) -> None:
    for path in too_deep:
        rel = _rel(path, display_root)
        result.skipped.append((rel + "/", f"more than {MAX_TREE_DEPTH} folders deep; not "
                                          "scanned"))
        result.findings.append(SecurityFinding(
            R.R_TOO_DEEP, rel, 1, f"{rel}/ (more than {MAX_TREE_DEPTH} levels)"))


def scan_skill(skill_dir: Path, family_dir: Path, display_root: Path) -> ScanResult:
    """The files one skill owns: its directory minus the sub-skills nested in it (each has
    its own report); "leaving the family" is judged against ``family_dir``."""
    result = ScanResult(root=display_root, families=[Path(family_dir).name])
    too_deep: list[Path] = []
    _scan_files(_walk(Path(skill_dir), prune_skills=True, too_deep=too_deep),
                Path(family_dir).resolve(), display_root, result)
    _too_deep_findings(too_deep, display_root, result)
    return result


def _scan_files(paths: Iterable[Path], real_root: Path, display_root: Path,
                result: ScanResult, *, deadline: float | None = None) -> None:
    for path in paths:
        if deadline is not None and time.monotonic() > deadline:
            left = 1 + sum(1 for _ in paths)
            result.files_unscanned += left
            raise ScanDeadline(f"{result.files_scanned} file(s) scanned, {left} not reached")
        rel = _rel(path, display_root)
        if path.is_symlink():
            result.findings += _symlink_findings(path, rel, real_root)
            continue
        text, why = _read(path, script=_is_script(path))
        if why:
            result.skipped.append((rel, why))
        if text is None:
            continue
        result.files_scanned += 1
        result.findings += scan_text(text, rel, doc=_is_doc(path))
        if path.suffix.lower() in DOC_SUFFIXES and ".." in text:
            result.findings += _escaping_paths(text, rel, path.parent, real_root)
        if path.name == SKILL_FILENAME:
            result.findings += allowed_tools_findings(text, rel)


def critical_findings(family_dir: Path, *,
                      deadline: float | None = None) -> list[SecurityFinding]:
    """The family's critical findings (what refuses a with-skill run); :class:`ScanDeadline`
    when ``deadline`` (``time.monotonic()``) passes first."""
    return scan_family(family_dir, deadline=deadline).at_least("critical")


# ---------------------------------------------------------------------------------------------
# files


def _walk(family_dir: Path, *, prune_skills: bool = False,
          too_deep: list[Path] | None = None) -> Iterable[Path]:
    """Every file and link under the family, sorted, links not followed (no recursion; a
    folder too deep is put in ``too_deep``); with ``prune_skills`` the sub-directories
    holding their own SKILL.md are left out."""
    for current, dirs, files in walk_nofollow(family_dir, too_deep=too_deep):
        here = Path(current)
        kept = []
        for d in sorted(dirs):
            if d in IGNORED_DIRS:
                continue
            if (here / d).is_symlink():
                yield here / d  # a linked directory: checked as a link, never descended
            elif not (prune_skills and (here / d / SKILL_FILENAME).is_file()):
                kept.append(d)
        dirs[:] = kept
        for f in sorted(files):
            yield here / f


def _rel(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


#: Why a binary file was not scanned (``ScanResult.skipped``).
BINARY = "binary file (not scanned as text)"


def _kind(path: str) -> str:
    """``fonts/a.ttf`` → ``.ttf``, ``x.tar.gz`` → ``.tar.gz``, no suffix → ``no suffix``."""
    suffixes = Path(path).suffixes[-2:]
    if len(suffixes) == 2 and suffixes[0].lower() not in (".tar",):
        suffixes = suffixes[-1:]
    return "".join(suffixes).lower() or "no suffix"


def _is_doc(path: Path) -> bool:
    return path.suffix.lower() in DOC_SUFFIXES or path.name == SKILL_FILENAME


def _is_script(path: Path) -> bool:
    """Whether a shell or an interpreter would run the file by its name (its suffix, a
    well-known name, or an executable bit; a ``#!`` line is checked on the bytes)."""
    if path.suffix.lower() in SCRIPT_SUFFIXES or path.name in SCRIPT_NAMES:
        return True
    try:
        return bool(os.lstat(path).st_mode & 0o111)
    except OSError:
        return False


def _read(path: Path, *, script: bool = False) -> tuple[str | None, str]:
    """``(text, why_part_skipped)``; text None when the file is binary, unreadable or not a
    regular file (a FIFO would block the read forever, a device never end). A script or an
    instruction file is text whatever bytes it holds: NUL bytes do not make it binary."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        return None, f"unreadable: {exc.strerror or exc}"
    with os.fdopen(fd, "rb") as fh:
        mode = os.fstat(fh.fileno()).st_mode
        if not stat.S_ISREG(mode):
            kind = ("FIFO" if stat.S_ISFIFO(mode) else "socket" if stat.S_ISSOCK(mode)
                    else "device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "special")
            return None, f"not a regular file ({kind}); not read"
        try:
            data = fh.read(MAX_BYTES + 1)
        except OSError as exc:
            return None, f"unreadable: {exc.strerror or exc}"
    if b"\x00" in data[:8192] and not (script or data.startswith(b"#!") or _is_doc(path)):
        return None, BINARY
    why = ""
    if len(data) > MAX_BYTES:
        data = data[:MAX_BYTES]
        why = f"only the first {MAX_BYTES} bytes scanned"
    return data.decode("utf-8", errors="replace"), why


# ---------------------------------------------------------------------------------------------
# rules on text


def scan_text(text: str, rel: str, *, doc: bool) -> list[SecurityFinding]:
    """Every line rule, hidden-character rule and private-key rule on one file's text.

    One pass of the rules' keywords over the lower-cased text finds the lines each rule must
    look at; only those lines meet the rule's own pattern (a rule with no keyword searches the
    whole text once). Every regex over every line would cost ~1 ms per KB.
    """
    # ASCII-only lowering keeps every offset (str.lower turns "İ" into two characters), so
    # a keyword's position in ``lower`` is its position in ``text``; the keywords are ASCII.
    lower = text.lower() if text.isascii() else text.translate(_ASCII_LOWER)
    starts = [0, *(m.end() for m in _NEWLINE.finditer(text))]

    def line_at(i: int) -> str:
        end = starts[i + 1] - 1 if i + 1 < len(starts) else len(text)
        return text[starts[i]:end].rstrip("\r")

    out: list[SecurityFinding] = []
    if not text.isascii() and R.ANY_HIDDEN.search(text):  # isascii: C speed, most files
        for no, line in enumerate((ln.rstrip("\r") for ln in text.split("\n")), start=1):
            out += _hidden(line, rel, no, first=no == 1)
    keyed = _keyed_lines(lower, starts, R.PLAIN_RULES)
    # The shell-command rules read the text made plain (quotes, escapes, continuations):
    # same number of lines, so a line number is the file's.
    shell = R.normalise_shell(text)
    shell_starts = [0, *(m.end() for m in _NEWLINE.finditer(shell))]
    shell_lower = shell.lower() if shell.isascii() else shell.translate(_ASCII_LOWER)
    keyed.update(_keyed_lines(shell_lower, shell_starts, R.SHELL_RULES))

    def shell_line(i: int) -> str:
        end = shell_starts[i + 1] - 1 if i + 1 < len(shell_starts) else len(shell)
        return shell[shell_starts[i]:end].rstrip("\r")

    for ri, lr in enumerate(R.LINE_RULES):
        if lr.rule.docs_only and not doc:
            continue
        if lr.shell:
            for i in sorted(keyed.get(ri, ())):
                finding = _line_finding(lr, shell_line(i), rel, i + 1)
                if finding is not None:
                    out.append(finding)
            continue
        if lr.keywords:
            hits = sorted(keyed.get(ri, ()))
        elif lr.rule is R.R_BLOB and max(map(len, text.split()), default=0) < R.BLOB_MIN:
            continue  # no run of 160 non-blank characters: no blob (a C-speed test)
        else:
            hits = _candidate_lines(lr.pattern, text, starts)
        for i in hits:
            finding = _line_finding(lr, line_at(i), rel, i + 1)
            if finding is not None:
                out.append(finding)
    if "private key" in lower:
        out += _private_keys([ln.rstrip("\r") for ln in text.split("\n")], rel)
    out.sort(key=lambda f: (f.line, f.rule.id))
    return out


def _keyed_lines(lower: str, starts: list[int],
                 rules: frozenset[int]) -> dict[int, set[int]]:
    """For each keyed line rule, the 0-based lines holding one of its keywords.

    ``str.find`` per keyword (a C substring search, ~1 GB/s) rather than one regex
    alternation of every keyword, which Python's engine tries position by position; a gate
    absent from the text skips every keyword holding it.
    """
    out: dict[int, set[int]] = {}
    words = [*R.UNGATED_KEYWORDS]
    for gate, guarded in R.KEYWORD_GATES.items():
        if gate in lower:
            words += guarded
    end = len(lower)
    for word in words:
        if not R.KEYWORD_RULES[word] & rules:
            continue
        pos = lower.find(word)
        while pos != -1:
            line = bisect_right(starts, pos) - 1
            for ri in R.KEYWORD_RULES[word] & rules:
                out.setdefault(ri, set()).add(line)
            pos = lower.find(word, starts[line + 1] if line + 1 < len(starts) else end)
    return out


def _candidate_lines(pattern: re.Pattern[str], text: str, starts: list[int]) -> list[int]:
    """0-based lines a whole-text match touches (every line it spans, so a match that ran
    across a newline cannot hide a real one-line match it swallowed)."""
    hit: set[int] = set()
    for m in pattern.finditer(text):
        first = bisect_right(starts, m.start()) - 1
        last = bisect_right(starts, max(m.end() - 1, m.start())) - 1
        hit.update(range(first, last + 1))
    return sorted(hit)


def _line_finding(lr: R.LineRule, line: str, rel: str, no: int) -> SecurityFinding | None:
    """The rule's first accepted match on the line (one finding per rule and line)."""
    for m in lr.pattern.finditer(line):
        shown = lr.accept(m, line) if lr.accept else m.group(0).strip()
        if shown is None:
            if lr.by_line:
                return None  # the line decided: its other matches would be refused too
            continue
        # Any rule's match may hold a key (an exfiltration line with a bearer token).
        shown = R.redact(shown) if lr.secret else _clip(R.scrub(shown), around=m.group(0))
        return SecurityFinding(lr.rule, rel, no, shown, m.start() + 1)
    return None


def _clip(text: str, limit: int = 160, around: str = "") -> str:
    """``text`` within ``limit`` characters; a long line is cut around ``around`` (the
    rule's match) so the excerpt shows what matched, not the line's first words."""
    text = text.strip()
    if len(text) <= limit:
        return text
    at = text.find(around.strip()) if around.strip() else -1
    if at < 0 or at + len(around.strip()) <= limit - 1:
        return text[: limit - 1] + "…"
    end = min(len(text), at + len(around.strip()) + (limit - len(around.strip())) // 2)
    start = max(0, end - (limit - 2))
    return "…" + text[start:end].strip() + ("…" if end < len(text) else "")


def _hidden(line: str, rel: str, no: int, *, first: bool) -> list[SecurityFinding]:
    out: list[SecurityFinding] = []
    tags = R.TAG_CHARS.search(line)
    if tags:
        spelled = R.decode_tags("".join(R.TAG_CHARS.findall(line)))
        out.append(SecurityFinding(R.R_TAGS, rel, no, _clip(
            f"{len(tags.group(0))} tag character(s) spelling {spelled!r}"), tags.start() + 1))
    bidi = R.BIDI_CHARS.search(line)
    if bidi:
        codes = " ".join(f"U+{ord(c):04X}" for c in bidi.group(0))
        out.append(SecurityFinding(R.R_BIDI, rel, no, f"{codes} in {_clip(line, 80)!r}",
                                   bidi.start() + 1))
    for zw in R.ZERO_WIDTH.finditer(line):
        if first and zw.start() == 0 and zw.group(0) == "\ufeff":
            continue  # a byte-order mark at the start of the file is an encoding marker
        if zw.group(0) == "\u200d" and _emoji(line, zw.start() - 1) and _emoji(line, zw.end()):
            continue  # a joiner inside an emoji sequence (👩‍💻) is how the emoji is written
        codes = " ".join(f"U+{ord(c):04X}" for c in zw.group(0))
        out.append(SecurityFinding(R.R_ZERO_WIDTH, rel, no, codes, zw.start() + 1))
        break
    return out


def _emoji(line: str, i: int) -> bool:
    """Whether ``line[i]`` is part of an emoji (a pictograph or its variation selector)."""
    if not 0 <= i < len(line):
        return False
    c = ord(line[i])
    return c >= 0x1F000 or 0x2600 <= c <= 0x27BF or c == 0xFE0F


def _private_keys(lines: list[str], rel: str) -> list[SecurityFinding]:
    """A BEGIN … PRIVATE KEY block with key material after it (an elided example is fine)."""
    out: list[SecurityFinding] = []
    for i, line in enumerate(lines):
        m = R.PRIVATE_KEY_BEGIN.search(line)
        if not m:
            continue
        body = next((x.strip() for x in lines[i + 1:i + 4] if x.strip()), "")
        if len(body) >= 40 and re.fullmatch(r"[A-Za-z0-9+/=]+", body):
            out.append(SecurityFinding(R.R_PRIVATE_KEY, rel, i + 1,
                                       f"{m.group(0)} {R.redact(body)}", m.start() + 1))
    return out


def allowed_tools_findings(text: str, rel: str) -> list[SecurityFinding]:
    """``allowed-tools`` entries broader than a skill needs (unscoped Bash, sudo, rm)."""
    if "allowed-tools" not in text:
        return []
    fm = re.match(r"\ufeff?---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|$)", text, re.DOTALL)
    if not fm:
        return []
    from pytest_skilllift.skill.skillfile import yaml_within

    try:
        data = yaml.load(fm.group(1), Loader=_YamlLoader)
    except (yaml.YAMLError, RecursionError):
        return []  # the frontmatter rules report an unparsable block
    # An alias bomb is reported by the frontmatter rules; expanding it here (str of a list
    # of lists of aliases) would take days.
    if not isinstance(data, dict) or "allowed-tools" not in data or not yaml_within(data):
        return []
    raw = data["allowed-tools"]
    tools = ([t for t in raw if isinstance(t, str | int | float)] if isinstance(raw, list)
             else _split_tools(str(raw or "")))
    key_line = next((i for i, ln in enumerate(text.splitlines(), 1)
                     if ln.startswith("allowed-tools")), 1)
    out: list[SecurityFinding] = []
    for tool in (str(t).strip() for t in tools if str(t).strip()):
        scope = re.fullmatch(r"Bash\s*\((.*)\)", tool, re.IGNORECASE)
        if tool.lower() in ("bash", "*") or (scope and _any_command(scope.group(1))):
            out.append(SecurityFinding(R.R_ALLOWED_TOOLS, rel, key_line, tool))
        elif scope and re.match(r"\s*(?:sudo|su|rm|dd|mkfs|chmod|chown|doas)\b",
                                scope.group(1)):
            out.append(SecurityFinding(R.R_ALLOWED_SUDO, rel, key_line, tool))
    return out


def _split_tools(text: str) -> list[str]:
    """``allowed-tools`` as a string: entries split at commas and at blanks outside
    parentheses (``Bash(git status:*) Read``), in one pass (a lookahead regex was quadratic)."""
    out: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        if ch == "," or (ch.isspace() and depth == 0):
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return [t for t in out if t.strip()]


#: A command prefix that runs any command given after it: a shell, ``env``, ``eval``,
#: ``xargs``… ``Bash(bash:*)`` pre-approves every command as ``Bash(*)`` does (RE2: linear
#: on any scope a hostile frontmatter holds).
_ANY_COMMAND_PREFIX = R.linear(
    r"^\s*(?:/(?:usr/)?bin/)?(?:bash|sh|zsh|dash|ksh|fish|env|eval|exec|xargs|nohup|command|"
    r"builtin|nice|time|timeout(?:\s+\S+)?)(?:\s+-c)?\s*(?::\s*\*?)?\s*\**\s*$",
    ignorecase=True)


def _any_command(scope: str) -> bool:
    """Whether a ``Bash(…)`` scope lets every command through: only wildcards and colons
    (``*``, ``:*``, ``*:*``, ``* *``, empty) or a prefix that runs what follows it."""
    return re.fullmatch(r"[\s*:]*", scope) is not None or bool(
        _ANY_COMMAND_PREFIX.search(scope))


def _symlink_findings(path: Path, rel: str, real_root: Path) -> list[SecurityFinding]:
    try:
        raw = os.readlink(path)
        target = path.resolve(strict=False)
    except (OSError, RuntimeError):
        return [SecurityFinding(R.R_SYMLINK_OUT, rel, 1, "a link that cannot be resolved (loop)")]
    if target == real_root or real_root in target.parents:
        return []
    return [SecurityFinding(R.R_SYMLINK_OUT, rel, 1, f"{rel} -> {raw}")]


def _escaping_paths(text: str, rel: str, here: Path, real_root: Path) -> list[SecurityFinding]:
    """Relative links and ``../`` paths in instructions that resolve outside the family (one
    finding per line). String arithmetic, not ``Path`` objects: this meets every link of every
    reference file."""
    out: list[SecurityFinding] = []
    base, root = str(here.resolve()), str(real_root)
    depth = 0 if base == root else base[len(root):].count(os.sep)  # dirs below the family
    starts: list[int] | None = None
    seen_lines: set[int] = set()
    # Every path starting with ../ (in a link or not) is a bare-parent match; links only add
    # those with a ../ further in (sub/../../x), looked for when the text has one.
    matches = list(_BARE_PARENT.finditer(text))
    if "/.." in text:
        matches += [m for m in _MD_LINK.finditer(text) if not m.group(1).startswith("../")]
        matches.sort(key=lambda m: m.start(1))
    for m in matches:
        target = m.group(1)
        if ".." not in target or "://" in target or target.startswith(("/", "mailto:")):
            continue  # most links: C-speed tests before any splitting
        if not _leaves(target.split("#")[0], base, root, depth):
            continue
        starts = starts if starts is not None else [
            0, *(m.end() for m in _NEWLINE.finditer(text))]
        no = bisect_right(starts, m.start(1))
        if no not in seen_lines:
            seen_lines.add(no)
            out.append(SecurityFinding(R.R_PATH_OUT, rel, no, target))
    return out


def _leaves(path: str, base: str, root: str, depth: int) -> bool:
    """Whether ``base/path`` resolves outside ``root`` (``depth``: base's levels below it)."""
    parts = path.split("/")
    ups = 0
    while ups < len(parts) and parts[ups] == "..":
        ups += 1
    if ".." not in parts[ups:]:  # the usual shape: ../../x/y
        above = ups - depth  # levels above the family root the path climbs to
        if above <= 0:
            return False
        # Out, unless it walks straight back down into the family (../fam/x from fam/).
        return parts[ups:ups + above] != root.split(os.sep)[-above:]
    resolved = os.path.normpath(os.path.join(base, path))
    return resolved != root and not resolved.startswith(root + os.sep)
