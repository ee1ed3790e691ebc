"""Plain data types that flow between the parts (no behaviour, no pytest).

The flow: ``PromptSpec`` → ``RunSpec`` (one per prompt × model × condition × rep) →
a runner produces a ``RunOutcome`` and the transcript file → ``Signals`` are parsed from it →
the judge returns one ``ItemVerdict`` per rubric item.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

#: The arms: the lift's two conditions and the opt-in ones. A condition's code in the week's
#: tables is its arm's index in :data:`ARMS` (``week/tables.py``), so the order is fixed.
CONDITIONS: tuple[str, str] = ("no-skill", "with-skill")
NO_SKILL, WITH_SKILL = CONDITIONS
#: Arms beyond the lift's two: ``with-all`` installs every family of the skills root (a skill's
#: lift among its siblings), ``no-skill-b`` is a second no-skill arm (an A/A week measures the
#: false-lift rate).  Opt-in (``--skill-lift-conditions``, ``--skill-lift-aa``).
WITH_ALL, NO_SKILL_B = "with-all", "no-skill-b"
#: ``with-skill@REF``: the prompt's family as it was at revision REF of the skills repository
#: (a git rev: ``HEAD~1``, a tag, a sha; or a directory), installed like with-skill — did an
#: edit of the skill help (docs/versions.md). A week holds at most one REF; the arm's name in
#: ids, the manifest and scores.csv is the REF as written (``with-skill@HEAD~1``), its code in
#: the tables this placeholder's index (:func:`arm_of`).
WITH_REF_PREFIX = "with-skill@"
WITH_REF = "with-skill@REF"
#: Every condition a week may hold; a condition's code in the tables is its index here, so
#: the lift's two arms keep codes 0 and 1 (any ``with-skill@…`` has ``WITH_REF``'s).
ARMS: tuple[str, ...] = (*CONDITIONS, WITH_ALL, NO_SKILL_B, WITH_REF)
#: Arms whose runs install skills (the availability check and the audit apply to them).
SKILL_ARMS: frozenset[str] = frozenset({WITH_SKILL, WITH_ALL, WITH_REF})


def arm_ref(condition: str) -> str | None:
    """``"with-skill@HEAD~1"`` → ``"HEAD~1"``; None for every other condition."""
    if condition.startswith(WITH_REF_PREFIX) and condition != WITH_REF:
        ref = condition[len(WITH_REF_PREFIX):]
        return ref or None
    return None


def arm_of(condition: str) -> str:
    """The arm a condition belongs to: itself, or ``WITH_REF`` for any ``with-skill@REF``."""
    return WITH_REF if arm_ref(condition) is not None else condition


def arm_code(condition: str) -> int:
    """A condition's code in the tables (its arm's index in :data:`ARMS`); -1 if unknown."""
    arm = arm_of(condition)
    return ARMS.index(arm) if arm in ARMS else -1


@dataclass(frozen=True)
class RubricItem:
    """One rubric line. ``index`` is 1-based within its type (``must-1``, ``bonus-2``…)."""

    type: str
    text: str
    index: int

    @property
    def key(self) -> str:
        """The item's id within a run, as used in test ids: ``must-1``."""
        return f"{self.type}-{self.index}"


