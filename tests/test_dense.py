"""Dense channel: MiniLM embeddings in Chroma, best-chunk scoring, reuse, staleness, server mode.

The fixture is 20 short documents on four unrelated topics (five each) plus one long,
multi-chunk gardening document whose only passage about penguins sits in its last chunk. No Lucene index is
built here (the dense channel does not need one), so the JVM never starts.
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

import numpy as np
import pytest

from stores.collection import Collection, ingest
from stores.dense import DenseIndex, MiniLMEmbedding, chroma_server
from stores.embedder import embed_precision
from stores.errors import QuarryError
from stores.lucene import Hit
from tests.fakes import write_jsonl

TOPICS = {
    "astro": [
        "Telescopes observe distant galaxies and measure their redshift.",
        "A supernova explosion outshines its whole galaxy for weeks.",
        "Exoplanets are detected by the dimming of their host star during a transit.",
        "Black holes bend light and swallow nearby stars.",
        "The cosmic microwave background is the afterglow of the big bang.",
    ],
    "cook": [
        "Knead the bread dough until it is smooth, then let it rise.",
        "Simmer the tomato sauce with garlic and fresh basil.",
        "Whisk eggs and sugar before folding in the flour for a sponge cake.",
        "Sear the steak in a hot cast iron pan and rest it before slicing.",
        "Caramelise onions slowly over low heat for a sweet soup.",
    ],
    "fin": [
        "Central banks raise interest rates to fight inflation.",
        "Bond yields move inversely to bond prices.",
        "Diversifying a stock portfolio reduces risk.",
        "Quarterly earnings reports move share prices sharply.",
        "Currency exchange rates depend on trade balances.",
    ],
    "bio": [
        "Proteins fold into three-dimensional shapes determined by their amino acid sequence.",
        "Enzymes catalyse chemical reactions inside living cells.",
        "DNA replication copies the genome before a cell divides.",
        "Mitochondria produce energy for the cell through respiration.",
        "Ribosomes translate messenger RNA into proteins.",
    ],
}
LONG_TAIL = "Emperor penguins huddle together on the Antarctic ice to survive the polar winter."

# On a CPU with bfloat16 products (stores.embedder's default there) each product keeps 8 bits of
# mantissa, so a vector depends on its batch's padded shape by up to ~1e-3 (cosine to fp32 ≥ 0.9999,
# tests/test_embed_precision.py); in fp32 the same text agrees to 1e-5 in any batch.
VEC_ATOL = 2e-3 if embed_precision() == "bf16" else 1e-5


def fixture_docs(changed: bool = False) -> list[dict]:
    docs = [
        {"_id": f"{topic}{i}", "title": text.split(" ")[0] + " notes", "text": text}
        for topic, texts in TOPICS.items()
        for i, text in enumerate(texts, start=1)
    ]
    filler = "\n\n".join(
        f"Paragraph {n}: gardeners water tulips, prune hedges and rake autumn leaves "
        f"in the village park on quiet mornings."
        for n in range(12)
    )
    docs.append({"_id": "long1", "title": "Gardening diary", "text": filler + "\n\n" + LONG_TAIL})
    if changed:
        docs[0] = {**docs[0], "text": "Volcanoes erupt lava and ash over the countryside."}
    return docs


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("dense-home")


@pytest.fixture(scope="module")
def col(home: Path, tmp_path_factory: pytest.TempPathFactory) -> Collection:
    src = write_jsonl(tmp_path_factory.mktemp("dense-src") / "docs.jsonl", fixture_docs())
    ingest(src, "dense", home=home, build_lucene=False)
    col = Collection("dense", home=home)
    meta, reused = DenseIndex(col.paths, col.name).ensure(col.corpus, batch_size=8)
    assert not reused and meta.chunks == len(list(col.corpus.iter_chunks()))
    return col


@pytest.fixture(autouse=True)
def _local_chroma(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("QUARRY_CHROMA_HOST", raising=False)
    monkeypatch.delenv("QUARRY_CHROMA_PORT", raising=False)


def test_embeddings_are_unit_length_and_deterministic() -> None:
    ef = MiniLMEmbedding(batch_size=4)
    texts = [t for texts in TOPICS.values() for t in texts]
    first, second = ef.embed(texts), MiniLMEmbedding(batch_size=16).embed(list(reversed(texts)))[::-1]
    assert first.shape == (len(texts), 384) and first.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(first, second, atol=VEC_ATOL)
    # Chroma's protocol: a list of vectors, and a config that rebuilds the same function
    assert len(ef(texts[:2])) == 2
    assert MiniLMEmbedding.build_from_config(ef.get_config()).batch_size == 4
    assert not ef.is_legacy() and ef.default_space() == "cosine"


@pytest.mark.parametrize(
    "query, topic",
    [
        ("galaxies, stars and telescopes in astronomy", "astro"),
        ("recipes for baking and cooking food", "cook"),
        ("interest rates, stocks and financial markets", "fin"),
        ("molecular biology of cells and proteins", "bio"),
    ],
)
def test_topic_query_ranks_topic_docs_first(col: Collection, query: str, topic: str) -> None:
    hits = col.dense.search(query, k=10)
    assert {h.docid for h in hits[:5]} == {f"{topic}{i}" for i in range(1, 6)}


def test_document_score_is_best_chunk_cosine(col: Collection) -> None:
    query = "penguins surviving the Antarctic winter"
    hits = col.dense.search(query, k=1000)
    assert len(hits) == col.corpus.count()  # every document, since 3k chunks cover them all
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert hits == sorted(hits, key=lambda h: (-h.score, h.docid))
    q = MiniLMEmbedding().embed([query])[0]
    all_chunks = list(col.corpus.iter_chunks())
    cosines = MiniLMEmbedding().embed([c.text for c in all_chunks]) @ q
    best: dict[str, float] = {}
    for chunk, cos in zip(all_chunks, cosines, strict=True):
        best[chunk.docid] = max(best.get(chunk.docid, -2.0), float(cos))
    for hit in hits:
        assert hit.score == pytest.approx(best[hit.docid], abs=max(VEC_ATOL, 1e-4)), hit.docid
    # the long gardening document ranks first by its one penguin chunk (its last), not by an average
    chunks = col.corpus.chunks("long1")
    cosines = MiniLMEmbedding().embed([c.text for c in chunks]) @ q
    assert len(chunks) > 1 and int(np.argmax(cosines)) == len(chunks) - 1
    assert hits[0].docid == "long1" and hits[0].score > float(np.mean(cosines)) + 0.1
    assert col.dense.search("   ", k=5) == [] and isinstance(hits[0], Hit)


def test_chunk_vectors_one_per_chunk_with_line_ranges(col: Collection) -> None:
    found = col.dense.chunk_vectors(["long1", "astro1", "no-such-doc"])
    assert set(found) == {"long1", "astro1"}
    for docid, items in found.items():
        chunks = col.corpus.chunks(docid)
        assert [(s.chunk_no, s.line_start, s.line_end) for s, _ in items] == [
            (c.chunk_no, c.line_start, c.line_end) for c in chunks
        ]
        expected = MiniLMEmbedding().embed([c.text for c in chunks])
        np.testing.assert_allclose(np.stack([v for _, v in items]), expected, atol=VEC_ATOL)
    assert col.dense.chunk_vectors([]) == {}
    assert col.dense.embed_query("galaxies").shape == (384,)


def test_current_index_is_reused_not_rebuilt(col: Collection, monkeypatch: pytest.MonkeyPatch) -> None:
    index = DenseIndex(col.paths, col.name)
    sidecar = col.paths.chroma_dir / "dense.json"
    before = (sidecar.stat().st_mtime_ns, index.meta)

    def no_build(*_a, **_k):
        raise AssertionError("a current dense index must not be rebuilt")

    monkeypatch.setattr(DenseIndex, "build", no_build)
    meta, reused = index.ensure(col.corpus)
    assert reused and meta == before[1]
    assert (sidecar.stat().st_mtime_ns, index.meta) == before


def test_missing_and_stale_index_errors_then_rebuild(home: Path, tmp_path: Path) -> None:
    ingest(write_jsonl(tmp_path / "v1.jsonl", fixture_docs()), "drift", home=home, build_lucene=False)
    with pytest.raises(QuarryError) as err:
        Collection("drift", home=home).dense
    assert err.value.code == "no_dense_index" and "quarry index drift --dense" in err.value.hint

    col = Collection("drift", home=home)
    index = DenseIndex(col.paths, "drift")
    old = index.build(col.corpus)
    assert index.is_current(col.corpus.fingerprint)

    # A forced re-ingest rebuilds the corpus and leaves the vectors behind (an incremental one
    # updates them: tests/test_incremental.py).
    ingest(
        write_jsonl(tmp_path / "v2.jsonl", fixture_docs(changed=True)),
        "drift",
        home=home,
        build_lucene=False,
        force=True,
    )
    col = Collection("drift", home=home)
    assert not index.is_current(col.corpus.fingerprint)
    with pytest.raises(QuarryError) as err:
        col.dense
    assert err.value.code == "stale_dense_index" and "--dense" in err.value.hint

    meta, reused = index.ensure(col.corpus)
    assert not reused and meta.build_id != old.build_id
    # the swap leaves exactly one build and no staging folder behind
    assert sorted(p.name for p in col.paths.chroma_dir.iterdir()) == ["build-" + meta.build_id, "dense.json"]
    assert not list(col.paths.root.glob(".staging-*"))
    assert Collection("drift", home=home).dense.search("volcano eruption lava", k=3)[0].docid == "astro1"


def test_a_swap_cut_between_its_renames_leaves_the_old_build_readable(home: Path, tmp_path: Path) -> None:
    """A rebuild killed after moving the current build aside and before moving the new one in
    leaves `chroma.old` and no `chroma`: the next reader puts the old build back and searches it."""
    ingest(write_jsonl(tmp_path / "cut.jsonl", fixture_docs()), "cut", home=home, build_lucene=False)
    col = Collection("cut", home=home)
    built = DenseIndex(col.paths, "cut").build(col.corpus)
    before = [h.docid for h in col.dense.search("volcano eruption lava", k=3)]
    folder = col.paths.chroma_dir
    folder.rename(folder.with_name(folder.name + ".old"))  # the state a kill between the renames leaves
    again = Collection("cut", home=home)
    assert [h.docid for h in again.dense.search("volcano eruption lava", k=3)] == before and before
    assert DenseIndex(again.paths, "cut").meta.build_id == built.build_id
    assert folder.is_dir() and not folder.with_name(folder.name + ".old").exists()


def test_server_configuration_selects_http_client(col: Collection, monkeypatch: pytest.MonkeyPatch) -> None:
    import chromadb

    calls = []

    def fake_http_client(**kwargs):
        calls.append(kwargs)
        raise ConnectionError("no server in this test")

    monkeypatch.setattr(chromadb, "HttpClient", fake_http_client)
    monkeypatch.setattr(chromadb, "PersistentClient", lambda **_: pytest.fail("must not open the local store"))
    monkeypatch.setenv("QUARRY_CHROMA_HOST", "chroma.example")
    assert chroma_server() == ("chroma.example", 8000)
    monkeypatch.setenv("QUARRY_CHROMA_PORT", "8123")
    index = DenseIndex(col.paths, col.name)
    # a local build is not current for a server configuration ...
    assert not index.is_current(col.corpus.fingerprint)
    # ... and building goes to the server, failing with a repairable error when it is down
    with pytest.raises(QuarryError) as err:
        index.build(col.corpus)
    assert err.value.code == "chroma_unreachable" and "QUARRY_CHROMA_HOST" in err.value.hint
    assert calls and calls[0]["host"] == "chroma.example" and calls[0]["port"] == 8123
    assert calls[0]["settings"].anonymized_telemetry is False
    assert index.meta is not None and index.meta.server is None  # the local build stays current for local use


def test_real_chroma_server(
    home: Path, tmp_path: Path, chroma_server_proc: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    import chromadb
    from chromadb.config import Settings

    monkeypatch.setenv("QUARRY_CHROMA_HOST", "127.0.0.1")
    monkeypatch.setenv("QUARRY_CHROMA_PORT", str(chroma_server_proc))
    ingest(write_jsonl(tmp_path / "srv.jsonl", fixture_docs()), "srv", home=home, build_lucene=False)
    col = Collection("srv", home=home)
    index = DenseIndex(col.paths, "srv")
    first, reused = index.ensure(col.corpus)
    assert not reused and first.server == f"127.0.0.1:{chroma_server_proc}"
    assert first.collection.startswith("srv-chunks-")
    assert {h.docid for h in col.dense.search("recipes for baking and cooking food", k=5)} == {
        f"cook{i}" for i in range(1, 6)
    }
    assert len(col.dense.chunk_vectors(["long1"])["long1"]) == len(col.corpus.chunks("long1"))
    assert index.ensure(col.corpus)[1]  # reused

    second = index.build(col.corpus)  # a forced rebuild replaces the server collection
    client = chromadb.HttpClient(
        host="127.0.0.1", port=chroma_server_proc, settings=Settings(anonymized_telemetry=False)
    )
    try:
        names = {c.name for c in client.list_collections()}
    finally:
        client.close()
    assert second.collection in names and first.collection not in names
    assert col.dense.search("recipes for baking and cooking food", k=1)[0].docid.startswith("cook")
    # the local sidecar only: no local Chroma files in server mode
    assert sorted(p.name for p in col.paths.chroma_dir.iterdir()) == ["dense.json"]
    assert os.environ["QUARRY_CHROMA_HOST"] == "127.0.0.1"


def test_evidence_keeps_the_best_chunks_per_item_with_line_ranges(col: Collection) -> None:
    """Top-m evidence (m=2) with real vectors: the best chunk is quoted and scored, the runner-up
    kept as a line range and quoted from the store when a result is built."""
    from nodes.job.results import _quotes
    from nodes.policy.heuristic import HeuristicPolicy
    from nodes.policy.seam import JudgeInput
    from stores.records import quotable_chunks
    from stores.spans import DocumentText

    rec, lines = col.corpus.get("long1"), col.corpus.lines("long1")
    chunks = quotable_chunks(rec, col.corpus.chunks("long1"))
    assert len(chunks) >= 3
    item = {"id": "c1", "kind": "topic", "text": "penguins surviving the Antarctic winter", "weight": 1.0}
    dense = col.dense
    (judged,) = HeuristicPolicy().judge(
        {"checklist": [item]},
        [JudgeInput(rec, chunks, 0.5, dense.chunk_vectors(["long1"])["long1"])],
        {"c1": dense.embed_query(item["text"])},
    )
    (ev,) = judged.evidence
    assert "penguins" in ev["chunk"] and ev["line_end"] == len(lines)
    (runner,) = ev["also"]
    assert runner["line_end"] < ev["line_start"]
    (quote,) = _quotes(DocumentText.of(lines), ev["also"])
    assert quote["lines"] == [runner["line_start"], runner["line_end"]] and quote["score"] == runner["score"]
    assert quote["chunk"] and quote["chunk"] in " ".join(
        " ".join(lines[runner["line_start"] - 1 : runner["line_end"]]).split()
    )
    assert col.corpus.read_span("long1", *quote["chars"]) == quote["quote"]


# -- progress of a long build: the store reports, the command line renders --------------------------


def _hashed(texts, batch_size: int = 64) -> np.ndarray:
    """A stand-in for MiniLM: a unit vector per text from its hash (no model, milliseconds)."""
    import hashlib

    rows = []
    for t in texts:
        seed = int.from_bytes(hashlib.sha1(t.encode()).digest()[:4], "little")
        v = np.random.default_rng(seed).standard_normal(384).astype(np.float32)
        rows.append(v / np.linalg.norm(v))
    return np.stack(rows) if rows else np.zeros((0, 384), dtype=np.float32)


def test_a_build_reports_progress_after_every_model_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Progress ticks come per model batch (8 chunks here), not once per 4-batch write, and end
    at the total; the store prints nothing."""
    from stores import chroma_build

    monkeypatch.setattr(chroma_build, "embed_texts", _hashed)
    ingest(write_jsonl(tmp_path / "docs.jsonl", fixture_docs()), "ticks", home=tmp_path / "h", build_lucene=False)
    col = Collection("ticks", home=tmp_path / "h")
    total = len(list(col.corpus.iter_chunks()))
    seen: list[tuple[str, int, int]] = []
    DenseIndex(col.paths, "ticks").build(col.corpus, batch_size=8, progress=lambda *a: seen.append(a))
    assert seen[0] == ("embedding", 0, total) and seen[-1] == ("embedding", total, total)
    dones = [d for _, d, _ in seen]
    assert total > 8 and dones == sorted(dones) and all(b - a <= 8 for a, b in itertools.pairwise(dones)), dones
    # embedded longest first (less padding per model batch), yet every vector is its own chunk's
    stored = Collection("ticks", home=tmp_path / "h").dense.chunk_vectors([d["_id"] for d in fixture_docs()])
    for docid, items in stored.items():
        texts = [c.text for c in col.corpus.chunks(docid)]
        np.testing.assert_allclose(np.stack([v for _, v in items]), _hashed(texts), atol=1e-6, err_msg=docid)
    assert sum(len(items) for items in stored.values()) == total


