"""The agent's search sessions a server keeps (`quarry mcp`, `quarry serve`): one per collection,
channel and version, so a search_id returned by one call pages its ranking in a later call."""

from __future__ import annotations

import re
import threading
from typing import Any

from nodes.tools.ranking_cache import SharedCacheLimits, SharedRankingCache
from stores.errors import QuarryError

ISSUED = re.compile(r"s([1-9][0-9]{0,17})")  # the ids this server's one sequence hands out


class SearchSessions:
    """The agent's tool sessions this server keeps, one per (collection, channel, version).

    Why kept, not opened per call: a search caches its deep ranking behind the `search_id` it
    returns (`nodes.tools.ranking_cache`), and `read_search_results(search_id)` pages that ranking
    later without searching again — so the session that made the search must outlive the call. One
    sequence names every session's searches (s1, s2, …), so a search_id alone finds its session. A
    session is keyed by the collection's current version too: after a re-ingest the next search
    opens the new version, while search_ids of the previous version still page the ranking they
    were given; older sessions are let go (a long-running `quarry serve` would otherwise keep a
    session — its rankings and open indexes — per version ever searched).
    Every client of the server shares these sessions, so their rankings are kept by age and memory
    (`SharedRankingCache`, `limits`), not by a count a burst of clients would outrun; calls on one
    session are serialised (its searchers are, and the SDK runs tools in worker threads)."""

    def __init__(self, limits: SharedCacheLimits | None = None) -> None:
        self.limits = limits or SharedCacheLimits()
        self._sessions: dict[tuple[str, str, str | None], Any] = {}
        self._locks: dict[int, threading.Lock] = {}
        self._lock = threading.Lock()
        self._issued = 0

    def _new_id(self) -> str:
        with self._lock:
            self._issued += 1
            return f"s{self._issued}"

    def tools(self, name: str, channel: str) -> tuple[Any, threading.Lock]:
        from quarry.app.search import tools_for
        from stores.home import collection_paths

        key = (name, channel, collection_paths(name).version)
        with self._lock:
            tools = self._sessions.get(key)
            if tools is None:
                cache = SharedRankingCache(self.limits)
                tools = tools_for(name, semantic=channel == "semantic", new_search_id=self._new_id, cache=cache)
                older = [k for k in self._sessions if k[:2] == key[:2]]
                for stale in older[:-1]:  # keep the previous version's session, drop the ones before it
                    self._locks.pop(id(self._sessions.pop(stale)), None)
                self._sessions[key] = tools
                self._locks[id(tools)] = threading.Lock()
            return tools, self._locks[id(tools)]

    def holding(self, search_id: str) -> tuple[str, Any, threading.Lock] | None:
        with self._lock:
            for (name, _, _), tools in self._sessions.items():
                if search_id in tools.cache:
                    return name, tools, self._locks[id(tools)]
        return None

    def unknown(self, search_id: str) -> QuarryError:
        """The error for a search_id no session holds: expired (this server issued it, with the
        promise it kept) or never issued here."""
        issued = ISSUED.fullmatch(search_id) if isinstance(search_id, str) else None
        if issued and int(issued.group(1)) <= self._issued:
            return QuarryError(
                "unknown_search_id",
                f"search {search_id!r} has expired",
                f"search again; {self.limits.promise()}, or until its collection is ingested again twice",
            )
        return QuarryError(
            "unknown_search_id",
            f"no cached search {search_id!r}",
            "use a search_id returned by search on this server, or search again",
        )
