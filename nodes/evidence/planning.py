"""Turn a research intent into a plan: key terms, constraints, a checklist and first queries.

Pure functions (no I/O, deterministic) so they run anywhere — inside activities, inside the
workflow for steering, and in table-driven tests. The user's own words are always kept:
queries only ever add terms.
"""

from __future__ import annotations

import re

from nodes.evidence.requirements import (
    aspect_kind,
    clean_piece,
    filler_piece,
    parse_requirements,
    split_and,
    split_subject,
)
from nodes.job.state import WHOLE_ID, ChecklistItem, ChecklistKind, Plan
from nodes.policy.seam import SCORED_KINDS
from nodes.tools.excerpts import query_terms

_DASH = r"(?:-|–|—|to|until|through)"
_YEAR = r"((?:1[5-9]|20)\d\d)"
_RANGE = re.compile(
    rf"\b(?:from\s+|between\s+)?{_YEAR}\s*{_DASH}\s*{_YEAR}\b|\bbetween\s+{_YEAR}\s+and\s+{_YEAR}\b", re.I
)
_AFTER = re.compile(rf"\b(after|since|from|post|later than|newer than|not before)\s+{_YEAR}\b", re.I)
_BEFORE = re.compile(rf"\b(before|until|prior to|earlier than|older than|up to|not after)\s+{_YEAR}\b", re.I)
_IN_YEAR = re.compile(rf"\b(?:in|published in|from the year)\s+{_YEAR}\b", re.I)
# Conservative on purpose: "not" only counts at the start of a clause ("…, not surveys",
# "but not X", "… and not X"), since "do not use" inside a sentence is part of the topic, not an
# exclusion; "other than", "apart from", "excluding" and "except" exclude wherever they stand.
_EXCLUDE = re.compile(
    r"(?:(?:^|(?<=[,;(:]))\s*(?:and\s+|but\s+)?not\s+|\b(?:but|and)\s+not\s+|\bexclud(?:e|ing)\s+"
    r"|\bexcept(?:\s+for)?\s+|\bother\s+than\s+|\b(?:apart|aside)\s+from\s+|\b(?:leaving|leave)\s+out\s+"
    # "without X" only where a clause starts ("…, without asyncio"): inside one it is the topic's
    # own wording ("recovery without a log", "search without an index").
    r"|\bomitting\s+|(?:^|(?<=[,;(:]))\s*without\s+)"
    r"([^,;()?!]+?)(?=[,;()?!]|\.(?:\s|$)|$)",
    re.I,
)
_NAME = r"[A-Z][\w'\-]*\.?(?:,?\s+(?:[A-Z][\w'\-]*\.?|[A-Z]\.(?:\s?[A-Z]\.)*))*"
_AUTHOR_CUE = re.compile(
    rf"\b(?:(?:written|authored|co-authored|published)\s+(?:either\s+)?by|(?:articles|papers|publications|works)\s+"
    rf"(?:written\s+)?(?:either\s+)?by)\s+({_NAME}(?:\s*(?:,|\bor\b|\band\b)\s*{_NAME})*)(\s+(?:or|and)\s+others)?"
)
_VENUE_CUE = re.compile(
    r"\b(?:published in|appeared in|appearing in|presented at|in the proceedings of|venue:?)\s+"
    r"(?:the\s+)?([A-Z][\w&\-]*(?:\s+(?:of\s+(?:the\s+)?)?[A-Z][\w&\-]*)*)"
)
_SPLIT = re.compile(r"[,;]|:(?=\s)|\s+(?:for|using|with|via|based on|applied to|across|when)\s+", re.I)
_METHOD_CUE = re.compile(r"\b(?:using|with|via|based on)\s*$", re.I)
_MAX_ITEMS = 6


