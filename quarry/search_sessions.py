"""The agent's search sessions a server keeps (`quarry mcp`, `quarry serve`): one per collection,
channel and version, so a search_id returned by one call pages its ranking in a later call."""

from __future__ import annotations

import itertools
import threading
from typing import Any


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
    Each session's cache is bounded (`TOOL_LIMITS.cache_size` rankings); calls on one session are
    serialised (its cache is not thread-safe, and the SDK runs tools in worker threads)."""

    def __init__(self) -> None:
        self._sessions: dict[tuple[str, str, str | None], Any] = {}
        self._locks: dict[int, threading.Lock] = {}
        self._lock = threading.Lock()
        counter = itertools.count(1)
        self._new_id = lambda: f"s{next(counter)}"

    def tools(self, name: str, channel: str) -> tuple[Any, threading.Lock]:
        from quarry.cli_search import tools_for
        from stores.home import collection_paths

        key = (name, channel, collection_paths(name).version)
        with self._lock:
            tools = self._sessions.get(key)
            if tools is None:
                tools = tools_for(name, semantic=channel == "semantic", new_search_id=self._new_id)
                older = [k for k in self._sessions if k[:2] == key[:2]]
                for stale in older[:-1]:  # keep the previous version's session, drop the ones before it
                    self._locks.pop(id(self._sessions.pop(stale)), None)
                self._sessions[key] = tools
                self._locks[id(tools)] = threading.Lock()
            return tools, self._locks[id(tools)]

    def holding(self, search_id: str) -> tuple[str, Any, threading.Lock] | None:
        with self._lock:
            for (name, _, _), tools in self._sessions.items():
                if search_id in tools.cache.ids():
                    return name, tools, self._locks[id(tools)]
        return None
