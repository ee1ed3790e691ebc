"""End to end: one week with a label per agent, every real CLI against the stand-in.

Codex CLI, Gemini CLI and OpenCode (installed from npm: ``bash .ci/run`` does it) and the
bundled Claude Code CLI run headless in fresh HOMEs against one scripted stand-in speaking
each agent's API (Responses, Gemini ``streamGenerateContent``, Anthropic Messages). The
scripted agent reaches a skill only when the CLI listed it, through the agent's skill tool
or by reading the listed SKILL.md (one label per way), so what the week measures follows
from the script: a test that passes here could fail for a real reason.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.config import DEMO_PROJECT
from pytest_skilllift.runners.agents import find_cli
from pytest_skilllift.runners.claude import bundled_claude
from pytest_skilllift.testing.agent_script import (
    LoadedSkill,
    answer_from_skill,
    generic_answer,
    listed_skills,
    make_agent,
)
from pytest_skilllift.testing.dialects import CODEX, GEMINI, OPENCODE
from pytest_skilllift.testing.judge_script import keyword_judge
from pytest_skilllift.testing.server import StandIn

PROMPT = "git-bisect-regression.json"
FAMILY = "git-bisect"
KEY = "sk-agents-test-SECRET-n0t-0n-d15k"
#: label → (model, activation the script's route gives it).
LABELS: dict[str, tuple[str, str]] = {
    "claude": ("claude-sonnet-4-5", "skill_tool"),
    "gpt": ("codex:gpt-5.5", "file_read"),  # Codex has no skill tool: it reads the file
    "gem": ("gemini-cli:gemini-2.5-flash", "skill_tool"),
    "gemread": ("gemini-cli:gemini-2.5-pro", "file_read"),
    "oc": ("opencode:anthropic/claude-sonnet-4-5", "skill_tool"),
    "ocread": ("opencode:anthropic/claude-haiku-4-5", "file_read"),
}
#: The other agents' models the script answers by reading the SKILL.md.
READ_MODELS = ("gemini-2.5-pro", "claude-haiku-4-5")

pytestmark = [
    pytest.mark.cli, pytest.mark.slow,
    pytest.mark.skipif(bundled_claude() is None, reason="claude-agent-sdk (bundled CLI) missing"),
    pytest.mark.skipif(not all(find_cli(a) for a in ("codex", "gemini-cli", "opencode")),
                       reason="the npm agent CLIs are not installed (bash .ci/run installs "
                              "them)"),
    pytest.mark.skipif(shutil.which("rg") is None, reason="OpenCode needs ripgrep (rg)"),
]


def route() -> Any:
    """The skill tool for most models; a read of the listed SKILL.md for two of them."""
    by_tool, by_read = make_agent("skill"), make_agent("read")

    def agent(body: dict[str, Any]) -> Any:
        model = str(body.get("model") or "")
        read = body.get("skill_dialect") and any(m in model for m in READ_MODELS)
        return (by_read if read else by_tool)(body)

    return agent


@pytest.fixture(scope="module")
def week(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The week, run once for the module's tests (about a minute on two cores)."""
    root = tmp_path_factory.mktemp("agents-week")
    shutil.copytree(DEMO_PROJECT / "skills", root / "skills")
    (root / "evals" / "test-prompts").mkdir(parents=True)
    shutil.copy(DEMO_PROJECT / "evals" / "test-prompts" / PROMPT, root / "evals" / "test-prompts")
    models = ",".join(f"{label}={model}" for label, (model, _) in LABELS.items())
    (root / "pytest.ini").write_text(f"[pytest]\nskill_lift_models = {models}\n"
                                     "skill_lift_reps = 1\nskill_lift_out = week\n")
    api = StandIn(agent=route(), judge=keyword_judge)
    url = api.start()
    env = dict(os.environ, ANTHROPIC_BASE_URL=url, OPENAI_BASE_URL=url + "/v1",
               GOOGLE_GEMINI_BASE_URL=url, ANTHROPIC_API_KEY=KEY, OPENAI_API_KEY=KEY,
               GEMINI_API_KEY=KEY)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "--skill-lift", "-p", "no:cacheprovider", "-q",
             "-n", "2"], cwd=root, env=env, capture_output=True, text=True, timeout=900)
    finally:
        api.stop()
    out = root / "week"
    with (out / "manifest.csv").open(newline="") as fh:
        manifest = {(r["model"], r["condition"]): r for r in csv.DictReader(fh)}
    return {"root": root, "out": out, "manifest": manifest, "api": api,
            "stdout": done.stdout + done.stderr, "rc": done.returncode}


