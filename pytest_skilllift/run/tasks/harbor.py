"""``skilllift import harbor``: Harbor job directories read into a week directory of this tool.

Harbor (the harness SkillsBench runs on) writes one directory per job and, inside it, one
directory per trial (task × agent/model × attempt)::

    <job>/
      config.json            the job's config (JobConfig)
      result.json            the job's aggregate (not read: every number is recomputed here)
      <task>__<id>/          a trial (its name: the task's, then a short random id)
        config.json          TrialConfig: task (path | name…), agent (name, model_name,
                             skills…), environment, verifier
        result.json          TrialResult: task_name, trial_name, agent_info (name, version,
                             model_info.name/provider), agent_result (n_input_tokens,
                             cost_usd…), verifier_result.rewards ({"reward": 1.0}),
                             exception_info (exception_type, exception_message),
                             started_at, finished_at
        agent/               the agent's logs: claude-code.txt (Claude Code's stream-json),
                             trajectory.json (ATIF)…
        verifier/            reward.txt / reward.json, ctrf.json, test-stdout.txt
        artifacts/           files collected from the environment

Each trial becomes one run of the week (``<week>/<run_id>/run.json`` as the task runner's
records are: ``task``, ``reward``, ``rewards``, ``verifier_tests``…; its verifier files under
``verifier/``, its files under ``artifacts/``, the agent's transcript as ``stdout.txt`` when
the agent is one this tool reads), then manifest.csv and scores.csv are rebuilt from them, so
``skilllift summarize`` / ``view`` / ``gate`` work on it as on a week this tool ran.

- **model label**: the agent and the model (``agent_info``; ``config.agent.model_name`` as a
  fallback): ``<model>`` for Claude Code, ``<agent>-<model>`` for the other agents, the
  provider prefix (``anthropic/``) dropped;
- **condition** (:data:`ARM_SOURCES`, ``--arm-from``): ``config`` (default) — the trial's
  ``config.agent.skills`` list, non-empty = with-skill, empty = no-skill, absent =
  unmappable; ``job-name`` / ``trial-name`` — the job's (trial's) directory name matching
  ``--no-skill-pattern`` (default :data:`NO_SKILL_PATTERN`) = no-skill, else with-skill;
- **rep**: the attempt — trials of one (task, label, condition) numbered 1… in the order they
  started;
- **status**: a reward read = ``ok`` (an agent exception beside it, e.g. Harbor's agent
  timeout, is kept in ``harbor_exception``: Harbor scores that reward too); no reward and a
  verifier exception (or none) = ``verifier_error``; no reward after an agent or environment
  exception = ``errored``.

Anything that cannot be mapped — a directory without a readable ``result.json``, a trial
without a task name or an agent, a condition the source cannot decide — is counted and named
in the report (:class:`ImportReport`), never guessed.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pytest_skilllift.model import CLAUDE_CODE, NO_SKILL, WITH_SKILL, PromptSpec, RunSpec
from pytest_skilllift.run.tasks.results import read_tests
from pytest_skilllift.week.files import (
    ARTIFACTS_DIR,
    ERRORED,
    OK,
    STDOUT_FILE,
    VERIFIER_DIR,
    VERIFIER_ERROR,
    VERIFIER_OUTPUT,
)

RESULT_JSON = "result.json"
CONFIG_JSON = "config.json"
#: ``--arm-from`` choices; the first is the default.
ARM_SOURCES = ("config", "job-name", "trial-name")
#: A job or trial name that says "without skills" (``--no-skill-pattern``'s default).
NO_SKILL_PATTERN = r"(?i)(?:^|[^a-z])(?:no|without|wo)[-_ ]?skills?(?:[^a-z]|$)"
#: The agent log file Harbor writes per agent (``agent/<name>``), for the agents whose
#: event stream this tool parses (run/agent_streams.py).
AGENT_LOGS: dict[str, str] = {
    "claude-code": "claude-code.txt",
    "codex": "codex.txt",
    "gemini-cli": "gemini-cli.txt",
    "opencode": "opencode.txt",
}
#: Caps on the files copied per trial (each cut counted and named in run.json).
MAX_COPIED_FILE = 1024 * 1024
MAX_COPIED_FILES = 200
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass
class ImportReport:
    """What an import did: runs written, and every trial or file left out, with why."""

    week: Path
    runs: int = 0
    by_condition: dict[str, int] = field(default_factory=dict)
    #: ``(path, why)`` of every trial that could not be mapped.
    unmapped: list[tuple[str, str]] = field(default_factory=list)
    #: Runs whose transcript could not be read (agent not read by this tool, no log).
    no_transcript: list[tuple[str, str]] = field(default_factory=list)
    #: Files left out by the caps, ``(run_id/path, why)``.
    cut: list[tuple[str, str]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """``skilllift import harbor --output json``."""
        return {"week": str(self.week), "runs": self.runs, "by_condition": self.by_condition,
                "unmapped": [{"path": p, "why": w} for p, w in self.unmapped],
                "no_transcript": [{"run_id": r, "why": w} for r, w in self.no_transcript],
                "cut": [{"file": p, "why": w} for p, w in self.cut]}

    def text(self) -> str:
        """The report's lines."""
        conds = ", ".join(f"{k} {v}" for k, v in sorted(self.by_condition.items()))
        lines = [f"imported {self.runs} trial(s) into {self.week} ({conds or 'none'})"]
        if self.unmapped:
            lines.append(f"{len(self.unmapped)} trial(s) not imported:")
            lines += [f"  {p}: {w}" for p, w in self.unmapped]
        if self.no_transcript:
            lines.append(f"{len(self.no_transcript)} run(s) without a transcript this tool "
                         "reads (no audit for them):")
            lines += [f"  {r}: {w}" for r, w in self.no_transcript]
        if self.cut:
            lines.append(f"{len(self.cut)} file(s) not copied:")
            lines += [f"  {p}: {w}" for p, w in self.cut]
        return "\n".join(lines)


