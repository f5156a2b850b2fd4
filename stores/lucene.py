"""Lucene BM25 via Pyserini: build an index from the corpus store and search it.

This is the only module that touches Pyserini/Lucene objects; everything it returns is plain
Python (`Hit`). BM25 k1/b are stored with the index (`quarry-index.json`) and can be overridden
per search, because good values are corpus-specific (see ../shared/DESIGN.md); the rule for a
collection without judgements is ranking policy, in `nodes.ranking.bm25_defaults`.
"""

from __future__ import annotations

import json
import re
import shutil
import threading
from collections.abc import Iterable
from contextlib import suppress
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

from stores.atomic import write_atomic
from stores.errors import QuarryError
from stores.format_chars import drop_format_chars
from stores.jvm import autoclass, pyserini_lucene

META_FILE = "quarry-index.json"
DEFAULT_K1, DEFAULT_B = 0.9, 0.4
# What Anserini's IndexCollection uses unless told otherwise, and so what Quarry's indexes use.
ANALYZER = "Anserini DefaultEnglishAnalyzer (Porter stemmer, Lucene English stopwords)"
# Lucene rejects Boolean queries with more than 1024 clauses; one clause per distinct term.
MAX_QUERY_TERMS = 900
# Lucene's tokenizer splits CJK text into single characters, so each counts as a term here.
_WORD = re.compile(r"[\u2E80-\u9FFF\uAC00-\uD7AF\uF900-\uFAFF\U00020000-\U0003FFFF]|\w+", re.UNICODE)
_CONTROL = re.compile(r"[\x00-\x1f\x7f\ud800-\udfff]")  # control chars and lone surrogates


@dataclass(frozen=True, slots=True)
class Hit:
    docid: str
    score: float
    rank: int


@dataclass(frozen=True, slots=True)
class IndexMeta:
    k1: float
    b: float
    fingerprint: str
    documents: int
    built_seconds: float

    def dump(self, folder: Path) -> None:
        """Write the settings atomically: `quarry index N --k1/--b` and `tune --apply` rewrite
        them in a live index, where a kill mid-write must not leave an empty file and a reader
        must never see a half-written one."""
        write_atomic(folder / META_FILE, json.dumps(asdict(self), indent=2))

    @classmethod
    def load(cls, folder: Path, name: str = "") -> IndexMeta:
        """The stored settings; `bad_index_meta` (not a traceback) when the file cannot be read
        or parsed — `quarry index NAME` or `quarry ingest … --force` rebuilds it."""
        path = folder / META_FILE
        text = ""
        try:
            text = path.read_text(encoding="utf-8")
            raw = json.loads(text)
            return cls(**{f: raw[f] for f in cls.__slots__})
        except FileNotFoundError:
            raise
        except (OSError, ValueError, TypeError, KeyError) as exc:
            label = name or "NAME"
            why = "the file is empty" if isinstance(exc, ValueError) and not text.strip() else str(exc)[:200]
            raise QuarryError(
                "bad_index_meta",
                f"the BM25 index settings of collection {label!r} ({path}) are unreadable: {why}",
                f"rebuild the index: quarry index {label} (or quarry ingest SOURCE --name {label} --force)",
            ) from exc


def distinct_terms(text: str) -> int:
    """How many distinct searchable words `text` has (what `MAX_QUERY_TERMS` limits)."""
    return len({m.group().lower() for m in _WORD.finditer(_searchable(text))})


def _searchable(text: str | None) -> str:
    """The text BM25 compares: format characters dropped (as the index feed drops them,
    `stores.format_chars`), control characters and lone surrogates as spaces."""
    return _CONTROL.sub(" ", drop_format_chars(text or ""))


def bag_of_words(text: str) -> str:
    """Make any user text safe for Anserini's bag-of-words query generator.

    That generator does not parse Lucene syntax, so `title:(a AND`, `*` or `"` are harmless
    and the text is passed on unchanged (its own analyzer tokenises best: possessives,
    abbreviations). Two things still need care: Lucene rejects a query with more than 1024
    clauses (one per distinct term), so the text is cut after `MAX_QUERY_TERMS` distinct words;
    and control characters are replaced by spaces. Invisible format characters (a trailing
    right-to-left mark, a soft hyphen) are dropped, as they are from indexed documents: Lucene's
    tokenizer would keep them inside the word. Text with no word character yields "".
    """
    text = _searchable(text)
    distinct: set[str] = set()
    for match in _WORD.finditer(text):
        distinct.add(match.group().lower())
        if len(distinct) > MAX_QUERY_TERMS:
            text = text[: match.start()]
            break
    return text.strip() if distinct else ""


