"""``skilllift lint-evals``: are the eval files themselves any good?

A rubric that names the skill measures conformity, a prompt that names the skill leaks the
answer, an item met in both arms every week tells nothing. The checks, each a warning with the
file, the field, the item and a fix:

- rubric shape against qdrant/skills SCORING.md ("Test Prompts"): three to five must, one to
  three bonus, one to three avoid items per prompt (counts shown); an empty or one-word item;
  duplicate or near-duplicate items within a prompt; identical items across prompts (the
  linting of eval specs in dotnet/skills' Vally: duplicate names, empty graders);
- leakage: the prompt names its skill or family; a rubric item quotes the SKILL.md verbatim
  (it grades conformity to the text, not correctness);
- trigger sets (``evals/triggers/*.json``, skill-creator's bare list): no ``should_trigger:
  false`` query, or fewer than five of either kind (Anthropic skill-creator's description
  eval writes both kinds);
- history (``--weeks DIR``): items met (avoid: clean) in both arms in every run of the last
  weeks — non-discriminating, like the assertions skill-creator's analyst flags as passing
  regardless of the skill — and items contested in two or more weeks.

Pure logic: reads files, never imports pytest.
"""

from __future__ import annotations

import csv
import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

from pytest_skilllift.run.prompts import holds_placeholder, skill_path_from_url

SCORING = "qdrant/skills SCORING.md, Test Prompts"
#: (least, most) items per prompt, by type (qdrant/skills SCORING.md).
RUBRIC_SHAPE: dict[str, tuple[int, int]] = {"must": (3, 5), "bonus": (1, 3), "avoid": (1, 3)}
#: Near-duplicates: difflib ratio of the normalised texts at or above this.
NEAR_DUPLICATE = 0.85
#: A rubric item "quotes" SKILL.md when it shares this many consecutive words with it.
QUOTE_WORDS = 8
#: Least queries of each kind in a trigger set.
MIN_TRIGGERS = 5
#: History: the last weeks looked at, and the least weeks an item must span to be judged.
LAST_WEEKS = 4
MIN_WEEKS = 2
#: Verdicts that mean "the answer did well on this item", per type (week/columns.VERDICTS).
GOOD_VERDICT = {"must": "met", "bonus": "met", "avoid": "clean"}
_WORD = re.compile(r"[a-z0-9]+(?:['’.-][a-z0-9]+)*")


@dataclass(frozen=True)
class EvalFinding:
    """One problem in an eval file."""

    code: str
    file: str
    field: str
    item: str
    message: str
    fix: str
    source: str = ""

    def to_json(self) -> dict[str, Any]:
        """The finding in ``--output json``."""
        return {"code": self.code, "file": self.file, "field": self.field, "item": self.item,
                "message": self.message, "fix": self.fix, "source": self.source}

    def text(self) -> str:
        """``file: field: CODE: message`` then the item and the fix."""
        item = f"\n    item: {self.item!r}" if self.item else ""
        return f"{self.file}: {self.field}: {self.code}: {self.message}{item}\n    fix: {self.fix}"


@dataclass
class EvalLint:
    """Everything found, and what was read."""

    findings: list[EvalFinding] = field(default_factory=list)
    prompt_files: int = 0
    trigger_files: int = 0
    skill_creator_files: int = 0
    weeks: list[str] = field(default_factory=list)
    #: Files still holding the ``skilllift init`` placeholder: not linted (their text is
    #: init's, not the author's), counted here.
    placeholders: int = 0

    @property
    def files(self) -> int:
        """Eval files read."""
        return self.prompt_files + self.trigger_files + self.skill_creator_files

    def summary(self) -> str:
        """One line, for the session's collection output and the command's last line."""
        weeks = f", {len(self.weeks)} week(s) of history" if self.weeks else ""
        by_code: dict[str, int] = defaultdict(int)
        for f in self.findings:
            by_code[f.code] += 1
        detail = ", ".join(f"{n} {c}" for c, n in sorted(by_code.items()))
        todo = (f"; {self.placeholders} still the init placeholder, not linted"
                if self.placeholders else "")
        return (f"lint-evals: {len(self.findings)} warning(s) in {self.files} eval file(s)"
                f"{weeks}" + (f" ({detail})" if detail else "") + todo)

    def to_json(self) -> dict[str, Any]:
        """``skilllift lint-evals --output json``."""
        return {"prompt_files": self.prompt_files, "trigger_files": self.trigger_files,
                "skill_creator_files": self.skill_creator_files, "weeks": self.weeks,
                "placeholders": self.placeholders,
                "n_findings": len(self.findings),
                "findings": [f.to_json() for f in self.findings]}


