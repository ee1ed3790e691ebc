"""week.json: the week's identity, its differences, refusals and what a session may change."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.week import identity as ident
from pytest_skilllift.week.identity import Identity, PromptIdentity


def make(**over: Any) -> Identity:
    base: dict[str, Any] = dict(
        models={"sonnet": "claude-sonnet-4-5", "haiku": "claude-haiku-4-5"}, reps=2,
        allowed_tools=("Skill", "Read", "Bash"), permission_mode="dontAsk", max_turns=None,
        max_budget_usd=2.0, runner="local", image_id=None, cli_version="2.1.332",
        judge_model="claude-opus-4-5", judge_prompt_version="skilllift-judge/1",
        judge_samples=1, evidence="reject",
        prompts={"edge": PromptIdentity.of("How do I sync?", [("must", "Calls optimize")],
                                           "qdrant-edge"),
                 "bisect": PromptIdentity.of("Find the bad commit", [("must", "Uses bisect")],
                                             "git-bisect")},
        skills={"qdrant-edge": "a" * 64, "git-bisect": "b" * 64},
    )
    base.update(over)
    return Identity(**base)


def test_prompt_hash_covers_text_and_rubric_separately() -> None:
    a = PromptIdentity.of("q", [("must", "x")], "f")
    assert a == PromptIdentity.of("q", [("must", "x")], "f")
    text = PromptIdentity.of("q2", [("must", "x")], "f")
    rubric = PromptIdentity.of("q", [("must", "x"), ("bonus", "y")], "f")
    kind = PromptIdentity.of("q", [("bonus", "x")], "f")
    assert text.hash != a.hash and text.text != a.text and text.rubric == a.rubric
    assert rubric.hash != a.hash and rubric.text == a.text and rubric.rubric != a.rubric
    assert kind.rubric != a.rubric  # the item type is part of the rubric


def test_skill_family_hash_changes_with_any_file(tmp_path: Path) -> None:
    fam = tmp_path / "fam"
    (fam / "sub").mkdir(parents=True)
    (fam / "SKILL.md").write_text("---\nname: fam\n---\nbody\n")
    (fam / "sub" / "SKILL.md").write_text("leaf\n")
    first = ident.skill_family_hash(tmp_path, "fam")
    assert first == ident.skill_family_hash(tmp_path, "fam")
    (fam / "sub" / "SKILL.md").write_text("leaf edited\n")
    assert ident.skill_family_hash(tmp_path, "fam") != first
    assert ident.skill_family_hash(tmp_path, "missing") == ""


def test_skill_family_hash_never_follows_a_link(tmp_path: Path) -> None:
    """A link is hashed as where it points (the runners install it as a link or refuse it),
    so a file outside the family is never read and a FIFO it points at never blocks."""
    fam = tmp_path / "fam"
    fam.mkdir()
    (fam / "SKILL.md").write_text("---\nname: fam\n---\n")
    outside = tmp_path / "outside.txt"
    outside.write_text("secret 1")
    (fam / "notes.md").symlink_to(outside)
    os.mkfifo(tmp_path / "pipe")
    (fam / "pipe.md").symlink_to(tmp_path / "pipe")
    first = ident.skill_family_hash(tmp_path, "fam")  # returns: the FIFO is not opened
    outside.write_text("secret 2")
    assert ident.skill_family_hash(tmp_path, "fam") == first
    (fam / "notes.md").unlink()
    (fam / "notes.md").symlink_to("SKILL.md")
    assert ident.skill_family_hash(tmp_path, "fam") != first


def test_differences_name_each_field() -> None:
    a = make()
    b = make(judge_model="claude-opus-5", allowed_tools=("Bash", "Skill", "Read"),
             models={"sonnet": "claude-sonnet-5", "opus": "claude-opus-4-5"},
             prompts={**a.prompts,
                      "edge": PromptIdentity.of("How do I sync?", [("must", "Calls sync")],
                                                "qdrant-edge"),
                      "new": PromptIdentity.of("n", [("must", "m")], "git-bisect")},
             skills={**a.skills, "qdrant-edge": "c" * 64})
    diffs = {(d.field, d.key, d.kind): d for d in ident.differences(a, b)}
    # allowed tools compare as a set: their order means nothing
    assert ("allowed_tools", None, "changed") not in diffs
    assert diffs[("judge_model", None, "changed")].describe() == (
        "judge model: 'claude-opus-4-5' → 'claude-opus-5'")
    assert diffs[("judge_model", None, "changed")].grading_only
    assert diffs[("models", "sonnet", "changed")].describe() == (
        "model 'sonnet': 'claude-sonnet-4-5' → 'claude-sonnet-5'")
    assert ("models", "opus", "added") in diffs and ("models", "haiku", "removed") in diffs
    rubric = diffs[("rubric", "edge", "changed")]
    assert rubric.describe() == "prompt 'edge': rubric edited" and rubric.grading_only
    assert ("prompt", "edge", "changed") not in diffs  # only the rubric changed
    assert diffs[("prompt", "new", "added")].describe() == "prompt 'new' added"
    assert diffs[("skill", "qdrant-edge", "changed")].describe() == (
        "skill family 'qdrant-edge': its files changed")
    assert not diffs[("skill", "qdrant-edge", "changed")].grading_only
    assert ident.differences(a, make()) == []


def test_baseline_inputs_are_what_decides_a_no_skill_answer() -> None:
    a = make()
    # skills, reps, other prompts and other models do not touch the no-skill answer of (edge,
    # haiku); the model id, the prompt text, the judge and the tools do.
    same = make(skills={"qdrant-edge": "z" * 64}, reps=5,
                models={"haiku": "claude-haiku-4-5"},
                prompts={"edge": a.prompts["edge"]})
    assert ident.baseline_key(a, "edge", "haiku") == ident.baseline_key(same, "edge", "haiku")
    for other in (make(models={"haiku": "claude-haiku-5"}), make(judge_model="x"),
                  make(allowed_tools=("Read",)), make(cli_version="2.2.0"),
                  make(prompts={"edge": PromptIdentity.of("other text", [("must", "Calls "
                                                          "optimize")], "qdrant-edge")})):
        assert ident.baseline_key(other, "edge", "haiku") != ident.baseline_key(
            a, "edge", "haiku")
    inputs = ident.baseline_inputs(a, "edge", "haiku")
    assert inputs["model_id"] == "claude-haiku-4-5" and "skills" not in inputs
    with pytest.raises(KeyError, match="prompt 'nope' is not in this identity"):
        ident.baseline_inputs(a, "nope", "haiku")
    with pytest.raises(KeyError, match="model 'opus' is not in this identity"):
        ident.baseline_inputs(a, "edge", "opus")


def test_record_round_trips_and_keeps_unknown_keys(tmp_path: Path) -> None:
    rec = ident.WeekRecord(identity=make(), gates=("must_lift>0",), shard="1/3",
                           created_utc="t0", updated_utc="t0")
    ident.write_week_record(tmp_path, rec)
    data = json.loads((tmp_path / "week.json").read_text())
    data["future_field"] = {"x": 1}
    (tmp_path / "week.json").write_text(json.dumps(data))
    back = ident.read_week_record(tmp_path)
    assert back is not None and back.identity == rec.identity
    assert back.gates == ("must_lift>0",) and back.shard == "1/3"
    assert back.extra == {"future_field": {"x": 1}}
    ident.write_week_record(tmp_path, back)
    assert json.loads((tmp_path / "week.json").read_text())["future_field"] == {"x": 1}


def test_qdrant_week_has_no_record(reference_data: Path) -> None:
    assert ident.read_week_record(reference_data / "qdrant-skills" / "weekly" / "20260808") is None


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda d: "{not json", "is not valid JSON"),
    (lambda d: {**d, "schema": 99}, "field 'schema' is 99"),
    (lambda d: {**d, "pass_threshold": 3.5}, "field 'pass_threshold' must be a number within"),
    (lambda d: {**d, "gates": "must_lift>0"}, "field 'gates' must be a list"),
    (lambda d: {**d, "identity": {**d["identity"], "reps": "two"}},
     "field 'identity.reps' must be a int"),
])
def test_bad_week_json_names_the_field(tmp_path: Path, mutate: Any, message: str) -> None:
    ident.write_week_record(tmp_path, ident.WeekRecord(identity=make()))
    data = json.loads((tmp_path / "week.json").read_text())
    new = mutate(data)
    (tmp_path / "week.json").write_text(new if isinstance(new, str) else json.dumps(new))
    with pytest.raises(ident.WeekFileError, match=message) as err:
        ident.read_week_record(tmp_path)
    assert "week.json" in str(err.value) and ("restore" in str(err.value)
                                              or "fix" in str(err.value)
                                              or "Upgrade" in str(err.value))


# --- a session opens a week ------------------------------------------------------------------


class Runs:
    """A stand-in for the week's run directories: which (model, prompt, family) have runs."""

    def __init__(self, *runs: tuple[str, str, str]) -> None:
        self.runs = runs  # (model, prompt, family-if-with-skill or "")

    def __call__(self, model: str | None = None, prompt: str | None = None,
                 with_skill_family: str | None = None) -> bool:
        return any((model is None or m == model) and (prompt is None or p == prompt)
                   and (with_skill_family is None or f == with_skill_family)
                   for m, p, f in self.runs)