@dataclass(frozen=True)
class TaskSpec:
    """A validated Harbor task directory (``run/tasks/reader.py`` reads and checks it).

    The instruction is the prompt of both arms; the run is a container built from
    ``environment/`` (its skills emptied for the arms that install none), and after the agent
    the ``tests/`` directory's ``test.sh`` writes the reward (docs/tasks.md).
    """

    #: The task directory (holds ``task.toml``).
    root: Path
    #: ``[agent] timeout_sec``: the agent's time in the container.
    agent_timeout_s: float
    #: ``[verifier] timeout_sec``: ``bash /tests/test.sh``'s time.
    verifier_timeout_s: float
    #: ``[verifier] env``: the verifier's environment (never the agent's).
    verifier_env: tuple[tuple[str, str], ...] = ()
    #: ``[environment] cpus`` and ``memory_mb`` (None: the runner's defaults).
    cpus: float | None = None
    memory_mb: int | None = None
    #: ``[environment] build_timeout_sec``.
    build_timeout_s: float = 600.0
    #: The families the with-skill image holds (``environment/skills/<family>/``), sorted.
    bundled_families: tuple[str, ...] = ()
    #: ``[verifier] reward_key``: the primary reward of a ``reward.json`` ("": the first).
    reward_key: str = ""
    #: The verifier's tests as collected from ``tests/`` (``test_outputs.py::test_x``), in
    #: file order; each is one item of every run.
    verifier_tests: tuple[str, ...] = ()
    #: Families of the project's skills root the arm installs into the agent's skill path
    #: (``~/.claude/skills``) beside the image's own: the one ``[metadata] skill`` names
    #: (with-skill, with-skill@REF), every family of the root (with-all). Installed only by
    #: the arms that install skills (``RunSpec.with_skill``).
    installs: tuple[str, ...] = ()
    #: Where :attr:`installs` come from (None: the session's skills root; the with-skill@REF
    #: arm's materialised revision).
    installs_root: Path | None = None
    #: The ``skills/`` the skill arms' image is built with (None: ``environment/skills`` as
    #: shipped; the with-skill@REF arm: that directory as it was at REF).
    skills_dir: Path | None = None

    @property
    def environment(self) -> Path:
        """The build context (holds the ``Dockerfile``)."""
        return self.root / "environment"

    @property
    def tests_dir(self) -> Path:
        """What is copied to ``/tests`` after the agent exits."""
        return self.root / "tests"


@dataclass(frozen=True)
class PromptSpec:
    """A validated prompt file."""

    path: Path
    name: str
    product_area: str
    prompt: str
    rubric: tuple[RubricItem, ...]
    #: Path of the target SKILL.md relative to the skills root, e.g. ``qdrant-edge/SKILL.md``.
    skill_path: str
    #: The original ``skill_url`` (empty when the file gave ``skill``); its host is the
    #: published site whose fetches count as ``web_fetch`` activation.
    skill_url: str = ""
    #: Input files placed in the run's working directory: ``(relative destination,
    #: absolute source)`` pairs (skill-creator ``evals[].files``).
    files: tuple[tuple[str, str], ...] = ()
    #: Shown to the judge beside the prompt, never an item (skill-creator ``expected_output``).
    judge_context: str = ""
    #: Families the with-skill arm installs beside ``family`` (the with-all arm, and trigger
    #: tests run with ``--skill-lift-triggers-all``: every family installed at once).
    sibling_families: tuple[str, ...] = ()
    #: Warnings about the file that do not stop it (unknown keys), shown at collection.
    warnings: tuple[str, ...] = field(default=(), compare=False, repr=False)
    #: Where the skill-installing arms take the families from when not the session's skills
    #: root: the with-skill@REF arm's materialised revision (``run.revisions``).
    skills_root: Path | None = None
    #: A Harbor task (``run/tasks``): the run is its container, scored by its verifier.
    task: TaskSpec | None = field(default=None, compare=False, repr=False)

    @property
    def family(self) -> str:
        """The installed unit: the first segment of ``skill_path``."""
        return self.skill_path.split("/", 1)[0]

    @property
    def leaf(self) -> str:
        """The prompt's target SKILL.md (qdrant's ``skill_leaf``)."""
        return self.skill_path

    @property
    def installed_families(self) -> tuple[str, ...]:
        """What the with-skill arm installs: the prompt's family, then any siblings."""
        return (self.family, *(f for f in self.sibling_families if f != self.family))


#: The agent CLIs a model label may name (``AGENT:MODEL`` in ``--skill-lift-models``), each
#: reading Agent Skills (SKILL.md) its own way: docs/agents.md. The names only (what
#: :func:`split_agent` recognises); each agent's definition is its module in ``agents/``.
CLAUDE_CODE = "claude-code"
AGENTS: tuple[str, ...] = (CLAUDE_CODE, "codex", "gemini-cli", "opencode")
_AGENT_PREFIX = re.compile(r"^([a-z][a-z0-9-]*):(.*)$", re.S)


def split_agent(model_id: str) -> tuple[str, str]:
    """``"codex:gpt-5.5"`` → ``("codex", "gpt-5.5")``; no known agent prefix → Claude Code.

    Only a known agent name counts as a prefix, so a Claude model id that contains ``:``
    (Bedrock's ``…-v2:0``) stays whole.
    """
    m = _AGENT_PREFIX.match(model_id)
    if m and m.group(1) in AGENTS:
        return m.group(1), m.group(2)
    return CLAUDE_CODE, model_id


# ---------------------------------------------------------------------------------------------
# Model families (who is whose relative: the judge's family warning, self-preference)

