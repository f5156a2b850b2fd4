"""The answer without a model: the evidence sentences that answer the question, cited, and an
exact value only when one can be read off the best sentence.

Nothing here writes prose. Every evidence sentence of the top documents (their verified quotes,
as `nodes.job.results.answer_docs` re-reads them from the store) is scored against the question:
the question's content words it contains, each weighted by its IDF in the collection when the
answer node could look the frequencies up (`question_weights`), plus a small prior for the
document's rank. The best few sentences across documents are quoted verbatim, each with its
`[docid]`, and the explanation says that it is extractive. The Exact Answer is filled only when
the question asks for a value (a number, a quantity, a quoted literal, a name) and a selected
sentence states one right after the question's own words or beside them in a recognised shape
(`[default: 12]`, `(default `5s`)`, `:Number of Instances: 150`, "is -6", "a maximum of 10");
that sentence then comes first. Otherwise it stays empty. No
confidence is claimed: nothing here is calibrated, so the confidence is None ("not estimated"),
never a made-up percentage (issue 20, item 4).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from nodes.evidence.quotable import quotable_spans
from nodes.evidence.sentences import display_text, sentences, stem, stems
from nodes.job.config import JobConfig
from nodes.tools.excerpts import query_terms

# A sentence is selected only when it holds at least MIN_OVERLAP of the question's (weighted)
# content words, and at least RELATIVE_TO_BEST of the best sentence's score: no filler after the
# answer. Its document's title counts toward MIN_OVERLAP (it names what a long question's other
# words name); the sentence itself must hold OWN_OVERLAP, so a title cannot carry filler.
MIN_OVERLAP = 0.3
RELATIVE_TO_BEST = 0.5
OWN_OVERLAP = MIN_OVERLAP / 2
# The document's rank adds RANK_PRIOR / (rank + 1): a tie-breaker between equally worded sentences.
RANK_PRIOR = 0.1
# The Exact Answer: the value must follow the last question word the sentence contains within
# this many words, and the sentence must hold at least this share of the question's words.
EXACT_WINDOW_WORDS = 4
EXACT_MIN_COVERAGE = 0.6
# … and those question words must stand together: within this many words before the value's
# window ("k1=25 … at the default 0.9/0.4 … near k1=2" is not a statement of the default k1).
EXACT_SPAN_WORDS = 8
EXTRACTIVE_NOTE = (
    "(Extractive answer: the sentences above are quoted from the top documents as they stand, "
    "selected by the words they share with the question; no model wrote or checked an answer.)"
)
NO_ANSWER = (
    "No sentence of the top documents shares the question's content words. (Extractive answer: no model was used.)"
)

_QUANTITY_ASKED = re.compile(
    r"\b(?:how (?:many|much|long|large|big|often|old|far|fast)|what (?:number|percentage|size)|"
    r"value|default|number of|version|port|size|limit|count|timeout|year|when|"
    r"constant|threshold|maximum|minimum|max|min)\b",
    re.IGNORECASE,
)
_NAME_ASKED = re.compile(
    r"^\s*(?:who|whom|which (?:person|author|company|tool|library|program|command))\b|"
    r"\bwhat is the name\b|\bnamed?\b",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:[.,]\d+)*(?:\s?(?:%|[kKMGT]?[bB]\b|ms\b|s\b|px\b|°\w?|[kKmM]\b))?")
_LITERAL = re.compile(r"`([^`\n]{1,60})`|\"([^\"\n]{1,60})\"|'([^'\n]{1,60})'|“([^”\n]{1,60})”")
_NAME = re.compile(r"[A-Z][\w'’.-]*(?:(?:\s+|,\s*|\s+and\s+)[A-Z][\w'’.-]*)*")
_TOKEN = re.compile(r"\w+", re.UNICODE)
# Words that ask for the quantity rather than name what it is of ("how many listeners"): a
# sentence stating the number never repeats them, so they are not looked for.
ASKING_WORDS = frozenset({"many", "much"})
# A value in a recognised shape: a backticked literal or a number (with its unit).
_VALUE = r"(`[^`\n]{1,40}`|[-+]?\d+(?:[.,]\d+)*(?:\s?(?:%|[kKMGT]?[bB]\b|ms\b|s\b|px\b|[kKmM]\b))?)"
# The shapes in which documents state a value beside the words it is the value of. Each is
# (pattern, words after the value that still name it): "--num-callers=<number> [default: 12]",
# "timeout (default `5s`)", "(default: 3)", ":Number of Instances: 150", "level is -6",
# "a maximum of 10 listeners" (the thing counted follows the number).
_SHAPES: tuple[tuple[re.Pattern[str], int], ...] = (
    (re.compile(rf"[\[(]\s*default:?\s+({_VALUE[1:-1]}|[\w.+-]+)\s*[\])]", re.IGNORECASE), 0),
    (re.compile(rf"^\s*:?[A-Za-z][^:\n]{{0,60}}:\s+{_VALUE}(?![\w.-])"), 0),
    (re.compile(rf"\b(?:is|are|equals)\s+{_VALUE}(?![\w-])"), 0),
    (re.compile(rf"\b(?:maximum|minimum)\s+of\s+{_VALUE}(?![\w-])", re.IGNORECASE), EXACT_WINDOW_WORDS),
)


def question_stems(question: str) -> list[str]:
    """The question's content words as prefix stems (the scorer's analyzer), in order, without
    the words that only ask for a quantity (ASKING_WORDS)."""
    return list(dict.fromkeys(stem(t) for t in query_terms(question) if t not in ASKING_WORDS))


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
                sentence = display_text(text[a:b])
                if sentence and (doc.docid, sentence) not in seen:
                    seen.add((doc.docid, sentence))
                    out.append((rank, doc.docid, sentence))
    return out


def select_sentences(
    question: str,
    docs: Sequence[Any],
    weights: Mapping[str, float] | None = None,
    limit: int = JobConfig.answer_sentences,
) -> list[tuple[float, str, str]]:
    """The best `limit` sentences answering `question`, as (score, docid, sentence), best first."""
    wanted = question_stems(question)
    titles = {doc.docid: doc.title for doc in docs}
    scored = []
    for rank, docid, sentence in candidate_sentences(docs):
        # A sentence must share the question's words itself; its document's title (printed with
        # every reference) then counts too: "The default priority value is 50" in "Shared
        # MIME-info Database" answers "default priority of a magic rule in the shared MIME-info
        # database" better than "… file(1)'s magic.mime file", which shares as many words alone.
        if overlap(sentence, wanted, weights) < OWN_OVERLAP:
            continue
        share = overlap(f"{sentence}\n{titles.get(docid) or ''}", wanted, weights)
        if share >= MIN_OVERLAP:
            scored.append((round(share + RANK_PRIOR / (rank + 1), 6), rank, docid, sentence))
    scored.sort(key=lambda s: (-s[0], s[1]))
    if not scored:
        return []
    floor = RELATIVE_TO_BEST * scored[0][0]
    return [(score, docid, sentence) for score, _, docid, sentence in scored if score >= floor][:limit]


def shaped_value(question: str, sentence: str, title: str = "") -> tuple[str, float]:
    """The value `sentence` states in a recognised shape (`_SHAPES`) beside the question's words,
    with the share of the question's words that name it; ('', 0.0) when none. The naming words —
    up to EXACT_SPAN_WORDS words before the shape, the shape's own words ("default", a field's
    name) and, for "a maximum of N", EXACT_WINDOW_WORDS words after — together with the
    document's `title` must hold EXACT_MIN_COVERAGE of the question's words, at least one of them
    in the sentence: "How many instances does the Iris dataset have?" reads 150 off ":Number of
    Instances: 150 (50 in each of three classes)" in "Iris plants dataset"; "The maximum value for
    this is 500" is not the default of --num-callers."""
    wanted = set(question_stems(question))
    if not wanted or not _QUANTITY_ASKED.search(question):
        return "", 0.0
    tokens = list(_TOKEN.finditer(sentence))
    named = stems(title) & wanted
    best: tuple[str, float] = ("", 0.0)
    for shape, after in _SHAPES:
        for m in shape.finditer(sentence):
            before = [t for t in tokens if t.end() <= m.start()][-EXACT_SPAN_WORDS:]
            following = [t for t in tokens if t.start() >= m.end()][:after]
            own = ({stem(t.group()) for t in before + following} | stems(m.group())) & wanted
            cover = len(own | named) / len(wanted)
            if own and cover >= EXACT_MIN_COVERAGE and cover > best[1]:
                best = (m.group(1).strip("`").strip(), cover)
    return best