def open_(week: Path, proposed: Identity, has_runs: Runs, **kw: Any) -> Any:
    args: dict[str, Any] = dict(pass_threshold=0.7, min_coverage=0.5, gates=(), fresh=False,
                                new_week_hint="evals/weekly/20260808-2", now="T")
    args.update(kw)
    return ident.open_week(week, proposed, has_runs=has_runs, **args)


ALL_RUNS = Runs(("haiku", "edge", "qdrant-edge"), ("haiku", "bisect", ""),
                ("sonnet", "edge", ""))


def test_first_session_writes_week_json(tmp_path: Path) -> None:
    _, notes = open_(tmp_path, make(), Runs(), gates=("must_lift>0",))
    assert notes == []
    on_disk = ident.read_week_record(tmp_path)
    assert on_disk is not None and on_disk.identity == make() and on_disk.gates == (
        "must_lift>0",) and on_disk.created_utc == "T"
    # a resumed session with the same identity changes nothing
    _, notes = open_(tmp_path, make(), ALL_RUNS, gates=("must_lift>0",))
    assert notes == [] and ident.read_week_record(tmp_path).changes == []  # type: ignore[union-attr]


def test_refusal_names_each_difference_and_the_way_out(tmp_path: Path) -> None:
    open_(tmp_path, make(), Runs())
    edited = make(judge_model="claude-opus-5",
                  prompts={**make().prompts, "edge": PromptIdentity.of(
                      "How do I sync?", [("must", "Calls optimize after writes")],
                      "qdrant-edge")})
    with pytest.raises(ident.IdentityRefused) as err:
        open_(tmp_path, edited, ALL_RUNS)
    msg = str(err.value)
    assert "was measured under another identity" in msg
    assert "judge model: 'claude-opus-4-5' → 'claude-opus-5' [grading]" in msg
    assert "prompt 'edge': rubric edited [grading]" in msg
    assert "--skill-lift-out=evals/weekly/20260808-2" in msg and "--skill-lift-fresh" in msg
    assert {d.field for d in err.value.blocking} == {"judge_model", "rubric"}
    # nothing was written: the week keeps its identity
    assert ident.read_week_record(tmp_path).identity == make()  # type: ignore[union-attr]
    # --skill-lift-fresh regrades every run: grading differences are then accepted, recorded
    rec, notes = open_(tmp_path, edited, ALL_RUNS, fresh=True)
    assert rec.identity.judge_model == "claude-opus-5"
    assert any("regraded" in n for n in notes)
    assert {(c["what"], c.get("key")) for c in rec.changes} == {("judge_model", None),
                                                                ("rubric", "edge")}


