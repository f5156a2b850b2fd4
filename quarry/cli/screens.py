"""Compact screens: the ranked list of a job result, the job list and a read document page.

Why a module of its own: a result of 20 documents used to take ~230 lines (a table row per
document repeating the checklist twice, 44-column path docids, quotes cut mid-word). The default
screen is now one line per document (place, rank score, S, a shortened docid, title) and its best
quote on the next line, cut at a word; `--full` gives the requirement × document matrix and every
quote. The cutting helpers work on the printable form of untrusted text (control characters
already made visible by `terminal_safe`) and the result is escaped for rich markup last, so a cut
never splits an escape and `[/z]` is shown as written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from quarry.app.terminal import out as _stdout
from quarry.app.terminal import safe, terminal_safe

ELLIPSIS = "…"
DOCID_WIDTH = 24  # a path docid ("rust-book/ch17-01-futures-and-syntax") is cut in the middle to this
QUOTE_MIN = 40  # a quote keeps at least this many characters however narrow the terminal
TITLE_MIN = 30  # narrower than this beside the docid, a title goes on the lines below its head
TITLE_LINES = 2  # a title takes at most this many lines on the compact screen
INDENT = 6  # the indent of the lines under a document's head (its title when moved down, its quote)


def cut_words(text: str, width: int) -> str:
    """`text` in at most `width` characters, cut at a word boundary with an ellipsis: never
    mid-word (a single word longer than `width` is the one case that is cut inside, so that
    something is shown)."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    room = max(1, width - 1)
    head = text[: room + 1]
    cut = head.rfind(" ")
    head = head[:cut] if cut > 0 else text[:room]
    return head.rstrip(" ,;:") + ELLIPSIS


def middle_cut(text: str, width: int) -> str:
    """`text` in at most `width` characters with an ellipsis in the middle: a path id keeps its
    first folder and its file name, the parts that tell documents apart."""
    if len(text) <= width:
        return text
    tail = (width - 1) * 3 // 5  # the end (file name) says more than the start
    head = width - 1 - tail
    return text[:head] + ELLIPSIS + text[len(text) - tail :]


def short_ids(docids: Sequence[str], width: int = DOCID_WIDTH) -> dict[str, str]:
    """Each docid's printable form, middle-cut to `width`. Ids that would then read the same
    (`rust-book/ch17-00-…` and `rust-book/ch17-01-…`) show the part where they differ between two
    ellipses (`rust-book…17-00-fu…sync-await`), or whole: a shortened id is never ambiguous."""
    full = {d: terminal_safe(d) for d in dict.fromkeys(docids)}
    shown = {d: middle_cut(t, width) for d, t in full.items()}
    groups: dict[str, list[str]] = {}
    for d, s in shown.items():
        groups.setdefault(s, []).append(d)
    for group in (g for g in groups.values() if len(g) > 1):
        texts = [full[d] for d in group]
        shortest = min(len(t) for t in texts)
        pre = next((i for i in range(shortest) if len({t[i] for t in texts}) > 1), shortest)
        suf = next((i for i in range(shortest - pre) if len({t[len(t) - 1 - i] for t in texts}) > 1), shortest - pre)
        for d in group:
            t = full[d]
            a, b = max(0, pre - 3), min(len(t), len(t) - suf + 3)
            head, tail = t[: min(9, a)], t[max(b, len(t) - 10) :]
            parts = [
                head,
                ELLIPSIS if a > len(head) else "",
                t[a:b] if a >= len(head) else t[len(head) : b],
                ELLIPSIS if len(t) - len(tail) > b else "",
                tail if len(t) - len(tail) >= b else t[b:],
            ]
            candidate = "".join(parts)
            shown[d] = candidate if len(candidate) < len(t) else t
    if len(set(shown.values())) < len(shown):  # still alike (ids that differ in several places): whole
        return full
    return shown


def best_evidence(item: dict[str, Any]) -> dict[str, Any] | None:
    """The document's strongest quote (highest requirement score, then the earliest lines)."""
    evidence = [e for e in item.get("evidence") or [] if e.get("chunk")]
    if not evidence:
        return None
    return max(evidence, key=lambda e: (e.get("score", 0.0), -(e.get("lines") or [0])[0]))


def _where(e: dict[str, Any]) -> str:
    """'lines 3–4 p. 2' for a quote (the page only for paged sources)."""
    lines = e.get("lines") or []
    where = (f"line {lines[0]}" if lines[0] == lines[1] else f"lines {lines[0]}–{lines[1]}") if len(lines) == 2 else ""
    if e.get("page"):
        where += f" p. {e['page']}"
    return where


