"""Ingest and collections: all-or-nothing replacement, idempotence, names, missing/stale indexes."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest

import stores.collection as collection_module
from stores.collection import Collection, ingest, reindex
from stores.errors import IngestError, QuarryError
from stores.lucene import DEFAULT_B, DEFAULT_K1, IndexMeta
from tests.fakes import filler, long_doc, topic_docs, write_beir, write_jsonl

QUERY = "retrieval"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ingest-home")


@pytest.fixture(scope="module")
def src(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ingest-src")


def snapshot(name: str, home: Path) -> tuple[str, int, list[tuple[str, float]]]:
    """What a reader sees of a collection: fingerprint, size and the full ranking for QUERY."""
    col = Collection(name, home)
    return col.corpus.fingerprint, col.corpus.count(), [(h.docid, h.score) for h in col.lucene.search(QUERY)]


def leftovers(name: str, home: Path) -> list[str]:
    root = home / "collections" / name
    return sorted(p.name for p in root.iterdir() if p.name.startswith(".staging") or p.name.endswith(".old"))


@pytest.fixture(scope="module")
def base(home: Path, src: Path) -> Path:
    """Collection `base`: 20 topic documents, indexed once for the read-mostly tests below."""
    path = write_jsonl(src / "base.jsonl", topic_docs(20))
    report = ingest(path, "base", home=home)
    assert (report.documents, report.unchanged, report.indexed) == (20, False, True)
    return path


def test_ingest_then_search_finds_every_document(base: Path, home: Path) -> None:
    fingerprint, count, ranking = snapshot("base", home)
    assert count == 20
    assert sorted(d for d, _ in ranking) == [f"t{i:03d}" for i in range(1, 21)]
    assert len(fingerprint) == 64


def test_bad_reingest_changes_nothing(base: Path, home: Path, src: Path) -> None:
    before = snapshot("base", home)
    bad = write_jsonl(src / "bad.jsonl", [{"_id": "new1", "title": "brand new retrieval"}, {"_id": "x", "title": 3}])
    with pytest.raises(IngestError) as info:
        ingest(bad, "base", home=home)
    assert any(p.startswith(f"{bad}:2: ") for p in info.value.problems)
    assert snapshot("base", home) == before
    assert Collection("base", home).corpus.get("new1") is None
    assert leftovers("base", home) == []


def test_a_bad_source_read_in_one_pass_fails_with_every_problem_and_changes_nothing(
    base: Path, home: Path, src: Path
) -> None:
    """A new collection (or --force) is validated in the pass that stores and indexes it: good
    records before and after the bad ones do not make it in, every problem is named (not only the
    first), the BEIR extras are checked too, and neither a collection, a staging folder nor an
    indexer is left behind; --force over a collection leaves it as it was."""
    rows = [*topic_docs(20)[:6], {"_id": "x", "title": 3}, *topic_docs(20)[6:9], {"_id": "t001", "title": "dup"}]
    folder = write_beir(src / "bad-beir", rows, queries={"q1": "retrieval"}, qrels={"test": [("q1", "t001", 1)]})
    with (folder / "queries.jsonl").open("a", encoding="utf-8") as fh:
        fh.write('{"_id": "q2"}\n')
    before = snapshot("base", home)
    fresh = home.parent / "one-pass-fresh"
    for name, where, force in (("new", fresh, False), ("base", home, True)):
        with pytest.raises(IngestError) as info:
            ingest(folder, name, home=where, force=force)
        problems = info.value.problems
        assert len(problems) == 3, problems
        assert problems[0].startswith(f"{folder / 'corpus.jsonl'}:7: ") and "title must be a string" in problems[0]
        assert problems[1].startswith(f"{folder / 'corpus.jsonl'}:11: ") and "duplicate document id" in problems[1]
        assert problems[2].startswith(f"{folder / 'queries.jsonl'}:2: ")
    assert not (fresh / "collections" / "new" / "CURRENT").exists()
    assert snapshot("base", home) == before and leftovers("base", home) == []
    assert not [p for p in (fresh / "collections" / "new").glob("*") if p.name.startswith(".staging")]


def test_a_new_collection_reads_its_file_once(src: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Validating, storing and indexing a new collection (or --force) is one read of the file; a
    re-ingest into an existing collection reads it to validate, then again to compare and store."""
    path = write_jsonl(src / "once.jsonl", topic_docs(20))
    opened: list[Path] = []
    real_open = Path.open

    def counting_open(self: Path, *args, **kwargs):
        if self == path:
            opened.append(self)
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", counting_open)
    reads = []
    for force, docs in ((False, 19), (True, 20), (False, 21)):
        write_jsonl(path, topic_docs(docs))
        opened.clear()
        ingest(path, "once", home=tmp_path, force=force)
        reads.append(len(opened))
    assert reads == [1, 1, 2]
    assert Collection("once", tmp_path).corpus.count() == 21


