"""The answer without a model: the evidence sentences that answer the question, cited, and an
exact value only when one can be read off the best sentence.

Nothing here writes prose. Every evidence sentence of the top documents (their verified quotes,
as `nodes.results.answer_docs` re-reads them from the store) is scored against the question:
the question's content words it contains, each weighted by its IDF in the collection when the
answer node could look the frequencies up (`question_weights`), plus a small prior for the
document's rank. The best few sentences across documents are quoted verbatim, each with its
`[docid]`, and the explanation says that it is extractive. The Exact Answer is filled only when
the question asks for a value (a number, a quantity, a quoted literal, a name) and the best
sentence states one right after the question's own words; otherwise it stays empty. No
confidence is claimed: nothing here is calibrated, so the confidence is None ("not estimated"),
never a made-up percentage (issue 20, item 4).
"""
from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from nodes.excerpts import query_terms
from nodes.quotable import quotable_spans
from nodes.scoring import sentences, stem, stems

# A sentence is selected only when it holds at least this share of the question's (weighted)
# content words, and at least this share of the best sentence's score: no filler after the answer.
MIN_OVERLAP = 0.3
RELATIVE_TO_BEST = 0.5
# The document's rank adds RANK_PRIOR / (rank + 1): a tie-breaker between equally worded sentences.
RANK_PRIOR = 0.1
# The Exact Answer: the value must follow the last question word the sentence contains within
# this many words, and the sentence must hold at least this share of the question's words.
EXACT_WINDOW_WORDS = 4
EXACT_MIN_COVERAGE = 0.6
# … and those question words must stand together: within this many words before the value's
# window ("k1=25 … at the default 0.9/0.4 … near k1=2" is not a statement of the default k1).
EXACT_SPAN_WORDS = 8
EXTRACTIVE_NOTE = ("(Extractive answer: the sentences above are quoted from the top documents as they stand, "
                   "selected by the words they share with the question; no model wrote or checked an answer.)")
NO_ANSWER = ("No sentence of the top documents shares the question's content words. (Extractive answer: "
             "no model was used.)")

_QUANTITY_ASKED = re.compile(r"\b(?:how (?:many|much|long|large|big|often|old|far|fast)|what (?:number|percentage|size)|"
                             r"value|default|number of|version|port|size|limit|count|timeout|year|when|"
                             r"constant|threshold|maximum|minimum|max|min)\b", re.IGNORECASE)
_NAME_ASKED = re.compile(r"^\s*(?:who|whom|which (?:person|author|company|tool|library|program|command))\b|"
                         r"\bwhat is the name\b|\bnamed?\b", re.IGNORECASE)
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:[.,]\d+)*(?:\s?(?:%|[kKMGT]?[bB]\b|ms\b|s\b|px\b|°\w?|[kKmM]\b))?")
_LITERAL = re.compile(r"`([^`\n]{1,60})`|\"([^\"\n]{1,60})\"|'([^'\n]{1,60})'|“([^”\n]{1,60})”")
_NAME = re.compile(r"[A-Z][\w'’.-]*(?:(?:\s+|,\s*|\s+and\s+)[A-Z][\w'’.-]*)*")
_TOKEN = re.compile(r"\w+", re.UNICODE)


def question_stems(question: str) -> list[str]:
    """The question's content words as prefix stems (the scorer's analyzer), in order."""
    return list(dict.fromkeys(stem(t) for t in query_terms(question)))


def question_weights(question: str, document_frequency: Any, documents: int) -> dict[str, float]:
    """IDF per question stem, log(1 + N / df), from `document_frequency(word) -> int` (the answer
    node counts the collection's hits for the word); a word no document holds gets the highest
    weight seen. Stems that share a prefix keep the larger weight."""
    out: dict[str, float] = {}
    for word in query_terms(question):
        df = max(0, int(document_frequency(word)))
        weight = math.log(1.0 + documents / df) if df else math.log(1.0 + max(documents, 1))
        key = stem(word)
        out[key] = max(out.get(key, 0.0), weight)
    return out