def test_every_agent_runs_and_activation_is_detected_both_ways(week: dict[str, Any]) -> None:
    manifest = week["manifest"]
    assert len(manifest) == 2 * len(LABELS), week["stdout"][-3000:]
    for label, (model, activation) in LABELS.items():
        with_skill, no_skill = manifest[(label, "with-skill")], manifest[(label, "no-skill")]
        assert with_skill["run_status"] == "ok", (label, with_skill["run_error"])
        assert no_skill["run_status"] == "ok", (label, no_skill["run_error"])
        assert with_skill["model_id"] == model
        assert (with_skill["skill_available"], with_skill["skill_activation"]) == (
            "1", activation), label
        assert with_skill["reached_leaf"] == "1" and with_skill["signals_ok"] == "1"
        assert with_skill["invocation_status"] == "VERIFIED", label
        assert (no_skill["skill_available"], no_skill["skill_activation"]) == ("0", "none")
        assert with_skill["cli_version"] and with_skill["num_turns"] not in ("", "1")


def test_the_answers_and_the_lift_follow_from_the_script(week: dict[str, Any]) -> None:
    prompt = json.loads((DEMO_PROJECT / "evals" / "test-prompts" / PROMPT).read_text())["prompt"]
    body = (DEMO_PROJECT / "skills" / FAMILY / "SKILL.md").read_text()
    expected_with = answer_from_skill(prompt, LoadedSkill(body, "read"), FAMILY).strip()
    for label in LABELS:
        run_dir = week["out"] / week["manifest"][(label, "with-skill")]["run_id"]
        answer = json.loads((run_dir / "run.json").read_text())["final_answer"].strip()
        # Every agent delivered the same SKILL.md text, so the script gave the same answer
        # (a skill tool strips the frontmatter, which the answer never quotes).
        assert answer == expected_with, label
        run_dir = week["out"] / week["manifest"][(label, "no-skill")]["run_id"]
        answer = json.loads((run_dir / "run.json").read_text())["final_answer"].strip()
        assert answer == generic_answer(prompt).strip(), label
    card = json.loads((week["out"] / "scorecard.json").read_text())
    text = json.dumps(card)
    for label in LABELS:
        assert f'"{label}"' in text
    with (week["out"] / "scores.csv").open(newline="") as fh:
        scores = list(csv.DictReader(fh))
    met = {(m, c): sum(r["verdict"] == "met" for r in scores
                       if r["model"] == m and r["condition"] == c)
           for m in LABELS for c in ("with-skill", "no-skill")}
    # Same answers, same grades: the lift is the same for every agent, and positive.
    assert len({met[(m, "with-skill")] - met[(m, "no-skill")] for m in LABELS}) == 1
    assert met[("gpt", "with-skill")] > met[("gpt", "no-skill")]


def test_no_skill_requests_carry_no_skill_listing(week: dict[str, Any]) -> None:
    api: StandIn = week["api"]
    dialects = {"codex": CODEX, "gemini-cli": GEMINI, "opencode": OPENCODE}
    for name, dialect in dialects.items():
        bodies = api.bodies("agent", api=name)
        listing = [FAMILY in listed_skills(dialect.canonical(b)) for b in bodies]
        labels = [lbl for lbl, (m, _) in LABELS.items() if m.startswith(name + ":")]
        # A no-skill run answers in one request, which lists no skill; a with-skill run
        # makes two (the skill, then the answer), both listing it.
        assert listing.count(False) == len(labels), name
        assert listing.count(True) == 2 * len(labels), name
        for body, listed in zip(bodies, listing, strict=True):
            if not listed:
                assert f"{FAMILY}/SKILL.md" not in json.dumps(body), name