def test_generation_differences_need_a_new_week_even_with_fresh(tmp_path: Path) -> None:
    open_(tmp_path, make(), Runs())
    for other, text in ((make(allowed_tools=("Read",)), "allowed tools: "),
                        (make(models={**make().models, "haiku": "claude-haiku-5"}),
                         "model 'haiku': 'claude-haiku-4-5' → 'claude-haiku-5' [generation]"),
                        (make(skills={**make().skills, "qdrant-edge": "f" * 64}),
                         "skill family 'qdrant-edge': its files changed [generation]"),
                        (make(cli_version="2.2.0"), "CLI version: '2.1.332' → '2.2.0'")):
        with pytest.raises(ident.IdentityRefused) as err:
            open_(tmp_path, other, ALL_RUNS, fresh=True)
        assert text in str(err.value)
        assert "cannot regenerate" in str(err.value)
        assert "--skill-lift-out=evals/weekly/20260808-2" in str(err.value)


def test_differences_that_touch_no_existing_run_are_accepted(tmp_path: Path) -> None:
    open_(tmp_path, make(), Runs())
    # only sonnet ran 'edge' without the skill: a changed qdrant-edge family or a changed
    # haiku model id touches no run of the week; a new prompt is simply added.
    only = Runs(("sonnet", "edge", ""))
    new = make(models={**make().models, "haiku": "claude-haiku-5"},
               skills={**make().skills, "qdrant-edge": "f" * 64},
               prompts={**make().prompts, "fresh-one": PromptIdentity.of("q", [("must", "m")],
                                                                         "git-bisect")})
    rec, notes = open_(tmp_path, new, only)
    assert rec.identity.models["haiku"] == "claude-haiku-5"
    assert "fresh-one" in rec.identity.prompts
    assert "prompt 'fresh-one' added (recorded in week.json)" in notes
    assert any(c["what"] == "prompt" and c["kind"] == "added" for c in rec.changes)


