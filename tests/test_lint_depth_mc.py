"""Monte Carlo: figures on a scripted run set, from a week directory, and through the real CLI
against the stand-in (a handful of runs, shared by the assertions)."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import statistics
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.cli import score as cli
from pytest_skilllift.lint.depth_stats import clopper_pearson
from pytest_skilllift.lint.montecarlo import (
    HARNESS_ERROR,
    MCPromptError,
    SimRun,
    figures,
    load_mc_prompts,
    runs_from_week,
    schedule,
)
from pytest_skilllift.report.stats import wilson_interval
from pytest_skilllift.runners.claude import bundled_claude
from pytest_skilllift.testing import StandIn
from pytest_skilllift.testing.skill_judge_script import make_skill_judge, mc_agent

from .docker_env import docker_problem

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "tests" / "fixtures" / "skills" / "demo-widgets"
QDRANT_WEEK = REPO / "tests" / "fixtures" / "data" / "qdrant-skills" / "weekly" / "20260808"
CLAUDE = bundled_claude()


def _run(i: int, should: bool, act: bool, status: str, tokens: int | None,
         quality: float | None = None, **kw: Any) -> SimRun:
    return SimRun(index=i, prompt=f"p{i}", should_trigger=should, status=status, activated=act,
                  activation="skill_tool" if act else "none", tokens=tokens, quality=quality,
                  **kw)


SCRIPTED = [
    _run(1, True, True, "ok", 4000, 0.8),
    _run(2, True, True, "ok", 5000, 0.6),
    _run(3, True, True, "ok", 6000, 1.0),
    _run(4, True, True, "ok", 3000, None, quality_error="unusable judge reply: x"),
    _run(5, True, True, "ok", 7000, 0.6),
    _run(6, True, False, "ok", 2000),
    _run(7, True, True, "timeout", None),
    _run(8, True, False, "errored", 100),
    _run(9, False, True, "ok", 1000),
    _run(10, False, False, "ok", 1500),
    _run(11, True, False, HARNESS_ERROR, None, reason="could not start 'claude'"),
]


def test_figures_on_a_scripted_run_set() -> None:
    f = figures(SCRIPTED)
    assert f.n_runs == 10 and f.excluded == ["run 11: could not start 'claude'"]
    assert (f.n_activated, f.n_should, f.activation_rate) == (6, 8, 0.75)
    assert f.activation_ci == pytest.approx(wilson_interval(6, 8))
    assert (f.false_activations, f.n_should_not, f.false_activation_rate) == (1, 2, 0.5)
    assert (f.n_failed, f.failure_rate) == (2, 0.2)
    assert f.failure_ci == pytest.approx(clopper_pearson(2, 10))
    assert f.statuses == {"ok": 8, "timeout": 1, "errored": 1}
    assert f.qualities == [0.8, 0.6, 1.0, 0.6] and f.quality_unjudged == 1
    assert f.mean_quality == pytest.approx(0.75)
    cv = statistics.pstdev([0.8, 0.6, 1.0, 0.6]) / 0.75
    assert f.cv == pytest.approx(cv) and cv == pytest.approx(0.0275 ** 0.5 / 0.75)
    assert f.tokens is not None and f.tokens["median"] == 3500 and f.tokens["runs"] == 8
    assert f.efficiency_norm == pytest.approx(1 - 3500 / 8000)
    expected = 0.40 * 0.75 + 0.30 * (1 - cv) + 0.20 * (1 - 0.2) + 0.10 * (1 - 3500 / 8000)
    assert f.mc_score == pytest.approx(expected) and f.mc_dropped == []
    assert f.dimension_scores() == pytest.approx({
        "triggering_accuracy": 0.75, "output_quality": 0.75, "robustness": 0.8,
        "token_efficiency": 1 - 3500 / 8000})
    iv = f.intervals()
    lo, hi = clopper_pearson(2, 10)
    assert iv["robustness"] == pytest.approx((1 - hi, 1 - lo))
    assert iv["output_quality"] is not None and iv["output_quality"][0] <= 0.75


def test_prompt_files(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("# comment\nfirst\n\nsecond\n")
    assert [p.text for p in load_mc_prompts(tmp_path / "a.txt")] == ["first", "second"]
    (tmp_path / "trig.json").write_text(json.dumps(
        [{"query": "q1", "should_trigger": True}, {"query": "q2", "should_trigger": False}]))
    got = load_mc_prompts(tmp_path / "trig.json")
    assert [(p.text, p.should_trigger) for p in got] == [("q1", True), ("q2", False)]
    (tmp_path / "evals.json").write_text(json.dumps(
        {"skill_name": "x", "evals": [{"id": 1, "prompt": "do it", "expectations": ["e1"]}]}))
    [e] = load_mc_prompts(tmp_path / "evals.json")
    assert e.text == "do it" and e.rubric == ("e1",)
    (tmp_path / "bad.json").write_text(json.dumps([{"prompt": "x", "should_trigger": "yes"}]))
    with pytest.raises(MCPromptError, match=r"bad.json: entry 1: field 'should_trigger'"):
        load_mc_prompts(tmp_path / "bad.json")
    assert [p.text for p in schedule(got, 5)] == ["q1", "q2", "q1", "q2", "q1"]


def _week_expectations(family: str) -> tuple[int, int, list[float]]:
    """Independent reading of the week's CSVs: with-skill runs, activated, must coverage."""
    manifest = list(csv.DictReader((QDRANT_WEEK / "manifest.csv").open()))
    scores = list(csv.DictReader((QDRANT_WEEK / "scores.csv").open()))
    runs = [r for r in manifest if r["condition"] == "with-skill" and r["skill_family"] == family]
    cov = []
    for r in runs:
        if r["skill_activation"] == "none":
            continue
        credits = [float(s["credit"]) for s in scores
                   if (s["prompt"], s["model"], s["condition"], s["rep"], s["item_type"])
                   == (r["prompt"], r["model"], r["condition"], r["rep"], "must")
                   and s["verdict"] in ("met", "missing")]
        cov.append(sum(credits) / len(credits))
    return len(runs), sum(1 for r in runs if r["skill_activation"] != "none"), cov


