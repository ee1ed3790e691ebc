"""Anthropic skill-creator's format both ways: evals.json in, the viewer's layout out.

In: a skill folder's ``evals/evals.json`` (``expectations``) and a repository-level
``evals/evals.json`` naming its skill (``assertions``, as objects) are collected as they are
and scored end to end through the real CLI and judge (stand-in), with ``files`` placed in the
run's working directory and ``expected_output`` shown to the judge as context only. The
qdrant/skills repository's own evals.json collects. Out: ``skilllift export --format
skill-creator`` writes grading.json / benchmark.json, read back against the schema.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.cli.main import main as skilllift
from pytest_skilllift.config import DEMO_PROJECT
from pytest_skilllift.run.prompts import PromptError
from pytest_skilllift.run.skill_creator import CONTEXT_HEADER, judge_prompt_text, load_evals
from pytest_skilllift.runners.claude import bundled_claude

REPO = Path(__file__).resolve().parents[1]
QDRANT = REPO / "tests" / "fixtures" / "data" / "qdrant-skills"
KEY = "sk-ant-test-skill-creator-0000"
LOG_MARKER = "UNIQUE-BISECT-LOG-4f2a1c0"

GIT_BISECT_EVALS: dict[str, Any] = {  # the skill folder's own file: "expectations", a file input
    "skill_name": "git-bisect",
    "evals": [{
        "id": 1,
        "prompt": "A test started failing in the last 400 commits; the log is in "
                  "evals/files/bisect.log. How do I find the commit that broke it?",
        "expected_output": "Bisects with git bisect run and a test script",
        "files": ["evals/files/bisect.log"],
        "expectations": ["Uses git bisect with a known good and a known bad commit",
                         "Automates the search with git bisect run and a test script "
                         "exit code"],
    }],
}
REPO_EVALS: dict[str, Any] = {  # the repository-level file: "assertions" (objects), skill by name
    "skill_name": "python-packaging",
    "evals": [{
        "id": "pyproject",
        "prompt": "How do I move my Python package from setup.py to pyproject.toml and "
                  "publish it?",
        "expected_output": "A pyproject.toml with a build backend, built with python -m build",
        "assertions": [{"text": "Declares a build-system table in pyproject.toml",
                        "passed": None, "evidence": ""},
                       {"text": "Builds the sdist and wheel with python -m build"}],
    }],
}

#: The required fields of skill-creator's grading.json and benchmark.json
#: (references/schemas.md in anthropics/skills), as a JSON-schema-like spec: a dict maps
#: required keys to their spec, a list is "a list of items of this spec", a type is a leaf.
STATS = {"mean": (int, float), "stddev": (int, float)}
GRADING_SCHEMA: dict[str, Any] = {
    "expectations": [{"text": str, "passed": bool, "evidence": str}],
    "summary": {"passed": int, "failed": int, "total": int, "pass_rate": (int, float)},
}
BENCHMARK_SCHEMA: dict[str, Any] = {
    "metadata": {"skill_name": str, "timestamp": str, "evals_run": list,
                 "runs_per_configuration": int},
    "runs": [{"eval_id": (int, str), "eval_name": str, "configuration": str,
              "run_number": int,
              "result": {"pass_rate": (int, float), "passed": int, "total": int,
                         "time_seconds": (int, float), "tokens": int, "errors": int},
              "expectations": [{"text": str, "passed": bool, "evidence": str}]}],
    "run_summary": {"with_skill": {"pass_rate": STATS, "time_seconds": STATS, "tokens": STATS},
                    "without_skill": {"pass_rate": STATS, "time_seconds": STATS,
                                      "tokens": STATS},
                    "delta": {"pass_rate": str, "time_seconds": str, "tokens": str}},
}


def check_schema(value: Any, spec: Any, where: str = "$") -> list[str]:
    """Problems of ``value`` against ``spec`` (empty when it conforms)."""
    if isinstance(spec, dict):
        if not isinstance(value, dict):
            return [f"{where}: not an object"]
        out = []
        for key, sub in spec.items():
            if key not in value:
                out.append(f"{where}.{key}: missing")
            else:
                out += check_schema(value[key], sub, f"{where}.{key}")
        return out
    if isinstance(spec, list):
        if not isinstance(value, list):
            return [f"{where}: not a list"]
        return [p for i, v in enumerate(value) for p in check_schema(v, spec[0], f"{where}[{i}]")]
    if isinstance(value, bool) and spec is not bool and bool not in (
            spec if isinstance(spec, tuple) else (spec,)):
        return [f"{where}: a boolean where {spec} is expected"]
    return [] if isinstance(value, spec) else [f"{where}: {type(value).__name__}, not {spec}"]


def test_the_schema_check_can_fail() -> None:
    assert check_schema({"expectations": [{"text": "x", "passed": "yes", "evidence": ""}]},
                        GRADING_SCHEMA) == ["$.expectations[0].passed: str, not <class 'bool'>",
                                            "$.summary: missing"]


# -- reading evals.json ------------------------------------------------------------------------


def test_the_qdrant_repository_evals_json_loads_as_is() -> None:
    loaded = load_evals(QDRANT / "evals" / "evals.json", QDRANT / "skills")
    assert [name for name, _ in loaded] == [f"qdrant-scaling-eval-{i}" for i in range(1, 8)]
    specs = [spec for _, spec in loaded]
    assert all(not isinstance(s, PromptError) for s in specs)
    first = specs[0]
    assert not isinstance(first, PromptError)
    assert first.family == "qdrant-scaling" and first.skill_path == "qdrant-scaling/SKILL.md"
    assert [i.key for i in first.rubric] == [f"must-{i}" for i in range(1, 6)]
    assert first.rubric[0].text == "Mentions quantization as a way to reduce memory usage"
    assert first.judge_context.startswith("Should recommend vertical scaling first")
    assert sum(len(s.rubric) for s in specs if not isinstance(s, PromptError)) == 37
    text = judge_prompt_text(first)
    assert text.startswith(first.prompt) and CONTEXT_HEADER in text
    assert text.endswith(first.judge_context)


def _skills(tmp_path: Path) -> Path:
    shutil.copytree(DEMO_PROJECT / "skills", tmp_path / "skills")
    return tmp_path / "skills"


def test_one_bad_eval_leaves_the_others(tmp_path: Path) -> None:
    skills = _skills(tmp_path)
    path = skills / "git-bisect" / "evals" / "evals.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"skill_name": "git-bisect", "evals": [
        {"id": 1, "prompt": "p", "expectations": ["a"]},
        {"id": 2, "prompt": "p", "expectations": []},
        {"id": 1, "prompt": "p", "expectations": ["b"]},
        {"id": 4, "prompt": "p", "expectations": ["c"], "files": ["missing.txt"]},
        {"id": 5, "prompt": "p", "expectations": ["a"], "assertions": ["other"]},
        {"prompt": "p", "expectations": ["a"]},
    ]}))
    loaded = dict(load_evals(path, skills))
    assert not isinstance(loaded["git-bisect-eval-1"], PromptError)
    errors = {name: str(v) for name, v in loaded.items() if isinstance(v, PromptError)}
    assert "'evals[1].expectations'" in errors["git-bisect-eval-2"]
    assert "used twice" in errors["git-bisect-eval-1-at-3"]
    assert "'evals[3].files[0]'" in errors["git-bisect-eval-4"]
    assert "'evals[4].assertions'" in errors["git-bisect-eval-5"]
    assert "'evals[5].id'" in errors["git-bisect-eval-6"]
    assert all(str(path) in e for e in errors.values())


def test_an_input_file_linking_out_of_the_skill_folder_is_refused(tmp_path: Path) -> None:
    """As the runners' install policy: a link inside the folder is fine, one that leaves it
    would put a host file in the agent's working directory."""
    skills = _skills(tmp_path)
    own = skills / "git-bisect" / "evals"
    (own / "files").mkdir(parents=True)
    (own / "files" / "real.log").write_text("log\n")
    (own / "files" / "alias.log").symlink_to("real.log")
    outside = tmp_path / "host-secret.txt"
    outside.write_text("secret\n")
    (own / "files" / "leak.log").symlink_to(outside)
    (own / "evals.json").write_text(json.dumps({"skill_name": "git-bisect", "evals": [
        {"id": 1, "prompt": "p", "expectations": ["a"], "files": ["evals/files/alias.log"]},
        {"id": 2, "prompt": "p", "expectations": ["a"], "files": ["evals/files/leak.log"]},
    ]}))
    loaded = dict(load_evals(own / "evals.json", skills))
    kept = loaded["git-bisect-eval-1"]
    assert not isinstance(kept, PromptError)
    assert kept.files == (("evals/files/alias.log", str((own / "files" / "real.log").resolve())),)
    refused = loaded["git-bisect-eval-2"]
    assert isinstance(refused, PromptError)
    assert "'evals[1].files[0]'" in str(refused) and "link leaving" in str(refused)


