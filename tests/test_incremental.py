"""Incremental changes: add, update, remove by content hash; exactly the changed chunks are
embedded; every store stays consistent; a change that fails midway changes nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import stores.collection as collection_module
from stores.collection import Collection, ingest
from stores.collection_edits import add, remove
from stores.dense import DenseIndex, MiniLMEmbedding
from stores.errors import QuarryError
from tests.fakes import filler, write_beir

TOPICS = ["lexical ranking", "graph mining", "protein folding", "ocean currents"]


def note(i: int, extra: str = "") -> str:
    topic = TOPICS[i % len(TOPICS)]
    return f"# Note {i} on {topic}\n\n{topic} {filler(i, 30)} {extra}\n\n{filler(i + 3, 60)}\n"


@pytest.fixture(autouse=True)
def _local_chroma(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("QUARRY_CHROMA_HOST", raising=False)
    monkeypatch.delenv("QUARRY_CHROMA_PORT", raising=False)


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every text the embedding model is asked to embed (documents' chunks; no query is run
    while it is recorded)."""
    seen: list[str] = []
    real = MiniLMEmbedding.embed

    def counting(self, texts):
        seen.extend(texts)
        return real(self, texts)

    monkeypatch.setattr(MiniLMEmbedding, "embed", counting)
    return seen


def make_collection(home: Path, folder: Path, name: str, n: int = 12) -> Collection:
    (folder / "sub").mkdir(parents=True)
    for i in range(n):
        (folder / ("sub" if i % 3 == 0 else ".") / f"n{i:02d}.md").write_text(note(i), encoding="utf-8")
    ingest(folder, name, home=home)
    col = Collection(name, home)
    DenseIndex(col.paths, name).ensure(col.corpus, batch_size=16)
    return col


def state(name: str, home: Path) -> tuple:
    """What a reader sees: version, fingerprint, BM25 ranking, dense build and its size."""
    col = Collection(name, home)
    dense = col.dense
    return (
        col.version,
        col.corpus.fingerprint,
        [(h.docid, h.score) for h in col.lucene.search("ranking")],
        dense.meta.build_id,
        dense._collection()[1].count(),
    )


def leftovers(name: str, home: Path) -> list[str]:
    return sorted(p.name for p in (home / "collections" / name).iterdir() if p.name.startswith(".staging"))


def test_adding_five_documents_embeds_exactly_their_chunks_and_search_finds_them(tmp_path: Path, spy) -> None:
    home = tmp_path / "home"
    make_collection(home, tmp_path / "notes", "inc")
    before = Collection("inc", home)
    old_chunks, old_vectors = before.dense.meta.chunks, before.dense.chunk_vectors(["n01"])["n01"]
    new = tmp_path / "new"
    new.mkdir()
    for i in range(5):
        (new / f"z{i}.md").write_text(
            f"# Zeppelin note {i}\n\nzeppelin airship hangar {filler(i, 20)}\n", encoding="utf-8"
        )
    spy.clear()
    report = add("inc", [new], home=home)
    assert (report.added, report.updated, report.kept, report.documents) == (5, 0, 12, 17)
    col = Collection("inc", home)
    new_chunks = [c.text for i in range(5) for c in col.corpus.chunks(f"z{i}")]
    assert report.embedded == len(new_chunks) and sorted(spy) == sorted(new_chunks)  # exactly their chunks
    assert col.dense.meta.chunks == old_chunks + len(new_chunks) == col.corpus.stats()["chunks"]
    # found at once, by both channels
    assert {h.docid for h in col.lucene.search("zeppelin")} == {f"z{i}" for i in range(5)}
    assert {h.docid for h in col.dense.search("zeppelin airship", k=5)} == {f"z{i}" for i in range(5)}
    # BM25 scores as a fresh ingest of all 17 does
    assert col.lucene.meta.documents == 17
    fresh_src = tmp_path / "fresh"
    shutil.copytree(tmp_path / "notes", fresh_src)
    for f in new.iterdir():
        shutil.copy(f, fresh_src / f.name)
    ingest(fresh_src, "inc-fresh", home=home)
    fresh = Collection("inc-fresh", home)
    for query in ("zeppelin airship", "lexical ranking", "ocean"):
        assert col.lucene.search(query) == fresh.lucene.search(query)
    # an unchanged document's vectors were carried over, not recomputed differently: equal up to
    # the last bit of float32 (Chroma's cosine space normalises every vector it is given again,
    # which can move a component by one unit in the last place; a re-embedding moves it by ~1e-3)
    kept = col.dense.chunk_vectors(["n01"])["n01"]
    assert [s for s, _ in kept] == [s for s, _ in old_vectors]
    for (_, a), (_, b) in zip(kept, old_vectors, strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-7)


