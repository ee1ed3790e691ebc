"""The pure parts behind the extension points: run ids and scopes, narrowing, the check
ledger and its scorecard section, hook calls that name their implementation, the judge
adapter and the judge provenance. No CLI, no server."""

from __future__ import annotations

import json
import math
import zlib
from pathlib import Path
from typing import Any

import pluggy
import pytest

from pytest_skilllift.config import OPTIONS, Settings
from pytest_skilllift.intervals import newcombe_interval
from pytest_skilllift.judge.protocol import PROMPT_VERSION
from pytest_skilllift.judge.samples import SampledJudge
from pytest_skilllift.judge.session_judge import FixtureGrader, SessionJudge, as_rubric
from pytest_skilllift.model import ItemVerdict, JudgeResult, PromptSpec, RubricItem, RunSpec
from pytest_skilllift.plugin import hookspecs
from pytest_skilllift.plugin.hookcalls import call_hook
from pytest_skilllift.report import judging
from pytest_skilllift.report.extra_sections import sections_from
from pytest_skilllift.report.sections import custom_checks, provenance
from pytest_skilllift.run.matrix import keywords_of, load_matrix, narrow, run_key, run_scope
from pytest_skilllift.week.checks import CheckTally, merge_checks, read_checks
from pytest_skilllift.week.columns import VERDICTS, contribution_for, credit_for
from pytest_skilllift.week.files import GRADES_FILE, OK

hookimpl = pluggy.HookimplMarker("pytest")
ITEMS = (RubricItem("must", "Uses git bisect", 1), RubricItem("avoid", "Reverts blindly", 1))


def prompt(name: str, skill_path: str) -> PromptSpec:
    return PromptSpec(path=Path(f"evals/test-prompts/{name}.json"), name=name,
                      product_area="", prompt="q?", rubric=ITEMS, skill_path=skill_path)


def spec(name: str, skill: str, model: str = "haiku", condition: str = "with-skill",
         rep: int = 1) -> RunSpec:
    return RunSpec(prompt=prompt(name, skill), model_label=model, model_id=model,
                   condition=condition, rep=rep, run_id=f"{name}-{model}-{condition}-r{rep}-w")


# -- ids, keywords, scopes, narrowing ----------------------------------------------------------

def test_a_duplicated_prompt_name_is_a_matrix_problem_not_shared_runs(tmp_path: Path) -> None:
    """As in collection: the first file (sorted) keeps the name, the second is a problem,
    so no check is parametrized twice over the same run ids."""
    (tmp_path / "skills" / "fam").mkdir(parents=True)
    (tmp_path / "skills" / "fam" / "SKILL.md").write_text("---\nname: fam\n---\n")
    prompts = tmp_path / "evals" / "test-prompts"
    prompts.mkdir(parents=True)
    body = {"name": "same", "prompt": "q?", "skill": "fam/SKILL.md",
            "rubric": [{"type": "must", "text": "Answers"}]}
    for stem in ("a-first", "b-second"):
        (prompts / f"{stem}.json").write_text(json.dumps(body))
    values: dict[str, Any] = {o.name: o.default for o in OPTIONS}
    values.update(models="haiku", reps=1)
    settings = Settings.from_values(lambda o: values[o.name], enabled=True, rootdir=tmp_path)
    matrix = load_matrix(settings)
    assert {r.prompt.path.name for r in matrix.runs} == {"a-first.json"}
    assert len(matrix.runs) == len({r.run_id for r in matrix.runs}) == 2
    (problem,) = matrix.problems
    assert "b-second.json" in problem and "already the name of" in problem

def test_run_key_and_keywords() -> None:
    run = spec("qdrant-vertical-scaling",
               "qdrant-scaling/scaling-data-volume/vertical-scaling/SKILL.md")
    assert run_key(run) == "qdrant-vertical-scaling::haiku::with-skill::r1"
    assert keywords_of(run.prompt) == ("qdrant-scaling",
                                       "qdrant-scaling/scaling-data-volume/vertical-scaling")
    assert keywords_of(prompt("qdrant-edge", "qdrant-edge/SKILL.md")) == (
        "qdrant-edge", "qdrant-edge")