class HarborImportError(ValueError):
    """The import cannot start (the message names the path and the fix)."""


@dataclass
class _Trial:
    path: Path
    job: str
    task: str
    agent: str
    model: str
    label: str
    condition: str
    started: str
    result: dict[str, Any]
    config: dict[str, Any]
    rep: int = 0


def import_jobs(jobs: list[Path], out: Path, *, arm_from: str = ARM_SOURCES[0],
                no_skill_pattern: str = NO_SKILL_PATTERN, reward_key: str = "",
                tasks_dir: Path | None = None) -> ImportReport:
    """Read the Harbor job directories ``jobs`` into the week directory ``out`` (created; it
    must not hold runs yet)."""
    if arm_from not in ARM_SOURCES:
        raise HarborImportError(f"--arm-from {arm_from!r}: choose one of {', '.join(ARM_SOURCES)}")
    try:
        pattern = re.compile(no_skill_pattern)
    except re.error as exc:
        raise HarborImportError(f"--no-skill-pattern {no_skill_pattern!r} is not a regular "
                           f"expression ({exc})") from None
    for job in jobs:
        if not job.is_dir():
            raise HarborImportError(f"{job}: not a directory (give a Harbor job directory, the "
                               "folder holding one directory per trial)")
    if out.exists() and any(p.name == "run.json" for p in out.glob("*/run.json")):
        raise HarborImportError(f"{out}: already holds runs; import into a new week directory")
    out.mkdir(parents=True, exist_ok=True)
    report = ImportReport(week=out)
    trials: list[_Trial] = []
    for job in jobs:
        for folder in sorted(p for p in job.iterdir() if p.is_dir() and not p.is_symlink()):
            trial = _read_trial(folder, job.name, arm_from, pattern, report)
            if trial is not None:
                trials.append(trial)
    groups: dict[tuple[str, str, str], list[_Trial]] = {}
    for t in trials:
        groups.setdefault((t.task, t.label, t.condition), []).append(t)
    for group in groups.values():
        for rep, t in enumerate(sorted(group, key=lambda t: (t.started, t.path.name)), 1):
            t.rep = rep
    from pytest_skilllift.week.ledger import Ledger

    ledger = Ledger(out)
    week_name = _UNSAFE.sub("-", out.name).strip("-") or "week"
    # One family per task, whichever arm: a no-skill trial's config lists no skill.
    families: dict[str, list[str]] = {}
    for t in trials:
        local = _families(t, _local_task(t, tasks_dir))
        known = families.setdefault(t.task, [])
        known += [f for f in local if f not in known]
    for t in sorted(trials, key=lambda t: (t.task, t.label, t.condition, t.rep)):
        record = _write_run(t, ledger, week_name, reward_key, tasks_dir, families[t.task],
                            report)
        report.runs += 1
        report.by_condition[t.condition] = report.by_condition.get(t.condition, 0) + 1
        ledger.save_run(record["run_id"], record)
    ledger.rebuild_csvs()
    return report


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _read_trial(folder: Path, job: str, arm_from: str, pattern: re.Pattern[str],
                report: ImportReport) -> _Trial | None:
    where = f"{job}/{folder.name}"
    result = _json(folder / RESULT_JSON)
    if not isinstance(result, dict):
        why = ("no result.json (a trial that never finished, or not a trial directory)"
               if not (folder / RESULT_JSON).exists() else "result.json is not a JSON object")
        report.unmapped.append((where, why))
        return None
    config = result.get("config") if isinstance(result.get("config"), dict) else _json(
        folder / CONFIG_JSON)
    config = config if isinstance(config, dict) else {}
    task = result.get("task_name")
    if not isinstance(task, str) or not task.strip():
        report.unmapped.append((where, "result.json has no task_name"))
        return None
    info = _obj(result, "agent_info")
    agent_cfg = _obj(config, "agent")
    agent = str(info.get("name") or agent_cfg.get("name") or "")
    model_info = _obj(info, "model_info")
    model = str(model_info.get("name") or agent_cfg.get("model_name") or "")
    if not agent:
        report.unmapped.append((where, "no agent name (result.json agent_info.name, "
                                "config.json agent.name)"))
        return None
    if agent == "oracle":
        report.unmapped.append((where, "an oracle trial (the reference solution, not an "
                                "agent): not a measurement"))
        return None
    condition, why = _condition(arm_from, pattern, job, folder.name, agent_cfg)
    if condition is None:
        report.unmapped.append((where, why))
        return None
    return _Trial(path=folder, job=job, task=task.strip(), agent=agent, model=model,
                  label=model_label(agent, model), condition=condition,
                  started=str(result.get("started_at") or ""), result=result, config=config)


