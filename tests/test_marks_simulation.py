"""The marks simulation (evals.marks_simulation): a seeded split, marks only on what a job showed,
and a copy of the collection, so the user's collection, judgements and profile are never touched."""

from __future__ import annotations

from pathlib import Path

from evals.marks_simulation import MARK_DEPTH, copy_collection, halves, simulated_marks
from stores.collection import Collection, ingest
from stores.judgements import Judgement, JudgementStore, judgements_path
from stores.profiles import profile_path
from tests.fakes import search_docs, write_beir


def test_halves_are_seeded_disjoint_and_cover_every_query() -> None:
    qids = [f"q{i}" for i in range(21)]
    train, test = halves(qids, 13)
    assert (train, test) == halves(list(reversed(qids)), 13), "the order given does not matter, the seed does"
    assert len(train) == 10 and len(test) == 11 and set(train) | set(test) == set(qids) and not set(train) & set(test)
    assert halves(qids, 14) != (train, test)


def test_marks_cover_only_what_the_job_showed_and_follow_the_qrels() -> None:
    shown = {"q1": {f"d{i}": float(100 - i) for i in range(30)}, "q2": {"d5": 1.0}}
    qrels = {"q1": {"d0": 1, "d3": 2, "d25": 1, "d7": 0}, "q2": {"d5": 0}}
    marks = simulated_marks(["q1"], {"q1": "first intent", "q2": "second"}, qrels, shown)
    assert len(marks) == MARK_DEPTH and {m.intent for m in marks} == {"first intent"}
    relevant = {m.docid for m in marks if m.relevance == 1.0}
    assert relevant == {"d0", "d3"}, "d25 was never shown (rank 26), d7 is judged not relevant"
    assert all(m.source == "user" for m in marks)


def test_the_copy_leaves_the_users_judgements_and_profile_behind(tmp_path: Path) -> None:
    docs = search_docs()
    src = write_beir(tmp_path / "src", docs, queries={"q1": "graph"}, qrels={"test": [("q1", docs[0]["_id"], 1)]})
    ingest(src, "mine", home=tmp_path / "home")
    source = Collection("mine", home=tmp_path / "home")
    store = JudgementStore(judgements_path(source.paths))
    store.record([Judgement("job-1", "a real intent", docs[0]["_id"], "user", 1.0)])
    profile_path(source.paths).write_text("{}")
    copy = copy_collection(source, tmp_path / "sim-home")
    assert copy.paths.root != source.paths.root and copy.corpus.hashes() == source.corpus.hashes()
    assert JudgementStore(judgements_path(copy.paths)).all() == []
    assert not profile_path(copy.paths).exists()
    assert len(store.all()) == 1 and profile_path(source.paths).read_text() == "{}", "the source is untouched"