def overlap(sentence: str, wanted: Sequence[str], weights: Mapping[str, float] | None) -> float:
    """Weighted share (0–1) of the question's stems `wanted` found in `sentence`."""
    if not wanted:
        return 0.0
    have = stems(sentence)
    weight = (lambda s: (weights or {}).get(s, 1.0)) if weights else (lambda s: 1.0)
    total = sum(weight(s) for s in wanted)
    return sum(weight(s) for s in wanted if s in have) / total if total else 0.0


def candidate_sentences(docs: Sequence[Any]) -> list[tuple[int, str, str]]:
    """(document rank, docid, sentence) for each quotable sentence of each document's evidence
    passages, in order, without repeats."""
    out, seen = [], set()
    for rank, doc in enumerate(docs):
        for passage in doc.passages:
            text = passage.text
            for a, b in quotable_spans(text, sentences(text) or [(0, len(text))], doc.title):
                sentence = " ".join(text[a:b].split())
                if sentence and (doc.docid, sentence) not in seen:
                    seen.add((doc.docid, sentence))
                    out.append((rank, doc.docid, sentence))
    return out


def select_sentences(question: str, docs: Sequence[Any], weights: Mapping[str, float] | None = None,
                     limit: int = 4) -> list[tuple[float, str, str]]:
    """The best `limit` sentences answering `question`, as (score, docid, sentence), best first."""
    wanted = question_stems(question)
    scored = []
    for rank, docid, sentence in candidate_sentences(docs):
        share = overlap(sentence, wanted, weights)
        if share >= MIN_OVERLAP:
            scored.append((round(share + RANK_PRIOR / (rank + 1), 6), rank, docid, sentence))
    scored.sort(key=lambda s: (-s[0], s[1]))
    if not scored:
        return []
    floor = RELATIVE_TO_BEST * scored[0][0]
    return [(score, docid, sentence) for score, _, docid, sentence in scored if score >= floor][:limit]


def exact_value(question: str, sentence: str) -> str:
    """The value the question asks for, read off `sentence`, or ''. Only when the question asks
    for a quantity/value or a name, the sentence holds most of the question's words, and the
    value follows the last of those words within EXACT_WINDOW_WORDS words ("the default weight
    value is 50" → "50"); anything less certain stays empty."""
    wanted = question_stems(question)
    tokens = list(_TOKEN.finditer(sentence))
    hits = [i for i, t in enumerate(tokens) if stem(t.group()) in wanted]
    if not wanted or not hits:
        return ""
    last = hits[-1]
    near = {stem(tokens[i].group()) for i in hits if i > last - EXACT_SPAN_WORDS}
    if len(near) < EXACT_MIN_COVERAGE * len(wanted):
        return ""
    window_end = tokens[min(len(tokens) - 1, last + EXACT_WINDOW_WORDS)].end()
    tail = sentence[tokens[last].end():window_end]
    if _QUANTITY_ASKED.search(question):
        literal = _LITERAL.search(tail)
        if literal:
            return next(g for g in literal.groups() if g)
        number = _NUMBER.search(tail)
        if number:
            return number.group().strip()
    if _NAME_ASKED.search(question):
        asked = {t.lower() for t in _TOKEN.findall(question)}
        for match in _NAME.finditer(sentence[tokens[last].end():]):
            name = match.group().rstrip(".,")
            if name and not {t.lower() for t in _TOKEN.findall(name)} & asked:
                return name
    return ""


def extractive_answer(question: str, docs: Sequence[Any], weights: Mapping[str, float] | None = None,
                      limit: int = 4) -> tuple[str, str, bool]:
    """(explanation, exact answer, insufficient evidence): the selected sentences, each cited as
    `[docid]`, followed by the note that the answer is extractive."""
    chosen = select_sentences(question, docs, weights, limit)
    if not chosen:
        return NO_ANSWER, "", True
    parts = [f"{sentence.rstrip('.!?').rstrip()} [{docid}]." for _, docid, sentence in chosen]
    return " ".join(parts + [EXTRACTIVE_NOTE]), exact_value(question, chosen[0][2]), False
