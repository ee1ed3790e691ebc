"""Reading a skill directory: SKILL.md (YAML frontmatter + Markdown body), references/, assets/.

Nothing here raises on bad input. A skill author points the linter at whatever is on disk —
a half-written SKILL.md, a binary blob committed by mistake, a symlink that points at itself —
and every such problem becomes a :class:`Finding` with a message and a fix, so ``skilllift
score --output json`` still prints valid JSON and ``pytest --skill-lint`` still reports a
clean failure instead of a traceback.

Pure logic: no pytest import. Below ``run/`` and ``runners/`` (the scaffold and the install read
skills through it) and ``lint/`` (the static analysis).
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

#: SKILL.md bytes analysed. Anything past this is not read (a 1 MiB SKILL.md is already
#: ~20k lines, 25x the BLOATED_SKILL threshold); the cut is reported as FILE_TOO_LARGE so it is
#: never silent. The true line count is still measured by streaming the whole file.
MAX_BYTES = 1024 * 1024
#: entries listed under references/ or assets/ before we stop walking (reported when hit).
MAX_BUNDLED_FILES = 5000
#: Values a frontmatter may expand to, aliases expanded (a real one holds a few dozen). YAML
#: aliases share one object, so a 1 KB "billion laughs" block loads fast and expands to 10^9
#: values the moment any key is turned into text; the bound holds for every key alike.
MAX_YAML_VALUES = 10_000


def yaml_within(value: Any, limit: int = MAX_YAML_VALUES) -> bool:
    """Whether ``value`` (loaded YAML) holds at most ``limit`` values with every alias
    expanded; stops counting at the limit, so an alias bomb costs ``limit`` steps."""
    count, stack = 0, [value]
    while stack:
        item = stack.pop()
        count += 1
        if count > limit:
            return False
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set)):
            stack.extend(item)
    return True
SKILL_FILENAME = "SKILL.md"
#: The rule a frontmatter block must follow: "YAML frontmatter followed by Markdown content".
FRONTMATTER_SOURCE = (
    "Agent Skills specification (agentskills.io/specification), SKILL.md format: YAML "
    "frontmatter between '---' lines, a mapping of keys"
)

# The C loader is ~10x faster than the pure-Python one; it matters for the 1,000-skill budget.
_YamlLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class Finding:
    """One problem found in a skill.

    ``check`` groups findings into the tests ``pytest --skill-lint`` shows (an anti-pattern's
    check is its own flag; Claude Code frontmatter rules share ``FRONTMATTER_RULES``; file
    problems share ``SKILL_FILE``; unresolved ordinary links are ``LINKS``).
    ``anti_pattern`` is True only for PluginEval's six flags: only those count toward the
    penalty ``max(0.5, 1 - 0.05 * count)``.
    """

    flag: str
    evidence: str
    fix: str
    check: str
    anti_pattern: bool = False
    line: int | None = None
    #: "error" fails its ``--skill-lint`` test; "warning" is reported (and emitted as a pytest
    #: warning) but fails nothing — e.g. frontmatter keys that only Claude Code reads.
    severity: str = "error"
    #: The public rule the finding enforces (document and section), when it comes from one.
    source: str | None = None

    @property
    def is_warning(self) -> bool:
        """Reported, never failing."""
        return self.severity == "warning"

    def to_json(self) -> dict[str, Any]:
        """The JSON shape used in ``layers[0].anti_patterns`` / ``layers[0].findings``."""
        out: dict[str, Any] = {"flag": self.flag, "evidence": self.evidence, "fix": self.fix}
        out["check"] = self.check
        out["counts_toward_penalty"] = self.anti_pattern
        out["severity"] = self.severity
        if self.source is not None:
            out["source"] = self.source
        if self.line is not None:
            out["line"] = self.line
        return out


@dataclass(frozen=True)
class BundledFile:
    """A file under references/ or assets/ (path relative to that directory)."""

    rel: str
    size: int


@dataclass(frozen=True)
class Link:
    """A Markdown link target found outside code (1-based line in SKILL.md)."""

    target: str
    line: int


@dataclass
class MarkdownFacts:
    """What the checks need from the Markdown, computed in one pass over the lines."""

    h2_h3: list[str] = field(default_factory=list)  # heading texts, lower-cased
    headings_all: list[str] = field(default_factory=list)
    code_blocks: int = 0
    code_languages: list[str] = field(default_factory=list)
    unclosed_fence: bool = False
    links: list[Link] = field(default_factory=list)
    prose_lines: list[str] = field(default_factory=list)  # body lines outside code fences


@dataclass
class SkillFile:
    """A parsed skill directory; built by :func:`load_skill`, never raises."""

    dir: Path
    skill_md: Path
    root: Path  # the skills root: cross-references resolve against it, family is relative to it
    rel_id: str  # e.g. "qdrant-scaling/scaling-qps" (POSIX, relative to root)
    family: str  # first segment of rel_id: the unit Claude Code installs
    text: str = ""
    line_count: int = 0
    frontmatter: dict[str, Any] = field(default_factory=dict)
    has_frontmatter: bool = False
    frontmatter_ok: bool = False
    body: str = ""
    body_first_line: int = 1
    facts: MarkdownFacts = field(default_factory=MarkdownFacts)
    has_references_dir: bool = False
    references: list[BundledFile] = field(default_factory=list)
    has_assets_dir: bool = False
    assets: list[BundledFile] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)  # file / parse problems
    #: derived values shared by several checks (links resolved, directive counts), so a
    #: 1,000-skill tree does each stat / regex pass once.
    cache: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        """Frontmatter ``name`` as a string ('' when absent or not a scalar)."""
        return _scalar_text(self.frontmatter.get("name"))

    @property
    def description(self) -> str:
        """Frontmatter ``description`` as a string ('' when absent or not a scalar)."""
        return _scalar_text(self.frontmatter.get("description"))

    @property
    def lines(self) -> list[str]:
        """SKILL.md split into lines (the analysed part)."""
        return self.text.splitlines()


def _scalar_text(value: Any) -> str:
    # YAML turns `description: 2024` into an int and `description:` into None; a number is
    # still text the model would see, a mapping/list is not a description at all.
    if value is None or isinstance(value, (dict, list)):
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


# ---------------------------------------------------------------------------------------------
# discovery


def find_skill_dirs(root: Path, findings: list[Finding] | None = None) -> list[Path]:
    """Every directory under ``root`` (inclusive) holding a SKILL.md, sorted.

    Symlinked directories are followed (skills are often symlinked into place) but each real
    directory is visited once, so a symlink loop ends the walk on that branch and, when a
    ``findings`` list is given, is reported there instead of recursing forever.
    """
    out: list[Path] = []
    seen: set[tuple[int, int]] = set()
    stack: list[Path] = [root]
    while stack:
        d = stack.pop()
        try:
            st = d.stat()
        except OSError as exc:  # dangling link, ELOOP, permission
            if findings is not None and d != root:
                findings.append(_walk_problem(d, exc))
            continue
        key = (st.st_dev, st.st_ino)
        if key in seen:
            if findings is not None:
                findings.append(
                    Finding(
                        "SYMLINK_LOOP",
                        f"{d} leads back to a directory already visited; not descended again",
                        "Remove the symlink or point it outside the skills tree.",
                        "SKILL_FILE",
                    )
                )
            continue
        seen.add(key)
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError as exc:
            if findings is not None:
                findings.append(_walk_problem(d, exc))
            continue
        is_skill = any(e.name == SKILL_FILENAME for e in entries)
        if is_skill:
            out.append(d)
        for e in reversed(entries):
            if e.name.startswith(".") or e.name in {"node_modules", "__pycache__"}:
                continue
            if is_skill and e.name in {"references", "assets"}:
                continue  # a skill's own bundle: load_skill lists it (and reports its loops)
            try:
                is_dir = e.is_dir()  # follows symlinks; False for dangling/looping links
            except OSError:
                is_dir = False
            if is_dir:
                stack.append(Path(e.path))
            elif e.is_symlink() and e.name != SKILL_FILENAME and findings is not None:
                try:
                    os.stat(e.path)
                except OSError as exc:  # a looping or dangling link: say so, don't follow
                    findings.append(_walk_problem(Path(e.path), exc))
    return sorted(out)


def _walk_problem(path: Path, exc: OSError) -> Finding:
    loop = getattr(exc, "errno", None) == errno.ELOOP
    return Finding(
        "SYMLINK_LOOP" if loop else "UNREADABLE_PATH",
        f"{path}: {exc.strerror or exc}",
        "Fix or remove the broken symlink / permission problem.",
        "SKILL_FILE",
    )


def family_root(skill_dir: Path) -> Path:
    """The skills root for a lone skill dir: the parent of its top-most SKILL.md ancestor.

    ``skills/qdrant-scaling/scaling-qps`` -> ``skills`` (its parent also holds a SKILL.md, so
    both belong to the ``qdrant-scaling`` family that Claude Code installs whole).
    """
    top = skill_dir
    for parent in skill_dir.parents:
        if (parent / SKILL_FILENAME).is_file():
            top = parent
        else:
            break
    return top.parent


# ---------------------------------------------------------------------------------------------
# loading


def load_skill(
    skill_dir: Path, root: Path | None = None, fs_cache: dict[str, bool] | None = None
) -> SkillFile:
    """Parse ``skill_dir`` (a directory holding SKILL.md). Problems become findings.

    ``fs_cache`` is a path -> exists memo shared by the skills of one run (see
    ``antipatterns._exists``); leave it None when the tree may change between calls.
    """
    skill_dir = Path(skill_dir)
    if root is None:
        root = family_root(skill_dir)
    try:
        rel = skill_dir.relative_to(root).as_posix()
    except ValueError:
        rel = skill_dir.name
    if rel in ("", "."):
        rel = skill_dir.name
    skill = SkillFile(
        dir=skill_dir,
        skill_md=skill_dir / SKILL_FILENAME,
        root=root,
        rel_id=rel,
        family=rel.split("/", 1)[0],
    )
    if fs_cache is not None:
        skill.cache["fs"] = fs_cache
    raw = _read_skill_md(skill)
    if raw is not None:
        _parse_text(skill, raw)
    skill.has_references_dir, skill.references = _bundled(skill, "references")
    skill.has_assets_dir, skill.assets = _bundled(skill, "assets")
    return skill


def _read_skill_md(skill: SkillFile) -> str | None:
    """The decoded text of SKILL.md, or None when there is nothing usable to parse."""
    path = skill.skill_md
    add = skill.findings.append
    try:
        st = path.stat()
    except OSError as exc:
        add(
            Finding(
                "SYMLINK_LOOP" if getattr(exc, "errno", None) == errno.ELOOP else "UNREADABLE",
                f"cannot open {path.name}: {exc.strerror or exc}",
                "Make SKILL.md a regular readable file (not a broken or looping symlink).",
                "SKILL_FILE",
            )
        )
        return None
    if not stat.S_ISREG(st.st_mode):
        add(
            Finding(
                "UNREADABLE",
                f"{path.name} is not a regular file",
                "SKILL.md must be a regular Markdown file.",
                "SKILL_FILE",
            )
        )
        return None
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_BYTES + 1)
            truncated = len(data) > MAX_BYTES
            if truncated:
                data = data[:MAX_BYTES]
                total_lines = data.count(b"\n") + _count_newlines(fh)
    except OSError as exc:
        add(
            Finding(
                "UNREADABLE",
                f"cannot read {path.name}: {exc.strerror or exc}",
                "Check the file's permissions.",
                "SKILL_FILE",
            )
        )
        return None
    if not data.strip():
        add(
            Finding(
                "EMPTY_FILE",
                f"{path.name} is empty ({len(data)} bytes)",
                "Write the skill: YAML frontmatter with name and description, then instructions.",
                "SKILL_FILE",
            )
        )
        return ""
    if b"\x00" in data[:8192]:
        add(
            Finding(
                "BINARY_FILE",
                f"{path.name} contains NUL bytes: it is binary, not Markdown",
                "Replace it with the UTF-8 Markdown source of the skill.",
                "SKILL_FILE",
            )
        )
        return None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        add(
            Finding(
                "NOT_UTF8",
                f"{path.name} is not valid UTF-8 (byte {exc.start}: "
                f"{data[exc.start : exc.start + 1]!r}); analysed with the bad bytes replaced",
                "Re-save SKILL.md as UTF-8 (Claude Code reads skills as UTF-8).",
                "SKILL_FILE",
            )
        )
        text = data.decode("utf-8", errors="replace")
    if truncated:
        add(
            Finding(
                "FILE_TOO_LARGE",
                f"{path.name} is {st.st_size:,} bytes ({total_lines:,} lines); only the first "
                f"{MAX_BYTES:,} bytes were analysed",
                "Move supporting material to references/ and keep SKILL.md on the execution path.",
                "SKILL_FILE",
            )
        )
        skill.line_count = total_lines
    return text


def _count_newlines(fh: Any) -> int:
    n = 0
    while chunk := fh.read(1 << 20):
        n += chunk.count(b"\n")
    return n


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)")
_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_INLINE_LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+[\"'(][^)]*)?\)")
_REF_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
_INLINE_CODE = re.compile(r"`+[^`\n]*`+")


def _parse_text(skill: SkillFile, text: str) -> None:
    skill.text = text
    lines = text.splitlines()
    if not skill.line_count:
        skill.line_count = len(lines)
    body_start = 0
    first = next((i for i, ln in enumerate(lines) if ln.strip()), None)
    if first is not None and lines[first].strip() == "---":
        skill.has_frontmatter = True
        end = next(
            (i for i in range(first + 1, len(lines)) if lines[i].rstrip() in ("---", "...")),
            None,
        )
        if end is None:
            skill.findings.append(
                Finding(
                    "BROKEN_FRONTMATTER",
                    f"frontmatter opened at line {first + 1} is never closed with '---'",
                    "Close the YAML frontmatter with a line holding only '---'.",
                    "FRONTMATTER_RULES",
                    line=first + 1,
                    source=FRONTMATTER_SOURCE,
                )
            )
            body_start = first + 1
        else:
            _parse_yaml(skill, "\n".join(lines[first + 1 : end]), first + 2)
            body_start = end + 1
    elif text.strip():
        skill.findings.append(
            Finding(
                "NO_FRONTMATTER",
                "SKILL.md does not start with a '---' YAML frontmatter block",
                "Start the file with:\n---\nname: my-skill\ndescription: What it does. "
                "Use when ...\n---",
                "FRONTMATTER_RULES",
                line=1,
                source=FRONTMATTER_SOURCE,
            )
        )
    skill.body = "\n".join(lines[body_start:])
    skill.body_first_line = body_start + 1
    skill.facts = scan_markdown(lines, body_start)


def _parse_yaml(skill: SkillFile, block: str, first_line: int) -> None:
    try:
        data = yaml.load(block, Loader=_YamlLoader)  # C/Python *safe* loader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = first_line + mark.line if mark is not None else first_line
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        skill.findings.append(
            Finding(
                "BROKEN_FRONTMATTER",
                f"YAML error in frontmatter at line {line}: {problem}",
                "Fix the YAML (quote descriptions that contain ': ' or start with a quote).",
                "FRONTMATTER_RULES",
                line=line,
                source=FRONTMATTER_SOURCE,
            )
        )
        return
    except RecursionError:  # absurdly nested YAML: treat like any other parse error
        skill.findings.append(
            Finding(
                "BROKEN_FRONTMATTER",
                "frontmatter YAML is nested too deeply to parse",
                "Use a flat mapping of simple keys.",
                "FRONTMATTER_RULES",
                line=first_line,
                source=FRONTMATTER_SOURCE,
            )
        )
        return
    if data is None:
        data = {}
    if not yaml_within(data):
        skill.findings.append(
            Finding(
                "BROKEN_FRONTMATTER",
                f"frontmatter expands to more than {MAX_YAML_VALUES} values (YAML aliases "
                "nested into an alias bomb); not read",
                "Write the frontmatter as plain 'key: value' lines, without anchors (&) and "
                "aliases (*).",
                "FRONTMATTER_RULES",
                line=first_line,
                source=FRONTMATTER_SOURCE,
            )
        )
        return
    if not isinstance(data, dict):
        skill.findings.append(
            Finding(
                "BROKEN_FRONTMATTER",
                f"frontmatter is a YAML {type(data).__name__}, not a mapping of keys",
                "Write the frontmatter as 'key: value' lines (name:, description:).",
                "FRONTMATTER_RULES",
                line=first_line,
                source=FRONTMATTER_SOURCE,
            )
        )
        return
    skill.frontmatter = {str(k): v for k, v in data.items()}
    skill.frontmatter_ok = True


def scan_markdown(lines: list[str], start: int = 0) -> MarkdownFacts:
    """Headings, fenced code blocks and link targets of ``lines[start:]`` in one pass.

    Links and headings inside fenced code are ignored: a ``[x](references/y)`` in a code
    sample is an example, not a reference the model will try to open.
    """
    facts = MarkdownFacts()
    fence: str | None = None
    for i in range(start, len(lines)):
        line = lines[i]
        head = line[:6]
        # Cheap substring tests first: the regexes only run on lines that could match.
        m = _FENCE.match(line) if ("`" in head or "~" in head) else None
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            continue
        if m:
            fence = m.group(1)
            facts.code_blocks += 1
            facts.code_languages.append(m.group(2).lower())
            continue
        facts.prose_lines.append(line)
        h = _HEADING.match(line) if "#" in line[:4] else None
        if h:
            text = h.group(2).strip().lower()
            facts.headings_all.append(text)
            if len(h.group(1)) in (2, 3):
                facts.h2_h3.append(text)
        if "](" in line or "]:" in line:
            stripped = _INLINE_CODE.sub("", line) if "`" in line else line
            for lm in _INLINE_LINK.finditer(stripped):
                facts.links.append(Link(lm.group(1), i + 1))
            rd = _REF_DEF.match(stripped)
            if rd:
                facts.links.append(Link(rd.group(1), i + 1))
    facts.unclosed_fence = fence is not None
    return facts


def _bundled(skill: SkillFile, sub: str) -> tuple[bool, list[BundledFile]]:
    """Whether ``<skill>/<sub>/`` exists and the files under it (loop-safe, capped)."""
    base = skill.dir / sub
    try:
        if not base.is_dir():
            return False, []
    except OSError:
        return False, []
    files: list[BundledFile] = []
    walk_findings: list[Finding] = []
    for path in _walk_files(base, walk_findings):
        if len(files) >= MAX_BUNDLED_FILES:
            skill.findings.append(
                Finding(
                    "TOO_MANY_FILES",
                    f"{sub}/ holds more than {MAX_BUNDLED_FILES} files; only the first "
                    f"{MAX_BUNDLED_FILES} were listed",
                    f"Prune {sub}/ to what the skill actually links to.",
                    "SKILL_FILE",
                )
            )
            break
        try:
            size = path.stat().st_size
        except OSError as exc:
            walk_findings.append(_walk_problem(path, exc))
            continue
        files.append(BundledFile(path.relative_to(base).as_posix(), size))
    skill.findings.extend(walk_findings)
    return True, files


def _walk_files(base: Path, findings: list[Finding]) -> Iterator[Path]:
    seen: set[tuple[int, int]] = set()
    stack = [base]
    while stack:
        d = stack.pop()
        try:
            st = d.stat()
        except OSError as exc:
            findings.append(_walk_problem(d, exc))
            continue
        if (st.st_dev, st.st_ino) in seen:
            findings.append(
                Finding(
                    "SYMLINK_LOOP",
                    f"{d} leads back to a directory already listed",
                    "Remove the looping symlink.",
                    "SKILL_FILE",
                )
            )
            continue
        seen.add((st.st_dev, st.st_ino))
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError as exc:
            findings.append(_walk_problem(d, exc))
            continue
        for e in entries:
            p = Path(e.path)
            try:
                if e.is_dir():
                    stack.append(p)
                elif e.is_file():
                    yield p
                elif e.is_symlink():
                    p.stat()  # raises for dangling / looping links
            except OSError as exc:
                findings.append(_walk_problem(p, exc))