def _condition(arm_from: str, pattern: re.Pattern[str], job: str, trial: str,
               agent_cfg: dict[str, Any]) -> tuple[str | None, str]:
    if arm_from == "config":
        if "skills" not in agent_cfg:
            return None, ("config has no agent.skills (a Harbor without skills support?): "
                          "tell the arms apart by name with --arm-from job-name")
        skills = agent_cfg["skills"]
        if not isinstance(skills, list):
            return None, f"config agent.skills is {skills!r}, not a list"
        return (WITH_SKILL if skills else NO_SKILL), ""
    name = job if arm_from == "job-name" else trial
    return (NO_SKILL if pattern.search(name) else WITH_SKILL), ""


def model_label(agent: str, model: str) -> str:
    """The week's model label of a Harbor (agent, model): the model without its provider
    prefix, after the agent's name unless the agent is Claude Code."""
    short = model.rsplit("/", 1)[-1] if model else "default"
    short = _UNSAFE.sub("-", short).strip("-") or "default"
    return short if agent == CLAUDE_CODE else f"{_UNSAFE.sub('-', agent)}-{short}"


def _write_run(t: _Trial, ledger: Any, week: str, reward_key: str, tasks_dir: Path | None,
               families: list[str], report: ImportReport) -> dict[str, Any]:
    from pytest_skilllift.run.engine import make_run_id

    task_name = _UNSAFE.sub("-", t.task.rsplit("/", 1)[-1]).strip("-") or "task"
    run_id = make_run_id(task_name, t.label, t.condition, t.rep, week)
    run_dir = ledger.run_dir(run_id)
    run_dir.mkdir(parents=True, exist_ok=True)
    task_dir = _local_task(t, tasks_dir)
    family = families[0] if families else task_name
    # Harbor's trial verifier/ and artifacts/ into the folders the task runner saves
    for harbor_sub, sub in (("verifier", VERIFIER_DIR), ("artifacts", ARTIFACTS_DIR)):
        _copy_tree(t.path / harbor_sub, run_dir / sub, f"{run_id}/{sub}", report)
    stdout = t.path / "verifier" / "test-stdout.txt"
    if stdout.is_file() and not (run_dir / VERIFIER_DIR / VERIFIER_OUTPUT).exists():
        shutil.copyfile(stdout, run_dir / VERIFIER_DIR / VERIFIER_OUTPUT)
    rewards, reward, reward_problem = _rewards(t.result, reward_key)
    tests = read_tests(run_dir / VERIFIER_DIR)
    exc = t.result.get("exception_info") if isinstance(t.result.get("exception_info"),
                                                       dict) else None
    exc_text = (f"{exc.get('exception_type', 'Exception')}: "
                f"{str(exc.get('exception_message', ''))[:500]}" if exc else "")
    if reward is not None:
        status, error = OK, ""
    elif exc is None or re.search(r"(?i)verifier|reward", str(exc.get("exception_type", ""))):
        status, error = VERIFIER_ERROR, reward_problem if exc is None else exc_text
    else:
        status, error = ERRORED, exc_text
    agent_result = _obj(t.result, "agent_result")
    started, ended = _stamp(t.result.get("started_at")), _stamp(t.result.get("finished_at"))
    wall = _wall_ms(t.result.get("started_at"), t.result.get("finished_at"))
    model_id = t.model if t.agent == CLAUDE_CODE else f"{t.agent}:{t.model}"
    instruction = _instruction(task_dir)
    record: dict[str, Any] = {
        "prompt": task_name, "skill_family": family, "skill_leaf": f"{family}/SKILL.md",
        "model": t.label, "condition": t.condition, "rep": t.rep, "run_id": run_id,
        "exit_code": "", "skills_sha": "", "timestamp": ended, "skill_available": "",
        "skill_activation": "", "reached_leaf": "", "fetched_site": "", "fetched_count": "",
        "model_snapshot": t.model, "cli_version": str(
            (t.result.get("agent_info") or {}).get("version") or ""),
        "total_cost_usd": _num(agent_result.get("cost_usd")), "num_turns": "",
        "result_subtype": "", "budget_hit": 0, "signals_ok": 0,
        "duration_ms": wall, "run_status": status, "run_error": error, "runner": "harbor",
        "model_id": model_id, "started_utc": started, "ended_utc": ended, "wall_ms": wall,
        "invocation_status": "", "top_level_only": "", "permission_denials": "",
        "prompt_path": str(task_dir / "task.toml") if task_dir else "",
        "final_answer": "",
        "task": task_name, "reward": "" if reward is None else reward, "rewards": rewards,
        "verifier_tests": tests,
        "tests_passed": sum(1 for s in tests.values() if s == "passed"),
        "tests_total": len(tests), "verifier_error": error if status == VERIFIER_ERROR else "",
        "harbor_trial": f"{t.job}/{t.path.name}", "harbor_exception": exc_text,
        "harbor_task_checksum": str(t.result.get("task_checksum") or ""),
        "instruction": instruction,
    }
    record.update(_transcript_fields(t, run_dir, run_id, family, families, task_name,
                                     instruction, ledger, status, report))
    return record


