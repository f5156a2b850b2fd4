"""Typed results of the agent-facing tools, each with a compact text rendering for an LLM.

Results are a union — `SearchPage | DocumentPage | CitationPage | ToolError` — so callers
`match` on the type instead of parsing strings; `render()` is what goes into a model context.
The page sizes and directions its hints name are the tools' own (nodes.job.config.TOOL_LIMITS).
"""

from __future__ import annotations

import shlex
from typing import Literal

from pydantic import BaseModel

from nodes.job.config import CITATION_DIRECTIONS
from nodes.job.config import TOOL_LIMITS as LIMITS


class HitView(BaseModel):
    rank: int
    docid: str
    score: float
    title: str
    excerpt: str


class SearchPage(BaseModel):
    kind: Literal["search_page"] = "search_page"
    search_id: str
    query: str
    total: int
    offset: int
    hits: list[HitView]
    note: str = ""

    def render(self, collection: str | None = None) -> str:
        """The page as text; with `collection`, hints name the `quarry` commands (for a person at
        the command line) instead of the agent's tool calls."""
        if self.total == 0:
            return (
                f"[search_id={self.search_id}] no results for {self.query!r}. "
                "Hint: use other or fewer words; the query is a bag of words, operators have no effect."
            )
        last = self.offset + len(self.hits) - 1
        out = [f"[search_id={self.search_id}] {self.total} results for {self.query!r}; ranks {self.offset}–{last}:"]
        for h in self.hits:
            out.append(f"{h.rank}. docid={h.docid} score={h.score:.3f} | {h.title}")
            if h.excerpt:
                out.append(f"   {h.excerpt}")
        if self.note:
            out.append(f"Note: {self.note}")
        if last < self.total and collection:
            out.append(
                f"More: quarry search {collection} {shlex.quote(self.query)} --offset {last + 1} "
                f"--limit {LIMITS.page_limit}; "
                f"read one: quarry read {collection} DOCID"
            )
        elif last < self.total:
            out.append(
                f'Hint: read_search_results(search_id="{self.search_id}", offset={last + 1}, '
                f"limit={LIMITS.page_limit}) "
                "shows the next ranks without searching again; read_document(docid=…) reads a document."
            )
        else:
            out.append("End of this ranking.")
        return "\n".join(out)


class DocumentPage(BaseModel):
    kind: Literal["document_page"] = "document_page"
    docid: str
    title: str
    offset: int
    total_lines: int
    lines: list[str]
    note: str = ""

    @property
    def last_line(self) -> int:
        return self.offset + len(self.lines) - 1

    def render(self, collection: str | None = None) -> str:
        out = [f"[docid={self.docid} lines {self.offset}–{self.last_line} of {self.total_lines}]"]
        width = len(str(self.last_line))
        out.extend(f"{no:>{width}}  {line}" for no, line in enumerate(self.lines, start=self.offset))
        if self.note:
            out.append(f"Note: {self.note}")
        if self.last_line < self.total_lines and collection:
            out.append(f"More: quarry read {collection} {shlex.quote(self.docid)} --offset {self.last_line + 1}")
        elif self.last_line < self.total_lines:
            out.append(f'Hint: read_document(docid="{self.docid}", offset={self.last_line + 1}) continues.')
        else:
            out.append("End of document.")
        return "\n".join(out)


class CitationHit(HitView):
    """A document related to the seed by citation; `relation` says how (for direction "both")."""

    relation: str = ""


class CitationPage(BaseModel):
    kind: Literal["citation_page"] = "citation_page"
    docid: str
    title: str
    direction: str
    total: int
    hits: list[CitationHit]
    note: str = ""

    def render(self) -> str:
        head = f"[citations of docid={self.docid} direction={self.direction}]"
        if self.total == 0:
            return (
                f"{head} no documents for {self.title!r}."
                + (f"\nNote: {self.note}" if self.note else "")
                + '\nHint: try direction="both" or "ppr", or search(query=…) with words from the document.'
            )
        out = [f"{head} {self.total} documents for {self.title!r}; ranks 1–{len(self.hits)}:"]
        for h in self.hits:
            tag = f" [{h.relation}]" if self.direction == "both" and h.relation else ""
            out.append(f"{h.rank}. docid={h.docid} score={h.score:.4g}{tag} | {h.title}")
            if h.excerpt:
                out.append(f"   {h.excerpt}")
        if self.note:
            out.append(f"Note: {self.note}")
        more = (
            f'expand_citations(docid="{self.docid}", direction="{self.direction}", limit=…) shows up to '
            f"{LIMITS.citation_limit_max}; "
            if len(self.hits) < self.total
            else ""
        )
        out.append(
            f"Hint: {more}read_document(docid=…) reads a document; other directions: {', '.join(CITATION_DIRECTIONS)}."
        )
        return "\n".join(out)


class ToolError(BaseModel):
    """A misuse of a tool: what was wrong and how to repair the call."""

    kind: Literal["tool_error"] = "tool_error"
    tool: str
    code: str
    message: str
    hint: str

    def render(self) -> str:
        return f"Error in {self.tool}: {self.message}\nHint: {self.hint}"
