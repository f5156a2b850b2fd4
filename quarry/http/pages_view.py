"""What the job pages of `quarry serve` show, as plain values built from the service's records:
quotes split around their highlight, the requirement × document matrix, the rounds rebuilt from the
job's event log, the answer's citations as links, budget and usage lines.

Pure functions, no I/O and no markup: the templates (quarry/http/templates/) escape every string they are
given, so the text of documents, intents and models can never become markup — the view only decides
*which* part of a passage is marked, never writes the `<mark>` itself.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote as url_quote

SCORE_MAX = 5.0  # a requirement's evidence score runs 0–5 (nodes.evidence)
MET = 3.0  # a requirement scored at least this is shown as met in the matrix
CITATION = re.compile(r"\[([^\[\]\n]{1,300})\]")


@dataclass(frozen=True)
class Segment:
    """A run of a passage's text; `marked` runs are the evidence quote."""

    text: str
    marked: bool = False


@dataclass(frozen=True)
class Requirement:
    label: str  # "R1", "R2", … as the matrix's columns name them
    text: str
    kind: str = ""
    weight: float | None = None


@dataclass(frozen=True)
class Passage:
    """One passage of a document and the requirements it is evidence for (label, text, 0–5 score)."""

    segments: list[Segment]
    lines: tuple[int, int] | None
    page: int | None
    url: str
    scores: list[tuple[str, str, float]]


@dataclass(frozen=True)
class RankedView:
    place: int
    docid: str
    title: str
    year: int | None
    score: float
    rank_score: float | None
    weak: bool
    reason: str
    url: str
    passages: list[Passage]
    cells: list[float | None]  # the matrix row: the best score per requirement, None without evidence
    unmet: list[str]  # labels of the requirements it has no evidence for (score 0 or none)


@dataclass(frozen=True)
class TopEntry:
    docid: str
    title: str
    score: float | None
    url: str


@dataclass
class RoundView:
    """A round: its searches, its top 5 once verified, and what entered and left the top 5."""

    name: str  # "1", "2", … or "final"
    queries: list[tuple[str, str]] = field(default_factory=list)  # (channel, query)
    top: list[TopEntry] = field(default_factory=list)
    entered: list[TopEntry] = field(default_factory=list)
    left: list[TopEntry] = field(default_factory=list)


@dataclass(frozen=True)
class EventRow:
    seq: int
    after_s: float
    status: str
    round: int
    node: str
    candidates: int | None
    end: bool


@dataclass(frozen=True)
class Meter:
    """One budget: what was used of what was allowed (`limit` None: no cap)."""

    name: str
    used: str
    limit: str
    share: float | None  # 0–1 for the bar; None without a cap


def doc_url(collection: str, docid: str, lines: Sequence[int] | None = None, job_id: str = "") -> str:
    """The document page of `docid`, scrolled to and marking `lines` [first, last]."""
    url = f"/collections/{url_quote(collection, safe='')}/documents/{url_quote(docid, safe='')}"
    query = []
    if lines:
        query.append(f"lines={int(lines[0])}-{int(lines[-1])}")
    if job_id:
        query.append(f"job={url_quote(job_id, safe='')}")
    return url + ("?" + "&".join(query) if query else "") + (f"#L{int(lines[0])}" if lines else "")


def highlight(passage: str, quote: str | None) -> list[Segment]:
    """`passage` with `quote` marked where it occurs — exactly, else ignoring case and spacing; a
    quote the passage does not hold is shown after it, marked, so it is never silently dropped."""
    if not quote or not quote.strip():
        return [Segment(passage)]
    at = passage.find(quote)
    if at >= 0:
        start, end = at, at + len(quote)
    else:
        found = re.search(r"\s+".join(re.escape(w) for w in quote.split()), passage, re.IGNORECASE)
        if found is None:
            return [s for s in (Segment(passage), Segment(" … " if passage else ""), Segment(quote, True)) if s.text]
        start, end = found.span()
    parts = [Segment(passage[:start]), Segment(passage[start:end], True), Segment(passage[end:])]
    return [s for s in parts if s.text]


