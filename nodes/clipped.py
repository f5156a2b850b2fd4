"""Bounded fields that do not bloat a tool's JSON schema.

A `maxLength` or `maxItems` in a schema sent to a model is expanded by grammar-constrained servers
(llama.cpp turns `maxLength: 8000` into an 8000-step rule) and buys nothing a truncation would not.
`Clipped(n)` and `ClippedList(t, n)` accept any length and cut the value to `n` after validation,
so the schema the model sees stays plain and what Quarry stores stays bounded.
"""
from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator


def Clipped(limit: int) -> Any:  # noqa: N802  (used like a type)
    return Annotated[str, AfterValidator(lambda value: value[:limit])]


def ClippedList(item: Any, limit: int) -> Any:  # noqa: N802
    return Annotated[list[item], AfterValidator(lambda values: values[:limit])]
