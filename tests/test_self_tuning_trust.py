"""Self-tuning on any collection that ingests, beside the collection's other writers: documents of
one sentence, a tune while `add` writes (and an `add` while a tune runs), a tune without --apply
next to an applied profile, and a tune killed mid-way."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nodes.job.profile_choice import resolve_profile
from quarry.cli import app
from stores.collection import Collection, ingest, reindex
from stores.errors import QuarryError
from stores.locks import writer_lock
from stores.lucene import IndexMeta
from stores.profiles import candidate_path, profile_path, profile_status, read_profile
from stores.scratch import SCRATCH_DIR
from tests.fakes import write_beir, write_jsonl
from tests.test_cloze_queries import cloze_docs
from tuning.cloze_queries import MIN_QUERIES
from tuning.self_tuning import self_tune

ROOT = Path(__file__).resolve().parent.parent
GRID = {"k1_grid": (0.9, 2.0), "b_grid": (0.4, 0.9), "verifier": False}
NAME = "short"
# A tune in a child process that stops inside its cloze copy (the scratch made, the lock held) and
# waits for a line on stdin before it goes on: the test acts while it is there, then lets it go or kills it.
PAUSED_TUNE = """
import sys
from pathlib import Path
from tuning.self_tuning import self_tune
from stores.collection import Collection

def pause(stage, done, total):
    if stage == "cloze copy" and done == 0:
        print("in the cloze copy", flush=True)
        sys.stdin.readline()

self_tune(Collection(sys.argv[1], Path(sys.argv[2])), queries=60, k1_grid=(0.9, 2.0), b_grid=(0.4, 0.9),
          verifier=False, progress=pause)
print("tuned", flush=True)
"""


def one_sentence_docs() -> list[dict]:
    """The cloze documents without titles, every fourth one only a single sentence of 45 words
    (what a public collection of short records looks like once its title is its text)."""
    docs = []
    for i, d in enumerate(cloze_docs()):
        text = d["text"]
        if i % 4 == 0:
            text = " ".join(text.replace(".", "").split()[:45]) + "."
        docs.append({"_id": d["_id"], "title": "", "text": text})
    return docs


@pytest.fixture()
def home(tmp_path: Path) -> Path:
    ingest(write_beir(tmp_path / "src", one_sentence_docs()), NAME, home=tmp_path / "home")
    return tmp_path / "home"


@pytest.fixture()
def paused(home: Path) -> Iterator[subprocess.Popen[str]]:
    """A tune of the collection paused in its cloze copy (see PAUSED_TUNE); killed if still running at the end."""
    proc = subprocess.Popen(
        [sys.executable, "-c", PAUSED_TUNE, NAME, str(home)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if line != "in the cloze copy\n":
        proc.kill()
        pytest.fail(f"the tune never reached its cloze copy: {line!r} {proc.communicate()[1][-2000:]}")
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def cli(home: Path, *args: str):
    return CliRunner().invoke(app, ["--home", str(home), *args])


def test_tune_self_completes_on_documents_of_one_sentence(home: Path) -> None:
    shown = cli(home, "tune", NAME, "--self", "--queries", "60", "--no-verifier", "--json")
    assert shown.exit_code == 0, shown.output  # was: index_incomplete, Lucene indexed 60 of 80 documents
    data = json.loads(shown.stdout.strip().splitlines()[-1])
    assert data["kinds"]["cloze"]["queries"] >= MIN_QUERIES and data["chosen_on"] == ["cloze"]


def test_an_add_while_a_tune_runs_is_told_the_collection_is_busy(home: Path, paused, tmp_path: Path) -> None:
    extra = write_jsonl(tmp_path / "extra.jsonl", [{"_id": "new1", "title": "A new paper", "text": "On graphs."}])
    added = cli(home, "add", NAME, str(extra))
    assert added.exit_code != 0 and isinstance(added.exception, SystemExit)
    assert "collection_busy" in added.output and "self-tuning" in added.output
    assert "Traceback" not in added.output
    out, err = paused.communicate("go on\n")  # the tune goes on and ends on the documents it read
    assert paused.returncode == 0 and out.strip().endswith("tuned"), err[-2000:]
    col = Collection(NAME, home)
    status = profile_status(col.paths, NAME, col.corpus.hashes())
    assert status is not None and status.changed_share == 0 and "new1" not in col.corpus.hashes()


def test_a_tune_while_add_writes_is_told_the_collection_is_busy_and_changes_nothing(home: Path) -> None:
    root = Collection(NAME, home).paths.root
    with writer_lock(root, NAME):  # what `add` holds while it writes
        shown = subprocess.run(
            [sys.executable, "-m", "quarry", "--home", str(home), "tune", NAME, "--self", "--apply", "--no-verifier"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
    assert shown.returncode != 0 and "collection_busy" in shown.stderr and "being written" in shown.stderr
    assert "Traceback" not in shown.stderr + shown.stdout and "Exception" not in shown.stderr
    col = Collection(NAME, home)
    assert read_profile(col.paths, NAME) is None  # refused before tuning: nothing claims to be applied


def test_a_reentrant_holder_lets_its_own_thread_reindex_and_no_other(home: Path) -> None:
    """How a tune applies its choice while it holds the lock: its own reindex enters, another
    thread's writer is still refused, and the lock is free again after."""
    root = Collection(NAME, home).paths.root
    with writer_lock(root, NAME, who="self-tuning in process", reentrant=True):
        reindex(NAME, home=home, k1=2.0, b=0.9)
        with ThreadPoolExecutor(1) as pool, pytest.raises(QuarryError) as busy:
            pool.submit(reindex, NAME, home=home, k1=3.0, b=0.9).result()
    assert busy.value.code == "collection_busy" and "self-tuning in process" in busy.value.message
    meta = IndexMeta.load(Collection(NAME, home).paths.lucene_dir)
    assert (meta.k1, meta.b) == (2.0, 0.9)
    with pytest.raises(QuarryError, match="being written"), writer_lock(root, NAME), writer_lock(root, NAME):
        pass  # without `reentrant` even the same thread's second writer is refused