@dataclass(frozen=True)
class Rubric:
    """A prompt and its items, whatever file format they came from."""

    file: str
    name: str
    prompt: str
    family: str
    skill_md: Path | None
    #: ``(field, type or "", text)``; type is "" for skill-creator expectations.
    items: tuple[tuple[str, str, str], ...]


# ---------------------------------------------------------------------------------------------
# text helpers


def words(text: str) -> list[str]:
    """Lower-cased words (hyphenated names kept whole)."""
    return _WORD.findall(text.lower())


def normal(text: str) -> str:
    """The text as compared for duplicates: its words joined by single spaces."""
    return " ".join(words(text))


def _names_in(text: str, names: Iterable[str]) -> list[str]:
    """The skill names the text holds as whole words (case-insensitive)."""
    low = text.lower()
    return [n for n in names if n and re.search(rf"(?<![\w-]){re.escape(n.lower())}(?![\w-])",
                                                 low)]


def _quote(item: str, grams: set[tuple[str, ...]]) -> str | None:
    """The first run of at least QUOTE_WORDS words of ``item`` found in the SKILL.md, as
    long as it goes on, or None."""
    w = words(item)
    n = QUOTE_WORDS
    for i in range(len(w) - n + 1):
        if tuple(w[i:i + n]) in grams:
            end = i + n
            while end < len(w) and tuple(w[end - n + 1:end + 1]) in grams:
                end += 1
            return " ".join(w[i:end])
    return None


def _grams(text: str) -> set[tuple[str, ...]]:
    w = words(text)
    return {tuple(w[i:i + QUOTE_WORDS]) for i in range(len(w) - QUOTE_WORDS + 1)}


# ---------------------------------------------------------------------------------------------
# reading the files (every problem is a finding, never an exception)


def _read_json(path: Path, shown: str, out: list[EvalFinding]) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except RecursionError:
        out.append(EvalFinding("UNREADABLE", shown, "(file)", "", "cannot be read: it nests "
                               "arrays or objects too deeply for the JSON parser",
                               "Write the file as a flat object; `skilllift lint-evals` skips "
                               "it until then."))
        return None
    except (OSError, ValueError) as exc:  # ValueError: bad JSON, an integer of 4,300+ digits
        out.append(EvalFinding("UNREADABLE", shown, "(file)", "", f"cannot be read: {exc}",
                               "Fix the JSON (or the file's encoding); `skilllift lint-evals` "
                               "skips it until then."))
        return None


def _skill_md(skills_root: Path, rel: str) -> Path | None:
    p = skills_root / rel
    if p.name != "SKILL.md":
        p = p / "SKILL.md"
    return p if p.is_file() else None


