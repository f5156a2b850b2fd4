"""The answer without a model: the evidence sentences that answer the question, cited, an Exact
Answer only when one can be read off the best sentence, and its calibrated confidence.

Nothing here writes prose. Every quotable sentence of the top documents' passages is scored by the
question's content words it holds (identifiers matched whole, other words by stem; IDF-weighted
when the answer node counted them), its heading (`Passage.context`) and document title counting,
plus a small prior for the document's rank. A sentence is never the answer when it is off the
question's subject (`answer_subject`): another product's document or a sentence naming another
product, or a sentence standing under another identifier's heading. The Exact Answer depends on
what the question asks (`answer_kinds`): a value, name, option or date read off a sentence
(`answer_values`), "yes"/"no" from a sentence that decides it, or for "which … : A or B" the side
the two sides' values support, both sides' sentences cited. The answering sentence comes first.
The confidence (`answer_confidence`) is the fitted probability that the Exact Answer is right;
None when there is none.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodes.evidence.answer_confidence import confidence_percent
from nodes.evidence.answer_kinds import comparison_sides, direction, question_kind
from nodes.evidence.answer_subject import (
    asked_identifiers,
    identifier_clash,
    identifiers,
    keys,
    off_subject,
    product_of,
    subject_products,
    term_key,
    without_products,
)
from nodes.evidence.answer_values import (
    QUANTITY_ASKED,
    VERSION_ASKED,
    code_name,
    exact_value,
    numeric,
    question_stems,
    shaped_value,
    value_and_cover,
    version_value,
    yes_no,
)
from nodes.evidence.quotable import quotable_spans
from nodes.evidence.sentences import WORD, display_text, sentences
from nodes.job.config import JobConfig
from nodes.tools.excerpts import query_terms

__all__ = ["exact_value", "extractive_answer", "extractive_draft", "question_weights", "select_sentences"]

MIN_OVERLAP = 0.3
RELATIVE_TO_BEST = 0.5
OWN_OVERLAP = MIN_OVERLAP / 2
RANK_PRIOR = 0.1
# How many of the best sentences the Exact Answer may be read off (those quoted come first).
READ_POOL = 8
# A comparison side's sentence must hold this share of the side's own words.
SIDE_COVERAGE = 0.5
EXTRACTIVE_NOTE = (
    "(Extractive answer: the sentences above are quoted from the top documents as they stand, "
    "selected by the words they share with the question; no model wrote or checked an answer.)"
)
NO_ANSWER = (
    "No sentence of the top documents shares the question's content words. (Extractive answer: no model was used.)"
)
NO_SUBJECT = (
    "No sentence of the top documents about {subject} shares the question's content words. "
    "(Extractive answer: no model was used.)"
)


@dataclass(frozen=True)
class Scored:
    score: float
    rank: int
    docid: str
    sentence: str
    context: str  # the document's title and the heading the sentence stands under


@dataclass
class ExtractiveAnswer:
    explanation: str
    exact: str = ""
    insufficient: bool = False
    features: dict[str, float] | None = None
    chosen: list[Scored] = field(default_factory=list)

    @property
    def confidence(self) -> int | None:
        return confidence_percent(self.exact, self.features)


def question_weights(question: str, document_frequency: Any, documents: int) -> dict[str, float]:
    """IDF per question key (`term_key`), log(1 + N / df), from `document_frequency(word) -> int`;
    a word no document holds gets the highest weight. Keys shared by several words keep the larger."""
    content = set(query_terms(question))
    out: dict[str, float] = {}
    for word in dict.fromkeys(w for w in WORD.findall(question) if w.lower() in content):
        df = max(0, int(document_frequency(word.lower())))
        weight = math.log(1.0 + documents / df) if df else math.log(1.0 + max(documents, 1))
        key = term_key(word)
        out[key] = max(out.get(key, 0.0), weight)
    return out


def overlap(text: str, wanted: Sequence[str], weights: Mapping[str, float] | None) -> float:
    """Weighted share (0–1) of the question's keys `wanted` found in `text`."""
    if not wanted:
        return 0.0
    have = keys(text)
    total = sum((weights or {}).get(s, 1.0) for s in wanted)
    return sum((weights or {}).get(s, 1.0) for s in wanted if s in have) / total if total else 0.0


def candidate_sentences(docs: Sequence[Any]) -> list[tuple[int, str, str, str, str]]:
    """(document rank, docid, sentence, title and heading, heading) for each quotable sentence of
    each document's passages, in order, without repeats; the heading is `Passage.context`."""
    out, seen = [], set()
    for rank, doc in enumerate(docs):
        for passage in doc.passages:
            text, heading = passage.text, getattr(passage, "context", "")
            context = f"{doc.title} {heading}".strip()
            for a, b in quotable_spans(text, sentences(text) or [(0, len(text))], doc.title):
                sentence = display_text(text[a:b])
                if sentence and (doc.docid, sentence) not in seen:
                    seen.add((doc.docid, sentence))
                    out.append((rank, doc.docid, sentence, context, heading))
    return out