def test_failed_index_build_keeps_the_old_corpus(
    base: Path, home: Path, src: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = snapshot("base", home)
    changed = write_jsonl(src / "changed-fails.jsonl", topic_docs(5))

    def broken_build(*args, **kwargs):
        raise QuarryError("index_failed", "simulated Lucene failure", "retry")

    monkeypatch.setattr(collection_module, "build_index", broken_build)
    with pytest.raises(QuarryError) as info:
        ingest(changed, "base", home=home)
    assert info.value.code == "index_failed"
    assert snapshot("base", home) == before
    assert leftovers("base", home) == []


@pytest.mark.parametrize("force", [False, True])
def test_a_source_changed_during_the_ingest_changes_nothing(
    base: Path, home: Path, src: Path, force: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Into an existing collection, records are read from the file again when they are compared,
    stored and indexed, not kept from the validating pass; a file that changed in between fails the
    ingest before its commit. A new collection (or --force) is read once — validated as it is
    stored and indexed — so what that one pass read is what is committed, corpus and index alike."""
    before = snapshot("base", home)
    grows = write_jsonl(src / f"grows-{force}.jsonl", topic_docs(20)[:12])
    read = collection_module.read_corpus

    def read_then_append(*args, **kwargs):
        source = read(*args, **kwargs)
        with grows.open("a", encoding="utf-8") as fh:
            fh.write('{"_id": "late", "title": "written after validation"}\n')
        return source

    if not force:
        monkeypatch.setattr(collection_module, "read_corpus", read_then_append)
        with pytest.raises(IngestError) as info:
            ingest(grows, "base", home=home)
        assert info.value.problems == [f"{grows}: the file changed while it was being ingested"]
        assert snapshot("base", home) == before and Collection("base", home).corpus.get("late") is None
        assert leftovers("base", home) == []
        return
    forced, fresh = home.parent / "forced", home.parent / "fresh"
    ingest(write_jsonl(src / "first.jsonl", topic_docs(2)), "forced", home=forced)
    monkeypatch.setattr(collection_module, "read_corpus", read_then_append)
    for name, where in (("forced", forced), ("fresh", fresh)):  # --force over a collection, and a new one
        write_jsonl(grows, topic_docs(3))  # "late" is appended once the ingest has opened it, before its pass
        report = ingest(grows, name, home=where, force=name == "forced")
        col = Collection(name, where)
        assert report.documents == 4 == col.corpus.stats()["documents"] and col.corpus.get("late") is not None
        assert IndexMeta.load(col.paths.lucene_dir).documents == 4
        assert [h.docid for h in col.lucene.search("written after validation", k=1)] == ["late"]
        assert leftovers(name, where) == []


def test_a_streamed_source_fingerprints_as_its_records_did(src: Path) -> None:
    """The fingerprint of a stream (hashed while validating) is the one the records give, so
    collections ingested before streaming are still recognised as unchanged."""
    from dataclasses import replace as with_records

    from stores.corpus import source_fingerprint
    from stores.file_formats.corpus_reader import RecordStream, read_corpus

    source = read_corpus(write_jsonl(src / "fp.jsonl", topic_docs(7)))
    assert isinstance(source.records, RecordStream) and len(source.records) == 7
    held = with_records(source, records=list(source.records))
    assert [r.docid for r in held.records] == list(source.records.ids)
    assert source_fingerprint(source) == source_fingerprint(held)


def test_reingest_of_the_same_input_is_a_no_op(base: Path, home: Path) -> None:
    lucene_dir = Collection("base", home).paths.lucene_dir
    before_inode, before_fp = lucene_dir.stat().st_ino, Collection("base", home).corpus.fingerprint
    report = ingest(base, "base", home=home)
    assert report.unchanged is True and report.indexed is True and report.documents == 20
    assert Collection("base", home).corpus.fingerprint == before_fp
    assert lucene_dir.stat().st_ino == before_inode  # the index was not rebuilt


def test_collection_names_are_validated(home: Path, base: Path, tmp_path: Path) -> None:
    for name in ["../x", "a/b", "", ".hidden", "a..b", "x" * 65, "spa ce", "-dash"]:
        with pytest.raises(QuarryError) as info:
            ingest(base, name, home=home / "sub")
        assert info.value.code == "bad_name", name
        assert info.value.hint
        with pytest.raises(QuarryError) as info:
            Collection(name, home)
        assert info.value.code == "bad_name", name
    assert not (home / "sub").exists()  # nothing was written for a rejected name


def test_missing_collection(home: Path) -> None:
    with pytest.raises(QuarryError) as info:
        Collection("never-ingested", home)
    assert info.value.code == "no_collection"
    assert "quarry ingest" in info.value.hint


def test_missing_index_then_reindex(home: Path, src: Path) -> None:
    path = write_jsonl(src / "noindex.jsonl", topic_docs(6))
    report = ingest(path, "noindex", home=home, build_lucene=False)
    assert report.indexed is False
    col = Collection("noindex", home)
    assert col.corpus.count() == 6  # the corpus itself is usable
    with pytest.raises(QuarryError) as info:
        col.lucene
    assert info.value.code == "no_index" and "quarry index noindex" in info.value.hint
    meta = reindex("noindex", home=home)  # the remedy the hint names
    assert (meta.k1, meta.b, meta.documents) == (DEFAULT_K1, DEFAULT_B, 6)
    assert len(Collection("noindex", home).lucene.search(QUERY)) == 6


def test_new_documents_without_an_index_are_detected_and_reindex_repairs_it(home: Path, src: Path) -> None:
    """A new version ingested without its index never searches the old version's index."""
    v1 = write_jsonl(src / "stale-v1.jsonl", topic_docs(4))
    ingest(v1, "stale", home=home)
    v2 = write_jsonl(src / "stale-v2.jsonl", [*topic_docs(4), {"_id": "fresh", "title": "fresh retrieval notes"}])
    ingest(v2, "stale", home=home, build_lucene=False)
    with pytest.raises(QuarryError) as info:
        Collection("stale", home).lucene
    assert info.value.code == "no_index" and "quarry index stale" in info.value.hint
    reindex("stale", home=home)
    assert "fresh" in {h.docid for h in Collection("stale", home).lucene.search(QUERY)}


def test_reingest_with_changed_content_replaces_documents(home: Path, src: Path) -> None:
    v1 = write_jsonl(
        src / "swap-v1.jsonl",
        [
            {"_id": "keep", "title": "kept retrieval note", "text": "unchanged"},
            {"_id": "gone", "title": "removed retrieval note", "text": "will disappear"},
            {"_id": "edit", "title": "edited note", "text": "old wording about retrieval"},
        ],
    )
    ingest(v1, "swap", home=home, k1=1.5, b=0.6)
    v2 = write_jsonl(
        src / "swap-v2.jsonl",
        [
            {"_id": "keep", "title": "kept retrieval note", "text": "unchanged"},
            {"_id": "edit", "title": "edited note", "text": "new wording about zeppelins"},
            {"_id": "added", "title": "added retrieval note", "text": "arrived later"},
        ],
    )
    old_fp = Collection("swap", home).corpus.fingerprint
    report = ingest(v2, "swap", home=home)
    assert report.unchanged is False and report.documents == 3
    col = Collection("swap", home)
    assert col.corpus.fingerprint != old_fp
    assert col.corpus.get("gone") is None
    assert col.corpus.get("edit").text == "new wording about zeppelins"
    assert {h.docid for h in col.lucene.search(QUERY)} == {"keep", "added"}
    assert [h.docid for h in col.lucene.search("zeppelins")] == ["edit"]
    # a re-ingest keeps the BM25 parameters stored with the previous index
    assert (col.lucene.meta.k1, col.lucene.meta.b) == (1.5, 0.6)


def test_reindex_with_new_bm25_parameters_rescores_the_same_documents(home: Path, src: Path) -> None:
    # Same term frequency, different lengths: b controls how much length matters.
    docs = [{"_id": f"len{n:02d}", "title": "retrieval", "text": filler(n, n)} for n in (2, 8, 20)]
    ingest(write_jsonl(src / "params.jsonl", docs), "params", home=home)
    lucene_dir = Collection("params", home).paths.lucene_dir
    inode = lucene_dir.stat().st_ino
    default = {h.docid: h.score for h in Collection("params", home).lucene.search(QUERY)}
    # default b=0.4: shorter documents score strictly higher
    assert default["len02"] > default["len08"] > default["len20"]

    meta = reindex("params", home=home, k1=1.2, b=0.0)
    assert (meta.k1, meta.b) == (1.2, 0.0)
    assert IndexMeta.load(lucene_dir) == meta
    assert lucene_dir.stat().st_ino == inode  # same documents: parameters only, no rebuild
    no_length = {h.docid: h.score for h in Collection("params", home).lucene.search(QUERY)}
    assert set(no_length) == set(default)
    assert no_length != default
    # b=0 switches length normalisation off: equal tf gives equal scores (up to Anserini's
    # 4-decimal rounding and its 1e-6 tie-breaking perturbation)
    assert no_length["len02"] == pytest.approx(no_length["len08"], abs=1e-4)
    assert no_length["len02"] == pytest.approx(no_length["len20"], abs=1e-4)

    reindex("params", home=home, b=1.0)  # k1 is kept when not given
    full = {h.docid: h.score for h in Collection("params", home).lucene.search(QUERY)}
    assert IndexMeta.load(lucene_dir).k1 == 1.2
    assert full["len02"] / full["len20"] > default["len02"] / default["len20"]


def test_chunks_are_contiguous_and_cover_every_line(home: Path, src: Path) -> None:
    rec, lines = long_doc("book", paragraphs=120)
    short = {"_id": "short", "title": "Only a title"}
    ingest(write_jsonl(src / "chunks.jsonl", [rec, short, *topic_docs(3)]), "chunks", home=home, build_lucene=False)
    corpus = Collection("chunks", home).corpus
    assert corpus.lines("book") == lines
    for docid in ("book", "short", "t001", "t002", "t003"):
        doc_lines = corpus.lines(docid)
        chunks = corpus.chunks(docid)
        assert chunks, docid
        assert [c.chunk_no for c in chunks] == list(range(len(chunks)))
        assert chunks[0].line_start == 1 and chunks[-1].line_end == len(doc_lines)
        for prev, nxt in pairwise(chunks):
            assert nxt.line_start == prev.line_end + 1
        for c in chunks:
            assert c.line_start <= c.line_end
            assert c.text == "\n".join(doc_lines[c.line_start - 1 : c.line_end])
            assert len(c.text) <= 600
    assert len(corpus.chunks("book")) > 1


def test_quoted_chunks_leave_out_title_and_metadata_but_keep_true_line_ranges(home: Path, src: Path) -> None:
    from stores.records import quotable_chunks

    docs = [
        {
            "_id": "m",
            "title": "Dense retrieval",
            "text": "We encode passages.\nThen we search them.",
            "metadata": {"year": 2020, "authors": ["Karpukhin, V."]},
        },
        {"_id": "p", "title": "Plain", "text": "No metadata here."},
        {"_id": "t", "title": "Only a title", "metadata": {"year": 1999}},
    ]
    ingest(write_jsonl(src / "quotes.jsonl", docs), "quotes", home=home, build_lucene=False)
    corpus = Collection("quotes", home).corpus
    for docid, first_body_line in (("m", 3), ("p", 2)):
        rec, lines = corpus.get(docid), corpus.lines(docid)
        (quoted,) = quotable_chunks(rec, corpus.chunks(docid))
        assert quoted.line_start == first_body_line and quoted.line_end == len(lines)
        assert quoted.text == "\n".join(lines[first_body_line - 1 :])
        assert "year:" not in quoted.text and rec.title not in quoted.text
    # A record that is only header keeps its one chunk whole: it still has something to quote.
    assert quotable_chunks(corpus.get("t"), corpus.chunks("t")) == corpus.chunks("t")


def test_beir_ingest_stores_queries_qrels_citations_and_warnings(home: Path, src: Path) -> None:
    folder = write_beir(
        src / "beir",
        topic_docs(3),
        queries={"q1": "retrieval"},
        qrels={"test": [("q1", "t001", 1), ("q1", "nobody", 1)]},
        citations=[("t001", "t002"), ("t002", "ghost")],
    )
    report = ingest(folder, "beirx", home=home, build_lucene=False)
    assert (report.documents, report.citations, report.queries, report.splits) == (3, 1, 1, ["test"])
    assert len(report.warnings) == 2
    corpus = Collection("beirx", home).corpus
    assert corpus.queries() == {"q1": "retrieval"}
    assert corpus.qrels("test") == {"q1": {"t001": 1, "nobody": 1}}
    assert corpus.citations() == [("t001", "t002")]
    assert corpus.stats()["splits"] == ["test"]
