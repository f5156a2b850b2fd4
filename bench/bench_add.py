"""Adding 5 documents to an indexed collection (BM25 + dense) vs rebuilding it, in one run.

    python -m bench.bench_add [--datasets ../shared/datasets] [--docs 3204] [--repeats 2]

The first N CACM records are ingested as a collection and its dense index is built. Then,
alternating `--repeats` times: (a) `stores.collection_edits.add` of 5 new Markdown notes (a new
version: corpus rows, a BM25 index rebuilt from the corpus, the current vectors copied and only
the new chunks embedded), then `remove` of them again; (b) the full rebuild the same change
cost before: `ingest(..., force=True)` of the corpus with the 5 notes, then a dense build of
every chunk. Also timed alone: the BM25 index build of the corpus (the part of (a) that grows
with the collection). Reported: medians and the ratio rebuild / add. bench/out/bench_add.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from bench.slices import DEFAULT_DATASETS, corpus_slice
from workflows.processes.exit import run_script

REPO = Path(__file__).resolve().parents[1]
NAME = "bench-add"


T = TypeVar("T")


def timed(fn: Callable[[], T]) -> tuple[float, T]:
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", type=Path, default=DEFAULT_DATASETS)
    parser.add_argument("--docs", type=int, default=3204)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()

    from stores.collection import Collection, ingest
    from stores.collection_edits import add, remove
    from stores.dense import DenseIndex
    from stores.lucene_build import build_index

    work = Path(tempfile.mkdtemp(prefix="quarry-bench-add-"))
    home = work / "home"
    base = work / "base.jsonl"
    lines = corpus_slice(args.datasets, "cacm", args.docs, base)
    notes = work / "notes"
    notes.mkdir()
    extra = []
    for i in range(5):
        title, body = (
            f"Incremental indexing note {i}",
            f"How an inverted index absorbs new postings, variant {i}. " * 12,
        )
        (notes / f"note{i}.md").write_text(f"# {title}\n\n{body}\n", encoding="utf-8")
        extra.append(json.dumps({"_id": f"note{i}", "title": title, "text": body.strip()}))
    grown = work / "grown.jsonl"
    grown.write_text("\n".join(lines + extra) + "\n", encoding="utf-8")

    ingest(base, NAME, home=home)
    col = Collection(NAME, home)
    DenseIndex(col.paths, NAME).ensure(col.corpus)  # also loads the model: not part of any timing
    adds: list[float] = []
    rebuilds: list[float] = []
    bm25: list[float] = []
    embedded: int | None = 0
    for _ in range(args.repeats):
        seconds, report = timed(lambda: add(NAME, [notes], home=home))
        adds.append(seconds)
        embedded = report.embedded
        assert report.added == 5 and Collection(NAME, home).lucene.search("postings")
        remove(NAME, [f"note{i}" for i in range(5)], home=home)

        def rebuild() -> None:
            ingest(grown, "bench-rebuild", home=home, force=True)
            rebuilt = Collection("bench-rebuild", home)
            DenseIndex(rebuilt.paths, "bench-rebuild").build(rebuilt.corpus)

        rebuilds.append(timed(rebuild)[0])
        col = Collection(NAME, home)
        out_dir = work / f"lucene-{len(bm25)}"
        bm25.append(timed(lambda: build_index(col.corpus.iter_records(), out_dir, fingerprint="x"))[0])
    add_s, rebuild_s, bm25_s = statistics.median(adds), statistics.median(rebuilds), statistics.median(bm25)
    result = {
        "documents": len(lines),
        "added": 5,
        "embedded_chunks": embedded,
        "chunks": Collection(NAME, home).corpus.stats()["chunks"],
        "add_s": round(add_s, 2),
        "rebuild_s": round(rebuild_s, 2),
        "ratio": round(rebuild_s / add_s, 1),
        "bm25_build_s": round(bm25_s, 2),
        "repeats": args.repeats,
    }
    print(f"{len(lines)} documents ({result['chunks']} chunks) + 5 notes ({embedded} chunks embedded)")
    print(f"add 5 documents   {add_s:6.2f} s   (of which a BM25 index build of the corpus alone takes {bm25_s:.2f} s)")
    print(f"full rebuild      {rebuild_s:6.2f} s   (ingest --force + dense build)")
    print(f"rebuild / add     {rebuild_s / add_s:6.1f}x")
    out = REPO / "bench" / "out"
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_add.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    run_script(main)