@pytest.mark.parametrize(("nodeid", "scope"), [
    ("evals/test-prompts/q-lat.json::haiku::with-skill::r2::must-1",
     "run:qdrant-minimize-latency::haiku::with-skill::r2"),
    ("evals/checks/test_a.py::test_x[qdrant-minimize-latency::haiku::with-skill::r2]",
     "run:qdrant-minimize-latency::haiku::with-skill::r2"),
    # another parameter joined with "-", and a prompt name that ends another one
    ("t.py::T::test_y[big-qdrant-minimize-latency::my-model::no-skill::r1]",
     "run:qdrant-minimize-latency::my-model::no-skill::r1"),
    ("t.py::test_y[latency::my-model::no-skill::r1]", "run:latency::my-model::no-skill::r1"),
    ("evals/checks/test_a.py::test_gate", None),
    ("evals/checks/test_a.py::test_z[1-2]", None),
    ("other.json::haiku::with-skill::r2::must-1", None),
])
def test_run_scope(nodeid: str, scope: str | None) -> None:
    names = ["qdrant-minimize-latency", "latency"]
    assert run_scope(nodeid, {"evals/test-prompts/q-lat.json": "qdrant-minimize-latency"},
                     names) == scope


def test_narrow_by_globs_and_lists() -> None:
    runs = [spec(n, f"{fam}/SKILL.md", model=m, condition=c)
            for n, fam in (("qdrant-edge", "qdrant-edge"), ("qdrant-sizing", "qdrant-sizing"),
                           ("git-bisect", "git"))
            for m in ("sonnet", "haiku") for c in ("no-skill", "with-skill")]
    picked = narrow(runs, {"prompts": "qdrant-*", "conditions": "with-skill"})
    assert {(r.prompt.name, r.model_label) for r in picked} == {
        ("qdrant-edge", "sonnet"), ("qdrant-edge", "haiku"), ("qdrant-sizing", "sonnet"),
        ("qdrant-sizing", "haiku")}
    assert all(r.with_skill for r in picked)
    picked = narrow(runs, {"families": ["git", "qdrant-edge"], "models": "haiku"})
    assert {(r.prompt.name, r.condition) for r in picked} == {
        (n, c) for n in ("qdrant-edge", "git-bisect") for c in ("no-skill", "with-skill")}
    assert narrow(runs, {}) == runs


@pytest.mark.parametrize(("options", "message"), [
    ({"prompt": "x"},
     "unknown argument(s) prompt; use prompts, families, models, conditions, agents"),
    ({"conditions": "with_skill"}, "matches no condition; use no-skill or with-skill"),
    ({"prompts": 3}, "must be a glob or a list of globs"),
    ({"models": []}, "must be a glob or a list of globs"),
])
def test_narrow_rejects_bad_markers(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match="skill_lift") as info:
        narrow([], options)
    assert message in str(info.value)


# -- the check ledger and its section ----------------------------------------------------------

def meta(test: str, model: str, condition: str, rep: int) -> dict[str, str]:
    return {"test": test, "prompt": "p", "skill_family": "f", "model": model,
            "condition": condition, "rep": str(rep), "run_id": f"p-{model}-{condition}-r{rep}"}


def test_check_tally_reads_the_phases() -> None:
    tally = CheckTally()
    ok, fail, skip, err = (meta("t", "m", "no-skill", r) for r in (1, 2, 3, 4))
    for when in ("setup", "call", "teardown"):
        tally.add(ok, when, "passed")
    tally.add(fail, "setup", "passed")
    tally.add(fail, "call", "failed", "AssertionError: 3 words")
    tally.add(fail, "teardown", "passed")
    tally.add(skip, "setup", "skipped", "run excluded (invalid): x")
    tally.add(skip, "teardown", "passed")
    tally.add(err, "setup", "passed")
    tally.add(err, "call", "passed")
    tally.add(err, "teardown", "failed", "boom")
    interrupted = meta("t", "m", "no-skill", 5)
    tally.add(interrupted, "setup", "passed")
    got = {r["rep"]: (r["outcome"], r["reason"]) for r in tally.finished()}
    assert got == {"1": ("passed", ""), "2": ("failed", "AssertionError: 3 words"),
                   "3": ("skipped", "run excluded (invalid): x"),
                   "4": ("failed", "error in teardown: boom")}


def test_merge_upserts_by_check_and_run(tmp_path: Path) -> None:
    first = [{**meta("a", "m", "no-skill", 1), "outcome": "failed", "reason": "x"},
             {**meta("b", "m", "no-skill", 1), "outcome": "passed", "reason": ""}]
    assert merge_checks(tmp_path, first) == 2
    assert merge_checks(tmp_path, [{**meta("a", "m", "no-skill", 1), "outcome": "passed",
                                    "reason": ""}]) == 2
    assert {(r["test"], r["outcome"]) for r in read_checks(tmp_path)} == {
        ("a", "passed"), ("b", "passed")}
    text = (tmp_path / "custom_checks.csv").read_bytes()
    merge_checks(tmp_path, read_checks(tmp_path))
    assert (tmp_path / "custom_checks.csv").read_bytes() == text  # deterministic bytes