def requirements_of(checklist: Iterable[Mapping[str, Any]], ranked: Iterable[Mapping[str, Any]]) -> list[Requirement]:
    """The checklist as numbered requirements, plus any requirement only the evidence names (one
    added by steering, or a result without a checklist)."""
    found: dict[str, Requirement] = {}
    for c in checklist:
        text = str(c.get("text", ""))
        if text not in found:
            weight = c.get("weight")
            found[text] = Requirement(
                "", text, str(c.get("kind") or ""), float(weight) if isinstance(weight, int | float) else None
            )
    for item in ranked:
        for e in item.get("evidence") or []:
            found.setdefault(str(e.get("item", "")), Requirement("", str(e.get("item", ""))))
    return [Requirement(f"R{n}", r.text, r.kind, r.weight) for n, r in enumerate(found.values(), start=1)]


def ranked_views(
    ranked: Iterable[Mapping[str, Any]], requirements: Sequence[Requirement], collection: str, job_id: str
) -> list[RankedView]:
    """Each ranked document with its passages (one per passage, strongest first, naming every
    requirement it is evidence for) and its row of the requirement matrix."""
    label = {r.text: r.label for r in requirements}
    order = {r.text: n for n, r in enumerate(requirements)}
    views = []
    for place, item in enumerate(ranked, start=1):
        docid = str(item.get("docid", ""))
        best: dict[str, float] = {}
        grouped: dict[tuple[Any, ...], dict[str, Any]] = {}
        for e in sorted(item.get("evidence") or [], key=lambda e: -float(e.get("score") or 0.0)):
            name, score = str(e.get("item", "")), float(e.get("score") or 0.0)
            best[name] = max(best.get(name, 0.0), score)
            lines = tuple(int(n) for n in (e.get("lines") or ())[:2])
            key = (lines, str(e.get("chunk", "")))
            if key not in grouped:
                grouped[key] = {"e": e, "lines": lines, "scores": []}
            grouped[key]["scores"].append((label.get(name, "?"), name, score))
        # A passage that is evidence for nothing (every score 0) is left out — the matrix and the
        # `unmet` line say so — unless it is all the document has.
        groups = [g for g in grouped.values() if max(s for _, _, s in g["scores"]) > 0] or list(grouped.values())[:1]
        passages = [
            Passage(
                highlight(str(g["e"].get("chunk") or ""), g["e"].get("quote")),
                (g["lines"][0], g["lines"][-1]) if g["lines"] else None,
                g["e"].get("page"),
                doc_url(collection, docid, g["lines"] or None, job_id),
                sorted([x for x in g["scores"] if x[2] > 0] or g["scores"], key=lambda x: order.get(x[1], 0)),
            )
            for g in groups
        ]
        rank_score = item.get("rank_score")
        views.append(
            RankedView(
                place,
                docid,
                str(item.get("title") or docid),
                item.get("year"),
                float(item.get("score") or 0.0),
                float(rank_score) if isinstance(rank_score, int | float) else None,
                bool(item.get("weak")),
                str(item.get("reason") or ""),
                doc_url(collection, docid, job_id=job_id),
                passages,
                [best.get(r.text) for r in requirements],
                [r.label for r in requirements if not best.get(r.text)],
            )
        )
    return views


def heat(score: float | None) -> str:
    """The matrix cell's shade class: h0 (no evidence) … h5 (fully met)."""
    if score is None:
        return "none"
    return f"h{max(0, min(5, round(score / SCORE_MAX * 5)))}"


def _top(entries: Iterable[Mapping[str, Any]]) -> list[tuple[str, float | None]]:
    out = []
    for t in entries:
        score = t.get("score")
        out.append((str(t.get("docid", "")), float(score) if isinstance(score, int | float) else None))
    return out


def rounds_of(
    events: Sequence[Mapping[str, Any]], titles: Mapping[str, str], collection: str, job_id: str
) -> list[RoundView]:
    """The rounds as the event log tells them: each round's searches (an event lists the latest
    ones with their round) and the top 5 after it — an event's top belongs to the latest round it
    has searches of — then the final order the job answered with, each with what entered and left."""

    def entry(docid: str, score: float | None) -> TopEntry:
        return TopEntry(docid, titles.get(docid, ""), score, doc_url(collection, docid, job_id=job_id))

    queries: dict[int, list[tuple[str, str]]] = {}
    tops: dict[int, list[tuple[str, float | None]]] = {}
    final: list[tuple[str, float | None]] | None = None
    for data in events:
        rounds_here = []
        for s in data.get("searches") or []:
            r = int(s.get("round") or 0)
            rounds_here.append(r)
            q = (str(s.get("channel") or ""), str(s.get("query") or ""))
            if q not in queries.setdefault(r, []):
                queries[r].append(q)
        if data.get("end"):
            final = _top(data.get("top") or [])
        elif data.get("top"):
            tops[max(rounds_here) if rounds_here else int(data.get("round") or 0)] = _top(data["top"])
    views: list[RoundView] = []
    before: list[tuple[str, float | None]] = []
    steps = [(str(r), queries.get(r, []), tops.get(r)) for r in sorted(set(queries) | set(tops))]
    if final is not None:
        steps.append(("final", [], final))
    for name, asked, top in steps:
        view = RoundView(name, asked)
        if top is not None:
            ids, was = {d for d, _ in top}, {d for d, _ in before}
            view.top = [entry(d, s) for d, s in top]
            view.entered = [entry(d, s) for d, s in top if d not in was]
            view.left = [entry(d, s) for d, s in before if d not in ids]
            before = top
        views.append(view)
    return views