def test_keys_never_reach_the_week_and_each_agent_gets_only_its_own(
        week: dict[str, Any]) -> None:
    for path in week["out"].rglob("*"):
        if path.is_file():
            assert KEY not in path.read_text(errors="replace"), path
    week_json = json.loads((week["out"] / "week.json").read_text())
    clis = week_json["identity"]["agent_clis"]
    assert set(clis) == {"codex", "gemini-cli", "opencode"} and all(clis.values())


def test_k_selects_an_agent(week: dict[str, Any]) -> None:
    done = subprocess.run([sys.executable, "-m", "pytest", "--skill-lift", "-p",
                           "no:cacheprovider", "--collect-only", "-q", "-k", "codex"],
                          cwd=week["root"], capture_output=True, text=True, timeout=120)
    ids = [ln for ln in done.stdout.splitlines() if "::" in ln]
    assert ids and all("::gpt::" in i for i in ids), done.stdout[-2000:]
    done = subprocess.run([sys.executable, "-m", "pytest", "--skill-lift", "-p",
                           "no:cacheprovider", "--collect-only", "-q", "-m",
                           "skill_lift(agent='gemini-cli', family='git-bisect')"],
                          cwd=week["root"], capture_output=True, text=True, timeout=120)
    ids = [ln for ln in done.stdout.splitlines() if "::" in ln]
    assert ids and {i.split("::")[1] for i in ids} == {"gem", "gemread"}, done.stdout[-2000:]


def test_trigger_tests_run_another_agent(tmp_path: Path) -> None:
    """Trigger tests through Codex CLI: the family fires (a read of its listed SKILL.md) for a
    matching query and stays quiet for an unrelated one."""
    shutil.copytree(DEMO_PROJECT / "skills", tmp_path / "skills")
    (tmp_path / "evals" / "triggers").mkdir(parents=True)
    (tmp_path / "evals" / "triggers" / "git-bisect.json").write_text(json.dumps({
        "skill": "git-bisect", "queries": [
            {"query": "A regression appeared between two versions; find the commit that "
                      "introduced it with git bisect.", "should_trigger": True},
            {"query": "What is a good recipe for banana bread?", "should_trigger": False}]}))
    (tmp_path / "pytest.ini").write_text("[pytest]\nskill_lift_models = gpt=codex:gpt-5.5\n"
                                         "skill_lift_reps = 1\nskill_lift_out = week\n")
    with StandIn(agent=make_agent("skill"), judge=keyword_judge) as api:
        env = dict(os.environ, OPENAI_BASE_URL=api.base_url + "/v1", OPENAI_API_KEY=KEY,
                   ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=api.base_url)
        done = subprocess.run([sys.executable, "-m", "pytest", "--skill-lift", "-p",
                               "no:cacheprovider", "-rA", "-p", "no:xdist"], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=300)
    assert "PASSED evals/triggers/git-bisect.json::gpt::q1::trigger" in done.stdout, \
        done.stdout[-3000:]
    assert "PASSED evals/triggers/git-bisect.json::gpt::q2::trigger" in done.stdout
    with (tmp_path / "week" / "triggers" / "triggers.csv").open(newline="") as fh:
        rows = {r["query_index"]: r for r in csv.DictReader(fh)}
    assert (rows["1"]["triggered"], rows["2"]["triggered"]) == ("1", "0")
    assert rows["1"]["run_status"] == rows["2"]["run_status"] == "ok"