_searcher_lock = threading.Lock()


class LuceneIndex:
    """Search one collection's BM25 index. Safe to share between threads."""

    def __init__(self, folder: Path, name: str = "") -> None:
        if not (folder / META_FILE).is_file():
            raise QuarryError(
                "no_index",
                f"collection {name or folder} has no Lucene index",
                f"build it: quarry index {name or 'NAME'}",
            )
        self.folder = folder
        self.meta = IndexMeta.load(folder, name)

    def search(self, text: str, k: int = 1000, *, k1: float | None = None, b: float | None = None) -> list[Hit]:
        """Top-k hits for a bag-of-words query, ties broken by docid; [] if no searchable term."""
        docids, scores = self.ranking(text, k, k1=k1, b=b)
        return [Hit(d, s, i) for i, (d, s) in enumerate(zip(docids, scores, strict=True), start=1)]

    def ranking(
        self, text: str, k: int = 1000, *, k1: float | None = None, b: float | None = None
    ) -> tuple[tuple[str, ...], tuple[float, ...]]:
        """The same ranking as `search` as two parallel tuples (docids, scores), best first —
        the search tool's hot path, without a `Hit` object per document (see bench/)."""
        query = bag_of_words(text)
        if not query:
            return (), ()
        searcher = _searcher(
            str(self.folder), self.meta.k1 if k1 is None else float(k1), self.meta.b if b is None else float(b)
        )
        try:
            return _read_hits(searcher, query, int(k))
        except Exception as exc:  # jnius.JavaException; a term-count the analyzer saw differently
            if "TooManyClauses" not in str(exc):
                raise
            return self.ranking(query[: len(query) // 2], k, k1=k1, b=b)

    def score_documents(
        self, text: str, docids: Iterable[str], *, k1: float | None = None, b: float | None = None
    ) -> dict[str, float]:
        """The BM25 score `search` would give each of these documents for `text` (0.0 when no
        term matches or the docid is unknown), without ranking the whole collection — how well
        one requirement's words match a candidate, on the same scale as the lexical channel
        (or, with k1/b, under another BM25 setting)."""
        ids = list(dict.fromkeys(docids))
        query = bag_of_words(text)
        if not query or not ids:
            return {d: 0.0 for d in ids}
        reader, similarity = _scorer(
            str(self.folder), self.meta.k1 if k1 is None else float(k1), self.meta.b if b is None else float(b)
        )
        return {d: max(0.0, float(reader.compute_query_document_score(d, query, similarity=similarity))) for d in ids}


class _ArraySearch:
    """Anserini's `SimpleSearcher.search(query, k)`, step by step, read as two Java arrays.

    Why not call `search` itself: it returns one `ScoredDoc` per hit, and every element jnius
    takes from that array becomes a Python proxy (about 7 µs each: 7 ms of a 1000-deep search on
    CACM, half the search). Here are the same steps `SimpleSearcher._search` takes — the
    bag-of-words query, the index searcher with its BM25 similarity, the sort that breaks score
    ties by docid, the searcher's reranker cascade (its one reranker rounds scores to 4 decimals
    and nudges exact ties; given no context it does what Anserini's default arguments make it do)
    — and the result's `docids` and `scores` arrays are converted whole. tests/test_lucene.py
    holds the two to the same ranking, ties and scores included.

    Every Java object and class it calls is looked up here, once, and a first search resolves the
    classes of what they return: jnius building a class's proxy in several threads at once has
    crashed the JVM (measured: a cascade proxy fetched per call, four threads, one crash in a
    few thousand searches), and searches run in thread pools (tuning/grid.py).
    """

    def __init__(self, searcher) -> None:
        self.simple = searcher.object
        if self.simple.searcher is None:  # SimpleSearcher opens its IndexSearcher on first search
            self.simple.search("warm", 1)
        self.index_searcher = self.simple.searcher
        self.analyzer = self.simple.get_analyzer()
        self.generator = autoclass("io.anserini.search.query.BagOfWordsQueryGenerator")()
        self.sort = autoclass("io.anserini.search.SimpleSearcher").BREAK_SCORE_TIES_BY_DOCID
        self.scored_docs = autoclass("io.anserini.search.ScoredDocs")
        self.cascade = self.simple.cascade
        self("warm", 1)

    @staticmethod
    def applies(searcher) -> bool:
        """Whether `searcher` is one these steps reproduce: a Lucene 9+ index, no RM3 or Rocchio,
        the default cascade (Anserini's score-ties adjuster alone)."""
        simple = searcher.object
        if simple.backwardsCompatibilityLucene8 or simple.use_rm3() or simple.use_rocchio():
            return False
        rerankers = simple.cascade.rerankers
        only = rerankers.size() == 1 and rerankers.get(0).getClass().getName()
        return only == "io.anserini.rerank.lib.ScoreTiesAdjusterReranker"

    def __call__(self, query: str, k: int) -> tuple[tuple[str, ...], tuple[float, ...]]:
        lucene_query = self.generator.buildQuery("contents", self.analyzer, query)
        top = self.index_searcher.search(lucene_query, k, self.sort, True)
        ranked = self.cascade.run(self.scored_docs.fromTopDocs(top, self.index_searcher), None)
        return tuple(ranked.docids), tuple(float(score) for score in ranked.scores)


def _read_hits(searcher, query: str, k: int) -> tuple[tuple[str, ...], tuple[float, ...]]:
    """(docids, scores) of Anserini's ranking for a bag-of-words `query`, best first (ties by
    docid, as `SimpleSearcher` gives them): through `_ArraySearch` for the searchers Quarry builds,
    through `SimpleSearcher.search` for any other."""
    fast = _array_search(searcher)
    if fast is not None:
        return fast(query, k)
    docids, scores = [], []
    for hit in searcher.object.search(query, k):  # one jnius proxy per hit: see _ArraySearch
        docids.append(hit.docid)
        scores.append(float(hit.score))
    return tuple(docids), tuple(scores)


def _array_search(searcher) -> _ArraySearch | None:
    with _searcher_lock:
        return _array_search_cached(searcher)


@lru_cache(maxsize=32)
def _array_search_cached(searcher) -> _ArraySearch | None:
    return _ArraySearch(searcher) if _ArraySearch.applies(searcher) else None


def _scorer(folder: str, k1: float, b: float):
    """An index reader and the index's BM25 similarity, for scoring chosen documents."""
    with _searcher_lock:
        return _scorer_cached(folder, k1, b)


@lru_cache(maxsize=32)
def _scorer_cached(folder: str, k1: float, b: float):
    pyserini_lucene()
    from pyserini.index.lucene import LuceneIndexReader

    return LuceneIndexReader(folder), autoclass("org.apache.lucene.search.similarities.BM25Similarity")(k1, b)


@lru_cache(maxsize=32)
def _searcher_cached(folder: str, k1: float, b: float):
    searcher = pyserini_lucene().LuceneSearcher(folder)
    searcher.set_bm25(k1, b)
    return searcher


def _searcher(folder: str, k1: float, b: float):
    # One searcher per (index, k1, b): set_bm25 mutates the searcher, so sharing one across
    # different settings would race between threads.
    with _searcher_lock:
        return _searcher_cached(folder, k1, b)


def forget_searchers() -> None:
    """Drop cached searchers (after an index is replaced on disk)."""
    with _searcher_lock:
        _searcher_cached.cache_clear()
        _scorer_cached.cache_clear()
        _array_search_cached.cache_clear()


def restore_interrupted_swap(target: Path) -> None:
    """Undo a `replace_dir` that stopped between its two renames (a crash, a kill): `target`
    is gone and its complete previous copy waits as `target.old`, so it is put back — readers
    then see the old build rather than none."""
    old = target.with_name(target.name + ".old")
    if not target.exists() and old.is_dir():
        with suppress(FileNotFoundError):  # another process restored (or a new swap finished) first
            old.rename(target)


def replace_dir(new: Path, target: Path) -> None:
    """Swap `new` into `target` so that `target` is either fully old or fully new (a swap cut
    between its two renames is undone by `restore_interrupted_swap`)."""
    restore_interrupted_swap(target)
    old = target.with_name(target.name + ".old")
    if old.exists():
        shutil.rmtree(old)
    if target.exists():
        target.rename(old)
    new.rename(target)
    if old.exists():
        shutil.rmtree(old, ignore_errors=True)
    forget_searchers()