ANTHROPIC, OPENAI, GOOGLE = "anthropic", "openai", "google"
#: The providers a judge may come from (``--skill-lift-judge-model PROVIDER:MODEL``).
PROVIDERS: tuple[str, ...] = (ANTHROPIC, OPENAI, GOOGLE)

_FAMILY_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (ANTHROPIC, re.compile(r"claude|opus|sonnet|haiku|anthropic")),
    (OPENAI, re.compile(r"(^|[^a-z])(gpt|o[1-9]|codex|chatgpt|openai)")),
    (GOOGLE, re.compile(r"gemini|gemma|google")),
)
#: The family an agent CLI's models belong to when the model id names none.
_AGENT_FAMILY: dict[str, str] = {"claude-code": ANTHROPIC, "codex": OPENAI,
                                 "gemini-cli": GOOGLE}


def family_of(model_id: str) -> str:
    """The family (provider) a model id belongs to, or "" when the id names none."""
    name = model_id.lower()
    head, sep, _rest = name.partition(":")
    if sep and head in PROVIDERS:
        return head
    for family, pattern in _FAMILY_PATTERNS:
        if pattern.search(name):
            return family
    return ""


#: What Google's APIs answer a key they refuse with: HTTP 400 (``INVALID_ARGUMENT``), the
#: reason ``API_KEY_INVALID`` in the error's details, the message "API key not valid" — not 401.
GOOGLE_KEY_INVALID = "API_KEY_INVALID"


def key_refused(status: int, body: str) -> bool:
    """Whether an API's error answer refuses the key: 401 / 403 for every provider, and
    Google's 400 ``API_KEY_INVALID`` (``body``: the error body as text). The one rule for the
    agents' preflight and the judges' (direct and batch) outage causes."""
    return status in (401, 403) or (status == 400 and (
        GOOGLE_KEY_INVALID in body or "API key not valid" in body))


def split_judge(text: str) -> tuple[str, str]:
    """``"openai:gpt-5"`` → ``("openai", "gpt-5")``; a bare id (or a Claude id with a colon,
    Bedrock's ``…-v2:0``) → ``("anthropic", id)``. Raises ``ValueError`` naming the fix for
    an unknown provider or a provider with no model."""
    raw = text.strip()
    provider, sep, model = raw.partition(":")
    if not sep:
        return ANTHROPIC, raw
    if provider not in PROVIDERS:
        if re.fullmatch(r"[a-z][a-z0-9-]*", provider) and family_of(provider) != ANTHROPIC:
            raise ValueError(f"judge {raw!r}: unknown provider {provider!r}; use one of "
                             f"{', '.join(p + ':MODEL' for p in PROVIDERS)}")
        return ANTHROPIC, raw
    if not model.strip():
        raise ValueError(f"judge {raw!r}: no model after {provider}: (e.g. openai:gpt-5)")
    return provider, model.strip()


def label_family(agent: str, agent_model: str) -> str:
    """The family of a label's agent model: by the model id, else by its agent CLI."""
    return family_of(agent_model) or _AGENT_FAMILY.get(agent, "")


def same_family_labels(judge_names: Iterable[str],
                       labels: Mapping[str, str]) -> dict[str, list[str]]:
    """``{label: [judges of its family]}`` for every label (``label → family``) graded by a
    relative; labels with no relative among the judges are left out."""
    judges = [(name, family_of(name) or ANTHROPIC) for name in judge_names]
    out: dict[str, list[str]] = {}
    for label, family in labels.items():
        kin = [name for name, fam in judges if family and fam == family]
        if kin:
            out[label] = kin
    return out


@dataclass(frozen=True)
class RunSpec:
    """One generation: a prompt under one model, one condition, one repetition."""

    prompt: PromptSpec
    model_label: str
    model_id: str
    condition: str  # one of ARMS
    rep: int
    run_id: str

    @property
    def agent(self) -> str:
        """The agent CLI that makes this run (``claude-code`` unless the label names one)."""
        return split_agent(self.model_id)[0]

    @property
    def agent_model(self) -> str:
        """The model id handed to the agent's CLI (the label's model without its agent)."""
        return split_agent(self.model_id)[1]

    @property
    def with_skill(self) -> bool:
        """Whether this run installs skills: the with-skill arm, and the with-all arm (its
        prompt lists every other family as ``sibling_families``). The availability check
        and the invocation audit apply to both."""
        return arm_of(self.condition) in SKILL_ARMS