def test_plain_progress_lines_every_ten_percent_or_ten_seconds_with_rate_and_time_left() -> None:
    from quarry.cli.embedding_progress import PlainProgress

    now = [0.0]
    lines: list[str] = []
    show = PlainProgress(lines.append, clock=lambda: now[0])
    for done in range(0, 1001, 5):  # 1,000 chunks at 50 chunks/s: a tick every 0.1 s
        now[0] = done / 50
        show("embedding", done, 1000)
    assert lines[0].startswith("embedding 0/1,000 chunks (0%)")
    assert len(lines) == 11 and lines[-1].startswith("embedding 1,000/1,000 chunks (100%)"), lines
    assert "embedding 500/1,000 chunks (50%) · 50.0 chunks/s · about 10 s left" in lines
    slow, lines[:] = PlainProgress(lines.append, clock=lambda: now[0]), []
    for done in range(6):  # 5 % in 60 s: a line every 10 s although no 10 % step is crossed
        now[0] = done * 12.0
        slow("embedding", done, 100)
    assert len(lines) == 6 and "about 19 min 00 s left" in lines[-1], lines


def test_a_terminal_shows_a_bar_with_count_rate_and_time_left() -> None:
    import io

    from rich.console import Console

    from quarry.cli.embedding_progress import embedding_progress

    now = [0.0]
    console = Console(file=io.StringIO(), force_terminal=True, width=120, color_system=None)
    with embedding_progress(to=console, clock=lambda: now[0]) as show:
        for done in range(0, 601, 60):
            now[0] = done / 30
            show("embedding", done, 1200)
    text = console.file.getvalue()
    assert "600/1200" in text and "chunks/s" in text and "ETA" in text and "0:00:20" in text, text[-400:]


