"""Pieces of a job's result, shared by the round graph's answer node and the ReAct finish node.

Every docid placed in a result comes from a store: the candidate pool, a cached ranking or a
model's submission filtered to what the job's searches returned. Answers pass through the
citation check before they are shown.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from nodes.evidence.citation_check import CheckedAnswer, check_citations, cited_ids
from nodes.evidence.scoring import violated_constraint
from nodes.evidence.sentences import display_text, quote, whole_sentences
from nodes.job.state import Candidate, Plan
from nodes.policy.seam import AnswerDoc, AnswerDraft, Passage, Policy
from nodes.ranking.fusion import reciprocal_rank_fusion
from stores.records import body_lines, page_of_line, quotable_chunks
from stores.spans import DocumentText, Span


def _quotes(doc: DocumentText, spans: list[dict]) -> list[dict]:
    """The runner-up evidence passages of one item, quoted from the store by their line ranges
    (exact text and character span, as the main quote)."""
    out = []
    for s in spans:
        a, b = doc.line_range(s["line_start"], s["line_end"])
        text = doc.text[a:b]
        out.append(
            {
                "lines": [s["line_start"], s["line_end"]],
                "score": s["score"],
                "chunk": quote(text),
                **(_provenance(doc.span(a, b), text) if text else {}),
            }
        )
    return out


def _provenance(where: Span, text: str, page_of: Any = None) -> dict[str, Any]:
    """The exact quote with its character span, lines and (for paged sources) page."""
    out = {"quote": text, "chars": [where.char_start, where.char_end], "lines": [where.line_start, where.line_end]}
    if page_of is not None:
        out["page"] = page_of(where.line_start)
    return out


def evidence_entry(
    e: Mapping[str, Any],
    items: dict[str, Any],
    doc: DocumentText,
    page_of: Any = None,
    body: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """One requirement's evidence as results show it: `chunk` (the quote, whitespace collapsed,
    for reading) and exact provenance — `quote` is `read_span(docid, *chars)` byte for byte.
    `body` is the (first, last) line of the document's text, which sentences stay within."""
    text = e["chunk"]
    where = (doc.find_exact(text, e["line_start"]) or doc.find_loose(text)) if text and doc.lines else None
    entry = {
        "item": items.get(e["item_id"], {}).get("text", e["item_id"]),
        "score": e["score"],
        "chunk": display_text(text),
        "lines": [e["line_start"], e["line_end"]],
    }
    if where is not None:
        floor, ceiling = doc.line_range(*(body or (1, len(doc.lines))))
        a, b = whole_sentences(doc.text, where.char_start, where.char_end, floor, ceiling)  # passages may cut sentences
        entry |= _provenance(doc.span(a, b), doc.text[a:b], page_of)
        entry["chunk"] = display_text(doc.text[a:b])
    entry["more"] = _quotes(doc, e.get("also", []))
    return entry | ({"judged_by": e["judged_by"]} if e.get("judged_by") else {})


# A document whose every requirement scored below this (0–5) meets none: results list it under
# "weak matches", hidden unless asked for.
WEAK_BELOW = 1.0


def ranked_entry(cand: Candidate, rec: Any, plan: Plan, corpus: Any, policy: Policy) -> dict[str, Any]:
    """One ranked document as results show it: title, year, the score that orders the list,
    S, evidence per requirement, reason, and whether it meets no requirement (weak)."""
    items = {i["id"]: i for i in plan.get("checklist", [])}
    evidence = cand.get("evidence", [])
    doc = DocumentText.of(corpus.lines(cand["docid"]) or [])
    pages = (lambda line: page_of_line(rec, line)) if getattr(rec, "page_starts", None) else None
    return {
        "docid": cand["docid"],
        "title": rec.title,
        "year": rec.year,
        "score": round(cand.get("score", 0.0), 4),
        "rank_score": round(cand.get("rank_score", cand.get("fused", 0.0)), 6),
        "weak": not evidence or max(e["score"] for e in evidence) < WEAK_BELOW,
        "evidence": [evidence_entry(e, items, doc, pages, body_lines(rec)) for e in evidence],
        "reason": policy.reason(plan, cand),
    }


def fused_rankings(tools: Any, searches: Iterable[tuple[str, float]], exclude: set[str]) -> list[str]:
    """Documents of the job's cached rankings (search_id, weight) in weighted RRF order, less `exclude`."""
    rankings, weights = [], []
    for search_id, weight in searches:
        ranking = tools.ranking(search_id)
        if ranking is not None:
            rankings.append([d for d in ranking.docids if d not in exclude])
            weights.append(float(weight))
    return [d for d, _ in reciprocal_rank_fusion(rankings, weights)] if rankings else []


