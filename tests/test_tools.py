"""The agent-facing tools (nodes.tools.corpus.ToolSession) over a real, Lucene-indexed collection."""

from __future__ import annotations

import re

import pytest

from nodes.tools.corpus import CACHE_SIZE, PAGE_LIMIT_MAX, READ_LIMIT_MAX, ToolSession
from nodes.tools.query_check import MAX_QUERY_CHARS
from nodes.tools.results import DocumentPage, SearchPage, ToolError
from tests.conftest import SHARED_TOPIC_DOCS
from tests.fakes import long_doc

QUERY = "retrieval"


@pytest.fixture
def tools(shared_collection) -> ToolSession:
    return ToolSession(shared_collection.lucene, shared_collection.corpus)


@pytest.fixture(scope="module")
def deep(shared_collection) -> list:
    """The ranking the tools must reproduce: a direct depth-1000 Lucene search."""
    return shared_collection.lucene.search(QUERY, 1000)


def search_page(tools: ToolSession, query: str = QUERY) -> SearchPage:
    page = tools.search("test", query)
    assert isinstance(page, SearchPage), page
    return page


def tool_error(result, code: str) -> ToolError:
    assert isinstance(result, ToolError), result
    assert result.code == code
    assert result.hint.strip() and result.message.strip()
    assert result.render() == f"Error in {result.tool}: {result.message}\nHint: {result.hint}"
    return result


# -- search ---------------------------------------------------------------------------------------


def test_search_previews_ranks_one_to_five(tools: ToolSession, deep, shared_collection) -> None:
    page = search_page(tools)
    assert page.total == len(deep) == SHARED_TOPIC_DOCS
    assert [h.rank for h in page.hits] == [1, 2, 3, 4, 5]
    assert [h.docid for h in page.hits] == [h.docid for h in deep[:5]]
    for view, hit in zip(page.hits, deep, strict=False):  # the page shows the top five of the whole ranking
        rec = shared_collection.corpus.get(view.docid)
        assert view.score == round(hit.score, 4)
        assert view.title == rec.title
        assert view.excerpt and len(view.excerpt) <= 222
        # the term sits ~300 characters into each text, so the excerpt had to find it
        assert rec.text.index(QUERY) > 220 and QUERY in view.excerpt


def test_search_render(tools: ToolSession) -> None:
    page = search_page(tools)
    lines = page.render().splitlines()
    assert lines[0] == f"[search_id={page.search_id}] {SHARED_TOPIC_DOCS} results for {QUERY!r}; ranks 1–5:"
    for h in page.hits:
        assert f"{h.rank}. docid={h.docid} score={h.score:.3f} | {h.title}" in lines
        assert f"   {h.excerpt}" in lines
    assert lines[-1].startswith(f'Hint: read_search_results(search_id="{page.search_id}", offset=6, limit=10)')


def test_search_ids_are_new_per_call(tools: ToolSession) -> None:
    first, second = search_page(tools), search_page(tools)
    assert first.search_id != second.search_id
    for sid in (first.search_id, second.search_id):
        assert isinstance(tools.read_search_results("test", sid, 1, 5), SearchPage)


@pytest.mark.parametrize("query", ["", "   ", "\n\t", None, 42, ["retrieval"], {"q": "retrieval"}])
def test_empty_or_non_text_query(tools: ToolSession, query) -> None:
    tool_error(tools.search("test", query), "empty_query")
    assert tools.cache.ids() == []  # nothing was cached


def test_search_without_results(tools: ToolSession) -> None:
    page = search_page(tools, "xylophonist quixotry")
    assert page.total == 0 and page.hits == [] and page.note
    assert "no results" in page.render()
    err = tool_error(tools.read_search_results("test", page.search_id, 1, 10), "offset_past_end")
    assert "search again" in err.hint


def test_overlong_query_is_cut_with_a_note(tools: ToolSession) -> None:
    query = QUERY + " " + "x" * (MAX_QUERY_CHARS + 500)
    page = search_page(tools, query)
    assert len(page.query) == MAX_QUERY_CHARS and page.note
    assert page.total == SHARED_TOPIC_DOCS