def test_reingest_updates_only_what_changed_and_matches_a_fresh_ingest(tmp_path: Path, spy) -> None:
    home, folder = tmp_path / "home", tmp_path / "notes"
    make_collection(home, folder, "upd")
    (folder / "n01.md").write_text(note(1, "quasar telescope"), encoding="utf-8")  # changed
    (folder / "n02.md").unlink()  # removed
    (folder / "sub" / "n99.md").write_text(note(99, "nebula"), encoding="utf-8")  # new
    spy.clear()
    report = ingest(folder, "upd", home=home)
    assert (report.added, report.updated, report.removed, report.kept) == (1, 1, 1, 10)
    col = Collection("upd", home)
    changed = [c.text for d in ("n01", "sub/n99") for c in col.corpus.chunks(d)]
    assert sorted(spy) == sorted(changed) and report.embedded == len(changed)
    assert col.corpus.get("n02") is None and col.corpus.count() == 12
    assert [h.docid for h in col.lucene.search("quasar telescope")] == ["n01"]
    assert "n02" not in {h.docid for h in col.dense.search("graph mining")}
    assert col.dense.meta.chunks == col.corpus.stats()["chunks"]
    # The incremental version is the one a fresh ingest of the folder gives: same fingerprint,
    # same documents in the same order, same BM25 scores.
    ingest(folder, "fresh", home=home)
    fresh = Collection("fresh", home)
    assert col.corpus.fingerprint == fresh.corpus.fingerprint
    assert [r.docid for r in col.corpus.iter_records()] == [r.docid for r in fresh.corpus.iter_records()]
    for query in ("ranking", "quasar", "protein folding nebula"):
        assert col.lucene.search(query) == fresh.lucene.search(query)
    # and a second identical re-ingest is a no-op
    assert ingest(folder, "upd", home=home).unchanged is True


def test_added_files_inside_the_source_folder_keep_their_folder_ids(tmp_path: Path) -> None:
    home, folder = tmp_path / "home", tmp_path / "notes"
    (folder / "deep").mkdir(parents=True)
    (folder / "a.md").write_text("# A\nalpha\n", encoding="utf-8")
    ingest(folder, "ids", home=home)
    (folder / "deep" / "b.md").write_text("# B\nbeta\n", encoding="utf-8")
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("Elsewhere\ngamma\n", encoding="utf-8")
    report = add("ids", [folder / "deep" / "b.md", outside], home=home)
    assert report.added == 2
    corpus = Collection("ids", home).corpus
    assert corpus.has("deep/b") and corpus.has("elsewhere")  # what a re-ingest of the folder would name it
    again = add("ids", [folder / "deep" / "b.md"], home=home)
    assert again.unchanged is True and (again.added, again.kept) == (0, 3)