#: How a run is made unless told otherwise (qdrant/skills SCORING.md, "Weekly Run": the same
#: tool allow-list in both arms, a $2 per-run spend cap as a runaway backstop).  Stated once:
#: ``config.OPTIONS`` offers these as the option defaults, ``AgentConfig`` uses them when it is
#: built directly.
DEFAULT_ALLOWED_TOOLS: tuple[str, ...] = (
    "Skill", "WebSearch", "WebFetch", "Read", "Grep", "Glob", "Bash",
)
#: The tools a Harbor task run allows beyond the session's allow-list, in both arms alike: a
#: task's work is in the files (SkillsBench scores what the agent wrote). A measurement
#: parameter like the allow-list: week.json records the task allow-list (docs/tasks.md).
TASK_WRITE_TOOLS: tuple[str, ...] = ("Write", "Edit", "MultiEdit", "NotebookEdit")
DEFAULT_PERMISSION_MODE = "dontAsk"
DEFAULT_MAX_BUDGET_USD = 2.0
DEFAULT_TIMEOUT_S = 600.0
#: The judge model, pinned: a measurement must not change its judge because a dependency was
#: upgraded, so changing this id is a release note (``config.OPTIONS`` states it as the
#: ``--skill-lift-judge-model`` default; ``skilllift judge`` and the depth layers use it too).
DEFAULT_JUDGE_MODEL = "claude-opus-5-5"


def task_tools(allowed: tuple[str, ...]) -> tuple[str, ...]:
    """The allow-list of a task run: the session's, then the write tools it lacks."""
    return (*allowed, *(t for t in TASK_WRITE_TOOLS if t not in allowed))


#: A skill family larger than this (all its files, MiB) is an invalid install: installing it
#: copies it into every with-skill run's HOME or container (``--skill-lift-max-family-mb``).
DEFAULT_MAX_FAMILY_MB = 100.0
#: Verdict settings (the Drupal ai_eval scoring document: a question passes at 3.5 of 5, our
#: composite's 0.7; the coverage guard).  ``config.OPTIONS`` offers them as option defaults;
#: a week without week.json (the qdrant pipeline's) is read with them.
DEFAULT_PASS_THRESHOLD = 0.7
DEFAULT_MIN_COVERAGE = 0.5


@dataclass(frozen=True)
class AgentConfig:
    """How the Claude Code CLI is invoked; identical for both arms (tool parity)."""

    claude_path: str
    skills_root: Path
    allowed_tools: tuple[str, ...] = DEFAULT_ALLOWED_TOOLS
    permission_mode: str = DEFAULT_PERMISSION_MODE
    max_turns: int | None = None
    max_budget_usd: float | None = DEFAULT_MAX_BUDGET_USD
    timeout_s: float = DEFAULT_TIMEOUT_S
    #: The size limit of an installed skill family, in bytes (None: no limit).
    max_family_bytes: int | None = int(DEFAULT_MAX_FAMILY_MB * 2**20)
    #: Extra environment variables passed to the CLI (e.g. ANTHROPIC_BASE_URL). Never written.
    #: Each agent gets only its own key and base-URL variables from it (``agents/<name>.py``).
    env: dict[str, str] = field(default_factory=dict)
    #: Install a family even when the security scan has a critical finding in it
    #: (``--skill-lift-allow-unsafe``); by default such a with-skill run is an invalid install.
    allow_unsafe: bool = False
    #: The CLI of every other agent the week's labels name (``codex`` → its path).
    agent_paths: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RunOutcome:
    """What a runner reports about one CLI invocation.

    The runner has written ``stdout.txt`` (the stream-json transcript) and ``stderr.txt``
    into the run directory before returning.
    """

    exit_code: int | None
    started_utc: str  # yyyymmddTHHMMSSZ
    ended_utc: str
    wall_ms: int
    timed_out: bool = False
    #: Harness-side failure (spawn error, timeout, container error); None when the CLI ran.
    error: str | None = None
    runner: str = "local"
    cli_version: str = ""
    #: The skill could not be installed as given (e.g. a symlink leaving the family): the
    #: run is invalid, not errored — rerunning cannot change it. ``error`` says why.
    invalid_install: bool = False
    #: The API could not be used at all (unreachable, key refused, model not found), in
    #: words (``runners.outage``): an infrastructure failure, not the skill's; ``error``
    #: says the same. Empty otherwise.
    outage: str = ""


