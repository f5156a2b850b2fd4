"""The semantic channel without a dense index: MiniLM re-scores the lexical candidates.

The fixture has no dense index. "penguins" is the only query word any document contains: the
hockey page says it three times (BM25 ranks it first), the bird page once; MiniLM should prefer
the birds for "flightless seabirds penguins". A third page about the same birds never says
"penguins" (or any other query word), so a filtered ranking must not contain it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from nodes.job.config import JobConfig
from nodes.job.runtime import NodeRuntime, configure_runtime
from nodes.rounds.semantic_filter import FilteredSemantic, pick_chunks
from nodes.tools.corpus import ToolSession
from nodes.tools.results import SearchPage
from stores.chunk_vectors import ChunkVectors
from stores.collection import Collection, ingest
from stores.errors import QuarryError
from stores.records import Chunk
from tests.fakes import run_search_graph, write_jsonl

NAME = "penguins"
QUERY = "flightless seabirds penguins"
DOCS = [
    {
        "_id": "birds",
        "title": "Emperor penguins",
        "text": "Emperor penguins huddle together on the Antarctic ice "
        "to survive the polar winter, diving for fish and krill.",
    },
    {
        "_id": "hockey",
        "title": "Penguins hockey night",
        "text": "The Penguins won again: Penguins fans cheered as the "
        "Penguins scored twice in the third period at the arena.",
    },
    {
        "_id": "nowords",
        "title": "Birds of the far south",
        "text": "Emperor birds huddle on the Antarctic ice through the polar winter and dive for fish and krill.",
    },
    {"_id": "cars", "title": "Electric cars", "text": "Battery prices fell and electric cars sold well this year."},
]


@pytest.fixture(scope="module")
def col(tmp_path_factory: pytest.TempPathFactory) -> Collection:
    home = tmp_path_factory.mktemp("filtered-home")
    ingest(write_jsonl(tmp_path_factory.mktemp("filtered-src") / "docs.jsonl", DOCS), NAME, home=home)
    return Collection(NAME, home)


@pytest.fixture()
def fresh(col: Collection) -> ChunkVectors:
    """A new cache object on the collection's file (its `embedded` counter starts at 0)."""
    return ChunkVectors(col.paths.chunk_vectors_db, col.corpus)


def filtered(col: Collection, vectors: ChunkVectors, candidates: int = 100) -> FilteredSemantic:
    return FilteredSemantic(col.lucene, col.corpus, vectors, candidates=candidates, chunks_per_doc=2)


def test_the_fixture_has_no_dense_index_and_bm25_prefers_the_hockey_page(col: Collection) -> None:
    with pytest.raises(QuarryError) as err:
        col.dense
    assert err.value.code == "no_dense_index"
    docids, _ = col.lucene.ranking(QUERY, 10)
    assert list(docids) == ["hockey", "birds"]


def test_semantic_ranking_reorders_the_lexical_candidates_only(col: Collection, fresh: ChunkVectors) -> None:
    docids, scores = filtered(col, fresh).ranking(QUERY, k=1000)
    assert list(docids) == ["birds", "hockey"], "MiniLM puts the birds first; 'nowords' was never a candidate"
    assert scores[0] > scores[1]
    assert set(col.corpus.get_many(docids)) == set(docids), "every docid comes from the store"


def test_the_prefilter_depth_bounds_what_is_scored(col: Collection, fresh: ChunkVectors) -> None:
    docids, _ = filtered(col, fresh, candidates=1).ranking(QUERY)
    assert list(docids) == ["hockey"]


