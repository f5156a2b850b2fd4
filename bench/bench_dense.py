"""Dense indexing overhead: Quarry's `DenseIndex.build` (read chunks from the corpus store, embed,
write to Chroma, swap in) vs a bare sentence-transformers `encode` of the same chunk texts.

    python -m bench.bench_dense [--datasets ../shared/datasets] [--docs 1500] [--repeats 2]

In one process: the first N CACM records are ingested as a collection; then, interleaved,
(a) a full dense build and (b) `SentenceTransformer.encode(texts, batch_size=64,
normalize_embeddings=True)` of exactly the chunks the build embeds, with the same model object.
Reported: the median of each and their ratio (target ≤ 1.2). bench/out/bench_dense.json.
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
TARGET_RATIO = 1.2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", type=Path, default=DEFAULT_DATASETS)
    parser.add_argument("--docs", type=int, default=1500)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    from stores.collection import Collection, ingest
    from stores.dense import DenseIndex, _model
    from stores.embedder import embed_precision

    home = Path(tempfile.mkdtemp(prefix="quarry-bench-dense-"))
    src = home / "slice.jsonl"
    lines = corpus_slice(args.datasets, "cacm", args.docs, src)
    ingest(src, "slice", home=home, build_lucene=False)
    col = Collection("slice", home)
    texts = [c.text for c in col.corpus.iter_chunks()]
    precision = embed_precision()
    model = _model(precision=precision)  # the model Quarry's build uses
    model.encode(texts[:64], batch_size=64, normalize_embeddings=True)  # warm-up
    quarry, bare = [], []
    for i in range(args.repeats):

        def build() -> None:
            started = time.perf_counter()
            DenseIndex(col.paths, "slice").build(col.corpus)
            quarry.append(time.perf_counter() - started)

        def encode() -> None:  # the same model as Quarry's build, one call over all the chunks
            started = time.perf_counter()
            model.encode(
                texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
            )
            bare.append(time.perf_counter() - started)

        (build, encode)[i % 2]()
        (encode, build)[i % 2]()
    ratio = statistics.median(quarry) / statistics.median(bare)
    out = {
        "documents": len(lines),
        "chunks": len(texts),
        "precision": precision,
        "quarry_build_s": round(statistics.median(quarry), 2),
        "bare_encode_s": round(statistics.median(bare), 2),
        "ratio": round(ratio, 3),
        "pass": ratio <= TARGET_RATIO,
    }
    print(json.dumps(out), flush=True)
    path = REPO / "bench" / "out" / "bench_dense.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    run_script(main)
