"""Write a week's viewer: ``index.html``, one page per prompt, ``compare.html``, the assets.

Every page is the same shell: a strict Content-Security-Policy (scripts and styles only from
the site's own files, no inline script, no network), the page's data as a JSON block (read by
``viewer.js`` through ``textContent``; a JSON block is never executed) and ``viewer.js``, which
builds the page with ``textContent`` only. Answers, quotes, prompts, rubric texts and names
are data: nothing of the week is ever parsed as HTML.

The output folder is the tool's own: a non-empty ``--out`` that is not a view this tool wrote
(its :data:`VIEW_MARKER`, or an older view's ``index.html`` + ``assets/viewer.js``) is refused
before anything is written, and nothing is written through a symbolic link (every folder is
checked, every file opened ``O_NOFOLLOW``) — the rule ``--skill-lift-out`` follows for a week.
"""

from __future__ import annotations

import errno
import html
import json
import os
import stat
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from pytest_skilllift.view.data import (
    ViewError,
    overview,
    page_name,
    prompt_records,
    read_scorecard,
)
from pytest_skilllift.week.files import (
    HISTORY_CSV,
    SCORECARD_JSON,
    VIEW_DIR,
    WeekLinkError,
    read_bytes_nofollow,
)

__all__ = ["ASSETS", "CSP_SERVED", "CSP_STATIC", "SiteResult", "ViewError", "build_site",
           "embed_json", "history_compare_week", "page_html", "write_view"]

#: No script, style, image or connection from anywhere but the site's own files; nothing
#: inline; no form posts, no framing, no <base>. Served pages may also call their server.
CSP_STATIC = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
              "base-uri 'none'; form-action 'none'")
CSP_SERVED = CSP_STATIC + "; connect-src 'self'"
#: The files every site ships (package data of ``pytest_skilllift.view``, no CDN).
ASSETS: tuple[str, ...] = ("viewer.js", "viewer.css")
DEFAULT_OUT = VIEW_DIR
#: Prompt rows the overview holds itself; a larger week's overview shows the rows that moved
#: most and links ``prompts.html``, the whole sortable table (the index stays small).
OVERVIEW_PROMPT_ROWS = 200
PROMPTS_DIR = "prompts"
#: The other week's site, under this one's (its pages are the compare page's other side).
COMPARE_DIR = "b"
COMPARE_PAGE = "compare.html"
#: Written first into every site: what makes a non-empty ``--out`` a view this tool wrote.
VIEW_MARKER = ".skilllift-view"
#: How many of a refused folder's entries the message names.
SHOWN = 5


def embed_json(data: Any) -> str:
    """JSON safe inside ``<script type="application/json">``: ``<``, ``>`` and ``&`` are
    escaped as ``\\u003c``…, so no value can close the block (``</script>``) or open a
    comment; ``JSON.parse`` reads them back unchanged."""
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def page_html(kind: str, title: str, data: Any, root: str, *, csp: str = CSP_STATIC) -> str:
    """One page: the shell, its data block and the viewer script (``root``: path to the
    site's top folder from this page, ``""`` or ``"../"``)."""
    t = html.escape(title)
    r = html.escape(root)
    return (
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{html.escape(csp)}\">\n"
        "<meta name=\"referrer\" content=\"no-referrer\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        f"<title>{t}</title>\n<link rel=\"stylesheet\" href=\"{r}assets/viewer.css\">\n"
        f"</head><body data-page=\"{html.escape(kind)}\" data-root=\"{r}\">\n"
        f"<header class=\"top\"><a href=\"{r}index.html\">skill lift</a> <span>{t}</span>"
        "</header>\n<main id=\"app\"><noscript>This report needs JavaScript (its own "
        "viewer.js; nothing is loaded from the network).</noscript></main>\n"
        f"<script type=\"application/json\" id=\"skilllift-data\">{embed_json(data)}</script>\n"
        f"<script src=\"{r}assets/viewer.js\"></script>\n</body></html>\n"
    )


@dataclass
class SiteResult:
    """What a build wrote: the index, how many prompt pages, what could not be shown."""

    index: Path
    pages: int = 0
    problems: list[str] = field(default_factory=list)
    #: The compare pages against the history's previous comparable week (``compare.html``),
    #: or why there are none (empty: the history names no earlier week).
    history_compare: str = ""


