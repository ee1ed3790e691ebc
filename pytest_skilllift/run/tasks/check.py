"""``skilllift tasks check``: can a Harbor task be trusted before a week is paid for on it?

Two parts, each a list of :class:`Problem` per task (:class:`TaskCheck`):

- the **static lint** (:func:`lint_task`, seconds, no container): the task reads
  (``run/tasks/reader.py``'s rules: ``task.toml`` fields in range, ``instruction.md``,
  ``environment/Dockerfile``, ``tests/test.sh``); the instruction does not name a skill of
  the task (SkillsBench's rule: naming it leaks the answer — a deliverable's file format that
  a skill shares its name with, ``write report.xlsx``, is not naming the skill); ``tests/``
  and ``solution/`` are not reachable from the agent's image (a ``COPY tests``, a bind in a
  compose file, a test file's bytes in the build context); the verifier does not fetch at
  verify time (``pip install``, ``curl`` in ``test.sh``: noted, flaky offline); the skills
  under ``environment/skills/`` pass the security scan (``skilllift scan``'s rules: a critical
  finding refuses the task, as it refuses a prompt's install);
- the **oracle and no-op** probes (Harbor's oracle check; run by
  ``runners/task_check.py`` in the task's own containers, no agent, no spend), judged here
  from the verifier's files by :func:`judge_oracle` and :func:`judge_noop`: the reference
  solution must reach reward 1, an untouched workspace must score below 1 and must get a
  reward at all (a verifier that writes none when its tests fail makes every failure a
  ``verifier_error``).

Severities: ``broken`` (the task measures nothing or leaks: exit 1), ``warning`` (it may
mislead: said, not failed), ``note``. Pure: files in, problems out.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pytest_skilllift.model import PromptSpec, TaskSpec
from pytest_skilllift.run.tasks.reader import (
    DOCKERFILE,
    ENVIRONMENT,
    INSTRUCTION,
    SKILLS_DIR,
    TASK_TOML,
    TEST_SH,
    TESTS,
    TaskError,
    load_task,
)
from pytest_skilllift.run.tasks.results import PASSED, VerifierResult
from pytest_skilllift.week.files import VERIFIER_DIR, VERIFIER_OUTPUT

if TYPE_CHECKING:  # the docker side is imported only by the command that probes
    from pytest_skilllift.runners.task_check import ProbeOutcome

BROKEN, WARNING, NOTE = "broken", "warning", "note"
SEVERITIES = (BROKEN, WARNING, NOTE)
#: The checks, in report order (each problem names one).
READS, NAMES_SKILL, TESTS_REACHABLE, VERIFY_FETCH, SECURITY, ORACLE, NOOP = (
    "reads", "instruction_names_skill", "tests_reachable", "verifier_fetches",
    "skill_security", "oracle", "noop")
TASK_TOML_LIMITS = "task_toml_limits"
#: A timeout past this is a typo more often than a task (seconds; SkillsBench's are minutes).
MAX_TIMEOUT_S = 24 * 3600
SOLUTION_DIR = "solution"
SOLVE_SH = "solve.sh"
#: The reward the oracle must reach (SkillsBench's binary reward: 1 = solved).
FULL_REWARD = 1.0
#: Words after a skill's name that make it a file format, not the skill ("an xlsx file").
_FORMAT_WORDS = ("file", "files", "format", "document", "documents", "spreadsheet",
                 "workbook", "output", "export")
#: A verifier that fetches while it verifies (flaky offline, and what it fetches can change).
_FETCH = re.compile(
    r"\b(?:pip3?\s+install|python3?\s+-m\s+pip\s+install|uv\s+(?:pip\s+install|add|sync)|"
    r"uvx\b|uv\s+run\s+--with|poetry\s+install|npm\s+(?:install|i|ci)\b|npx\b|yarn\s+add|"
    r"apt(?:-get)?\s+install|apk\s+add|curl\b|wget\b|git\s+clone|go\s+get)")
#: Dockerfile instructions that copy from the build context.
_COPY = re.compile(r"^\s*(?:COPY|ADD)\s+(.*)$", re.IGNORECASE)
#: Lines shown per failing verifier test / output tail.
MAX_TAIL_LINES = 20
MAX_NAMED = 20


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a task: which check, how bad, what, and the fix."""

    check: str
    severity: str
    message: str
    fix: str = ""
    #: Evidence lines (failing tests, the Dockerfile line, the test.sh line…).
    detail: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The problem in ``--output json``."""
        return {"check": self.check, "severity": self.severity, "message": self.message,
                "fix": self.fix, "detail": list(self.detail)}


@dataclass
class TaskCheck:
    """What the checks found on one task."""

    path: Path
    name: str
    problems: list[Problem] = field(default_factory=list)
    #: Check → "passed" / "failed" / "skipped: why" (what ran, for the report).
    ran: dict[str, str] = field(default_factory=dict)
    #: The probes' rewards (``oracle`` / ``noop`` → reward or None).
    rewards: dict[str, float | None] = field(default_factory=dict)
    #: The probes' wall seconds (container, solution, verifier; an image build included).
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def broken(self) -> bool:
        """Whether any problem makes the task untrustworthy."""
        return any(p.severity == BROKEN for p in self.problems)

    def add(self, problem: Problem) -> None:
        """Record ``problem`` (its check then failed when it is broken)."""
        self.problems.append(problem)
        if problem.severity == BROKEN:
            self.ran[problem.check] = "failed"

    def to_json(self) -> dict[str, Any]:
        """The task in ``--output json``."""
        return {"task": self.name, "path": str(self.path), "broken": self.broken,
                "checks": dict(sorted(self.ran.items())), "rewards": self.rewards,
                "seconds": {k: round(v, 2) for k, v in self.seconds.items()},
                "problems": [p.to_json() for p in self.problems]}


# -- the static lint -------------------------------------------------------------------------


def lint_task(folder: Path, skills_root: Path) -> TaskCheck:
    """The static checks of the task in ``folder`` (no container, no model)."""
    check = TaskCheck(path=folder, name=folder.name)
    try:
        spec = load_task(folder, skills_root)
        check.ran[READS] = PASSED
        if spec.task is not None:
            _lint_limits(check, spec.task)
    except TaskError as exc:
        check.add(Problem(READS, BROKEN, str(exc), "fix the field as the message says"))
    instruction = _text(folder / INSTRUCTION)
    families = task_skill_names(folder, skills_root)
    _lint_names(check, instruction, families)
    _lint_reachable(check, folder)
    _lint_fetches(check, folder / TESTS / TEST_SH)
    _lint_security(check, folder / ENVIRONMENT / SKILLS_DIR)
    if not (folder / SOLUTION_DIR / SOLVE_SH).is_file():
        check.add(Problem(ORACLE, WARNING, "no solution/solve.sh: the oracle check cannot run",
                          "add the reference solution Harbor's oracle agent runs"))
        check.ran[ORACLE] = "skipped: no solution/solve.sh"
    return check


def _lint_limits(check: TaskCheck, task: TaskSpec) -> None:
    """``task.toml`` values that read but cannot hold on this machine (warnings: the task
    may run elsewhere)."""
    import os

    cpus = os.cpu_count() or 1
    try:
        memory_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
    except (ValueError, OSError, AttributeError):
        memory_mb = 0
    out: list[str] = []
    for field_name, value in (("agent.timeout_sec", task.agent_timeout_s),
                              ("verifier.timeout_sec", task.verifier_timeout_s),
                              ("environment.build_timeout_sec", task.build_timeout_s)):
        if value > MAX_TIMEOUT_S:
            out.append(f"{field_name} = {value:g}: over {MAX_TIMEOUT_S // 3600} hours")
    if task.cpus is not None and task.cpus > cpus:
        out.append(f"environment.cpus = {task.cpus:g}: this machine has {cpus}")
    if task.memory_mb is not None and memory_mb and task.memory_mb > memory_mb:
        out.append(f"environment.memory_mb = {task.memory_mb}: this machine has {memory_mb}")
    if out:
        check.add(Problem(TASK_TOML_LIMITS, WARNING, "task.toml asks for more than a run can "
                          "have here", "lower the value, or run the task where it fits",
                          tuple(out)))


def task_skill_names(folder: Path, skills_root: Path) -> dict[str, set[str]]:
    """Family → the names it goes by (its folder and its SKILL.md's ``name``), for the
    families under ``environment/skills/`` and the one ``[metadata] skill`` names."""
    out: dict[str, set[str]] = {}
    skills = folder / ENVIRONMENT / SKILLS_DIR
    dirs = [p for p in sorted(skills.iterdir()) if p.is_dir()] if skills.is_dir() else []
    named = re.search(r'^\s*skill\s*=\s*"([^"]+)"', _text(folder / TASK_TOML), re.MULTILINE)
    if named:
        dirs.append(skills_root / named.group(1).strip("/ ").split("/", 1)[0])
    for d in dirs:
        names = {d.name}
        front = re.match(r"---\s*\n(.*?)\n---", _text(d / "SKILL.md"), re.DOTALL)
        if front:
            m = re.search(r"^name:\s*['\"]?([^'\"\n]+?)['\"]?\s*$", front.group(1),
                          re.MULTILINE)
            if m:
                names.add(m.group(1).strip())
        out[d.name] = {n for n in names if n}
    return out


def names_skill(instruction: str, name: str) -> list[str]:
    """The lines of ``instruction`` that name the skill ``name`` (word-bounded, case-blind;
    a hyphenated name also as words). An occurrence that is a file's format — after a dot
    (``report.xlsx``, ``.pdf``) or before "file"/"format"… (``an xlsx file``) — is the
    deliverable's format, not the skill, and is not counted."""
    variants = {name.lower(), name.lower().replace("-", " "), name.lower().replace("_", " ")}
    patterns = [re.compile(r"(?<![\w.-])" + re.escape(v) + r"(?![\w-])") for v in variants]
    hits: list[str] = []
    for line in instruction.splitlines():
        low = line.lower()
        if any(_names_here(pattern, low) for pattern in patterns):
            hits.append(line.strip())
    return hits


def _names_here(pattern: re.Pattern[str], low: str) -> bool:
    for m in pattern.finditer(low):
        if re.match(r"\.\w", low[m.end():]):  # a file name: xlsx.py, pdf.md
            continue
        after = low[m.end():].lstrip().split(" ", 1)[0].strip(".,;:)")
        if after in _FORMAT_WORDS:  # "an xlsx file": the deliverable's format
            continue
        return True
    return False


def _lint_names(check: TaskCheck, instruction: str, families: dict[str, set[str]]) -> None:
    for family, names in sorted(families.items()):
        for name in sorted(names, key=len, reverse=True):
            lines = names_skill(instruction, name)
            if lines:
                check.add(Problem(
                    NAMES_SKILL, BROKEN,
                    f"instruction.md names the task's skill {name!r} (family {family}): it "
                    "leaks the answer, and the no-skill arm is told of a skill it does not have",
                    "describe the work, not the skill (SkillsBench's rule); naming the "
                    "deliverable's file format is fine", tuple(lines[:MAX_NAMED])))
                break
    check.ran.setdefault(NAMES_SKILL, PASSED)


def _lint_reachable(check: TaskCheck, folder: Path) -> None:
    """``tests/`` or ``solution/`` reachable from the agent's image."""
    env = folder / ENVIRONMENT
    evidence: list[str] = []
    for no, line in enumerate(_text(env / DOCKERFILE).splitlines(), 1):
        m = _COPY.match(line)
        if not m:
            continue
        words = [w for w in m.group(1).split() if not w.startswith("--")]
        for src in words[:-1]:
            first = src.strip("\"'[],").removeprefix("./").split("/", 1)[0]
            if first in (TESTS, SOLUTION_DIR, "..") or src.strip("\"'[],").startswith("../"):
                evidence.append(f"Dockerfile:{no}: {line.strip()}")
                break
    for compose in sorted(env.glob("docker-compose*.y*ml")):
        for no, line in enumerate(_text(compose).splitlines(), 1):
            if re.search(r"(?:^|[\s\"'-])(?:\.\./|\./)?(?:\.\./)*(tests|solution)(?:/|\b)[^:\n]*:",
                         line) and ("- " in line or "source" in line):
                evidence.append(f"{compose.name}:{no}: {line.strip()}")
    secret = _hashes(folder / TESTS) | _hashes(folder / SOLUTION_DIR)
    # Only a build-context file of a verifier file's size is read (a task's data can be large).
    sizes = {size for _, size in secret.values()}
    if secret and env.is_dir():
        for path in sorted(env.rglob("*")):
            if not path.is_file() or path.is_symlink() or path.stat().st_size not in sizes:
                continue
            found = secret.get(_digest(path))
            if found is not None:
                evidence.append(f"environment/{path.relative_to(env).as_posix()}: the bytes of "
                                f"{found[0]}")
    if evidence:
        check.add(Problem(
            TESTS_REACHABLE, BROKEN,
            "tests/ or solution/ is reachable from the agent's image: the agent can read the "
            "verifier or the answer", "keep tests/ and solution/ out of environment/ and out of "
            "COPY/ADD and binds (the verifier's files are copied in only after the agent)",
            tuple(evidence[:MAX_NAMED])))
    else:
        check.ran[TESTS_REACHABLE] = PASSED


def _lint_fetches(check: TaskCheck, test_sh: Path) -> None:
    lines = [f"test.sh:{no}: {line.strip()}" for no, line in
             enumerate(_text(test_sh).splitlines(), 1)
             if not line.lstrip().startswith("#") and _FETCH.search(line)]
    if lines:
        check.add(Problem(
            VERIFY_FETCH, WARNING,
            "the verifier fetches at verify time: it fails offline and what it fetches may change",
            "install the verifier's tools in the image (environment/Dockerfile)",
            tuple(lines[:MAX_NAMED])))
    else:
        check.ran[VERIFY_FETCH] = PASSED


def _lint_security(check: TaskCheck, skills: Path) -> None:
    from pytest_skilllift.skill.security.scanner import scan_family

    if not skills.is_dir():
        check.ran[SECURITY] = "skipped: no environment/skills"
        return
    critical: list[str] = []
    other = 0
    for family in sorted(p for p in skills.iterdir() if p.is_dir()):
        result = scan_family(family, display_root=skills)
        for finding in result.findings:
            if finding.severity == "critical":
                critical.append(finding.text())
            else:
                other += 1
    if critical:
        check.add(Problem(
            SECURITY, BROKEN, f"{len(critical)} critical security finding(s) in "
            "environment/skills (the rules of skilllift scan): such a skill is refused",
            "fix them (skilllift scan environment/skills names each rule's fix)",
            tuple(critical[:MAX_NAMED])))
    else:
        check.ran[SECURITY] = PASSED
    if other:
        check.add(Problem(SECURITY, NOTE, f"{other} non-critical security finding(s) in "
                          "environment/skills", "see skilllift scan environment/skills"))


# -- the probes' verdicts --------------------------------------------------------------------


def judge_oracle(check: TaskCheck, result: VerifierResult, output: str, error: str = "") -> None:
    """The oracle probe (``solution/solve.sh`` then the verifier): reward 1, else broken with
    the verifier's failing tests."""
    check.rewards[ORACLE] = result.reward
    if error:
        check.add(Problem(ORACLE, BROKEN, f"the oracle run failed: {error}",
                          "fix the task's image or solution/solve.sh", _tail(output)))
    elif result.reward is None:
        check.add(Problem(ORACLE, BROKEN, f"after the reference solution the verifier gave no "
                          f"reward: {result.error}", "make tests/test.sh always write "
                          "/logs/verifier/reward.txt", _tail(output)))
    elif result.reward < FULL_REWARD:
        failing = [f"{name}: {status}" for name, status in sorted(result.tests.items())
                   if status != PASSED]
        check.add(Problem(ORACLE, BROKEN, f"the reference solution scores {result.reward:g}, not "
                          f"{FULL_REWARD:g}: the verifier fails a correct answer, or "
                          "solution/solve.sh no longer solves the task",
                          "fix the verifier's test or the solution",
                          tuple(failing[:MAX_NAMED]) or _tail(output)))
    else:
        check.ran[ORACLE] = PASSED


def judge_noop(check: TaskCheck, result: VerifierResult, output: str, error: str = "") -> None:
    """The no-op probe (nothing in place of the agent): a reward must be written, below 1."""
    check.rewards[NOOP] = result.reward
    if error:
        check.add(Problem(NOOP, BROKEN, f"the no-op run failed: {error}",
                          "fix the task's image", _tail(output)))
    elif result.reward is None:
        check.add(Problem(NOOP, BROKEN, "on an untouched workspace the verifier writes no "
                          f"reward ({result.error}): every failed run would be a "
                          "verifier_error, never a 0", "write the reward whatever the tests "
                          "say (no `set -e` before it; `|| true` on the test command)",
                          _tail(output)))
    elif result.reward >= FULL_REWARD:
        check.add(Problem(NOOP, BROKEN, f"an untouched workspace scores {result.reward:g}: the "
                          "verifier passes without any work and measures nothing",
                          "make the tests check what the instruction asks for",
                          _tail(output)))
    else:
        check.ran[NOOP] = PASSED


def probe_task(check: TaskCheck, prober: Prober, skills_root: Path, work_dir: Path) -> None:
    """Run the oracle (when the task has ``solution/solve.sh``) and the no-op probes of a task
    whose static checks let it be read, and judge them into ``check``."""
    from pytest_skilllift.run.tasks.results import read_result

    try:
        spec = load_task(check.path, skills_root)
    except TaskError:
        for mode in (ORACLE, NOOP):
            check.ran.setdefault(mode, "skipped: the task does not read")
        return
    assert spec.task is not None
    modes = [NOOP] if check.ran.get(ORACLE, "").startswith("skipped") else [ORACLE, NOOP]
    for mode in modes:
        run_dir = work_dir / check.name / mode
        outcome = prober.probe(spec, mode, run_dir)
        seconds = getattr(outcome, "seconds", None)
        if isinstance(seconds, float):
            check.seconds[mode] = seconds
        output = _text(run_dir / VERIFIER_DIR / VERIFIER_OUTPUT)
        if mode == ORACLE:
            output = _text(run_dir / "solve.txt") + "\n" + output
        judge = judge_oracle if mode == ORACLE else judge_noop
        judge(check, read_result(run_dir, spec.task), output, outcome.error)


class Prober(Protocol):
    """What runs a probe (``runners/task_check.TaskProbe``)."""

    def probe(self, spec: PromptSpec, mode: str, run_dir: Path) -> ProbeOutcome:
        """Run probe ``mode`` of task ``spec`` into ``run_dir``; ``.error`` on failure."""


# -- the report ------------------------------------------------------------------------------


def render_text(checks: list[TaskCheck], *, static_only: bool) -> str:
    """The report ``skilllift tasks check`` prints (plain text; task content is escaped by
    the caller's terminal writer)."""
    lines: list[str] = []
    for check in checks:
        state = "BROKEN" if check.broken else "ok"
        rewards = ", ".join(f"{k} reward {'none' if v is None else f'{v:g}'}" + (
            f" in {check.seconds[k]:.1f} s" if k in check.seconds else "")
            for k, v in sorted(check.rewards.items()))
        lines.append(f"{state:<7} {check.name}" + (f"  ({rewards})" if rewards else ""))
        for p in check.problems:
            lines.append(f"  {p.severity.upper():<8} {p.check}: {p.message}")
            lines += [f"      {d}" for d in p.detail]
            if p.fix:
                lines.append(f"      fix: {p.fix}")
    broken = sum(c.broken for c in checks)
    warnings = sum(1 for c in checks for p in c.problems if p.severity == WARNING)
    lines.append(f"{len(checks)} task(s): {broken} broken, {warnings} warning(s)" + (
        "; static checks only (the oracle and no-op runs: skilllift tasks check without "
        "--static)" if static_only else ""))
    return "\n".join(lines)


def session_line(tasks_dir: Path, skills_root: Path) -> str | None:
    """The line ``pytest --skill-lift`` prints after collection when the project has tasks:
    the static lint's counts, and where the oracle and no-op checks are."""
    from pytest_skilllift.run.tasks.reader import task_dirs

    try:
        folders = task_dirs(tasks_dir)
        if not folders:
            return None
        checks = [lint_task(f, skills_root) for f in folders]
    except OSError as exc:
        return f"skill-lift tasks check: not run ({exc})"
    broken = [c.name for c in checks if c.broken]
    warnings = sum(1 for c in checks for p in c.problems if p.severity == WARNING)
    named = f" ({', '.join(broken[:5])}{', …' if len(broken) > 5 else ''})" if broken else ""
    return (f"skill-lift tasks check (static): {len(checks)} task(s), {len(broken)} broken"
            f"{named}, {warnings} warning(s); the oracle and no-op runs in docker: skilllift "
            "tasks check")


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _hashes(folder: Path) -> dict[str, tuple[str, int]]:
    """Content hash → (``<folder>/<file>``, size) of the non-trivial files under ``folder``."""
    out: dict[str, tuple[str, int]] = {}
    if not folder.is_dir():
        return out
    for path in sorted(folder.rglob("*")):
        size = path.stat().st_size if path.is_file() and not path.is_symlink() else 0
        if 64 <= size <= 1 << 22:
            out.setdefault(_digest(path), (
                f"{folder.name}/{path.relative_to(folder).as_posix()}", size))
    return out


def _tail(output: str) -> tuple[str, ...]:
    lines = [ln for ln in output.splitlines() if ln.strip()]
    return tuple(lines[-MAX_TAIL_LINES:])
