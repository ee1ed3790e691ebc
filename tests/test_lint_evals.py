"""``skilllift lint-evals``: each check on a weak eval file and on a sound look-alike; the
history checks on synthetic weeks; the summary line in the session's collection output."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_skilllift.cli import main as cli
from pytest_skilllift.config import DEMO_PROJECT
from pytest_skilllift.lint.evals import EvalLint, lint_evals

QDRANT = Path(__file__).parent / "fixtures" / "data" / "qdrant-skills"

SKILL_MD = ("---\nname: vec-store\ndescription: Vector store tuning. Use when tuning.\n---\n\n"
            "# Vec store\n\nAlways enable scalar quantization on collections above ten million "
            "points to keep memory flat.\n")
GOOD_RUBRIC = [
    {"type": "must", "text": "Recommends quantization to cut the memory footprint"},
    {"type": "must", "text": "Explains the recall cost of compressing vectors"},
    {"type": "must", "text": "Suggests measuring RAM before adding nodes"},
    {"type": "bonus", "text": "Mentions rescoring with the original vectors"},
    {"type": "avoid", "text": "Claims horizontal scaling is the only fix"},
]


def _project(root: Path, rubric: list[dict[str, str]] | None = None,
             prompt: str = "Our search got slow at 50M vectors on one node. What now?",
             name: str = "p1") -> Path:
    (root / "skills" / "vec-store").mkdir(parents=True, exist_ok=True)
    (root / "skills" / "vec-store" / "SKILL.md").write_text(SKILL_MD)
    (root / "evals" / "test-prompts").mkdir(parents=True, exist_ok=True)
    _prompt(root, name, rubric if rubric is not None else GOOD_RUBRIC, prompt)
    return root


def _prompt(root: Path, name: str, rubric: list[dict[str, str]], prompt: str) -> None:
    data = {"name": name, "product_area": "x", "skill": "vec-store/SKILL.md",
            "prompt": prompt, "rubric": rubric}
    (root / "evals" / "test-prompts" / f"{name}.json").write_text(json.dumps(data))


def _lint(root: Path, weeks: Path | None = None, **kw: Any) -> EvalLint:
    return lint_evals(prompts_dir=root / "evals" / "test-prompts", skills_root=root / "skills",
                      triggers_dir=root / "evals" / "triggers", weeks=weeks, base=root, **kw)


def _codes(res: EvalLint) -> list[str]:
    return [f.code for f in res.findings]


def test_a_sound_prompt_has_no_finding(tmp_path: Path) -> None:
    res = _lint(_project(tmp_path))
    assert res.findings == [] and res.prompt_files == 1
    assert res.summary() == "lint-evals: 0 warning(s) in 1 eval file(s)"


def test_rubric_shape_counts_are_shown(tmp_path: Path) -> None:
    rubric = [{"type": "must", "text": "Recommends quantization to cut memory"},
              {"type": "must", "text": "Explains the recall cost of compression"},
              {"type": "bonus", "text": "Mentions rescoring with original vectors"},
              {"type": "bonus", "text": "Shows the optimizer status endpoint"},
              {"type": "bonus", "text": "Links the sizing calculator"},
              {"type": "bonus", "text": "Notes oversampling trades latency for recall"}]
    [f] = _lint(_project(tmp_path, rubric)).findings
    assert (f.code, f.file, f.field) == ("RUBRIC_SHAPE", "evals/test-prompts/p1.json", "rubric")
    assert f.message.startswith("2 must, 4 bonus, 0 avoid (the methodology asks for 3–5 must, "
                                "1–3 bonus, 1–3 avoid; off: must, bonus, avoid)")
    assert "SCORING.md" in f.source


def test_empty_and_one_word_items(tmp_path: Path) -> None:
    rubric = [*GOOD_RUBRIC, {"type": "bonus", "text": "Quantization"},
              {"type": "avoid", "text": "  "}]
    res = _lint(_project(tmp_path, rubric))
    got = {(f.code, f.field, f.item) for f in res.findings}
    assert got == {("ONE_WORD_ITEM", "rubric[5].text", "Quantization"),
                   ("EMPTY_ITEM", "rubric[6].text", "  ")}


def test_duplicate_and_near_duplicate_items(tmp_path: Path) -> None:
    rubric = [*GOOD_RUBRIC,
              {"type": "bonus", "text": "Recommends quantization to cut the memory footprint."},
              {"type": "avoid", "text": "Claims horizontal scaling is the only possible fix"}]
    res = _lint(_project(tmp_path, rubric))
    got = {(f.code, f.field) for f in res.findings}
    assert got == {("DUPLICATE_ITEM", "rubric[5].text"), ("NEAR_DUPLICATE_ITEM", "rubric[6].text")}
    near = next(f for f in res.findings if f.code == "NEAR_DUPLICATE_ITEM")
    assert "rubric[4].text" in near.message


def test_related_but_distinct_items_are_not_near_duplicates(tmp_path: Path) -> None:
    rubric = [*GOOD_RUBRIC, {"type": "bonus", "text": "Mentions rescoring only for the top hits"}]
    assert _lint(_project(tmp_path, rubric)).findings == []


def test_identical_items_across_prompts(tmp_path: Path) -> None:
    root = _project(tmp_path)
    other = [dict(x) for x in GOOD_RUBRIC]
    other[2] = {"type": "must", "text": "Asks how many tenants share the collection"}
    other = [*other[:3], {"type": "must", "text": "Explains payload indexes for tenants"},
             *other[3:]]
    _prompt(root, "p2", [{"type": t["type"], "text": t["text"]} for t in other],
            "How should 5000 tenants share one deployment?")
    res = _lint(root)
    cross = [f for f in res.findings if f.code == "CROSS_PROMPT_DUPLICATE"]
    assert {f.item for f in cross} == {GOOD_RUBRIC[0]["text"], GOOD_RUBRIC[1]["text"],
                                       GOOD_RUBRIC[3]["text"], GOOD_RUBRIC[4]["text"]}
    assert all(f.file == "evals/test-prompts/p2.json" and "p1.json" in f.message for f in cross)


def test_prompt_naming_its_skill_leaks(tmp_path: Path) -> None:
    res = _lint(_project(tmp_path, prompt="Use the vec-store skill: how do I tune search?"))
    [f] = res.findings
    assert (f.code, f.field) == ("PROMPT_NAMES_SKILL", "prompt")
    assert "vec-store" in f.message


def test_prompt_using_the_words_not_the_name_does_not_leak(tmp_path: Path) -> None:
    # The family name is "vec-store"; "vector store" in plain words is the user's language.
    assert _lint(_project(tmp_path, prompt="My vector store is slow; how do I tune it?")
                 ).findings == []


def test_item_quoting_skill_md_verbatim(tmp_path: Path) -> None:
    rubric = [dict(x) for x in GOOD_RUBRIC]
    rubric[0] = {"type": "must", "text": "Says to always enable scalar quantization on "
                 "collections above ten million points"}
    [f] = _lint(_project(tmp_path, rubric)).findings
    assert (f.code, f.field) == ("ITEM_QUOTES_SKILL", "rubric[0].text")
    assert "'always enable scalar quantization on collections above ten million points'" in (
        f.message)


def test_item_sharing_a_few_words_with_skill_md_is_fine(tmp_path: Path) -> None:
    rubric = [dict(x) for x in GOOD_RUBRIC]
    rubric[0] = {"type": "must", "text": "Enables scalar quantization for large collections"}
    assert _lint(_project(tmp_path, rubric)).findings == []


def _triggers(root: Path, pos: int, neg: int, bare: bool = False) -> None:
    qs = ([{"query": f"should {i}", "should_trigger": True} for i in range(pos)]
          + [{"query": f"should not {i}", "should_trigger": False} for i in range(neg)])
    (root / "evals" / "triggers").mkdir(parents=True, exist_ok=True)
    data: Any = qs if bare else {"skill": "vec-store", "queries": qs}
    (root / "evals" / "triggers" / "vec-store.json").write_text(json.dumps(data))


@pytest.mark.parametrize(("pos", "neg", "bare", "codes"), [
    (6, 0, False, ["NO_NEGATIVE_TRIGGERS", "FEW_TRIGGERS"]),
    (5, 3, True, ["FEW_TRIGGERS"]),
    (5, 5, False, []),
    (7, 6, True, []),
])
def test_trigger_sets(tmp_path: Path, pos: int, neg: int, bare: bool, codes: list[str]) -> None:
    root = _project(tmp_path)
    _triggers(root, pos, neg, bare)
    res = _lint(root)
    assert _codes(res) == codes and res.trigger_files == 1
    for f in res.findings:
        assert f.file == "evals/triggers/vec-store.json" and f.field == "queries"
        assert f"{pos} should" in f.message


def test_unreadable_file_is_a_finding_and_the_others_are_linted(tmp_path: Path) -> None:
    root = _project(tmp_path)
    (root / "evals" / "test-prompts" / "broken.json").write_text("{not json")
    _prompt(root, "p3", [{"type": "must", "text": "x"}], "A question?")
    res = _lint(root)
    assert ("UNREADABLE", "evals/test-prompts/broken.json") in {(f.code, f.file)
                                                               for f in res.findings}
    assert "ONE_WORD_ITEM" in _codes(res) and res.prompt_files == 3


def test_skill_creator_evals_are_linted(tmp_path: Path) -> None:
    root = tmp_path
    shutil.copytree(QDRANT / "skills", root / "skills")
    evals = root / "skills" / "qdrant-scaling" / "evals"
    evals.mkdir()
    data = json.loads((QDRANT / "evals" / "evals.json").read_text())
    data["evals"][0]["expectations"].append("Quantization")
    data["evals"][1]["prompt"] = "Using the qdrant-scaling skill, " + data["evals"][1]["prompt"]
    (evals / "evals.json").write_text(json.dumps(data))
    res = lint_evals(prompts_dir=None, skills_root=root / "skills",
                     skill_creator_files=[evals / "evals.json"], base=root)
    got = {(f.code, f.field) for f in res.findings}
    assert ("ONE_WORD_ITEM", "evals[0].expectations[5]") in got
    assert ("PROMPT_NAMES_SKILL", "prompt") in got
    assert res.skill_creator_files == 1
    assert not any(f.code == "RUBRIC_SHAPE" for f in res.findings)  # untyped expectations


def test_real_qdrant_prompts_find_only_real_problems() -> None:
    res = lint_evals(prompts_dir=QDRANT / "test-prompts", skills_root=QDRANT / "skills",
                     base=QDRANT)
    assert res.prompt_files == 26
    # One prompt has five bonus items; none names its skill; no empty or duplicate item.
    shape = [f.file for f in res.findings if f.code == "RUBRIC_SHAPE"]
    assert shape == ["test-prompts/qdrant-hybrid-search.json"]
    assert set(_codes(res)) == {"RUBRIC_SHAPE", "ITEM_QUOTES_SKILL"}


# ---------------------------------------------------------------------------------------------
# history


HEADER = ["prompt", "skill", "model", "condition", "rep", "item_type", "item_text", "verdict",
          "credit", "contribution", "contested", "evidence_quote"]


def _week(weeks: Path, day: str, rows: list[tuple[str, str, str, str, str]]) -> None:
    """rows: (condition, rep, item_type, item_text, verdict[:contested])."""
    d = weeks / day
    d.mkdir(parents=True)
    with (d / "scores.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(HEADER)
        for cond, rep, itype, text, verdict in rows:
            v, _, contested = verdict.partition(":")
            w.writerow(["p1", "vec-store", "haiku", cond, rep, itype, text, v, "", "",
                        contested, ""])


def _arms(itype: str, text: str, no: str, with_: str) -> list[tuple[str, str, str, str, str]]:
    return [(c, r, itype, text, v) for c, v in (("no-skill", no), ("with-skill", with_))
            for r in ("1", "2")]


def test_history_non_discriminating_and_contested(tmp_path: Path) -> None:
    root = _project(tmp_path)
    weeks = tmp_path / "weekly"
    always = GOOD_RUBRIC[0]["text"]  # met everywhere
    lifted = GOOD_RUBRIC[1]["text"]  # met only with the skill
    avoid = GOOD_RUBRIC[4]["text"]   # clean everywhere
    argued = GOOD_RUBRIC[2]["text"]  # contested twice
    for day in ("20260801", "20260808", "20260815"):
        rows = [*_arms("must", always, "met", "met"), *_arms("must", lifted, "missing", "met"),
                *_arms("avoid", avoid, "clean", "clean"),
                *_arms("must", argued, "missing", "met:1" if day != "20260801" else "met")]
        _week(weeks, day, rows)
    res = _lint(root, weeks)
    found = {(f.code, f.item) for f in res.findings}
    assert found == {("NON_DISCRIMINATING", always), ("NON_DISCRIMINATING", avoid),
                     ("CONTESTED_ITEM", argued)}
    nd = next(f for f in res.findings if f.item == always)
    assert nd.field == "rubric[0].text" and nd.file == "evals/test-prompts/p1.json"
    assert "met in both arms in all 12 runs of the last 3 weeks" in nd.message
    clean = next(f for f in res.findings if f.item == avoid)
    assert clean.message.startswith("clean in both arms")
    assert res.weeks == ["20260801", "20260808", "20260815"]


def test_history_needs_two_weeks_and_every_run(tmp_path: Path) -> None:
    root = _project(tmp_path)
    weeks = tmp_path / "weekly"
    text = GOOD_RUBRIC[0]["text"]
    _week(weeks, "20260801", _arms("must", text, "met", "met"))
    assert _lint(root, weeks).findings == []  # one week says too little
    rows = _arms("must", text, "met", "met")
    rows[0] = ("no-skill", "1", "must", text, "missing")  # one run in one arm missed it
    _week(weeks, "20260808", rows)
    assert _lint(root, weeks).findings == []


def test_history_last_n_weeks(tmp_path: Path) -> None:
    root = _project(tmp_path)
    weeks = tmp_path / "weekly"
    text = GOOD_RUBRIC[0]["text"]
    _week(weeks, "20260801", _arms("must", text, "missing", "met"))  # it once discriminated
    for day in ("20260808", "20260815"):
        _week(weeks, day, _arms("must", text, "met", "met"))
    assert _lint(root, weeks).findings == []  # over all three weeks it did discriminate
    assert _codes(_lint(root, weeks, last=2)) == ["NON_DISCRIMINATING"]


# ---------------------------------------------------------------------------------------------
# the command


def _run(*argv: str) -> tuple[int, str]:
    buf = io.StringIO()
    parser = cli.build_parser("lint-evals")
    args = parser.parse_args(list(argv))
    return args.func(args, buf), buf.getvalue()


def test_cli_text_json_and_strict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _project(tmp_path, [*GOOD_RUBRIC, {"type": "bonus", "text": "Quantization"}])
    monkeypatch.chdir(tmp_path)
    code, text = _run("lint-evals")
    assert code == 0
    assert ("evals/test-prompts/p1.json: rubric[5].text: ONE_WORD_ITEM: a one-word item"
            in text)
    assert "    item: 'Quantization'" in text and "    fix: Write the item" in text
    assert text.rstrip().endswith("lint-evals: 1 warning(s) in 1 eval file(s) (1 ONE_WORD_ITEM)")
    code, text = _run("lint-evals", "--output", "json")
    data = json.loads(text)
    assert code == 0 and data["n_findings"] == 1
    assert data["findings"][0] | {"message": ""} == {
        "code": "ONE_WORD_ITEM", "file": "evals/test-prompts/p1.json", "field": "rubric[5].text",
        "item": "Quantization", "message": "", "fix": data["findings"][0]["fix"],
        "source": data["findings"][0]["source"]}
    assert _run("lint-evals", "--strict")[0] == 1


def test_cli_usage_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert _run("lint-evals")[0] == 2
    assert "no eval file found" in capsys.readouterr().err
    _project(tmp_path)
    assert _run("lint-evals", "--weeks", "nope")[0] == 2
    assert "--weeks nope: not a directory" in capsys.readouterr().err


def test_cli_on_the_real_week(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(QDRANT)
    code, text = _run("lint-evals", "--prompts", "test-prompts", "--weeks", "weekly")
    assert code == 0
    assert "1 week(s) of history" in text.splitlines()[-1]


# ---------------------------------------------------------------------------------------------
# the session's collection output


def _plugin_project(pytester: pytest.Pytester) -> None:
    shutil.copytree(DEMO_PROJECT / "skills", pytester.path / "skills")
    shutil.copytree(DEMO_PROJECT / "evals" / "test-prompts",
                    pytester.path / "evals" / "test-prompts")
    shutil.copytree(DEMO_PROJECT / "evals" / "triggers", pytester.path / "evals" / "triggers")
    pytester.makeini("[pytest]\nskill_lift_models = haiku\nskill_lift_reps = 1\n"
                     "skill_lift_out = week\n")


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_summary_line_in_collection_output(pytester: pytest.Pytester,
                                           xdist: tuple[str, ...]) -> None:
    _plugin_project(pytester)
    result = pytester.runpytest_subprocess("--skill-lift", "--collect-only", "-q",
                                           "-p", "no:cacheprovider", *xdist)
    result.stdout.fnmatch_lines([
        "skill-lift lint-evals: 2 warning(s) in 4 eval file(s) (1 FEW_TRIGGERS, "
        "1 ITEM_QUOTES_SKILL); details: skilllift lint-evals"])


def test_the_near_duplicate_shortcut_gives_difflibs_answer() -> None:
    """The length and letter bounds tried before the ratio never change the answer: on
    random item pairs (many near each other) the result is difflib's ratio ≥ the bar."""
    import random
    from collections import Counter
    from difflib import SequenceMatcher

    from pytest_skilllift.lint.evals import NEAR_DUPLICATE, _near

    rng = random.Random(7)
    words = ["the", "answer", "names", "uses", "a", "index", "payload", "filter", "vector",
             "shard", "replica", "quantization"]
    pairs = []
    for _ in range(3000):
        a = " ".join(rng.choices(words, k=rng.randint(2, 14)))
        b = a if rng.random() < 0.2 else " ".join(
            w if rng.random() < 0.8 else rng.choice(words) for w in a.split())
        if rng.random() < 0.3:
            b += " " + " ".join(rng.choices(words, k=rng.randint(0, 3)))
        pairs.append((a, b))
    near = [(SequenceMatcher(None, a, b).ratio() >= NEAR_DUPLICATE) for a, b in pairs]
    assert [_near(a, b, Counter(a), Counter(b)) for a, b in pairs] == near
    assert 300 < sum(near) < 2700  # both answers are well represented