def _is_view(out: Path) -> bool:
    """Whether ``out`` holds a site this tool wrote (its marker; or, from before the marker,
    an ``index.html`` with our data block beside ``assets/viewer.js``)."""
    marker = out / VIEW_MARKER
    if marker.is_file() and not marker.is_symlink():
        return True
    index, js = out / "index.html", out / "assets" / "viewer.js"
    if any(p.is_symlink() or not p.is_file() for p in (index, js)) or (out / "assets").is_symlink():
        return False
    try:
        return b'id="skilllift-data"' in read_bytes_nofollow(index)[:1 << 16]
    except OSError:
        return False


def check_view_out(out: Path) -> None:
    """Raise :class:`ViewError` unless ``out`` is absent, empty, or a view this tool wrote;
    a link is never written through, ``out`` included."""
    out = Path(out)
    if out.is_symlink():
        raise ViewError(f"--out {out}: {WeekLinkError(out)}")
    if not out.exists():
        return
    if not out.is_dir():
        raise ViewError(f"--out {out}: not a directory; name a new folder or a view this tool "
                        "wrote")
    entries = sorted(e.name + ("/" if e.is_dir(follow_symlinks=False) else "")
                     for e in os.scandir(out))
    if not entries or _is_view(out):
        return
    more = f" and {len(entries) - SHOWN} more" if len(entries) > SHOWN else ""
    raise ViewError(
        f"--out {out}: not empty and not a view this tool wrote (it holds "
        f"{', '.join(entries[:SHOWN])}{more}); nothing was written. Fix: name a new or empty "
        f"folder, or a view skilllift view wrote (it has {VIEW_MARKER})")


def _folder(path: Path) -> Path:
    """``path`` made (with its parents) and checked to be a real folder, not a link."""
    path.mkdir(parents=True, exist_ok=True)
    if not stat.S_ISDIR(os.lstat(path).st_mode):
        raise ViewError(f"{WeekLinkError(path, '(a folder of the site)')}")
    return path