@pytest.mark.parametrize(("content", "field"), [
    ({"skill_name": "no-such-skill", "evals": [{"id": 1, "prompt": "p",
                                                "expectations": ["a"]}]}, "'skill_name'"),
    ({"evals": [{"id": 1, "prompt": "p", "expectations": ["a"]}]}, "'skill_name'"),
    ({"skill_name": "git-bisect", "evals": []}, "'evals'"),
    ([1, 2], "'(file)'"),
])
def test_file_level_problems_raise(tmp_path: Path, content: Any, field: str) -> None:
    skills = _skills(tmp_path)
    path = tmp_path / "evals" / "evals.json"  # repository level: the skill comes by name
    path.parent.mkdir()
    path.write_text(json.dumps(content))
    with pytest.raises(PromptError, match=re.escape(field)):
        load_evals(path, skills)


def test_a_skill_folder_file_must_name_its_own_skill(tmp_path: Path) -> None:
    skills = _skills(tmp_path)
    path = skills / "git-bisect" / "evals" / "evals.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"skill_name": "python-packaging",
                                "evals": [{"id": 1, "prompt": "p", "expectations": ["a"]}]}))
    with pytest.raises(PromptError, match="sits in the skill folder 'git-bisect'"):
        load_evals(path, skills)


# -- collected by the plugin -------------------------------------------------------------------


