"""Cloze pseudo-queries: a sentence taken out of its document and searched for in the altered copy —
seeded, bounded, made from documents only; they choose k1/b (one standard error from the best,
nearest the stored setting) when a collection has too few judged queries, and nothing else."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from stores.collection import Collection, ingest
from stores.corpus import CorpusStore
from stores.records import DocRecord
from tests.fakes import write_beir
from tuning.cloze_queries import MIN_QUERIES, cloze_queries, take_out_sentence
from tuning.self_tuning import nearest_within_noise, self_tune

TOPICS = {
    "gnn": "graph neural message passing node embedding aggregation layers neighbourhood".split(),
    "fl": "federated clients hospitals privacy aggregation rounds server updates".split(),
    "qa": "question answering reader passages retrieval span extraction answers".split(),
    "rl": "reinforcement policy reward agent environment episodes value actions".split(),
}
COMMON = "study method results approach model data evaluation analysis experiments shows".split()


def cloze_docs(per_topic: int = 20, seed: int = 4) -> list[dict]:
    """Documents of six ten-word sentences (60 words), each mostly its topic's words."""
    rng = random.Random(seed)
    docs = []
    for key, words in TOPICS.items():
        for k in range(per_topic):
            body = " ".join(
                " ".join(rng.choice(words if rng.random() < 0.6 else COMMON) for _ in range(10)).capitalize() + "."
                for _ in range(6)
            )
            docs.append({"_id": f"{key}{k:02d}", "title": f"{key} paper {k}", "text": body})
    return docs


@pytest.fixture()
def col(tmp_path: Path) -> Collection:
    ingest(write_beir(tmp_path / "src", cloze_docs()), "clozed", home=tmp_path / "home")
    return Collection("clozed", home=tmp_path / "home")


def test_a_sentence_is_taken_out_of_its_document() -> None:
    sentences = [f"Sentence {i} has " + " ".join(f"w{i}x{j}" for j in range(8)) + "." for i in range(5)]
    rec = DocRecord(docid="d", title="T", text=" ".join(sentences))
    altered, taken = take_out_sentence(rec, random.Random(2)) or (None, "")
    assert altered is not None and taken in sentences
    assert taken not in altered.text and all(s in altered.text for s in sentences if s != taken)
    assert altered.title == "T" and altered.docid == "d"
    assert take_out_sentence(DocRecord(docid="e", text=sentences[0]), random.Random(2)) is None  # under 40 words


def test_a_document_of_one_sentence_keeps_it() -> None:
    """Taken out of a document it is all of, a sentence would leave it nothing to index (Lucene
    skips such a document, and the copy was incomplete): with a title left it may go, else not."""
    sentence = " ".join(f"w{j}" for j in range(45)) + "."
    assert take_out_sentence(DocRecord(docid="d", text=sentence), random.Random(2)) is None
    assert take_out_sentence(DocRecord(docid="d", text=sentence, keywords=("   ",)), random.Random(2)) is None
    titled = take_out_sentence(DocRecord(docid="d", title="A title", text=sentence), random.Random(2))
    assert titled is not None and titled[1] == sentence and titled[0].index_contents() == "A title"


def test_cloze_queries_are_seeded_bounded_and_searched_without_their_sentence(
    col: Collection, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("qrels", "queries", "splits", "answers"):
        monkeypatch.setattr(CorpusStore, name, lambda self, *a, _n=name, **k: pytest.fail(f"read {_n}"))
    first = cloze_queries(col, tmp_path / "a", 30, seed=5)
    again = cloze_queries(col, tmp_path / "b", 30, seed=5)
    other = cloze_queries(col, tmp_path / "c", 30, seed=6)
    assert len(first.queries) == 30 and first.documents == 80
    assert first.queries == again.queries and first.queries != other.queries
    docs = col.corpus.get_many(q.source for q in first.queries)
    for q in first.queries:
        assert q.kind == "cloze" and q.relevant == (q.source,) and q.text in docs[q.source].text
    # In the copy the sentence is gone: its own words no longer score its source at full strength.
    q = first.queries[0]
    original = col.lucene.score_documents(q.text, [q.source])[q.source]
    assert first.index.score_documents(q.text, [q.source])[q.source] < original


def test_the_setting_moves_only_past_one_standard_error() -> None:
    settings = [(0.9, 0.4), (1.2, 0.4), (2.0, 0.4)]
    ids = [f"q{i}" for i in range(40)]

    def rows(gains: dict[tuple[float, float], tuple[float, float]]) -> dict:
        """Per query: 0.5 + the setting's gain, ± its swing on alternate queries (paired noise)."""
        return {
            s: {q: {"ndcg@20": 0.5 + g + (w if i % 2 else -w), "map": 0.0} for i, q in enumerate(ids)}
            for s, (g, w) in gains.items()
        }

    slight = rows({(0.9, 0.4): (0.0, 0.0), (1.2, 0.4): (0.0, 0.0), (2.0, 0.4): (0.01, 0.1)})
    assert nearest_within_noise(slight, settings, ids, (0.9, 0.4)) == (0.9, 0.4)  # within noise: kept
    clear = rows({(0.9, 0.4): (0.0, 0.0), (1.2, 0.4): (0.2, 0.1), (2.0, 0.4): (0.21, -0.1)})
    assert nearest_within_noise(clear, settings, ids, (0.9, 0.4)) == (1.2, 0.4)  # nearest of the clearly better


def test_self_tuning_chooses_k1_b_on_cloze_queries_and_nothing_else(col: Collection) -> None:
    p = self_tune(col, queries=MIN_QUERIES, seed=3, k1_grid=(0.9, 3.0), b_grid=(0.4, 1.0), verifier=True).profile
    assert p.kinds["cloze"].queries == MIN_QUERIES and p.chosen_on == ("cloze",) and not p.kept_defaults
    assert (p.k1, p.b) in {(0.9, 0.4), (0.9, 1.0), (3.0, 0.4), (3.0, 1.0)}
    assert p.semantic_weight is None and p.verifier is None and not p.verifier_pseudo  # k1/b only
    assert p.kinds["cloze"].semantic_weight is None
    assert not list(col.paths.runs_dir.glob("cloze-*")), "the altered copy is removed"
    fewer = self_tune(col, queries=MIN_QUERIES - 1, seed=3, k1_grid=(0.9, 3.0), b_grid=(0.4, 1.0), verifier=False)
    assert fewer.profile.kept_defaults and (fewer.profile.k1, fewer.profile.b) == (0.9, 0.4)
