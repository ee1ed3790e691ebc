"""Anthropic skill-creator ``evals/evals.json`` files, read as prompts without rewriting.

The skill-creator schema (``references/schemas.md`` in anthropics/skills)::

    {"skill_name": "example-skill",
     "evals": [{"id": 1, "prompt": "…", "expected_output": "…",
                "files": ["evals/files/sample1.pdf"], "expectations": ["…", …]}]}

Two places are read:

- a skill folder's own ``<skill>/evals/evals.json`` (the schema's home: ``files`` are
  relative to the skill root);
- a repository-level ``evals/evals.json`` naming its skill in ``skill_name`` (as the
  qdrant/skills repository ships one); ``files`` are relative to the repository root, then
  to the skill root.

Each eval becomes a prompt of that skill named ``<skill>-eval-<id>``: every expectation a
``must`` item (``assertions`` is accepted for ``expectations``, as strings or as
``{"text": …}`` objects), ``expected_output`` shown to the judge as context (never an item),
``files`` copied into the run's working directory at their relative paths. No pytest here.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Any

from pytest_skilllift.model import PromptSpec, RubricItem
from pytest_skilllift.run.prompts import PromptError, read_json_file
from pytest_skilllift.week.files import safe_name

EVALS_DIR, EVALS_NAME = "evals", "evals.json"
_FM_NAME = re.compile(r"^name:\s*['\"]?([^'\"\n]+?)['\"]?\s*$", re.MULTILINE)

#: How the judge is told about ``expected_output`` (context, not an item to grade).
CONTEXT_HEADER = ("Expected output, as the eval's author describes success (context for "
                  "grading the items below; it is not an item itself):")


def judge_prompt_text(prompt: PromptSpec) -> str:
    """The prompt as the judge sees it: the user prompt, plus ``judge_context`` when set."""
    if not prompt.judge_context:
        return prompt.prompt
    return f"{prompt.prompt}\n\n---\n{CONTEXT_HEADER}\n{prompt.judge_context}"


def find_evals_files(rootdir: Path, skills_root: Path) -> list[Path]:
    """skill-creator eval files: ``<skill>/evals/evals.json`` under the skills root (the
    folder beside ``evals/`` holds a SKILL.md) and the repository's ``evals/evals.json``."""
    found: list[Path] = []
    if skills_root.is_dir():
        for path in sorted(skills_root.rglob(EVALS_NAME)):
            if path.parent.name == EVALS_DIR and (path.parent.parent / "SKILL.md").is_file():
                found.append(path)
    repo = rootdir / EVALS_DIR / EVALS_NAME
    if repo.is_file() and repo not in found:
        found.append(repo)
    return found


def _read(path: Path) -> dict[str, Any]:
    data = read_json_file(path)
    if not isinstance(data, dict):
        raise PromptError(path, "(file)", f"holds a JSON {type(data).__name__}, not an object",
                          'use {"skill_name": "…", "evals": [{"id": 1, "prompt": "…", '
                          '"expectations": ["…"]}]} (Anthropic skill-creator\'s evals.json)')
    return data


def _frontmatter_name(skill_md: Path) -> str | None:
    try:
        text = skill_md.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if not text.startswith("---"):
        return None
    head = text.split("---", 2)[1] if text.count("---") >= 2 else ""
    m = _FM_NAME.search(head)
    return m.group(1).strip() if m else None


