"""The tools a ReAct model is given, as LangChain tools with typed (pydantic) arguments.

`bind_tools` sends each tool's JSON schema from its pydantic model, so the model sees every
argument with its type, bounds and description; the same model validates the arguments the
model sends back. Every tool takes a `reason` first: it is kept in the trace and the trajectory.
A validation failure becomes a message telling the model how to repair the call — never an
exception — exactly like a tool's own `ToolError`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from langchain_core.tools import StructuredTool
from pydantic import BaseModel, Field, ValidationError

from nodes.job.config import TOOL_LIMITS as LIMITS
from nodes.job.config import CitationDirection
from nodes.tools.clipped import clip
from nodes.tools.results import ToolError

# Every number below is read from nodes.job.config.ToolLimits, the limits the tools enforce
# (nodes.tools.corpus): a docstring or description states them through an f-string, never by copy.
REASON = Field(description="Why you make this call, in a few words (kept in the job's trace).")
Reason = Annotated[str, clip(LIMITS.reason_chars)]
DocId = Annotated[str, clip(LIMITS.docid_chars)]


class SearchArgs(BaseModel):
    __doc__ = (
        f"Search the collection and cache the full ranking ({LIMITS.depth} deep) under a search_id; "
        f"shows ranks 1-{LIMITS.preview}.\n    Write short keyword queries (3-8 words): the query is a bag "
        "of words, operators and quotes do nothing."
    )

    reason: Reason = REASON
    query: Annotated[str, clip(LIMITS.query_arg_chars)] = Field(
        description="A few keywords, e.g. 'dense passage retrieval dual encoder'."
    )
    channel: Literal["lexical", "semantic"] = Field(
        "lexical", description="lexical = BM25 on words (default); semantic = embeddings (if the collection has them)."
    )


class ReadSearchResultsArgs(BaseModel):
    """Show more ranks of a cached search without searching again. Browse a ranking before rewriting the query."""

    reason: Reason = REASON
    search_id: Annotated[str, clip(LIMITS.search_id_chars)] = Field(
        description="A search_id returned by search, e.g. 's1'."
    )
    offset: int = Field(LIMITS.page_offset, ge=1, description="First rank to show (1-based).")
    limit: int = Field(
        LIMITS.page_limit,
        ge=1,
        le=LIMITS.page_limit_max,
        description=f"How many ranks to show (at most {LIMITS.page_limit_max}).",
    )


class ReadDocumentArgs(BaseModel):
    """Read a document by numbered lines. Read a document before you cite or submit it."""

    reason: Reason = REASON
    docid: DocId = Field(description="A docid exactly as shown in results.")
    offset: int = Field(1, ge=1, description="First line to show.")
    limit: int = Field(
        LIMITS.read_limit,
        ge=1,
        le=LIMITS.read_limit_max,
        description=f"How many lines to show (at most {LIMITS.read_limit_max}).",
    )


class ExpandCitationsArgs(BaseModel):
    """Documents linked to a document by citation: its references, the papers citing it, or related by co-citation."""

    reason: Reason = REASON
    docid: DocId = Field(description="A docid exactly as shown in results.")
    direction: CitationDirection = "both"
    limit: int = Field(LIMITS.citation_limit, ge=1, le=LIMITS.citation_limit_max)


class SubmitArgs(BaseModel):
    """Finish the job. List mode: the relevant docids, best first. Answer mode: also the explanation
    (each claim followed by the [docid] of a document you read that supports it), the exact answer and
    your confidence. Only documents that searches returned count; say so if the evidence is insufficient."""

    reason: Reason = REASON
    docids: Annotated[list[str], clip(LIMITS.submit_docids)] = Field(
        default_factory=list, description="Relevant docids, best first (documents you found and ideally read)."
    )
    explanation: Annotated[str, clip(LIMITS.explanation_chars)] = Field(
        "", description="Answer mode: the explanation with [docid] citations."
    )
    exact_answer: Annotated[str, clip(LIMITS.exact_answer_chars)] = Field(
        "", description="Answer mode: the short final answer."
    )
    confidence: int = Field(50, ge=0, le=100, description="Answer mode: confidence 0-100 that the answer is right.")
    insufficient_evidence: bool = Field(False, description="Answer mode: true if the documents do not answer it.")
    ranked: bool = Field(
        False,
        description="True only if docids are in your deliberate order of relevance, which is then kept; "
        "otherwise Quarry orders them by the evidence it reads in each.",
    )


TOOL_ARGS: dict[str, type[BaseModel]] = {
    "search": SearchArgs,
    "read_search_results": ReadSearchResultsArgs,
    "read_document": ReadDocumentArgs,
    "expand_citations": ExpandCitationsArgs,
    "submit": SubmitArgs,
}
RETRIEVAL_TOOLS = ("search", "read_search_results", "read_document", "expand_citations")


def _unbound(**_: Any) -> Any:  # the schemas are bound to the model; execution goes through `run_tool`
    raise RuntimeError("agent tools are executed by nodes.react.agent, not by LangChain")


def tool_definitions(channels: set[str] | None = None) -> list[StructuredTool]:
    """The tools as LangChain tools (for `bind_tools`), in a fixed order so the prompt prefix is
    stable across calls; `expand_citations` only when the collection has citation links."""
    names = [n for n in TOOL_ARGS if n != "expand_citations" or channels is None or "citations" in channels]
    return [
        StructuredTool.from_function(
            func=_unbound, name=n, description=" ".join((TOOL_ARGS[n].__doc__ or "").split()), args_schema=TOOL_ARGS[n]
        )
        for n in names
    ]


def parse_args(name: str, raw: Any) -> BaseModel | ToolError:
    """Validated arguments for tool `name`, or a ToolError that says how to repair the call."""
    schema = TOOL_ARGS.get(name)
    if schema is None:
        return ToolError(
            tool=str(name)[:60],
            code="unknown_tool",
            message=f"there is no tool {str(name)[:60]!r}",
            hint=f"use one of: {', '.join(TOOL_ARGS)}",
        )
    if isinstance(raw, str):
        try:
            import json

            raw = json.loads(raw)
        except ValueError:
            return ToolError(
                tool=name,
                code="bad_arguments",
                message="the arguments are not a JSON object",
                hint=f"send a JSON object with the fields of {name}",
            )
    raw = dict(raw) if isinstance(raw, dict) else {}
    if not isinstance(raw.get("reason"), str) or not raw.get("reason", "").strip():
        raw["reason"] = "(no reason given)"  # asked for in the schema; a call without one still runs
    try:
        return schema.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()[:5]
        )
        return ToolError(
            tool=name,
            code="bad_arguments",
            message=f"invalid arguments: {problems}",
            hint=f"fields of {name}: {', '.join(schema.model_fields)}",
        )