def test_add_without_a_dense_index_updates_corpus_and_bm25_only(tmp_path: Path) -> None:
    home, folder = tmp_path / "home", tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# A\nalpha\n", encoding="utf-8")
    ingest(folder, "lex", home=home)
    extra = tmp_path / "b.md"
    extra.write_text("# B\nalpha beta\n", encoding="utf-8")
    report = add("lex", [extra], home=home)
    assert report.embedded is None  # nothing to embed into
    assert {h.docid for h in Collection("lex", home).lucene.search("alpha")} == {"a", "b"}
    assert not (home / "collections" / "lex" / "chroma").exists()


def test_remove_deletes_from_every_store_and_the_citation_graph(tmp_path: Path, spy) -> None:
    home = tmp_path / "home"
    docs = [{"_id": f"d{i}", "title": f"Paper {i} on {TOPICS[i % 4]}", "text": filler(i, 40)} for i in range(6)]
    folder = write_beir(tmp_path / "beir", docs, citations=[("d0", "d1"), ("d2", "d1"), ("d2", "d3")])
    ingest(folder, "rm", home=home)
    col = Collection("rm", home)
    DenseIndex(col.paths, "rm").ensure(col.corpus)
    assert col.citations.cited_by("d1") == [("d0", 1.0), ("d2", 1.0)]
    spy.clear()
    report = remove("rm", ["d2", "d4"], home=home)
    assert (report.removed, report.kept, report.embedded) == (2, 4, 0) and spy == []
    col = Collection("rm", home)
    assert col.corpus.count() == 4 and not col.corpus.has("d2")
    assert col.corpus.citations() == [("d0", "d1")]
    assert col.citations.cited_by("d1") == [("d0", 1.0)] and not col.citations.has("d3")
    assert not {"d2", "d4"} & {h.docid for h in col.lucene.search("paper", k=10)}
    assert not {"d2", "d4"} & {h.docid for h in col.dense.search("paper", k=10)}
    assert col.dense.meta.chunks == col.corpus.stats()["chunks"]


def test_remove_of_an_unknown_id_changes_nothing(tmp_path: Path) -> None:
    home, folder = tmp_path / "home", tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# A\nalpha\n", encoding="utf-8")
    ingest(folder, "unk", home=home)
    version = Collection("unk", home).version
    with pytest.raises(QuarryError) as info:
        remove("unk", ["a", "ghost"], home=home)
    assert info.value.code == "unknown_document" and "'ghost'" in info.value.message
    assert Collection("unk", home).version == version and Collection("unk", home).corpus.has("a")
    with pytest.raises(QuarryError) as info:
        remove("unk", ["a"], home=home)  # the last document
    assert info.value.code == "empty_collection"
    assert Collection("unk", home).version == version and leftovers("unk", home) == []


@pytest.mark.parametrize("where", ["embedding", "lucene"])
def test_a_change_that_fails_midway_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    home = tmp_path / "home"
    make_collection(home, tmp_path / "notes", "boom", n=6)
    before = state("boom", home)
    new = tmp_path / "new"
    new.mkdir()
    for i in range(3):
        (new / f"x{i}.md").write_text(f"# Ranking addendum {i}\nranking {filler(i, 200)}\n", encoding="utf-8")
    if where == "embedding":
        calls = []
        real = MiniLMEmbedding.embed

        def failing(self, texts):  # the first batch is embedded and written, the second fails
            calls.append(len(texts))
            if len(calls) > 1:
                raise RuntimeError("simulated crash while embedding")
            return real(self, texts)

        monkeypatch.setattr(MiniLMEmbedding, "embed", failing)
        monkeypatch.setattr("stores.dense_update.STEP_BATCHES", 0)  # one chunk per batch: several batches
    else:

        def failing(*_a, **_k):
            raise QuarryError("index_failed", "simulated Lucene failure", "retry")

        monkeypatch.setattr(collection_module, "build_index", failing)
    with pytest.raises((RuntimeError, QuarryError)):
        add("boom", [new], home=home)
    monkeypatch.undo()
    assert state("boom", home) == before
    assert leftovers("boom", home) == []
    assert not Collection("boom", home).corpus.has("x0")