def _locate_skill(path: Path, data: dict[str, Any], skills_root: Path) -> tuple[Path, bool]:
    """The skill directory an evals.json belongs to, and whether it is the skill's own."""
    root = skills_root.resolve()
    own = path.resolve().parent.parent
    name = data.get("skill_name")
    if path.parent.name == EVALS_DIR and (own / "SKILL.md").is_file() and root in own.parents:
        if isinstance(name, str) and name.strip() and name.strip() not in (
                own.name, _frontmatter_name(own / "SKILL.md")):
            raise PromptError(path, "skill_name", f"is {name.strip()!r} but the file sits in "
                              f"the skill folder {own.name!r}",
                              f"set it to {own.name!r} (or to the SKILL.md frontmatter name)")
        return own, True
    if not isinstance(name, str) or not name.strip():
        raise PromptError(path, "skill_name", "is missing or empty",
                          'name the skill these evals test, e.g. "skill_name": "<family>"')
    name = name.strip()
    direct = root / name
    if (direct / "SKILL.md").is_file():
        return direct, False
    matches = sorted(p.parent for p in root.rglob("SKILL.md")
                     if p.parent.name == name or _frontmatter_name(p) == name)
    if len(matches) == 1:
        return matches[0], False
    where = f"{len(matches)} skills match it" if matches else "no skill folder matches it"
    raise PromptError(path, "skill_name", f"is {name!r}, but {where} under the skills root "
                      f"{skills_root}", "use the skill's folder name, or set "
                      "skill_lift_skills to the directory that holds the skills")


def _expectations(path: Path, where: str, entry: dict[str, Any]) -> tuple[RubricItem, ...]:
    exp, asr = entry.get("expectations"), entry.get("assertions")
    if exp is not None and asr is not None and exp != asr:
        raise PromptError(path, f"{where}.assertions", "is given beside a different "
                          "expectations list", "keep one of expectations / assertions")
    raw, key = (exp, "expectations") if exp is not None else (asr, "assertions")
    if not isinstance(raw, list) or not raw:
        raise PromptError(path, f"{where}.expectations", "is missing, empty or not a list",
                          'add "expectations": ["The output …", …] (one must item each)')
    items: list[RubricItem] = []
    for i, value in enumerate(raw):
        text = value.get("text") if isinstance(value, dict) else value
        if not isinstance(text, str) or not text.strip():
            raise PromptError(path, f"{where}.{key}[{i}]", "is not a non-empty string "
                              '(or an object with "text")', "write a verifiable statement "
                              "about the output")
        items.append(RubricItem(type="must", text=text.strip(), index=i + 1))
    return tuple(items)