def _env(server_url: str = "http://127.0.0.1:9") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "ANTHROPIC_"))}
    env.update(ANTHROPIC_BASE_URL=server_url, ANTHROPIC_API_KEY=KEY, PYTHONPATH=str(REPO))
    return env


def _pytest(root: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "--skill-lift", "-p",
                           "no:cacheprovider", *args], cwd=root, env=env, capture_output=True,
                          text=True, timeout=600)


@pytest.mark.slow
@pytest.mark.skipif(bundled_claude() is None, reason="claude-agent-sdk (bundled CLI) missing")
def test_the_qdrant_repository_collects(tmp_path: Path) -> None:
    """The qdrant/skills layout (skills/, evals/evals.json, no trigger files) collects the
    repository's evals.json beside its prompt files, and the ini switch turns it off."""
    shutil.copytree(QDRANT / "skills", tmp_path / "skills")
    shutil.copytree(QDRANT / "evals", tmp_path / "evals")
    (tmp_path / "evals" / "test-prompts").mkdir()
    shutil.copy(QDRANT / "test-prompts" / "qdrant-edge.json", tmp_path / "evals" /
                "test-prompts")
    ini = "[pytest]\nskill_lift_models = haiku\nskill_lift_reps = 2\n"
    (tmp_path / "pytest.ini").write_text(ini)
    result = _pytest(tmp_path, _env(), "--collect-only", "-q", "-p", "no:xdist")
    ids = [ln for ln in result.stdout.splitlines() if "::" in ln]
    evals_ids = [i for i in ids if i.startswith("evals/evals.json::")
                 and not i.endswith("::invoked")]
    assert len(evals_ids) == 37 * 2 * 2, result.stdout[-2000:]  # items × conditions × reps
    invoked = [i for i in ids if i.startswith("evals/evals.json::") and i.endswith("::invoked")]
    evals = {i.split("::")[1] for i in evals_ids}
    assert len(invoked) == len(evals) * 2  # one per with-skill run: evals × reps
    assert ("evals/evals.json::qdrant-scaling-eval-7::haiku::with-skill::r2::must-7"
            in evals_ids)
    assert any(i.startswith("evals/test-prompts/qdrant-edge.json::") for i in ids)
    (tmp_path / "pytest.ini").write_text(ini + "skill_lift_skill_creator_evals = false\n")
    off = _pytest(tmp_path, _env(), "--collect-only", "-q", "-p", "no:xdist")
    assert not [ln for ln in off.stdout.splitlines() if ln.startswith("evals/evals.json")]
    assert "qdrant-edge.json::" in off.stdout