def test_newcombe_interval_matches_the_published_example() -> None:
    # Newcombe (1998), Table II, example (a): 56/70 vs 48/80 → difference 0.2,
    # method 10 interval 0.0524 to 0.3339.
    low, high = newcombe_interval(48, 80, 56, 70)
    assert (round(low, 4), round(high, 4)) == (0.0524, 0.3339)
    assert all(math.isnan(x) for x in newcombe_interval(0, 0, 1, 2))


def test_custom_checks_section(tmp_path: Path) -> None:
    rows = []
    for rep, (no, wi) in enumerate((("failed", "passed"), ("passed", "passed"),
                                    ("failed", "skipped")), start=1):
        rows.append({**meta("t.py::test_x", "haiku", "no-skill", rep), "outcome": no,
                     "reason": ""})
        rows.append({**meta("t.py::test_x", "haiku", "with-skill", rep), "outcome": wi,
                     "reason": "run excluded (timeout): timed out" if wi == "skipped" else ""})
    merge_checks(tmp_path, rows)
    data = custom_checks.from_week_dir(tmp_path, ["haiku"])
    by_cond = {c["condition"]: c for c in data["custom_checks"]}
    assert (by_cond["no-skill"]["passed"], by_cond["no-skill"]["failed"]) == (1, 2)
    assert by_cond["no-skill"]["pass_rate"] == pytest.approx(1 / 3)
    assert (by_cond["with-skill"]["passed"], by_cond["with-skill"]["skipped"],
            by_cond["with-skill"]["pass_rate"]) == (2, 1, 1.0)
    low, high = by_cond["with-skill"]["pass_rate_ci_low"], by_cond["with-skill"][
        "pass_rate_ci_high"]
    assert low is not None and high is not None
    assert 0.15 < low < 0.35 and high == 1.0  # Wilson 2/2
    assert data["custom_checks_lift"][0]["difference"] == pytest.approx(2 / 3)
    assert data["custom_checks_skipped"] == [
        {"test": "t.py::test_x", "reason": "run excluded (timeout): timed out", "count": 1}]
    md = "\n".join(custom_checks.render(data))
    assert "## Custom checks" in md
    assert "| `t.py::test_x` | haiku | 0.33 (1/3) [" in md and "+0.67 [" in md
    assert "1 × run excluded (timeout): timed out" in md
    assert custom_checks.render(custom_checks.from_week_dir(tmp_path / "none")) == []


# -- hook calls ------------------------------------------------------------------------------

def plugin_manager(*plugins: object) -> pluggy.PluginManager:
    pm = pluggy.PluginManager("pytest")
    pm.add_hookspecs(hookspecs)
    for p in plugins:
        pm.register(p)
    return pm


class Dashboard:
    def __init__(self) -> None:
        self.seen: list[str] = []

    @hookimpl
    def pytest_skilllift_run_graded(self, run: Any) -> None:
        self.seen.append(run)


class Broken:
    @hookimpl
    def pytest_skilllift_run_graded(self, run: Any, verdicts: Any) -> None:
        raise KeyError("token")


def test_a_raising_implementation_is_named_and_the_others_still_run() -> None:
    dashboard = Dashboard()
    pm = plugin_manager(dashboard, Broken())
    out = call_hook(pm.hook.pytest_skilllift_run_graded, Path(__file__).parent, config=None,
                    run="r1", verdicts=())
    assert dashboard.seen == ["r1"]
    assert len(out.errors) == 1
    assert out.errors[0].startswith(
        "pytest_skilllift_run_graded in test_plugin_extension_logic.py:")
    assert out.errors[0].endswith("Broken.pytest_skilllift_run_graded raised KeyError: 'token'")