def _files(path: Path, where: str, raw: Any, bases: list[Path]) -> tuple[tuple[str, str], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise PromptError(path, f"{where}.files", "is not a list",
                          'use "files": ["evals/files/input.csv", …] or drop it')
    out: list[tuple[str, str]] = []
    for i, value in enumerate(raw):
        field = f"{where}.files[{i}]"
        if not isinstance(value, str) or not value.strip():
            raise PromptError(path, field, "is not a non-empty string",
                              "give a path relative to the skill folder")
        rel = PurePosixPath(value.strip().replace("\\", "/"))
        if rel.is_absolute() or ".." in rel.parts:
            raise PromptError(path, field, f"{value!r} leaves the skill folder",
                              "give a relative path without '..'")
        base = next((b for b in bases if (b / rel).is_file()), None)
        if base is None:
            tried = ", ".join(str(b) for b in bases)
            raise PromptError(path, field, f"{value!r} is not a file (looked in {tried})",
                              "add the file or fix the path")
        src = (base / rel).resolve()
        if base.resolve() not in src.parents:
            # The runners' install policy (runners/install.py): a link leaving the folder
            # would copy a file from elsewhere on the host into the agent's reach.
            raise PromptError(path, field, f"{value!r} is a link leaving {base} (it points to "
                              f"{src})", "copy the file into the folder instead of linking it")
        out.append((rel.as_posix(), str(src)))
    return tuple(out)


def load_evals(path: Path, skills_root: Path) -> list[tuple[str, PromptSpec | PromptError]]:
    """Every eval of a skill-creator ``evals.json`` as ``(prompt name, spec or error)``.

    A file-level problem (not JSON, no ``evals``, unknown skill) raises ``PromptError``;
    a problem in one eval is returned in its place, so the file's other evals still run.
    """
    data = _read(path)
    skill_dir, own = _locate_skill(path, data, skills_root)
    root = skills_root.resolve()
    skill_path = (skill_dir / "SKILL.md").relative_to(root).as_posix()
    label = safe_name(skill_dir.relative_to(root).as_posix().replace("/", "-"))
    evals = data.get("evals")
    if not isinstance(evals, list) or not evals:
        raise PromptError(path, "evals", "is missing, empty or not a list",
                          'add "evals": [{"id": 1, "prompt": "…", "expectations": ["…"]}]')
    bases = [skill_dir] if own else [path.resolve().parent.parent, skill_dir]
    out: list[tuple[str, PromptSpec | PromptError]] = []
    seen: set[str] = set()
    for pos, entry in enumerate(evals):
        where = f"evals[{pos}]"
        raw_id = entry.get("id") if isinstance(entry, dict) else None
        valid_id = (isinstance(raw_id, int) and not isinstance(raw_id, bool)) or (
            isinstance(raw_id, str) and bool(raw_id.strip()))
        name = f"{label}-eval-{safe_name(str(raw_id)) if valid_id else pos + 1}"
        duplicate = name in seen
        if duplicate:
            name = f"{name}-at-{pos + 1}"
        seen.add(name)
        try:
            if not isinstance(entry, dict):
                raise PromptError(path, where, "is not an object",
                                  'use {"id": 1, "prompt": "…", "expectations": ["…"]}')
            if not valid_id:
                raise PromptError(path, f"{where}.id", f"is {raw_id!r}",
                                  "give each eval a unique integer id (skill-creator schema)")
            if duplicate:
                raise PromptError(path, f"{where}.id", f"{raw_id!r} is used twice",
                                  "give each eval a unique id")
            prompt = entry.get("prompt")
            if not isinstance(prompt, str) or not prompt.strip():
                raise PromptError(path, f"{where}.prompt", "is missing or empty",
                                  "write the task to send to the model")
            context = entry.get("expected_output") or ""
            if not isinstance(context, str):
                raise PromptError(path, f"{where}.expected_output", "is not a string",
                                  "describe a successful output in words, or drop it")
            items = _expectations(path, where, entry)
            files = _files(path, where, entry.get("files"), bases)
            out.append((name, PromptSpec(
                path=path, name=name, product_area="", prompt=prompt, rubric=items,
                skill_path=skill_path, files=files, judge_context=context.strip())))
        except PromptError as exc:
            out.append((name, exc))
    return out



def eval_for_regrade(path: Path, name: str, skill_path: str) -> PromptSpec:
    """The eval of ``path`` that a finished week collected as prompt ``name``
    (``<skill>-eval-<id>``): its prompt, expectations and ``expected_output``, read without
    the skills root, for grading the week again (``skilllift judge``).  Raises
    ``PromptError`` when the file no longer holds that eval or it no longer reads."""
    data = _read(path)
    evals = data.get("evals")
    for pos, entry in enumerate(evals if isinstance(evals, list) else []):
        raw_id = entry.get("id") if isinstance(entry, dict) else None
        if not isinstance(entry, dict) or raw_id is None or isinstance(raw_id, bool) or not (
                name.endswith(f"-eval-{safe_name(str(raw_id))}")):
            continue
        where = f"evals[{pos}]"
        prompt, context = entry.get("prompt"), entry.get("expected_output") or ""
        if not isinstance(prompt, str) or not prompt.strip() or not isinstance(context, str):
            raise PromptError(path, where, "has no prompt text (or a non-string "
                              "expected_output)", "restore the eval the week was run with")
        return PromptSpec(path=path, name=name, product_area="", prompt=prompt,
                          rubric=_expectations(path, where, entry), skill_path=skill_path,
                          judge_context=context.strip())
    raise PromptError(path, "evals", f"holds no eval collected as {name!r}",
                      "restore the eval the week was run with, or regrade without this run")