def _transcript_fields(t: _Trial, run_dir: Path, run_id: str, family: str,
                       families: list[str], task_name: str, instruction: str, ledger: Any,
                       status: str, report: ImportReport) -> dict[str, Any]:
    """The signals and (with-skill) the invocation audit from the agent's log, when it is a
    transcript this tool reads; else nothing, and the run is named in the report."""
    log_name = AGENT_LOGS.get(t.agent)
    if log_name is None:
        report.no_transcript.append((run_id, f"agent {t.agent!r}: its log is not a stream "
                                     "this tool reads (Claude Code, Codex, Gemini CLI, "
                                     "OpenCode)"))
        return {}
    log = t.path / "agent" / log_name
    if not log.is_file():
        report.no_transcript.append((run_id, f"no agent/{log_name}"))
        return {}
    if log.stat().st_size > 64 * MAX_COPIED_FILE:
        report.no_transcript.append((run_id, f"agent/{log_name} over "
                                     f"{64 * MAX_COPIED_FILE} bytes"))
        return {}
    shutil.copyfile(log, run_dir / STDOUT_FILE)
    (run_dir / "stderr.txt").touch()
    from pytest_skilllift.trace import audit
    from pytest_skilllift.trace.agent_streams import parse_run
    from pytest_skilllift.trace.transcript import extract_signals

    spec = RunSpec(prompt=PromptSpec(path=Path(task_name), name=task_name, product_area="",
                                     prompt=instruction, rubric=(),
                                     skill_path=f"{family}/SKILL.md",
                                     sibling_families=tuple(families[1:])),
                   model_label=t.label, model_id=(t.model if t.agent == CLAUDE_CODE
                                                  else f"{t.agent}:{t.model}"),
                   condition=t.condition, rep=t.rep, run_id=run_id)
    try:
        parsed = parse_run(spec, run_dir / STDOUT_FILE)
    except Exception as exc:  # a log this tool cannot parse: named, never a crash
        report.no_transcript.append((run_id, f"agent/{log_name} did not parse "
                                     f"({type(exc).__name__}: {exc})"))
        return {}
    sig = extract_signals(parsed, family=family, leaf=f"{family}/SKILL.md", site_host="")
    out: dict[str, Any] = {
        "skill_available": int(sig.skill_available), "skill_activation": sig.skill_activation,
        "reached_leaf": int(sig.reached_leaf), "fetched_site": int(sig.fetched_site),
        "fetched_count": sig.fetched_count,
        "model_snapshot": sig.model_snapshot or t.model,
        "num_turns": "" if sig.num_turns is None else sig.num_turns,
        "result_subtype": sig.result_subtype, "budget_hit": int(sig.budget_hit),
        "signals_ok": int(sig.signals_ok), "permission_denials": sig.permission_denials,
        "final_answer": sig.final_answer,
    }
    if sig.cli_version:
        out["cli_version"] = sig.cli_version
    if sig.total_cost_usd is not None:
        out["total_cost_usd"] = sig.total_cost_usd
    if t.condition == WITH_SKILL:
        if status == OK:
            inv = audit.audit_invocation(parsed, family=family)
            ledger.save_audit(run_id, audit.audit_record(inv))
            out["invocation_status"] = inv.status
            out["top_level_only"] = int(inv.top_level_only)
        else:
            ledger.save_audit(run_id, audit.excluded_record(status, "not ok"))
    return out


