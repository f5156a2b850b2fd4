"""The semantic channel's lazy embedding: `ChunkVectors.embed` (stoppable batches of at most
BATCH_CHARS characters, longest first within windows of EMBED_WINDOW chunks, each batch written to
its SQLite cache) vs one bare `embed_texts` call over the same chunk texts.

    python -m bench.bench_chunk_vectors [--datasets ../shared/datasets] [--docs 400] [--repeats 3]

Why: a collection without a dense index (every collection right after ingest) embeds the chunks of
its best lexical hits as jobs and searches ask for them; this is the time a first job waits for
them. In one process: the first N CACM records are ingested; then, interleaved, (a) `embed` of all
their chunks into a fresh cache, in the corpus's order (as a caller hands its ranked documents), and
(b) `embed_texts` of the same texts in one call (which sorts them by length itself). Reported: the
median of each, chunks per second and their ratio. bench/out/bench_chunk_vectors.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from bench.slices import DEFAULT_DATASETS, corpus_slice
from workflows.processes.exit import run_script

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", type=Path, default=DEFAULT_DATASETS)
    parser.add_argument("--docs", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from stores.chunk_vectors import BATCH_CHARS, EMBED_BATCH, EMBED_WINDOW, ChunkVectors
    from stores.collection import Collection, ingest
    from stores.embedder import embed_precision, embed_texts

    home = Path(tempfile.mkdtemp(prefix="quarry-bench-chunk-vectors-"))
    src = home / "slice.jsonl"
    corpus_slice(args.datasets, "cacm", args.docs, src)
    ingest(src, "slice", home=home, build_lucene=False)
    col = Collection("slice", home)
    chunks = list(col.corpus.iter_chunks())
    keys = [(c.docid, c.chunk_no) for c in chunks]
    texts = [c.text for c in chunks]
    embed_texts(texts[:32], EMBED_BATCH)  # warm-up: the model loaded
    lazy, bare = [], []
    for i in range(args.repeats):

        def embed() -> None:
            with tempfile.TemporaryDirectory(dir=home) as tmp:
                started = time.perf_counter()
                done = ChunkVectors(Path(tmp) / "vectors.sqlite", col.corpus).embed(keys)
                lazy.append(time.perf_counter() - started)
                assert done.done == len(keys), done

        def one_call() -> None:
            started = time.perf_counter()
            embed_texts(texts, EMBED_BATCH)
            bare.append(time.perf_counter() - started)

        (embed, one_call)[i % 2]()
        (one_call, embed)[i % 2]()
    out = {
        "documents": args.docs,
        "chunks": len(keys),
        "chars_mean": round(sum(map(len, texts)) / max(len(texts), 1), 1),
        "precision": embed_precision(),
        "batch_chars": BATCH_CHARS,
        "window": EMBED_WINDOW,
        "embed_s": round(statistics.median(lazy), 2),
        "one_call_s": round(statistics.median(bare), 2),
        "embed_chunks_per_s": round(len(keys) / statistics.median(lazy), 1),
        "ratio": round(statistics.median(lazy) / statistics.median(bare), 3),
    }
    print(json.dumps(out), flush=True)
    path = REPO / "bench" / "out" / "bench_chunk_vectors.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    run_script(main)