def test_firstresult_and_a_wrapper_still_names_the_raiser() -> None:
    class Mine:
        @hookimpl
        def pytest_skilllift_make_runner(self) -> str:
            return "mine"

    class Later:
        @hookimpl(trylast=True)
        def pytest_skilllift_make_runner(self) -> str:
            return "later"

    pm = plugin_manager(Later(), Mine())
    out = call_hook(pm.hook.pytest_skilllift_make_runner, None, firstresult=True, config=None)
    assert out.first == "mine" and len(out.results) == 1

    class Wrap:
        @hookimpl(wrapper=True)
        def pytest_skilllift_run_graded(self) -> Any:
            return (yield)

    out = call_hook(plugin_manager(Wrap(), Broken()).hook.pytest_skilllift_run_graded, None,
                    config=None, run="r", verdicts=())
    assert len(out.errors) == 1 and "Broken.pytest_skilllift_run_graded raised KeyError" in (
        out.errors[0])


@pytest.mark.parametrize(("value", "titles"), [
    (None, []),
    (("One", "text"), ["One"]),
    ([("One", "a"), ("Two", "b", {"n": 1})], ["One", "Two"]),
])
def test_sections_accepted(value: Any, titles: list[str]) -> None:
    assert [s.title for s in sections_from(value, "conftest.py:1 f")] == titles


@pytest.mark.parametrize(("value", "message"), [
    ("just text", "return (title, markdown)"),
    ([("One",)], "return (title, markdown) or (title, markdown, data)"),
    ([("", "x")], "both must be strings"),
    ([("One", "x", {1, 2})], "not JSON-serialisable"),
])
def test_sections_rejected_saying_why(value: Any, message: str) -> None:
    with pytest.raises(ValueError) as info:
        sections_from(value, "conftest.py:1 f")
    assert message in str(info.value)


# -- the judge adapter -------------------------------------------------------------------------

class Graded:
    """A grader that answers every item with its first verdict (records what it was sent)."""

    model = "judge-x"

    def __init__(self) -> None:
        self.sent: list[tuple[str, str, tuple[RubricItem, ...], Any]] = []

    def grade(self, prompt_text: str, answer: str, items: Any, seed: Any) -> JudgeResult:
        self.sent.append((prompt_text, answer, tuple(items), seed))
        verdicts = tuple(ItemVerdict(item=i, verdict="met" if i.type != "avoid" else "clean",
                                     evidence="", credit=0.0, contribution=0.0,
                                     evidence_ok=True) for i in items)
        return JudgeResult(verdicts=verdicts, cost_usd=0.25, model=self.model)


def test_session_judge_grades_through_the_configured_client() -> None:
    inner = Graded()
    judge = SessionJudge(lambda: inner)
    result = judge.grade("q?", "answer", [{"type": "must", "text": "A"},
                                          {"type": "must", "text": "B"},
                                          {"type": "avoid", "text": "C"}])
    assert [v.item.key for v in result.verdicts] == ["must-1", "must-2", "avoid-1"]
    assert inner.sent[0][3] == zlib.crc32(b"q?")  # a stable shuffle seed by default
    judge.grade("q?", "answer", ITEMS, seed="run-1")
    assert inner.sent[1][3] == "run-1"
    assert (judge.calls, judge.cost_usd, judge.model) == (2, 0.5, "judge-x")
    assert judge.prompt_version == PROMPT_VERSION
    with pytest.raises(ValueError, match=r"rubric\[0\]\.type is 'maybe'"):
        as_rubric([{"type": "maybe", "text": "x"}])


def test_fixture_grader_passes_seed_only_when_accepted_and_never_crashes() -> None:
    default = SessionJudge(Graded)

    class Minimal:
        def __init__(self) -> None:
            self.args: tuple[Any, ...] = ()

        def grade(self, prompt: str, answer: str, rubric: Any) -> JudgeResult:
            self.args = (prompt, answer, rubric)
            return Graded().grade(prompt, answer, rubric, 0)

    minimal = Minimal()
    grader = FixtureGrader(minimal, default)
    assert grader.grade("q", "a", ITEMS, "seed").error is None and len(minimal.args) == 3
    assert grader.provenance == {"prompt_version": "", "judge_overridden": True,
                                 "judge_impl": f"{__name__}.{Minimal.__qualname__}"}
    assert FixtureGrader(default, default).provenance["judge_overridden"] is False

    class Raises:
        def grade(self, prompt: str, answer: str, rubric: Any, *, seed: Any) -> Any:
            raise ConnectionError("cache server down")

    failed = FixtureGrader(Raises(), default).grade("q", "a", ITEMS, "s")
    assert failed.error is not None and "raised ConnectionError: cache server down" in (
        failed.error)
    assert failed.ungraded == ITEMS and failed.verdicts == ()

    class WrongType:
        def grade(self, prompt: str, answer: str, rubric: Any) -> Any:
            return {"verdicts": []}

    wrong = FixtureGrader(WrongType(), default).grade("q", "a", ITEMS, "s")
    assert wrong.error is not None and "returned a dict, not a JudgeResult" in wrong.error
    with pytest.raises(TypeError, match="has no grade"):
        FixtureGrader(object(), default)