def _write_bytes(path: Path, data: bytes) -> None:
    """Write a file of the site, never through a link (``O_NOFOLLOW``); its folder is one
    :func:`_folder` made. Not atomic: the site is derived and rebuilt whole, and a fsync per
    page costs a large week (5,000 pages) half a minute."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ViewError(f"{WeekLinkError(path, 'and is not written through')}") from None
        raise
    with os.fdopen(fd, "wb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise ViewError(f"{path}: not a regular file; the site writes only its own files")
        fh.write(data)


def _copy_assets(out: Path) -> None:
    dest = _folder(out / "assets")
    base = resources.files("pytest_skilllift.view") / "assets"
    for name in ASSETS:
        _write_bytes(dest / name, (base / name).read_bytes())


def _write_page(path: Path, text: str) -> None:
    _write_bytes(path, text.encode("utf-8"))


def build_site(week_dir: Path, out: Path | None = None, *,
               compare: Path | None = None, csp: str = CSP_STATIC,
               history_compare: bool = True) -> SiteResult:
    """Write the viewer of ``week_dir`` into ``out`` (default ``WEEKDIR/view``).

    With ``compare``, ``compare.html`` compares the two weeks (``skilllift compare WEEK_DIR
    COMPARE``). Without it and with ``history_compare``, ``compare.html`` compares the
    previous comparable week the history names, when it is on disk beside this one
    (:func:`history_compare_week`); the overview says in words why there is no link when not.
    Raises :class:`ViewError` when the week has no readable scorecard.json.
    """
    week_dir = Path(week_dir)
    out = Path(out) if out is not None else week_dir / DEFAULT_OUT
    card = read_scorecard(week_dir)
    from pytest_skilllift.week.tables import load_week

    week = load_week(week_dir)
    problems = [str(p) for p in week.problems]
    check_view_out(out)
    _folder(out)
    _write_bytes(out / VIEW_MARKER, b"written by skilllift view; rebuilt whole on each run\n")
    _folder(out / PROMPTS_DIR)
    _copy_assets(out)
    label = str(card.get("week") or week_dir.name)
    pages: dict[str, str] = {}
    # Each page links the previous and the next prompt's page: a page is written once the
    # next one is known (two pages held at a time, never the whole week).
    pending: tuple[str, dict[str, Any]] | None = None

    def write(prompt: str, data: dict[str, Any], after: str | None) -> None:
        data["next"] = {"prompt": after, "href": page_name(after)} if after else None
        kind = str(data.pop("kind", "prompt"))  # "task": a Harbor task's page
        _write_page(out / PROMPTS_DIR / page_name(prompt),
                    page_html(kind, f"{prompt} — week {label}", data, "../", csp=csp))

    for prompt, data in prompt_records(week_dir, week, card):
        pages[prompt] = f"{PROMPTS_DIR}/{page_name(prompt)}"
        data["week"] = label
        # the demo's or a dry run's notice on every page, and its dollars said simulated
        data["banner"], data["simulated"] = card.get("banner"), bool(card.get("banner"))
        data["prev"] = ({"prompt": pending[0], "href": page_name(pending[0])} if pending
                        else None)
        if pending is not None:
            write(*pending, prompt)
        pending = (prompt, data)
    if pending is not None:
        write(*pending, None)
    from pytest_skilllift.view.gates import gate_results

    index = overview(card, week_dir, pages)
    index["plot_files"] = _copy_plots(card, week_dir, out)
    _split_prompts(index, out, label, csp)
    index["gate_results"] = gate_results(week_dir)
    index["view_problems"] = problems
    said = ""
    if compare is not None:
        index["compare"] = COMPARE_PAGE
        _write_compare(week_dir, Path(compare), out, pages, csp)
    elif history_compare:
        index["history_compare"] = _history_compare(card, week_dir, out, pages, csp)
        if index["history_compare"] is not None:
            said = _said(index["history_compare"], label)
    _write_page(out / "index.html", page_html("overview", f"week {label}", index, "",
                                                    csp=csp))
    return SiteResult(out / "index.html", len(pages), problems, said)


def write_view(week_dir: Path) -> str:
    """The week's viewer written beside its scorecard at the end of a pytest session (the
    site of ``skilllift view``); the line that says where — or why it was not written."""
    try:
        site = build_site(week_dir)
    except (ViewError, OSError) as err:
        return f"viewer not written: {err}"
    note = f"viewer: {site.index} ({site.pages} prompt pages; open it from disk)"
    if site.history_compare:
        note += f"\nviewer compare: {site.history_compare}"
    return note


def _said(link: dict[str, Any], label: str) -> str:
    if link.get("href"):
        return f"{link['href']}: week {link['week']} → week {label} (the previous comparable week)"
    return str(link.get("note", ""))


def _copy_plots(card: dict[str, Any], week_dir: Path, out: Path) -> dict[str, str]:
    """The scorecard's plots (forest, trend), copied into the site so it stands alone."""
    plots = card.get("plots") if isinstance(card.get("plots"), dict) else {}
    shown: dict[str, str] = {}
    for kind, name in (plots or {}).items():
        # A plain file name of the week directory only: scorecard.json is input too.
        if not isinstance(name, str) or Path(name).name != name or not name.endswith(".png"):
            continue
        try:  # never through a link: a plot that is one names a file outside the week
            data = read_bytes_nofollow(week_dir / name)
        except OSError:
            continue
        _write_bytes(_folder(out / "assets" / "plots") / name, data)
        shown[str(kind)] = f"assets/plots/{name}"
    return shown


def _split_prompts(index: dict[str, Any], out: Path, label: str, csp: str) -> None:
    """Past :data:`OVERVIEW_PROMPT_ROWS` prompt rows, the overview keeps the rows with the
    largest |lift| and the whole table goes to ``prompts.html``."""
    given = index.get("prompts")
    rows: list[Any] = given if isinstance(given, list) else []
    pages: dict[str, str] = index["pages"]
    if len(rows) <= OVERVIEW_PROMPT_ROWS:
        return
    _write_page(out / "prompts.html", page_html(
        "prompts", f"every prompt — week {label}", {"prompts": rows, "pages": pages}, "",
        csp=csp))

    def moved(row: Any) -> float:
        lift = row.get("must_lift") if isinstance(row, dict) else None
        return -abs(lift) if isinstance(lift, int | float) else 0.0

    shown = sorted(rows, key=moved)[:OVERVIEW_PROMPT_ROWS]
    index["prompts"] = shown
    index["pages"] = {r["prompt"]: pages[r["prompt"]] for r in shown
                      if isinstance(r, dict) and r.get("prompt") in pages}
    index["all_prompts"] = {"href": "prompts.html", "rows": len(rows), "pages": len(pages)}