def read_prompt_file(path: Path, shown: str, skills_root: Path, out: list[EvalFinding],
                     site: str = "") -> Rubric | None:
    """A qdrant-format prompt file (``name``, ``prompt``, ``skill_url``/``skill``,
    ``rubric``); None (with a finding) when its shape is unusable."""
    data = _read_json(path, shown, out)
    if data is None:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("rubric"), list):
        out.append(EvalFinding("UNREADABLE", shown, "rubric", "", "no rubric list",
                               'Give "rubric": [{"type": "must", "text": "..."}, ...].'))
        return None
    rel = str(data.get("skill") or "")
    if not rel and data.get("skill_url"):
        try:
            rel = skill_path_from_url(str(data["skill_url"]), site)
        except ValueError:
            rel = ""  # the collection reports a skill_url off the site; nothing to compare
    rel = rel.lstrip("/")
    family = rel.split("/", 1)[0] if rel else ""
    items: list[tuple[str, str, str]] = []
    for i, raw in enumerate(data["rubric"]):
        if isinstance(raw, dict):
            items.append((f"rubric[{i}].text", str(raw.get("type", "")),
                          str(raw.get("text") or "")))
    return Rubric(shown, str(data.get("name") or path.stem), str(data.get("prompt") or ""),
                  family, _skill_md(skills_root, rel) if rel else None, tuple(items))


def read_skill_creator_file(path: Path, shown: str, skills_root: Path,
                            out: list[EvalFinding]) -> list[Rubric]:
    """Anthropic skill-creator ``evals/evals.json``: one rubric per eval (its expectations)."""
    data = _read_json(path, shown, out)
    if not isinstance(data, dict) or not isinstance(data.get("evals"), list):
        if data is not None:
            out.append(EvalFinding("UNREADABLE", shown, "evals", "", "no evals list",
                                   'Give "evals": [{"prompt": ..., "expectations": [...]}].'))
        return []
    family = str(data.get("skill_name") or path.parent.parent.name)
    skill_md = _skill_md(skills_root, family) or _skill_md(path.parent.parent, ".")
    rubrics = []
    for i, ev in enumerate(data["evals"]):
        if not isinstance(ev, dict):
            continue
        raw = ev.get("expectations")
        exp: list[Any] = raw if isinstance(raw, list) else []
        items = tuple((f"evals[{i}].expectations[{j}]", "", str(x or ""))
                      for j, x in enumerate(exp))
        rubrics.append(Rubric(shown, f"{family}#{ev.get('id', i + 1)}",
                              str(ev.get("prompt") or ""), family, skill_md, items))
    return rubrics


# ---------------------------------------------------------------------------------------------
# the checks


def check_shape(r: Rubric) -> list[EvalFinding]:
    """3–5 must, 1–3 bonus, 1–3 avoid (typed rubrics only)."""
    if not any(t for _, t, _ in r.items):
        return []
    counts = {t: sum(1 for _, it, _ in r.items if it == t) for t in RUBRIC_SHAPE}
    off = [t for t, (lo, hi) in RUBRIC_SHAPE.items() if not lo <= counts[t] <= hi]
    if not off:
        return []
    shown = ", ".join(f"{counts[t]} {t}" for t in RUBRIC_SHAPE)
    wanted = ", ".join(f"{lo}–{hi} {t}" for t, (lo, hi) in RUBRIC_SHAPE.items())
    return [EvalFinding("RUBRIC_SHAPE", r.file, "rubric", "",
                        f"{shown} (the methodology asks for {wanted}; off: {', '.join(off)})",
                        "Add or merge items so each type is within its range.", SCORING)]


def _near(a: str, b: str, letters_a: Counter[str], letters_b: Counter[str]) -> bool:
    """difflib's ratio of the two at or above NEAR_DUPLICATE. Its two upper bounds are tried
    first, as ``difflib.get_close_matches`` does, computed here without building a
    SequenceMatcher (whose index of ``b`` is most of its cost): the lengths'
    (``real_quick_ratio``) and the shared letters' (``quick_ratio``, from each item's letter
    counts, made once). The same answer; the lint line after a 2,000-prompt collection spent
    ≈ 9 s matching pairs that could not reach the bar."""
    total = len(a) + len(b)
    if total == 0:
        return True  # difflib: two empty sequences are identical (ratio 1.0)
    if 2.0 * min(len(a), len(b)) / total < NEAR_DUPLICATE:
        return False
    if 2.0 * sum((letters_a & letters_b).values()) / total < NEAR_DUPLICATE:
        return False
    return SequenceMatcher(None, a, b).ratio() >= NEAR_DUPLICATE


