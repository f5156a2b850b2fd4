"""Prompt and output schema of the cited answer (the deep-research answer format).

The answer has an Explanation with [docid] citations, an Exact Answer and a Confidence; every
citation is checked afterwards against the text of the document it names.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from nodes.llm.context import DATA_RULE
from nodes.tools.clipped import clip

ANSWER_SYSTEM = f"""You answer research questions from documents of a private collection, and only from them.
Write an explanation in which every claim is followed by the [docid] of a document shown to you that states
it (copy docids exactly; cite only documents shown). Then give the exact answer in a few words, and your
confidence from 0 to 100 that the exact answer is right. If the documents do not answer the question, say so,
set insufficient_evidence to true and give a low confidence.

{DATA_RULE}"""

ANSWER = """<intent>
{intent}
</intent>
Documents (each passage with its line range in the document):
{documents}
Call AnswerOut."""


class AnswerOut(BaseModel):
    """The answer: explanation with [docid] citations, exact answer, confidence 0-100."""

    explanation: Annotated[str, clip(8000)] = Field(min_length=1)
    exact_answer: Annotated[str, clip(1000)] = Field("")
    confidence: int = Field(ge=0, le=100)
    insufficient_evidence: bool = False
