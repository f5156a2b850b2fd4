"""Evidence location and per-requirement scoring (heuristic policy, no LLM).

For every checklist item the evidence is the quotable sentence (not a heading, code or page
boilerplate: `nodes.evidence.quotable`) covering most of the item's (prefix-stemmed) content words, in the
chunk that covers most of them on ties; the item score c_i in [0, 5] is that sentence's coverage
scaled, and whatever else scores an item (relative BM25, cosine) is capped by it (`quote_cap`):
a 5/5 needs the requirement's words in the quoted sentence itself (or the title printed above
it), not only somewhere in the passage around it.
The combined score follows PaSaMaster: S = (mean_i c_i + p) / 6, where p is the candidate's
relevance probability from retrieval. Hard constraints (years, exclusions) are checked against
store metadata and text, not guessed.

Sentence splitting, quote spans and stems are `nodes.evidence.sentences`; the names callers took from here
(`sentences`, `quote`, `stem`, …) are re-exported.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from nodes.evidence.exclusions import excluded_by
from nodes.evidence.sentences import EVIDENCE_CHARS as EVIDENCE_CHARS
from nodes.evidence.sentences import QUOTE_MAX_CHARS as QUOTE_MAX_CHARS
from nodes.evidence.sentences import QUOTE_MIN_CHARS as QUOTE_MIN_CHARS
from nodes.evidence.sentences import SENTENCE_CAP as SENTENCE_CAP
from nodes.evidence.sentences import WORD, fenced_starts, header_title, quote_span, stem, stems
from nodes.evidence.sentences import display_text as display_text
from nodes.evidence.sentences import quote as quote
from nodes.evidence.sentences import sentence_quote as sentence_quote
from nodes.evidence.sentences import sentences as sentences
from nodes.evidence.sentences import whole_sentences as whole_sentences
from nodes.job.state import ChecklistItem, Evidence, Plan
from nodes.tools.excerpts import STOPWORDS, query_terms
from stores.records import Chunk, DocRecord, last_name


def coverage(wanted: set[str], text: str) -> float:
    """Share of a requirement's content words (stems) that `text` contains (0 without words)."""
    return len(wanted & stems(text)) / len(wanted) if wanted else 0.0


def item_stems(item: ChecklistItem) -> set[str]:
    """A requirement's content words as the scorer compares them (prefix stems)."""
    return {stem(t) for t in query_terms(item["text"])}


def quote_cap(item: ChecklistItem, quote_text: str, title: str = "") -> float:
    """The highest score (0–5) a requirement may get with this quote as its evidence:
    1 + 4 × the share of the requirement's content words that the quoted sentence or the
    document's title (which results print above every quote) contains. A 5/5 needs every content
    word there, not merely somewhere in the passage around the quote; evidence sharing none of
    them caps the item at 1 (barely met), however strongly the rest of the document matched
    (relative BM25, the passage's cosine). A requirement without content words is not capped.

    Why the title counts: in abstracts (CACM) the requirement's words are often only in the
    title, which quotes leave out because it is shown beside them. Counting the quote alone
    lowered CACM nDCG@20 from 0.584 to 0.563 in a replay of the agent's final pools; with the
    title, 0.585 (measured when the cap was introduced)."""
    wanted = item_stems(item)
    return 5.0 if not wanted else round(1.0 + 4.0 * coverage(wanted, f"{quote_text}\n{title}"), 3)


def unshown_words(item: ChecklistItem, title: str = "") -> set[str]:
    """The item's words (stems) that the document's title does not already show; all of them
    when the title shows every one. A quote is chosen for these (results print the title above
    every quote)."""
    wanted = item_stems(item)
    return (wanted - stems(title)) or wanted