def test_a_session_running_a_subset_keeps_the_weeks_prompts(tmp_path: Path) -> None:
    open_(tmp_path, make(), Runs())
    subset = make(prompts={"edge": make().prompts["edge"]}, models={"haiku": "claude-haiku-4-5"})
    rec, notes = open_(tmp_path, subset, ALL_RUNS)
    assert set(rec.identity.prompts) == {"edge", "bisect"}
    assert set(rec.identity.models) == {"sonnet", "haiku"} and notes == []


def test_changed_gates_and_threshold_are_recorded_not_refused(tmp_path: Path) -> None:
    open_(tmp_path, make(), Runs(), gates=("must_lift>0",))
    rec, notes = open_(tmp_path, make(), ALL_RUNS, gates=("must_lift_ci_low>0",),
                       pass_threshold=0.8)
    assert rec.gates == ("must_lift_ci_low>0",) and rec.pass_threshold == 0.8
    changes = {c["what"]: c for c in rec.changes}
    assert changes["gates"]["before"] == ["must_lift>0"]
    assert changes["gates"]["after"] == ["must_lift_ci_low>0"]
    assert changes["pass_threshold"]["before"] == 0.7 and changes["pass_threshold"]["after"] == 0.8
    assert any(n.startswith("gates changed from 'must_lift>0'") for n in notes)


def test_scalar_difference_without_any_run_is_accepted(tmp_path: Path) -> None:
    open_(tmp_path, make(), Runs())
    rec, _ = open_(tmp_path, dataclasses.replace(make(), runner="docker", image_id="sha256:x"),
                   Runs())
    assert rec.identity.runner == "docker" and rec.identity.image_id == "sha256:x"


# --- what the judge's settings add to the identity -------------------------------------------


@pytest.mark.parametrize(("over", "text"), [
    ({"judge_samples": 2}, "judge samples per run: 1 → 2 [grading]"),
    ({"evidence": "flag"}, "evidence policy: 'reject' → 'flag' [grading]"),
    ({"judge_mask": True}, "judge arm-leak mask: 'off' → 'on' [grading]"),
])
def test_judge_samples_and_evidence_policy_are_grading_differences(
        tmp_path: Path, over: dict[str, Any], text: str) -> None:
    open_(tmp_path, make(), Runs())
    with pytest.raises(ident.IdentityRefused) as err:
        open_(tmp_path, make(**over), ALL_RUNS)
    assert text in str(err.value) and "or regrade every run" in str(err.value)
    rec, _ = open_(tmp_path, make(**over), ALL_RUNS, fresh=True)  # regrading reconciles
    field_name = next(iter(over))
    assert getattr(rec.identity, field_name) == over[field_name]
    # both decide the grades, so a no-skill run graded otherwise is not the same baseline
    assert ident.baseline_key(make(**over), "edge", "haiku") != ident.baseline_key(
        make(), "edge", "haiku")


def test_a_regrade_records_its_judge(tmp_path: Path) -> None:
    week, copy = tmp_path / "w", tmp_path / "copy"
    open_(week, make(), Runs(), gates=("must_lift>0",))
    notes = ident.record_grading(week, judge_model="claude-opus-4-5",
                                 judge_prompt_version="skilllift-judge/1", judge_samples=2,
                                 evidence="reject", judge_mask=False, now="T2")
    assert notes == ["judge samples per run: 1 → 2 (every run regraded; recorded in week.json)"]
    rec = ident.read_week_record(week)
    assert rec is not None and rec.identity == make(judge_samples=2)
    assert rec.changes[-1] == {"at": "T2", "what": "judge_samples", "key": None,
                               "kind": "changed", "before": 1, "after": 2,
                               "by": "skilllift judge"}
    # a graded copy starts from the week's record and takes its own judge
    notes = ident.record_grading(copy, judge_model="claude-sonnet-4-6",
                                 judge_prompt_version="skilllift-judge/1", judge_samples=1,
                                 evidence="reject", judge_mask=False, source=week,
                                 now="T3")
    assert notes[0] == f"week.json copied from {week}"
    copied = ident.read_week_record(copy)
    assert copied is not None and copied.gates == ("must_lift>0",)
    assert copied.identity == make(judge_model="claude-sonnet-4-6")
    assert ident.read_week_record(week).identity.judge_model == "claude-opus-4-5"  # type: ignore[union-attr]
    # a week without week.json (the qdrant pipeline's) is left as it is
    bare = tmp_path / "bare"
    bare.mkdir()
    assert ident.record_grading(bare, judge_model="m", judge_prompt_version="v",
                                judge_samples=1, evidence="reject", judge_mask=True) == []
    assert not (bare / "week.json").exists()


