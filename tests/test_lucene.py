"""Lucene BM25: exact scores pinned against Lucene's formula on a tiny fixture, and query safety.

Every fixture document is at most 40 tokens long, where Lucene's lossy length encoding
(`SmallFloat.intToByte4`) is exact, so the scores below follow the textbook formula:

    idf(t)   = ln(1 + (N - n_t + 0.5) / (n_t + 0.5))
    score(d) = sum_t  idf(t) * tf / (tf + k1 * (1 - b + b * dl / avgdl))

Anserini rounds scores to 4 decimals (and nudges exact ties by 1e-6), hence the 1e-4 tolerance.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import pytest

from stores import lucene as lucene_module
from stores.collection import Collection, ingest
from stores.lucene import MAX_QUERY_TERMS, Hit, bag_of_words
from tests.fakes import write_jsonl

# Words that are neither stopwords nor stemmed into one another; title + text is what BM25 sees.
DOCS = {
    "d1": ("quartz basalt", "quartz quartz granite"),
    "d2": ("granite", "granite granite granite basalt marble marble"),
    "d3": ("slate", "quartz " + "pumice " * 30),
    "d4": ("obsidian", "basalt basalt"),
    "d5": ("gneiss", "schist shale flint jasper quartz granite marble slate"),
    "d6": ("flint", "flint"),
    # three identical documents, indexed in reverse docid order: a score tie
    "zz-tie": ("jasper", "jasper obsidian gneiss"),
    "mm-tie": ("jasper", "jasper obsidian gneiss"),
    "aa-tie": ("jasper", "jasper obsidian gneiss"),
    # non-Latin scripts, written token by token (CJK ideographs are single-character tokens)
    "intl": ("пример", "поиска 检 索 البحث"),
}
TOKENS = {d: f"{t} {x}".split() for d, (t, x) in DOCS.items()}


def bm25(query_terms: list[str], k1: float, b: float) -> dict[str, float]:
    """Lucene's BM25 computed by hand from the fixture tokens (query terms repeat = boost)."""
    n_docs = len(TOKENS)
    avgdl = sum(len(t) for t in TOKENS.values()) / n_docs
    scores: dict[str, float] = {}
    for term, boost in Counter(query_terms).items():
        df = sum(term in toks for toks in TOKENS.values())
        idf = math.log(1 + (n_docs - df + 0.5) / (df + 0.5))
        for docid, toks in TOKENS.items():
            tf = toks.count(term)
            if tf:
                norm = k1 * (1 - b + b * len(toks) / avgdl)
                scores[docid] = scores.get(docid, 0.0) + boost * idf * tf / (tf + norm)
    return scores


def expected_ranking(query_terms: list[str], k1: float = 0.9, b: float = 0.4) -> list[tuple[str, float]]:
    return sorted(bm25(query_terms, k1, b).items(), key=lambda p: (-p[1], p[0]))


def assert_ranking(hits: list[Hit], expected: list[tuple[str, float]]) -> None:
    assert [h.docid for h in hits] == [d for d, _ in expected]
    assert [h.rank for h in hits] == list(range(1, len(expected) + 1))
    for hit, (_, score) in zip(hits, expected, strict=True):
        assert hit.score == pytest.approx(score, abs=1e-4), hit


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory):
    assert all(len(t) <= 40 for t in TOKENS.values())
    folder = tmp_path_factory.mktemp("lucene")
    src = write_jsonl(folder / "rocks.jsonl", [{"_id": d, "title": t, "text": x} for d, (t, x) in DOCS.items()])
    ingest(src, "rocks", home=folder / "home")
    return Collection("rocks", folder / "home").lucene


def test_fixture_hand_computation_is_not_trivial() -> None:
    # guard against a fixture where every score is the same number
    scores = bm25(["quartz", "granite"], 0.9, 0.4)
    assert len(set(round(s, 4) for s in scores.values())) == len(scores) >= 4


@pytest.mark.parametrize(
    "query", ["jasper obsidian", "quartz granite basalt marble", "pumice slate", "quartz quartz basalt", "flint"]
)
@pytest.mark.parametrize(("k1", "b"), [(0.9, 0.4), (1.2, 0.75)])
@pytest.mark.parametrize("depth", [1, 3, 1000])
def test_the_array_read_is_anserinis_own_search(index, query: str, k1: float, b: float, depth: int) -> None:
    """The ranking is read as two arrays (`_ArraySearch`) rather than through SimpleSearcher.search's
    one object per hit: the same docids, order (score ties by docid) and scores, exactly."""
    searcher = lucene_module._searcher(str(index.folder), k1, b)
    own = [(hit.docid, float(hit.score)) for hit in searcher.object.search(query, depth)]
    docids, scores = index.ranking(query, depth, k1=k1, b=b)
    assert own and list(zip(docids, scores, strict=True)) == own