def locate_evidence(item: ChecklistItem, chunks: Sequence[Chunk], title: str = "") -> Evidence:
    """The quotable sentence that best shows the item (across chunks; on ties the chunk covering
    more of its words, then the earlier), with its line range and a 0–5 score: how well the
    document matched the item, the best sentence's coverage of the item's words. A document with
    nothing quotable (only headings, code, boilerplate) gives its title with score 0.

    The quote is chosen by the item's words that the title does not already show (results print
    the title above every quote): for "default tab stop in less" in less(1), "If an option
    appears in the LESS variable … default value" covered as many words as "Sets tab stops. …
    The default for n is 8." only because it repeats the title's "less". The score stays the best
    sentence's coverage of all the item's words, so the ranking does not move with the quote."""
    wanted = item_stems(item)
    seek = unshown_words(item, title)
    fenced = fenced_starts(chunks)
    best: tuple[tuple[float, float, float], Chunk, tuple[int, int]] | None = None
    match = 0.0
    for chunk in chunks:
        header = header_title(chunk, title)
        in_fence = fenced.get(chunk.chunk_no, False)
        span = quote_span(chunk.text, seek, header, in_fence)
        if span is None:
            continue
        if seek != wanted:
            whole = quote_span(chunk.text, wanted, header, in_fence) or span
            match = max(match, coverage(wanted, chunk.text[whole[0] : whole[1]]))
        quoted = chunk.text[span[0] : span[1]]
        key = (coverage(seek, quoted), coverage(wanted, quoted), coverage(wanted, chunk.text))
        match = max(match, key[1])
        if best is None or key > best[0]:
            best = (key, chunk, span)
    if best is None:
        return Evidence(item_id=item["id"], score=0.0, chunk=" ".join(title.split()), line_start=1, line_end=1)
    _, chunk, (a, b) = best
    first = chunk.line_start + chunk.text.count("\n", 0, a)
    return Evidence(
        item_id=item["id"],
        score=round(5.0 * match, 3),
        chunk=chunk.text[a:b],
        line_start=first,
        line_end=first + chunk.text.count("\n", a, b),
    )


# MiniLM cosine between a requirement and a passage: ~0.2 is unrelated text, ~0.7 a paraphrase.
COSINE_FLOOR, COSINE_CEIL = 0.2, 0.7


def cosine_to_score(cosine: float) -> float:
    """Map a MiniLM cosine similarity onto the 0–5 item scale (linear between floor and ceiling)."""
    return round(5.0 * min(1.0, max(0.0, (cosine - COSINE_FLOOR) / (COSINE_CEIL - COSINE_FLOOR))), 3)


def locate_evidence_dense(
    item: ChecklistItem, item_vec, chunk_vecs, chunks: Sequence[Chunk], top_m: int = 1, title: str = ""
) -> list[Evidence]:
    """The `top_m` chunks most similar to the item (cosine of unit vectors) that have a quotable
    sentence, with line ranges.

    `chunk_vecs` is `[(span, vector)]` from the dense index; the chunk text comes from the corpus
    store so the evidence quotes exactly what Quarry read.
    """
    import numpy as np

    if not chunk_vecs:
        return []
    matrix = np.stack([v for _, v in chunk_vecs])
    sims = matrix @ item_vec
    by_no = {c.chunk_no: c for c in chunks}
    fenced = fenced_starts(chunks)
    wanted = item_stems(item)
    out: list[Evidence] = []
    for idx in np.argsort(-sims, kind="stable"):
        if len(out) >= top_m:
            break
        span = chunk_vecs[int(idx)][0]
        chunk = by_no.get(span.chunk_no)
        # The store's chunk gives the quote and its lines (it may hold less than the embedded span);
        # a chunk with nothing quotable (a code listing, a footer) is passed over.
        where = (
            quote_span(chunk.text, wanted, header_title(chunk, title), fenced.get(chunk.chunk_no, False))
            if chunk
            else None
        )
        if chunk is not None and where is None:
            continue
        if chunk is not None and where is not None:
            a, b = where
            start = chunk.line_start + chunk.text.count("\n", 0, a)
            text, end = chunk.text[a:b], start + chunk.text.count("\n", a, b)
        else:
            text, start, end = "", span.line_start, span.line_end
        out.append(
            Evidence(
                item_id=item["id"], score=cosine_to_score(float(sims[idx])), chunk=text, line_start=start, line_end=end
            )
        )
    return out