def test_a_week_recorded_before_the_mask_reads_as_graded_unmasked(tmp_path: Path) -> None:
    """A week.json written before ``--skill-lift-judge-mask`` existed has no ``judge_mask``:
    its judge saw the answers as written, so it reads as off, and a session with the mask on
    (the default) is refused as a grading difference instead of mixing masked grades in."""
    open_(tmp_path, make(judge_mask=True), Runs())
    data = json.loads((tmp_path / "week.json").read_text())
    assert data["identity"]["judge_mask"] is True  # written explicitly from now on
    del data["identity"]["judge_mask"]
    (tmp_path / "week.json").write_text(json.dumps(data))
    old = ident.read_week_record(tmp_path)
    assert old is not None and old.identity.judge_mask is False
    assert ident.MASK_WHEN_ABSENT is False
    with pytest.raises(ident.IdentityRefused) as err:
        open_(tmp_path, make(judge_mask=True), ALL_RUNS)
    assert [d.field for d in err.value.blocking] == ["judge_mask"]
    assert "judge arm-leak mask: 'off' → 'on' [grading]" in str(err.value)
    # the session that keeps the old setting adds runs as before
    rec, notes = open_(tmp_path, make(judge_mask=False), ALL_RUNS)
    assert notes == [] and rec.identity.judge_mask is False
    # a regrade with the mask on records it, logged
    notes = ident.record_grading(tmp_path, judge_model="claude-opus-4-5",
                                 judge_prompt_version="skilllift-judge/1", judge_samples=1,
                                 evidence="reject", judge_mask=True, now="T4")
    assert notes == ["judge arm-leak mask: 'off' → 'on' (every run regraded; recorded in "
                     "week.json)"]
    assert ident.read_week_record(tmp_path).identity.judge_mask is True  # type: ignore[union-attr]
    # not a bool: named
    data = json.loads((tmp_path / "week.json").read_text())
    data["identity"]["judge_mask"] = "on"
    (tmp_path / "week.json").write_text(json.dumps(data))
    with pytest.raises(ident.WeekFileError, match=r"identity\.judge_mask' must be a bool"):
        ident.read_week_record(tmp_path)


def test_the_session_end_records_judge_overrides(tmp_path: Path) -> None:
    open_(tmp_path, make(), Runs())
    notes = ident.record_session_end(tmp_path, runs=8,
                                     judge_overrides={"conftest.MyJudge": 8}, now="T2")
    assert notes == ["judge overridden by a skill_lift_judge fixture: conftest.MyJudge "
                     "(8 graded runs; recorded in week.json)"]
    rec = ident.read_week_record(tmp_path)
    assert rec is not None and rec.runs == 8 and rec.judge_overrides == {"conftest.MyJudge": 8}
    assert rec.changes[-1] == {"at": "T2", "what": "judge_overrides", "before": {},
                               "after": {"conftest.MyJudge": 8}}
    # more runs by the same judge: counted, not a change
    assert ident.record_session_end(tmp_path, runs=10,
                                    judge_overrides={"conftest.MyJudge": 10}) == []
    assert len(ident.read_week_record(tmp_path).changes) == 1  # type: ignore[union-attr]
    # skilllift judge --fresh regrades through the configured judge
    notes = ident.record_grading(tmp_path, judge_model="claude-opus-4-5",
                                 judge_prompt_version="skilllift-judge/1", judge_samples=1,
                                 evidence="reject", judge_mask=False)
    assert notes == ["the judge is the configured one again (was overridden by "
                     "conftest.MyJudge; recorded in week.json)"]
    assert ident.read_week_record(tmp_path).judge_overrides == {}  # type: ignore[union-attr]
    # a week without week.json is left alone
    bare = tmp_path / "bare"
    bare.mkdir()
    assert ident.record_session_end(bare, runs=1, judge_overrides={"x": 1}) == []
    assert not (bare / "week.json").exists()