def test_searches_from_many_threads_give_the_sequential_ranking(index) -> None:
    """Searches run in thread pools (tuning/grid.py): the same rankings as one at a time, and no
    Java exception (a jnius proxy built in several threads at once once gave NullPointerExceptions
    and a JVM crash, one in a few thousand searches)."""
    from concurrent.futures import ThreadPoolExecutor

    lucene_module.forget_searchers()  # each setting's searcher is first built inside the pool
    queries = ["jasper obsidian", "quartz granite basalt marble", "pumice slate", "flint", "quartz"]
    settings = [(0.9, 0.4), (1.2, 0.75), (2.0, 0.0), (0.5, 1.0)]
    calls = [(q, k1, b) for _ in range(60) for q in queries for k1, b in settings]
    with ThreadPoolExecutor(max_workers=4) as pool:
        got = list(pool.map(lambda c: index.ranking(c[0], 1000, k1=c[1], b=c[2]), calls))
    alone = {c: index.ranking(c[0], 1000, k1=c[1], b=c[2]) for c in set(calls)}
    assert got == [alone[c] for c in calls]


@pytest.mark.parametrize(
    "query",
    [
        "quartz",
        "granite basalt",
        "quartz granite marble",
        "flint",
        "pumice slate",
        "quartz quartz basalt",  # a repeated query word counts twice
    ],
)
def test_scores_match_lucene_bm25_at_default_parameters(index, query: str) -> None:
    assert (index.meta.k1, index.meta.b) == (0.9, 0.4)
    assert_ranking(index.search(query), expected_ranking(query.split()))


@pytest.mark.parametrize(("k1", "b"), [(1.2, 0.75), (2.0, 0.0), (0.5, 1.0)])
def test_scores_match_lucene_bm25_with_per_search_parameters(index, k1: float, b: float) -> None:
    query = "quartz granite basalt"
    assert_ranking(index.search(query, k1=k1, b=b), expected_ranking(query.split(), k1, b))


@pytest.mark.parametrize("query", ["quartz granite", "basalt marble marble", "jasper obsidian"])
def test_scoring_chosen_documents_gives_the_search_scores(index, query: str) -> None:
    expected = dict(expected_ranking(query.split()))
    scores = index.score_documents(query, [*DOCS, "no-such-doc"])
    for docid in DOCS:
        assert scores[docid] == pytest.approx(expected.get(docid, 0.0), abs=1e-4), docid
    assert scores["no-such-doc"] == 0.0


@pytest.mark.parametrize("query", ["", "AND OR ( ) : * ~", 'title:quartz^9 "granite', "\x00\ud800"])
def test_scoring_chosen_documents_takes_untrusted_text_as_words(index, query: str) -> None:
    # Syntax characters are separators, as in `search`: the same words, the same scores.
    scores = index.score_documents(query, ["d1", "d2"])
    searched = {h.docid: h.score for h in index.search(query)}
    assert scores == pytest.approx({d: searched.get(d, 0.0) for d in ("d1", "d2")}, abs=1e-4)


def test_case_and_inflection_are_normalised(index) -> None:
    assert [h.docid for h in index.search("QUARTZ Granites")] == [h.docid for h in index.search("quartz granite")]


def test_depth_cuts_the_ranking(index) -> None:
    full = index.search("quartz granite basalt marble")
    assert len(full) == 5
    assert index.search("quartz granite basalt marble", k=2) == full[:2]


def test_ties_are_broken_by_docid(index) -> None:
    hits = index.search("jasper obsidian")
    tied = [h for h in hits if h.docid.endswith("-tie")]
    assert [h.docid for h in tied] == ["aa-tie", "mm-tie", "zz-tie"]
    assert [h.rank for h in tied] == [1, 2, 3]
    assert tied[0].score == pytest.approx(tied[2].score, abs=1e-4)
    assert_ranking(hits, expected_ranking(["jasper", "obsidian"]))


def test_non_latin_scripts_are_searchable(index) -> None:
    assert_ranking(index.search("пример"), expected_ranking(["пример"]))
    assert_ranking(index.search("检索"), expected_ranking(["检", "索"]))
    assert_ranking(index.search("البحث"), expected_ranking(["البحث"]))