def wrap_words(text: str, width: int, max_lines: int) -> list[str]:
    """`text` wrapped at words into lines of at most `width` characters, at most `max_lines` of
    them, the last cut at a word with an ellipsis when the text goes on (`cut_words`)."""
    import textwrap

    text = " ".join(text.split())
    width = max(1, width)
    lines = textwrap.wrap(text, width, break_long_words=True, break_on_hyphens=False) or [""]
    if len(lines) <= max_lines:
        return lines
    return [*lines[: max_lines - 1], cut_words(" ".join(lines[max_lines - 1 :]), width)]


def title_lines(head: str, title: str, width: int) -> list[str]:
    """A document's head and title as plain lines of at most `width` characters: the title on the
    head line when it fits; else wrapped in the width left after the fixed columns (place, scores,
    short docid) under its own start; and when that is narrower than TITLE_MIN (a long docid on
    an 80-column terminal left ~20 characters), on the next lines at the quote's indent.
    At most TITLE_LINES lines of title, cut at a word with an ellipsis."""
    room = width - len(head)
    if len(title) <= room:
        return [head + title]
    if room >= TITLE_MIN:
        wrapped = wrap_words(title, room, TITLE_LINES)
        return [head + wrapped[0], *(" " * len(head) + line for line in wrapped[1:])]
    return [head.rstrip(), *(" " * INDENT + line for line in wrap_words(title, width - INDENT, TITLE_LINES))]


def ranked_lines(items: Sequence[dict[str, Any]], width: int, start: int = 1) -> list[str]:
    """The compact list, as rich markup lines: per document its head (place, rank score, S, the
    shortened docid) with the title and year in the width left (`title_lines`), and one line
    with its best quote cut at a word."""
    ids = short_ids([i["docid"] for i in items])
    id_w = max((len(s) for s in ids.values()), default=0)
    lines: list[str] = []
    for place, item in enumerate(items, start=start):
        head = (
            f"{place:>2}. {item.get('rank_score', 0):.4f}  S {item.get('score', 0):.3f}  {ids[item['docid']]:<{id_w}}  "
        )
        year = f" ({item['year']})" if item.get("year") else ""
        weak = " (weak match)" if item.get("weak") else ""
        title = " ".join(terminal_safe(item.get("title") or "").split()) + year + weak
        for n, line in enumerate(title_lines(head, title, width)):
            lead = len(head) if n == 0 else len(line) - len(line.lstrip(" "))
            lead = min(lead, len(line))
            lines.append(escape(line[:lead]) + (f"[bold]{escape(line[lead:])}[/]" if line[lead:] else ""))
        e = best_evidence(item)
        if e is None:
            continue
        where = f"{e.get('score', 0):.1f}/5 {_where(e)} "
        quote = cut_words(terminal_safe(e["chunk"]), max(QUOTE_MIN, width - 8 - len(where)))
        lines.append(f"      [dim]{escape(where)}[/]\u201c{escape(quote)}\u201d")
    return lines


def requirement_matrix(result: dict[str, Any], items: Sequence[dict[str, Any]]) -> tuple[list[str], Table]:
    """`--full`: the requirement × document matrix (each cell the requirement's 0–5 score for
    that document, '·' where it has no evidence), with a legend naming each requirement."""
    names = [str(c.get("text", "")) for c in result.get("checklist") or []]
    for item in items:  # requirements added later (steering) or results without a checklist
        for e in item.get("evidence") or []:
            if str(e.get("item", "")) not in names:
                names.append(str(e.get("item", "")))
    kinds = {str(c.get("text", "")): str(c.get("kind", "")) for c in result.get("checklist") or []}
    legend = [
        f"R{n} " + (f"[dim]{safe(kinds[name])}[/] " if kinds.get(name) else "") + safe(name)
        for n, name in enumerate(names, start=1)
    ]
    table = Table(show_lines=False, box=None, pad_edge=False)
    table.add_column("#", justify="right")
    table.add_column("docid", overflow="fold")
    table.add_column("S", justify="right")
    for n in range(1, len(names) + 1):
        table.add_column(f"R{n}", justify="right")
    for place, item in enumerate(items, start=1):
        scores: dict[str, float] = {}
        for e in item.get("evidence") or []:
            key = str(e.get("item", ""))
            scores[key] = max(scores.get(key, 0.0), float(e.get("score", 0.0)))
        table.add_row(
            str(place),
            safe(item["docid"]),
            f"{item.get('score', 0):.3f}",
            *(f"{scores[name]:.1f}" if name in scores else "·" for name in names),
        )
    return legend, table


def all_quotes(item: dict[str, Any]) -> list[str]:
    """`--full`: every passage of a document once (requirements sharing it listed together),
    strongest first, whole."""
    by_lines: dict[tuple, dict[str, Any]] = {}
    for e in sorted(item.get("evidence") or [], key=lambda e: -e.get("score", 0.0)):
        key = tuple(e.get("lines") or ())
        label = f"{e.get('item', '')} {e.get('score', 0):.1f}"
        if key in by_lines:
            by_lines[key]["items"].append(label)
        else:
            by_lines[key] = {"items": [label], "e": e}
    return [
        f"   [dim]{safe('; '.join(v['items']))}/5 · {safe(_where(v['e']))}:[/] {safe(v['e'].get('chunk', ''))}"
        for v in by_lines.values()
    ]


