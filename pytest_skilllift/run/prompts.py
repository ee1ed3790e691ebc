"""Prompt files (the qdrant/skills format): schema, loading, errors that say how to fix them.

``{"name", "product_area", "skill_url": "<site>/<family>/.../SKILL.md", "prompt",
"rubric": [{"type": "must"|"bonus"|"avoid", "text"}]}``; a ``skill`` key holding the path
under the skills root directly is accepted instead of ``skill_url``.
"""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pytest_skilllift.model import PromptSpec, RubricItem
from pytest_skilllift.week.columns import ITEM_TYPES

#: The reserved held-out prompt set (qdrant/skills SCORING.md, "Prompt Sets").
HELDOUT_PREFIX = "discord-"

#: A prompt ``name`` becomes part of every run id and so of a directory name in the week
#: directory: letters, digits, ``.``, ``_`` and ``-`` only, starting with a letter or digit
#: (so no path separator, no ``..``, no hidden or option-like name), at most 100 characters.
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


#: How ``skilllift init`` marks a text a person must write; collection refuses it until then.
PLACEHOLDER = "TODO(skilllift init):"

#: The keys a prompt file may hold (qdrant/skills' five, ``skill`` for a path under the
#: skills root). Anything else is a warning naming the closest of these.
PROMPT_KEYS = ("name", "product_area", "skill_url", "skill", "prompt", "rubric")


def check_placeholder(path: Path, where: str, text: str) -> None:
    """Refuse a text ``skilllift init`` left for a person to write."""
    if text.lstrip().startswith(PLACEHOLDER):
        raise PromptError(path, where, "is still the placeholder skilllift init wrote",
                          f"replace the text starting with {PLACEHOLDER!r} with your own")


def holds_placeholder(path: Path) -> bool:
    """Whether a prompt or trigger file still holds a text ``skilllift init`` left for a
    person to write. Such a file is not collected (and not an error): the session names all of
    them in one line (``placeholder_line``). An unreadable file is not one: collection reports
    it with its own error."""
    try:
        return PLACEHOLDER in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def placeholder_files(*folders: Path) -> list[Path]:
    """The ``*.json`` files directly in ``folders`` (the prompts and triggers directories)
    that still hold the init placeholder, sorted; held-out files are never init's."""
    out: list[Path] = []
    for folder in folders:
        if folder.is_dir():
            out += [p for p in sorted(folder.glob("*.json"))
                    if not is_heldout(p) and p not in out and holds_placeholder(p)]
    return out


def placeholder_line(paths: list[Path], base: Path, shown: int = 6) -> str:
    """One line naming the files that still hold the init placeholder, per folder ("" for
    none): the count always, the first ``shown`` names of each folder and how many more."""
    if not paths:
        return ""
    by_folder: dict[Path, list[str]] = {}
    for path in paths:
        by_folder.setdefault(path.parent, []).append(path.stem)
    parts = []
    for folder, stems in by_folder.items():
        try:
            where = folder.resolve().relative_to(base.resolve()).as_posix()
        except ValueError:
            where = str(folder)
        more = f", +{len(stems) - shown} more" if len(stems) > shown else ""
        parts.append(f"{len(stems)} in {where}/ ({', '.join(stems[:shown])}{more})")
    one = len(paths) == 1
    return (f"skill-lift: {len(paths)} {'file' if one else 'files'} still "
            f"{'holds' if one else 'hold'} the init placeholder and {'is' if one else 'are'} "
            f"not collected: {'; '.join(parts)}. Write every {PLACEHOLDER!r} text to run "
            f"{'it' if one else 'them'}")


#: The keys of one rubric item.
RUBRIC_ITEM_KEYS = ("type", "text")


def did_you_mean(data: dict[str, Any], wanted: str, known: tuple[str, ...]) -> str:
    """When ``wanted`` is missing from ``data`` but a key that is not one of ``known`` is
    close to it (``rubrik`` for ``rubric``): `` (found 'rubrik': did you mean 'rubric'?)``,
    else "". A misspelt required key then names itself in the error, not only "missing"."""
    import difflib

    strays = [str(k) for k in data if k not in known]
    for stray in strays:
        if difflib.get_close_matches(stray, [wanted], n=1, cutoff=0.6):
            return f" (found {stray!r}: did you mean {wanted!r}?)"
    return ""


def unknown_keys(path: Path, data: dict[str, Any]) -> tuple[str, ...]:
    """A warning per key that is not a prompt-file key, with a "did you mean" when one is
    close (``rubrik`` → ``rubric``): a misspelt key is otherwise silently ignored."""
    out = []
    for key in data:
        if key in PROMPT_KEYS:
            continue
        close = difflib.get_close_matches(str(key), PROMPT_KEYS, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}?" if close else (
            f"a prompt file holds {', '.join(PROMPT_KEYS)}")
        out.append(f"{path}: unknown key {key!r} is ignored; {hint}")
    return tuple(out)