def test_figures_from_a_week_directory() -> None:
    n, activated, coverage = _week_expectations("qdrant-scaling")
    runs, problems = runs_from_week(QDRANT_WEEK, "qdrant-scaling")
    assert problems == []
    f = figures(runs)
    assert (f.n_runs, f.n_activated) == (n, activated) == (32, 25)
    assert f.activation_rate == pytest.approx(25 / 32)
    assert f.failure_rate == 0.0 and f.failure_ci == pytest.approx(clopper_pearson(0, 32))
    assert sorted(f.qualities) == pytest.approx(sorted(coverage))
    assert f.mean_quality == pytest.approx(statistics.fmean(coverage))
    # The qdrant week keeps no transcripts: tokens unmeasured, and mc_score says so.
    assert f.tokens is None and f.mc_dropped == ["efficiency_norm"]


def _write_week(root: Path) -> Path:
    """A small week in this project's format: run_status, transcripts with usage."""
    week = root / "week"
    week.mkdir()
    cols = ["prompt", "skill_family", "skill_leaf", "model", "condition", "rep", "run_id",
            "exit_code", "skill_available", "skill_activation", "budget_hit", "run_status"]
    rows = [
        ("p1", "fam", "fam/SKILL.md", "m", "with-skill", 1, "r1", 0, 1, "skill_tool", 0, "ok"),
        ("p1", "fam", "fam/SKILL.md", "m", "with-skill", 2, "r2", 0, 1, "none", 0, "ok"),
        ("p2", "fam", "fam/SKILL.md", "m", "with-skill", 1, "r3", 1, 1, "none", 0, "errored"),
        ("p2", "fam", "fam/SKILL.md", "m", "no-skill", 1, "r4", 0, 0, "none", 0, "ok"),
        ("p3", "other", "other/SKILL.md", "m", "with-skill", 1, "r5", 0, 1, "skill_tool", 0,
         "ok"),
    ]
    with (week / "manifest.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(cols)
        w.writerows(rows)
    with (week / "scores.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["prompt", "skill", "model", "condition", "rep", "item_type", "item_text",
                    "verdict", "credit", "contribution", "contested", "evidence_quote"])
        w.writerow(["p1", "fam", "m", "with-skill", 1, "must", "a", "met", 1.0, 1.0, "", "q"])
        w.writerow(["p1", "fam", "m", "with-skill", 1, "must", "b", "missing", 0.0, 0.0, "", ""])
    for rid, tokens in (("r1", (100, 900, 0, 50)), ("r2", (300, 0, 0, 80))):
        (week / rid).mkdir()
        usage = dict(zip(("input_tokens", "cache_read_input_tokens",
                          "cache_creation_input_tokens", "output_tokens"), tokens, strict=True))
        (week / rid / "stdout.txt").write_text(
            json.dumps({"type": "system", "subtype": "init", "skills": ["fam"]}) + "\n"
            + json.dumps({"type": "result", "subtype": "success", "result": "x",
                          "usage": usage}) + "\n")
    return week