def scored_sentences(question: str, docs: Sequence[Any], weights: Mapping[str, float] | None = None) -> list[Scored]:
    """Every on-subject sentence that shares enough of the question's words, best first."""
    products, named = subject_products(question, [d.docid for d in docs])
    # A product the question names is held by the subject rule (only its documents answer), not
    # by the sentence: "The default is five minutes" never says "PostgreSQL".
    wanted = [k for k in question_stems(question) if not (named and k in keys(" ".join(named)))] or question_stems(
        question
    )
    ids = asked_identifiers(question, [d.docid for d in docs])
    out = []
    for rank, docid, sentence, context, heading in candidate_sentences(docs):
        if off_subject(sentence, docid, products, named) or identifier_clash(ids, sentence, heading):
            continue
        # The sentence must hold enough of the words its heading does not: under the entry
        # "checkpoint_timeout (integer)", "The default is five minutes" answers "the default checkpoint_timeout".
        # (A heading naming one of the question's identifiers frees the sentence of all of them: in a
        # comparison each side's entry names only its own.)
        headed = set(ids) if keys(heading) & set(ids) else set()
        own = [k for k in wanted if k not in headed] or wanted
        if overlap(sentence, own, weights) < OWN_OVERLAP:
            continue
        share = overlap(f"{sentence}\n{context}", wanted, weights)
        if share >= MIN_OVERLAP:
            out.append(Scored(round(share + RANK_PRIOR / (rank + 1), 6), rank, docid, sentence, context))
    out.sort(key=lambda s: (-s.score, s.rank))
    # A passage cut at the answer step's length ends inside a sentence the document's own line
    # holds whole: the cut one goes.
    return [
        s
        for s in out
        if not any(
            t.docid == s.docid and len(t.sentence) > len(s.sentence) and t.sentence.startswith(s.sentence) for t in out
        )
    ]


def top(scored: list[Scored], limit: int) -> list[Scored]:
    """The best `limit`, none below RELATIVE_TO_BEST of the best."""
    return [s for s in scored if s.score >= RELATIVE_TO_BEST * scored[0].score][:limit] if scored else []


def select_sentences(
    question: str,
    docs: Sequence[Any],
    weights: Mapping[str, float] | None = None,
    limit: int = JobConfig.answer_sentences,
) -> list[tuple[float, str, str]]:
    """The best `limit` sentences answering `question`, as (score, docid, sentence), best first."""
    return [(s.score, s.docid, s.sentence) for s in top(scored_sentences(question, docs, weights), limit)]


def reader(kind: str) -> Callable[[str, Scored], tuple[str, float, bool]]:
    """How the Exact Answer is read off one sentence for a question of `kind`: (value, cover, shaped)."""

    def read(question: str, s: Scored) -> tuple[str, float, bool]:
        if kind == "yes-no":
            return (*yes_no(question, s.sentence, s.context), False)
        if kind == "other":
            return "", 0.0, False
        if kind == "date":
            version = version_value(question, s.sentence, s.context)
            if version[0]:
                return version[0], version[1], True
        shaped = shaped_value(question, s.sentence, s.context)
        if shaped[0]:
            return shaped[0], shaped[1], True
        value = value_and_cover(question, s.sentence, s.context)
        if not value[0] and kind in ("name", "option"):
            value = code_name(question, s.sentence, s.context)
        return value[0], value[1], False

    return read


def features_of(
    question: str, best: Scored, cover: float, shaped: bool, agree: bool, kind: str, docids: Sequence[str]
) -> dict[str, float]:
    """The confidence model's features (`answer_confidence.FEATURES`) for the sentence read."""
    _, named = subject_products(question, docids)
    ids = set(asked_identifiers(question, docids))
    return {
        "coverage": round(cover, 4),
        "shaped": float(shaped),
        "product_named": float(bool(named) and product_of(best.docid) in named),
        "identifier_matched": float(bool(ids & set(identifiers(f"{best.sentence} {best.context}")))),
        "agreement": float(agree),
        "rank_prior": round(1.0 / (best.rank + 1), 4),
        "kind_yes_no": float(kind == "yes-no"),
        "kind_comparison": float(kind == "comparison"),
        "kind_name_option": float(kind in ("name", "option")),
    }


def _norm(value: str) -> str:
    return " ".join(w.lower() for w in WORD.findall(value))


