"""Faults in the stores (issue 19, items 1, 4, 7, 9): a kill at the metadata write, readers racing
it, versions pinned by jobs across `add` and killed ingests, a kill between corpus and vectors,
collections in the layouts of older Quarry versions, the indexer JVM of a killed ingest, a full
disk under Lucene. Kills are real SIGKILLs of real processes at chosen points."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from nodes.job.runtime import NodeRuntime
from stores.collection import Collection, ingest, reindex
from stores.collection_edits import add, remove
from stores.dense import DenseIndex
from stores.errors import QuarryError
from stores.home import CURRENT_FILE, VERSIONS_DIR, collection_paths
from stores.jobs import JobStore
from stores.lucene import META_FILE, IndexMeta
from tests.fakes import filler, topic_docs, write_jsonl

REPO = Path(__file__).resolve().parent.parent
QUARRY = Path(sys.executable).parent / "quarry"


@pytest.fixture(autouse=True)
def _local_chroma(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("QUARRY_CHROMA_HOST", raising=False)
    monkeypatch.delenv("QUARRY_CHROMA_PORT", raising=False)


def wait_for(condition, what: str, deadline: float = 30.0, every: float = 0.02):
    """Poll `condition` until it returns something truthy, for at most `deadline` seconds."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        value = condition()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"not within {deadline} s: {what}")


# A child process that runs one store operation and SIGKILLs itself at a chosen point:
#   before/after  -- around the os.replace that writes the file named TARGET (CURRENT: the switch)
#   staging       -- when the BM25 build of the staged version starts
CHILD = r"""
import json, os, signal, sys
from pathlib import Path
point, target, op, args = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
real = os.replace
def replace(src, dst, *a, **k):
    if Path(dst).name == target and point == "before":
        os.kill(os.getpid(), signal.SIGKILL)
    out = real(src, dst, *a, **k)
    if Path(dst).name == target and point == "after":
        os.kill(os.getpid(), signal.SIGKILL)
    return out
os.replace = replace
import stores.collection as c
import stores.collection_edits as edits
if point == "staging":
    def die(*_a, **_k):
        os.kill(os.getpid(), signal.SIGKILL)
    c.build_index = die
home = Path(args.pop("home"))
if op == "ingest":
    c.ingest(args["path"], args["name"], home=home, force=args.get("force", False))
elif op == "add":
    edits.add(args["name"], args["paths"], home=home)
print("finished without being killed")
"""


def killed(point: str, op: str, target: str = CURRENT_FILE, **args) -> None:
    """Run `op` in a child process that is SIGKILLed at `point`; assert it was."""
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, point, target, op, json.dumps(args, default=str)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env={k: v for k, v in os.environ.items() if not k.startswith("QUARRY_CHROMA")},
    )
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, proc.stdout, proc.stderr[-2000:])


def note(i: int, topic: str = "lexical ranking") -> str:
    return f"# Note {i} on {topic}\n\n{topic} {filler(i, 30)}\n\n{filler(i + 3, 50)}\n"


def dense_collection(home: Path, folder: Path, name: str, n: int = 8) -> Collection:
    folder.mkdir(parents=True)
    for i in range(n):
        (folder / f"n{i:02d}.md").write_text(note(i), encoding="utf-8")
    ingest(folder, name, home=home)
    col = Collection(name, home)
    DenseIndex(col.paths, name).ensure(col.corpus, batch_size=16)
    return Collection(name, home)


def zeppelins(folder: Path, n: int = 3) -> Path:
    folder.mkdir(parents=True)
    for i in range(n):
        (folder / f"z{i}.md").write_text(
            f"# Zeppelin note {i}\n\nzeppelin airship hangar {filler(i, 20)}\n", encoding="utf-8"
        )
    return folder


def version_dirs(home: Path, name: str) -> set[str]:
    return {p.name for p in (home / "collections" / name / VERSIONS_DIR).iterdir() if p.is_dir()}


def staging_dirs(home: Path, name: str) -> list[str]:
    return [p.name for p in (home / "collections" / name).iterdir() if p.name.startswith(".staging")]


# -- item 1: the metadata write ------------------------------------------------------------------


