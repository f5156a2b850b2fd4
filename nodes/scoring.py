"""Evidence location and per-requirement scoring (heuristic policy, no LLM).

For every checklist item the evidence is the quotable sentence (not a heading, code or page
boilerplate: `nodes.quotable`) covering most of the item's (prefix-stemmed) content words, in the
chunk that covers most of them on ties; the item score c_i in [0, 5] is that sentence's coverage
scaled, and whatever else scores an item (relative BM25, cosine) is capped by it (`quote_cap`):
a 5/5 needs the requirement's words in the quoted sentence itself (or the title printed above
it), not only somewhere in the passage around it.
The combined score follows PaSaMaster: S = (mean_i c_i + p) / 6, where p is the candidate's
relevance probability from retrieval. Hard constraints (years, exclusions) are checked against
store metadata and text, not guessed.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache

from nodes.excerpts import STOPWORDS, query_terms
from nodes.quotable import definition_line, entry_starts, fence_lines, lead_trim, quotable_spans
from nodes.state import ChecklistItem, Evidence, Plan
from stores.records import Chunk, DocRecord, last_name

_WORD = re.compile(r"\w+", re.UNICODE)
EVIDENCE_CHARS = 300
QUOTE_MIN_CHARS = 80      # a shorter best sentence is quoted with the sentences after it …
QUOTE_MAX_CHARS = 600     # … up to this; a single sentence longer than SENTENCE_CAP is cut at a word
SENTENCE_CAP = 1000
# A sentence: from a non-space to a terminator (optionally closed by quotes or brackets) that is
# followed by whitespace, or to a blank line, or to a line that starts a bulleted list item ("- ",
# "* ", "• ": each item is its own statement, a list is not one run-on sentence), or to the end.
_SENTENCE = re.compile(r"\S.*?(?:[.!?][\"')\]]*(?=\s+[A-Z0-9\"'(\[])|(?=\n[ \t]*\n)|(?=\n[ \t]*[-*+•][ \t]+\S)|\Z)",
                       re.S)
# Endings that are abbreviations, not sentence ends ("e.g.", "Fig.", "et al.", an initial "J.").
_ABBREVIATION = re.compile(r"(?:\b(?:e\.g|i\.e|et al|etc|vs|cf|Fig|Figs|Eq|Eqs|Sec|No|Dr|Mr|Mrs|Ms|Prof|Inc|Ltd|approx)|"
                           r"\b[A-Z])\.$")
# A text with no capital letter at all (a lower-cased corpus, as Cranfield's) marks no sentence
# start by case: there any word may start a sentence, and abbreviations are known in any case.
_SENTENCE_CASELESS = re.compile(r"\S.*?(?:[.!?][\"')\]]*(?=\s+[\w\"'(\[])|(?=\n[ \t]*\n)|(?=\n[ \t]*[-*+•][ \t]+\S)|\Z)",
                                re.S)
_ABBREVIATION_CASELESS = re.compile(r"\b(?:e\.g|i\.e|et al|etc|vs|cf|fig|figs|eq|eqs|sec|no|dr|mr|mrs|ms|prof|inc|ltd|"
                                    r"approx)\.$")
_PARAGRAPH = re.compile(r"\n[ \t]*\n")
# Rendered man pages hyphenate a word at a line end with U+2010 ("connec‐\n tions"): shown with
# whitespace collapsed that reads "connec‐ tions". A U+2010 after a letter, then whitespace (a
# line break, or the space a passage already collapsed it to) and a lower-case letter is such a
# break; the word is joined for reading. Not before "and"/"or"/"to": a suspended hyphen
# ("pre‐ and post‐processing") is written that way on purpose. ASCII "-" is never joined.
_MAN_HYPHEN_BREAK = re.compile(r"(?<=[^\W\d_])\u2010\s+(?!(?:and|or|to)\b)(?=[a-z])")


def display_text(text: str) -> str:
    """Text as a reader sees a quote: man-page hyphenation breaks joined ("connec‐\n tions" →
    "connections"), whitespace collapsed. Only for showing: the exact quote (`quote` in results,
    `read_span`) keeps the document's characters."""
    return " ".join(_MAN_HYPHEN_BREAK.sub("", text).split())