@pytest.mark.parametrize(
    "query",
    [
        "title:(a AND",
        "*",
        '"',
        "the of and",
        "\x00\x1b[2J",
        "поиск документов",
        "استرجاع",
        "检索系统",
        pytest.param("".join(chr(0x4E00 + i) for i in range(2000)), id="2000-distinct-ideographs"),
        pytest.param("retrieval \ud83d", id="lone-surrogate"),  # a truncated emoji in a JSON tool call
    ],
)
def test_search_never_raises(tools: ToolSession, shared_collection, query: str) -> None:
    """Hostile text gives a page: ranks 1..n of the direct Lucene ranking of the query (its words
    as a bag; none of these matches a document except "retrieval"), or one repairable tool error."""
    result = tools.search("test", query)
    if isinstance(result, ToolError):  # only a query with no word to search may be refused
        tool_error(result, "empty_query")
        assert not re.search(r"\w", query), "a query with a word to search was refused"
        return
    assert isinstance(result, SearchPage), result
    direct = shared_collection.lucene.search(result.query, 1000)
    assert result.total == len(direct) and result.offset == 1
    assert [(h.rank, h.docid, h.score) for h in result.hits] == [
        (i, h.docid, round(h.score, 4)) for i, h in enumerate(direct[:5], start=1)
    ]
    assert all(shared_collection.corpus.get(h.docid).title == h.title for h in result.hits)
    assert tools.cache.get(result.search_id) is not None and tools.trajectory.surfaced == {h.docid for h in direct}
    assert result.total == (SHARED_TOPIC_DOCS if "retrieval" in query else 0), result.total


# -- read_search_results ----------------------------------------------------------------------------


def test_paging_returns_exact_ranks_of_the_deep_ranking(tools: ToolSession, deep) -> None:
    sid = search_page(tools).search_id
    page = tools.read_search_results("test", sid, 6, 10)
    assert isinstance(page, SearchPage)
    assert page.search_id == sid and page.offset == 6 and page.total == len(deep)
    assert [h.rank for h in page.hits] == list(range(6, 16))
    assert [(h.docid, h.score) for h in page.hits] == [(h.docid, round(h.score, 4)) for h in deep[5:15]]
    assert all(QUERY in h.excerpt for h in page.hits)
    rendered = page.render().splitlines()
    assert rendered[0].endswith("ranks 6–15:")
    assert "offset=16" in rendered[-1]
    # numeric strings and integral floats are accepted as the same page
    assert tools.read_search_results("test", sid, "6", 10.0) == page


def test_limit_is_capped_with_a_note(tools: ToolSession, deep) -> None:
    sid = search_page(tools).search_id
    page = tools.read_search_results("test", sid, 1, 80)
    assert isinstance(page, SearchPage)
    assert len(page.hits) == PAGE_LIMIT_MAX
    assert [h.docid for h in page.hits] == [h.docid for h in deep[:PAGE_LIMIT_MAX]]
    assert f"limit capped at {PAGE_LIMIT_MAX}" in page.note
    assert f"Note: limit capped at {PAGE_LIMIT_MAX}" in page.render()


def test_last_page_ends_the_ranking(tools: ToolSession, deep) -> None:
    sid = search_page(tools).search_id
    page = tools.read_search_results("test", sid, len(deep) - 2, 10)
    assert [h.rank for h in page.hits] == [len(deep) - 2, len(deep) - 1, len(deep)]
    assert page.render().splitlines()[-1] == "End of this ranking."


def test_cache_evicts_the_least_recently_used_search(shared_collection) -> None:
    tools = ToolSession(shared_collection.lucene, shared_collection.corpus)
    ids = [search_page(tools).search_id for _ in range(CACHE_SIZE + 1)]
    tool_error(tools.read_search_results("test", ids[0], 1, 5), "unknown_search_id")
    assert isinstance(tools.read_search_results("test", ids[1], 1, 5), SearchPage)

    tools = ToolSession(shared_collection.lucene, shared_collection.corpus)
    ids = [search_page(tools).search_id for _ in range(CACHE_SIZE)]
    assert isinstance(tools.read_search_results("test", ids[0], 1, 5), SearchPage)  # touch the oldest
    search_page(tools)
    assert isinstance(tools.read_search_results("test", ids[0], 1, 5), SearchPage)  # survived
    tool_error(tools.read_search_results("test", ids[1], 1, 5), "unknown_search_id")  # evicted instead


@pytest.mark.parametrize(
    ("offset", "limit", "code"),
    [
        (0, 10, "bad_offset"),
        (-3, 10, "bad_offset"),
        ("abc", 10, "bad_offset"),
        (True, 10, "bad_offset"),
        (None, 10, "bad_offset"),
        (6.5, 10, "bad_offset"),
        ("", 10, "bad_offset"),
        (6, None, "bad_limit"),
        (6, 0, "bad_limit"),
        (6, -1, "bad_limit"),
        (6, "ten", "bad_limit"),
        (6, False, "bad_limit"),
        (6, [10], "bad_limit"),
        (SHARED_TOPIC_DOCS + 1, 10, "offset_past_end"),
        (10_000, 10, "offset_past_end"),
    ],
)
def test_bad_paging_arguments(tools: ToolSession, offset, limit, code: str) -> None:
    sid = search_page(tools).search_id
    err = tool_error(tools.read_search_results("test", sid, offset, limit), code)
    if code == "offset_past_end":
        assert str(SHARED_TOPIC_DOCS) in err.hint