def test_index_settings_read_while_rewritten_are_always_whole(tmp_path: Path) -> None:
    """Readers load `quarry-index.json` while a writer rewrites it (what `quarry index N --k1`
    and `tune --apply` do to a live index): no load may fail or see a mix."""
    folder = tmp_path / "lucene"
    folder.mkdir()
    metas = [
        IndexMeta(k1=float(k1), b=0.4, fingerprint="f" * 64, documents=k1, built_seconds=1.0) for k1 in range(1, 6)
    ]
    metas[0].dump(folder)
    stop, failures, loads = threading.Event(), [], [0]

    def reader() -> None:
        while not stop.is_set():
            try:
                meta = IndexMeta.load(folder)
                assert meta.documents == int(meta.k1), meta
                loads[0] += 1
            except Exception as exc:
                failures.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        for n in range(1500):
            metas[n % len(metas)].dump(folder)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not failures, f"{len(failures)} of {len(failures) + loads[0]} loads failed: {failures[0]!r}"
    assert loads[0] > 0
    assert [p.name for p in folder.iterdir()] == [META_FILE], "no temporary file is left behind"


@pytest.mark.parametrize("damage", ["", '{"k1": 0.9, "b"'], ids=["empty", "garbage"])
def test_a_kill_at_the_metadata_write_is_reported_and_repaired(tmp_path: Path, damage: str) -> None:
    """The file a kill inside an in-place rewrite leaves (empty, or cut) gives one error with a
    code and a hint, never a traceback; `ingest --force` and `quarry index NAME` repair it."""
    home = tmp_path / "home"
    src = write_jsonl(tmp_path / "docs.jsonl", topic_docs(6))
    ingest(src, "meta", home=home)
    expected = [h.docid for h in Collection("meta", home).lucene.search("retrieval")]
    meta_file = Collection("meta", home).paths.lucene_dir / META_FILE
    meta_file.write_text(damage)

    proc = subprocess.run(
        [str(QUARRY), "--home", str(home), "search", "meta", "retrieval"], capture_output=True, text=True, timeout=300
    )
    said = " ".join(proc.stderr.split())
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in said and proc.stderr.count("error") == 1
    assert "bad_index_meta" in said and "quarry index meta" in said
    with pytest.raises(QuarryError) as info:
        Collection("meta", home).lucene
    assert info.value.code == "bad_index_meta" and "quarry index meta" in info.value.hint

    report = ingest(src, "meta", home=home, force=True)
    assert report.indexed and [h.docid for h in Collection("meta", home).lucene.search("retrieval")] == expected

    Collection("meta", home).paths.lucene_dir.joinpath(META_FILE).write_text(damage)
    reindex("meta", home=home, k1=1.1)  # `quarry index meta --k1 1.1` rebuilds what it cannot read
    col = Collection("meta", home)
    assert col.lucene.meta.k1 == 1.1 and [h.docid for h in col.lucene.search("retrieval", k1=0.9, b=0.4)] == expected
    proc = subprocess.run(
        [str(QUARRY), "--home", str(home), "search", "meta", "retrieval"], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr


def test_an_unreadable_tuning_record_is_one_error(tmp_path: Path) -> None:
    from tuning.grid import TUNED_FILE, load_tuned

    home = tmp_path / "home"
    ingest(write_jsonl(tmp_path / "d.jsonl", topic_docs(3)), "tuned", home=home, build_lucene=False)
    col = Collection("tuned", home)
    col.paths.runs_dir.mkdir(parents=True)
    (col.paths.runs_dir / TUNED_FILE).write_text("")
    with pytest.raises(QuarryError) as info:
        load_tuned(col)
    assert info.value.code == "bad_tuning" and "quarry tune tuned" in info.value.hint


# -- item 4a: the dense index of a pinned version ------------------------------------------------


def test_a_job_pinned_before_add_never_reads_the_new_vectors(tmp_path: Path) -> None:
    home = tmp_path / "home"
    dense_collection(home, tmp_path / "notes", "pin")
    rt = NodeRuntime(home)
    first = rt.collection("pin")
    job = {"collection": "pin", "collection_version": first.version, "job_id": "j", "stats": {}}
    chunks_a = first.dense.meta.chunks
    assert chunks_a == first.corpus.stats()["chunks"]

    add("pin", [zeppelins(tmp_path / "z")], home=home)
    assert Collection("pin", home).version != first.version
    pinned = rt.collection(job)
    assert pinned.version == first.version
    hits = pinned.dense.search("zeppelin airship hangar", k=20)
    assert hits and all(pinned.corpus.has(h.docid) for h in hits), "a semantic hit the pinned version lacks"
    assert not {h.docid for h in hits} & {"z0", "z1", "z2"}
    assert pinned.dense.meta.chunks == chunks_a and pinned.dense.meta.fingerprint == pinned.corpus.fingerprint
    current = rt.collection("pin")
    assert {"z0", "z1", "z2"} <= {h.docid for h in current.dense.search("zeppelin airship hangar", k=5)}

    remove("pin", ["n01"], home=home)  # the removed document's vectors leave the new version only
    assert "n01" not in {h.docid for h in Collection("pin", home).dense.search("lexical ranking", k=50)}
    assert "n01" in {h.docid for h in rt.collection(job).dense.search("lexical ranking", k=50)}


# -- item 4b: versions left by killed ingests, versions pinned by running jobs -------------------


def test_killed_ingests_never_count_and_running_jobs_keep_their_versions(tmp_path: Path) -> None:
    home = tmp_path / "home"
    name = "prune"
    srcs = [
        write_jsonl(
            tmp_path / f"v{i}.jsonl",
            [{"_id": f"v{i}-{j}", "title": f"version {i} retrieval {j}", "text": "retrieval notes"} for j in range(3)],
        )
        for i in range(8)
    ]

    def commit(i: int) -> str:
        ingest(srcs[i], name, home=home)
        return Collection(name, home).version

    v1 = commit(1)
    jobs = JobStore(home / "jobs.sqlite")
    jobs.create("j1", name, "pinned by its checkpoint", workflow_id="j1", trace_id=None)
    jobs.checkpoint("j1", {"collection": name, "intent": "x", "collection_version": v1, "round": 1})
    v2 = commit(2)
    jobs.create("j2", name, "started, not checkpointed yet", workflow_id="j2", trace_id=None)
    # Two ingests killed before their switch (each leaves a whole version folder), one killed while
    # building (a staging folder): none of them was ever current.
    killed("before", "ingest", path=str(srcs[6]), name=name, home=str(home))
    killed("before", "ingest", path=str(srcs[7]), name=name, home=str(home))
    killed("staging", "ingest", path=str(srcs[7]), name=name, home=str(home))
    assert len(version_dirs(home, name)) == 4 and staging_dirs(home, name)
    assert Collection(name, home).version == v2
    v3, v4, v5 = commit(3), commit(4), commit(5)
    assert version_dirs(home, name) == {v1, v2, v3, v4, v5}, "v1 (pinned), v2 (current when j2 began), 3 newest"
    assert staging_dirs(home, name) == [], "staging folders of writers that are gone are removed"

    rt = NodeRuntime(home)
    for job_id, version, i in (("j1", v1, 1), ("j2", v2, 2)):
        state = {"collection": name, "collection_version": version, "job_id": job_id, "stats": {}}
        col = rt.collection(state)
        hits = col.lucene.search("retrieval")
        assert col.version == version and {h.docid for h in hits} == {f"v{i}-{j}" for j in range(3)}
        assert all(col.corpus.get(h.docid).title.startswith(f"version {i}") for h in hits)

    jobs.mark("j1", "completed")
    jobs.mark("j2", "completed")
    jobs.close()
    v6 = commit(6)
    assert version_dirs(home, name) == {v4, v5, v6}
    with pytest.raises(QuarryError) as info:  # a pinned version that is gone is said, not swapped
        rt.collection({"collection": name, "collection_version": v1, "job_id": "j1", "stats": {}})
    assert info.value.code == "version_gone"


def test_version_ids_sort_as_the_versions_were_made_across_a_seconds_edge() -> None:
    """The id's second and its fraction come from one clock reading: read apart, the edge of a
    second could fall between them and the id sort before one made earlier in that second."""
    from stores.collection_versions import version_id

    edge = 1_700_000_000 * 10**9
    made = [edge - 2_000, edge - 1, edge, edge + 1_000]  # nanoseconds, in the order they were made
    ids = [version_id("0123456789abcdef", ns) for ns in made]
    assert sorted(ids) == ids and ids[1].endswith("-999999999-01234567") and ids[2].endswith("-000000000-01234567")
    assert ids[2].startswith(time.strftime("%Y%m%dT%H%M%S", time.localtime(1_700_000_000)))


def test_running_pins_are_the_running_jobs_of_the_collection(tmp_path: Path) -> None:
    from stores.jobs import RUNNING_HORIZON_SECONDS, running_pins

    path = tmp_path / "jobs.sqlite"
    assert running_pins(path, "c") == [] and not path.exists(), "reading never creates a job store"
    with JobStore(path) as jobs:
        jobs.create("pinned", "c", "i", workflow_id="pinned", trace_id=None)
        jobs.checkpoint("pinned", {"collection": "c", "intent": "i", "collection_version": "v1"})
        jobs.create("fresh", "c", "i", workflow_id="fresh", trace_id=None)  # no checkpoint yet
        jobs.create("done", "c", "i", workflow_id="done", trace_id=None)
        jobs.checkpoint("done", {"collection": "c", "intent": "i", "collection_version": "v0"})
        jobs.mark("done", "completed")
        jobs.create("other", "d", "i", workflow_id="other", trace_id=None)
        jobs.create("ancient", "c", "i", workflow_id="ancient", trace_id=None)
        jobs._con().execute(
            "UPDATE jobs SET created_at = created_at - ? WHERE job_id = 'ancient'", (RUNNING_HORIZON_SECONDS + 60,)
        )
    pins = running_pins(path, "c")
    assert sorted(v or "" for v, _ in pins) == ["", "v1"] and all(t > time.time() - 600 for _, t in pins)


# -- item 7: corpus and vectors switch together ---------------------------------------------------


@pytest.mark.parametrize("point", ["before", "after"])
def test_a_kill_around_the_switch_of_add_leaves_corpus_and_vectors_consistent(tmp_path: Path, point: str) -> None:
    """`add` SIGKILLed just before or just after its switch: whichever version is current, its
    vectors are exactly its documents' (never the old vectors behind a new corpus)."""
    home = tmp_path / "home"
    before = dense_collection(home, tmp_path / "notes", "pair")
    new = zeppelins(tmp_path / "z")
    killed(point, "add", name="pair", paths=[str(new)], home=str(home))
    col = Collection("pair", home)
    assert (col.version == before.version) == (point == "before")
    assert col.corpus.has("z0") == (point == "after")
    dense = col.dense  # stale_dense_index if the vectors lagged behind the corpus
    assert dense.meta.fingerprint == col.corpus.fingerprint and dense.meta.chunks == col.corpus.stats()["chunks"]
    found = {h.docid for h in dense.search("zeppelin airship hangar", k=3)}
    assert (found == {"z0", "z1", "z2"}) if point == "after" else not found & {"z0", "z1", "z2"}
    report = add("pair", [new], home=home)  # the next add works and leaves nothing behind
    assert report.warnings == [] and (report.added == 3) == (point == "before")
    col = Collection("pair", home)
    assert col.dense.meta.chunks == col.corpus.stats()["chunks"]
    assert {h.docid for h in col.dense.search("zeppelin airship hangar", k=3)} == {"z0", "z1", "z2"}
    assert staging_dirs(home, "pair") == [] and col.version in version_dirs(home, "pair")


# -- old layouts ----------------------------------------------------------------------------------


def _to_root_dense_layout(home: Path, name: str) -> tuple[Path, str]:
    """Rewrite a collection by hand into the layout of the previous Quarry: versions with no
    commit markers, the dense index in the collection's root."""
    paths = collection_paths(name, home)
    for marker in (paths.root / VERSIONS_DIR).glob("*/.committed"):
        marker.unlink()
    shutil.move(str(paths.chroma_dir), str(paths.legacy_chroma_dir))
    return paths.root, paths.version


def test_a_collection_with_its_dense_index_in_the_root_opens_and_migrates(tmp_path: Path) -> None:
    home = tmp_path / "home"
    dense_collection(home, tmp_path / "notes", "old")
    root, v1 = _to_root_dense_layout(home, "old")
    col = Collection("old", home)
    assert col.version == v1 and {h.docid for h in col.dense.search("lexical ranking", k=3)}
    job = {"collection": "old", "collection_version": v1, "job_id": "j", "stats": {}}
    rt = NodeRuntime(home)
    assert rt.collection(job).dense.meta.fingerprint == col.corpus.fingerprint

    report = add("old", [zeppelins(tmp_path / "z")], home=home)
    assert report.embedded is not None and report.embedded > 0 and report.warnings == []
    assert not (root / "chroma").exists() and (root / VERSIONS_DIR / v1 / "chroma" / "dense.json").is_file()
    new = Collection("old", home)
    assert {h.docid for h in new.dense.search("zeppelin airship hangar", k=3)} == {"z0", "z1", "z2"}
    pinned = rt.collection(job)
    assert not {"z0", "z1", "z2"} & {h.docid for h in pinned.dense.search("zeppelin airship hangar", k=20)}


def test_a_collection_from_before_versions_opens_and_migrates(tmp_path: Path) -> None:
    home = tmp_path / "home"
    dense_collection(home, tmp_path / "notes", "flat")
    paths = collection_paths("flat", home)
    for part in ("corpus.sqlite", "lucene", "chroma"):  # everything in the root, as before versions
        shutil.move(str(paths.version_dir / part), str(paths.root / part))
    shutil.rmtree(paths.root / VERSIONS_DIR)
    (paths.root / CURRENT_FILE).unlink()
    col = Collection("flat", home)
    assert col.version is None and col.dense.search("lexical ranking", k=3) and col.lucene.search("ranking")

    add("flat", [zeppelins(tmp_path / "z")], home=home)
    col = Collection("flat", home)
    assert col.version is not None and {h.docid for h in col.dense.search("zeppelin airship hangar", k=3)} == {
        "z0",
        "z1",
        "z2",
    }
    assert not any((paths.root / part).exists() for part in ("corpus.sqlite", "lucene", "chroma"))


def test_vectors_left_behind_by_an_older_quarry_are_detected_with_the_command_that_repairs(tmp_path: Path) -> None:
    """The state a kill between corpus and dense commit left with the previous Quarry: the root
    dense index matches an older corpus than the current one. It is named, `add` warns instead of
    going on silently, and `quarry index NAME --dense` repairs it."""
    home = tmp_path / "home"
    folder = tmp_path / "notes"
    dense_collection(home, folder, "lag")
    _to_root_dense_layout(home, "lag")
    (folder / "n99.md").write_text(note(99, "ocean currents"), encoding="utf-8")
    ingest(folder, "lag", home=home, force=True)  # a new corpus; the root vectors are of the old one
    with pytest.raises(QuarryError) as info:
        Collection("lag", home).dense
    assert info.value.code == "stale_dense_index" and "quarry index lag --dense" in info.value.hint
    report = add("lag", [zeppelins(tmp_path / "z")], home=home)
    assert report.embedded is None and any("quarry index lag --dense" in w for w in report.warnings)
    col = Collection("lag", home)
    DenseIndex(col.paths, "lag").ensure(col.corpus)
    col = Collection("lag", home)
    assert {"z0", "z1", "z2"} == {h.docid for h in col.dense.search("zeppelin airship hangar", k=3)}


# -- item 9: the indexer JVM of a killed ingest; a full disk under Lucene ------------------------


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(d.name))
            except (OSError, ValueError, IndexError):
                continue
    return out


