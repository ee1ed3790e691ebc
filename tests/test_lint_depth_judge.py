"""``skilllift score --depth standard`` and ``certify`` against the stand-in's scripted skill
judge: blends and renormalisation by hand, kappa, strict parsing, spend cap, costs, Elo."""

from __future__ import annotations

import contextlib
import io
import json
import math
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.cli import score as cli
from pytest_skilllift.lint.composite import badge
from pytest_skilllift.testing import Handler, Reply, StandIn
from pytest_skilllift.testing.skill_dirs import write_skill
from pytest_skilllift.testing.skill_judge_script import make_skill_judge

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "tests" / "fixtures" / "skills" / "demo-widgets"
QDRANT = REPO / "tests" / "fixtures" / "data" / "qdrant-skills"
MODEL = "claude-opus-4-6"  # $5 / $25 per million tokens
SHOULD = [True] * 5 + [False] * 5
#: static sub-scores of demo-widgets (docs/static-analysis.md rules)
STATIC = {"triggering_accuracy": 1.0, "orchestration_fitness": 0.6,
          "progressive_disclosure": 0.2, "token_efficiency": 1.0,
          "structural_completeness": 0.0, "ecosystem_coherence": 0.7}
T_975_DF1 = 12.706204736174705  # Student t quantile, 1 degree of freedom


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[StandIn]:
    with StandIn() as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-depth-0123456789")
        yield server