def exact_value(question: str, sentence: str, title: str = "") -> str:
    """The value the question asks for, read off `sentence`, or ''. Only when the question asks
    for a quantity/value or a name, and either the sentence states it beside the question's
    words in a recognised shape (`shaped_value`), or the sentence holds most of the question's
    words and the value follows the last of those words within EXACT_WINDOW_WORDS words ("the
    default weight value is 50" → "50"); anything less certain stays empty. `title`: the
    sentence's document's title, which may name what the sentence leaves implicit."""
    return value_and_cover(question, sentence, title)[0]


def value_and_cover(question: str, sentence: str, title: str = "") -> tuple[str, float]:
    """`exact_value` with the share (0–1) of the question's words that name the value."""
    shaped = shaped_value(question, sentence, title)
    if shaped[0]:
        return shaped
    wanted = question_stems(question)
    tokens = list(_TOKEN.finditer(sentence))
    hits = [i for i, t in enumerate(tokens) if stem(t.group()) in wanted]
    if not wanted or not hits:
        return "", 0.0
    last = hits[-1]
    near = {stem(tokens[i].group()) for i in hits if i > last - EXACT_SPAN_WORDS}
    if len(near) < EXACT_MIN_COVERAGE * len(wanted):
        return "", 0.0
    cover = len(near | (stems(title) & set(wanted))) / len(wanted)
    window_end = tokens[min(len(tokens) - 1, last + EXACT_WINDOW_WORDS)].end()
    tail = sentence[tokens[last].end() : window_end]
    if _QUANTITY_ASKED.search(question):
        literal = _LITERAL.search(tail)
        if literal:
            return next(g for g in literal.groups() if g), cover
        number = _NUMBER.search(tail)
        if number:
            return number.group().strip(), cover
    if _NAME_ASKED.search(question):
        asked = {t.lower() for t in _TOKEN.findall(question)}
        for match in _NAME.finditer(sentence[tokens[last].end() :]):
            name = match.group().rstrip(".,")
            if name and not {t.lower() for t in _TOKEN.findall(name)} & asked:
                return name, cover
    return "", 0.0