class PromptError(ValueError):
    """A prompt file that cannot be used. The message names the file, the field and the fix."""

    def __init__(self, path: Path, field: str, problem: str, fix: str) -> None:
        self.path, self.field, self.problem, self.fix = path, field, problem, fix
        super().__init__(f"{path}: field {field!r}: {problem}. Fix: {fix}")


def is_heldout(path: Path) -> bool:
    """Files named ``discord-*`` are the reserved held-out set (qdrant/skills SCORING.md,
    "Prompt Sets")."""
    return path.name.startswith(HELDOUT_PREFIX)


def skill_path_from_url(url: str, site: str) -> str:
    """``https://skills.qdrant.tech/qdrant-edge/SKILL.md`` → ``qdrant-edge/SKILL.md``.

    With a configured ``site`` the prefix must match; without one, scheme and host are dropped.
    """
    if site:
        prefix = site if site.endswith("/") else site + "/"
        if not url.startswith(prefix):
            raise ValueError(f"does not start with the configured site {prefix!r}")
        return url[len(prefix):]
    parts = urlsplit(url)
    return parts.path.lstrip("/") if parts.scheme else url.lstrip("/")


def load_prompt(path: Path, skills_root: Path, site: str = "") -> PromptSpec:
    """Read and validate one prompt file; raise ``PromptError`` on the first problem."""
    data = _read_json(path)
    name = _require_str(path, data, "name", "the prompt's id, e.g. \"qdrant-edge\"")
    _check_name(path, name)
    prompt = _require_str(path, data, "prompt", "the user question to send to the model")
    check_placeholder(path, "prompt", prompt)
    if "\x00" in prompt:
        raise PromptError(path, "prompt", f"contains a NUL character (\\u0000) at position "
                          f"{prompt.index(chr(0))}, which the CLI cannot take as "
                          "prompt text", "remove the \\u0000 escape from the prompt text")
    product_area = data.get("product_area", "")
    if not isinstance(product_area, str):
        raise PromptError(path, "product_area", "is not a string", "use a short string or drop it")
    rubric = read_rubric(path, data.get("rubric"), data)
    skill_path = _skill_path(path, data, skills_root, site)
    return PromptSpec(path=path, name=name, product_area=product_area, prompt=prompt,
                      rubric=rubric, skill_path=skill_path,
                      skill_url=str(data.get("skill_url") or ""),
                      warnings=unknown_keys(path, data))


def _read_json(path: Path) -> dict[str, Any]:
    data = read_json_file(path)
    if not isinstance(data, dict):
        raise PromptError(path, "(file)", f"holds a JSON {type(data).__name__}, not an object",
                          "wrap the prompt in {\"name\": …, \"prompt\": …, \"rubric\": […]}")
    return data