def parse_years(text: str) -> tuple[int | None, int | None, str]:
    """(year_min, year_max, text without the year phrases). 'after 2015' means ≥ 2016."""
    year_min = year_max = None
    m = _RANGE.search(text)
    if m:
        a, b = [int(g) for g in m.groups() if g]
        year_min, year_max = min(a, b), max(a, b)
        text = text[: m.start()] + " " + text[m.end() :]
    for m in list(_AFTER.finditer(text)):
        word, year = m.group(1).lower(), int(m.group(2))
        year_min = year if word in ("since", "from", "not before") else year + 1
        text = text.replace(m.group(0), " ")
    for m in list(_BEFORE.finditer(text)):
        word, year = m.group(1).lower(), int(m.group(2))
        year_max = year if word in ("until", "up to", "not after") else year - 1
        text = text.replace(m.group(0), " ")
    if year_min is None and year_max is None:
        m = _IN_YEAR.search(text)
        if m:
            year_min = year_max = int(m.group(1))
            text = text[: m.start()] + " " + text[m.end() :]
    return year_min, year_max, " ".join(text.split())


def parse_exclusions(text: str) -> tuple[list[str], str]:
    """Phrases after 'not', 'excluding', 'except', 'other than', 'apart/aside from', 'leaving out',
    'omitting' and a clause's opening 'without'; and the text without them."""
    found: list[str] = []
    for m in _EXCLUDE.finditer(text):
        # "excluding surveys and tutorials" excludes either: one exclusion per alternative.
        for part in re.split(r"\s+(?:and|or|nor)\s+|/", m.group(1)):
            phrase = " ".join(part.split()).strip(" .")
            if phrase and query_terms(phrase):
                found.append(phrase)
    if not found:
        return found, " ".join(text.split()).strip(" ,;.")
    # What is left of "connections: not X" or "checksums except for CRC?" is "connections", "checksums".
    cleaned = re.sub(r"\s+([,;:?!])", r"\1", " ".join(_EXCLUDE.sub(" ", text).split()))
    return found, cleaned.strip(" ,;.:?!")


def parse_authors(text: str) -> tuple[list[str], bool]:
    """Names after "written by", "papers by" …; exclusive unless followed by "or others".

    Only explicit authorship cues count ("an old article by X" is a reference, not a
    requirement); the navigator keeps a name only if the store has an author of that name.
    """
    m = _AUTHOR_CUE.search(text)
    if not m:
        return [], False
    names = [n.strip(" ,.") for n in re.split(r"\s*(?:\bor\b|\band\b|;)\s*", m.group(1)) if n.strip(" ,.")]
    return names, m.group(2) is None


def parse_venue(text: str) -> str | None:
    """A venue named after "published in", "appeared in", "presented at" … (validated by the navigator)."""
    m = _VENUE_CUE.search(text)
    return m.group(1).strip() if m else None


_PAIRS = {"(": ")", "[": "]", "{": "}", "\u201c": "\u201d", "\u00ab": "\u00bb"}


def _protected(text: str) -> list[tuple[int, int]]:
    """Spans [start, end) inside (), [], {} or quotes ("…", “…”, «…»): a comma or a cue word
    there belongs to the phrase ("a target in CMake (CXX_STANDARD, CXX_EXTENSIONS)"), not to
    the list of requirements. Only balanced pairs count: a stray "(" protects nothing."""
    spans: list[tuple[int, int]] = []
    stack: list[tuple[str, int]] = []
    for i, ch in enumerate(text):
        if ch == '"':
            if stack and stack[-1][0] == '"':
                spans.append((stack.pop()[1], i + 1))
            else:
                stack.append(('"', i))
        elif ch in _PAIRS:
            stack.append((ch, i))
        elif ch in _PAIRS.values():
            for depth in range(len(stack) - 1, -1, -1):  # close the nearest matching opener
                if _PAIRS.get(stack[depth][0]) == ch:
                    spans.append((stack[depth][1], i + 1))
                    del stack[depth:]
                    break
    return spans


def split_requirements(core: str) -> tuple[list[str], list[str]]:
    """The intent's core cut into requirement phrases at commas, semicolons and cue words
    (" for ", " using ", …) — never inside brackets or quotes. A piece that is only filler ("by
    default", "in general", "for example": `filler_piece`) stays with its neighbour instead of
    becoming a requirement. Returns (pieces, cues), where cues[i] is the separator between
    pieces[i] and pieces[i + 1]."""
    spans = _protected(core)
    pieces: list[str] = []
    cues: list[str] = []
    start = 0
    for m in _SPLIT.finditer(core):
        if any(a < m.start() < b for a, b in spans):
            continue
        pieces.append(core[start : m.start()])
        cues.append(m.group(0))
        start = m.end()
    pieces.append(core[start:])
    return _fold_fillers(pieces, cues)


