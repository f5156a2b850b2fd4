"""Corpus store reads, old layout against new (the text kept once), and whether compressing the
text would pay.

    python -m bench.bench_corpus_reads --old OLD/corpus.sqlite --new NEW/corpus.sqlite

Both stores hold the same documents (e.g. the 10k collections `bench.bench_scale` builds from
the same commit before and after the change). Timed on the same random documents, each read
warm (a first pass over them is not timed): `get_many` of 100, `lines`, `chunks_many` of 100
(what the filtered semantic channel asks for), `read_span`, `stats()`, and the first 20,000
chunks of `iter_chunks` (what a dense build reads).

Compression: every document's text of the new store is compressed with zlib (levels 1 and 6)
and, when the package is importable, zstandard (level 3); printed: the text's size against the
plain text and the store, and the cost per document to compress (paid by the store step) and to
decompress (paid by every read of a document). The figures go to bench/out/bench_corpus_reads.json.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stores.corpus import CorpusStore
from workflows.processes.exit import run_script

OUT = Path(__file__).resolve().parent / "out" / "bench_corpus_reads.json"


def per_call_ms(fn: Callable[[], object], calls: int) -> float:
    fn()  # warm: the pages and the statement cache
    began = time.perf_counter()
    fn()
    return round((time.perf_counter() - began) * 1e3 / calls, 3)


def reads(store: CorpusStore, ids: list[str]) -> dict[str, float]:
    sample = ids[:100]
    spans = [(d, 100, 400) for d in ids[:200]]
    iterated = 20_000

    def first_chunks() -> None:
        for n, _ in enumerate(store.iter_chunks()):
            if n + 1 >= iterated:
                break

    return {
        "get_many_100_ms": per_call_ms(lambda: store.get_many(sample), 1),
        "lines_ms": per_call_ms(lambda: [store.lines(d) for d in ids[:200]], 200),
        "chunks_many_100_ms": per_call_ms(lambda: store.chunks_many(sample), 1),
        "read_span_ms": per_call_ms(lambda: [store.read_span(*s) for s in spans], 200),
        "stats_ms": per_call_ms(store.stats, 1),
        "iter_chunks_20k_s": round(per_call_ms(first_chunks, 1) / 1e3, 2),
    }


def codecs() -> dict[str, tuple[Callable[[bytes], bytes], Callable[[bytes], bytes]]]:
    out: dict[str, tuple[Callable[[bytes], bytes], Callable[[bytes], bytes]]] = {
        "zlib-1": (lambda b: zlib.compress(b, 1), zlib.decompress),
        "zlib-6": (lambda b: zlib.compress(b, 6), zlib.decompress),
    }
    try:
        import zstandard  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return out
    c, d = zstandard.ZstdCompressor(level=3), zstandard.ZstdDecompressor()
    out["zstd-3"] = (c.compress, d.decompress)
    return out


def compression(db: Path, ids: list[str]) -> dict[str, Any]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    texts = [t.encode() for (t,) in con.execute("SELECT text FROM docs")]
    con.close()
    sample = [texts[i] for i in range(0, len(texts), max(1, len(texts) // 1000))]
    plain = sum(map(len, texts))
    out: dict[str, Any] = {"text_mb": round(plain / 2**20, 1), "store_mb": round(db.stat().st_size / 2**20, 1)}
    for name, (pack, unpack) in codecs().items():
        began = time.perf_counter()
        packed = [pack(t) for t in sample]
        pack_ms = (time.perf_counter() - began) * 1e3 / len(sample)
        began = time.perf_counter()
        for p in packed:
            unpack(p).decode()
        unpack_ms = (time.perf_counter() - began) * 1e3 / len(sample)
        ratio = sum(map(len, packed)) / sum(map(len, sample))
        out[name] = {
            "text_ratio": round(ratio, 3),
            "store_mb_estimate": round((db.stat().st_size - plain * (1 - ratio)) / 2**20, 1),
            "compress_ms_per_doc": round(pack_ms, 3),
            "decompress_ms_per_doc": round(unpack_ms, 3),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--old", type=Path, required=True, help="a corpus.sqlite in the old layout")
    parser.add_argument("--new", type=Path, required=True, help="the same corpus in the new layout")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    old, new = CorpusStore(args.old), CorpusStore(args.new)
    assert old.old_layout and not new.old_layout, "--old must be an old-layout store, --new a new one"
    ids = sorted(new.hashes())
    random.Random(24).shuffle(ids)
    results = {"old": reads(old, ids), "new": reads(new, ids), "compression": compression(args.new, ids)}
    print(f"{'read':<22}{'old layout':>12}{'new layout':>12}")
    for key in results["old"]:
        print(f"{key:<22}{results['old'][key]:>12}{results['new'][key]:>12}")
    print(json.dumps(results["compression"], indent=1))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    run_script(main)
