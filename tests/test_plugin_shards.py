"""``--skill-lift-shard=I/N`` and ``skilllift merge``: the split, and shards that add up to the
week one unsharded session measures — the same lift, rows and API calls (counted).

The end-to-end part runs the real bundled CLI against one stand-in shared by the module: an
unsharded session (serial), shard 1/2 on two ``--tx popen`` gateways and shard 2/2 under
``-n 2``, then merges.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.cli.main import main as skilllift
from pytest_skilllift.config import DEMO_PROJECT
from pytest_skilllift.runners.claude import bundled_claude
from pytest_skilllift.week.files import MERGE_FILE, SCORECARD_JSON, SHARD_FILE
from pytest_skilllift.week.shards import (
    NO_SKILL_WEIGHT,
    WITH_SKILL_WEIGHT,
    RunKey,
    Shard,
    ShardError,
    ShardPlan,
    assign,
    shard_loads,
)

REPO = Path(__file__).resolve().parents[1]
KEY = "sk-ant-test-shards-not-a-secret"
PROMPTS = ("git-bisect-regression.json", "python-packaging-pyproject.json")
WEEK = "20260808"


# -- the split (pure) ---------------------------------------------------------------------------

def keys(prompts: int = 7, models: tuple[str, ...] = ("sonnet", "haiku"), reps: int = 3
         ) -> list[RunKey]:
    return [RunKey(f"p{p}", m, c, r, c == "with-skill") for p in range(prompts) for m in models
            for c in ("no-skill", "with-skill") for r in range(1, reps + 1)]


def test_shard_values_are_checked() -> None:
    assert Shard.parse("2/4") == Shard(2, 4) and str(Shard.parse(" 1 / 3 ")) == "1/3"
    for bad in ("0/2", "3/2", "1/0", "2", "a/b", "1/2/3"):
        with pytest.raises(ShardError, match=r"I/N|within 1\.\.N"):
            Shard.parse(bad)


@pytest.mark.parametrize("count", [1, 2, 3, 4, 7])
def test_split_is_by_run_deterministic_and_balanced(count: int) -> None:
    runs = keys()
    placed = assign(runs, count)
    assert set(placed) == set(runs) and set(placed.values()) <= set(range(1, count + 1))
    # the same set in any order (another machine's collection order) gives the same split
    assert assign(list(reversed(runs)), count) == placed
    assert assign(runs + runs[:5], count) == placed
    loads = shard_loads(placed, count)
    assert max(loads) - min(loads) <= WITH_SKILL_WEIGHT  # within one run's expected work
    if count > 1:  # with-skill runs count more: spread evenly, not piled on one shard
        per = [sum(1 for r, s in placed.items() if s == i and r.with_skill)
               for i in range(1, count + 1)]
        assert max(per) - min(per) <= 1
    assert NO_SKILL_WEIGHT < WITH_SKILL_WEIGHT


def test_a_run_keeps_its_shard_whatever_else_is_selected() -> None:
    """The split is over the prompt set; -k narrows within it (checked in the plugin)."""
    full = assign(keys(), 3)
    plan = ShardPlan(Shard(1, 3), {f"{k.prompt}-{k.model}-{k.condition}-r{k.rep}": s
                                   for k, s in full.items()})
    assert sorted(plan.of(1) + plan.of(2) + plan.of(3)) == sorted(plan.runs)
    assert ShardPlan.from_json(plan.to_json(), "x").runs == plan.runs


# -- end to end -----------------------------------------------------------------------------------

def make_project(root: Path, *, triggers: bool = False) -> Path:
    shutil.copytree(DEMO_PROJECT / "skills", root / "skills")
    (root / "evals" / "test-prompts").mkdir(parents=True)
    for name in PROMPTS:
        shutil.copy(DEMO_PROJECT / "evals" / "test-prompts" / name, root / "evals" / "test-prompts")
    if triggers:  # two trigger runs: they are runs of the week, split and merged too
        (root / "evals" / "triggers").mkdir(parents=True)
        (root / "evals" / "triggers" / "git-bisect.json").write_text(json.dumps({
            "skill": "git-bisect", "queries": [
                {"query": "Which commit broke the build? Find it with git bisect.",
                 "should_trigger": True},
                {"query": "What is a good recipe for banana bread?",
                 "should_trigger": False}]}))
    (root / "pytest.ini").write_text("[pytest]\nskill_lift_models = haiku=claude-haiku-4-5\n"
                                     "skill_lift_reps = 1\n")
    return root


def pytest_run(root: Path, api: Any, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": KEY,
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "pytest", "--skill-lift", "-p",
                           "no:cacheprovider", "-rs", *args], cwd=root, env=env, text=True,
                          capture_output=True, timeout=600, check=False)


def calls(api: Any) -> tuple[int, int]:
    return api.count("agent"), api.count("judge")


def rows(path: Path, *cols: str) -> list[tuple[str, ...]]:
    with path.open(newline="") as fh:
        return sorted(tuple(r[c] for c in cols) for r in csv.DictReader(fh))


MANIFEST = ("run_id", "prompt", "model", "condition", "rep", "run_status", "skill_available",
            "skill_activation")
SCORES = ("run_id", "item_type", "item_index", "verdict", "credit")


@pytest.fixture(scope="module")
def weeks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str | int, Any]]:
    """One unsharded week and its two shards, each with the API calls it made."""
    if bundled_claude() is None:
        pytest.skip("claude-agent-sdk (bundled CLI) missing")
    from pytest_skilllift.testing.agent_script import skill_agent
    from pytest_skilllift.testing.judge_script import keyword_judge
    from pytest_skilllift.testing.server import StandIn

    root = make_project(tmp_path_factory.mktemp("project"), triggers=True)
    out: dict[str | int, Any] = {"root": root}
    with StandIn(agent=skill_agent, judge=keyword_judge) as api:
        out["api"] = api
        before = calls(api)
        whole = pytest_run(root, api, "-p", "no:xdist", f"--skill-lift-out=whole/{WEEK}")
        out["whole"] = (whole, [a - b for a, b in zip(calls(api), before, strict=True)])
        # shard 1 on xdist's own gateways (--tx popen), shard 2 on -n 2 workers
        tx = ("--tx", f"2*popen//python={sys.executable}", "--dist", "load")
        for index, extra in ((1, tx), (2, ("-n", "2"))):
            before = calls(api)
            res = pytest_run(root, api, *extra, f"--skill-lift-shard={index}/2",
                             f"--skill-lift-out=shards/{index}/{WEEK}")
            out[index] = (res, [a - b for a, b in zip(calls(api), before, strict=True)])
        yield out


def test_shards_add_up_to_the_unsharded_week(weeks: dict[str | int, Any],
                                             capsys: pytest.CaptureFixture[str]) -> None:
    root = weeks["root"]
    whole, whole_calls = weeks["whole"]
    assert whole.returncode == 0, whole.stdout
    for index in (1, 2):
        res, _ = weeks[index]
        assert res.returncode == 0, res.stdout + res.stderr
        # the other shard's items are deselected, and the summary says why
        assert "deselected" in res.stdout
        assert f"shard {index}/2: this job's share is 3 of the week's 6 runs" in res.stdout
        assert "belong to the other 1 shard(s)" in res.stdout
        plan = json.loads((root / "shards" / str(index) / WEEK / SHARD_FILE).read_text())
        assert plan["shard"] == f"{index}/2" and len(plan["runs"]) == 6  # 4 + 2 trigger runs
    # the two shards split the runs (and -n 2 on shard 2 did not change its share)
    share = {i: {p.parent.name for p in (root / "shards" / str(i) / WEEK).glob("*/run.json")}
             for i in (1, 2)}
    assert len(share[1]) == len(share[2]) == 2 and not share[1] & share[2]
    triggers = {i: {p.parent.name for p in (root / "shards" / str(i) / WEEK / "triggers")
                    .glob("*/run.json")} for i in (1, 2)}
    assert len(triggers[1] | triggers[2]) == 2 and not triggers[1] & triggers[2]
    # each run was generated once and judged once, in one shard or the other
    assert [a + b for a, b in zip(weeks[1][1], weeks[2][1], strict=True)] == whole_calls
    assert whole_calls[1] == 4

    merged = root / "merged" / WEEK
    code = skilllift(["merge", str(merged), str(root / "shards/1" / WEEK),
                      str(root / "shards/2" / WEEK), "--no-plots"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "6 run(s) copied" in out and "6 present, 0 missing" in out
    ref = root / "whole" / WEEK
    trig = ("run_id", "family", "query_index", "run_status", "triggered", "fired")
    assert rows(merged / "triggers" / "triggers.csv", *trig) == rows(
        ref / "triggers" / "triggers.csv", *trig)
    assert rows(merged / "manifest.csv", *MANIFEST) == rows(ref / "manifest.csv", *MANIFEST)
    assert rows(merged / "scores.csv", *SCORES) == rows(ref / "scores.csv", *SCORES)
    card, ref_card = (json.loads((d / SCORECARD_JSON).read_text()) for d in (merged, ref))
    # the lift exactly; every per-model number but the dollar delta and its paired SE (each
    # generation's cost is the CLI's token count of its own run, which carries the run's
    # temporary paths)
    differ = {(m, k) for m in ref_card["models"] for k in ref_card["models"][m]
              if card["models"][m][k] != ref_card["models"][m][k]}
    assert differ <= {(m, k) for m in ref_card["models"]
                      for k in ("cost_delta", "cost_delta_paired")}, differ
    assert card["models"]["haiku"]["must_lift"] is not None
    assert card["coverage"]["graded_runs"] == ref_card["coverage"]["graded_runs"] == 4
    # week.json: each shard records its shard; the merge holds the same identity, unsharded
    weeks_json = {k: json.loads((root / d / WEEK / "week.json").read_text()) for k, d in (
        ("whole", "whole"), (1, "shards/1"), (2, "shards/2"), ("merged", "merged"))}
    assert weeks_json[1]["shard"] == {"index": 1, "count": 2}
    assert weeks_json[2]["shard"] == {"index": 2, "count": 2}
    assert weeks_json["whole"]["shard"] is None and weeks_json["merged"]["shard"] is None
    assert weeks_json["merged"]["identity"] == weeks_json[1]["identity"] == \
        weeks_json["whole"]["identity"]
    assert any(c["what"] == "merged from shards 1/2, 2/2"
               for c in weeks_json["merged"]["changes"])
    assert card["shards"]["count"] == 2 and card["shards"]["missing_runs"] == 0


def snapshot(week: Path) -> dict[str, bytes]:
    return {p.relative_to(week).as_posix(): p.read_bytes() for p in week.rglob("*")
            if p.is_file() and p.name not in (MERGE_FILE, ".lock")}


def test_merging_again_or_a_duplicate_shard_changes_nothing(
        weeks: dict[str | int, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = weeks["root"]
    s1, s2 = root / "shards/1" / WEEK, root / "shards/2" / WEEK
    out = tmp_path / WEEK
    # as shards arrive: the first alone reports the second's runs as missing
    assert skilllift(["merge", str(out), str(s1), "--no-plots"]) == 1
    text = capsys.readouterr().out
    assert "3 missing from every shard" in text
    assert "missing, shard 2 (that shard was never merged): 3 run(s)" in text
    # then both, with the first given twice and a copy of it (a retried shard's artifact)
    retried = tmp_path / "retry" / WEEK
    shutil.copytree(s1, retried)
    assert skilllift(["merge", str(out), str(s1), str(s2), str(s1), str(retried),
                      "--no-plots"]) == 0
    first = snapshot(out)
    capsys.readouterr()
    assert skilllift(["merge", str(out), str(s2), str(retried), str(s1), "--no-plots"]) == 0
    assert "0 run(s) copied, 0 replaced by a graded copy, 6 already there" in \
        capsys.readouterr().out
    assert snapshot(out) == first


def test_conflicting_runs_and_foreign_shards_are_refused(
        weeks: dict[str | int, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = weeks["root"]
    s1, s2 = root / "shards/1" / WEEK, root / "shards/2" / WEEK
    other = tmp_path / "other" / WEEK
    shutil.copytree(s1, other)
    run_id = next(p.parent.name for p in other.glob("*/run.json"))
    (other / run_id / "stdout.txt").write_text("{}\n")
    out = tmp_path / "out" / WEEK
    assert skilllift(["merge", str(out), str(s1), str(other), str(s2), "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert f"run {run_id} was generated differently" in err and "stdout.txt" in err
    assert not out.exists()  # refused before anything was copied

    # a shard cut from another prompt set (one prompt less)
    foreign = tmp_path / "foreign" / WEEK
    shutil.copytree(s2, foreign)
    plan = json.loads((foreign / SHARD_FILE).read_text())
    dropped = sorted(plan["runs"])[0]
    del plan["runs"][dropped]
    (foreign / SHARD_FILE).write_text(json.dumps(plan))
    assert skilllift(["merge", str(out), str(s1), str(foreign), "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert "was split from another week" in err and dropped in err

    # a shard measured under another identity (another judge model in its week.json)
    odd = tmp_path / "odd" / WEEK
    shutil.copytree(s2, odd)
    record = json.loads((odd / "week.json").read_text())
    judge = record["identity"]["judge_model"]
    record["identity"]["judge_model"] = "claude-opus-9-9"
    (odd / "week.json").write_text(json.dumps(record))
    assert skilllift(["merge", str(out), str(s1), str(odd), "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert "was measured under another identity" in err
    assert f"judge model: '{judge}' → 'claude-opus-9-9'" in err
    assert not out.exists()


@pytest.mark.slow
def test_a_week_directory_holds_one_shard(weeks: dict[str | int, Any]) -> None:
    root, api = weeks["root"], weeks["api"]
    before = calls(api)
    res = pytest_run(root, api, "-p", "no:xdist", "--skill-lift-shard=2/2",
                     f"--skill-lift-out=shards/1/{WEEK}")
    assert res.returncode == 4, res.stdout + res.stderr
    assert "holds shard 1/2 of this week; shard 2/2 goes to a week directory of its own" in \
        res.stderr
    assert calls(api) == before  # refused before any run


@pytest.mark.slow
def test_k_narrows_within_a_shard_and_never_moves_a_run(tmp_path: Path) -> None:
    """Listing needs no key and starts nothing: the shard's items, then the same with -k."""
    root = make_project(tmp_path)

    def listed(*args: str) -> set[str]:
        res = subprocess.run([sys.executable, "-m", "pytest", "--skill-lift", "-p",
                              "no:cacheprovider", "--collect-only", "-q", *args], cwd=root,
                             env={**os.environ, "PYTHONPATH": str(REPO)}, text=True,
                             capture_output=True, timeout=300, check=False)
        assert res.returncode == 0, res.stdout + res.stderr
        return {line for line in res.stdout.splitlines() if "::" in line}

    everything = listed()
    one, two = listed("--skill-lift-shard=1/2"), listed("--skill-lift-shard=2/2")
    assert one | two == everything and not one & two and one and two
    runs_of = {i.rsplit("::", 1)[0] for i in one}
    assert all(i.rsplit("::", 1)[0] in runs_of for i in one)  # whole runs only
    narrowed = listed("--skill-lift-shard=1/2", "-k", "git-bisect")
    assert narrowed == {i for i in one if "git-bisect" in i} and narrowed
    assert not (root / "evals" / "weekly").exists()  # listing wrote nothing
