"""The check every front door applies to a query before searching it, and the typed problem it raises.

Its own module because the query check is shared by the agent's `search` tool
(`nodes.tools.corpus.ToolSession.search`) and the command line (`quarry search`), which renders
the same problem in its own syntax without loading the tools: a query must be text, non-empty and
(lexical channel) hold a searchable word; it is cut to `MAX_QUERY_CHARS`.
"""

from __future__ import annotations

from typing import Any

from nodes.job.config import TOOL_LIMITS
from stores.errors import QuarryError
from stores.lucene import distinct_terms

# Declared in nodes.job.config.ToolLimits, not here.
MAX_QUERY_CHARS = TOOL_LIMITS.query_chars


class QueryProblem(QuarryError):
    """A query that cannot be searched. The check is shared by every front door (the ReAct/MCP
    tools, the command line); the hint is typed — what to do plus an example query — so each door
    renders it in its own syntax: `search(reason="…", query="…")` for a model, `quarry search NAME
    "…"` for a person at a shell, `search(collection="NAME", query="…")` for an MCP client. `hint`
    (the QuarryError field) is the tool form."""

    def __init__(self, code: str, message: str, advice: str, tail: str = "", example: str = "dense retrieval") -> None:
        self.advice, self.tail, self.example = advice, tail, example
        super().__init__(code, message, self.tool_hint())

    def tool_hint(self) -> str:
        return f'{self.advice}, e.g. search(reason="…", query="{self.example}"){self.tail}'

    def cli_hint(self, collection: str) -> str:
        return f'{self.advice}, e.g. quarry search {collection} "{self.example}"{self.tail}'

    def for_cli(self, collection: str) -> QuarryError:
        """The same problem as the command line says it (code and message unchanged)."""
        return QuarryError(self.code, self.message, self.cli_hint(collection))

    def for_mcp(self, collection: str) -> QuarryError:
        """The same problem as `quarry mcp`'s search tool says it (its arguments name the collection)."""
        hint = f'{self.advice}, e.g. search(collection="{collection}", query="{self.example}"){self.tail}'
        return QuarryError(self.code, self.message, hint)


def check_query(query: Any, channel: Any = "lexical") -> str:
    """The query as it will be searched (cut to MAX_QUERY_CHARS), or QueryProblem when it is not
    text, is empty, or (lexical channel) has no searchable word."""
    if not isinstance(query, str) or not query.strip():
        raise QueryProblem("empty_query", "the query is empty or not text", "give some words describing what to find")
    if channel == "lexical" and distinct_terms(query[:MAX_QUERY_CHARS]) == 0:
        raise QueryProblem(
            "empty_query", "the query has no searchable word", "use words", tail="; symbols alone match nothing"
        )
    return query[:MAX_QUERY_CHARS]
