"""The citation channel: stores.citations.CitationGraph, the expansion ranking of
nodes.ranking.citation_expansion and the expand_citations tool.

One hand-made citation graph (edges citing → cited), whose relations are worked out by hand:

    p1 → a, b, c      p2 → a, b      p3 → b, d      d → p3 (a mutual pair)
    a → r1, r2        e → r1, r2, r3                f → r2
    c → t1 → t2 → t3  (a tail far from a)           x1 → x2 (another component)
    hub → leaf01 … leaf60 (enough links to hit the tool's limit cap)

plus `z`, a document without any link.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path
from types import SimpleNamespace

import pytest

from nodes.ranking.citation_expansion import LINK_BONUS, PPR_ALPHA, SHARED_BONUS, expand, ppr
from nodes.tools.corpus import CITATION_DIRECTIONS, CITATION_LIMIT_MAX, ToolSession, preview_text
from nodes.tools.results import CitationHit, CitationPage, ToolError
from stores.citations import CitationGraph
from stores.collection import Collection, ingest
from tests.fakes import write_beir

LEAVES = [f"leaf{i:02d}" for i in range(1, 61)]
EDGES = [
    ("p1", "a"),
    ("p1", "b"),
    ("p1", "c"),
    ("p2", "a"),
    ("p2", "b"),
    ("p3", "b"),
    ("p3", "d"),
    ("d", "p3"),
    ("a", "r1"),
    ("a", "r2"),
    ("e", "r1"),
    ("e", "r2"),
    ("e", "r3"),
    ("f", "r2"),
    ("c", "t1"),
    ("t1", "t2"),
    ("t2", "t3"),
    ("x1", "x2"),
    *(("hub", leaf) for leaf in LEAVES),
]
LINKED = sorted({d for edge in EDGES for d in edge})
DOCS = [*LINKED, "z"]


def _doc(docid: str) -> dict:
    return {
        "_id": docid,
        "title": f"Paper {docid} on citation analysis",
        "text": f"This paper {docid} studies citation analysis of scholarly networks.",
        "metadata": {"year": 2000},
    }


@pytest.fixture(scope="module")
def col(tmp_path_factory: pytest.TempPathFactory) -> Collection:
    root = tmp_path_factory.mktemp("cites")
    write_beir(root / "src", [_doc(d) for d in DOCS], citations=EDGES)
    ingest(root / "src", "cites", home=root / "home", build_lucene=False)
    return Collection("cites", home=root / "home")


@pytest.fixture(scope="module")
def graph(col: Collection) -> CitationGraph:
    return col.citations


class NoSearch:
    """expand_citations needs no searcher; any search through this one is a test failure."""

    def ranking(self, text: str, k: int = 10):
        raise AssertionError("expand_citations must not search")


@pytest.fixture
def tools(col: Collection) -> ToolSession:
    return ToolSession(NoSearch(), col.corpus, citations=col.citations)


def ids(scored) -> list[str]:
    return [d for d, _ in scored]


# -- the graph -------------------------------------------------------------------------------------


def test_graph_holds_every_linked_document(graph: CitationGraph) -> None:
    assert len(graph) == len(LINKED) == 78
    assert graph.graph.number_of_edges() == len(EDGES)
    assert graph.has("a") and not graph.has("z") and not graph.has("ghost") and not graph.has(["a"])
    assert (graph.degree("a"), graph.degree("b"), graph.degree("d"), graph.degree("z")) == (4, 3, 2, 0)


def test_references_and_cited_by(graph: CitationGraph) -> None:
    assert graph.references("a") == [("r1", 1.0), ("r2", 1.0)]
    assert graph.cited_by("a") == [("p1", 1.0), ("p2", 1.0)]
    assert graph.cited_by("b") == [("p1", 1.0), ("p2", 1.0), ("p3", 1.0)]  # ties by docid
    assert graph.references("d") == graph.cited_by("d") == [("p3", 1.0)]  # mutual citation
    assert graph.references("r1") == [] and graph.cited_by("p1") == []
    assert graph.references("p1", limit=2) == [("a", 1.0), ("b", 1.0)]
    assert graph.references("p1", limit=0) == []
    assert graph.references("z") == graph.cited_by("ghost") == []


def test_co_citation_counts(graph: CitationGraph) -> None:
    # a is cited by p1 (with b, c) and p2 (with b)
    assert graph.co_cited("a") == [("b", 2.0), ("c", 1.0)]
    # b is cited by p1 (with a, c), p2 (with a), p3 (with d): c and d tie, broken by docid
    assert graph.co_cited("b") == [("a", 2.0), ("c", 1.0), ("d", 1.0)]
    assert graph.co_cited("b", limit=2) == [("a", 2.0), ("c", 1.0)]
    assert graph.co_cited("p1") == []  # nobody cites p1
    # normalised: shared / sqrt(indeg(a) · indeg(other)); indeg a=2, b=3, c=1
    got = dict(graph.co_cited("a", normalize=True))
    assert got == pytest.approx({"b": 2 / math.sqrt(6), "c": 1 / math.sqrt(2)})
    assert ids(graph.co_cited("a", normalize=True)) == ["b", "c"]


def test_bibliographic_coupling_counts(graph: CitationGraph) -> None:
    # a cites r1, r2; e cites r1, r2 (and r3); f cites r2
    assert graph.coupled("a") == [("e", 2.0), ("f", 1.0)]
    assert graph.coupled("e") == [("a", 2.0), ("f", 1.0)]
    assert graph.coupled("p1") == [("p2", 2.0), ("p3", 1.0)]  # p1 and p2 share a, b; p1 and p3 share b
    assert graph.coupled("r1") == []  # r1 cites nothing
    got = dict(graph.coupled("a", normalize=True))  # outdeg a=2, e=3, f=1
    assert got == pytest.approx({"e": 2 / math.sqrt(6), "f": 1 / math.sqrt(2)})


def test_ppr_ranks_the_neighbourhood_above_distant_nodes(graph: CitationGraph) -> None:
    ranked = ppr(graph, ["a"])
    order = ids(ranked)
    assert "a" not in order
    # the seed's component only: the other components get nothing
    assert not {"x1", "x2", "hub", *LEAVES} & set(order)
    assert set(order) == set(graph.undirected.nodes) - {"x1", "x2", "hub", *LEAVES, "a"}
    got = dict(ranked)
    neighbours, far = ("r1", "r2", "p1", "p2"), ("t1", "t2", "t3", "d", "r3")  # 1 hop; 3 or more hops
    assert min(got[n] for n in neighbours) > max(got[f] for f in far)
    assert got["t1"] > got["t2"] > got["t3"]
    assert got["e"] > got["f"]  # two paths to a (via r1 and r2) beat one
    scores = graph.ppr_scores(["a"], PPR_ALPHA)
    assert sum(scores.values()) == pytest.approx(1.0, abs=1e-6)
    assert sum(s for _, s in ranked) == pytest.approx(1.0 - scores["a"], abs=1e-6)
    assert all(s > 0 for _, s in ranked)
    assert ppr(graph, ["a"], limit=3) == ranked[:3]
    # the ranking module's PPR (policy damping) is what the tool's `ppr` direction shows
    assert ppr(graph, ["a"]) == ranked and ppr(graph, ["a"], limit=3) == ranked[:3]


def test_ppr_seeds_weights_and_ties(graph: CitationGraph) -> None:
    assert ppr(graph, ["a", "ghost", "z"]) == ppr(graph, ["a"])  # seeds outside the graph are ignored
    assert ppr(graph, ["ghost", "z"]) == [] and ppr(graph, []) == [] and ppr(graph, {"a": 0.0}) == []
    both = ppr(graph, ["a", "e"])
    assert "a" not in ids(both) and "e" not in ids(both)
    # a zero-weight seed adds no mass but is still never returned
    assert ids(ppr(graph, {"a": 1.0, "e": 0.0})) == [d for d in ids(ppr(graph, ["a"])) if d != "e"]
    # leaves of the hub are symmetric: equal scores, ordered by docid
    leaves = ppr(graph, ["hub"])
    assert ids(leaves) == LEAVES and len({s for _, s in leaves}) == 1
    # weights move the walk: more weight on e lifts e's own reference r3
    assert dict(ppr(graph, {"a": 1.0, "e": 9.0}))["r3"] > dict(ppr(graph, {"a": 9.0, "e": 1.0}))["r3"]


def test_expand_follows_its_documented_formula(graph: CitationGraph) -> None:
    seeds = {"a": 3.0, "e": 1.0}
    ranked = expand(graph, seeds)
    got = dict(ranked)
    assert "a" not in got and "e" not in got
    w = {"a": 0.75, "e": 0.25}
    ppr = graph.ppr_scores(w, PPR_ALPHA)
    # b: co-cited with a (cosine 2/sqrt 6), no direct link to a seed
    assert got["b"] == pytest.approx(ppr["b"] + w["a"] * SHARED_BONUS * 2 / math.sqrt(6))
    # r1: cited by both seeds
    assert got["r1"] == pytest.approx(ppr["r1"] + (w["a"] + w["e"]) * LINK_BONUS)
    # f: coupled with a (1/sqrt 2) and with e (1/sqrt 3)
    assert got["f"] == pytest.approx(ppr["f"] + SHARED_BONUS * (w["a"] / math.sqrt(2) + w["e"] / math.sqrt(3)))
    # the union of every relation of every seed is a candidate
    for seed in seeds:
        for rel in (graph.references, graph.cited_by, graph.co_cited, graph.coupled):
            assert set(ids(rel(seed))) - set(seeds) <= set(got)
    assert ranked == sorted(ranked, key=lambda x: (-x[1], x[0]))
    assert expand(graph, seeds, limit=5) == ranked[:5]
    assert got["t3"] < min(got[d] for d in ("r1", "r2", "p1", "p2"))


def test_expand_without_usable_seeds(graph: CitationGraph) -> None:
    assert expand(graph, {"z": 1.0, "ghost": 2.0}) == [] and expand(graph, {}) == []
    assert expand(graph, {"a": -1.0}) == []  # no positive weight left
    assert ids(expand(graph, {"a": 1.0, "z": 5.0})) == ids(expand(graph, {"a": 1.0}))


def test_empty_graph_returns_nothing(tmp_path: Path) -> None:
    write_beir(tmp_path / "src", [_doc("a"), _doc("b")])
    ingest(tmp_path / "src", "nocites", home=tmp_path / "home", build_lucene=False)
    for graph in (Collection("nocites", home=tmp_path / "home").citations, CitationGraph.from_edges([])):
        assert len(graph) == 0 and not graph.has("a") and graph.degree("a") == 0
        for rel in (graph.references, graph.cited_by, graph.co_cited, graph.coupled):
            assert rel("a") == []
        assert ppr(graph, ["a"]) == [] and expand(graph, {"a": 1.0}) == []


def test_graph_is_built_once_and_shared_per_store(col: Collection) -> None:
    loads = []
    graph = CitationGraph(lambda: loads.append(1) or EDGES)
    assert loads == []  # lazy
    graph.references("a"), graph.co_cited("b"), ppr(graph, ["a"]), len(graph)
    assert loads == [1]
    again = Collection("cites", home=col.paths.root.parent.parent)
    assert again.citations is col.citations is CitationGraph.from_store(col.corpus)


# -- the expand_citations tool ----------------------------------------------------------------------


def page_of(result) -> CitationPage:
    assert isinstance(result, CitationPage), result
    return result


def tool_error(result, code: str) -> ToolError:
    assert isinstance(result, ToolError), result
    assert result.tool == "expand_citations" and result.code == code
    assert result.hint.strip() and result.message.strip()
    assert result.render() == f"Error in expand_citations: {result.message}\nHint: {result.hint}"
    return result


def test_both_lists_references_and_citing_papers(tools: ToolSession, col: Collection) -> None:
    page = page_of(tools.expand_citations("test", "a"))
    assert (page.docid, page.direction, page.total, page.note) == ("a", "both", 4, "")
    assert page.title == "Paper a on citation analysis"
    assert [(h.rank, h.docid, h.score, h.relation) for h in page.hits] == [
        (1, "p1", 1.0, "citing"),
        (2, "p2", 1.0, "citing"),
        (3, "r1", 1.0, "reference"),
        (4, "r2", 1.0, "reference"),
    ]
    for h in page.hits:
        rec = col.corpus.get(h.docid)
        assert isinstance(h, CitationHit) and h.title == rec.title
        assert h.excerpt and h.excerpt == preview_text(rec, page.title)
    lines = page.render().splitlines()
    assert lines[0] == (
        "[citations of docid=a direction=both] 4 documents for 'Paper a on citation analysis'; ranks 1–4:"
    )
    assert "1. docid=p1 score=1 [citing] | Paper p1 on citation analysis" in lines
    assert "3. docid=r1 score=1 [reference] | Paper r1 on citation analysis" in lines
    assert lines[-1].startswith("Hint: read_document(docid=…)") and "co_cited" in lines[-1]
    mutual = page_of(tools.expand_citations("test", "d"))
    assert [(h.docid, h.relation) for h in mutual.hits] == [("p3", "reference, citing")]


@pytest.mark.parametrize("direction", ["references", "cited_by", "co_cited", "coupled", "ppr"])
def test_each_direction_matches_the_graph(tools: ToolSession, graph: CitationGraph, direction: str) -> None:
    expected = ppr(graph, ["b"]) if direction == "ppr" else getattr(graph, direction)("b")
    page = page_of(tools.expand_citations("test", "b", direction, 50))
    assert page.total == len(expected) and page.direction == direction
    assert [(h.docid, h.score) for h in page.hits] == [(d, round(s, 6)) for d, s in expected]
    assert [h.rank for h in page.hits] == list(range(1, len(expected) + 1))
    assert "[" not in page.render().splitlines()[1]  # relation tags only for direction="both"


def test_direction_spelling_is_forgiving(tools: ToolSession) -> None:
    assert page_of(tools.expand_citations("test", "b", " Cited-By ", 10)).direction == "cited_by"
    assert page_of(tools.expand_citations("test", "b", "co_cited", "2")).total == 3


def test_limit_is_capped_with_a_note(tools: ToolSession) -> None:
    page = page_of(tools.expand_citations("test", "hub", "references", 80))
    assert page.total == 60 and len(page.hits) == CITATION_LIMIT_MAX
    assert [h.docid for h in page.hits] == LEAVES[:CITATION_LIMIT_MAX]
    assert page.note == f"limit capped at {CITATION_LIMIT_MAX}"
    rendered = page.render().splitlines()
    assert f"Note: limit capped at {CITATION_LIMIT_MAX}" in rendered
    assert 'expand_citations(docid="hub", direction="references", limit=…)' in rendered[-1]
    small = page_of(tools.expand_citations("test", "hub", "references", 3))
    assert (small.total, len(small.hits), small.note) == (60, 3, "")


def test_document_without_links_gives_an_empty_page(tools: ToolSession) -> None:
    page = page_of(tools.expand_citations("test", "z", "both"))
    assert page.total == 0 and page.hits == [] and "no citation links" in page.note
    text = page.render()
    assert text.startswith("[citations of docid=z direction=both] no documents") and "Hint:" in text
    assert tools.trajectory.previewed == set()


def test_trajectory_records_previewed_hits(tools: ToolSession) -> None:
    tools.expand_citations("test", "a", "both")
    assert tools.trajectory.previewed == {"p1", "p2", "r1", "r2"}
    tools.expand_citations("test", "hub", "references", 2)
    assert tools.trajectory.previewed == {"p1", "p2", "r1", "r2", "leaf01", "leaf02"}
    assert tools.trajectory.surfaced >= tools.trajectory.previewed
    assert tools.trajectory.opened == set()


@pytest.mark.parametrize("docid", ["ghost", "", None, 7, ["a"], "A"])
def test_unknown_docid(tools: ToolSession, docid) -> None:
    err = tool_error(tools.expand_citations("test", docid), "unknown_docid")
    assert "docid" in err.hint


@pytest.mark.parametrize("direction", ["sideways", "", None, 3, ["both"], "citations"])
def test_bad_direction(tools: ToolSession, direction) -> None:
    err = tool_error(tools.expand_citations("test", "a", direction), "bad_direction")
    assert all(d in err.hint for d in CITATION_DIRECTIONS)


@pytest.mark.parametrize("limit", [0, -1, "ten", None, True, 2.5, [10]])
def test_bad_limit(tools: ToolSession, limit) -> None:
    err = tool_error(tools.expand_citations("test", "a", "both", limit), "bad_limit")
    assert str(CITATION_LIMIT_MAX) in err.hint
    assert tools.trajectory.previewed == set()


def test_no_citations(col: Collection) -> None:
    for citations in (None, CitationGraph.from_edges([])):
        tools = ToolSession(NoSearch(), col.corpus, citations=citations)
        err = tool_error(tools.expand_citations("test", "a"), "no_citations")
        assert "search" in err.hint


def test_job_tools_trace_expand_citations(col: Collection, tmp_path: Path, monkeypatch) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    import nodes.job.runtime as rt
    import nodes.job.traced_tools as traced
    from observability import JsonlSpanExporter, get_tracer, load_spans, tool_span

    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(JsonlSpanExporter(tmp_path / "traces")))
    monkeypatch.setattr(traced, "tool_span", functools.partial(tool_span, tracer=get_tracer(provider)))
    runtime = rt.NodeRuntime(home=tmp_path)
    # a stand-in for the collection: it has no Lucene index, and expand_citations needs none
    runtime._collections[("cites", None)] = SimpleNamespace(
        lucene=NoSearch(),
        corpus=col.corpus,
        citations=col.citations,
        dense=None,
        chunk_vectors=None,
        name="cites",
        paths=col.paths,  # where a self-tuned profile would be (there is none: the default settings)
        version=None,
    )
    job = runtime.tools({"collection": "cites", "job_id": "j1"})
    assert job.session.citations is col.citations
    assert page_of(job.expand_citations("test", "a", "references", 5)).total == 2
    tool_error(job.expand_citations("test", "a", "up"), "bad_direction")
    provider.shutdown()
    spans = sorted(
        (rec for f in (tmp_path / "traces").glob("*.jsonl") for rec in load_spans(f.parent, f.stem)),
        key=lambda rec: rec["start_ns"],
    )
    assert [s["name"] for s in spans] == ["execute_tool expand_citations"] * 2
    ok, bad = (s["attributes"] for s in spans)
    assert (ok["gen_ai.tool.name"], ok["quarry.docid"], ok["quarry.direction"], ok["quarry.hits"]) == (
        "expand_citations",
        "a",
        "references",
        2,
    )
    assert bad["quarry.error"] == "bad_direction" and job.calls == 2
    # Documents found through the citation channel count as surfaced for the job (trajectory tier).
    hits = job.expand_seeds("test", ["a"], 10)
    assert hits and {d for d, _ in hits} <= runtime.jobs.surfaced("j1")
    page = page_of(job.expand_citations("test", "a", "references", 5))
    assert {h.docid for h in page.hits} <= runtime.jobs.surfaced("j1")