def _fold_fillers(pieces: list[str], cues: list[str]) -> tuple[list[str], list[str]]:
    """Pieces that are only filler (`filler_piece`) joined to their neighbour with the separator
    between them: to the piece before ("EventEmitter maximum listeners, by default" stays one
    requirement), or to the next when the filler comes first ("By default, how many listeners …").
    Nothing is dropped, so an intent that is all filler still gives its one requirement."""
    out: list[str] = [pieces[0]]
    seps: list[str] = []
    for i, piece in enumerate(pieces[1:]):
        cue = cues[i]
        if filler_piece(piece, cue) or filler_piece(out[-1], seps[-1] if seps else ""):
            out[-1] = out[-1] + cue + piece
        else:
            out.append(piece)
            seps.append(cue)
    return out, seps


def _items_from_core(core: str, *, steer: bool = False) -> list[ChecklistItem]:
    """The requirements of the intent's core: its subject first, then one per qualifying aspect
    (cut at commas and cue words, "Y and Z" in an aspect as two), then the products it names;
    the document types it asks for follow as unscored constraints. Never the request's opener and
    never the core reworded as an extra item (`whole_intent` keeps that as a ranking signal)."""
    parsed = parse_requirements(core, lone_product_is_subject=not steer)
    items: list[ChecklistItem] = []
    pieces, cues = split_requirements(parsed.body)
    for i, piece in enumerate(pieces):
        kind: ChecklistKind = "topic" if not items else aspect_kind(cues[i - 1] if 0 < i <= len(cues) else "")
        parts = [(part, kind) for part in split_and(piece)]
        if kind == "topic":
            subject = split_subject(piece, _protected(piece))
            parts = [(h, "topic") for h in subject.heads] + [(q, "aspect") for q in subject.qualifiers]
        for part, part_kind in parts:
            text = clean_piece(part)
            if not query_terms(text) or any(text.lower() == it["text"].lower() for it in items):
                continue
            kind = "topic" if not items else part_kind
            items.append(
                ChecklistItem(id=f"c{len(items) + 1}", kind=kind, text=text, weight=1.0 if kind == "topic" else 0.8)
            )
    items = items[:_MAX_ITEMS]
    if not items and query_terms(core) and not parsed.metadata_only:
        items.append(ChecklistItem(id="c1", kind="topic", text=clean_piece(parsed.body) or core, weight=1.0))
    for n, product in enumerate(parsed.products, start=1):
        items.append(ChecklistItem(id=f"p{n}", kind="product", text=product, weight=0.8))
    for n, fmt in enumerate(parsed.formats, start=1):
        items.append(ChecklistItem(id=f"f{n}", kind="format", text=fmt, weight=0.0))
    return items


def whole_intent(core: str, checklist: list[ChecklistItem]) -> ChecklistItem | None:
    """The core as one more item scored into S but never shown as a requirement, or None when
    the checklist's one scored requirement says the core's words (less an article: "The HSV-2
    infection …" → "HSV-2 infection …").

    Fragments lose how the parts relate, and the core used to be checklist item c0: the
    judge averaged it with the fragments. It stays a ranking signal (same text, same weight) so
    that the benchmarks' ranking does not move for want of it, but a user reading the plan sees
    only requirements they wrote."""
    scored = [i for i in checklist if i["kind"] in SCORED_KINDS]
    same = len(scored) == 1 and [t.lower() for t in query_terms(scored[0]["text"])] == [
        t.lower() for t in query_terms(core)
    ]
    if not query_terms(core) or same:
        return None
    return ChecklistItem(id=WHOLE_ID, kind="topic", text=core, weight=1.0)