def check_items(r: Rubric) -> list[EvalFinding]:
    """Empty or one-word items; duplicates and near-duplicates within the prompt."""
    out: list[EvalFinding] = []
    seen: list[tuple[str, str, str, Counter[str]]] = []  # (field, text, normalised, letters)
    for fld, _, text in r.items:
        n = normal(text)
        letters = Counter(n)
        if len(n.split()) <= 1:
            out.append(EvalFinding(
                "EMPTY_ITEM" if not n else "ONE_WORD_ITEM", r.file, fld, text,
                "an empty item" if not n else "a one-word item: the judge has to guess what "
                "it asks for", "Write the item as a checkable statement about the answer "
                "(\"Recommends X because Y\").", SCORING))
            continue
        for other_field, other_text, other_n, other_letters in seen:
            if n == other_n:
                out.append(EvalFinding("DUPLICATE_ITEM", r.file, fld, text,
                                       f"the same item as {other_field}",
                                       "Delete one of the two: a duplicate counts twice."))
                break
            if _near(n, other_n, letters, other_letters):
                out.append(EvalFinding("NEAR_DUPLICATE_ITEM", r.file, fld, text,
                                       f"nearly the same as {other_field}: {other_text!r}",
                                       "Merge the two, or make each ask for something "
                                       "different."))
                break
        seen.append((fld, text, n, letters))
    return out


def check_across(rubrics: Sequence[Rubric]) -> list[EvalFinding]:
    """Identical items in different prompts (copy-pasted criteria grade nothing specific)."""
    where: dict[str, list[tuple[Rubric, str, str]]] = defaultdict(list)
    for r in rubrics:
        for fld, _, text in r.items:
            n = normal(text)
            if len(n.split()) > 1:
                where[n].append((r, fld, text))
    out = []
    for places in where.values():
        prompts = {p[0].name for p in places}
        if len(prompts) < 2:
            continue
        first = places[0]
        for r, fld, text in places[1:]:
            if r.name != first[0].name:
                out.append(EvalFinding(
                    "CROSS_PROMPT_DUPLICATE", r.file, fld, text,
                    f"identical to {first[0].file} {first[1]} (prompt {first[0].name!r})",
                    "Make the item specific to this prompt's question, or drop it."))
    return out


def check_leakage(r: Rubric, skill_names: Sequence[str],
                  grams: set[tuple[str, ...]]) -> list[EvalFinding]:
    """The prompt names its skill or family; an item quotes the SKILL.md verbatim."""
    out = []
    named = _names_in(r.prompt, skill_names)
    if named:
        out.append(EvalFinding(
            "PROMPT_NAMES_SKILL", r.file, "prompt", r.prompt[:160],
            f"the prompt names the skill ({', '.join(named)}): it tells the agent which skill "
            "to load, so the lift measures the hint, not the skill",
            "Ask the question a user would ask without knowing the skill exists."))
    if grams:
        for fld, _, text in r.items:
            q = _quote(text, grams)
            if q:
                out.append(EvalFinding(
                    "ITEM_QUOTES_SKILL", r.file, fld, text,
                    f"quotes the SKILL.md verbatim ({q!r}): it grades conformity to the "
                    "skill's wording, not a correct answer",
                    "State what a correct answer contains in your own words, so an answer "
                    "without the skill can meet it too."))
    return out


