"""The search session's cache of deep rankings, kept behind the `search_id`s the tools hand out.

Its own module because the cache is the state a search session shares across calls and across
processes: `search` fills it, `read_search_results` pages it without searching again
(`nodes.tools.corpus`), and the job runtime (`nodes.job.traced_tools.StoredRankingCache`) persists it
in the job store so a retried or resumed node sees the same search_ids. An agent's own session keeps
`nodes.job.config.TOOL_LIMITS.cache_size` rankings (`RankingCache`); a server's session, shared by
all its clients, keeps them by age and memory (`SharedRankingCache`).
"""

from __future__ import annotations

import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from nodes.job.config import TOOL_LIMITS


@dataclass(frozen=True, slots=True)
class CachedRanking:
    """A deep ranking kept behind a search_id: parallel (docid, score) arrays."""

    query: str
    docids: tuple[str, ...]
    scores: tuple[float, ...]

    def nbytes(self) -> int:
        """What the ranking holds in memory (its tuples, strings and floats), for a byte budget."""
        return (
            sys.getsizeof(self.docids)
            + sum(map(sys.getsizeof, self.docids))
            + sys.getsizeof(self.scores)
            + sum(map(sys.getsizeof, self.scores))
            + sys.getsizeof(self.query)
        )


class RankingCache:
    """Least-recently-used cache of rankings, at most `capacity` per session."""

    def __init__(self, capacity: int = TOOL_LIMITS.cache_size) -> None:
        self.capacity = capacity
        self._items: OrderedDict[str, CachedRanking] = OrderedDict()

    def put(self, search_id: str, ranking: CachedRanking) -> None:
        self._items[search_id] = ranking
        self._items.move_to_end(search_id)
        while len(self._items) > self.capacity:
            self._items.popitem(last=False)

    def get(self, search_id: str) -> CachedRanking | None:
        ranking = self._items.get(search_id)
        if ranking is not None:
            self._items.move_to_end(search_id)
        return ranking

    def ids(self) -> list[str]:
        return list(self._items)

    def __contains__(self, search_id: object) -> bool:
        return search_id in self._items


@dataclass(frozen=True, slots=True)
class SharedCacheLimits:
    """How long and how much a shared cache keeps (defaults: TOOL_LIMITS.shared_cache_*)."""

    min_age_s: float = TOOL_LIMITS.shared_cache_min_age_s
    budget_bytes: int = TOOL_LIMITS.shared_cache_bytes
    ceiling_bytes: int = TOOL_LIMITS.shared_cache_ceiling_bytes

    def promise(self) -> str:
        """The guarantee in words, for a hint and the docs."""
        return (
            f"a search_id stays readable for at least {self.min_age_s / 60:g} minutes after its last use, "
            f"and longer while this server's rankings fit in {self.budget_bytes // 2**20} MB "
            f"(never past {self.ceiling_bytes // 2**20} MB)"
        )


class SharedRankingCache(RankingCache):
    """The rankings of a session every client of a server shares (`quarry serve`, `quarry mcp`).

    Why not a count: with one session for all clients, a fixed number of rankings is a race — 50
    clients searching at once evict each other's rankings before they page them. So a ranking is
    kept while it was used within `min_age_s` *or* while all fit in `budget_bytes` (whichever keeps
    more: least recently used dropped first, and only once old), and the hard `ceiling_bytes`
    bounds memory against a flood of searches. Thread-safe: the server reads ids from any thread."""

    def __init__(self, limits: SharedCacheLimits | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(capacity=sys.maxsize)
        self.limits = limits or SharedCacheLimits()
        self._clock = clock
        self._used: dict[str, float] = {}
        self._size: dict[str, int] = {}
        self._bytes = 0
        self._lock = threading.Lock()

    def put(self, search_id: str, ranking: CachedRanking) -> None:
        size = ranking.nbytes()
        with self._lock:
            self._drop(search_id)
            self._items[search_id] = ranking
            self._used[search_id], self._size[search_id] = self._clock(), size
            self._bytes += size
            old_before = self._clock() - self.limits.min_age_s
            while len(self._items) > 1 and self._bytes > self.limits.budget_bytes:
                oldest = next(iter(self._items))
                if self._used[oldest] >= old_before:
                    break
                self._drop(oldest)
            while len(self._items) > 1 and self._bytes > self.limits.ceiling_bytes:  # the newest always stays
                self._drop(next(iter(self._items)))

    def get(self, search_id: str) -> CachedRanking | None:
        with self._lock:
            ranking = self._items.get(search_id)
            if ranking is not None:
                self._items.move_to_end(search_id)
                self._used[search_id] = self._clock()
            return ranking

    def ids(self) -> list[str]:
        with self._lock:
            return list(self._items)

    def __contains__(self, search_id: object) -> bool:
        with self._lock:
            return search_id in self._items

    @property
    def nbytes(self) -> int:
        return self._bytes

    def _drop(self, search_id: str) -> None:
        if self._items.pop(search_id, None) is not None:
            del self._used[search_id]
            self._bytes -= self._size.pop(search_id)
