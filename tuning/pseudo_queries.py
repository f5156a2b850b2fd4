"""Pseudo-queries: training queries with known answers made from a collection's own documents.

A user's corpus has no relevance judgements, so self-tuning (tuning.self_tuning) scores settings
on queries the corpus answers by construction. Three kinds, each reported on its own:

- `title`: a document's title → that document (a known-item search, as a user who remembers
  a paper looks for it);
- `sentence`: half the content words of one sentence of a document's body, in order → that
  document (compressed, so the exact sentence does not make every setting find it first);
- `citation`: a citing document's title → the documents it cites in the collection, the
  citing document itself left out of the ranking (only where the collection has citations).

Seeded and bounded: the same collection, seed and size give the same queries. The generator
reads documents and citations only — never the collection's queries or qrels. Beside them,
`from_judgements` turns what the collection's jobs judged (model librarians, a user's marks;
stores.judgements) into `judged` queries.
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

from nodes.evidence.sentences import sentences
from nodes.tools.excerpts import STOPWORDS
from stores.collection import Collection
from stores.judgements import Judgement
from stores.records import DocRecord

KINDS = ("title", "sentence", "citation")
# What the kinds made from documents alone chose lost on real queries on every judged collection
# measured (docs/eval/self-tuning/README.md): title and sentence queries are known-item searches
# whose words come from their one answer, so settings favouring exact word matches win on them by
# construction (semantic weight 0.25, k1 0.6: hybrid −0.6 to −5.4%, the agent −3 to −5%); citing
# titles share words with the cited titles and chose the same (CACM: hybrid −4.9%, BM25 −1.6%).
# They are made and reported — what each alone would choose — but only judged queries (a person's
# marks, a model librarian's judgements of real intents) choose; without enough of them, cloze
# queries (tuning.cloze_queries: the sentence taken out of what is searched) choose k1/b.
KNOWN_ITEM_KINDS = ("title", "sentence")
CHOOSING_KINDS = ("judged",)
DEFAULT_QUERIES = 300
DEFAULT_SEED = 13
MIN_WORDS = 3  # content words a title query needs
SENTENCE_WORDS = (8, 60)  # a sentence query is drawn from a sentence of this many words
KEEP_SHARE = 0.5  # … keeping this share of its content words
KEEP_RANGE = (4, 12)
RELEVANT_FROM = 0.5  # a judged document counts as relevant from this probability (a mark is 0 or 1)
MAX_CITED = 50  # a citing document with more links is a survey: its title predicts few of them
_WORD = re.compile(r"[^\W\d_][\w'-]*", re.UNICODE)


@dataclass(frozen=True, slots=True)
class PseudoQuery:
    qid: str
    kind: str
    text: str
    relevant: tuple[str, ...]  # the documents that answer it
    source: str  # the document it was made from
    exclude: tuple[str, ...] = ()  # documents left out of the ranking before it is scored


@dataclass(frozen=True)
class PseudoQuerySet:
    queries: tuple[PseudoQuery, ...]
    seed: int
    sources: dict[str, str] = field(default_factory=dict)  # source docid -> content hash

    def texts(self) -> dict[str, str]:
        return {q.qid: q.text for q in self.queries}

    def qrels(self) -> dict[str, dict[str, int]]:
        return {q.qid: dict.fromkeys(q.relevant, 1) for q in self.queries}

    def by_kind(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = defaultdict(list)
        for q in self.queries:
            out[q.kind].append(q.qid)
        return dict(out)

    def plus(self, extra: list[PseudoQuery]) -> PseudoQuerySet:
        """The set with `extra` queries (judged ones) added; their sources are not documents."""
        return PseudoQuerySet((*self.queries, *extra), self.seed, self.sources)

    def only(self, kinds: tuple[str, ...]) -> PseudoQuerySet:
        """The queries of these kinds."""
        return PseudoQuerySet(tuple(q for q in self.queries if q.kind in kinds), self.seed, self.sources)

    def excluded(self) -> dict[str, tuple[str, ...]]:
        return {q.qid: q.exclude for q in self.queries if q.exclude}

    def payload(self) -> dict:
        """What is written to `runs/pseudo-queries.json` for a person to read."""
        return {
            "seed": self.seed,
            "queries": [
                {"qid": q.qid, "kind": q.kind, "text": q.text, "relevant": list(q.relevant), "source": q.source}
                for q in self.queries
            ],
        }


def content_words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text) if len(w) > 2 and w.lower() not in STOPWORDS]


def title_query(rec: DocRecord) -> str | None:
    words = content_words(rec.title)
    return rec.title.strip() if len(words) >= MIN_WORDS else None


def query_sentences(text: str) -> list[tuple[int, int]]:
    """`[start, end)` of each sentence of `text` long enough to ask for a document (`SENTENCE_WORDS`)."""
    return [(a, b) for a, b in sentences(text) if SENTENCE_WORDS[0] <= len(text[a:b].split()) <= SENTENCE_WORDS[1]]


def sentence_query(rec: DocRecord, rng: random.Random) -> str | None:
    """Half the content words (4–12) of one body sentence of 8–60 words, in their order."""
    text = rec.text
    spans = query_sentences(text)
    if not spans:
        return None
    a, b = spans[rng.randrange(len(spans))]
    words = content_words(text[a:b])
    if len(words) < KEEP_RANGE[0]:
        return None
    keep = min(max(round(len(words) * KEEP_SHARE), KEEP_RANGE[0]), KEEP_RANGE[1])
    picked = sorted(rng.sample(range(len(words)), keep))
    return " ".join(words[i] for i in picked)


def from_judgements(judgements: list[Judgement], threshold: float = RELEVANT_FROM) -> list[PseudoQuery]:
    """Judged queries: each intent a job searched, with the documents judged relevant to it — by a
    user's mark where there is one, else by the mean of the model librarians' probabilities."""
    marks: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    models: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for j in judgements:
        (marks if j.source == "user" else models)[j.intent][j.docid].append(j.relevance)
    out: list[PseudoQuery] = []
    for intent in sorted(set(marks) | set(models)):
        docs = {d: sum(v) / len(v) for d, v in models[intent].items()} | {d: v[-1] for d, v in marks[intent].items()}
        relevant = tuple(sorted(d for d, r in docs.items() if r >= threshold))
        if relevant and intent.strip():
            out.append(PseudoQuery(f"j{len(out)}", "judged", intent, relevant, ""))
    return out


def _sample(ids: list[str], n: int, rng: random.Random) -> list[str]:
    return rng.sample(ids, min(n, len(ids)))


def generate(
    col: Collection,
    n: int = DEFAULT_QUERIES,
    seed: int = DEFAULT_SEED,
    kinds: tuple[str, ...] = KINDS,
    hashes: Mapping[str, str] | None = None,
) -> PseudoQuerySet:
    """About `n` pseudo-queries, shared equally by the kinds this collection can make (a kind that
    finds fewer candidates leaves its share to the others)."""
    unknown = set(kinds) - set(KINDS)
    if unknown:
        raise ValueError(f"unknown pseudo-query kinds: {sorted(unknown)}")
    corpus = col.corpus
    hashes = dict(hashes if hashes is not None else corpus.hashes())
    docids = sorted(hashes)
    rng = random.Random(seed)
    cites: dict[str, list[str]] = defaultdict(list)
    if "citation" in kinds:
        for citing, cited in corpus.citations():
            if citing != cited and citing in hashes and cited in hashes:
                cites[citing].append(cited)
    makers = [k for k in KINDS if k in kinds and (k != "citation" or cites)]
    queries: list[PseudoQuery] = []
    remaining = max(0, n)
    for i, kind in enumerate(makers):
        share = remaining // (len(makers) - i)
        made = _make(kind, corpus, docids, cites, share, rng)
        queries += made
        remaining -= len(made)
    sources = {q.source: hashes[q.source] for q in queries}
    return PseudoQuerySet(tuple(queries), seed, sources)


def _make(
    kind: str, corpus, docids: list[str], cites: dict[str, list[str]], want: int, rng: random.Random
) -> list[PseudoQuery]:
    """Up to `want` queries of one kind, trying seeded candidates in batches until enough are made."""
    pool = sorted(cites) if kind == "citation" else docids
    order = _sample(pool, 20 * max(want, 1), rng)  # bounded: a million documents are not all read
    out: list[PseudoQuery] = []
    for start in range(0, len(order), 4 * max(want, 1)):
        if len(out) >= want:
            break
        batch = order[start : start + 4 * max(want, 1)]
        records = corpus.get_many(batch)
        for docid in batch:
            rec = records.get(docid)
            if rec is None or len(out) >= want:
                continue
            q = _query(kind, rec, cites, rng)
            if q is not None:
                out.append(PseudoQuery(f"{kind[0]}{len(out)}", kind, q[0], q[1], docid, q[2]))
    return out


def _query(
    kind: str, rec: DocRecord, cites: dict[str, list[str]], rng: random.Random
) -> tuple[str, tuple[str, ...], tuple[str, ...]] | None:
    if kind == "title":
        text = title_query(rec)
        return (text, (rec.docid,), ()) if text else None
    if kind == "sentence":
        text = sentence_query(rec, rng)
        return (text, (rec.docid,), ()) if text else None
    cited = sorted(set(cites.get(rec.docid, ())))
    text = title_query(rec)
    if not text or not cited or len(cited) > MAX_CITED:
        return None
    return text, tuple(cited), (rec.docid,)


__all__ = [
    "CHOOSING_KINDS",
    "DEFAULT_QUERIES",
    "DEFAULT_SEED",
    "KINDS",
    "KNOWN_ITEM_KINDS",
    "PseudoQuery",
    "PseudoQuerySet",
    "content_words",
    "from_judgements",
    "generate",
    "query_sentences",
    "sentence_query",
    "title_query",
]