def test_judge_provenance_counts_runs(tmp_path: Path) -> None:
    week = tmp_path / "week"
    for i, (model, version, over) in enumerate((("opus-a", "v1", False), ("opus-a", "v1", True),
                                               ("opus-b", "", True))):
        (week / f"run{i}").mkdir(parents=True)
        (week / f"run{i}" / "grades.json").write_text(json.dumps({
            "judge_model": model, "prompt_version": version, "judge_overridden": over,
            "judge_impl": "conftest.Mine", "rows": []}))
    (week / "run9").mkdir()  # generated, never graded
    got = judging.build(week)
    keys = ("graded_runs", "judge_models", "prompt_versions", "overridden_runs", "overrides")
    assert {k: got[k] for k in keys} == {  # type: ignore[literal-required]
        "graded_runs": 3, "judge_models": {"opus-a": 2, "opus-b": 1},
        "prompt_versions": {"unrecorded": 1, "v1": 2}, "overridden_runs": 2,
        "overrides": {"conftest.Mine": 2}}
    text = "\n".join(provenance.judge_lines({"judge": got}))
    assert "judge overridden" in text and "for 2 of 3 graded runs" in text
    assert "more than one judge model" in text and "more than one judge prompt version" in text
    # No run graded by this tool: no override lines at all (nothing to say either way).
    empty = "\n".join(provenance.judge_lines(
        {"judge": judging.build(tmp_path / "none")}))
    assert "overridden" not in empty and "not recorded" in empty


class Alternating:
    """A judge whose must verdicts flip on every call (met, missing, met…): two samples of it
    disagree on every must, so the sampled judge asks a third time to break the tie."""

    model = "judge-flip"

    def __init__(self) -> None:
        self.calls = 0

    def grade(self, prompt_text: str, answer: str, items: Any, seed: Any) -> JudgeResult:
        self.calls += 1
        verdicts = []
        for item in items:
            positive, negative = VERDICTS[item.type]
            verdict = positive if item.type != "must" or self.calls % 2 else negative
            quote = answer[:12] if verdict in ("met", "violated") else ""
            credit = credit_for(item.type, verdict)
            verdicts.append(ItemVerdict(item, verdict, quote, credit,
                                        contribution_for(item.type, credit), True))
        return JudgeResult(verdicts=tuple(verdicts), cost_usd=0.01, model=self.model, calls=1)


def test_a_conftest_wrapper_grades_through_the_sampled_judge(tmp_path: Path) -> None:
    # The default skill_lift_judge wraps the session's sampled judge; a conftest.py wrapper of
    # it grades with every sample and the tie-break, and grades.json records both the samples
    # and the override.
    from tests.test_run_engine import FakeRunner
    from tests.test_run_engine import engine as make_engine
    from tests.test_run_engine import spec as engine_spec

    inner = Alternating()
    sampled = SampledJudge(inner, samples=2)
    default = SessionJudge(lambda: sampled)

    class Wrapper:
        def __init__(self, judge: SessionJudge) -> None:
            self.judge, self.calls = judge, 0

        def __getattr__(self, name: str) -> Any:
            return getattr(self.judge, name)

        def grade(self, prompt: str, answer: str, rubric: Any, **kw: Any) -> JudgeResult:
            self.calls += 1
            return self.judge.grade(prompt, answer, rubric, **kw)

    wrapper = Wrapper(default)
    week = tmp_path / "weekly" / "20260808"
    engine = make_engine(week, FakeRunner(), Alternating())  # its own judge is never asked
    run = engine_spec()
    graded = engine.result(run, FixtureGrader(wrapper, default))
    assert graded.status == OK and graded.judged_now
    assert (wrapper.calls, inner.calls) == (1, 3)  # one grade: 2 samples + 1 tie-break
    assert graded.rows["must-1"]["contested"] == 1
    stored = json.loads((week / run.run_id / GRADES_FILE).read_text())
    assert (stored["judge_samples"], stored["judge_calls"], stored["tie_breaks"]) == (2, 3, 1)
    assert stored["judge_overridden"] is True and stored["judge_impl"].endswith("Wrapper")
    assert stored["prompt_version"] == PROMPT_VERSION and stored["judge_model"] == "judge-flip"