def test_agent_cli_versions_are_part_of_the_identity_only_when_agents_run() -> None:
    plain = make()
    assert "agent_clis" not in plain.to_json()  # a Claude Code week's week.json is unchanged
    agents = make(models={"haiku": "claude-haiku-4-5", "gpt": "codex:gpt-5.5"},
                  agent_clis={"codex": "0.169.0"})
    data = agents.to_json()
    assert data["agent_clis"] == {"codex": "0.169.0"}
    assert Identity.from_json(json.loads(json.dumps(data))) == agents
    moved = dataclasses.replace(agents, agent_clis={"codex": "0.170.0"})
    diffs = ident.differences(agents, moved)
    assert [(d.field, d.key) for d in diffs] == [("agent_cli", "codex")]
    assert diffs[0].describe() == "codex CLI version: '0.169.0' → '0.170.0'"
    # The codex label's no-skill answer depends on the codex CLI, not Claude Code's.
    assert ident.baseline_key(agents, "edge", "gpt") != ident.baseline_key(moved, "edge", "gpt")
    assert ident.baseline_key(agents, "edge", "haiku") == ident.baseline_key(moved, "edge",
                                                                              "haiku")
    other_claude = dataclasses.replace(agents, cli_version="2.2.0")
    assert ident.baseline_key(agents, "edge", "gpt") == ident.baseline_key(other_claude, "edge",
                                                                            "gpt")


def test_the_task_allow_list_is_a_measurement_parameter(tmp_path: Path) -> None:
    """A week with Harbor tasks records the task runs' allow-list (the session's plus the
    write tools); a change of it refuses a session as a change of the allow-list does."""
    from pytest_skilllift.model import TASK_WRITE_TOOLS, task_tools

    plain = make()
    assert "task_tools" not in plain.to_json()  # a week without tasks: week.json unchanged
    tools = task_tools(plain.allowed_tools)
    assert tools[:3] == plain.allowed_tools and set(TASK_WRITE_TOOLS) <= set(tools)
    tasks = make(task_tools=tools)
    data = tasks.to_json()
    assert data["task_tools"] == list(tools)
    assert Identity.from_json(json.loads(json.dumps(data))) == tasks
    # the order means nothing; a tool more or less is a difference
    assert ident.differences(tasks, make(task_tools=tuple(reversed(tools)))) == []
    fewer = make(task_tools=tools[:-1])
    diffs = ident.differences(tasks, fewer)
    assert [d.field for d in diffs] == ["task_tools"]
    assert diffs[0].describe().startswith("task allow-list (a task run's tools): '")
    # nothing recorded on one side (no tasks, or a week.json from before): not compared
    assert ident.differences(plain, tasks) == [] and ident.differences(tasks, plain) == []
    open_(tmp_path, tasks, Runs())
    with pytest.raises(ident.IdentityRefused) as err:
        open_(tmp_path, fewer, ALL_RUNS, fresh=True)
    assert "task allow-list (a task run's tools): " in str(err.value)
    assert "[generation]" in str(err.value)
    # a session without tasks keeps the week's recorded task allow-list
    rec, _ = open_(tmp_path, plain, ALL_RUNS)
    assert rec.identity.task_tools == tools
    assert ident.read_week_record(tmp_path).identity.task_tools == tools  # type: ignore[union-attr]


def test_a_resumed_week_keeps_the_agent_cli_versions(tmp_path: Path) -> None:
    """The record a second session writes keeps ``agent_clis`` (it was dropped, so a third
    session's other codex CLI was an 'added' note, never a refusal)."""
    agents = make(models={"haiku": "claude-haiku-4-5", "gpt": "codex:gpt-5.5"},
                  agent_clis={"codex": "0.169.0"})
    runs = Runs(("gpt", "edge", ""))
    open_(tmp_path, agents, Runs())
    rec, _ = open_(tmp_path, agents, runs)
    assert rec.identity.agent_clis == {"codex": "0.169.0"}
    assert ident.read_week_record(tmp_path).identity.agent_clis == {  # type: ignore[union-attr]
        "codex": "0.169.0"}
    with pytest.raises(ident.IdentityRefused) as err:
        open_(tmp_path, dataclasses.replace(agents, agent_clis={"codex": "0.170.0"}), runs)
    assert "codex CLI version: '0.169.0' → '0.170.0'" in str(err.value)