def read_json_file(path: Path) -> Any:
    """Parse a UTF-8 JSON file; raise ``PromptError`` on the file field naming the fix."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise PromptError(path, "(file)", f"is not UTF-8 ({exc.reason} at byte {exc.start})",
                          "save the file as UTF-8") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PromptError(path, "(file)", f"is not valid JSON: {exc.msg} at line {exc.lineno} "
                          f"column {exc.colno}", "correct the JSON syntax there") from None
    except RecursionError:  # thousands of nested [ or {: the parser's stack, not a traceback
        raise PromptError(path, "(file)", "nests arrays or objects too deeply to read",
                          "a prompt file is a flat object: name, prompt, rubric") from None
    except ValueError as exc:  # an integer longer than Python converts (4,300 digits)
        raise PromptError(path, "(file)", f"holds a value JSON cannot give ({exc})",
                          "shorten the number (or write it as a string)") from None
    return data


def _check_name(path: Path, name: str) -> None:
    """The name is used as a path component of every run directory: keep it one."""
    if NAME_PATTERN.fullmatch(name) and ".." not in name:
        return
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", path.stem).strip("-.")[:100] or "my-prompt"
    raise PromptError(
        path, "name", f"is {name[:120]!r}, which is not usable as a run directory name (it "
        "names the runs' folders in the week directory)",
        f"use letters, digits, '.', '_' and '-' only, starting with a letter or digit, no "
        f"'..', at most 100 characters, e.g. \"name\": \"{stem}\"")


def _require_str(path: Path, data: dict[str, Any], key: str, what: str) -> str:
    value = data.get(key)
    if value is None:
        raise PromptError(path, key, "is missing" + did_you_mean(data, key, PROMPT_KEYS),
                          f"add \"{key}\": {what}")
    if not isinstance(value, str) or not value.strip():
        raise PromptError(path, key, "must be a non-empty string", f"set it to {what}")
    return value


def read_rubric(path: Path, raw: Any, data: dict[str, Any],
                known: tuple[str, ...] = PROMPT_KEYS) -> tuple[RubricItem, ...]:
    """The rubric ``raw`` (the ``rubric`` value of ``data``, read from ``path``) validated:
    must / bonus / avoid items, at least one must; raises ``PromptError`` naming the field and
    the fix. ``known``: the keys ``data`` may hold (a misspelt ``rubric`` is named). A prompt
    file's rubric and a task's ``rubric.json`` (``run/tasks/rubric.py``) are read here."""
    fix_shape = 'a list like [{"type": "must", "text": "…"}]'
    if raw is None:
        raise PromptError(path, "rubric", "is missing" + did_you_mean(data, "rubric", known),
                          f"add \"rubric\": {fix_shape}")
    if not isinstance(raw, list):
        raise PromptError(path, "rubric", "is not a list", f"make it {fix_shape}")
    if not raw:
        raise PromptError(path, "rubric", "is empty", "add at least one must item")
    counters = dict.fromkeys(ITEM_TYPES, 0)
    items: list[RubricItem] = []
    for pos, entry in enumerate(raw):
        where = f"rubric[{pos}]"
        if not isinstance(entry, dict):
            raise PromptError(path, where, "is not an object", 'use {"type": …, "text": …}')
        kind = entry.get("type")
        if kind not in counters:
            close = difflib.get_close_matches(str(kind), ITEM_TYPES, n=1, cutoff=0.6)
            hint = (did_you_mean(entry, "type", RUBRIC_ITEM_KEYS) if kind is None else
                    f" (did you mean {close[0]!r}?)" if close else "")
            raise PromptError(path, f"{where}.type", f"is {kind!r}, an unknown item type{hint}",
                              "use one of must, bonus, avoid")
        text = entry.get("text")
        if not isinstance(text, str) or not text.strip():
            hint = did_you_mean(entry, "text", RUBRIC_ITEM_KEYS) if text is None else ""
            raise PromptError(path, f"{where}.text", f"must be a non-empty string{hint}",
                              "write what the answer must contain / should show / must avoid")
        check_placeholder(path, f"{where}.text", text)
        counters[kind] += 1
        items.append(RubricItem(type=kind, text=text.strip(), index=counters[kind]))
    if counters["must"] == 0:
        raise PromptError(path, "rubric", "has no must item", "add at least one must item: "
                          "must coverage is the primary metric and needs one")
    return tuple(items)


def _skill_path(path: Path, data: dict[str, Any], skills_root: Path, site: str) -> str:
    for key, example in (("skill", "\"<family>/SKILL.md\""),
                         ("skill_url", "\"<site>/<family>/…/SKILL.md\"")):
        value = data.get(key)
        if value is not None and not isinstance(value, str):
            raise PromptError(path, key, f"is a JSON {_json_type(value)}, not a string",
                              f"write one path as a string, e.g. \"{key}\": {example}")
    if isinstance(data.get("skill"), str) and data["skill"].strip():
        key, rel = "skill", data["skill"].strip().lstrip("/")
    elif isinstance(data.get("skill_url"), str) and data["skill_url"].strip():
        key = "skill_url"
        try:
            rel = skill_path_from_url(data["skill_url"].strip(), site)
        except ValueError as exc:
            raise PromptError(path, key, str(exc), "set skill_lift_site to the URL prefix of "
                              "your skills site, or fix the URL") from None
    else:
        raise PromptError(path, "skill_url", "is missing", "add \"skill_url\": "
                          "\"<site>/<family>/…/SKILL.md\" (or \"skill\": \"<family>/SKILL.md\")")
    if not rel.endswith("SKILL.md"):
        rel = rel.rstrip("/") + "/SKILL.md"
    root = skills_root.resolve()
    try:
        target = (root / rel).resolve()
    except (RuntimeError, OSError) as exc:  # a symlink loop (RuntimeError on Python < 3.13)
        raise PromptError(path, key, f"leads to {rel}, which cannot be resolved ({exc})",
                          "remove the symlink loop under the skills root (a SKILL.md or "
                          "directory link that points back at itself)") from None
    if root not in target.parents:
        raise PromptError(path, key, f"resolves outside the skills root ({rel})",
                          "point it at a SKILL.md under the skills root")
    if not _is_file(target):
        raise PromptError(path, key, f"resolves to {target}, which is not a file",
                          f"check the path, or set skill_lift_skills (now {skills_root}) "
                          "to the directory that holds the skill families")
    return str(target.relative_to(root).as_posix())


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # ELOOP, ENAMETOOLONG: not a usable file either way
        return False


def _json_type(value: Any) -> str:
    names = {list: "list", dict: "object", bool: "boolean", int: "number", float: "number"}
    return names.get(type(value), type(value).__name__)
