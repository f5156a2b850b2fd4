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

from nodes.clipped import clip
from nodes.tool_results import ToolError

REASON = Field(description="Why you make this call, in a few words (kept in the job's trace).")


class SearchArgs(BaseModel):
    """Search the collection and cache the full ranking (1000 deep) under a search_id; shows ranks 1-5.
    Write short keyword queries (3-8 words): the query is a bag of words, operators and quotes do nothing."""

    reason: Annotated[str, clip(500)] = REASON
    query: Annotated[str, clip(2000)] = Field(description="A few keywords, e.g. 'dense passage retrieval dual encoder'.")
    channel: Literal["lexical", "semantic"] = Field(
        "lexical", description="lexical = BM25 on words (default); semantic = embeddings (if the collection has them).")


class ReadSearchResultsArgs(BaseModel):
    """Show more ranks of a cached search without searching again. Browse a ranking before rewriting the query."""

    reason: Annotated[str, clip(500)] = REASON
    search_id: Annotated[str, clip(40)] = Field(description="A search_id returned by search, e.g. 's1'.")
    offset: int = Field(6, ge=1, description="First rank to show (1-based).")
    limit: int = Field(10, ge=1, le=50, description="How many ranks to show (at most 50).")


class ReadDocumentArgs(BaseModel):
    """Read a document by numbered lines. Read a document before you cite or submit it."""

    reason: Annotated[str, clip(500)] = REASON
    docid: Annotated[str, clip(200)] = Field(description="A docid exactly as shown in results.")
    offset: int = Field(1, ge=1, description="First line to show.")
    limit: int = Field(200, ge=1, le=500, description="How many lines to show (at most 500).")


class ExpandCitationsArgs(BaseModel):
    """Documents linked to a document by citation: its references, the papers citing it, or related by co-citation."""

    reason: Annotated[str, clip(500)] = REASON
    docid: Annotated[str, clip(200)] = Field(description="A docid exactly as shown in results.")
    direction: Literal["references", "cited_by", "both", "co_cited", "coupled", "ppr"] = "both"
    limit: int = Field(10, ge=1, le=50)


class SubmitArgs(BaseModel):
    """Finish the job. List mode: the relevant docids, best first. Answer mode: also the explanation
    (each claim followed by the [docid] of a document you read that supports it), the exact answer and
    your confidence. Only documents that searches returned count; say so if the evidence is insufficient."""

    reason: Annotated[str, clip(500)] = REASON
    docids: Annotated[list[str], clip(100)] = Field(default_factory=list,
                              description="Relevant docids, best first (documents you found and ideally read).")
    explanation: Annotated[str, clip(8000)] = Field("", description="Answer mode: the explanation with [docid] citations.")
    exact_answer: Annotated[str, clip(1000)] = Field("", description="Answer mode: the short final answer.")
    confidence: int = Field(50, ge=0, le=100, description="Answer mode: confidence 0-100 that the answer is right.")
    insufficient_evidence: bool = Field(False, description="Answer mode: true if the documents do not answer it.")


TOOL_ARGS: dict[str, type[BaseModel]] = {
    "search": SearchArgs, "read_search_results": ReadSearchResultsArgs, "read_document": ReadDocumentArgs,
    "expand_citations": ExpandCitationsArgs, "submit": SubmitArgs,
}
RETRIEVAL_TOOLS = ("search", "read_search_results", "read_document", "expand_citations")


def _unbound(**_: Any) -> Any:  # the schemas are bound to the model; execution goes through `run_tool`
    raise RuntimeError("agent tools are executed by nodes.react, not by LangChain")


def tool_definitions(channels: set[str] | None = None) -> list[StructuredTool]:
    """The tools as LangChain tools (for `bind_tools`), in a fixed order so the prompt prefix is
    stable across calls; `expand_citations` only when the collection has citation links."""
    names = [n for n in TOOL_ARGS if n != "expand_citations" or channels is None or "citations" in channels]
    return [StructuredTool.from_function(func=_unbound, name=n, description=" ".join((TOOL_ARGS[n].__doc__ or "").split()),
                                         args_schema=TOOL_ARGS[n]) for n in names]


def parse_args(name: str, raw: Any) -> BaseModel | ToolError:
    """Validated arguments for tool `name`, or a ToolError that says how to repair the call."""
    schema = TOOL_ARGS.get(name)
    if schema is None:
        return ToolError(tool=str(name)[:60], code="unknown_tool", message=f"there is no tool {str(name)[:60]!r}",
                         hint=f"use one of: {', '.join(TOOL_ARGS)}")
    if isinstance(raw, str):
        try:
            import json
            raw = json.loads(raw)
        except ValueError:
            return ToolError(tool=name, code="bad_arguments", message="the arguments are not a JSON object",
                             hint=f"send a JSON object with the fields of {name}")
    raw = dict(raw) if isinstance(raw, dict) else {}
    if not isinstance(raw.get("reason"), str) or not raw.get("reason", "").strip():
        raw["reason"] = "(no reason given)"  # asked for in the schema; a call without one still runs
    try:
        return schema.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()[:5])
        return ToolError(tool=name, code="bad_arguments", message=f"invalid arguments: {problems}",
                         hint=f"fields of {name}: {', '.join(schema.model_fields)}")
