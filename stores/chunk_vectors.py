"""Chunk vectors embedded on demand and cached per collection version.

This is the semantic channel's store for a collection without a (current) dense index: it embeds
the chunks it is asked for with the same MiniLM model as the dense index (`stores.embedder`),
keeps their vectors, and scores given documents' given chunks against a query. Which documents
and chunks are worth scoring is the caller's choice (`nodes.rounds.semantic_filter` takes the lexical
channel's candidates); nothing here ranks or filters.

Vectors are keyed by (docid, chunk_no) and kept as float32 blobs in `chunk-vectors.sqlite` in the
collection version's folder (`CollectionPaths.chunk_vectors_db`). A version's chunks never change,
so a cached vector never goes stale, and the cache is pruned with its version. The file records the
model and the corpus fingerprint; if either differs from what is open, the vectors are dropped.
Several threads and worker processes may share the file (SQLite WAL; a chunk embedded twice by
two processes at once is written once).

Missing chunks are embedded in batches, each written as soon as it is done (`embed`): the caller
may stop the loop between batches (a job's stop or deadline) and keeps every finished batch, so a
retry or the next search embeds only the rest. A batch is bounded by text, not only by count:
eight long chunks on a loaded machine held a `job stop` for ~19 s, because a stop can only be
honoured between model calls. So a batch holds at most `batch_chars` characters and, once the pace
of this machine is measured, about `target_s` seconds of work (never less than one chunk); and the
stop is asked again after waiting for another thread's batch.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from stores.corpus import CorpusStore
from stores.embedder import DIMENSION, MODEL_NAME, embed_texts
from stores.sqlite_wal import use_wal

__all__ = ["ChunkVectors", "Embedded"]

EmbedFn = Callable[[Sequence[str]], np.ndarray]
Key = tuple[str, int]
StopFn = Callable[[], str]  # '' to go on, else why the loop must stop
BatchProgress = Callable[[int, int], None]  # (chunks embedded so far, chunks to embed)

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS vectors (
    docid TEXT NOT NULL, chunk_no INTEGER NOT NULL, vec BLOB NOT NULL, PRIMARY KEY (docid, chunk_no)
) WITHOUT ROWID;
"""
EMBED_BATCH = 32  # the model's encode batch, and chunks per stoppable batch when the caller gives none
BATCH_CHARS = 2_000  # at most this much chunk text per stoppable batch (~3 long chunks of 600 characters)
MIN_BATCH_CHARS = 600  # a slow pace never shrinks a batch below this (one long chunk; short ones still group)
BATCH_TARGET_S = 1.0  # a stoppable batch is sized to take about this long at the pace measured so far
# The chunks to embed are taken in the caller's order (its best documents first: what a stop leaves
# unembedded is the end) but longest first within each window of this many, so that a batch pads
# its chunks to similar lengths: `python -m bench.bench_chunk_vectors` embeds 435 CACM chunks in
# 3.5 s in the callers' order, 2.3 s so (one bare call: 1.9 s; docs/notes/performance-history.md,
# "Chunk vectors").
EMBED_WINDOW = 64


@dataclass(frozen=True)
class Embedded:
    """What one `ChunkVectors.embed` call did: the vectors it has, how many were already cached,
    how many of the `missing` chunks it embedded (or found embedded by another thread), and why it
    stopped early ('' when it did not)."""

    vectors: dict[Key, np.ndarray]
    cached: int
    done: int
    missing: int
    stopped: str