def history_compare_week(card: dict[str, Any], week_dir: Path) -> tuple[str | None,
                                                                          Path | None, str]:
    """The previous comparable week the scorecard's history names, where it is on disk, or
    why it cannot be compared: ``(run key, directory, "")`` or ``(run key | None, None, why)``
    (``(None, None, "")``: the history names no earlier week).

    The history (``WEEKDIR/../scorecard-history.csv``) keys each week by its directory's name,
    and the weeks it names sit beside it (``report.summarize`` pools them from there): the
    previous comparable week is the latest of the scorecard's ``history.pooled_runs`` (same
    prompts, models and judge protocol, or not checkable on either side), looked for in this
    week's parent directory.
    """
    hist = card.get("history")
    hist = hist if isinstance(hist, dict) else {}
    history_file = f"../{HISTORY_CSV}"

    def keys(field_name: str) -> list[tuple[str, str]]:
        given = hist.get(field_name)
        return [(str(r.get("run_key")), str(r.get("reason", ""))) for r in
                (given if isinstance(given, list) else []) if isinstance(r, dict)
                and r.get("run_key")]

    pooled, left = keys("pooled_runs"), keys("not_pooled_runs")
    if not pooled:
        if not left:
            return None, None, ""
        named = "; ".join(f"{k} ({reason})" for k, reason in left)
        return left[-1][0], None, (f"No compare link: {history_file} names no earlier week "
                                   f"measured like this one: {named}.")
    key = pooled[-1][0]
    # The history is input: a key that is not a plain directory name is never followed.
    if Path(key).name != key or key in (".", ".."):
        return key, None, (f"No compare link: {history_file} names the previous comparable "
                           f"week {key!r}, which is not a week directory's name.")
    where = week_dir.parent / key
    if not where.is_dir():
        return key, None, (f"No compare link: the previous comparable week {key} (named in "
                           f"{history_file}) is not on disk beside this week (no ../{key}); "
                           f"put it there, or run skilllift view WEEKDIR --compare "
                           f"PATH_TO_{key}.")
    if not (where / SCORECARD_JSON).is_file():
        return key, None, (f"No compare link: the previous comparable week ../{key} has no "
                           f"{SCORECARD_JSON}; write it with skilllift summarize ../{key}, then "
                           "view this week again.")
    return key, where, ""


def _history_compare(card: dict[str, Any], week_dir: Path, out: Path, pages: dict[str, str],
                     csp: str) -> dict[str, Any] | None:
    """``compare.html`` against the previous comparable week (before → this week), or the
    words saying why there is none; None when the history names no earlier week."""
    key, where, why = history_compare_week(card, week_dir)
    if key is None:
        return None
    if where is not None:
        try:
            _write_compare(week_dir, where, out, pages, csp, other_before=True)
        except ViewError as err:
            why = (f"No compare link: the previous comparable week ../{key} could not be "
                   f"compared: {err}")
        else:
            return {"week": key, "href": COMPARE_PAGE, "note": ""}
    return {"week": key, "href": None, "note": why}


def _write_compare(week: Path, other: Path, out: Path, pages: dict[str, str], csp: str, *,
                   other_before: bool = False) -> None:
    """``compare.html``: ``skilllift compare``'s per-prompt changes, each side linked to its
    week's prompt page (the other week's site is written under ``b/``). ``week`` is week A
    (``skilllift compare WEEK OTHER``), or week B with ``other_before`` (``skilllift compare
    OTHER WEEK``: the history's previous week first)."""
    from pytest_skilllift.report.compare_weeks import CompareError, compare

    week_a, week_b = (other, week) if other_before else (week, other)
    try:
        result = compare(week_a, week_b)
    except (CompareError, OSError, ValueError) as err:
        raise ViewError(f"{'' if other_before else '--compare '}{other}: {err}") from None
    # Its own history link is not followed: one compare page per site, no chain of weeks.
    other_site = build_site(other, out / COMPARE_DIR, csp=csp, history_compare=False)
    other_pages = {p: f"{COMPARE_DIR}/{v}"
                   for p, v in json.loads(_data_block(other_site.index))["pages"].items()}
    result["pages_a"], result["pages_b"] = ((other_pages, pages) if other_before
                                            else (pages, other_pages))
    result["a_label"], result["b_label"] = week_a.name, week_b.name
    _write_page(out / COMPARE_PAGE, page_html(
        "compare", f"compare {week_a.name} → {week_b.name}", result, "", csp=csp))


def _data_block(page: Path) -> str:
    """The JSON data block of a page this module wrote."""
    text = page.read_text(encoding="utf-8")
    start = text.index('id="skilllift-data">') + len('id="skilllift-data">')
    return text[start:text.index("</script>", start)]