def make_plan(intent: str, steering: list[str] | None = None, *, years: bool = True) -> Plan:
    """The navigator's heuristic plan for an intent plus any steering notes received so far.

    With `years=False` (the store has no publication years) a year phrase is not a constraint
    but part of the topic — "mortality rose from 2009 to 2014" is about those years, and a
    filter no document can pass would empty the result.
    """
    year_min, year_max, rest = parse_years(intent) if years else (None, None, intent)
    exclusions, core = parse_exclusions(rest)
    checklist = _items_from_core(core)
    whole = whole_intent(core, checklist)
    for note in steering or []:
        checklist, exclusions, year_min, year_max = apply_steering(
            checklist, exclusions, year_min, year_max, note, years=years
        )
    if year_min is not None or year_max is not None:
        span = f"{year_min or '…'}–{year_max or '…'}"
        checklist.append(ChecklistItem(id="y", kind="metadata", text=f"published {span}", weight=0.0))
    for n, phrase in enumerate(exclusions, start=1):
        checklist.append(ChecklistItem(id=f"x{n}", kind="exclusion", text=f"not {phrase}", weight=0.0))
    plan = Plan(
        key_terms=query_terms(intent),
        core=core or intent,
        checklist=checklist,
        year_min=year_min,
        year_max=year_max,
        exclusions=exclusions,
        version=1 + len(steering or []),
    )
    if whole is not None:
        plan["whole"] = whole
    return plan


def apply_steering(
    checklist: list[ChecklistItem],
    exclusions: list[str],
    year_min: int | None,
    year_max: int | None,
    note: str,
    *,
    years: bool = True,
):
    """Fold one steering note into the plan parts: a requirement, an exclusion or a year range
    (only when the store knows publication years)."""
    y_min, y_max, rest = parse_years(note) if years else (None, None, note)
    new_excl, rest = parse_exclusions(rest)
    checklist = [i for i in checklist if i["kind"] not in ("metadata", "exclusion")]
    if query_terms(rest):
        # Read like the intent ("only PostgreSQL" is a product, "as man pages" a format); what the
        # note asks besides the plan's subject is an aspect of it.
        added = _items_from_core(rest, steer=bool(checklist)) or [
            ChecklistItem(id="", kind="topic", text=rest, weight=1.0)
        ]
        for item in added:
            kind: ChecklistKind = "aspect" if checklist and item["kind"] == "topic" else item["kind"]
            weight = item["weight"] if kind != "aspect" else 0.8
            checklist = [
                *checklist,
                ChecklistItem(id=f"s{len(checklist) + 1}", kind=kind, text=item["text"], weight=weight),
            ]
    return (
        checklist,
        exclusions + new_excl,
        y_min if y_min is not None else year_min,
        y_max if y_max is not None else year_max,
    )


def validate_steering(note: object, *, years: bool = True) -> str:
    """Return the cleaned note or raise ValueError saying how to phrase it; `years` says whether
    the store knows publication years (a year range cannot filter a store without them)."""
    if not isinstance(note, str) or not note.strip():
        raise ValueError("steering text is empty; say e.g. 'must use hospital data' or 'not surveys'")
    note = " ".join(note.split())
    if len(note) > 500:
        raise ValueError("steering text is longer than 500 characters; state one requirement at a time")
    y_min, y_max, rest = parse_years(note)
    if not years and (y_min is not None or y_max is not None):
        raise ValueError(
            f"this collection's documents have no publication year, so {note!r} cannot filter by year; "
            "steer with a requirement or an exclusion instead"
        )
    excl, rest = parse_exclusions(rest)
    if not query_terms(rest) and not excl and y_min is None and y_max is None:
        raise ValueError(
            f"no requirement found in {note!r}; use content words, 'not X', or a year range like 2019-2023"
        )
    return note


def first_queries(plan: Plan, intent: str) -> list[str]:
    """Round-one queries: the intent without its constraint phrases — every content word the
    user typed, none of the excluded ones (searching for 'surveys' would find surveys)."""
    return [plan.get("core") or intent]


def additive_query(core: str, proposed: str, max_added: int = 8) -> str:
    """A rewritten query that keeps every word of `core` and only adds: the user's words first,
    then the proposal's words that are new (at most `max_added`). A model's rewrite can therefore
    sharpen a query but never drop what the user asked for."""
    have = {t.lower() for t in query_terms(core)}
    added: list[str] = []
    for word in query_terms(proposed):
        if word.lower() not in have:
            have.add(word.lower())
            added.append(word)
        if len(added) >= max_added:
            break
    return " ".join([core, *added]).strip()