@dataclass(frozen=True)
class Signals:
    """Per-run facts derived from the transcript (the manifest's derived columns)."""

    skill_available: bool
    skill_activation: str  # one of columns.ACTIVATIONS
    reached_leaf: bool
    fetched_site: bool
    fetched_count: int
    model_snapshot: str
    cli_version: str
    total_cost_usd: float | None
    num_turns: int | None
    result_subtype: str
    budget_hit: bool
    signals_ok: bool
    duration_ms: int | None
    # Left out of the repr (a failing check's assertion shows it): long, and read directly.
    final_answer: str = field(repr=False)
    permission_denials: int = 0
    skills_listed: tuple[str, ...] = field(default=(), repr=False)
    fetched_urls: tuple[str, ...] = field(default=(), repr=False)
    is_error: bool = False


@dataclass(frozen=True)
class SampleVote:
    """One judge sample's verdict on one item (kept when a run is graded by several samples).

    ``verdict`` is the verdict that counted (after the evidence check); ``claimed_verdict`` is
    what the judge said when the evidence check overrode it (empty otherwise).
    """

    sample: int
    verdict: str
    evidence: str
    evidence_ok: bool
    claimed_verdict: str = ""
    claimed_evidence: str = ""
    #: True for the extra sample drawn only to break a tie between the others.
    tie_break: bool = False
    #: The panel judge whose verdict this is (``--skill-lift-judges``; "" for a sample).
    judge: str = ""
    #: This judge's short reason for a missing/absent/violated verdict ("" when none given).
    reason: str = ""


@dataclass(frozen=True)
class ItemVerdict:
    """The judge's grade for one rubric item."""

    item: RubricItem
    verdict: str
    evidence: str
    credit: float
    contribution: float
    #: Whether the evidence quote was found verbatim (whitespace-normalised) in the answer.
    evidence_ok: bool
    contested: bool = False
    #: The judge's own verdict and quote when the evidence check rejected them (a met/violated
    #: whose quote is not in the answer is recorded as missing/absent/clean); empty otherwise.
    claimed_verdict: str = ""
    claimed_evidence: str = ""
    #: Every sample's vote when the run was graded by more than one sample (in sample order).
    samples: tuple[SampleVote, ...] = ()
    #: The judge's short reason for a missing/absent/violated verdict, as data (whitespace
    #: collapsed, at most ``judge.protocol.REASON_MAX_CHARS``); "" when none was given — a week
    #: graded before the judge gave reasons has none.
    reason: str = ""
    #: Characters of the reason cut past the cap (0 when nothing was cut).
    reason_cut: int = 0


@dataclass(frozen=True)
class JudgeResult:
    """One judge call's outcome for a run. ``verdicts`` is empty when ``error`` is set."""

    verdicts: tuple[ItemVerdict, ...]
    cost_usd: float
    model: str
    error: str | None = None
    #: Items the judge did not return a usable verdict for (counted, never scored as zero).
    ungraded: tuple[RubricItem, ...] = ()
    #: Why items are ungraded or flagged, retries taken, pricing caveats (human-readable).
    notes: tuple[str, ...] = ()
    #: Judge API calls this result took (samples plus tie-breaks; 0 when nothing was sent).
    calls: int = 0
    #: Independent samples requested per run, and tie-break calls made on top of them.
    samples: int = 1
    tie_breaks: int = 0
    #: What happened to a met/violated whose quote is not in the answer: "reject" (recorded as
    #: the negative verdict, no credit) or "flag" (verdict kept, ``evidence_ok`` = 0).
    evidence_policy: str = "reject"
    #: Spans of the answer that say which arm it came from (a family name, "the installed
    #: skill", SKILL.md), and whether they were masked before the judge saw the answer.
    arm_leaks: int = 0
    masked: bool = False


#: The Claude Code CLI version scored runs are pinned to (qdrant/skills SCORING.md, "Weekly
#: Run": the CLI is pinned with the tool allow-list and the model snapshots). The docker image
#: installs it; provenance flags any other version.
PINNED_CLI_VERSION = "2.1.332"


def cli_version_mismatch(version: str, pinned: str = PINNED_CLI_VERSION) -> bool:
    """True when ``version`` is not the pinned CLI version (unknown counts as a mismatch).

    The provenance section shows this flag: a scored run on a different CLI build is a
    different measurement.
    """
    return version.strip() != pinned
