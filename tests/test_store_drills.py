"""Drills on the stores: huge documents, writers racing readers, two writers, a worker that
outlives an ingest. Nothing may be lost silently and no reader may see a mix of versions."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from nodes.job.runtime import NodeRuntime
from stores.collection import Collection, ingest
from stores.errors import IngestError, QuarryError
from stores.file_formats.corpus_reader import MAX_DOCUMENT_CHARS
from stores.home import collection_paths
from stores.locks import writer_lock
from stores.lucene_build import build_index
from stores.records import DocRecord
from tests.fakes import topic_docs, write_jsonl


def test_a_huge_document_is_refused_with_its_reason(tmp_path: Path) -> None:
    big = {"_id": "huge", "title": "big", "text": "word " * (MAX_DOCUMENT_CHARS // 5 + 10)}
    src = write_jsonl(tmp_path / "big.jsonl", [*topic_docs(3), big])
    with pytest.raises(IngestError) as info:
        ingest(src, "huge", home=tmp_path / "home")
    assert info.value.problems == [
        f"{src}:4: document 'huge' has {len(big['title']) + len(big['text'].strip()):,} characters; Quarry indexes "
        f"documents of up to {MAX_DOCUMENT_CHARS:,} characters: split it into several documents"
    ]
    assert not collection_paths("huge", tmp_path / "home").corpus_db.exists()


def test_an_index_that_lost_documents_is_never_taken_for_complete(tmp_path: Path) -> None:
    """Anserini skips what it cannot read (here a 21 M-character document and, with it, the rest of
    its shard) and exits 0: the build must fail instead of yielding a partial index."""
    records = [DocRecord(docid=f"d{i}", title=f"doc {i}", text="retrieval") for i in range(5)]
    records.insert(2, DocRecord(docid="giant", title="giant", text="x" * 21_000_000))
    with pytest.raises(QuarryError) as info:
        build_index(records, tmp_path / "idx", fingerprint="f", threads=1)
    assert info.value.code == "index_incomplete" and "20000000" in info.value.message.replace(",", "")


def test_searches_racing_a_reingest_see_one_whole_version(tmp_path: Path) -> None:
    home = tmp_path / "home"
    old = [{"_id": f"old{i}", "title": f"old retrieval {i}", "text": "retrieval notes"} for i in range(30)]
    new = [{"_id": f"new{i}", "title": f"new retrieval {i}", "text": "retrieval notes"} for i in range(30)]
    ingest(write_jsonl(tmp_path / "v1.jsonl", old), "race", home=home)
    stop = threading.Event()
    seen: list[str] = []
    errors: list[BaseException] = []

    def reader() -> None:
        while not stop.is_set():
            try:
                col = Collection("race", home)
                hits = col.lucene.search("retrieval", k=100)
                titles = col.corpus.titles([h.docid for h in hits])
                prefixes = {h.docid[:3] for h in hits}
                assert len(prefixes) == 1 and len(hits) == 30, prefixes
                assert all(titles.get(h.docid, "").startswith(h.docid[:3]) for h in hits), "a blank or foreign title"
                seen.append(prefixes.pop())
            except BaseException as exc:  # collected and re-raised in the test thread
                errors.append(exc)
                return

    with ThreadPoolExecutor(3) as pool:
        futures = [pool.submit(reader) for _ in range(3)]
        for n in range(3):
            ingest(write_jsonl(tmp_path / f"v{n}.jsonl", new if n % 2 == 0 else old), "race", home=home)
        ingest(write_jsonl(tmp_path / "final.jsonl", new), "race", home=home)
        stop.set()
        for f in futures:
            f.result()
    assert not errors, errors[0]
    assert "old" in seen and "new" in seen
    assert Collection("race", home).corpus.get("new1") is not None


def test_a_second_writer_is_refused_while_one_holds_the_collection(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ingest(write_jsonl(tmp_path / "a.jsonl", topic_docs(4)), "busy", home=home)
    before = Collection("busy", home).version
    root = collection_paths("busy", home).root
    # the lock stands for an ingest in progress
    with writer_lock(root, "busy"), pytest.raises(QuarryError) as info:
        ingest(write_jsonl(tmp_path / "b.jsonl", topic_docs(6)), "busy", home=home)
    assert info.value.code == "collection_busy" and "process " in info.value.message
    assert "wait for that ingest" in info.value.hint
    assert Collection("busy", home).version == before and Collection("busy", home).corpus.count() == 4
    ingest(write_jsonl(tmp_path / "b.jsonl", topic_docs(6)), "busy", home=home)  # free again
    assert Collection("busy", home).corpus.count() == 6


def test_a_running_worker_sees_a_new_version_and_a_job_keeps_its_own(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ingest(write_jsonl(tmp_path / "a.jsonl", [{"_id": "a1", "title": "alpha retrieval"}]), "live", home=home)
    rt = NodeRuntime(home)
    first = rt.collection("live")
    job = {"collection": "live", "collection_version": first.version, "job_id": "j", "stats": {}}
    assert [h.docid for h in rt.collection(job).lucene.search("retrieval")] == ["a1"]
    ingest(write_jsonl(tmp_path / "b.jsonl", [{"_id": "b1", "title": "beta retrieval"}]), "live", home=home)
    assert [h.docid for h in rt.collection("live").lucene.search("retrieval")] == ["b1"], (
        "new jobs read the new version"
    )
    assert [h.docid for h in rt.collection(job).lucene.search("retrieval")] == ["a1"], "a running job keeps its version"
    tools = rt.tools({"collection": "live", "job_id": "j2", "stats": {}})
    assert tools.session.corpus.get_many(["a1", "b1"]).keys() == {"b1"}


def test_a_failed_first_write_leaves_no_folder_and_a_relock_finds_the_lock_at_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failed first ingest drops the collection folder it made (nothing but the lock was left);
    one that existed stays. A writer whose lock file was removed between its open and its lock (the
    folder dropped so by another) locks the file at the path instead of a deleted one."""
    import fcntl
    import os

    new, old = tmp_path / "new", tmp_path / "old"
    old.mkdir()
    for root in (new, old):
        with pytest.raises(RuntimeError), writer_lock(root, root.name, drop_if_new=True):
            raise RuntimeError("the ingest failed")
    assert not new.exists() and old.is_dir()

    real_flock, dropped = fcntl.flock, []

    def flock_after_a_drop(fd: int, op: int) -> None:
        if not dropped:  # another writer removes the folder between this one's open and its lock
            dropped.append(True)
            os.unlink(new / ".lock")
            os.rmdir(new)
        real_flock(fd, op)

    monkeypatch.setattr(fcntl, "flock", flock_after_a_drop)
    with writer_lock(new, "new"):
        assert (new / ".lock").read_text() == f"process {os.getpid()}"
        with pytest.raises(QuarryError, match="being written"), writer_lock(new, "new"):
            pass
    assert dropped
