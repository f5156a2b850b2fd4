"""The search session's cache of deep rankings, kept behind the `search_id`s the tools hand out.

Its own module because the cache is the state a search session shares across calls and across
processes: `search` fills it, `read_search_results` pages it without searching again
(`nodes.tools.corpus`), and the job runtime (`nodes.job.traced_tools.StoredRankingCache`) persists it
in the job store so a retried or resumed node sees the same search_ids. Its capacity is
`nodes.job.config.TOOL_LIMITS.cache_size`.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from nodes.job.config import TOOL_LIMITS


@dataclass(frozen=True, slots=True)
class CachedRanking:
    """A deep ranking kept behind a search_id: parallel (docid, score) arrays."""

    query: str
    docids: tuple[str, ...]
    scores: tuple[float, ...]


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
