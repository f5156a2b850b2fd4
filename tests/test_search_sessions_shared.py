"""A server's search sessions are shared by all its clients (`quarry serve`, `quarry mcp`): a search_id
one client was just given must page under 50 concurrent clients, and one that really expired says so
with the server's promise. Through `QuarryService` — the function every door (HTTP
`GET /api/searches/ID`, Pi-Serini, MCP) calls — on the real `lit` collection (Lucene via Pyserini)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from nodes.tools.ranking_cache import CachedRanking, SharedCacheLimits, SharedRankingCache
from quarry.app.service import QuarryService
from stores.errors import QuarryError
from tests.conftest import LITERATURE

CLIENTS = 50
QUERIES = ["graph neural networks", "molecular property prediction", "robot arm control", "language models"]


def test_fifty_clients_search_then_page_their_own_search_id(literature) -> None:
    """50 clients each search, and only once all have searched (the worst order for the clients
    that searched first) page the search_id they were given: every page is found, and it is that
    search's ranking. Twice over, so the second round's searches run while the first's are held."""
    service = QuarryService(door="test")
    everyone_searched = threading.Barrier(CLIENTS)

    def client(k: int) -> tuple[str, str, list[str], list[str] | str]:
        query = QUERIES[k % len(QUERIES)]
        found = service.search(LITERATURE, query, "lexical", 1, 3)
        everyone_searched.wait()
        try:
            page = service.read_search_results(found.search_id, 1, 3)
        except QuarryError as err:
            return query, found.search_id, [h.docid for h in found.hits], err.code
        return query, found.search_id, [h.docid for h in found.hits], [h.docid for h in page.hits]

    for _ in range(2):
        with ThreadPoolExecutor(CLIENTS) as pool:
            results = list(pool.map(client, range(CLIENTS)))
        missing = [(sid, paged) for _, sid, _, paged in results if isinstance(paged, str)]
        assert not missing, f"{len(missing)} of {CLIENTS} search_ids were gone when paged: {missing[:5]}"
        assert len({sid for _, sid, _, _ in results}) == CLIENTS
        assert all(paged == hits for _, _, hits, paged in results), "each client pages its own ranking"


def test_an_expired_search_id_says_so_with_the_promise(literature) -> None:
    """An id this server issued and let go is `unknown_search_id` whose hint states how long ids are
    kept; an id it never issued is told apart."""
    from quarry.app.sessions import SearchSessions

    service = QuarryService(door="test")
    service.sessions = SearchSessions(SharedCacheLimits(budget_bytes=0, ceiling_bytes=0))
    first = service.search(LITERATURE, "graph neural networks", "lexical", 1, 3).search_id
    service.search(LITERATURE, "robot arm control", "lexical", 1, 3)  # only the newest is kept
    with pytest.raises(QuarryError) as expired:
        service.read_search_results(first, 1, 3)
    with pytest.raises(QuarryError) as never:
        service.read_search_results("s999999", 1, 3)
    assert expired.value.code == never.value.code == "unknown_search_id"
    assert "expired" in expired.value.message and "at least 10 minutes" in expired.value.hint, expired.value
    assert "expired" not in never.value.message


def ranking(n: int = 100) -> CachedRanking:
    return CachedRanking("q", tuple(f"d{i}" for i in range(n)), tuple(float(i) for i in range(n)))


def test_the_shared_cache_keeps_by_age_or_bytes_whichever_keeps_more() -> None:
    """Past its byte budget the cache drops the least recently used ranking only once it is older
    than the minimum age; the ceiling bounds memory even against young rankings."""
    now = [0.0]
    size = ranking().nbytes()
    cache = SharedRankingCache(
        SharedCacheLimits(min_age_s=600.0, budget_bytes=2 * size, ceiling_bytes=5 * size), clock=lambda: now[0]
    )
    for k in range(4):
        cache.put(f"s{k}", ranking())
    assert cache.ids() == ["s0", "s1", "s2", "s3"], "young rankings stay past the byte budget"
    now[0] = 601.0
    assert cache.get("s3") is not None  # used again: young again
    cache.put("s4", ranking())
    assert cache.ids() == ["s3", "s4"], "old ones go, least recently used first, down to the budget"
    for k in range(5, 10):
        cache.put(f"s{k}", ranking())
    assert len(cache.ids()) == 5 and cache.nbytes <= 5 * size, "the ceiling holds even for young ones"
