"""Bounded fields that do not bloat a tool's JSON schema.

A `maxLength` or `maxItems` in a schema sent to a model is expanded by grammar-constrained servers
(llama.cpp turns `maxLength: 8000` into an 8000-step rule) and buys nothing a truncation would not.
`Annotated[str, clip(n)]` and `Annotated[list[T], clip(n)]` accept any length and cut the value to
`n` after validation, so the schema the model sees stays plain and what Quarry stores stays bounded.
(Metadata inside `Annotated`, not a function returning a type, so type checkers read the field.)
"""

from __future__ import annotations

from typing import Any

from pydantic import AfterValidator


def clip(limit: int) -> AfterValidator:
    """Cut a string or a list to `limit` after validation (the schema shows no limit)."""

    def cut(value: Any) -> Any:
        return value[:limit]

    return AfterValidator(cut)