@pytest.mark.slow
def test_an_eval_named_like_a_prompt_file_is_a_collection_error(tmp_path: Path) -> None:
    """Run ids and directories use the prompt's name: an eval whose name a prompt file
    already has is an error naming both, and the file's other evals still collect."""
    skills = _skills(tmp_path)
    own = skills / "git-bisect" / "evals"
    own.mkdir()
    (own / "evals.json").write_text(json.dumps({"skill_name": "git-bisect", "evals": [
        {"id": 1, "prompt": "p", "expectations": ["a"]},
        {"id": 2, "prompt": "p", "expectations": ["b"]}]}))
    prompts = tmp_path / "evals" / "test-prompts"
    prompts.mkdir(parents=True)
    (prompts / "git-bisect-eval-1.json").write_text(json.dumps({
        "name": "git-bisect-eval-1", "prompt": "q", "skill": "git-bisect/SKILL.md",
        "rubric": [{"type": "must", "text": "x"}]}))
    (tmp_path / "pytest.ini").write_text("[pytest]\nskill_lift_models = haiku\n"
                                         "skill_lift_reps = 1\n")
    result = _pytest(tmp_path, _env(), "--collect-only", "-q", "-p", "no:xdist")
    out = result.stdout
    assert "makes the eval's name 'git-bisect-eval-1', already the name of the prompt file" \
        in out and "git-bisect-eval-1.json" in out, out[-3000:]
    ids = [ln for ln in out.splitlines() if ln.startswith("skills/git-bisect/evals/")]
    assert ids and all("::git-bisect-eval-2::" in i for i in ids)
    assert any(ln.startswith("evals/test-prompts/git-bisect-eval-1.json::") for ln in
               out.splitlines())