def read_exact(
    question: str, chosen: list[Scored], kind: str, docids: Sequence[str], more: Sequence[Scored] = ()
) -> ExtractiveAnswer:
    """The Exact Answer read off the chosen sentences or, failing them, the next best (`more`, up to
    READ_POOL in all; the sentence read is then quoted first), the best-named reading; its features."""
    read = reader(kind)
    # A version is read only off a sentence holding the question's other words (`version_value`),
    # and the one sentence that states it ("supported … since version 3.35.0") often ranks low.
    size = len(chosen) + len(more) if VERSION_ASKED.search(question) else max(READ_POOL, len(chosen))
    pool = [*chosen, *[s for s in more if s not in chosen]][:size]
    readings = [(n, *read(question, s)) for n, s in enumerate(pool)]
    found = [r for r in readings if r[1]]
    if not found:
        return ExtractiveAnswer("", chosen=chosen)
    n, value, cover, shaped = max(found, key=lambda r: (r[2], -r[0]))
    agree = any(_norm(v) == _norm(value) and pool[m].docid != pool[n].docid for m, v, _, _ in found if m != n)
    ordered = [pool[n], *[s for s in chosen if s is not pool[n]]][: len(chosen)]
    feats = features_of(question, pool[n], cover, shaped, agree, kind, docids)
    return ExtractiveAnswer("", value, features=feats, chosen=ordered)


def compare(question: str, scored: list[Scored], docids: Sequence[str]) -> ExtractiveAnswer:
    """ "Which … : A or B": each side's best sentence (one holding SIDE_COVERAGE of that side's own
    words) and the value it states; the side whose value the question's "more"/"less" favours is
    the Exact Answer when both values are numbers. Both sides' sentences are cited either way."""
    sides = comparison_sides(question)
    picks: list[tuple[str, Scored, float | None]] = []
    for side, other in (sides, sides[::-1]):
        own = keys(side) - keys(other)
        side_q = question.replace(other, " ")
        holding = [
            s for s in scored if own and len(keys(f"{s.sentence} {s.context}") & own) >= SIDE_COVERAGE * len(own)
        ]
        # The side's best sentence that states a value, else its best sentence (cited, no value).
        readings = []
        for s in holding:
            value = value_and_cover(side_q, s.sentence, s.context)[0] or exact_value(
                f"what is the default value {side}", s.sentence
            )
            readings.append((s, numeric(value) if value else None))
        stated = [r for r in readings if r[1] is not None]
        if stated or readings:
            s, number = (stated or readings)[0]
            picks.append((side, s, number))
    cited = [p[1] for p in picks]
    rest = [s for s in scored if s not in cited]
    way = direction(question)
    if len(picks) == 2 and all(p[2] is not None for p in picks) and way and picks[0][2] != picks[1][2]:
        winner = max(picks, key=lambda p: way * (p[2] or 0.0))
        feats = features_of(question, winner[1], 1.0, False, False, "comparison", docids)
        return ExtractiveAnswer("", winner[0], features=feats, chosen=[*cited, *rest])
    return ExtractiveAnswer("", chosen=[*cited, *rest])


def extractive_draft(
    question: str,
    docs: Sequence[Any],
    weights: Mapping[str, float] | None = None,
    limit: int = JobConfig.answer_sentences,
) -> ExtractiveAnswer:
    """The extractive answer: explanation (sentences cited `[docid]`, then the note), Exact
    Answer, whether evidence was insufficient, and the confidence's features."""
    docids = [d.docid for d in docs]
    scored = scored_sentences(question, docs, weights)
    if not scored:
        _, named = subject_products(question, docids)
        text = NO_SUBJECT.format(subject=" or ".join(sorted(named))) if named else NO_ANSWER
        return ExtractiveAnswer(text, insufficient=True)
    kind = question_kind(question, bool(QUANTITY_ASKED.search(question)))
    chosen = top(scored, limit)
    if kind == "comparison":
        out = compare(question, scored, docids)
        out.chosen = out.chosen[: max(limit, 2)]
    else:
        # The value is read beside the question's other words: its product is the subject rule's.
        asked = without_products(question, subject_products(question, docids)[1])
        out = read_exact(asked, chosen, kind, docids, scored)
        if out.features is not None:
            out.features |= {
                "product_named": features_of(question, out.chosen[0], 0, False, False, kind, docids)["product_named"]
            }
    parts = [f"{s.sentence.rstrip('.!?').rstrip()} [{s.docid}]." for s in out.chosen]
    out.explanation = " ".join([*parts, EXTRACTIVE_NOTE])
    return out


def extractive_answer(
    question: str,
    docs: Sequence[Any],
    weights: Mapping[str, float] | None = None,
    limit: int = JobConfig.answer_sentences,
) -> tuple[str, str, bool]:
    """(explanation, exact answer, insufficient evidence) of `extractive_draft`."""
    out = extractive_draft(question, docs, weights, limit)
    return out.explanation, out.exact, out.insufficient
