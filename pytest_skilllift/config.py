"""One frozen ``Settings`` object built from command-line options and ini values.

Every option is declared once in ``OPTIONS`` (command-line flag, ini name, type, default, help);
``plugin/options.py`` registers them with pytest and reads them into ``Settings.from_values``
(this module never imports pytest: the core builds Settings from plain values). Nothing else
in the package reads raw options. Settings travel to xdist workers as a plain dict
(``to_wire``/``from_wire``) so every process sees the same week directory and endpoint.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_skilllift.agents.registry import other_names
from pytest_skilllift.model import (
    AGENTS,
    ARMS,
    CLAUDE_CODE,
    CONDITIONS,
    DEFAULT_ALLOWED_TOOLS,
    DEFAULT_JUDGE_MODEL,
    DEFAULT_MAX_BUDGET_USD,
    DEFAULT_MAX_FAMILY_MB,
    DEFAULT_MIN_COVERAGE,
    DEFAULT_PASS_THRESHOLD,
    DEFAULT_PERMISSION_MODE,
    DEFAULT_TIMEOUT_S,
    NO_SKILL,
    NO_SKILL_B,
    WITH_REF_PREFIX,
    WITH_SKILL,
    arm_ref,
    split_agent,
    split_judge,
)

DEFAULT_TOOLS = ",".join(DEFAULT_ALLOWED_TOOLS)
DEFAULT_MODELS = "sonnet,haiku"
#: The demo's labels: two Claude Code stand-ins, and one label each for Codex CLI and Gemini
#: CLI (real model slugs: Codex drops its skills section for a slug it does not know). A
#: demo label whose CLI is not installed is left out, named (``Settings.without_labels``).
DEMO_MODELS = ("sonnet=demo-sonnet,haiku=demo-haiku,gpt=codex:gpt-5.5,"
               "flash=gemini-cli:gemini-2.5-flash")


class SettingsError(ValueError):
    """A bad option value or combination; the plugin turns it into ``pytest.UsageError``."""


@dataclass(frozen=True)
class Option:
    """One setting: ``--skill-lift-<name>`` on the command line, ``skill_lift_<name>`` in ini
    (``--skill-lint-<name>`` / ``skill_lint_<name>`` for ``pytest --skill-lint``'s, whose
    ``prefix`` is :data:`LINT`).

    ``default`` is the one place the default value is stated; ``--help`` shows it (or
    ``default_text`` when the default is a rule rather than a value).
    """

    name: str
    help: str
    kind: str = "string"  # string | bool | int | float | lines (repeatable flag, ini linelist)
    default: Any = None
    cli: bool = True  # some settings are ini-only (paths of the project layout)
    choices: tuple[str, ...] | None = None
    default_text: str = ""
    ini: str = ""  # the ini name when it is not the flag's (a repeatable flag's plural list)
    #: What ``--help`` shows after the flag (``--skill-lift-reps=N``); options with
    #: ``choices`` show those instead, bool flags take no value.
    metavar: str = ""
    #: Whose option: the weekly run's (``skill-lift``) or the static lint's (``skill-lint``).
    prefix: str = "skill-lift"
    #: Whether it has an ini key too (a path given per invocation has none).
    in_ini: bool = True

    @property
    def flag(self) -> str:
        """The command-line flag: ``--skill-lift-<name>``."""
        return f"--{self.prefix}-{self.name}"

    @property
    def dest(self) -> str:
        """The argparse destination (the flag's name with underscores)."""
        return (self.prefix + "-" + self.name).replace("-", "_")

    @property
    def ini_name(self) -> str:
        """The ini key (its own name when it has one, else :attr:`dest`)."""
        return self.ini or self.dest

    @property
    def help_text(self) -> str:
        """``help`` with the default said once, from ``default`` (bool flags have none)."""
        d = self.default
        shown = self.default_text or (
            "" if d is None or d == "" or d == () or isinstance(d, bool) else f"{d:g}"
            if isinstance(d, float) else str(d))
        return f"{self.help} (default: {shown})" if shown else self.help

    @property
    def shown_metavar(self) -> str | None:
        """The flag's metavar: ``None`` lets argparse list ``choices`` as ``{a,b}``."""
        if self.choices:
            return None
        return self.metavar or {"int": "N", "float": "NUMBER", "lines": "EXPR"}.get(
            self.kind, "TEXT")


OPTIONS: tuple[Option, ...] = (
    Option("prompts", "Directory of prompt JSON files (relative to rootdir).",
           default="evals/test-prompts", cli=False),
    Option("tasks", "Directory of Harbor task directories (each with task.toml, "
           "instruction.md, environment/, tests/; relative to rootdir). Tasks run in docker: "
           "docs/tasks.md.", default="evals/tasks", cli=False),
    Option("skills", "Skills root: skill_url minus the site prefix is a path under it.",
           default="skills", cli=False),
    Option("checks", "Your own checks (test files using skill_lift_run / skill_lift_week), "
           "collected with the prompts when no test path is given (relative to rootdir).",
           default="evals/checks", cli=False),
    Option("site", "URL prefix stripped from skill_url, e.g. https://skills.qdrant.tech/.",
           default="", cli=False, default_text="scheme and host of each skill_url"),
    Option("models", "Models as label=model_id[,label=model_id…]; a bare label is passed to "
           "the CLI as is. label=AGENT:MODEL runs another agent's CLI "
           f"({other_names()}; no prefix = claude-code), e.g. gpt=codex:gpt-5.5.",
           default=DEFAULT_MODELS, metavar="LABEL=MODEL[,…]"),
    Option("reps", "Repetitions per (prompt, model, condition).", "int", 2,
           metavar="N"),
    Option("out", "Week directory.", default="", default_text="evals/weekly/<UTC yyyymmdd>",
           metavar="WEEK_DIR"),
    Option("runner", "Where each run executes.", default="local", choices=("local", "docker")),
    Option("claude", "Claude Code CLI.", default="", metavar="PATH",
           default_text="claude on PATH, else the binary bundled in claude-agent-sdk"),
    Option("heldout", "Also collect the reserved discord-* prompts.", "bool", False),
    Option("fresh", "Regrade the selected runs (all, or those -k/-m select); the others keep "
           "their grades, and a run's grades are replaced only by a regrade that succeeded.",
           "bool", False),
    Option("demo", "Run the built-in demo against the package's scripted stand-in of the "
           "agents' APIs (no API key needed; its Codex / Gemini CLI labels run where those "
           "CLIs are installed).", "bool", False),
    Option("dry-run", "Run YOUR prompts (the configured prompts, skills, trigger files and "
           "checks) against the package's scripted stand-in of the agents' APIs and judge, "
           "with no API key and no cost, into its own week folder "
           "(evals/weekly-dry-run/<UTC date>); every answer, grade and dollar is simulated and "
           "labelled so. It checks your files and the pipeline, not your skill's value.",
           "bool", False),
    Option("allowed-tools", "Tool allow-list for both arms.", default=DEFAULT_TOOLS,
           metavar="TOOL[,…]"),
    Option("permission-mode", "CLI permission mode for both arms.",
           default=DEFAULT_PERMISSION_MODE, metavar="MODE"),
    Option("max-turns", "Per-run --max-turns.", "int", None, default_text="the CLI's own",
           metavar="N"),
    Option("max-budget-usd", "Per-run spend cap in USD; a capped run is excluded and "
           "reported.", "float", DEFAULT_MAX_BUDGET_USD, metavar="USD"),
    Option("timeout", "Per-run timeout in seconds.", "float", DEFAULT_TIMEOUT_S,
           metavar="SECONDS"),
    Option("max-family-mb", "Size limit of a skill family in MiB (all its files): a larger "
           "family is an invalid install, named, instead of being copied into every "
           "with-skill run; 0 for no limit.", "float", DEFAULT_MAX_FAMILY_MB, metavar="MIB"),
    Option("judge-model", "Judge model, pinned: it changes only with a release note, never "
           "because an SDK was upgraded. PROVIDER:MODEL picks a judge of another family: "
           "anthropic: (or a bare id), openai: (the Responses API, OPENAI_API_KEY, "
           "OPENAI_BASE_URL), google: (the Gemini API, GEMINI_API_KEY, "
           "GOOGLE_GEMINI_BASE_URL); pip install 'pytest-skilllift[judges]' "
           "(docs/judge.md).", default=DEFAULT_JUDGE_MODEL, metavar="[PROVIDER:]MODEL"),
    Option("judges", "A panel of judges, comma-separated PROVIDER:MODEL: every run graded by "
           "each, an item's verdict their majority (a tie: avoid violated, must missing, "
           "bonus absent), disagreements contested; the scorecard's Judge section reports "
           "their agreement (Krippendorff's alpha, Cohen's kappa) and the lift per judge. "
           "Replaces --skill-lift-judge-model.", default="", default_text="one judge",
           metavar="JUDGE[,…]"),
    Option("judge-mask", "Mask the installed family's name and skill phrasing (\"the X skill\", "
           "SKILL.md) in the answer the judge sees, in both arms, so an answer cannot tell "
           "the judge its arm; evidence is checked against the masked text. off sends the "
           "answer as written (leaks are still counted).", default="on",
           choices=("on", "off")),
    Option("judge-samples", "Independent judge samples per run, each with its own rubric "
           "shuffle (2 is the escalation: items whose samples disagree get a third, "
           "tie-breaking sample and are flagged contested).", "int", 1, metavar="N"),
    Option("evidence", "A met/violated verdict whose quote is not in the answer: reject "
           "(recorded as missing/absent/clean, no credit) or flag (kept, evidence_ok=0).",
           default="reject", choices=("reject", "flag")),
    Option("min-coverage", "Least share of runs that must be graded for exit status 0 (the "
           "coverage guard).", "float", DEFAULT_MIN_COVERAGE, metavar="SHARE"),
    Option("image", "Docker image for --skill-lift-runner=docker.", default="skilllift:local",
           metavar="IMAGE"),
    Option("agent-install", "Install the npm CLIs of the agents the labels name "
           f"({other_names()}) at their pinned versions into a per-user cache when they "
           "are not on PATH (needs npm; docs/agents.md).", "bool", False),
    Option("docker-network", "Docker network mode (host reaches a stand-in on loopback).",
           default="bridge", metavar="MODE"),
    Option("demo-latency", "Demo only: seconds of scripted latency per agent call.",
           "float", 0.0, metavar="SECONDS"),
    Option("demo-judge-latency", "Demo only: seconds of scripted latency per judge call.",
           "float", 0.0, metavar="SECONDS"),
    Option("conditions", "Arms to run, comma-separated: no-skill (required), with-skill, "
           "with-all (every family of the skills root installed: a skill's lift among its "
           "siblings), no-skill-b (a second no-skill arm, an A/A check), with-skill@REF (the "
           "family at git revision REF of the skills repository, e.g. with-skill@HEAD~1, or "
           "a directory of earlier skills: did the edit help; docs/versions.md).",
           default=",".join(CONDITIONS), metavar="ARM[,…]"),
    Option("aa", "An A/A week: both arms run with no skill (the second labelled no-skill-b), "
           "so the scorecard measures the false-lift rate of this prompt set, models and "
           "judge. Same as --skill-lift-conditions=no-skill,no-skill-b.", "bool", False),
    Option("baseline-from", "Take the no-skill runs from this earlier week directory wherever "
           "nothing that decides a no-skill answer changed (its week.json identity); the others "
           "are generated and say why.", default="", metavar="WEEK_DIR"),
    Option("shard", "Generate and grade only this CI job's share of the week's runs, I/N "
           "(1-based); the other runs' items are deselected. Merge the shards with skilllift "
           "merge.", default="", default_text="the whole week", metavar="I/N"),
    Option("max-spend", "Spend cap for the week in USD (generation + judge, across workers and "
           "earlier sessions of the week): once reached no new run starts; the runs left are "
           "reported as 'not run: spend cap'.", "float", None, default_text="no cap",
           metavar="USD"),
    Option("judge-batch", "Grade through each judge's batch API (half price, results within "
           "24 h): anthropic: judges through Message Batches, openai: through OpenAI's Batch "
           "API, google: through Gemini's batch mode (a panel's judges each through its own). "
           "The runs are generated first, then graded in batches, then the rubric items "
           "report.", "bool", False),
    Option("judge-batch-poll", "Seconds between polls of a pending batch.", "float",
           30.0, metavar="SECONDS"),
    Option("triggers", "Directory of trigger test files <family>.json (relative to rootdir).",
           default="evals/triggers", cli=False),
    Option("triggers-all", "Run trigger tests with every skill family installed at once; the "
           "scorecard adds a confusion table (which skill fired for which query).",
           "bool", False),
    Option("triggers-max-turns", "--max-turns of a trigger run (2 allows one exploring tool "
           "call, then the skill).", "int", 2, metavar="N"),
    Option("skill-creator-evals", "Collect Anthropic skill-creator evals/evals.json files "
           "(true|false).", "bool", None, cli=False, default_text="true when such files exist"),
    Option("gate", "A quality gate [SCOPE.]METRIC OP VALUE[:hard|:soft], e.g. "
           "must_lift_ci_low>0 or haiku.with-skill.pass_rate>=0.8:soft; repeatable (ini "
           "skill_lift_gates, one per line). A failed hard gate makes the exit status 1.",
           "lines", (), ini="skill_lift_gates", metavar="GATE"),
    Option("pass-threshold", "Composite a prompt×rep must reach to pass (0.7 is the Drupal "
           "ai_eval 3.5 of 5).", "float", DEFAULT_PASS_THRESHOLD,
           metavar="COMPOSITE"),
    Option("allow-unsafe", "Run the with-skill arm even when the skill family has a critical "
           "security finding (skilllift scan, docs/security-scan.md); without it such a run "
           "is an invalid install naming the finding.", "bool", False),
    Option("breaker", "Circuit breaker: after this many consecutive runs fail with the same "
           "infrastructure cause (API unreachable, key refused, model not found) no new run "
           "starts; the rest are reported 'not run: <cause>'. 0 turns it off.", "int", 3,
           metavar="N"),
    Option("max-concurrency", "The most agent runs in flight at once, across every xdist worker "
           "of the session. The limit starts here, halves when a CLI reports rate-limit "
           "retries (HTTP 429/529; no new run starts before their retry-after) and grows back "
           "by one after as many clean runs (docs/ci.md).", "int", None,
           default_text="3 when a Claude Code label runs (qdrant/skills SCORING.md: 2-3), "
           "else the worker count", metavar="N"),
    Option("preflight", "Before the first run, ask each label's agent API once whether its "
           "model exists (a free model lookup: GET /v1/models/ID for Claude Code and Codex, "
           "GET v1beta/models/ID for Gemini CLI, OpenCode's at its model's provider): a "
           "mistyped model, a refused key or an unreachable API stops the session up front, "
           "naming the label, the cause and the fix; what it cannot check is counted and "
           "named in its line. off: find out from the runs (their outage handling and "
           "circuit breaker).",
           default="on", choices=("on", "off")),
    Option("progress-interval", "Seconds between progress lines when the output is not a "
           "terminal (CI logs; 0 = one per finished run). A terminal gets one "
           "live line; -q silences both.", "float", 60.0, metavar="SECONDS"),
    # pytest --skill-lint (plugin/lint_hooks.py): static SKILL.md analysis, no model.
    Option("path", "Skills root to lint.", default="", prefix="skill-lint", in_ini=False,
           default_text="the directories given as arguments that hold a SKILL.md, else ini "
           "skill_lift_skills, else 'skills'", metavar="PATH"),
    Option("threshold", "With --skill-lint, also fail a COMPOSITE test for skills scoring "
           "under this (0-100).", default="", cli=False, default_text="none", prefix="skill-lint"),
    Option("depth", "With --skill-lint: quick (static, no model), standard (+ LLM judge) or "
           "deep (+ Monte Carlo runs of the real CLI); above quick each skill gets a DEPTH "
           "test.", default="quick", cli=False, choices=("quick", "standard", "deep"),
           prefix="skill-lint"),
)
#: The two option families of the table (``Option.prefix``).
LIFT, LINT = "skill-lift", "skill-lint"


def option_default(name: str) -> Any:
    """The default of the option ``name`` (as stated in :data:`OPTIONS`, once)."""
    return next(o.default for o in OPTIONS if o.name == name and o.prefix == LIFT)


def parse_models(text: str, *, where: str = "--skill-lift-models") -> tuple[tuple[str, str], ...]:
    """``"sonnet=claude-sonnet-4-5,haiku"`` → ``(("sonnet", "claude-sonnet-4-5"),
    ("haiku", "haiku"))``. ``where`` names the setting in errors (the flag or the ini key)."""
    shape = "write label=model_id[,label=model_id…], e.g. sonnet=claude-sonnet-4-5,haiku"
    models: list[tuple[str, str]] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        label, eq, model_id = (x.strip() for x in part.partition("="))
        if not label:
            raise SettingsError(f"{where}: {part!r} in {text!r} has no label before '='; "
                                f"{shape}")
        if eq and not model_id:
            raise SettingsError(f"{where}: {part!r} in {text!r} has an empty model id after "
                                f"'='; {shape} (a bare label, e.g. {label}, is passed to the "
                                "CLI as is)")
        if any(c in label for c in ":/ "):
            raise SettingsError(f"{where}: bad label {label!r} in {text!r}; {shape}, with a "
                                "label free of ':', '/' and spaces")
        model_id = _agent_model(label, model_id or label, where)
        if label in {m[0] for m in models}:
            raise SettingsError(f"{where}: label {label!r} is given twice in {text!r} (each "
                                f"label names one column of the scorecard); {shape}")
        models.append((label, model_id or label))
    if not models:
        raise SettingsError(f"{where}: no model given; {shape}")
    return tuple(models)


def _agent_model(label: str, model_id: str, where: str = "--skill-lift-models") -> str:
    """The label's model id with its agent checked: ``codex:gpt-5.5`` stays, a
    ``claude-code:`` prefix is dropped (no prefix means Claude Code, so a week keeps its
    identity), an unknown agent-like prefix (``gemini:…``) is an error naming the agents."""
    agent, bare = split_agent(model_id)
    prefix = model_id.partition(":")[0]
    if agent == CLAUDE_CODE and ":" in model_id and re.fullmatch(r"[a-z][a-z-]*", prefix) \
            and not model_id.startswith(CLAUDE_CODE + ":"):
        raise SettingsError(
            f"{where}: label {label!r} names agent {prefix!r}, which is not one of "
            f"{', '.join(AGENTS)}; write {label}=AGENT:MODEL (e.g. {label}=codex:gpt-5.5) or "
            "a Claude model id without a prefix")
    if not bare.strip():
        raise SettingsError(f"{where}: label {label!r} names agent {agent!r} but "
                            f"no model; write {label}={agent}:MODEL")
    return bare if agent == CLAUDE_CODE else f"{agent}:{bare}"


def parse_conditions(text: str, *, aa: bool = False,
                     where: str = "--skill-lift-conditions") -> tuple[str, ...]:
    """``"no-skill,with-skill,with-all"`` → the arms in ``model.ARMS`` order (stable ids);
    ``aa`` (``--skill-lift-aa``) is ``no-skill,no-skill-b``."""
    default = ",".join(CONDITIONS)
    if aa:
        if text.replace(" ", "") not in (default, f"{NO_SKILL},{NO_SKILL_B}"):
            raise SettingsError(
                f"--skill-lift-aa runs the arms {NO_SKILL},{NO_SKILL_B}, but "
                f"{where} asks for {text!r}: drop one of the two (for an A/A "
                f"check beside real arms write --skill-lift-conditions=...,{NO_SKILL_B})")
        return (NO_SKILL, NO_SKILL_B)
    arms = [a.strip() for a in text.split(",") if a.strip()]
    refs = [a for a in arms if a.startswith(WITH_REF_PREFIX)]
    for arm in arms:
        if arm not in ARMS[:-1] and arm not in refs:
            raise SettingsError(f"{where}: unknown arm {arm!r}; use "
                                f"{', '.join(ARMS[:-1])} or with-skill@REF (REF a git "
                                f"revision of the skills repository or a directory; e.g. "
                                f"{default},with-skill@HEAD~1)")
    for ref_arm in refs:
        ref = arm_ref(ref_arm)
        if ref is None or _BAD_REF.search(ref):
            raise SettingsError(
                f"{where}: {ref_arm!r} needs a REF after '@' without spaces, "
                "',', '::', '[' or ']' (a git revision such as HEAD~1, v1.2 or a sha, or a "
                "directory such as old-skills)")
    if len(refs) > 1:
        raise SettingsError(f"{where}: {', '.join(refs)}: a week compares one "
                            "earlier revision (one with-skill@REF arm); run the other in its "
                            "own week")
    if len(set(arms)) != len(arms):
        raise SettingsError(f"{where}: an arm is given twice in {text!r}")
    versions_only = bool(refs) and WITH_SKILL in arms
    if (NO_SKILL not in arms and not versions_only) or len(arms) < 2:
        raise SettingsError(f"{where}: {text!r} needs {NO_SKILL} and at least "
                            f"one other arm: every lift is measured against {NO_SKILL} (or "
                            f"{WITH_SKILL} and one with-skill@REF: a version comparison)")
    order = [*ARMS[:-1], *refs]
    return tuple(a for a in order if a in arms)


#: What a with-skill@REF's REF may not hold (the conditions list, test ids, the -k syntax).
_BAD_REF = re.compile(r"[\s,\[\]]|::")


@dataclass(frozen=True)
class Settings:
    """Everything the run needs to know, resolved to absolute paths.

    Built only by ``from_values`` (from ``OPTIONS``, whose defaults are the only ones) or
    ``from_wire``; so the option fields have no defaults of their own.
    """

    enabled: bool
    rootdir: Path
    inifile: str
    prompts_dir: Path
    skills_root: Path
    #: Harbor task directories (``run/tasks``).
    tasks_dir: Path
    checks_dir: Path
    site: str
    models: tuple[tuple[str, str], ...]
    reps: int
    out_dir: Path
    runner: str
    claude: str
    heldout: bool
    fresh: bool
    #: The scripted stand-in answers and grades (``--skill-lift-demo`` and
    #: ``--skill-lift-dry-run``): nothing is a measurement, no dollar is paid.
    demo: bool
    allowed_tools: tuple[str, ...]
    permission_mode: str
    max_turns: int | None
    max_budget_usd: float | None
    timeout_s: float
    max_family_mb: float
    judge_model: str
    judge_samples: int
    #: ``--skill-lift-judges``: the panel's judges as given (empty: one judge).
    judges: tuple[str, ...]
    #: ``--skill-lift-judge-mask``: mask family names and skill phrasing for the judge.
    judge_mask: bool
    evidence: str
    min_coverage: float
    image: str
    docker_network: str
    demo_latency_s: float
    demo_judge_latency_s: float
    #: The arms every (prompt, model, rep) runs, in ``model.ARMS`` order.
    conditions: tuple[str, ...]
    #: ``--skill-lift-baseline-from``: the source week directory (absolute), or "" when off.
    baseline_from: str
    #: ``--skill-lift-shard`` as given ("" = the whole week); ``week.shards.Shard.parse`` reads it.
    shard: str
    max_spend_usd: float | None
    judge_batch: bool
    judge_batch_poll_s: float
    #: ``--skill-lift-agent-install``: npm-install the labels' agent CLIs when missing.
    agent_install: bool
    triggers_dir: Path
    triggers_all: bool
    triggers_max_turns: int
    #: None: collect skill-creator evals.json files when there are any.
    skill_creator_evals: bool | None
    gates: tuple[str, ...]
    pass_threshold: float
    progress_interval_s: float
    #: ``--skill-lift-allow-unsafe``: install a family despite a critical security finding.
    allow_unsafe: bool
    #: Consecutive runs with one infrastructure cause before no new run starts (0: never).
    breaker: int
    #: ``--skill-lift-max-concurrency``: the cap on agent runs in flight (None: the default
    #: rule, ``run.concurrency.default_cap``).
    max_concurrency: int | None
    #: ``--skill-lift-dry-run``: the stand-in (``demo`` is set too) on the user's own files.
    dry_run: bool
    #: ``--skill-lift-preflight``: each label's model asked at its agent's API before any run.
    preflight: bool
    #: Endpoint for both the CLI and the judge (set by the demo); empty = the environment's.
    base_url: str = ""
    #: The controller's shared judge (set under xdist): workers grade through it.
    judge_url: str = ""
    judge_token: str = ""
    #: Environment the runs need beyond the host's (e.g. the demo's dummy key). Not a secret
    #: store: the real key is read from the environment at run time and never kept here.
    extra_env: dict[str, str] = field(default_factory=dict)
    #: Labels that may be left out when their agent's CLI is missing, instead of the usage
    #: error: the demo's own Codex and Gemini CLI labels (not labels a user asked for).
    optional_labels: tuple[str, ...] = ()
    #: What was left out and why, one line per label ("label gpt not run: codex CLI …"):
    #: shown in the terminal and the scorecard's banner, never silent.
    labels_not_run: tuple[str, ...] = ()

    @property
    def week(self) -> str:
        """The week key: the out directory's name (e.g. ``20260808``)."""
        return self.out_dir.name

    def to_wire(self) -> dict[str, Any]:
        """A JSON-able dict for xdist's workerinput."""
        data = dataclasses.asdict(self)
        for key, value in data.items():
            if isinstance(value, Path):
                data[key] = str(value)
        return data

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> Settings:
        """Inverse of ``to_wire``."""
        kwargs = dict(data)
        # JSON turns Paths into strings and tuples into lists: each field is restored by its
        # declared type, so a tuple field added later travels to the workers unchanged too.
        for f in dataclasses.fields(cls):
            if f.name not in kwargs:
                continue
            kind = str(f.type)
            if kind in ("Path", str(Path)):
                kwargs[f.name] = Path(kwargs[f.name])
            elif kind.startswith("tuple[tuple["):
                kwargs[f.name] = tuple(tuple(m) for m in kwargs[f.name] or ())
            elif kind.startswith("tuple["):
                kwargs[f.name] = tuple(kwargs[f.name] or ())
        return cls(**kwargs)

    def without_labels(self, missing: Mapping[str, str]) -> Settings:
        """These settings without the optional labels in ``missing`` (label → why it cannot
        run, with the fix), each named in :attr:`labels_not_run`."""
        gone = {label: why for label, why in missing.items() if label in self.optional_labels}
        if not gone:
            return self
        notes = tuple(f"label {label} not run: {gone[label]}"
                      for label, _ in self.models if label in gone)
        return dataclasses.replace(
            self, models=tuple(m for m in self.models if m[0] not in gone),
            labels_not_run=(*self.labels_not_run, *notes))

    @property
    def labels_not_run_line(self) -> str:
        """The labels left out (their agent CLI missing) in one line ("" for none)."""
        if not self.labels_not_run:
            return ""
        parts = [n.removeprefix("label ").replace(" not run: ", " — ", 1)
                 for n in self.labels_not_run]
        n = len(parts)
        return f"{n} label{'s' * (n != 1)} not run (agent CLI missing): {'; '.join(parts)}"

    @classmethod
    def from_values(
        cls,
        get: Callable[[Option], Any],
        *,
        enabled: bool,
        rootdir: Path,
        inifile: str = "",
        today: dt.date | None = None,
        named: Callable[[Option], str] | None = None,
    ) -> Settings:
        """Build from a getter returning each option's value (command line over ini).

        ``named(option)`` is how errors name the setting a value came from: the flag for a
        command-line value, the ini key for an ini one (default: the flag)."""
        options = [o for o in OPTIONS if o.prefix == LIFT]
        v = {o.name: get(o) for o in options}
        by_name = {o.name: o for o in options}

        def n(name: str) -> str:
            o = by_name[name]
            return named(o) if named else o.flag

        dry_run = bool(v["dry-run"])
        if dry_run and v["demo"]:
            raise SettingsError(f"{n('demo')} runs the package's own prompts and "
                                f"{n('dry-run')} runs yours; give one of them")
        demo = bool(v["demo"]) or dry_run
        for o in options:
            if o.choices and v[o.name] not in o.choices:
                raise SettingsError(
                    f"{n(o.name)}: {v[o.name]!r} is not one of {', '.join(o.choices)}"
                )
        reps = int(v["reps"])
        if reps < 1:
            raise SettingsError(f"{n('reps')} must be at least 1, got {reps}")
        if int(v["triggers-max-turns"]) < 1:
            raise SettingsError(f"{n('triggers-max-turns')} must be at least 1, got "
                                f"{v['triggers-max-turns']}")
        judges = tuple(j.strip() for j in str(v["judges"] or "").split(",") if j.strip())
        for text in (str(v["judge-model"] or ""), *judges):
            try:
                split_judge(text)
            except ValueError as exc:
                raise SettingsError(f"{n('judges' if judges else 'judge-model')}: {exc}"
                                    ) from None
        if len(judges) == 1 or len(set(judges)) != len(judges):
            raise SettingsError(f"{n('judges')}: a panel names two or more judges, each "
                                f"once (got {','.join(judges)}); for one judge use "
                                f"{n('judge-model')}")
        judge_samples = int(v["judge-samples"])
        if judge_samples < 1:
            raise SettingsError(f"{n('judge-samples')} must be at least 1, got {judge_samples}")
        cov = float(v["min-coverage"])
        if not 0.0 <= cov <= 1.0:
            raise SettingsError(f"{n('min-coverage')} must be within [0, 1], got {cov}")
        pass_threshold = float(v["pass-threshold"])
        if not 0.0 <= pass_threshold <= 1.0:
            raise SettingsError(f"{n('pass-threshold')} is a composite, within [0, 1] "
                                f"(0.7 = 3.5 of 5), got {pass_threshold}")
        if demo and v["runner"] == "docker" and v["docker-network"] != "host":
            raise SettingsError(
                "--skill-lift-demo with --skill-lift-runner=docker needs "
                "--skill-lift-docker-network=host so the container reaches the demo's "
                "scripted API on loopback"
            )
        models_text = v["models"]
        optional: tuple[str, ...] = ()
        if demo and models_text == DEFAULT_MODELS:
            models_text = DEMO_MODELS
            # The demo's other agents run where their CLIs are installed (plugin.session).
            optional = tuple(label for label, model in parse_models(DEMO_MODELS)
                             if split_agent(model)[0] != CLAUDE_CODE)
        day = (today or dt.datetime.now(dt.UTC).date()).strftime("%Y%m%d")
        # The demo and a dry run get their own trees so their history never mixes with real
        # weeks'.
        tree = "weekly-dry-run" if dry_run else "weekly-demo" if demo else "weekly"
        out = v["out"] or f"evals/{tree}/{day}"
        budget = v["max-budget-usd"]
        shard = str(v["shard"] or "").strip()
        if shard:
            from pytest_skilllift.week.shards import Shard, ShardError

            try:
                Shard.parse(shard)
            except ShardError as exc:
                # ShardError speaks of the flag; an ini value is named by its key.
                raise SettingsError(str(exc).replace("--skill-lift-shard=", n("shard") + ": ")
                                    ) from None
        spend = v["max-spend"]
        if spend not in (None, "") and float(spend) < 0:
            raise SettingsError(f"{n('max-spend')} must be at least 0 USD, got {spend}")
        if float(v["judge-batch-poll"]) <= 0:
            raise SettingsError(f"{n('judge-batch-poll')} must be a positive number of "
                                f"seconds, got {v['judge-batch-poll']}")
        project = _demo_paths(v) if demo and not dry_run else {}
        return cls(
            enabled=enabled or demo,
            rootdir=rootdir,
            inifile=inifile,
            prompts_dir=project.get("prompts") or resolve_path(rootdir, v["prompts"]),
            tasks_dir=_tasks_dir(rootdir, v, demo),
            skills_root=project.get("skills") or resolve_path(rootdir, v["skills"]),
            checks_dir=project.get("checks") or resolve_path(rootdir, v["checks"]),
            site=v["site"],
            models=parse_models(models_text, where=n("models")),
            reps=reps,
            out_dir=resolve_path(rootdir, out),
            runner=v["runner"],
            claude=v["claude"],
            heldout=bool(v["heldout"]),
            fresh=bool(v["fresh"]),
            demo=demo,
            dry_run=dry_run,
            preflight=v["preflight"] == "on",
            allowed_tools=tuple(t.strip() for t in v["allowed-tools"].split(",") if t.strip()),
            permission_mode=v["permission-mode"],
            max_turns=None if v["max-turns"] in (None, "") else int(v["max-turns"]),
            max_budget_usd=None if budget in (None, "") else float(budget),
            timeout_s=float(v["timeout"]),
            max_family_mb=_family_limit(v["max-family-mb"]),
            judge_model=v["judge-model"],
            judge_samples=judge_samples,
            judges=judges,
            judge_mask=v["judge-mask"] != "off",
            evidence=v["evidence"],
            min_coverage=cov,
            image=v["image"],
            docker_network=v["docker-network"],
            demo_latency_s=float(v["demo-latency"]),
            demo_judge_latency_s=float(v["demo-judge-latency"]),
            conditions=parse_conditions(v["conditions"], aa=bool(v["aa"]),
                                        where=n("conditions")),
            baseline_from=str(resolve_path(rootdir, v["baseline-from"])) if v["baseline-from"]
            else "",
            shard=shard,
            max_spend_usd=None if spend in (None, "") else float(spend),
            judge_batch=bool(v["judge-batch"]),
            agent_install=bool(v["agent-install"]),
            judge_batch_poll_s=float(v["judge-batch-poll"]),
            triggers_dir=project.get("triggers") or resolve_path(rootdir, v["triggers"]),
            triggers_all=bool(v["triggers-all"]),
            triggers_max_turns=int(v["triggers-max-turns"]),
            skill_creator_evals=(None if v["skill-creator-evals"] is None
                                 else bool(v["skill-creator-evals"])),
            gates=tuple(g.strip() for g in (v["gate"] or ()) if g.strip()),
            pass_threshold=pass_threshold,
            progress_interval_s=float(v["progress-interval"]),
            allow_unsafe=bool(v["allow-unsafe"]),
            breaker=_breaker(v["breaker"]),
            max_concurrency=_max_concurrency(v["max-concurrency"]),
            optional_labels=optional,
        )


def _family_limit(raw: Any) -> float:
    """``--skill-lift-max-family-mb``: a size in MiB, at least 0 (0: no limit)."""
    limit = float(raw)
    if not limit >= 0:
        raise SettingsError(f"--skill-lift-max-family-mb must be at least 0 MiB (0: no limit), "
                            f"got {raw}")
    return limit


#: What each kind of ini value must look like, for the error that refuses one.
_INI_SHAPES = {"bool": "true or false (also 1/0, yes/no, on/off)",
               "int": "a whole number", "float": "a number"}


def ini_error(o: Option, inifile: str, problem: str) -> str:
    """``skill_lift_reps in pytest.ini: 'two' is not a whole number; e.g. skill_lift_reps = 2``."""
    example = o.default if o.default not in (None, "", ()) else {"int": 1, "float": 1.5}.get(
        o.kind, "true")
    if isinstance(example, bool):
        example = "true"
    return (f"{o.ini_name} in {inifile}: {problem}; write {_INI_SHAPES.get(o.kind, 'a value')},"
            f" e.g. {o.ini_name} = {example}")


def coerce_ini(o: Option, raw: Any, inifile: str = "the ini file") -> Any:
    """Ini values arrive as strings (or bools for ``type='bool'``); a bad one is refused
    naming the ini key and the shape it must have."""
    if o.kind == "bool":
        return raw if isinstance(raw, bool) else str(raw).lower() in ("1", "true", "yes", "on")
    if o.kind == "lines":
        lines = raw.splitlines() if isinstance(raw, str) else list(raw)
        return tuple(str(x).strip() for x in lines if str(x).strip())
    if o.kind in ("int", "float"):
        try:
            return int(raw) if o.kind == "int" else float(raw)
        except ValueError:
            raise SettingsError(ini_error(o, inifile, f"{raw!r} does not parse")) from None
    return str(raw)


#: The demo's project (prompts, skills, checks, trigger files), shipped inside the package so
#: that ``pytest --skill-lift-demo`` runs in any directory, an empty one included.
DEMO_PROJECT = Path(__file__).resolve().parent / "demo"

#: Where each path option of the demo points inside :data:`DEMO_PROJECT`.
_DEMO_LAYOUT = {"prompts": "evals/test-prompts", "skills": "skills", "checks": "evals/checks",
                "triggers": "evals/triggers", "tasks": "evals/tasks"}


def _demo_paths(v: dict[str, Any]) -> dict[str, Path]:
    """The demo's packaged paths, for each path option the user left at its default (one
    set in the ini or on the command line points the demo at the user's own files)."""
    defaults = {o.name: o.default for o in OPTIONS if o.prefix == LIFT}
    return {name: DEMO_PROJECT / rel for name, rel in _DEMO_LAYOUT.items()
            if v[name] == defaults[name]}


#: The demo's Harbor tasks: collected when the demo runs with the docker runner (a task's run is
#: a container; docs/tasks.md), so the demo without docker stays what it was.
DEMO_TASKS = DEMO_PROJECT / "evals" / "tasks"


def _tasks_dir(rootdir: Path, v: dict[str, Any], demo: bool) -> Path:
    default = option_default("tasks")
    if demo and v["tasks"] == default:
        return DEMO_TASKS if v["runner"] == "docker" else DEMO_TASKS / "(docker runner only)"
    return resolve_path(rootdir, v["tasks"])


def resolve_path(rootdir: Path, value: str) -> Path:
    """``value`` (``~`` expanded) relative to ``rootdir`` unless absolute."""
    path = Path(value).expanduser()
    return path if path.is_absolute() else (rootdir / path)


@dataclass(frozen=True)
class LintSettings:
    """``pytest --skill-lint``: the skills roots to lint (with their test-id labels) and the
    composite threshold."""

    enabled: bool
    roots: tuple[Path, ...]
    labels: tuple[str, ...]
    threshold: float | None = None
    depth: str = "quick"  # ini skill_lint_depth: quick | standard | deep


def _breaker(value: Any) -> int:
    """``--skill-lift-breaker``: a whole number of runs, at least 0."""
    try:
        n = int(value)
    except (TypeError, ValueError):
        n = -1
    if n < 0:
        raise SettingsError(f"--skill-lift-breaker must be a whole number of runs, at least 0 "
                            f"(0 turns the circuit breaker off), got {value!r}")
    return n


def _max_concurrency(value: Any) -> int | None:
    """``--skill-lift-max-concurrency``: a whole number of runs, at least 1 (None: default)."""
    if value in (None, ""):
        return None
    try:
        n = int(value)
    except (TypeError, ValueError):
        n = 0
    if n < 1:
        raise SettingsError(f"--skill-lift-max-concurrency must be a whole number of runs, at "
                            f"least 1, got {value!r}")
    return n
