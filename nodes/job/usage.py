"""Token usage and cost of model calls, from the provider's own usage metadata.

LangChain normalises every provider's usage into `AIMessage.usage_metadata`: input and output
tokens, with `input_token_details.cache_read` (prompt-cache hits) and
`output_token_details.reasoning`. Dollars come from a price table (per million tokens) that the
job carries in its configuration; a model without a price costs 0 and is reported as unpriced.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, RootModel, StringConstraints

from nodes.job.config import Price

# List prices in dollars per million tokens (input, cached input, output) as published by the
# providers in 2025; override or extend with `--prices FILE` (JSON of the same shape, read by quarry.app.options). A model
# is matched by its spec ("openai:gpt-4o-mini") or its bare name; local servers cost nothing.
DEFAULT_PRICES: dict[str, Price] = {
    "gpt-4o-mini": Price(0.15, 0.075, 0.60),
    "gpt-4o": Price(2.50, 1.25, 10.00),
    "gpt-4.1-mini": Price(0.40, 0.10, 1.60),
    "gpt-4.1": Price(2.00, 0.50, 8.00),
    "deepseek-chat": Price(0.27, 0.07, 1.10),
    "claude-3-5-haiku-latest": Price(0.80, 0.08, 4.00, cache_write=1.00),
    "claude-sonnet-4-5": Price(3.00, 0.30, 15.00, cache_write=3.75),
}

# The dearest 2025 list price is $600 per million output tokens (o1-pro); a price above this
# bound is a typo (or 1e400) that would make any dollar budget meaningless.
MAX_PRICE = 10_000.0

# Dollars per million tokens: a finite JSON number in [0, MAX_PRICE]. Strict, so `true` is not 1.0
# and "0.2" is not a number; NaN, Infinity and 1e400 (which json reads as inf) are refused —
# a NaN or negative price makes spent dollars NaN or falling, and a dollar budget never stops.
PriceValue = Annotated[float, Field(ge=0.0, le=MAX_PRICE, allow_inf_nan=False, strict=True)]


class PriceRow(BaseModel):
    """One model's row of a `--prices` file; a misspelt key ("ouput") is an error, not a free output."""

    model_config = ConfigDict(extra="forbid", strict=True)

    input: PriceValue
    cached_input: PriceValue = 0.0
    output: PriceValue
    cache_write: PriceValue | None = None


ModelName = Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f\x7f-\x9f]+$")]


class PriceTable(RootModel[dict[ModelName, PriceRow]]):
    """The schema of a `--prices` file: `{"provider:name" or "name": {"input", "cached_input", "output"}}`."""

    def prices(self) -> dict[str, Price]:
        return {
            name: Price(row.input, row.cached_input, row.output, row.cache_write) for name, row in self.root.items()
        }


@dataclass
class Usage:
    input_tokens: int = 0  # all of the prompt, cache reads and writes included
    cached_input_tokens: int = 0  # of which read from the provider's prompt cache
    output_tokens: int = 0
    reasoning_tokens: int = 0
    calls: int = 0
    dollars: float = 0.0
    by_model: dict[str, dict[str, float]] = field(default_factory=dict)
    unpriced: list[str] = field(default_factory=list)
    cache_write_input_tokens: int = 0  # of which written to the prompt cache (Anthropic charges these)
    retries: int = 0  # calls the provider refused for its rate limit or overload, retried after its wait

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def add(self, other: Usage) -> Usage:
        """A new Usage with both counts summed (state is never changed in place)."""
        by_model = {k: dict(v) for k, v in self.by_model.items()}
        for name, row in other.by_model.items():
            mine = by_model.setdefault(name, {})
            for key, value in row.items():
                mine[key] = round(mine.get(key, 0) + value, 8)
        return Usage(
            self.input_tokens + other.input_tokens,
            self.cached_input_tokens + other.cached_input_tokens,
            self.output_tokens + other.output_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
            self.calls + other.calls,
            round(self.dollars + other.dollars, 8),
            by_model,
            sorted(set(self.unpriced) | set(other.unpriced)),
            self.cache_write_input_tokens + other.cache_write_input_tokens,
            self.retries + other.retries,
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"total_tokens": self.total_tokens}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any] | None) -> Usage:
        raw = dict(raw or {})
        raw.pop("total_tokens", None)
        return cls(**{k: v for k, v in raw.items() if k in cls.__dataclass_fields__})


def price_for(model: str, prices: Mapping[str, Price]) -> Price | None:
    """The price of `provider:name` by its full spec, else by its bare name."""
    bare = model.split(":", 1)[-1]
    return prices.get(model) or prices.get(bare)


def usage_from_metadata(meta: Mapping[str, Any] | None, model: str, prices: Mapping[str, Price]) -> Usage:
    """One call's Usage from LangChain's `usage_metadata` (missing counts are 0)."""
    meta = dict(meta or {})
    inp = int(meta.get("input_tokens") or 0)
    out = int(meta.get("output_tokens") or 0)
    details = meta.get("input_token_details") or {}
    cached = int(details.get("cache_read") or 0)
    # Anthropic reports cache writes as `cache_creation`, or split by lifetime when it says which.
    written = int(details.get("cache_creation") or 0) + sum(
        int(details.get(k) or 0) for k in ("ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens")
    )
    reasoning = int((meta.get("output_token_details") or {}).get("reasoning") or 0)
    price = price_for(model, prices)
    dollars = 0.0
    if price is not None:
        write = price.input if price.cache_write is None else price.cache_write
        plain = max(inp - cached - written, 0)
        dollars = (plain * price.input + cached * price.cached_input + written * write + out * price.output) / 1e6
    row = {
        "input_tokens": inp,
        "cached_input_tokens": cached,
        "cache_write_input_tokens": written,
        "output_tokens": out,
        "reasoning_tokens": reasoning,
        "calls": 1,
        "dollars": round(dollars, 8),
    }
    return Usage(
        inp,
        cached,
        out,
        reasoning,
        1,
        round(dollars, 8),
        {model: row},
        [] if price is not None or model.split(":", 1)[0] in LOCAL_PROVIDERS else [model],
        written,
    )


LOCAL_PROVIDERS = ("ollama",)


def prices_for(models: Sequence[str | None], table: Mapping[str, Price]) -> dict[str, Price]:
    """The part of the table a job needs (its models), to carry in its configuration."""
    out = {}
    for model in models:
        if model and (price := price_for(model, table)) is not None:
            out[model] = price
    return out