@pytest.mark.parametrize("search_id", ["s999", "", None, 1, True])
def test_unknown_search_id(tools: ToolSession, search_id) -> None:
    known = search_page(tools).search_id
    err = tool_error(tools.read_search_results("test", search_id, 6, 10), "unknown_search_id")
    assert known in err.hint  # the hint names ids that do work


# -- read_document ------------------------------------------------------------------------------


def test_read_document_pages_numbered_lines(tools: ToolSession) -> None:
    _, lines = long_doc()
    page = tools.read_document("test", "long1")
    assert isinstance(page, DocumentPage)
    assert (page.offset, page.last_line, page.total_lines) == (1, 200, len(lines)) == (1, 200, 302)
    assert page.lines == lines[:200] and page.title == lines[0]
    out = page.render().splitlines()
    assert out[0] == "[docid=long1 lines 1–200 of 302]"
    assert out[1] == f"  1  {lines[0]}" and out[200] == f"200  {lines[199]}"
    assert out[-1] == 'Hint: read_document(docid="long1", offset=201) continues.'

    rest = tools.read_document("test", "long1", 201)
    assert rest.lines == lines[200:]
    assert rest.render().splitlines()[0] == "[docid=long1 lines 201–302 of 302]"
    assert rest.render().splitlines()[-1] == "End of document."

    window = tools.read_document("test", "long1", "10", 3)
    assert window.lines == lines[9:12] and window.render().splitlines()[1] == f"10  {lines[9]}"


def test_read_document_limit_is_capped(tools: ToolSession) -> None:
    page = tools.read_document("test", "long1", 1, READ_LIMIT_MAX + 100)
    assert len(page.lines) == 302 and f"limit capped at {READ_LIMIT_MAX}" in page.note


@pytest.mark.parametrize(
    ("docid", "offset", "limit", "code"),
    [
        ("nope", 1, 200, "unknown_docid"),
        ("", 1, 200, "unknown_docid"),
        (None, 1, 200, "unknown_docid"),
        (123, 1, 200, "unknown_docid"),
        (["long1"], 1, 200, "unknown_docid"),
        ("LONG1", 1, 200, "unknown_docid"),
        ("long1", 303, 200, "offset_past_end"),
        ("long1", 0, 200, "bad_offset"),
        ("long1", -1, 200, "bad_offset"),
        ("long1", "x", 200, "bad_offset"),
        ("long1", True, 200, "bad_offset"),
        ("long1", None, 200, "bad_offset"),
        ("long1", 1, 0, "bad_limit"),
        ("long1", 1, "all", "bad_limit"),
        ("long1", 1, None, "bad_limit"),
        ("long1", 1, True, "bad_limit"),
    ],
)
def test_bad_read_document_arguments(tools: ToolSession, docid, offset, limit, code: str) -> None:
    err = tool_error(tools.read_document("test", docid, offset, limit), code)
    if code == "offset_past_end":
        assert "302" in err.hint
    assert tools.trajectory.opened == set()


# -- trajectory -----------------------------------------------------------------------------------


def test_trajectory_sets(tools: ToolSession, deep) -> None:
    page = search_page(tools)
    assert tools.trajectory.surfaced == {h.docid for h in deep}
    assert tools.trajectory.previewed == {h.docid for h in deep[:5]}
    assert tools.trajectory.opened == set()
    tools.read_search_results("test", page.search_id, 6, 10)
    assert tools.trajectory.previewed == {h.docid for h in deep[:15]}
    assert tools.trajectory.surfaced == {h.docid for h in deep}, "paging a cached ranking surfaces nothing new"
    tools.read_document("test", deep[20].docid)
    tools.read_document("test", "long1", 50, 5)
    assert isinstance(tools.read_document("test", "no-such-doc"), ToolError)
    assert isinstance(tools.read_search_results("test", page.search_id, 10_000, 10), ToolError)
    assert tools.trajectory.opened == {deep[20].docid, "long1"}, "a refused call opens nothing"
    assert deep[20].docid not in tools.trajectory.previewed  # opening does not count as previewing
    # long1 (no "retrieval" in it) was opened without any search returning it: opened only
    assert "long1" not in tools.trajectory.surfaced | tools.trajectory.previewed
    assert tools.trajectory.previewed == {h.docid for h in deep[:15]}
    assert isinstance(tools.search("test", "xylophonist quixotry"), SearchPage)  # no results: nothing new
    assert tools.trajectory.surfaced == {h.docid for h in deep}


def test_search_ids_can_be_injected(shared_collection) -> None:
    ids = iter(["job7-a", "job7-b"])
    tools = ToolSession(shared_collection.lucene, shared_collection.corpus, new_search_id=lambda: next(ids))
    assert [search_page(tools).search_id, search_page(tools).search_id] == ["job7-a", "job7-b"]
    assert re.fullmatch(r"s\d+", search_page(ToolSession(shared_collection.lucene, shared_collection.corpus)).search_id)
