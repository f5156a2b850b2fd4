"""Check every citation of an answer before anyone sees it.

A citation `[docid]` stands only if (1) the job surfaced and opened that document — it read the
text — and (2) the sentence it is attached to is backed by text in that document: a passage that
covers at least half of the sentence's content words (prefix stems), or, with a dense index, one
whose embedding is close to the sentence's. A failing citation is removed from the sentence and
counted; it never appears as a source. The sentence of the supporting passage that backs the claim becomes the
reference shown beside each valid citation, with its line range.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from nodes.evidence.sentences import quote, sentence_quote, stem, stems
from nodes.tools.excerpts import query_terms
from stores.records import Chunk

_CITATION = re.compile(r"\[([^\[\]\n]{1,300})\]")
# A citation right before punctuation, with the spaces around it: removed whole, so "claim [d]." reads
# "claim." while the sentence's own text ("using :command:`x`") is left exactly as written.
_CITATION_BEFORE_MARK = re.compile(r"(?:\s*\[[^\[\]\n]{1,300}\])+\s*(?=[.,;:!?])")
# A sentence ends at . ! ? before a capital, digit, quote or bracket — not before a citation,
# which belongs to the sentence it follows ("… toxicity. [gnn01] Atoms …").
# A citation closed by a full stop ("… [a]. next") always ends its sentence.
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])|(?<=\][.!?])\s+")
# An answer with no capital letter at all (a model answering in a lower-cased corpus's style)
# marks no sentence start by case: any word after . ! ? starts one.
_SENTENCE_CASELESS = re.compile(r"(?<=[.!?])\s+(?=[\w\"'(])|(?<=\][.!?])\s+")
MIN_COVERAGE = 0.5
MIN_COSINE = 0.5
# A cited sentence "shares the question's content words" when it holds at least this share of them.
QUESTION_SHARE = 0.5

# (claim, docid) -> best cosine between the claim and the document's passages, or None.
Similarity = Callable[[str, str], float | None]


@dataclass
class CheckedAnswer:
    text: str  # the explanation with failing citations removed
    cited: list[str] = field(default_factory=list)
    references: list[dict] = field(default_factory=list)
    checked: int = 0
    removed: list[dict] = field(default_factory=list)
    # Sentences that carried a citation; of them, those left with a supported citation; and of
    # those, the ones sharing the question's content words (None when no question was given).
    # A hallucination rate of 0 says every citation is backed by its document, not that the
    # sentences answer the question: these counts say how many do.
    sentences: int = 0
    supported: int = 0
    on_question: int | None = None

    @property
    def hallucination_rate(self) -> float:
        return round(len(self.removed) / self.checked, 4) if self.checked else 0.0

    def stats(self) -> dict:
        out = {
            "checked": self.checked,
            "valid": self.checked - len(self.removed),
            "removed": self.removed,
            "hallucination_rate": self.hallucination_rate,
            "sentences": self.sentences,
            "supported_sentences": self.supported,
        }
        return out | ({"on_question_sentences": self.on_question} if self.on_question is not None else {})


def sentences(text: str) -> list[str]:
    cased = any(c.isupper() for c in _CITATION.sub("", text))  # a docid's capitals say nothing of the prose
    pattern = _SENTENCE if cased else _SENTENCE_CASELESS
    return [s for s in pattern.split(" ".join(text.split())) if s]


def _without_citations(sentence: str) -> str:
    """The sentence without its `[docid]` citations, whitespace collapsed."""
    return " ".join(_CITATION.sub(" ", _CITATION_BEFORE_MARK.sub("", sentence)).split())


def _own_citations_removed(sentence: str, allowed: set[str]) -> str:
    """`_without_citations` for quoted text: only brackets citing allowed ids are citations; the
    others ("levels [1-19]", a Markdown link's text) are the document's own words and stay."""

    def cites(m: re.Match[str]) -> bool:
        return all(d in allowed for d in _ids(m.group(1))) and bool(_ids(m.group(1)))

    text = _CITATION_BEFORE_MARK.sub(
        lambda m: "" if all(cites(c) for c in _CITATION.finditer(m.group())) else m.group(), sentence
    )
    return " ".join(_CITATION.sub(lambda m: " " if cites(m) else m.group(), text).split())


def _ids(inner: str) -> list[str]:
    return [p.strip() for p in re.split(r"[,;]|\]\s*\[", inner) if p.strip()]


def cited_ids(text: str) -> list[str]:
    """Every docid cited anywhere in `text`, in order of first appearance."""
    return list(dict.fromkeys(d for m in _CITATION.finditer(text) for d in _ids(m.group(1))))


def _support(wanted: set[str], chunks: Sequence[Chunk]) -> tuple[float, Chunk | None]:
    """The passage covering most of a claim's content words (`wanted`), and that share (0–1)."""
    if not wanted:
        return 0.0, None
    best, best_cov = None, 0.0
    for chunk in chunks:
        cov = len(wanted & stems(chunk.text)) / len(wanted)
        if cov > best_cov:
            best, best_cov = chunk, cov
    return best_cov, best


def _on_question(asked: set[str], claim: str, cited: Sequence[str], titles: Mapping[str, str] | None) -> bool:
    """Whether a cited sentence shares the question's content words: QUESTION_SHARE of them in
    the sentence and its documents' titles (printed with every reference, as the extractive
    answer counts them when it picks sentences), half of that in the sentence itself. "The default
    priority value is 50 …" in "Shared MIME-info Database" answers "the default priority of a magic
    rule in the shared MIME-info database" though it holds only two of its eight words."""
    own = len(asked & stems(claim))
    named = stems(" ".join((titles or {}).get(d, "") for d in cited))
    return own >= QUESTION_SHARE / 2 * len(asked) and len(asked & (stems(claim) | named)) >= QUESTION_SHARE * len(asked)


def check_citations(
    explanation: str,
    *,
    allowed: set[str],
    chunks: Mapping[str, Sequence[Chunk]],
    titles: Mapping[str, str] | None = None,
    similarity: Similarity | None = None,
    question: str = "",
    quoted_text: bool = False,
) -> CheckedAnswer:
    """Validate each `[docid]` against the documents the job opened (`allowed`, with their
    quotable `chunks`); return the cleaned text, the valid citations and what was removed. With
    the `question`, also count the supported sentences that share its content words.

    `quoted_text`: the explanation quotes documents word for word (the extractive answer, whose
    own citations are always of documents it read), so a bracket that cites no allowed id is the
    document's text ("compression levels [1-19]"), kept as written and not counted as a citation."""
    out = CheckedAnswer(text="")
    asked = {stem(t) for t in query_terms(question)}
    if question:
        out.on_question = 0
    kept_sentences = []
    seen_refs: set[str] = set()
    for sentence in sentences(explanation):
        claim = _own_citations_removed(sentence, allowed) if quoted_text else _without_citations(sentence)
        wanted = {stem(t) for t in query_terms(claim)}  # the claim's content words, as prefix stems
        valid: list[str] = []
        marks = [
            m
            for m in _CITATION.finditer(sentence)
            if not quoted_text or (_ids(m.group(1)) and all(d in allowed for d in _ids(m.group(1))))
        ]
        for m in marks:
            for docid in _ids(m.group(1)):
                out.checked += 1
                supported, chunk = _check_one(out, docid, claim, wanted, allowed, chunks, similarity)
                if not supported:
                    continue
                if docid not in valid:
                    valid.append(docid)
                if docid not in seen_refs and (chunk is not None or chunks.get(docid)):
                    seen_refs.add(docid)
                    out.references.append(_reference(docid, chunk or chunks[docid][0], wanted, titles))
        if marks:
            out.sentences += 1
            if valid:
                out.supported += 1
                if asked and out.on_question is not None and _on_question(asked, claim, valid, titles):
                    out.on_question += 1
        cleaned = claim
        if valid:
            tail = "".join(f" [{d}]" for d in valid)
            cleaned = (cleaned[:-1] + tail + cleaned[-1]) if cleaned[-1:] in ".!?" else cleaned + tail
        kept_sentences.append(cleaned)
        out.cited += [d for d in valid if d not in out.cited]
    out.text = " ".join(s for s in kept_sentences if s)
    return out


def _check_one(
    out: CheckedAnswer,
    docid: str,
    claim: str,
    wanted: set[str],
    allowed: set[str],
    chunks: Mapping[str, Sequence[Chunk]],
    similarity: Similarity | None,
) -> tuple[bool, Chunk | None]:
    """Whether one cited document backs the claim, and the passage that does; a citation that
    fails is recorded in `out.removed` with why."""
    if docid not in allowed:
        out.removed.append({"docid": docid[:200], "sentence": claim[:300], "reason": "not a document this job opened"})
        return False, None
    coverage, chunk = _support(wanted, chunks.get(docid, ()))
    cosine = similarity(claim, docid) if similarity is not None and coverage < MIN_COVERAGE else None
    if coverage < MIN_COVERAGE and (cosine is None or cosine < MIN_COSINE):
        out.removed.append(
            {
                "docid": docid,
                "sentence": claim[:300],
                "reason": f"the document does not support this sentence (word coverage {coverage:.2f}"
                + (f", cosine {cosine:.2f})" if cosine is not None else ")"),
            }
        )
        return False, None
    return True, chunk


def _reference(docid: str, ref: Chunk, wanted: set[str], titles: Mapping[str, str] | None) -> dict:
    """The reference a supported citation adds: the passage's sentence that backs the claim, not
    the passage from its first character (a passage boundary falls anywhere in a sentence)."""
    said, first, last = sentence_quote(ref, wanted)
    return {"docid": docid, "title": (titles or {}).get(docid, ""), "lines": [first, last], "quote": quote(said)}
