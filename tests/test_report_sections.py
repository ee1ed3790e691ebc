"""The scorecard's section registry: scorecard.json is exactly what its TypedDicts say, in
``SECTIONS`` order, and a new section is one module plus one registry entry."""

from __future__ import annotations

import importlib
import shutil
import types
import typing
from pathlib import Path
from typing import Any, Union, get_args, get_origin, get_type_hints, is_typeddict

import pytest

from pytest_skilllift.report import card as card_mod
from pytest_skilllift.report.card import SECTIONS, Scorecard, Section
from pytest_skilllift.report.summarize import Summary, summarize_week

REF_WEEK = Path(__file__).resolve().parent / "fixtures" / "data" / "qdrant-skills" / "weekly" / (
    "20260808")


@pytest.fixture(scope="module")
def ref(tmp_path_factory: pytest.TempPathFactory) -> Summary:
    week = tmp_path_factory.mktemp("sections") / "20260808"
    shutil.copytree(REF_WEEK, week)
    return summarize_week(week, write=False)


def _check(value: Any, hint: Any, where: str) -> None:
    """Assert ``value`` has the shape ``hint`` describes (TypedDicts: exactly their keys, in
    order; a ``NotRequired`` key only when it has something to say)."""
    origin = get_origin(hint)
    if is_typeddict(hint):
        assert isinstance(value, dict), where
        hints = get_type_hints(hint)
        expected = [k for k in hints if k in hint.__required_keys__ or k in value]
        assert list(value) == expected, f"{where}: keys {list(value)} != {expected}"
        for key in expected:
            _check(value[key], hints[key], f"{where}.{key}")
    elif origin in (Union, types.UnionType):
        errors = []
        for option in get_args(hint):
            try:
                _check(value, option, where)
                return
            except AssertionError as exc:
                errors.append(str(exc))
        raise AssertionError(f"{where}: {value!r} fits none of {hint}: {errors}")
    elif origin is list:
        assert isinstance(value, list), where
        for i, item in enumerate(value):
            _check(item, get_args(hint)[0], f"{where}[{i}]")
    elif origin is dict:
        assert isinstance(value, dict), where
        for k, item in value.items():
            _check(item, get_args(hint)[1], f"{where}.{k}")
    elif hint is type(None):
        assert value is None, where
    elif hint is float:
        assert isinstance(value, (int, float)) and not isinstance(value, bool), where
    elif hint is typing.Any or hint is object:
        return
    else:
        assert isinstance(value, hint), f"{where}: {value!r} is not {hint}"


def test_scorecard_json_is_exactly_its_typeddicts(ref: Summary) -> None:
    # Every key, nested ones included, is declared, in the order the sections build them.
    _check(ref.data, Scorecard, "scorecard")


def test_key_order_follows_the_registry(ref: Summary) -> None:
    # Each section module's ``Data`` names the keys its ``build`` returns.
    expected: list[str] = []
    for section in SECTIONS:
        if section.build is not None:
            module = importlib.import_module(section.build.__module__)
            expected += list(get_type_hints(module.Data))
    assert list(ref.data) == expected
    assert len(set(expected)) == len(expected)  # no two sections claim one key


def test_a_new_section_is_one_registry_entry(ref: Summary,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    def build(ctx: Any) -> dict[str, object]:
        return {"extra": {"runs": ctx.week.n_runs}}

    def render(card: Any) -> list[str]:
        return ["## Extra\n", f"- runs: {card['extra']['runs']}", ""]

    monkeypatch.setattr(card_mod, "SECTIONS", (*SECTIONS, Section("extra", build, render)))
    s = summarize_week(ref.week_dir, write=False)
    assert list(s.data)[-1] == "extra" and s.data["extra"] == {"runs": 208}  # type: ignore[typeddict-item]
    assert s.markdown.endswith("## Extra\n\n- runs: 208\n")
    # the other sections are untouched
    assert s.markdown.startswith(ref.markdown.rstrip("\n"))


def _trigger_rows() -> list[dict[str, object]]:
    """Trigger runs touching every nested type of the Triggering section: a hit, a miss, a
    false trigger that also launched a built-in skill, an excluded run, and runs with every
    family installed (the confusion table)."""
    base = {"family": "git-bisect", "trigger_set": "git-bisect", "model": "haiku", "rep": 1,
            "run_status": "ok", "installed": "git-bisect", "max_turns": 2}
    rows: list[dict[str, object]] = [
        {**base, "query_index": 1, "query": "bisect?", "should_trigger": 1, "triggered": 1,
         "fired": "git-bisect", "tools_before_skill": 1, "run_id": "a"},
        {**base, "query_index": 2, "query": "who broke it?", "should_trigger": 1,
         "triggered": 0, "run_id": "b"},
        {**base, "query_index": 3, "query": "commit message?", "should_trigger": 0,
         "triggered": 1, "fired": "git-bisect", "fired_other": "review", "run_id": "c"},
        {**base, "query_index": 3, "query": "commit message?", "should_trigger": 0, "rep": 2,
         "run_status": "errored", "run_error": "CLI exit 1", "run_id": "d"},
    ]
    both = {**base, "installed": "git-bisect;sqlite-performance", "model": "sonnet"}
    rows += [
        {**both, "query_index": 1, "query": "bisect?", "should_trigger": 1, "triggered": 1,
         "fired": "git-bisect;sqlite-performance", "run_id": "e"},
        {**both, "query_index": 4, "query": "slow inserts?", "should_trigger": 0,
         "expected_skill": "sqlite-performance", "triggered": 0,
         "fired": "sqlite-performance", "run_id": "f"},
    ]
    return rows


def test_a_week_with_trigger_runs_is_typed_and_adds_only_its_section(
        ref: Summary, tmp_path: Path) -> None:
    import csv

    from pytest_skilllift.run.triggers import TRIGGER_COLUMNS
    from pytest_skilllift.week.files import TRIGGERS_CSV, TRIGGERS_DIR

    week = tmp_path / REF_WEEK.name
    shutil.copytree(REF_WEEK, week)
    (week / TRIGGERS_DIR).mkdir()
    with (week / TRIGGERS_DIR / TRIGGERS_CSV).open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(TRIGGER_COLUMNS), restval="")
        writer.writeheader()
        writer.writerows(_trigger_rows())
    s = summarize_week(week, write=False)
    _check(s.data, Scorecard, "scorecard")
    bisect = s.data["triggers"]["haiku"]["git-bisect"]
    assert bisect["false_triggers"][0]["fired"] == ["git-bisect", "review"]
    assert [m["q"] for m in bisect["misses"]] == [2] and len(bisect["excluded"]) == 1
    assert s.data["trigger_confusion"]["sonnet"]["multi_fired_runs"] == 1
    # The section sits between the audit and the baseline caveat; nothing else moved.
    md = s.markdown
    start = md.index("## Triggering")
    end = md.index("## Lift caveat — baseline self-served")
    assert md.index("## Trajectory audit") < start < end
    assert md[:start] + md[end:] == ref.markdown