def violated_constraint(plan: Plan, rec: DocRecord) -> str:
    """A reason the document fails a hard constraint, or ''."""
    y_min, y_max = plan.get("year_min"), plan.get("year_max")
    if y_min is not None or y_max is not None:
        if rec.year is None:
            return "year unknown but the intent requires a year range"
        if y_min is not None and rec.year < y_min:
            return f"published {rec.year}, before {y_min}"
        if y_max is not None and rec.year > y_max:
            return f"published {rec.year}, after {y_max}"
    authors = plan.get("authors") or []
    if authors and plan.get("authors_exclusive"):
        have = {last_name(a) for a in rec.authors if a.strip()}
        if not have & {a.lower() for a in authors}:
            return f"not by {' or '.join(authors)}"
    venue = plan.get("venue")
    if venue and (rec.venue or "").lower() != venue.lower():
        return f"not published in {venue}"
    # Judged on the document's subject (title, path, headings, dominant terms), never on a passing
    # mention in its body: wrongly excluding a relevant document is worse than keeping a doubtful one.
    match = excluded_by(plan.get("exclusions", []), rec)
    return f"matches the exclusion {match.phrase!r} ({match.reason})" if match else ""


def combine(item_scores: Iterable[tuple[float, float]], p: float) -> float:
    """S = (weighted mean of c_i + p) / 6, in [0, 1]."""
    pairs = [(c, w) for c, w in item_scores if w > 0]
    mean_c = sum(c * w for c, w in pairs) / sum(w for _, w in pairs) if pairs else 0.0
    return round((mean_c + p) / 6.0, 6)


def relevance_model_query(
    core: str,
    texts: Sequence[str],
    doc_weights: Sequence[float],
    *,
    n_terms: int = 10,
    original_weight: float = 0.5,
    max_repeat: int = 10,
) -> str:
    """An RM3-style feedback query written as plain words (Pi-Serini/Anserini's RM3, offline).

    P(t|R) = sum_d w_d * tf(t, d) / |d| over the feedback documents; the query mixes the
    original words' distribution (weight `original_weight`) with the top `n_terms` of P(t|R).
    Weights become word repeats because Anserini's bag-of-words generator boosts a term by its
    count in the query — so the tool keeps taking plain text (never Lucene syntax), every user
    word stays in the query, and feedback only adds words.
    """
    q_words = [w.lower() for w in WORD.findall(core) if w.lower() not in STOPWORDS]
    if not q_words or not texts:
        return core
    p_q = Counter(q_words)
    total_w = sum(doc_weights) or 1.0
    p_r: dict[str, float] = {}
    for text, weight in zip(texts, doc_weights, strict=False):
        words = [w.lower() for w in WORD.findall(text) if len(w) > 2 and w.isalpha() and w.lower() not in STOPWORDS]
        if not words:
            continue
        for word, tf in Counter(words).items():
            p_r[word] = p_r.get(word, 0.0) + (weight / total_w) * tf / len(words)
    expansion = [w for w, _ in sorted(p_r.items(), key=lambda p: (-p[1], p[0]))[:n_terms]]
    mixed: dict[str, float] = {}
    for word, count in p_q.items():
        mixed[word] = original_weight * count / len(q_words)
    r_norm = sum(p_r[w] for w in expansion) or 1.0
    for word in expansion:
        mixed[word] = mixed.get(word, 0.0) + (1 - original_weight) * p_r[word] / r_norm
    top = max(mixed.values())
    parts = []
    for word in q_words:  # the user's words first, in their order, each at least once
        if word in mixed:
            parts.extend([word] * max(1, round(mixed.pop(word) / top * max_repeat)))
    for word in expansion:
        if word in mixed:
            parts.extend([word] * round(mixed.pop(word) / top * max_repeat))
    return " ".join(parts)