def check_triggers(path: Path, shown: str, out: list[EvalFinding]) -> bool:
    """A trigger set: both kinds, at least MIN_TRIGGERS of each. False when unreadable."""
    data = _read_json(path, shown, out)
    if data is None:
        return False
    queries = data.get("queries") if isinstance(data, dict) else data
    if not isinstance(queries, list):
        out.append(EvalFinding("UNREADABLE", shown, "queries", "", "no queries list",
                               'Give "queries": [{"query": ..., "should_trigger": true}, ...].'))
        return False
    pos = sum(1 for q in queries if isinstance(q, dict) and q.get("should_trigger") is True)
    neg = sum(1 for q in queries if isinstance(q, dict) and q.get("should_trigger") is False)
    src = "Anthropic skill-creator, description optimization (should-trigger and should-not)"
    if neg == 0:
        out.append(EvalFinding(
            "NO_NEGATIVE_TRIGGERS", shown, "queries", "",
            f"{pos} should_trigger: true and no should_trigger: false query: a description "
            "that fires on everything passes", "Add near-miss queries that must not load the "
            "skill (a sibling skill's question, shared vocabulary asking for something else).",
            src))
    if (pos < MIN_TRIGGERS or neg < MIN_TRIGGERS) and (pos or neg):
        out.append(EvalFinding(
            "FEW_TRIGGERS", shown, "queries", "",
            f"{pos} should-trigger and {neg} should-not queries (fewer than {MIN_TRIGGERS} "
            "of a kind: one miss moves recall or precision by 20 points or more)",
            f"Write at least {MIN_TRIGGERS} queries of each kind.", src))
    return True


# ---------------------------------------------------------------------------------------------
# history


def week_dirs(weeks: Path) -> list[Path]:
    """Week directories (holding scores.csv) under ``weeks``, oldest first."""
    if (weeks / "scores.csv").is_file():
        return [weeks]
    return sorted(d for d in weeks.iterdir() if d.is_dir() and (d / "scores.csv").is_file())


def check_history(weeks: Sequence[Path], by_prompt: dict[str, Rubric], *,
                  last: int = LAST_WEEKS, min_weeks: int = MIN_WEEKS) -> list[EvalFinding]:
    """Non-discriminating items (good in both arms in every run of the last weeks) and items
    contested in ``min_weeks`` or more weeks."""
    recent = list(weeks)[-last:]
    # (prompt, type, text) -> week -> [good?] per arm, and weeks where contested
    runs: dict[tuple[str, str, str], dict[str, dict[str, list[bool]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list)))
    contested: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for wk in recent:
        with (wk / "scores.csv").open(newline="", encoding="utf-8") as fh:
            for row in csv.DictReader(fh):
                key = (row.get("prompt", ""), row.get("item_type", ""), row.get("item_text", ""))
                good = row.get("verdict", "") == GOOD_VERDICT.get(key[1], "")
                runs[key][wk.name][row.get("condition", "")].append(good)
                if (row.get("contested") or "").strip().lower() not in ("", "0", "false", "no"):
                    contested[key].add(wk.name)
    out: list[EvalFinding] = []
    for key, per_week in runs.items():
        prompt, itype, text = key
        r = by_prompt.get(prompt)
        file, fld = (r.file, _field_of(r, text)) if r else (f"{prompt} (scores.csv)", "rubric")
        both = [w for w, arms in per_week.items()
                if {"no-skill", "with-skill"} <= set(arms) and all(all(v) for v in arms.values())]
        if len(both) == len(per_week) >= min_weeks:
            n = sum(len(v) for arms in per_week.values() for v in arms.values())
            verdict = GOOD_VERDICT.get(itype, "met")
            out.append(EvalFinding(
                "NON_DISCRIMINATING", file, fld, text,
                f"{verdict} in both arms in all {n} runs of the last {len(per_week)} weeks "
                f"({', '.join(sorted(per_week))}): it cannot show a lift",
                "Rewrite it around what the skill adds (what an answer without it gets "
                "wrong), or drop it.", "Anthropic skill-creator, analyzer (assertions that "
                "pass regardless of the skill)"))
        if len(contested.get(key, ())) >= min_weeks:
            out.append(EvalFinding(
                "CONTESTED_ITEM", file, fld, text,
                f"contested by the judge in {len(contested[key])} weeks "
                f"({', '.join(sorted(contested[key]))}): its wording is ambiguous",
                "Make the item decidable from the answer alone (one claim, no 'or').",
                SCORING))
    return out