def test_a_repeated_search_embeds_nothing_new_even_in_a_new_process(col: Collection, tmp_path: Path) -> None:
    vectors = ChunkVectors(tmp_path / "vectors.sqlite", col.corpus)
    searcher = filtered(col, vectors)
    first = searcher.ranking(QUERY)
    assert vectors.embedded == 2, "one chunk of each of the two candidates, nothing else"
    assert searcher.ranking(QUERY) == first
    assert vectors.embedded == 2, "the second search took every chunk vector from the cache"
    reopened = ChunkVectors(tmp_path / "vectors.sqlite", col.corpus)  # what another worker would open
    assert filtered(col, reopened).ranking(QUERY) == first
    assert reopened.embedded == 0 and reopened.cached([("birds", 0), ("hockey", 0), ("cars", 0)]) == 2


def test_vectors_of_another_corpus_are_dropped(col: Collection, tmp_path: Path) -> None:
    path = tmp_path / "vectors.sqlite"
    first = ChunkVectors(path, col.corpus)
    assert len(first.vectors([("birds", 0), ("nosuchdoc", 0), ("birds", 99)])) == 1, "unknown chunks are absent"
    assert first.embedded == 1
    first.close()
    with sqlite3.connect(path) as con:
        con.execute("UPDATE meta SET value='another corpus' WHERE key='fingerprint'")
    assert ChunkVectors(path, col.corpus).cached([("birds", 0)]) == 0


def test_the_search_tool_says_the_ranking_is_filtered(col: Collection, fresh: ChunkVectors) -> None:
    session = ToolSession(col.lucene, col.corpus, semantic=filtered(col, fresh, candidates=100))
    page = session.search("r", QUERY, "semantic")
    assert isinstance(page, SearchPage) and page.hits[0].docid == "birds" and page.total == 2
    assert "filtered to lexical candidates" in page.note and "top 100 BM25 hits" in page.note
    lexical = session.search("r", QUERY, "lexical")
    assert isinstance(lexical, SearchPage) and "filtered" not in lexical.note


@pytest.mark.parametrize(
    ("texts", "wanted", "limit", "expected"),
    [
        (["title", "x", "penguins here", "y", "penguins and krill"], {"pengu", "krill"}, 3, [0, 2, 4]),
        (["title", "x", "penguins here", "y", "penguins and krill"], {"pengu", "krill"}, 2, [0, 4]),
        (["title", "a", "b"], {"pengu"}, 2, [0, 1]),  # no overlap: earlier chunks first
        (["title"], {"pengu"}, 3, [0]),
        ([], {"pengu"}, 3, []),
    ],
)
def test_pick_chunks(texts: list[str], wanted: set[str], limit: int, expected: list[int]) -> None:
    chunks = [Chunk(docid="d", chunk_no=i, line_start=i + 1, line_end=i + 1, text=t) for i, t in enumerate(texts)]
    assert pick_chunks(chunks, wanted, limit) == expected


@pytest.fixture()
def runtime(col: Collection) -> Iterator[NodeRuntime]:
    rt = NodeRuntime(col.paths.root.parent.parent)
    configure_runtime(rt)
    yield rt
    configure_runtime(None)


def run_job(job_id: str, config: JobConfig) -> dict:
    return run_search_graph(job_id, NAME, QUERY, config)


def test_a_job_without_a_dense_index_searches_both_channels(runtime: NodeRuntime) -> None:
    state = run_job("filtered-both", JobConfig(max_rounds=1, semantic_candidates=50))
    semantic = [s for s in state["searches"] if s["channel"] == "semantic"]
    assert semantic and semantic[0]["filtered_to"] == 50 and semantic[0]["total"] == 2
    assert "filtered to the top 50 lexical candidates" in semantic[0]["label"]
    result = runtime.jobs.load_draft("filtered-both")
    assert "filtered to the top 50 lexical candidates" in " ".join(result["queries"]), "the result says so too"
    assert result["run"] and set(result["run"]) <= {d["_id"] for d in DOCS}


def test_semantic_candidates_zero_keeps_jobs_lexical(runtime: NodeRuntime) -> None:
    state = run_job("filtered-off", JobConfig(max_rounds=1, semantic_candidates=0))
    assert {s["channel"] for s in state["searches"]} == {"lexical"}