def test_week_runs_count_failures_and_tokens(tmp_path: Path) -> None:
    runs, _problems = runs_from_week(_write_week(tmp_path), "fam")
    f = figures(runs)
    assert f.n_runs == 3 and f.n_activated == 1 and f.activation_rate == pytest.approx(1 / 3)
    assert (f.n_failed, f.statuses) == (1, {"ok": 2, "errored": 1})
    assert f.failure_ci == pytest.approx(clopper_pearson(1, 3))
    assert f.qualities == [0.5]  # run r1: one of two must items met
    assert f.tokens is not None and f.tokens["median"] == pytest.approx((1050 + 380) / 2)


# ---------------------------------------------------------------------------------------------
# The real CLI


PROMPTS = [
    {"prompt": "How do I calibrate widget torque?"},
    {"prompt": "How should I size a widget batch for the curing oven?"},
    {"prompt": "Write a limerick about a sleepy cat.", "should_trigger": False},
    {"prompt": "[fail] assemble widgets please"},
]


@pytest.fixture(scope="module")
def deep_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One deep run (4 CLI runs) and its rerun, against one stand-in."""
    if CLAUDE is None:
        pytest.skip("claude-agent-sdk's bundled CLI missing")
    tmp = tmp_path_factory.mktemp("mc")
    prompts = tmp / "prompts.json"
    prompts.write_text(json.dumps(PROMPTS))
    out = tmp / "out"
    argv = ["score", str(DEMO), "--depth", "deep", "--output", "json", "--out", str(out),
            "--judge-model", "claude-opus-4-6", "--mc-prompts", str(prompts), "--mc-runs", "5",
            "--model", "claude-haiku-4-5", "--max-turns", "3", "--timeout", "120",
            "--claude", str(CLAUDE)]
    saved = {k: os.environ.get(k) for k in ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY")}
    result: dict[str, Any] = {"out": out}
    try:
        with StandIn(agent=mc_agent(), judge=make_skill_judge()) as api:
            os.environ["ANTHROPIC_BASE_URL"] = api.base_url
            os.environ["ANTHROPIC_API_KEY"] = "sk-ant-test-mc-0123456789"
            for key in ("first", "again"):
                buf = io.StringIO()
                before = (api.count("agent", ok_only=False), api.count("judge", ok_only=False))
                with contextlib.redirect_stderr(io.StringIO()):
                    rc = _main(argv, buf)
                result[key] = {"rc": rc, "json": json.loads(buf.getvalue()),
                               "agent": api.count("agent", ok_only=False) - before[0],
                               "judge": api.count("judge", ok_only=False) - before[1]}
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    yield result


def _main(argv: list[str], out: Any) -> int:
    import argparse

    from pytest_skilllift.cli import certify as depth_cli

    parser = argparse.ArgumentParser(prog="skilllift")
    sub = parser.add_subparsers()
    cli.add_parser(sub)
    depth_cli.add_parser(sub)
    args = parser.parse_args(argv)
    return int(args.func(args, out))


@pytest.mark.cli
def test_deep_runs_the_real_cli_and_records_the_figures(deep_run: dict[str, Any]) -> None:
    first = deep_run["first"]
    j = first["json"]
    assert first["rc"] == 0
    assert j["depth"] == "deep" and j["layers_ran"] == ["static", "judge", "monte_carlo"]
    mc = next(layer for layer in j["layers"] if layer["layer"] == "monte_carlo")
    f = mc["figures"]
    # 5 runs by repetition: prompts 1-4 then 1 again.
    assert f["n_runs"] == 5 and mc["planned_runs"] == 5
    t = f["triggering"]
    # should-trigger runs: torque, batch, [fail], torque -> the skill agent activates on 3
    assert (t["activated"], t["should_trigger_runs"]) == (3, 4)
    assert (t["false_activations"], t["should_not_trigger_runs"]) == (0, 1)
    fr = f["failure_rate"]
    assert fr["failed"] == 1 and fr["statuses"] == {"ok": 4, "errored": 1}
    lo, hi = clopper_pearson(1, 5)
    assert fr["clopper_pearson_ci95"] == [round(lo, 4), round(hi, 4)]
    assert f["output_consistency"]["judged"] == 3  # activated, successful, should-trigger
    assert f["token_efficiency"]["runs"] == 4 and f["token_efficiency"]["median"] > 0
    a, cv = t["activation_rate"], f["output_consistency"]["cv"]
    expected = 0.4 * a + 0.3 * (1 - min(1, cv)) + 0.2 * (1 - fr["p_fail"]) + 0.1 * f[
        "token_efficiency"]["efficiency_norm"]
    assert mc["score"] == pytest.approx(expected, abs=2e-4)
    # The layer's dimensions enter the blend with their intervals.
    dims = j["composite"]["dimensions"]
    assert dims["robustness"]["layers"] == {"monte_carlo": 0.8}
    assert dims["robustness"]["ci95"] == [round(1 - hi, 4), round(1 - lo, 4)]
    assert "monte_carlo" in dims["triggering_accuracy"]["layers"]
    # Costs come from the runs' own usage.
    cost = j["cost"]["monte_carlo"]
    assert cost["usd"] > 0 and cost["input_tokens"] > 0 and cost["calls"] == 5 + 3
    assert first["agent"] > 5 and first["judge"] == 1 + 3  # assessment + 3 quality grades


@pytest.mark.cli
def test_rerun_resumes_without_paying_twice(deep_run: dict[str, Any]) -> None:
    again = deep_run["again"]
    assert again["agent"] == 0 and again["judge"] == 0
    assert again["json"]["cost"]["total_usd"] == 0.0
    assert again["json"]["cost"]["monte_carlo"]["reused"] == 5
    first = deep_run["first"]["json"]["composite"]["score"]
    assert again["json"]["composite"]["score"] == first
    runs = sorted((deep_run["out"] / "mc").rglob("record.json"))
    assert len(runs) == 5




def _deep_one_prompt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, api_key: str,
                     *args: str) -> tuple[int, dict[str, Any], StandIn]:
    """``skilllift score --depth deep`` on the demo skill with one torque prompt, against a
    fresh stand-in; ``args`` add the runs, the model and the runner. Returns the exit status,
    the JSON report and the (stopped) stand-in, whose requests can still be counted."""
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("How do I calibrate widget torque?\n")
    with StandIn(agent=mc_agent(), judge=make_skill_judge()) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", api_key)
        buf = io.StringIO()
        with contextlib.redirect_stderr(io.StringIO()):
            rc = _main(["score", str(DEMO), "--depth", "deep", "--output", "json",
                        "--out", str(tmp_path / "out"), "--judge-model", "claude-opus-4-6",
                        "--mc-prompts", str(prompts), *args], buf)
    return rc, json.loads(buf.getvalue()), api


@pytest.mark.docker
@pytest.mark.cli
def test_deep_on_the_docker_runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    problem = docker_problem()
    if problem:
        pytest.skip(problem)
    rc, j, _api = _deep_one_prompt(tmp_path, monkeypatch, "sk-ant-test-docker-0123456789",
                                   "--mc-runs", "2", "--model", "claude-haiku-4-5",
                                   "--runner", "docker", "--image", "skilllift-test:local",
                                   "--docker-network", "host")
    assert rc == 0
    f = next(x for x in j["layers"] if x["layer"] == "monte_carlo")["figures"]
    assert f["n_runs"] == 2 and f["triggering"]["activated"] == 2
    assert f["failure_rate"]["statuses"] == {"ok": 2}
    records = sorted((tmp_path / "out" / "mc").rglob("record.json"))
    assert len(records) == 2 and (records[0].parent / "stdout.txt").stat().st_size > 0


def test_project_prompt_files_are_kept_for_their_family(tmp_path: Path) -> None:
    from pytest_skilllift.lint.montecarlo import discover_mc_prompts, for_family
    from pytest_skilllift.skill.skillfile import load_skill

    prompts_dir = QDRANT_WEEK.parents[1] / "test-prompts"
    files = sorted(f for f in prompts_dir.glob("*.json") if not f.name.startswith("discord-"))
    loaded = load_mc_prompts(prompts_dir)
    assert len(loaded) == len(files)  # one prompt per file, held-out files skipped
    want = [json.loads(f.read_text())["prompt"] for f in files
            if "/qdrant-search-quality/" in json.loads(f.read_text())["skill_url"]]
    kept, other = for_family(loaded, "qdrant-search-quality")
    assert [p.text for p in kept] == want and want and other == len(files) - len(want)
    skill = load_skill(QDRANT_WEEK.parents[1] / "skills" / "qdrant-search-quality")
    found, problems = discover_mc_prompts(skill, prompts_dir)
    assert [p.text for p in found] == want and problems == []


@pytest.mark.cli
def test_max_spend_stops_the_runs_and_counts_them(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    if CLAUDE is None:
        pytest.skip("claude-agent-sdk's bundled CLI missing")
    # The judge is paid first; with a $0.001 cap nothing else may start after it.
    rc, j, api = _deep_one_prompt(tmp_path, monkeypatch, "sk-ant-test-cap-0123456789",
                                  "--mc-runs", "3", "--max-spend", "0.001",
                                  "--claude", str(CLAUDE), "--model", "claude-haiku-4-5")
    assert api.count("agent", ok_only=False) == 0
    assert rc == 0 and j["spend"]["cap_reached"] is True
    assert j["cost"]["monte_carlo"]["not_run_spend_cap"] == 3
    [u] = j["unscored_layers"]
    assert u == {"layer": "monte_carlo",
                 "reason": "no Monte Carlo run was made (--max-spend reached)"}
    mc = next(x for x in j["layers"] if x["layer"] == "monte_carlo")
    assert mc["notes"] == ["runs 1-3 not run: --max-spend reached"]


@pytest.mark.cli
def test_an_outage_opens_the_circuit_breaker_and_a_rerun_makes_the_rest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The API refuses the key (an outage: no run can succeed): three Monte Carlo runs fail
    with it, the other two are not started, counted and named; run again with the right key,
    the failed and the held-back runs are made."""
    if CLAUDE is None:
        pytest.skip("claude-agent-sdk's bundled CLI missing")
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("How do I calibrate widget torque?\n")
    argv = ["score", str(DEMO), "--depth", "deep", "--output", "json",
            "--out", str(tmp_path / "out"), "--judge-model", "claude-opus-4-6",
            "--mc-prompts", str(prompts), "--mc-runs", "5", "--claude", str(CLAUDE),
            "--model", "claude-haiku-4-5", "--timeout", "120"]
    with StandIn(agent=mc_agent(), judge=make_skill_judge(), api_key="sk-ant-right-0123456789"
                 ) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
        port = api.base_url.rsplit(":", 1)[1]
        runs = []
        for key in ("sk-ant-wrong-0123456789", "sk-ant-right-0123456789"):
            monkeypatch.setenv("ANTHROPIC_API_KEY", key)
            buf = io.StringIO()
            before = api.count("agent", ok_only=False)
            with contextlib.redirect_stderr(io.StringIO()):
                rc = _main(argv, buf)
            layers = json.loads(buf.getvalue())["layers"]
            records = [json.loads(p.read_text()) for p in sorted(
                (tmp_path / "out" / "mc").rglob("record.json"))]
            runs.append((rc, next(x for x in layers if x["layer"] == "monte_carlo"),
                         api.count("agent", ok_only=False) - before, records))
    (_, mc, _, records), (rc, again, made, records_again) = runs
    assert len(records) == 3  # the two held back were never started
    [cause] = {r["reason"] for r in records}
    assert cause.startswith(f"API refused the key at 127.0.0.1:{port} (HTTP 401"), cause
    assert mc["cost"]["not_run_outage"] == 2 and mc["scored"] is False
    assert mc["notes"] == [f"runs 4-5 not run: {cause} (the last 3 runs failed with it: the "
                           "circuit breaker; run the command again to make them)"]
    # With the right key the three failed runs and the two held back are made.
    assert rc == 0 and again["scored"] is True and again["figures"]["n_runs"] == 5
    assert again["cost"]["not_run_outage"] == 0 and again["notes"] == []
    assert made >= 5 and [r["status"] for r in records_again] == ["ok"] * 5


def test_the_breaker_rule_is_consecutive_runs_with_one_cause() -> None:
    from pytest_skilllift.run.breaker import streak_cause

    down = "API unreachable at 127.0.0.1:9: connection refused"
    assert streak_cause([down, down, down], 3) == down
    assert streak_cause(["", down, down, down], 3) == down
    assert streak_cause([down, down], 3) is None  # not yet
    assert streak_cause([down, "", down, down], 3) is None  # a run got through in between
    assert streak_cause([down, "API refused the key", down], 3) is None  # two causes
    assert streak_cause(["", "", ""], 3) is None  # runs that failed for no outage
    assert streak_cause([down] * 5, 0) is None  # 0: the breaker off
    assert streak_cause([f"{down}\n", f" {down}", down], 3) == down  # one line, as recorded