class ChunkVectors:
    """On-demand chunk vectors of one collection version. Safe to share between threads."""

    def __init__(
        self,
        path: Path,
        corpus: CorpusStore,
        *,
        embed: EmbedFn | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = path
        self.corpus = corpus
        self.clock = clock  # measures the embedding pace that sizes a batch (a fake one in tests)
        self._embed: EmbedFn = embed or (lambda texts: embed_texts(texts, EMBED_BATCH))
        self._local = threading.local()
        self._lock = threading.RLock()  # one embedding batch at a time per process
        self._checked = False
        self.embedded = 0  # chunks this object embedded (what a cache hit saves; read by tests and bench/)

    # -- storage -----------------------------------------------------------------------------

    def _con(self) -> sqlite3.Connection:
        con = getattr(self._local, "con", None)
        if con is None:
            con = sqlite3.connect(self.path, timeout=60, check_same_thread=False)
            use_wal(con)  # retried while another process holds the file (stores.sqlite_wal)
            con.executescript(SCHEMA)
            self._local.con = con
        if not self._checked:
            self._check(con)
        return con

    def _check(self, con: sqlite3.Connection) -> None:
        """Drop vectors made by another model or for another corpus (a legacy collection's
        files are rewritten in place)."""
        with self._lock:
            if self._checked:
                return
            want = {"model": MODEL_NAME, "fingerprint": self.corpus.fingerprint}
            have = dict(con.execute("SELECT key, value FROM meta").fetchall())
            if have != want:
                with con:
                    con.execute("DELETE FROM vectors")
                    con.execute("DELETE FROM meta")
                    con.executemany("INSERT INTO meta VALUES (?, ?)", want.items())
            self._checked = True

    def _load(self, keys: Sequence[Key]) -> dict[Key, np.ndarray]:
        wanted = set(keys)
        docids = list(dict.fromkeys(d for d, _ in keys))
        out: dict[Key, np.ndarray] = {}
        con = self._con()
        for start in range(0, len(docids), 500):
            part = docids[start : start + 500]
            rows = con.execute(
                f"SELECT docid, chunk_no, vec FROM vectors WHERE docid IN ({','.join('?' * len(part))})", part
            )
            for docid, chunk_no, blob in rows:
                if (docid, chunk_no) in wanted:
                    out[(docid, chunk_no)] = np.frombuffer(blob, dtype=np.float32)
        return out

    def _texts(self, keys: Sequence[Key]) -> dict[Key, str]:
        wanted = set(keys)
        chunks = self.corpus.chunks_many(d for d, _ in keys)
        return {(c.docid, c.chunk_no): c.text for cs in chunks.values() for c in cs if (c.docid, c.chunk_no) in wanted}

    # -- vectors and scores ------------------------------------------------------------------

    def cached(self, keys: Iterable[Key]) -> int:
        """How many of these chunks already have a vector (nothing is embedded)."""
        keys = list(dict.fromkeys((str(d), int(n)) for d, n in keys))
        return len(self._load(keys)) if keys else 0

    def vectors(self, keys: Iterable[Key]) -> dict[Key, np.ndarray]:
        """Unit vectors of these chunks, embedding (and caching) the ones not seen before.
        Chunks the corpus does not have are absent from the answer."""
        return self.embed(keys).vectors

    def embed(
        self,
        keys: Iterable[Key],
        *,
        batch: int = EMBED_BATCH,
        should_stop: StopFn | None = None,
        progress: BatchProgress | None = None,
        batch_chars: int = BATCH_CHARS,
        target_s: float = BATCH_TARGET_S,
    ) -> Embedded:
        """`vectors`, embedding the missing chunks in stoppable batches: `should_stop()` is asked
        before each batch (and again once this thread may embed) and a non-empty answer ends the
        loop (a job's stop or deadline must not wait for hundreds of chunks); every finished batch
        is already cached, so a retry or the next search embeds only the rest.
        `progress(done, total)` follows the missing chunks.

        A batch holds at most `batch` chunks and `batch_chars` characters, and — once a batch has
        been timed — about `target_s` seconds of text at the measured pace (at least
        MIN_BATCH_CHARS, and always at least one chunk): a stop waits for one model call, and one
        model call is short whatever the chunks' length or the machine's load."""
        keys = list(dict.fromkeys((str(d), int(n)) for d, n in keys))
        if not keys:
            return Embedded({}, 0, 0, 0, "")
        found = self._load(keys)
        missing = [k for k in keys if k not in found]
        cached = len(found)
        texts = self._texts(missing) if missing else {}
        todo = longest_first_within([k for k in missing if k in texts], texts, EMBED_WINDOW)
        done, stopped, size = 0, "", max(1, int(batch))
        pace: float | None = None  # characters embedded per second, from the latest timed batch
        ask: StopFn = should_stop if should_stop is not None else (lambda: "")
        if todo and progress is not None:
            progress(0, len(todo))
        start = 0
        while start < len(todo):
            stopped = ask()
            if stopped:
                break
            limit = max(1, int(batch_chars))
            if pace is not None:
                limit = min(limit, max(MIN_BATCH_CHARS, int(pace * target_s)))
            part = _next_batch(todo, texts, start, size, limit)
            with self._lock:  # one embedding batch at a time per process; a stop waits one batch at most
                stopped = ask()  # it may have come while another thread's batch held the lock
                if stopped:
                    break
                found |= self._load(part)  # another thread may have embedded them meanwhile
                need = [k for k in part if k not in found]
                if need:
                    measured = self._embed_batch(need, texts, found)
                    if measured is not None:
                        pace = measured
            done += len(part)
            start += len(part)
            if progress is not None:
                progress(done, len(todo))
        return Embedded(found, cached, done, len(todo), stopped)

    def _embed_batch(self, need: list[Key], texts: dict[Key, str], found: dict[Key, np.ndarray]) -> float | None:
        """Embed one batch, cache it and add it to `found`; the pace it was embedded at in
        characters per second (None when it took no measurable time). The caller holds the lock."""
        chars = sum(len(texts[k]) for k in need)
        began = self.clock()
        vecs = np.asarray(self._embed([texts[k] for k in need]), dtype=np.float32).reshape(len(need), DIMENSION)
        took = self.clock() - began
        con = self._con()
        with con:
            con.executemany(
                "INSERT OR IGNORE INTO vectors VALUES (?, ?, ?)",
                [(d, n, v.tobytes()) for (d, n), v in zip(need, vecs, strict=True)],
            )
        self.embedded += len(need)
        found.update(zip(need, vecs, strict=True))
        return chars / took if took > 0 else None

    def embed_query(self, text: str) -> np.ndarray:
        """The unit-length query vector (shape `(384,)`); queries are not cached."""
        return np.asarray(self._embed([text]), dtype=np.float32).reshape(1, DIMENSION)[0]

    def best_chunk_scores(
        self,
        text: str,
        chunks: Mapping[str, Iterable[int]],
        *,
        batch: int = EMBED_BATCH,
        should_stop: StopFn | None = None,
        progress: BatchProgress | None = None,
    ) -> dict[str, float]:
        """Per document, the best cosine similarity between `text` and the given chunks of it —
        the dense index's document score, over the chunks asked for. Documents with none of the
        given chunks in the corpus are absent; blank text scores nothing."""
        return self.score_chunks(text, chunks, batch=batch, should_stop=should_stop, progress=progress)[0]

    def score_chunks(
        self,
        text: str,
        chunks: Mapping[str, Iterable[int]],
        *,
        batch: int = EMBED_BATCH,
        should_stop: StopFn | None = None,
        progress: BatchProgress | None = None,
    ) -> tuple[dict[str, float], Embedded]:
        """`best_chunk_scores` with how the embedding went (`Embedded`): a stopped loop scores the
        documents that have at least one vector, and says why it stopped."""
        keys = [(str(d), int(n)) for d, nos in chunks.items() for n in nos]
        if not keys or not text.strip():
            return {}, Embedded({}, 0, 0, 0, "")
        got = self.embed(keys, batch=batch, should_stop=should_stop, progress=progress)
        query = self.embed_query(text)
        best: dict[str, float] = {}
        for (docid, _), vec in got.vectors.items():
            score = float(vec @ query)
            if score > best.get(docid, -2.0):
                best[docid] = score
        return best, got

    def close(self) -> None:
        con = getattr(self._local, "con", None)
        if con is not None:
            con.close()
            self._local.con = None


def longest_first_within(keys: Sequence[Key], texts: Mapping[Key, str], window: int) -> list[Key]:
    """`keys` window by window in their order, each window's longest text first (ties keep their order)."""
    size = max(1, window)
    return [k for s in range(0, len(keys), size) for k in sorted(keys[s : s + size], key=lambda k: -len(texts[k]))]


def _next_batch(todo: Sequence[Key], texts: Mapping[Key, str], start: int, size: int, limit: int) -> list[Key]:
    """The chunks from `start` that fit `size` chunks and `limit` characters (at least one: a
    chunk longer than the limit is a batch of its own)."""
    end, chars = start, 0
    while end < len(todo) and end - start < size:
        n = len(texts[todo[end]])
        if end > start and chars + n > limit:
            break
        chars += n
        end += 1
    return list(todo[start:end])