def score(argv: list[str]) -> tuple[int, Any, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        import argparse

        from pytest_skilllift.cli import certify as depth_cli

        parser = argparse.ArgumentParser(prog="skilllift")
        sub = parser.add_subparsers()
        cli.add_parser(sub)
        depth_cli.add_parser(sub)
        args = parser.parse_args(argv)
        rc = int(args.func(args, out))
    text = out.getvalue()
    try:
        return rc, json.loads(text), err.getvalue()
    except ValueError:
        return rc, text, err.getvalue()


def standard(tmp_path: Path, *extra: str, skill: Path = DEMO) -> list[str]:
    return ["score", str(skill), "--depth", "standard", "--judge-model", MODEL,
            "--out", str(tmp_path / "out"), *extra]


def with_usage(handler: Handler, usage: dict[str, int]) -> Handler:
    def wrapped(body: dict[str, Any]) -> Reply:
        reply = handler(body)
        reply.usage = dict(usage)
        return reply
    return wrapped


TWO_JUDGES = {
    1: {"orchestration": 0.9, "scope": 0.65, "tasks": (0.7, 0.8, 0.9), "would": SHOULD},
    # 4 of 5 should-trigger predicted, 1 should-not predicted: F1 = 8/10
    2: {"orchestration": 0.85, "scope": 0.45, "tasks": (0.6, 0.7, 0.8),
        "would": [True] * 4 + [False] + [True] + [False] * 4},
}


def test_standard_blends_and_renormalises_by_hand(api: StandIn, tmp_path: Path) -> None:
    api.judge = with_usage(make_skill_judge(overrides=TWO_JUDGES),
                           {"input_tokens": 1000, "output_tokens": 200})
    rc, j, _ = score(standard(tmp_path, "--judges", "2", "--output", "json"))
    assert rc == 0 and api.count("judge") == 2
    dims = j["composite"]["dimensions"]
    for dim, value in STATIC.items():
        assert dims[dim]["layers"]["static"] == value
    judge = {"triggering_accuracy": (1.0 + 0.8) / 2, "orchestration_fitness": (0.9 + 0.85) / 2,
             "output_quality": (0.8 + 0.7) / 2, "scope_calibration": (0.65 + 0.45) / 2}
    layer = next(x for x in j["layers"] if x["layer"] == "judge")
    assert layer["scores"] == pytest.approx(judge)
    # The Monte Carlo column is dropped and each blend renormalised over static + judge.
    expected = {
        "triggering_accuracy": (0.15 * 1.0 + 0.25 * 0.9) / 0.40,  # 0.9375
        "orchestration_fitness": (0.10 * 0.6 + 0.70 * 0.875) / 0.80,  # 0.840625
        "output_quality": 0.75,  # static weight 0: judge alone
        "scope_calibration": 0.55,  # no static score: judge alone
        "progressive_disclosure": 0.2,  # the judge does not score it: static alone
        "token_efficiency": 1.0, "structural_completeness": 0.0, "ecosystem_coherence": 0.7,
    }
    assert {k: v["score"] for k, v in dims.items()} == pytest.approx(expected, abs=1e-4)
    assert j["composite"]["unmeasured"] == ["robustness", "code_template_quality"]
    raw = (0.25 * 0.9375 + 0.20 * 0.840625 + 0.15 * 0.75 + 0.12 * 0.55 + 0.10 * 0.2
           + 0.06 * 1.0 + 0.03 * 0.0 + 0.02 * 0.7)
    assert raw == pytest.approx(0.675)
    assert j["composite"]["score"] == round(raw / 0.93 * 100, 2) == 72.58
    assert (j["composite"]["grade"], j["composite"]["badge"]) == ("C", "Silver")
    # Kappa over the anchored bands: [4,4,4,3] vs [4,4,3,2] -> po 1/2, pe 7/16 -> 1/9.
    assert layer["kappa"]["pairs"] == [{"judges": [1, 2], "kappa": pytest.approx(1 / 9)}]
    # Orchestration: Student-t across the two judges, blended with the static point.
    half = T_975_DF1 * math.sqrt(((0.9 - 0.875) ** 2 + (0.85 - 0.875) ** 2) / 1) / math.sqrt(2)
    lo, hi = max(0.0, 0.875 - half), min(1.0, 0.875 + half)
    assert layer["ci95"]["orchestration_fitness"] == [round(lo, 4), round(hi, 4)]
    assert dims["orchestration_fitness"]["ci95"] == pytest.approx(
        [(0.06 + 0.7 * lo) / 0.8, (0.06 + 0.7 * hi) / 0.8], abs=1e-4)
    # Every dimension the judge produced carries an interval.
    for dim in judge:
        assert dims[dim]["ci95"] is not None, dim
    assert dims["progressive_disclosure"]["ci95"] is None  # static only: deterministic
    # Cost from the API's usage: 2 calls x (1000 x $5 + 200 x $25) / 1e6.
    assert j["cost"]["judge"] == {"calls": 2, "reused": 0, "input_tokens": 2000,
                                  "output_tokens": 400, "usd": 0.02, "not_run_spend_cap": 0,
                                  "not_run_outage": 0}
    assert j["layers_ran"] == ["static", "judge"] and j["unscored_layers"] == []


def test_text_report_says_layers_costs_and_kappa(api: StandIn, tmp_path: Path) -> None:
    api.judge = make_skill_judge(overrides=TWO_JUDGES)
    rc, text, err = score(standard(tmp_path, "--judges", "2", "--threshold", "75"))
    assert rc == 1  # 72.58 < 75: --threshold works at standard depth
    assert "layers ran: static, judge" in text
    assert "cost judge: $" in text and "2 call(s)" in text
    assert "Cohen's kappa 0.11" in text
    assert "threshold 75: 1 of 1 skill(s) under" in text
    assert "judge layer (2 judge(s))" in err


def test_unparseable_reply_leaves_the_layer_unscored(api: StandIn, tmp_path: Path) -> None:
    api.judge = make_skill_judge("prose")
    rc, j, _ = score(standard(tmp_path, "--output", "json"))
    assert rc == 0
    [u] = j["unscored_layers"]
    assert u["layer"] == "judge"
    assert "did not call record_skill_assessment" in u["reason"]
    assert j["layers_ran"] == ["static"]
    dims = j["composite"]["dimensions"]
    assert all("judge" not in d["layers"] for d in dims.values())  # never a zero
    quick = score(["score", str(DEMO), "--output", "json"])[1]
    assert j["composite"]["score"] == quick["composite"]["score"]
    rc, text, _ = score(standard(tmp_path))
    assert "UNSCORED judge: no usable judge reply (judge 1: unusable reply: the reply did " \
           "not call record_skill_assessment" in text
    assert not list((tmp_path / "out").rglob("judge/*.json"))  # nothing unusable is kept


@pytest.mark.parametrize(("mode", "reason"), [
    ("nine-prompts", "trigger_prompts has 9 entries, not 10"),
    ("out-of-range", "orchestration_fitness.score is 1.3, outside 0-1"),
    ("string-bool", "trigger_prompts[1].would_trigger is 'true', not a boolean"),
    ("six-should", "trigger_prompts has 6 should-trigger prompts, not 5"),
])
def test_strict_parsing(api: StandIn, tmp_path: Path, mode: str, reason: str) -> None:
    api.judge = make_skill_judge(mode)
    _rc, j, _ = score(standard(tmp_path, "--output", "json"))
    assert reason in j["unscored_layers"][0]["reason"]


def test_one_unusable_judge_of_two_is_named(api: StandIn, tmp_path: Path) -> None:
    api.judge = make_skill_judge(overrides={2: {"mode": "prose"}})
    _rc, j, _ = score(standard(tmp_path, "--judges", "2", "--output", "json"))
    layer = next(x for x in j["layers"] if x["layer"] == "judge")
    assert layer["judges_usable"] == 1 and layer["scored"] is True
    assert layer["unusable"][0]["judge"] == 2
    assert layer["kappa"]["note"] == "kappa needs two or more usable judges (--judges N)"


def test_max_spend_stops_paid_calls_and_counts_them(api: StandIn, tmp_path: Path) -> None:
    api.judge = with_usage(make_skill_judge(), {"input_tokens": 1000, "output_tokens": 200})
    _rc, j, _ = score(standard(tmp_path, "--judges", "3", "--max-spend", "0.015",
                               "--output", "json"))
    # $0.01 per call: after two calls $0.02 >= $0.015, the third is not started.
    assert api.count("judge") == 2
    assert j["cost"]["judge"]["not_run_spend_cap"] == 1
    assert j["spend"] == {"max_spend": 0.015, "spent_usd": 0.02, "cap_reached": True}
    layer = next(x for x in j["layers"] if x["layer"] == "judge")
    assert layer["unusable"] == [{"judge": 3, "reason": "not run: --max-spend reached"}]
    _rc, j0, _ = score(standard(tmp_path / "zero", "--max-spend", "0", "--output", "json"))
    assert api.count("judge") == 2  # nothing more was sent
    assert "not run: --max-spend reached" in j0["unscored_layers"][0]["reason"]


def test_rerun_reuses_the_stored_judges(api: StandIn, tmp_path: Path) -> None:
    api.judge = make_skill_judge(overrides=TWO_JUDGES)
    first = score(standard(tmp_path, "--judges", "2", "--output", "json"))[1]
    again = score(standard(tmp_path, "--judges", "2", "--output", "json"))[1]
    assert api.count("judge") == 2
    assert again["cost"]["judge"]["reused"] == 2 and again["cost"]["total_usd"] == 0.0
    assert again["composite"] == first["composite"]


def test_usage_errors(tmp_path: Path) -> None:
    rc, _, err = score(["score", str(DEMO), "--judges", "3"])
    assert rc == 2 and "--judges needs --depth standard or deeper" in err
    rc, _, err = score(standard(tmp_path, "--mc-runs", "5"))
    assert rc == 2 and "--mc-runs needs --depth deep or deeper" in err
    rc, _, err = score(["certify", str(DEMO)])
    assert rc == 2 and "--corpus INDEX is required" in err
    rc, _, err = score(standard(tmp_path, "--judges", "0"))
    assert rc == 2 and "--judges must be 1 or more" in err
    rc, _, err = score(["certify", str(DEMO), "--corpus", str(tmp_path)])
    assert rc == 2 and "no corpus index" in err and "skilllift corpus init" in err
    rc, _, err = score(["score", str(DEMO), "--depth", "deep", "--mc-prompts",
                        str(tmp_path / "nope.json"), "--out", str(tmp_path)])
    assert rc == 2 and "nope.json: cannot read" in err


# ---------------------------------------------------------------------------------------------
# certify: Elo against a scripted corpus


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    write_skill(root / "weak", name="weak", description="weak thing", body="# Weak\n")
    body = "# Strong\n" + "".join(f"## Part {i}\n```\nx\n```\n" for i in range(12))
    write_skill(root / "strong", name="strong", body=body)
    write_skill(root / "biased", name="biased", body="# B\n## Only\n")
    shutil.copytree(QDRANT / "skills" / "qdrant-clients-sdk", root / "same-as-skill")
    rc, text, _ = score(["corpus", "init", str(root)])
    assert rc == 0 and text.startswith("indexed 4 skill(s) into ")
    return root


def test_certify_elo_both_orders_and_badge(api: StandIn, tmp_path: Path, corpus: Path) -> None:
    api.judge = make_skill_judge(biased={"biased"})
    argv = ["certify", str(QDRANT / "skills" / "qdrant-clients-sdk"), "--corpus", str(corpus),
            "--week", str(QDRANT / "weekly" / "20260808"), "--judge-model", MODEL,
            "--out", str(tmp_path / "out"), "--output", "json"]
    rc, j, _ = score(argv)
    assert rc == 0
    assert j["depth"] == "certify"
    assert j["layers_ran"] == ["static", "judge", "monte_carlo", "elo"]
    elo = next(x for x in j["layers"] if x["layer"] == "elo")
    # corpus order: biased (position bias -> draw), same-as-skill (skipped), strong, weak
    assert [(m["opponent"], m["skill_as_A"], m["skill_as_B"], m["result"], m["position_bias"])
            for m in elo["matches"]] == [
        ("biased", "A", "A", 0.5, True),
        ("strong", "B", "A", 0.0, False),
        ("weak", "A", "B", 1.0, False),
    ]
    assert elo["skipped"] == ["same-as-skill: the skill itself"]
    assert (elo["wins"], elo["draws"], elo["losses"], elo["position_bias"]) == (1, 1, 1, 1)
    r = 1500.0 + 32 * (0.5 - 0.5)
    r += 32 * (0.0 - 1 / (1 + 10 ** ((1500 - r) / 400)))
    r += 32 * (1.0 - 1 / (1 + 10 ** ((1500 - r) / 400)))
    assert elo["rating"] == round(r, 1) == 1500.7
    assert elo["percentile"] == 50.0
    lo, hi = elo["ci95"]
    assert lo <= elo["rating"] <= hi and hi - lo > 0
    assert api.count("judge") == 1 + 2 * 3  # assessment + both orders of 3 matches
    comp = j["composite"]
    assert comp["badge"] == badge(comp["score"], r)
    assert "Elo 1501" in comp["badge_note"]
    mc = next(x for x in j["layers"] if x["layer"] == "monte_carlo")
    assert mc["source"] == "week" and mc["figures"]["n_runs"] == 4
    assert j["cost"]["monte_carlo"]["usd"] == 0.0  # the week's runs: no spend
    # Rerun: every verdict is reused.
    again = score(argv)[1]
    assert api.count("judge") == 7 and again["cost"]["elo"]["reused"] == 6


def test_elo_caps_the_badge(api: StandIn, tmp_path: Path) -> None:
    # A skill that loses every match keeps its composite but not the Gold/Platinum tiers.
    root = tmp_path / "corpus"
    for name in ("a", "b", "c"):
        body = "# S\n" + "".join(f"## Part {i}\n```\nx\n```\n" for i in range(20))
        write_skill(root / name, name=name, body=body)
    assert score(["corpus", "init", str(root)])[0] == 0
    api.judge = make_skill_judge()
    _rc, j, _ = score(["certify", str(DEMO), "--corpus", str(root), "--week",
                       str(QDRANT / "weekly" / "20260808"), "--judge-model", MODEL,
                       "--out", str(tmp_path / "out"), "--output", "json"])
    elo = next(x for x in j["layers"] if x["layer"] == "elo")
    assert (elo["wins"], elo["losses"]) == (0, 3) and elo["rating"] < 1500
    assert elo["percentile"] == 0.0
    assert j["composite"]["badge"] == badge(j["composite"]["score"], elo["rating"])
    assert j["composite"]["badge"] in (None, "Silver", "Bronze")


def test_corpus_init_rejects_an_empty_directory(tmp_path: Path) -> None:
    rc, _, err = score(["corpus", "init", str(tmp_path)])
    assert rc == 2 and "no SKILL.md found" in err


def test_skill_lint_depth_standard(pytester: pytest.Pytester, api: StandIn) -> None:
    write_skill(pytester.path / "skills" / "sizer", name="sizer")
    pytester.makeini("[pytest]\nskill_lint_depth = standard\nskill_lint_threshold = 10\n")
    api.judge = make_skill_judge()
    result = pytester.runpytest("--skill-lint", "-v", "-p", "no:cacheprovider",
                                "-k", "DEPTH or COMPOSITE")
    result.stdout.fnmatch_lines(["skills/sizer::DEPTH PASSED*", "skills/sizer::COMPOSITE PASSED*"])
    assert api.count("judge") == 1  # DEPTH and COMPOSITE share one evaluation
    api.judge = make_skill_judge("prose")
    shutil.rmtree(pytester.path / ".skilllift")
    result = pytester.runpytest("--skill-lint", "-p", "no:cacheprovider", "-k", "DEPTH")
    result.stdout.fnmatch_lines([
        "skills/sizer::DEPTH: depth standard: 1 layer(s) unscored",
        "  judge: no usable judge reply (judge 1: unusable reply: the reply did not call "
        "record_skill_assessment*",
    ])
    result.assert_outcomes(failed=1)


def test_skill_lint_depth_rejects_unknown_values(pytester: pytest.Pytester) -> None:
    write_skill(pytester.path / "skills" / "sizer", name="sizer")
    pytester.makeini("[pytest]\nskill_lint_depth = thorough\n")
    result = pytester.runpytest("--skill-lint", "-p", "no:cacheprovider")
    result.stderr.fnmatch_lines(["*skill_lint_depth = 'thorough': expected quick, standard or "
                                 "deep*"])
    assert result.ret == 4


def test_skill_lint_depth_under_xdist(pytester: pytest.Pytester, api: StandIn) -> None:
    for name in ("alpha", "beta"):
        write_skill(pytester.path / "skills" / name, name=name)
    pytester.makeini("[pytest]\nskill_lint_depth = standard\nskill_lint_threshold = 10\n")
    api.judge = make_skill_judge()
    result = pytester.runpytest("--skill-lint", "-n", "2", "-p", "no:cacheprovider",
                                "-k", "DEPTH or COMPOSITE")
    result.assert_outcomes(passed=4)
    # One judge call per skill, whichever worker ran its tests.
    assert api.count("judge") == 2
    assert len(list((pytester.path / ".skilllift" / "depth" / "judge").glob("*.json"))) == 2