# -- bag-of-words safety: user text never raises ---------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        "title:(quartz AND",
        '"quartz"',
        "quartz*",
        "(quartz)",
        "quartz~2",
        "quartz^5",
        "quartz:",
        "{quartz]",
        "quartz \\",
        "&& quartz ||",
    ],
)
def test_lucene_syntax_has_no_effect(index, query: str) -> None:
    assert_ranking(index.search(query), expected_ranking(["quartz"]))


@pytest.mark.parametrize(
    "query", ["title:(a AND", "*", '"', "?", "", "   ", "!!!", "the of and to in", "\x00\x01\x1f\x7f", "AND OR NOT"]
)
def test_queries_without_searchable_words_return_nothing(index, query: str) -> None:
    assert index.search(query) == []


def test_control_characters_are_ignored(index) -> None:
    hits = index.search("quartz\x00granite\x07\x1b[31m\tbasalt\r\n\x7f")
    assert_ranking(hits, expected_ranking(["quartz", "granite", "basalt", "31m"]))


def test_very_long_query(index) -> None:
    query = ("quartz " * 2000)[:10_000]
    assert len(query) == 10_000
    hits = index.search(query)
    assert [h.docid for h in hits] == [d for d, _ in expected_ranking(["quartz"])]


def test_many_distinct_words_are_cut_before_lucene_clause_limit(index) -> None:
    words = ["quartz"] + [f"unknownword{i}" for i in range(3000)] + ["granite"]
    assert bag_of_words(" ".join(words)).split()[-1] == f"unknownword{MAX_QUERY_TERMS - 2}"
    # quartz survives the cut, granite (word 3002) does not
    assert_ranking(index.search(" ".join(words)), expected_ranking(["quartz"]))


@pytest.mark.parametrize(
    ("query", "terms"),
    [
        ("поиск по корпусу документов", []),  # "поиск" is not the indexed "поиска": no stemming across scripts
        ("信息检索系统的评估方法", ["检", "索"]),  # one token per ideograph: 检 and 索 match "intl"
        ("استرجاع المعلومات", []),
        ("情報検索", ["索"]),  # Japanese 検 is not the simplified 检; 索 is shared
        ("검색 시스템", []),
        ("ค้นหาเอกสาร", []),
        ("αναζήτηση", []),
        ("🔍📚 quartz", ["quartz"]),
    ],
)
def test_other_scripts_never_raise(index, query: str, terms: list[str]) -> None:
    # The fixture's words of each query, and only them, are searched (BM25 as computed by hand).
    assert_ranking(index.search(query), expected_ranking(terms))


@pytest.mark.parametrize(
    "first",
    [
        pytest.param(0x4E00, id="cjk-unified"),
        pytest.param(0x3400, id="cjk-extension-a"),
        pytest.param(0x20000, id="cjk-extension-b"),  # outside the BMP
    ],
)
def test_long_cjk_text_never_raises(index, first: int) -> None:
    # 2,000 distinct ideographs without spaces: one "word" for a \w+ count, but 2,000 terms for
    # Lucene's analyzer (each ideograph is a token), over Lucene's 1,024-clause limit.
    # Words before the cut are still searched: 检索 (in "intl") leads, the ideographs follow.
    query = "检索 " + "".join(chr(first + i) for i in range(2000)) + " 检索"
    hits = index.search(query)
    assert [(h.docid, h.rank) for h in hits] == [("intl", 1)] and hits[0].score > 0


def test_lone_surrogate_never_raises(index) -> None:
    # json.loads('"\\ud83d"') yields a lone surrogate: a truncated emoji in a model's tool call.
    hits = index.search("quartz \ud83d granite")
    assert [h.docid for h in hits] == [d for d, _ in expected_ranking(["quartz", "granite"])]


def test_lucene_boot_skips_pyserinis_neural_encoders() -> None:
    """Booting Lucene must not import torch/transformers/openai (seconds per CLI process) nor set
    any API key; `pyserini.encode` stays a normal, importable module afterwards."""
    import os
    import subprocess
    import sys

    code = (
        "import importlib.util, os, sys\n"
        "from stores.jvm import pyserini_lucene\n"
        "lucene = pyserini_lucene()\n"
        "assert lucene.LuceneSearcher is not None\n"
        "heavy = sorted(m for m in ('torch', 'transformers', 'sklearn', 'openai') if m in sys.modules)\n"
        "print(heavy, 'pyserini.encode' in sys.modules, importlib.util.find_spec('pyserini.encode') is not None,"
        " 'OPENAI_API_KEY' in os.environ)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        cwd=Path(__file__).resolve().parents[1],
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[] False True False"
