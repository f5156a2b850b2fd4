"""Prompts and output schemas of the LLM navigator: the plan, and reflection on scored evidence.

Prompts are logic-free constants with XML-tagged placeholders; outputs are pydantic models the
model must fill (validated, repaired once, else the heuristic plan stands).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from nodes.llm.context import DATA_RULE
from nodes.tools.clipped import clip

NAVIGATOR_SYSTEM = f"""You are the navigator of a literature search over a private collection of documents.
You turn a research intent into (1) a verification checklist that a relevant document must satisfy and
(2) short keyword queries for a BM25 search engine. Later you reflect on how well the best documents
meet the checklist and decide what to search next.

Checklist items are short and checkable against a document: kind "topic" (what it is about), "method"
(how), "application" (where/on what), "metadata" (year, venue, authors) or "exclusion" (what must not be
there, e.g. "surveys"). Queries are 3-8 keywords each, no operators; they add words to the user's words,
never drop them.

{DATA_RULE}"""

PLAN = """<intent>
{intent}
</intent>
<steering>
{steering}
</steering>
<collection>retrieval channels: {channels}; publication years known: {years}</collection>
Write the checklist (2-6 items) and up to 3 first queries by calling PlanOut."""

REFLECT = """<intent>
{intent}
</intent>
Checklist (id: kind: text):
{checklist}
Queries searched so far:
{searched}
The current top documents with their scores per checklist item (0-5) and the evidence quoted for each:
<evidence>
{evidence}
</evidence>
Call ReflectOut: set done=true if the top already satisfies the checklist well; otherwise give up to 3 new
keyword queries aimed at what the top lacks, and at most 2 new checklist items if the intent needs them."""


class ChecklistItemOut(BaseModel):
    kind: Literal["topic", "method", "application", "metadata", "exclusion"]
    text: Annotated[str, clip(200)] = Field(min_length=2, description="A short requirement, e.g. 'uses hospital data'.")


class PlanOut(BaseModel):
    """The retrieval plan: the checklist a relevant document must satisfy, and the first keyword queries."""

    checklist: Annotated[list[ChecklistItemOut], clip(8)] = Field(min_length=1)
    queries: Annotated[list[str], clip(4)] = Field(min_length=1, description="3-8 keywords each.")


class ReflectOut(BaseModel):
    """The navigator's reflection on the scored evidence: stop, or what to search next."""

    done: bool = Field(False, description="True if the current top already satisfies the checklist.")
    queries: Annotated[list[str], clip(3)] = Field(
        default_factory=list, description="New keyword queries, 3-8 words each."
    )
    new_items: Annotated[list[ChecklistItemOut], clip(2)] = Field(default_factory=list)