def passing(order: Sequence[str], plan: Plan, corpus: Any, limit: int) -> list[str]:
    """The first `limit` ids of `order` that the store holds and that pass the hard constraints."""
    out: list[str] = []
    for start in range(0, len(order), max(limit, 1) * 2):
        part = order[start : start + max(limit, 1) * 2]
        records = corpus.get_many(part)
        out += [d for d in part if d in records and not violated_constraint(plan, records[d])]
        if len(out) >= limit:
            break
    return out[:limit]


def answer_docs(ranked: Sequence[dict[str, Any]], corpus: Any, limit: int, chars: int) -> list[AnswerDoc]:
    """The top documents with their evidence passages re-read from the store, up to `chars`
    characters per document, best evidence first, for the answer step. A passage is the
    evidence's exact quote (its character span: whole sentences) when it has one — whole lines
    would start and end inside sentences, and an answer built from them cites fragments; else the
    whole lines it spans."""
    docs = []
    for item in ranked[:limit]:
        lines = corpus.lines(item["docid"]) or []
        doc = DocumentText.of(lines)
        seen: set[tuple[int, int]] = set()
        spans = []
        for e in sorted(item.get("evidence", []), key=lambda e: (-e.get("score", 0.0), tuple(e["lines"]))):
            a, b = (int(c) for c in (e.get("chars") or doc.line_range(*e["lines"])))
            if (a, b) not in seen and 0 <= a < b <= len(doc.text):
                seen.add((a, b))
                spans.append((tuple(e["lines"]), a, b))
        if not spans and lines:
            spans = [((1, min(len(lines), 8)), *doc.line_range(1, min(len(lines), 8)))]
        passages: list[Passage] = []
        used = 0
        for (start, end), a, b in spans:
            text = " ".join(doc.text[a:b].split())
            if used + len(text) > chars and passages:
                break
            passages.append(Passage(start, end, text[:chars]))
            used += len(text)
        docs.append(AnswerDoc(item["docid"], item.get("title", ""), tuple(passages)))
    return docs


def checked_answer(
    draft: AnswerDraft, *, opened: set[str], corpus: Any, similarity=None, question: str = ""
) -> tuple[dict, CheckedAnswer]:
    """The answer as results carry it, after every citation was checked against what the job read
    (and, given the `question`, how many cited sentences share its words). An extractive answer
    has `confidence` None (not estimated) and `method` "extractive"; a model's answer keeps its
    fields as they were."""
    wanted = [d for d in cited_ids(draft.explanation) if d in opened]
    records = corpus.get_many(wanted) if wanted else {}
    chunks = {d: quotable_chunks(r, corpus.chunks(d)) for d, r in records.items()}
    checked = check_citations(
        draft.explanation,
        allowed=set(records),
        chunks=chunks,
        titles={d: r.title for d, r in records.items()},
        similarity=similarity,
        question=question,
        quoted_text=draft.method == "extractive",
    )
    answer: dict[str, Any] = {
        "explanation": checked.text,
        "exact_answer": draft.exact_answer,
        "confidence": None if draft.confidence is None else int(draft.confidence),
        "insufficient_evidence": bool(draft.insufficient_evidence),
    }
    if draft.features is not None:
        answer["confidence_features"] = {k: round(float(v), 4) for k, v in draft.features.items()}
    return answer | ({"method": draft.method} if draft.method else {}), checked


# How many removed documents a result lists by name (`--full`); the count and reasons cover them all.
REMOVED_LISTED = 50


def removed_report(
    candidates: Mapping[str, Candidate], considered: Sequence[Candidate], plan: Plan, corpus: Any
) -> dict[str, Any]:
    """The documents a job found but left out of its list, and why: those its judge excluded while
    verifying, and those of the final pool a hard constraint (years, author, venue, an exclusion
    judged on the document's subject) removes. `{}` when none was removed.

    `{"count": n, "why": {reason: n}, "documents": [{docid, title, reason}, …]}`, the reasons grouped
    as a reader scans them ("matches the exclusion 'Tcl'"), at most REMOVED_LISTED documents named."""
    reasons = {d: str(c["excluded"]) for d, c in candidates.items() if c.get("excluded")}
    records = corpus.get_many([c["docid"] for c in considered] + list(reasons))
    for cand in considered:
        rec = records.get(cand["docid"])
        if rec is not None and cand["docid"] not in reasons and (reason := violated_constraint(plan, rec)):
            reasons[cand["docid"]] = reason
    if not reasons:
        return {}
    why: dict[str, int] = {}
    for reason in reasons.values():
        key = reason.split(" (", 1)[0]  # "matches the exclusion 'Tcl' (path names 'Tcl')" → by phrase
        why[key] = why.get(key, 0) + 1
    documents = [
        {"docid": d, "title": records[d].title if d in records else "", "reason": r}
        for d, r in list(reasons.items())[:REMOVED_LISTED]
    ]
    return {"count": len(reasons), "why": why, "documents": documents}