def extractive_answer(
    question: str,
    docs: Sequence[Any],
    weights: Mapping[str, float] | None = None,
    limit: int = JobConfig.answer_sentences,
) -> tuple[str, str, bool]:
    """(explanation, exact answer, insufficient evidence): the selected sentences, each cited as
    `[docid]`, followed by the note that the answer is extractive."""
    chosen = select_sentences(question, docs, weights, limit)
    if not chosen:
        return NO_ANSWER, "", True
    chosen, exact = answering_first(question, chosen, docs)
    parts = [f"{sentence.rstrip('.!?').rstrip()} [{docid}]." for _, docid, sentence in chosen]
    return " ".join([*parts, EXTRACTIVE_NOTE]), exact, False


def answering_first(
    question: str, chosen: list[tuple[float, str, str]], docs: Sequence[Any]
) -> tuple[list[tuple[float, str, str]], str]:
    """The selected sentences with the one that states the asked value moved to the front, and
    that value; unchanged and '' when none does. Of several, the one whose value the question's
    words (its document's title counting) name best, the earlier on ties. Word overlap alone
    ranked "By default, a maximum of 10 listeners can be registered for any single event." 4th of
    4 behind sentences that mention listeners without saying how many, and put zstd's "-#:
    selects # compression level [1-19] (default: 3)" before gzip's "The default compression
    level is -6" for "What is gzip's default compression level?" (the title GZIP(1) names it)."""
    titles = {doc.docid: getattr(doc, "title", "") or "" for doc in docs}
    best: tuple[float, int, str] | None = None
    for n, (_, docid, sentence) in enumerate(chosen):
        value, cover = value_and_cover(question, sentence, titles.get(docid, ""))
        if value and (best is None or cover > best[0]):
            best = (cover, n, value)
    if best is None:
        return chosen, ""
    n = best[1]
    return [chosen[n], *chosen[:n], *chosen[n + 1 :]], best[2]