def test_shards_merge_batch_judging_and_baseline_reuse_take_any_agent(tmp_path: Path) -> None:
    """A Codex week in two shards graded through the Message Batches API, merged, then a
    second week reusing its no-skill runs (the codex CLI version is part of the key)."""
    from pytest_skilllift.cli.main import main as skilllift

    shutil.copytree(DEMO_PROJECT / "skills", tmp_path / "skills")
    (tmp_path / "evals" / "test-prompts").mkdir(parents=True)
    for name in (PROMPT, "python-packaging-pyproject.json"):
        shutil.copy(DEMO_PROJECT / "evals" / "test-prompts" / name,
                    tmp_path / "evals" / "test-prompts")
    (tmp_path / "pytest.ini").write_text("[pytest]\nskill_lift_models = gpt=codex:gpt-5.5\n"
                                         "skill_lift_reps = 1\n")
    with StandIn(agent=make_agent("skill"), judge=keyword_judge) as api:
        env = dict(os.environ, OPENAI_BASE_URL=api.base_url + "/v1", OPENAI_API_KEY=KEY,
                   ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=api.base_url)

        def week(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([sys.executable, "-m", "pytest", "--skill-lift", "-p",
                                   "no:cacheprovider", "-q", "-p", "no:xdist", *args],
                                  cwd=tmp_path, env=env, capture_output=True, text=True,
                                  timeout=300)

        for i in (1, 2):
            done = week(f"--skill-lift-shard={i}/2", f"--skill-lift-out=shards/{i}/w1",
                        "--skill-lift-judge-batch", "--skill-lift-judge-batch-poll=0.05")
            assert done.returncode in (0, 1), done.stdout[-3000:]  # no-skill items fail
        batched = [r for r in api.requests if r.kind == "judge" and r.path.endswith("batches")]
        assert batched and not [r for r in api.requests
                                if r.kind == "judge" and r.path.endswith("/v1/messages")]
        merged = tmp_path / "merged" / "w1"
        assert skilllift(["merge", str(merged), str(tmp_path / "shards/1/w1"),
                          str(tmp_path / "shards/2/w1"), "--no-plots"]) == 0
        with (merged / "manifest.csv").open(newline="") as fh:
            first = {(r["prompt"], r["condition"]): r for r in csv.DictReader(fh)}
        assert len(first) == 4 and {r["run_status"] for r in first.values()} == {"ok"}
        assert {r["skill_activation"] for k, r in first.items() if k[1] == "with-skill"} == {
            "file_read"}
        agent_calls = api.count("agent")
        done = week("--skill-lift-out=w2", f"--skill-lift-baseline-from={merged}")
        # Only the with-skill runs called the model again (two requests each).
        assert api.count("agent") - agent_calls == 4, done.stdout[-3000:]
    for prompt in (PROMPT, "python-packaging-pyproject.json"):
        name = json.loads((DEMO_PROJECT / "evals" / "test-prompts" / prompt).read_text())["name"]
        run = json.loads((tmp_path / "w2" / f"{name}-gpt-no-skill-r1-w2" / "run.json")
                         .read_text())
        assert run["baseline_from"], run



def test_score_depth_deep_runs_another_agent(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """``skilllift score --depth deep --model codex:gpt-5.5``: the Monte Carlo runs go through
    Codex CLI, and its read of the skill counts as activation."""
    from pytest_skilllift.testing.skill_judge_script import make_skill_judge, mc_agent

    from .test_lint_depth_mc import DEMO, _main

    prompts = tmp_path / "prompts.txt"
    prompts.write_text("How do I calibrate widget torque?\n")
    with StandIn(agent=mc_agent(), judge=make_skill_judge()) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", api.base_url + "/v1")
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        buf = io.StringIO()
        with contextlib.redirect_stderr(io.StringIO()):
            rc = _main(["score", str(DEMO), "--depth", "deep", "--output", "json",
                        "--out", str(tmp_path / "out"), "--judge-model", "claude-opus-4-6",
                        "--mc-prompts", str(prompts), "--mc-runs", "2",
                        "--model", "codex:gpt-5.5"], buf)
        assert {r.api for r in api.requests if r.kind == "agent"} == {"codex"}
    report = json.loads(buf.getvalue())
    assert rc == 0
    figures = next(x for x in report["layers"] if x["layer"] == "monte_carlo")["figures"]
    assert figures["n_runs"] == 2 and figures["triggering"]["activated"] == 2
    assert figures["failure_rate"]["statuses"] == {"ok": 2}