@pytest.fixture(scope="module")
def evals_week(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Both evals.json files through the real CLI and the judge (one model, one rep), under
    ``-n 2``: the workers grade through the controller's judge, context included."""
    from pytest_skilllift.testing import Reply, StandIn
    from pytest_skilllift.testing.agent_script import skill_agent, tool_results, user_prompt
    from pytest_skilllift.testing.judge_script import keyword_judge

    def reads_named_files(body: dict[str, Any]) -> Reply:
        # A model that opens the file the task names (from the working directory) first.
        m = re.search(r"(evals/files/\S+\.log)", user_prompt(body))
        if m and tool_results(body) == 0:
            return Reply.tool("Bash", {"command": f"cat {m.group(1)}",
                                       "description": "Read the log"})
        return skill_agent(body)

    root = tmp_path_factory.mktemp("evals")
    skills = _skills(root)
    own = skills / "git-bisect" / "evals"
    (own / "files").mkdir(parents=True)
    (own / "evals.json").write_text(json.dumps(GIT_BISECT_EVALS))
    (own / "files" / "bisect.log").write_text(f"bad: 4f2a1c0 good: 9e8d7b6 {LOG_MARKER}\n")
    (root / "evals").mkdir()
    (root / "evals" / "evals.json").write_text(json.dumps(REPO_EVALS))
    (root / "pytest.ini").write_text("[pytest]\nskill_lift_models = haiku=claude-haiku-4-5\n"
                                     "skill_lift_reps = 1\nskill_lift_out = week\n")
    with StandIn(agent=reads_named_files, judge=keyword_judge) as server:
        result = _pytest(root, _env(server.base_url), "-n", "2", "-rA")
        yield {"root": root, "week": root / "week", "result": result,
               "judge_bodies": server.bodies("judge"), "judge": server.count("judge")}


@pytest.mark.cli
@pytest.mark.skipif(bundled_claude() is None, reason="claude-agent-sdk (bundled CLI) missing")
def test_evals_json_scored_end_to_end(evals_week: dict[str, Any]) -> None:
    result, week = evals_week["result"], evals_week["week"]
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    for cond in ("no-skill", "with-skill"):
        for i in (1, 2):
            assert (f"skills/git-bisect/evals/evals.json::git-bisect-eval-1::haiku::{cond}"
                    f"::r1::must-{i}") in out
            assert (f"evals/evals.json::python-packaging-eval-pyproject::haiku::{cond}::r1::"
                    f"must-{i}") in out
    assert evals_week["judge"] == 4  # one judge call per run
    scores = (week / "scores.csv").read_text().splitlines()
    assert len(scores) == 1 + 8 and all(",must," in ln for ln in scores[1:])
    card = json.loads((week / "scorecard.json").read_text())
    assert card["models"]["haiku"]["n_prompts"] == 2
    assert card["models"]["haiku"]["must_lift"] > 0


@pytest.mark.cli
@pytest.mark.skipif(bundled_claude() is None, reason="claude-agent-sdk (bundled CLI) missing")
def test_files_reach_the_working_dir_and_expected_output_only_the_judge(
        evals_week: dict[str, Any]) -> None:
    week = evals_week["week"]
    for cond in ("no-skill", "with-skill"):  # both arms get the input file
        transcript = (week / f"git-bisect-eval-1-haiku-{cond}-r1-week" / "stdout.txt")
        assert LOG_MARKER in transcript.read_text()
    bodies = evals_week["judge_bodies"]
    shown = [json.dumps(b["messages"]) for b in bodies]
    expected = GIT_BISECT_EVALS["evals"][0]["expected_output"]
    with_context = [s for s in shown if expected in s]
    assert len(with_context) == 2 and all(CONTEXT_HEADER in s for s in with_context)
    for s in with_context:  # context, not an item: the rubric holds the two expectations
        rubric = s[s.index("<rubric-"):]  # the section's tag carries the request's boundary
        assert rubric.count("[must: met|missing]") == 2 and expected not in rubric
    # The agent never sees expected_output.
    assert not any(expected in (week / d / "stdout.txt").read_text()
                   for d in os.listdir(week) if (week / d / "stdout.txt").is_file())


@pytest.mark.cli
@pytest.mark.skipif(bundled_claude() is None, reason="claude-agent-sdk (bundled CLI) missing")
def test_skilllift_judge_regrades_evals_with_their_expected_output(
        evals_week: dict[str, Any]) -> None:
    """``skilllift judge`` rebuilds an eval's run from the evals.json the week recorded: the
    same expectations as must items, expected_output again only as the judge's context."""
    from pytest_skilllift.run.regrade import plan_regrade

    plan = plan_regrade(evals_week["week"], fresh=True)
    assert plan.unreadable == [] and len(plan.specs) == 4  # 2 evals × 2 arms
    by_name = {(s.prompt.name, s.condition): s for s in plan.specs}
    spec = by_name[("git-bisect-eval-1", "with-skill")]
    assert [i.text for i in spec.prompt.rubric] == GIT_BISECT_EVALS["evals"][0]["expectations"]
    assert spec.prompt.judge_context == GIT_BISECT_EVALS["evals"][0]["expected_output"]
    assert CONTEXT_HEADER in judge_prompt_text(spec.prompt)
    other = by_name[("python-packaging-eval-pyproject", "no-skill")]
    assert [i.key for i in other.prompt.rubric] == ["must-1", "must-2"]


def test_a_regrade_names_an_eval_that_left_its_file(tmp_path: Path) -> None:
    from pytest_skilllift.run.regrade import RegradeError, spec_from_record

    path = tmp_path / "evals.json"
    path.write_text(json.dumps(GIT_BISECT_EVALS))
    record = {"prompt": "git-bisect-eval-7", "prompt_path": str(path), "model": "haiku",
              "condition": "with-skill", "rep": 1, "run_id": "r"}
    with pytest.raises(RegradeError, match=r"field 'evals': holds no eval collected as "
                                           r"'git-bisect-eval-7'"):
        spec_from_record(record)
    record["prompt"] = "git-bisect-eval-1"
    assert spec_from_record(record).prompt.judge_context.startswith("Bisects with")


# -- export -----------------------------------------------------------------------------------


@pytest.mark.cli
@pytest.mark.skipif(bundled_claude() is None, reason="claude-agent-sdk (bundled CLI) missing")
def test_export_reads_back_as_skill_creator(evals_week: dict[str, Any], tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "export"
    assert skilllift(["export", str(evals_week["week"]), "--format", "skill-creator",
                      str(out)]) == 0
    assert "wrote 4 grading.json and 2 benchmark.json" in capsys.readouterr().out
    gradings = sorted(out.rglob("grading.json"))
    assert [g.relative_to(out).as_posix() for g in gradings] == [
        "git-bisect/haiku/eval-1/with_skill/run-1/grading.json",
        "git-bisect/haiku/eval-1/without_skill/run-1/grading.json",
        "python-packaging/haiku/eval-pyproject/with_skill/run-1/grading.json",
        "python-packaging/haiku/eval-pyproject/without_skill/run-1/grading.json",
    ]
    for g in gradings:
        data = json.loads(g.read_text())
        assert check_schema(data, GRADING_SCHEMA) == []
        s = data["summary"]
        assert s["total"] == len(data["expectations"]) == 2
        assert s["passed"] == sum(e["passed"] for e in data["expectations"])
        assert s["pass_rate"] == pytest.approx(s["passed"] / s["total"])
    ws = json.loads(gradings[0].read_text())
    assert [e["text"] for e in ws["expectations"]] == GIT_BISECT_EVALS["evals"][0][
        "expectations"]
    assert all(e["passed"] and e["evidence"] for e in ws["expectations"])
    # a failed expectation carries the judge's reason (the scripted judge names what is absent)
    failed = [e for g in gradings for e in json.loads(g.read_text())["expectations"]
              if not e["passed"]]
    assert failed and all(e["evidence"].startswith("judge verdict: missing — the answer never "
                                                   "mentions ") for e in failed), failed
    bench = json.loads((out / "git-bisect" / "haiku" / "benchmark.json").read_text())
    assert check_schema(bench, BENCHMARK_SCHEMA) == []
    assert {r["configuration"] for r in bench["runs"]} == {"with_skill", "without_skill"}
    assert bench["metadata"]["evals_run"] == [1]
    summary = bench["run_summary"]
    assert summary["with_skill"]["pass_rate"]["mean"] == 1.0
    lift = summary["with_skill"]["pass_rate"]["mean"] - summary["without_skill"]["pass_rate"][
        "mean"]
    assert summary["delta"]["pass_rate"] == f"{lift:+.2f}"
    meta = json.loads((out / "python-packaging" / "haiku" / "eval-pyproject" /
                       "eval_metadata.json").read_text())
    assert meta["eval_id"] == "pyproject" and meta["prompt"] == REPO_EVALS["evals"][0]["prompt"]
    answer = out / "git-bisect" / "haiku" / "eval-1" / "with_skill" / "run-1" / "outputs"
    assert "git bisect" in (answer / "answer.md").read_text()


@pytest.mark.slow
def test_export_of_a_qdrant_pipeline_week(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """The real qdrant week (CSVs only, no run folders) exports too: every graded run."""
    out = tmp_path / "export"
    assert skilllift(["export", str(QDRANT / "weekly" / "20260808"), "--format",
                      "skill-creator", str(out)]) == 0
    assert "wrote 208 grading.json" in capsys.readouterr().out
    bench = json.loads((out / "qdrant-scaling" / "sonnet" / "benchmark.json").read_text())
    assert check_schema(bench, BENCHMARK_SCHEMA) == []
    assert bench["metadata"]["evals_run"] == list(range(1, 9))  # its 8 prompts
    assert len(bench["runs"]) == 8 * 2 * 2
    assert any("tokens unknown for 16 of 16 runs" in n for n in bench["notes"])


def test_export_refuses_a_non_week(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert skilllift(["export", str(tmp_path), "--format", "skill-creator",
                      str(tmp_path / "o")]) == 2
    assert "not a week directory (missing manifest.csv, scores.csv)" in capsys.readouterr().err
