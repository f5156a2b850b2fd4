"""Cloze pseudo-queries: a sentence of a document → that document, the sentence taken out of what is searched.

Why a kind of its own (docs/eval/self-tuning/README.md, fourth measurement): the `title` and
`sentence` kinds (tuning.pseudo_queries) are known-item searches whose words are still in their one
answer, so they reward exact matching and chose settings that lost on real queries. Taking the
sentence out — the inverse cloze task of Lee et al. (ACL 2019) — leaves the query to be matched
by what the rest of its document says about the same thing, as a real query is. Every other
document of the searched copy loses one sentence too: otherwise each answer would be the one
document made shorter, and BM25's length normalisation (b) would be rewarded for that alone.

Measured on CACM, Cranfield and scifact-train (two seeds, real queries, never their qrels here):
the k1/b these queries chose gained +0.5 to +5.6% nDCG@20 for BM25 and +0.8 to +3.4% for hybrid,
never a loss; the semantic weight they chose (0.25–0.5) lost on hybrid, so they choose k1/b only
(tuning.self_tuning).

The searched copy is a Lucene index of the altered documents built in a scratch folder (the
caller's, inside the collection's runs); above `MAX_DOCUMENTS` documents it holds a seeded sample
that includes every query's source, so tuning a million documents stays minutes, not an ingest.
Seeded and bounded like the other kinds; reads documents only, never queries or qrels.

A sentence is never taken out of a document it is all of (a body of one long sentence, no title
or keywords): that document would be left with nothing to index, Lucene would skip it, and the
copy would be incomplete; it stays whole and asks nothing.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from stores.collection import Collection
from stores.lucene import LuceneIndex
from stores.lucene_build import build_index
from stores.records import DocRecord
from tuning.pseudo_queries import PseudoQuery, query_sentences

KIND = "cloze"
MIN_DOCUMENT_WORDS = 40  # a document shorter than this says too little once a sentence is gone
MAX_DOCUMENTS = 20_000  # documents in the searched copy (all of a smaller collection)
MIN_QUERIES = 50  # fewer cloze queries than this choose nothing: the grid's differences are noise
READ_BATCH = 1_000
_WORD = re.compile(r"\w")


@dataclass(frozen=True)
class ClozeSet:
    """The queries and the index of the altered copy they are searched in."""

    queries: tuple[PseudoQuery, ...]
    index: LuceneIndex
    documents: int  # documents in the copy


def take_out_sentence(rec: DocRecord, rng: random.Random) -> tuple[DocRecord, str] | None:
    """The record with one seeded sentence (of `query_sentences`) taken out of its body, and that
    sentence; None for a body under `MIN_DOCUMENT_WORDS` words or without such a sentence, and
    never a sentence whose removal leaves the record no word to index (see the module doc)."""
    text = rec.text
    if len(text.split()) < MIN_DOCUMENT_WORDS:
        return None
    spans = [(a, b) for a, b in query_sentences(text) if _keeps_words(rec, text[:a], text[b:])]
    if not spans:
        return None
    a, b = spans[rng.randrange(len(spans))]
    return rec.model_copy(update={"text": (text[:a] + " " + text[b:]).strip()}), text[a:b]


def _keeps_words(rec: DocRecord, before: str, after: str) -> bool:
    """Whether the record still has a word to index with its body cut to `before` + `after`."""
    return any(_WORD.search(part) for part in (rec.title, before, after, *rec.keywords))


def _altered(
    col: Collection, docids: list[str], n: int, rng: random.Random, out: list[PseudoQuery]
) -> Iterator[DocRecord]:
    """Each document with one sentence taken out (those without one as they are); the first `n`
    documents that have one become queries, appended to `out` as they are made."""
    for start in range(0, len(docids), READ_BATCH):
        batch = docids[start : start + READ_BATCH]
        records = col.corpus.get_many(batch)
        for docid in batch:
            rec = records.get(docid)
            if rec is None:
                continue
            taken = take_out_sentence(rec, rng)
            if taken is None:
                yield rec
                continue
            if len(out) < n:
                out.append(PseudoQuery(f"z{len(out)}", KIND, taken[1], (docid,), docid))
            yield taken[0]


def cloze_queries(
    col: Collection, folder: Path, n: int, seed: int, hashes: Mapping[str, str] | None = None
) -> ClozeSet:
    """Up to `n` cloze queries and the index of the altered copy, built into `folder` (must not
    exist; the caller removes it). Queries come from a seeded order of the documents, so the same
    collection, seed and size give the same queries."""
    docids = sorted(hashes if hashes is not None else col.corpus.hashes())
    rng = random.Random(seed)
    order = rng.sample(docids, min(len(docids), MAX_DOCUMENTS))
    queries: list[PseudoQuery] = []
    meta = build_index(
        _altered(col, order, max(0, n), rng, queries),
        folder,
        fingerprint=f"cloze:{col.corpus.fingerprint}:{seed}",
        k1=col.lucene.meta.k1,
        b=col.lucene.meta.b,
    )
    return ClozeSet(tuple(queries), LuceneIndex(folder, f"{col.name} (cloze copy)"), meta.documents)


__all__ = ["KIND", "MAX_DOCUMENTS", "MIN_QUERIES", "ClozeSet", "cloze_queries", "take_out_sentence"]