def event_rows(events: Sequence[Mapping[str, Any]], started_at: float) -> list[EventRow]:
    """The event log as a table: when (seconds after the job was created) and where the job was."""
    rows = []
    for e in events:
        d = e.get("data") or {}
        candidates = d.get("candidates")
        rows.append(
            EventRow(
                int(e.get("id", 0)),
                max(0.0, float(e.get("at", started_at)) - started_at),
                str(d.get("status", "")),
                int(d.get("round") or 0),
                str(d.get("node", "")),
                int(candidates) if isinstance(candidates, int) else None,
                bool(d.get("end")),
            )
        )
    return rows


def cited_segments(explanation: str, references: Iterable[Mapping[str, Any]]) -> list[tuple[str, str | None]]:
    """The answer's text as (text, docid) runs: a bracketed citation of a referenced document
    becomes its own run (a link to its reference); everything else stays text."""
    known = {str(r.get("docid", "")) for r in references}
    runs: list[tuple[str, str | None]] = []
    at = 0
    for m in CITATION.finditer(explanation):
        ids = [p.strip() for p in re.split(r"[,;]", m.group(1))]
        if not ids or not all(i in known for i in ids):
            continue
        runs.append((explanation[at : m.start()], None))
        runs.extend((i, i) for i in ids)
        at = m.end()
    runs.append((explanation[at:], None))
    return [r for r in runs if r[0]]


def meters(
    usage: Mapping[str, Any], config: Mapping[str, Any], used_s: float | None, budget_s: float | None
) -> list[Meter]:
    """Time, tokens and dollars: used against the job's caps (a cap of None is no cap)."""

    def share(used: float, limit: Any) -> float | None:
        return min(1.0, used / float(limit)) if isinstance(limit, int | float) and limit > 0 else None

    tokens = int(usage.get("total_tokens") or usage.get("input_tokens", 0) + usage.get("output_tokens", 0) or 0)
    dollars = float(usage.get("dollars") or 0.0)
    max_tokens, max_dollars = config.get("max_tokens"), config.get("max_dollars")
    shown = [
        Meter(
            "time",
            f"{used_s:,.1f} s" if used_s is not None else "—",
            f"{budget_s:,.0f} s" if budget_s else "no cap",
            share(used_s, budget_s) if used_s is not None else None,
        ),
        Meter("tokens", f"{tokens:,}", f"{int(max_tokens):,}" if max_tokens else "no cap", share(tokens, max_tokens)),
        Meter(
            "dollars",
            f"${dollars:.4f}",
            f"${float(max_dollars):.2f}" if max_dollars else "no cap",
            share(dollars, max_dollars),
        ),
    ]
    return shown


def usage_parts(usage: Mapping[str, Any]) -> list[str]:
    """The model usage in words ("3 model calls", "1,200 tokens in (800 cached)", …); [] without calls."""
    if not usage.get("calls"):
        return []
    parts = [f"{usage['calls']} model calls", f"{usage.get('input_tokens', 0):,} tokens in"]
    if usage.get("cached_input_tokens"):
        parts[-1] += f" ({usage['cached_input_tokens']:,} cached)"
    parts.append(f"{usage.get('output_tokens', 0):,} out")
    if usage.get("reasoning_tokens"):
        parts.append(f"{usage['reasoning_tokens']:,} reasoning")
    if usage.get("unpriced"):
        parts.append(f"no price for {', '.join(map(str, usage['unpriced']))}")
    return parts


def when(ts: float | None) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S") if ts else ""