def _indexer_alive(pid: int) -> bool:
    """The JVM `pid` still runs (a zombie or a reused pid does not count)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, IndexError):
        return False
    argv = cmdline.split(b"\0")
    return state != "Z" and Path(argv[0].decode(errors="replace")).name == "java" and b"IndexCollection" in cmdline


def test_the_indexer_jvm_dies_with_a_killed_ingest(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "docs.jsonl", topic_docs(3000))
    script = (
        "import sys; from pathlib import Path; from stores.collection import ingest; "
        "ingest(sys.argv[1], 'orphan', home=Path(sys.argv[2]))"
    )
    ingest_proc = subprocess.Popen(
        [sys.executable, "-c", script, str(src), str(tmp_path / "home")],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    jvm = None
    try:
        jvm = wait_for(
            lambda: next((p for p in _children(ingest_proc.pid) if _indexer_alive(p)), None),
            "the ingest starts its indexer JVM",
            deadline=120,
            every=0.01,
        )
        os.kill(jvm, signal.SIGSTOP)  # hold it mid-index: it cannot finish on its own and exit
        ingest_proc.kill()
        ingest_proc.wait(timeout=30)
        wait_for(lambda: not _indexer_alive(jvm), "the orphaned indexer JVM is gone", deadline=30)
    finally:
        if ingest_proc.poll() is None:
            ingest_proc.kill()
            ingest_proc.wait()
        if jvm is not None and _indexer_alive(jvm):
            os.kill(jvm, signal.SIGKILL)


# What Anserini 1.x printed when its index folder sat on a full 600 KB tmpfs (captured here):
# exit status 0, an ERROR line, and no segments file.
FULL_DISK_OUTPUT = """\
2026-12-02 05:36:46,625 INFO  [main] index.AbstractIndexer (AbstractIndexer.java:252) - Starting to index...
2026-12-02 05:36:51,600 ERROR [main] index.AbstractIndexer (AbstractIndexer.java:281) - java.io.IOException: No space left on device
2026-12-02 05:36:51,601 INFO  [main] index.AbstractIndexer (AbstractIndexer.java:292) - Indexing Complete! 3,000 documents indexed
2026-12-02 05:36:51,628 INFO  [main] index.AbstractIndexer (AbstractIndexer.java:301) - Total 3,000 documents indexed in 00:00:04
"""


def test_lucene_on_a_full_disk_says_the_disk_is_full(tmp_path: Path) -> None:
    from stores.anserini_run import index_failure

    err = index_failure(0, FULL_DISK_OUTPUT, tmp_path / ".staging-x" / "lucene")
    assert err.code == "disk_full" and "full" in err.message and "exit 0" not in err.message
    assert "quarry index" not in err.hint and "free space" in err.hint
    other = index_failure(0, "INFO nothing useful\n", tmp_path / "lucene")
    assert other.code == "index_failed" and "no index was written" in other.message
    assert "quarry index NAME" not in other.hint


def _fill(mount: Path, leave: int) -> None:
    """Fill the filesystem at `mount` to its last byte, then give `leave` bytes back."""
    filler_file = mount / "filler"
    with filler_file.open("wb", buffering=0) as fh, pytest.raises(OSError):
        while True:
            fh.write(b"\0" * 4096)
    os.truncate(filler_file, filler_file.stat().st_size - leave)


def test_a_dense_build_on_a_full_disk_is_one_message_and_keeps_the_previous_index(tmp_path: Path) -> None:
    """A real full disk (a tmpfs filled to its last 64 KiB: room for the BM25 settings, not for
    Chroma's database), under an in-process `quarry index NAME --dense` and under the rebuild of a
    dense index that exists: Chroma's `InternalError("database or disk is full")` is one message
    naming the home, no staging is left, and the previous dense index still answers."""
    from typer.testing import CliRunner

    from quarry.cli import app
    from tests.test_faults_cli import one_message

    mount = tmp_path / "disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)], check=True, capture_output=True)
    try:
        home = mount / "home"
        kept = dense_collection(home, tmp_path / "notes", "kept")
        ingest(zeppelins(tmp_path / "z"), "bare", home=home)
        before, hits = kept.dense.meta, kept.dense.search("lexical ranking", k=3)
        kept.dense.close()
        _fill(mount, leave=64 << 10)

        result = CliRunner().invoke(app, ["--home", str(home), "index", "bare", "--dense"])
        one_message(result, "disk_full")
        assert "the dense index was not written: the disk is full" in result.output and str(home) in result.output
        assert "free space" in result.output
        bare = Collection("bare", home)
        assert staging_dirs(home, "bare") == [] and not bare.paths.chroma_dir.exists()

        with pytest.raises(QuarryError) as info:
            DenseIndex(kept.paths, "kept").build(kept.corpus, batch_size=16)
        assert info.value.code == "disk_full" and "the previous dense index is unchanged" in info.value.message
        assert staging_dirs(home, "kept") == []
        again = Collection("kept", home)
        assert again.dense.meta == before and again.dense.search("lexical ranking", k=3) == hits
        again.dense.close()
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True, capture_output=True)


def test_the_first_ingest_creates_a_private_home(tmp_path: Path) -> None:
    """The home holds corpus text and, later, intents: a new home made by `ingest` is 0700 (the
    umask would otherwise give 0755), before any job, worker or server command tightens it."""
    home = tmp_path / "fresh-home"
    ingest(write_jsonl(tmp_path / "c.jsonl", topic_docs(3)), "private", home=home)
    assert home.stat().st_mode & 0o777 == 0o700