def test_without_apply_the_applied_profile_stays_as_it_was(home: Path) -> None:
    col = Collection(NAME, home)
    applied = self_tune(col, queries=60, seed=3, apply=True, **GRID).profile
    before = profile_path(col.paths).read_bytes()
    meta = IndexMeta.load(Collection(NAME, home).paths.lucene_dir)
    again = self_tune(Collection(NAME, home), queries=60, seed=4, k1_grid=(5.0,), b_grid=(1.0,), verifier=False)
    assert profile_path(col.paths).read_bytes() == before  # was: replaced by the new tuning, not applied
    assert again.in_use == applied and again.profile_file == candidate_path(col.paths)
    assert read_profile(col.paths, NAME) == applied and not again.profile.applied
    now = Collection(NAME, home)
    assert IndexMeta.load(now.paths.lucene_dir) == meta
    chosen = resolve_profile(NAME, "auto", profile_status(now.paths, NAME, now.corpus.hashes()))
    assert chosen["name"] == "self" and (chosen["k1"], chosen["b"]) == (applied.k1, applied.b)
    shown = cli(home, "tune", NAME, "--self", "--queries", "60", "--no-verifier")
    assert shown.exit_code == 0 and "a candidate only" in shown.output, shown.output
    assert profile_path(col.paths).read_bytes() == before
    applied_now = self_tune(now, queries=60, seed=4, apply=True, **GRID)  # --apply replaces it, candidate gone
    assert read_profile(col.paths, NAME) == applied_now.profile and not candidate_path(col.paths).exists()


def test_a_killed_tune_leaves_no_scratch_after_the_next_tune(home: Path, paused) -> None:
    col = Collection(NAME, home)
    left = [*col.paths.runs_dir.glob("cloze-*"), *(home / SCRATCH_DIR).glob("*")]
    assert left, "the paused tune has its cloze scratch"
    paused.send_signal(signal.SIGKILL)
    paused.communicate()
    shown = cli(home, "tune", NAME, "--self", "--queries", "60", "--no-verifier", "--json")
    assert shown.exit_code == 0, shown.output
    assert not [p for p in left if p.exists()]
    assert not list(col.paths.runs_dir.glob("cloze-*")) and not list((home / SCRATCH_DIR).glob("*"))
