"""Chroma plumbing shared by the dense index (`stores.dense`) and its incremental update
(`stores.dense_update`): the MiniLM embedding function Chroma calls, the build sidecar
(`DenseMeta`, written atomically), the client for a local folder or a `chroma run` server, and a
build being written beside (or inside a staged version of) the current one (`NewBuild`).

Split from `stores.dense` so each stays small; `stores.dense` re-exports every name here.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
import uuid
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from chromadb import Documents, EmbeddingFunction, Embeddings
from chromadb.api.types import Space
from chromadb.config import Settings
from chromadb.utils.embedding_functions import register_embedding_function

from stores import settings
from stores.atomic import write_atomic
from stores.embedder import MODEL_NAME, embed_in_steps, embed_texts, embedding_runtime
from stores.errors import QuarryError, disk_full
from stores.records import Chunk

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

    def default_space(self) -> Space:
        return "cosine"

    def supported_spaces(self) -> list[Space]:
        return ["cosine", "ip", "l2"]

    def get_config(self) -> dict[str, Any]:
        return {"batch_size": self.batch_size}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> MiniLMEmbedding:
        return MiniLMEmbedding(batch_size=int(config.get("batch_size", 64)))


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
    runtime: str = "torch-fp32"  # how the vectors were computed (stores.embedder.embedding_runtime)

    def dump(self, folder: Path) -> None:
        write_atomic(folder / META_FILE, json.dumps(asdict(self), indent=2))

    @classmethod
    def load(cls, folder: Path, name: str = "") -> DenseMeta | None:
        """The sidecar, None when there is none, or `bad_dense_meta` when it cannot be read
        (a rebuild, `quarry index NAME --dense`, replaces it)."""
        path = folder / META_FILE
        try:
            raw = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise _bad_meta(path, name, exc) from exc
        try:
            return cls(**json.loads(raw))
        except (ValueError, TypeError) as exc:
            raise _bad_meta(path, name, exc) from exc


def _bad_meta(path: Path, name: str, exc: BaseException) -> QuarryError:
    return QuarryError(
        "bad_dense_meta",
        f"the dense index settings {path} are unreadable: {str(exc)[:200]}",
        f"rebuild the dense index: quarry index {name or 'NAME'} --dense",
    )


def chroma_server() -> tuple[str, int] | None:
    """(host, port) from `QUARRY_CHROMA_HOST`/`QUARRY_CHROMA_PORT`, or None for embedded Chroma."""
    host = settings.chroma_host()
    return (host, settings.chroma_port()) if host else None


def _server_label(server: tuple[str, int] | None) -> str | None:
    return f"{server[0]}:{server[1]}" if server else None


def _settings() -> Settings:
    return Settings(anonymized_telemetry=False)


def _http_client(server: tuple[str, int]) -> Any:
    import chromadb

    try:
        return chromadb.HttpClient(host=server[0], port=server[1], settings=_settings())
    except Exception as exc:  # chromadb raises plain ValueError/ConnectError on an unreachable server
        raise QuarryError(
            "chroma_unreachable",
            f"cannot reach the Chroma server at {server[0]}:{server[1]}: {exc}",
            "start it (chroma run --path DIR --port PORT) or unset QUARRY_CHROMA_HOST",
        ) from exc


def _persistent_client(path: Path) -> Any:
    import chromadb

    return chromadb.PersistentClient(path=str(path), settings=_settings())


@contextmanager
def disk_checked(root: Path) -> Iterator[None]:
    """Chroma's writes under `root` (a collection's folder), with a full disk as one QuarryError.

    Chroma's Rust core reports a full disk as `chromadb.errors.InternalError("… database or disk
    is full")`, with no errno for a caller to test, so it would end a build in a traceback;
    `stores.errors.disk_full` reads it. A build writes beside the current index and is swapped in
    only when complete, so the previous dense index is untouched: the message says so."""
    try:
        yield
    except QuarryError:
        raise
    except Exception as exc:
        full = disk_full(exc, home=root)
        if full is None:
            raise
        raise QuarryError(
            full.code,
            f"the dense index was not written: {full.message}; the previous dense index is unchanged",
            full.hint,
        ) from exc


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
    root: Path  # the collection's folder: where a full disk is reported

    @classmethod
    def start(
        cls,
        index_name: str,
        root: Path,
        fingerprint: str,
        batch_size: int,
        folder: Path | None = None,
        *,
        build_id: str | None = None,
    ) -> NewBuild:
        """A build in a staging folder of `root`, or (`folder`) directly in that new folder —
        the `chroma/` of a staged collection version, committed with it. `build_id` names a build
        whose server collection may exist already (a durable build's, `stores.dense_staging`,
        filled batch by batch): it is reopened, not created anew."""
        server = chroma_server()
        reuse = build_id is not None
        build_id = build_id or f"{time.strftime('%Y%m%d%H%M%S')}-{uuid.uuid4().hex[:8]}"
        name = f"{index_name}-chunks-{build_id}" if server else LOCAL_COLLECTION
        if folder is not None:
            folder.mkdir()
            staging = folder
        else:
            root.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=root))
            folder = staging / "chroma"
            folder.mkdir()
        client = None
        try:
            with disk_checked(root):
                client = _http_client(server) if server else _persistent_client(folder / f"build-{build_id}")
                ef = MiniLMEmbedding(batch_size)
                create = client.get_or_create_collection if reuse else client.create_collection
                coll = create(
                    name,
                    embedding_function=ef,
                    configuration={"hnsw": {"space": "cosine"}},
                    metadata={"quarry_collection": index_name, "fingerprint": fingerprint},
                )
        except BaseException:
            build = cls(server, build_id, name, staging, folder, client, None, None, root)  # type: ignore[arg-type]
            build.abandon()
            raise
        return cls(server, build_id, name, staging, folder, client, coll, ef, root)

    def add_chunks(self, chunks: Sequence[Chunk], on_embedded: Callable[[int], None] | None = None) -> None:
        """Embed `chunks` and add them with their line ranges. `on_embedded(n)` is told after each
        model batch (n chunks), so a long build shows progress every few seconds, not once per
        write; the chunks are still written to Chroma in one call."""
        texts = [c.text for c in chunks]
        if on_embedded is None:
            vectors = self.ef.embed(texts)
        else:
            vectors = embed_in_steps(texts, self.ef.batch_size, self.ef.embed, after=on_embedded)
        self.add_vectors(chunks, vectors)

    def add_vectors(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        """Add chunks whose vectors are already embedded (a durable build's batches), by id."""
        with disk_checked(self.root):
            add_to(self.coll, chunks, vectors)

    def meta(self, fingerprint: str, chunks: int, documents: int, started: float) -> DenseMeta:
        return DenseMeta(
            fingerprint=fingerprint,
            model=MODEL_NAME,
            chunks=chunks,
            documents=documents,
            build_id=self.build_id,
            collection=self.name,
            server=_server_label(self.server),
            built_seconds=round(time.perf_counter() - started, 3),
            runtime=embedding_runtime(),
        )

    def seal(self, meta: DenseMeta) -> None:
        """Close the client (flushing its files) and write the build's meta: ready to swap in."""
        with disk_checked(self.root):
            self.client.close()
            meta.dump(self.folder)

    def close(self) -> None:
        if self.client is not None:
            self.client.close()

    def release(self) -> None:
        """Close the build and remove its local staging folder; a server collection stays."""
        self.close()
        shutil.rmtree(self.staging, ignore_errors=True)

    def abandon(self) -> None:
        """Drop the build: its staging folder, and its collection on a server."""
        self.close()
        if self.server and self.client is not None:
            _drop_server_collection(self.server, self.name)
        shutil.rmtree(self.staging, ignore_errors=True)


def chunk_id(chunk: Chunk) -> str:
    """A chunk's id in Chroma: `docid#chunk_no`."""
    return f"{chunk.docid}#{chunk.chunk_no}"


def add_to(coll: Any, chunks: Sequence[Chunk], vectors: np.ndarray, *, upsert: bool = False) -> None:
    """Write chunks with their vectors and line ranges to a Chroma collection (`upsert`: a write
    that may repeat, as a retried batch of a durable build does)."""
    if not chunks:
        return
    write = coll.upsert if upsert else coll.add
    write(
        ids=[chunk_id(c) for c in chunks],
        embeddings=vectors,
        metadatas=[
            {"docid": c.docid, "chunk_no": c.chunk_no, "line_start": c.line_start, "line_end": c.line_end}
            for c in chunks
        ],
    )


def _drop_server_collection(server: tuple[str, int], name: str) -> None:
    """Best effort: a leftover server collection wastes space but is never read."""
    try:
        client = _http_client(server)
        try:
            client.delete_collection(name)
        finally:
            client.close()
    except Exception as exc:  # cleanup must not mask the build's own outcome
        warnings.warn(
            f"could not delete Chroma collection {name!r} at {server[0]}:{server[1]}: {exc}",
            RuntimeWarning,
            stacklevel=2,
        )