def render_ranked(
    result: dict[str, Any], *, full: bool, width: int | None = None, console: Console | None = None
) -> None:
    """Print the ranked documents: compact by default, the matrix and every quote with `full`
    (on `console`, the standard output by default, as wide as `width` or the console)."""
    out = console or _stdout
    width = width or out.width
    ranked = result.get("ranked", [])
    strong = [r for r in ranked if not r.get("weak")]
    weak = [r for r in ranked if r.get("weak")]
    shown = strong + (weak if full else [])
    if not full:
        for line in ranked_lines(shown, width):
            out.print(line, highlight=False)
    else:
        legend, table = requirement_matrix(result, shown)
        out.print("[bold]requirements[/]", highlight=False)
        for line in legend:
            out.print("  " + line, highlight=False)
        out.print(table)
        for place, item in enumerate(shown, start=1):
            year = f" ({item['year']})" if item.get("year") else ""
            tag = " [yellow](weak match)[/]" if item.get("weak") else ""
            out.print(
                f"\n{place:>2}. {safe(item['docid'])} · rank {item.get('rank_score', 0):.4f} · "
                f"S {item.get('score', 0):.3f} · [bold]{safe(item.get('title', ''))}[/]{safe(year)}{tag}",
                highlight=False,
            )
            if item.get("reason"):
                out.print(f"   [dim]{safe(item['reason'])}[/]", highlight=False)
            for line in all_quotes(item):
                out.print(line, highlight=False)
    if weak and not full:
        out.print(
            f"{len(weak)} weak match(es) meet no requirement and are not shown; --full lists them", highlight=False
        )


NARROW = 100  # below this many columns `job list` leaves out round and created (piped and --json keep them)


def intent_table(rows: Iterable[dict[str, Any]], created: Callable[[dict[str, Any]], str], width: int) -> Table:
    """`job list` on a terminal: the fixed columns never wrap, the intent takes the remaining width
    and ends with an ellipsis where it is cut; below NARROW columns round and created are left out
    so that an 80-column terminal still shows half a line of intent (`created` formats a row's
    timestamp)."""
    narrow = width < NARROW
    table = Table(expand=True, box=None, pad_edge=False, padding=(0, 1))
    for col in ("job", "status", "collection") + (() if narrow else ("round", "created")):
        table.add_column(col, no_wrap=True, overflow="ellipsis", max_width=16 if col == "collection" else None)
    table.add_column("intent", no_wrap=True, overflow="ellipsis", ratio=1, min_width=20)
    for j in rows:
        table.add_row(
            safe(j["job_id"]),
            safe(j["status"]),
            safe(j["collection"]),
            *(() if narrow else (str(j["round"]), created(j))),
            safe(" ".join(str(j["intent"]).split())),
        )
    return table


def job_list_tsv(rows: Iterable[dict[str, Any]], created: Callable[[dict[str, Any]], str]) -> list[str]:
    """`job list` piped (not a terminal): one tab-separated line per job with the whole intent,
    for grep and cut; a header line first. Fields are printable (tabs and newlines in an intent
    become spaces); the caller writes them as they are (rich would expand the tabs)."""
    lines = ["job\tstatus\tcollection\tround\tcreated\tintent"]
    for j in rows:
        fields = [j["job_id"], j["status"], j["collection"], str(j["round"]), created(j), j["intent"]]
        lines.append("\t".join(terminal_safe(" ".join(str(f).split())) for f in fields))
    return lines


def page_lines(page: Any, pages: Sequence[int | None], collection: str | None = None) -> list[str]:
    """A read page of a paged (PDF) document, printable: a header naming the pages shown and each
    numbered line with its page (`p.3  120  text`); `pages[i]` is the page of line i + 1."""
    first, last = page.offset, page.last_line
    shown = [p for p in pages[first - 1 : last] if p]
    span = (
        f" · page {shown[0]}"
        if shown and shown[0] == shown[-1]
        else f" · pages {shown[0]}–{shown[-1]}"
        if shown
        else ""
    )
    rendered = page.render(collection).splitlines()
    body = rendered[1 : 1 + len(page.lines)]
    width = len(str(max((p for p in pages if p), default=1)))
    out_lines = [rendered[0].rstrip("]") + span + "]"]
    for no, line in enumerate(body, start=first):
        p = pages[no - 1] if no - 1 < len(pages) else None
        out_lines.append((f"p.{p:<{width}}  " if p else " " * (width + 4)) + line)
    return out_lines + rendered[1 + len(page.lines) :]