def test_quarry_index_dense_shows_progress_in_a_log_and_nothing_with_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Piped (stderr not a terminal) `quarry index NAME --dense` prints progress lines; with
    --json nothing but the JSON."""
    from typer.testing import CliRunner

    from quarry.cli import app
    from stores import chroma_build

    monkeypatch.setattr(chroma_build, "embed_texts", _hashed)
    home = tmp_path / "home"
    monkeypatch.setenv("QUARRY_HOME", str(home))
    ingest(write_jsonl(tmp_path / "docs.jsonl", fixture_docs()), "logged", home=home, build_lucene=False)
    total = len(list(Collection("logged", home=home).corpus.iter_chunks()))
    res = CliRunner().invoke(app, ["--home", str(home), "index", "logged", "--dense"])
    assert res.exit_code == 0, res.output
    lines = [line for line in res.stderr.splitlines() if line.startswith("embedding ")]
    assert lines[0].startswith(f"embedding 0/{total} chunks (0%)"), res.stderr
    assert lines[-1].startswith(f"embedding {total}/{total} chunks (100%)") and "dense index" in lines[-1], res.stderr
    ingest(write_jsonl(tmp_path / "docs2.jsonl", fixture_docs(changed=True)), "quiet", home=home, build_lucene=False)
    res = CliRunner().invoke(app, ["--home", str(home), "index", "quiet", "--dense", "--json"])
    assert res.exit_code == 0, res.output
    assert res.stderr.strip() == "", res.stderr
    assert json.loads(res.stdout.strip().splitlines()[-1])["dense"]["reused"] is False
