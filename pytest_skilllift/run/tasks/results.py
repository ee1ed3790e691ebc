"""What a task run's verifier said: the reward, the per-test outcomes, or why there is none.

Read from the run folder the task runner (``runners/task_docker.py``) filled:
``verifier/reward.txt`` (a float) or ``verifier/reward.json`` (named rewards: the one
``[verifier] reward_key`` names, else the first, is primary), ``verifier/ctrf.json`` (the
Common Test Report Format pytest-json-ctrf writes; Harbor's verifiers use it) or a JUnit XML
file for the per-test outcomes, and ``task.json`` for the verifier's exit and timeout.

A verifier that timed out, errored before writing a reward, or wrote one that does not read
makes the run ``verifier_error``: excluded from the numbers and named with its cause, never
scored zero (Drupal ai_eval's rule for errored graders). Pure: files in, values out.
"""

from __future__ import annotations

import json
import math
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_skilllift.model import TaskSpec
from pytest_skilllift.week.files import TASK_FILE, VERIFIER_DIR, VERIFIER_OUTPUT

REWARD_TXT = "reward.txt"
REWARD_JSON = "reward.json"
CTRF_JSON = "ctrf.json"
#: Outcomes of a verifier test, as CTRF names them; ``passed`` is the only success.
PASSED = "passed"
FAILED = "failed"


@dataclass(frozen=True)
class VerifierResult:
    """One run's verifier outcome."""

    #: The primary reward (None: no usable reward; ``error`` says why).
    reward: float | None
    #: Every named reward (``reward.json``), or ``{"reward": r}``.
    rewards: dict[str, float] = field(default_factory=dict)
    #: ``<file>::<test>`` → ``passed`` | ``failed`` | ``skipped`` | …, from the report.
    tests: dict[str, str] = field(default_factory=dict)
    #: Why the run is a verifier error ("" when the reward was read).
    error: str = ""


def read_result(run_dir: Path, task: TaskSpec) -> VerifierResult:
    """The verifier's outcome of the run in ``run_dir``."""
    info = _json(run_dir / TASK_FILE)
    verifier = info.get("verifier") if isinstance(info, dict) else None
    folder = run_dir / VERIFIER_DIR
    tests = read_tests(folder)
    if not isinstance(verifier, dict):
        return VerifierResult(None, tests=tests, error="the verifier did not run")
    if verifier.get("timed_out"):
        return VerifierResult(None, tests=tests, error=(
            f"the verifier timed out after {task.verifier_timeout_s:g}s ([verifier] "
            "timeout_sec)"))
    rewards, problem = read_rewards(folder)
    code = verifier.get("exit_code")
    if problem:
        return VerifierResult(None, tests=tests, error=(
            f"{problem} (test.sh exited {code}; see {VERIFIER_DIR}/{VERIFIER_OUTPUT})"))
    key = task.reward_key or next(iter(rewards))
    if key not in rewards:
        return VerifierResult(None, rewards, tests, error=(
            f"reward.json has no {key!r} ([verifier] reward_key); it holds "
            f"{', '.join(sorted(rewards))}"))
    return VerifierResult(rewards[key], rewards, tests)


def read_rewards(folder: Path) -> tuple[dict[str, float], str]:
    """``(rewards, problem)``: ``reward.txt`` as ``{"reward": r}``, else ``reward.json``'s
    numbers in file order; ``problem`` names what is missing or unreadable."""
    txt, js = folder / REWARD_TXT, folder / REWARD_JSON
    if txt.is_file():
        text = txt.read_text(encoding="utf-8", errors="replace").strip()
        try:
            value = float(text)
        except ValueError:
            return {}, f"reward.txt does not hold a number ({text[:40]!r})"
        if not math.isfinite(value):
            return {}, f"reward.txt holds {text!r}"
        return {"reward": value}, ""
    if js.is_file():
        data = _json(js)
        if not isinstance(data, dict) or not data:
            return {}, "reward.json is not a JSON object of named rewards"
        out: dict[str, float] = {}
        for name, value in data.items():
            if isinstance(value, bool) or not isinstance(value, int | float) or not \
                    math.isfinite(value):
                return {}, f"reward.json: {name!r} is not a number ({value!r})"
            out[str(name)] = float(value)
        return out, ""
    return {}, "the verifier wrote no reward (/logs/verifier/reward.txt or reward.json)"


def read_tests(folder: Path) -> dict[str, str]:
    """Per-test outcomes from ``ctrf.json``, else the first JUnit XML file, keyed as the
    collection keys verifier tests (``<file>::<test>``; parametrized cases folded into their
    test: it passed only when every case passed)."""
    ctrf = _json(folder / CTRF_JSON)
    pairs: list[tuple[str, str]] = []
    if isinstance(ctrf, dict):
        tests = (ctrf.get("results") or {}).get("tests") if isinstance(
            ctrf.get("results"), dict) else None
        for test in tests if isinstance(tests, list) else []:
            if isinstance(test, dict) and isinstance(test.get("name"), str):
                pairs.append((str(test["name"]), str(test.get("status", "other"))))
    else:
        for xml in sorted(folder.glob("*.xml")):
            pairs = _junit(xml)
            if pairs:
                break
    out: dict[str, str] = {}
    for name, status in pairs:
        key = verifier_test_key(name)
        if out.get(key, PASSED) == PASSED:  # a failed case fails its test
            out[key] = status
    return out


def verifier_test_key(name: str) -> str:
    """``tests/test_outputs.py::test_x[2]`` → ``test_outputs.py::test_x``."""
    head, sep, rest = name.partition("::")
    if not sep:
        return re.sub(r"\[.*\]$", "", name)
    rest = re.sub(r"\[.*\]$", "", rest)
    return f"{head.rsplit('/', 1)[-1]}::{rest}"


def _junit(path: Path) -> list[tuple[str, str]]:
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError):
        return []
    pairs = []
    for case in root.iter("testcase"):
        classname = case.get("classname", "")
        module = classname.split(".")[-1] if classname else ""
        name = f"{module}.py::{case.get('name', '')}" if module else case.get("name", "")
        status = (FAILED if case.find("failure") is not None or case.find("error") is not None
                  else "skipped" if case.find("skipped") is not None else PASSED)
        pairs.append((name, status))
    return pairs


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def task_fields(run_dir: Path, task: TaskSpec, result: VerifierResult) -> dict[str, Any]:
    """The run record's task fields (run.json; the manifest's ``reward``)."""
    raw = _json(run_dir / TASK_FILE)
    info: dict[str, Any] = raw if isinstance(raw, dict) else {}
    artifacts: dict[str, Any] = info.get("artifacts") or {}
    timings: dict[str, Any] = info.get("timings") or {}
    passed = sum(1 for s in result.tests.values() if s == PASSED)
    return {
        "task": task.root.name,
        "reward": "" if result.reward is None else result.reward,
        "rewards": result.rewards,
        "verifier_tests": result.tests,
        "tests_passed": passed, "tests_total": len(result.tests),
        "verifier_error": result.error,
        "task_image": info.get("image", ""),
        "task_tools": info.get("tools", []),
        "artifacts_saved": len(artifacts.get("files") or []),
        "artifacts_cut": len(artifacts.get("cut") or []),
        "harness_s": timings.get("harness_s", ""),
    }