def _rewards(result: dict[str, Any], key: str) -> tuple[dict[str, float], float | None, str]:
    vr = result.get("verifier_result")
    raw = vr.get("rewards") if isinstance(vr, dict) else None
    if not isinstance(raw, dict) or not raw:
        return {}, None, "the verifier wrote no reward (result.json verifier_result.rewards)"
    rewards: dict[str, float] = {}
    for name, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(
                value):
            return {}, None, f"verifier_result.rewards[{name!r}] is {value!r}, not a number"
        rewards[str(name)] = float(value)
    primary = key or ("reward" if "reward" in rewards else next(iter(rewards)))
    if primary not in rewards:
        return rewards, None, (f"verifier_result.rewards has no {primary!r} (--reward-key); "
                                f"it holds {', '.join(sorted(rewards))}")
    return rewards, rewards[primary], ""


def _local_task(t: _Trial, tasks_dir: Path | None) -> Path | None:
    """The trial's task directory on this machine, if there is one (``--tasks DIR`` first,
    then the path the trial's config names)."""
    candidates: list[Path] = []
    name = t.task.rsplit("/", 1)[-1]
    if tasks_dir is not None:
        candidates.append(tasks_dir / name)
    task_cfg = _obj(t.config, "task")
    if isinstance(task_cfg.get("path"), str):
        candidates.append(Path(task_cfg["path"]))
    for c in candidates:
        if (c / "task.toml").is_file() and not c.is_symlink():
            return c
    return None