def _field_of(r: Rubric, text: str) -> str:
    return next((f for f, _, t in r.items if t == text), "rubric")


# ---------------------------------------------------------------------------------------------
# entry point


def lint_evals(*, prompts_dir: Path | None, skills_root: Path, triggers_dir: Path | None = None,
               skill_creator_files: Sequence[Path] = (), weeks: Path | None = None,
               base: Path | None = None, last: int = LAST_WEEKS,
               min_weeks: int = MIN_WEEKS, site: str = "") -> EvalLint:
    """Lint every eval file found; paths are shown relative to ``base``."""
    res = EvalLint()
    out = res.findings

    def shown(p: Path) -> str:
        try:
            return p.relative_to(base).as_posix() if base else p.as_posix()
        except ValueError:
            return p.as_posix()

    rubrics: list[Rubric] = []
    for p in sorted(prompts_dir.glob("*.json")) if prompts_dir and prompts_dir.is_dir() else []:
        if holds_placeholder(p):
            res.placeholders += 1
            continue
        res.prompt_files += 1
        r = read_prompt_file(p, shown(p), skills_root, out, site)
        if r is not None:
            rubrics.append(r)
    for p in skill_creator_files:
        res.skill_creator_files += 1
        rubrics += read_skill_creator_file(p, shown(p), skills_root, out)
    grams_cache: dict[Path, set[tuple[str, ...]]] = {}
    for r in rubrics:
        out += check_shape(r)
        out += check_items(r)
        names = [r.family, *_skill_names(r.skill_md)]
        grams: set[tuple[str, ...]] = set()
        if r.skill_md is not None:
            if r.skill_md not in grams_cache:
                grams_cache[r.skill_md] = _grams(_read_text(r.skill_md))
            grams = grams_cache[r.skill_md]
        out += check_leakage(r, names, grams)
    out += check_across(rubrics)
    for p in sorted(triggers_dir.glob("*.json")) if triggers_dir and triggers_dir.is_dir() else []:
        if holds_placeholder(p):
            res.placeholders += 1
            continue
        res.trigger_files += 1
        check_triggers(p, shown(p), out)
    if weeks is not None:
        dirs = week_dirs(weeks)
        res.weeks = [d.name for d in dirs[-last:]]
        out += check_history(dirs, {r.name: r for r in rubrics}, last=last,
                             min_weeks=min_weeks)
    return res


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _skill_names(skill_md: Path | None) -> list[str]:
    """The frontmatter ``name`` of the SKILL.md (the family name is added by the caller)."""
    if skill_md is None:
        return []
    m = re.search(r"^name:\s*[\"']?([^\"'\n]+?)[\"']?\s*$", _read_text(skill_md)[:4096],
                  re.MULTILINE)
    return [m.group(1)] if m else []


def session_line(*, prompts_dir: Path, skills_root: Path, triggers_dir: Path, rootdir: Path,
                 site: str = "", skill_creator: bool = True) -> str:
    """The summary line ``pytest --skill-lift`` prints after collection (no history: a
    large week's scores.csv is not read before the first run)."""
    from pytest_skilllift.run.skill_creator import find_evals_files

    try:
        files = find_evals_files(rootdir, skills_root) if skill_creator else []
        res = lint_evals(prompts_dir=prompts_dir, skills_root=skills_root,
                         triggers_dir=triggers_dir, skill_creator_files=files, base=rootdir,
                         site=site)
    except OSError as exc:  # an unreadable directory: say so, never stop the session
        return f"skill-lift lint-evals: not run ({exc})"
    more = "; details: skilllift lint-evals" if res.findings else ""
    return f"skill-lift {res.summary()}{more}"
