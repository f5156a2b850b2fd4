"""Prompts and output schemas of the LLM librarians, who score candidates against the checklist.

Each item gets 0-5 with a quote copied from the document; an overall relevance probability p
completes the judgement (S = (mean c_i + p) / 6, as for the heuristic). A quote that is not in
the document is not accepted as evidence.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from nodes.llm.context import DATA_RULE
from nodes.tools.clipped import clip

LIBRARIAN_SYSTEM = f"""You are a librarian checking documents against a research checklist.
For every document and every checklist item give a score from 0 to 5:
5 = the document clearly states it; 3 = partly or implicitly; 0 = not at all.
With each score copy a short quote (one sentence or phrase, verbatim) from the document that shows it,
or an empty quote when the score is 0. Also give p, the probability (0 to 1) that the document is
relevant to the intent as a whole. Judge only from the text shown.

{DATA_RULE}"""

JUDGE = """<intent>
{intent}
</intent>
Checklist (item_id: requirement):
{checklist}
Documents:
{documents}
Call JudgementsOut with one entry per document (use the docids exactly as given)."""


class ItemScoreOut(BaseModel):
    item_id: Annotated[str, clip(20)] = Field()
    score: int = Field(ge=0, le=5)
    quote: Annotated[str, clip(600)] = Field("", description="Verbatim words from the document, or empty.")


class DocJudgementOut(BaseModel):
    docid: Annotated[str, clip(200)] = Field()
    items: Annotated[list[ItemScoreOut], clip(12)] = Field()
    p: float = Field(ge=0.0, le=1.0, description="Probability the document is relevant to the intent.")


class JudgementsOut(BaseModel):
    """Scores of each document against each checklist item, with quotes, and its relevance p."""

    judgements: Annotated[list[DocJudgementOut], clip(50)] = Field()