def _families(t: _Trial, task_dir: Path | None) -> list[str]:
    """The task's skill families: ``environment/skills/<family>`` of its local directory,
    else the names of the config's ``agent.skills`` paths."""
    if task_dir is not None:
        skills = task_dir / "environment" / "skills"
        if skills.is_dir():
            found = sorted(p.name for p in skills.iterdir() if (p / "SKILL.md").is_file())
            if found:
                return found
    agent_cfg = _obj(t.config, "agent")
    raw = agent_cfg.get("skills")
    listed: list[Any] = raw if isinstance(raw, list) else []
    return [Path(str(p)).name for p in listed if str(p).strip("/")]


def _instruction(task_dir: Path | None) -> str:
    if task_dir is None:
        return ""
    try:
        return (task_dir / "instruction.md").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _copy_tree(src: Path, dest: Path, label: str, report: ImportReport) -> None:
    """Regular files under ``src`` into ``dest`` (links never followed; capped)."""
    if not src.is_dir() or src.is_symlink():
        return
    copied = 0
    for path in sorted(src.rglob("*")):
        rel = path.relative_to(src).as_posix()
        if path.is_symlink():
            report.cut.append((f"{label}/{rel}", "a symbolic link (never followed)"))
            continue
        if not path.is_file() or any(part.is_symlink() for part in path.parents
                                     if part != src and src in part.parents):
            continue
        size = path.stat().st_size
        if copied >= MAX_COPIED_FILES:
            report.cut.append((f"{label}/{rel}", f"over {MAX_COPIED_FILES} files"))
            continue
        if size > MAX_COPIED_FILE:
            report.cut.append((f"{label}/{rel}", f"{size} bytes, over the "
                               f"{MAX_COPIED_FILE}-byte cap"))
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        copied += 1


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _stamp(value: Any) -> str:
    when = _parse_time(value)
    return when.strftime("%Y%m%dT%H%M%SZ") if when is not None else ""


def _wall_ms(start: Any, end: Any) -> int | str:
    a, b = _parse_time(start), _parse_time(end)
    if a is None or b is None:
        return ""
    try:
        return max(0, int((b - a).total_seconds() * 1000))
    except TypeError:  # one aware, one naive
        return ""


def _obj(data: dict[str, Any], key: str) -> dict[str, Any]:
    """``data[key]`` when it is a JSON object, else ``{}`` (a field Harbor left null)."""
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def _num(value: Any) -> float | str:
    return float(value) if isinstance(value, int | float) and not isinstance(
        value, bool) and math.isfinite(value) else ""