def quote(text: str) -> str:
    """Evidence text as results show it: hyphenation breaks joined, whitespace collapsed, cut at
    EVIDENCE_CHARS."""
    return display_text(text)[:EVIDENCE_CHARS]


def sentences(text: str, cased: bool | None = None) -> list[tuple[int, int]]:
    """`[start, end)` of each sentence of `text` (whitespace between them excluded). A regular
    expression with an abbreviation list, not a trained splitter (NLTK's punkt needs a model
    download): evidence needs whole sentences, not linguistics. `cased`: whether the document
    this text comes from has capital letters (default: whether `text` has)."""
    cased = any(c.isupper() for c in text) if cased is None else cased
    pattern, abbreviation = (_SENTENCE, _ABBREVIATION) if cased else (_SENTENCE_CASELESS, _ABBREVIATION_CASELESS)
    out: list[tuple[int, int]] = []
    for m in pattern.finditer(text):
        end = m.start() + len(m.group().rstrip())
        if out and abbreviation.search(text[out[-1][0]:out[-1][1]]) and not _PARAGRAPH.search(text, out[-1][1], m.start()):
            out[-1] = (out[-1][0], end)
        else:
            out.append((m.start(), end))
    return _cut_entries(text, out)


def _cut_entries(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Each span cut before the lines that start a statement of their own without a sentence end
    before them (`nodes.quotable.entry_starts`: rst fields, table rows, a run of option
    definitions), so that a quote is one definition, not a field list or a `--help` dump."""
    starts = entry_starts(text)
    if not starts:
        return spans
    out: list[tuple[int, int]] = []
    for a, b in spans:
        cuts = [c for c in starts if a < c < b]
        for lo, hi in zip([a, *cuts], [*cuts, b], strict=True):
            while lo < hi and text[lo].isspace():
                lo += 1
            hi = lo + len(text[lo:hi].rstrip())
            if lo < hi:
                out.append((lo, hi))
    return out


def whole_sentences(text: str, start: int, end: int, floor: int = 0, ceiling: int | None = None) -> tuple[int, int]:
    """`[start, end)` widened to the sentences of `text` it touches — a passage (chunk) boundary
    can fall inside a sentence, and a quote must not. Looks within the paragraph, at most
    3 × SENTENCE_CAP characters either side, and never before `floor` or after `ceiling` (the
    document's body: its title, metadata and keywords lines are not sentences of it). A quote
    that began inside its first sentence saw only that sentence's tail, may have found it short
    and taken the next one too (`sentence_quote`): when the whole first sentence reaches
    QUOTE_MIN_CHARS, the quote is that sentence alone."""
    ceiling = len(text) if ceiling is None else ceiling
    if not floor <= start <= end <= ceiling:
        return start, end
    lo = max(floor, start - 3 * SENTENCE_CAP)
    hi = min(ceiling, end + 3 * SENTENCE_CAP)
    para = [m.end() for m in _PARAGRAPH.finditer(text, lo, start)]
    lo = para[-1] if para else lo
    nxt = _PARAGRAPH.search(text, end, hi)
    hi = nxt.start() if nxt else hi
    window = text[lo:hi]
    cased = any(c.isupper() for c in text[floor:ceiling])
    touching = [(lo + a, lo + b) for a, b in sentences(window, cased) if lo + a < end and lo + b > start]
    if not touching:
        return start, end
    trimmed = touching[0][0] + lead_trim(text[touching[0][0]:touching[0][1]])
    if trimmed <= start:  # a heading glued to the quote's sentence stays out of it
        touching[0] = (trimmed, touching[0][1])
    new_start, new_end = min(start, touching[0][0]), max(end, touching[-1][1])
    first = touching[0]
    if first[0] < start and len(touching) > 1 and first[1] - first[0] >= QUOTE_MIN_CHARS:
        new_end = first[1]  # the sentence after it was padding for a tail that looked short
    if new_end - new_start > SENTENCE_CAP + (end - start):  # a run-on: keep what the passage gave
        return start, end
    return new_start, new_end


@lru_cache(maxsize=4096)
def _sentence_spans(text: str, title: str, fenced: bool) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """A passage's sentences and those that may be quoted, once per passage: every checklist item
    of a candidate looks at the same chunks."""
    spans = sentences(text) or [(0, len(text))]
    return spans, quotable_spans(text, spans, title, fenced)


def fenced_starts(chunks: Sequence[Chunk]) -> dict[int, bool]:
    """Per chunk number, whether the chunk starts inside a Markdown fenced code block (its
    document's earlier chunks hold an odd number of fence lines): a passage cut from the middle
    of an example must not read its closing fence as an opening one."""
    out, open_ = {}, False
    for chunk in sorted(chunks, key=lambda c: c.line_start):
        out[chunk.chunk_no] = open_
        open_ ^= fence_lines(chunk.text) % 2 == 1
    return out


def quote_span(text: str, wanted: set[str], title: str = "", fenced: bool = False) -> tuple[int, int] | None:
    """`[start, end)` of the quote a passage gives for a requirement: its quotable sentence
    covering most of `wanted` (stems; the first on ties), with the following quotable sentences
    while it is shorter than QUOTE_MIN_CHARS. None when no sentence of the passage may be quoted
    (only headings, code or boilerplate). Only a sentence longer than SENTENCE_CAP (a table, a
    run-on) is cut, at a word. A definition (an option, an rst field, a table row) is short and
    complete: it is neither padded with the next statement nor padding for the one before
    (":Number of Instances: 150 …" was quoted with ":Number of Attributes: 4 …")."""
    spans, ok = _sentence_spans(text, title, fenced)
    if not ok:
        return None
    scores = [len(wanted & stems(text[a:b])) for a, b in ok]
    first = max(range(len(ok)), key=lambda i: (scores[i], -i))
    start, end = ok[first]
    allowed = set(ok)
    for a, b in spans[spans.index(next(s for s in spans if s[1] == end)) + 1:]:
        if end - start >= QUOTE_MIN_CHARS or b - start > QUOTE_MAX_CHARS or _PARAGRAPH.search(text, end, a) \
                or (a, b) not in allowed or _definition_at(text, start) or _definition_at(text, a):
            break
        end = b
    if end - start > SENTENCE_CAP:
        cut = text.rfind(" ", start, start + SENTENCE_CAP)
        end = cut if cut > start else start + SENTENCE_CAP
    return start, end


def _definition_at(text: str, start: int) -> bool:
    """Whether the line of `text` from `start` is a definition (`nodes.quotable.definition_line`)."""
    end = text.find("\n", start)
    return definition_line(text[start:end if end >= 0 else len(text)])


def header_title(chunk: Chunk, title: str) -> str:
    """The title a chunk may quote as its header: only the chunk of line 1 (which the quotable
    view keeps only for a record that is only a title); a body line that repeats the title (a
    manual page's own rst heading) is a heading like any other."""
    return title if chunk.line_start == 1 else ""


def sentence_quote(chunk: Chunk, wanted: set[str], title: str = "") -> tuple[str, int, int]:
    """The quote a passage gives for a requirement (`quote_span`) as the passage's exact text and
    the lines it spans. A passage with no quotable sentence gives its best sentence all the same
    (callers that must refuse such a passage use `quote_span`)."""
    text = chunk.text
    span = quote_span(text, wanted, header_title(chunk, title))
    if span is None:
        spans = sentences(text) or [(0, len(text))]
        start, end = max(spans, key=lambda sp: (len(wanted & stems(text[sp[0]:sp[1]])), -sp[0]))
        if end - start > SENTENCE_CAP:
            cut = text.rfind(" ", start, start + SENTENCE_CAP)
            end = cut if cut > start else start + SENTENCE_CAP
    else:
        start, end = span
    line_start = chunk.line_start + text.count("\n", 0, start)
    return text[start:end], line_start, line_start + text.count("\n", start, end)


def stem(word: str) -> str:
    """Crude stem: a plural "s" dropped, then the first five letters, so that plural and verb forms
    of a word meet (retrieval/retrieve, passage/passages, encoder/encoding). Without the plural
    rule short words never met their plurals ("stop"/"stops", "tab"/"tabs", "rule"/"rules":
    less(1)'s "Sets tab stops." covered one word of "default tab stop"). A Porter stemmer would
    need the JVM or a new dependency for a signal that only locates evidence."""
    word = word.lower()
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    return word[:5]


def stems(text: str) -> set[str]:
    return {stem(w) for w in _WORD.findall(text) if w.lower() not in STOPWORDS}


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
    title, 0.585 (see the issue 20 report)."""
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
            match = max(match, coverage(wanted, chunk.text[whole[0]:whole[1]]))
        quoted = chunk.text[span[0]:span[1]]
        key = (coverage(seek, quoted), coverage(wanted, quoted), coverage(wanted, chunk.text))
        match = max(match, key[1])
        if best is None or key > best[0]:
            best = (key, chunk, span)
    if best is None:
        return Evidence(item_id=item["id"], score=0.0, chunk=" ".join(title.split()), line_start=1, line_end=1)
    _, chunk, (a, b) = best
    first = chunk.line_start + chunk.text.count("\n", 0, a)
    return Evidence(item_id=item["id"], score=round(5.0 * match, 3), chunk=chunk.text[a:b], line_start=first,
                    line_end=first + chunk.text.count("\n", a, b))


# MiniLM cosine between a requirement and a passage: ~0.2 is unrelated text, ~0.7 a paraphrase.
COSINE_FLOOR, COSINE_CEIL = 0.2, 0.7


def cosine_to_score(cosine: float) -> float:
    """Map a MiniLM cosine similarity onto the 0–5 item scale (linear between floor and ceiling)."""
    return round(5.0 * min(1.0, max(0.0, (cosine - COSINE_FLOOR) / (COSINE_CEIL - COSINE_FLOOR))), 3)


def locate_evidence_dense(item: ChecklistItem, item_vec, chunk_vecs, chunks: Sequence[Chunk], top_m: int = 1,
                          title: str = "") -> list[Evidence]:
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
        where = (quote_span(chunk.text, wanted, header_title(chunk, title), fenced.get(chunk.chunk_no, False))
                 if chunk else None)
        if chunk is not None and where is None:
            continue
        if chunk is not None and where is not None:
            a, b = where
            start = chunk.line_start + chunk.text.count("\n", 0, a)
            text, end = chunk.text[a:b], start + chunk.text.count("\n", a, b)
        else:
            text, start, end = "", span.line_start, span.line_end
        out.append(Evidence(item_id=item["id"], score=cosine_to_score(float(sims[idx])), chunk=text,
                            line_start=start, line_end=end))
    return out


def violated_constraint(plan: Plan, rec: DocRecord) -> str:
    """A reason the document fails a hard constraint, or ''."""
    y_min, y_max = plan.get("year_min"), plan.get("year_max")
    if (y_min is not None or y_max is not None):
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
    # Title and keywords only: body text mentions excluded words in passing ("experiments on
    # benchmarks"), and wrongly excluding a relevant document is worse than keeping a doubtful one.
    head = stems(" ".join([rec.title, " ".join(rec.keywords)]))
    for phrase in plan.get("exclusions", []):
        words = {stem(t) for t in query_terms(phrase)}
        if words and words <= head:
            return f"matches the exclusion {phrase!r}"
    return ""


def combine(item_scores: Iterable[tuple[float, float]], p: float) -> float:
    """S = (weighted mean of c_i + p) / 6, in [0, 1]."""
    pairs = [(c, w) for c, w in item_scores if w > 0]
    mean_c = sum(c * w for c, w in pairs) / sum(w for _, w in pairs) if pairs else 0.0
    return round((mean_c + p) / 6.0, 6)


def relevance_model_query(core: str, texts: Sequence[str], doc_weights: Sequence[float], *, n_terms: int = 10,
                          original_weight: float = 0.5, max_repeat: int = 10) -> str:
    """An RM3-style feedback query written as plain words (Pi-Serini/Anserini's RM3, offline).

    P(t|R) = sum_d w_d * tf(t, d) / |d| over the feedback documents; the query mixes the
    original words' distribution (weight `original_weight`) with the top `n_terms` of P(t|R).
    Weights become word repeats because Anserini's bag-of-words generator boosts a term by its
    count in the query — so the tool keeps taking plain text (never Lucene syntax), every user
    word stays in the query, and feedback only adds words.
    """
    q_words = [w.lower() for w in _WORD.findall(core) if w.lower() not in STOPWORDS]
    if not q_words or not texts:
        return core
    p_q = Counter(q_words)
    total_w = sum(doc_weights) or 1.0
    p_r: dict[str, float] = {}
    for text, weight in zip(texts, doc_weights, strict=False):
        words = [w.lower() for w in _WORD.findall(text) if len(w) > 2 and w.isalpha() and w.lower() not in STOPWORDS]
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
