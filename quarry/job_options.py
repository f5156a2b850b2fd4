"""The job configuration from command-line options, shared by `quarry run` and `quarry eval`.

Checked before anything is submitted: the policy exists, a model policy has a model
(PROVIDER:NAME) whose endpoint answers, and the price table reads.
"""
from __future__ import annotations

import json
from pathlib import Path

from nodes.config import JobConfig
from stores.errors import QuarryError


def job_config(policy: str, model: str | None, judge_model: str | None, *, rounds: int = 3,
               max_tokens: int | None = None, max_dollars: float | None = None, prices: Path | None = None,
               max_output_tokens: int = 2048, extra_models: tuple[str | None, ...] = ()) -> JobConfig:
    """The job's configuration; endpoints (also of `extra_models`, e.g. an answer grader) are
    probed in seconds so a server that is down is named now, not minutes into a job."""
    from nodes.config import POLICIES, ModelSettings
    from nodes.models import ModelSpec, check_endpoint
    from nodes.usage import prices_for
    if policy not in POLICIES:
        raise QuarryError("bad_policy", f"unknown policy {policy!r}", f"use one of: {', '.join(POLICIES)}")
    if policy == "heuristic":
        if model or judge_model or max_tokens or max_dollars:
            raise QuarryError("bad_option", "--model, --judge-model, --max-tokens and --max-dollars need a model policy",
                              "add --policy llm or --policy react (the heuristic policy calls no model)")
        return JobConfig(max_rounds=rounds)
    if not model:
        raise QuarryError("no_model", f"--policy {policy} needs a model",
                          "add --model PROVIDER:NAME, e.g. --model openai:gpt-4o-mini (see the README for local servers)")
    if judge_model and policy == "react":
        raise QuarryError("bad_option", "--judge-model is for --policy llm (the librarians)",
                          "drop --judge-model, or use --policy llm")
    main = str(ModelSpec.parse(model))
    judge = str(ModelSpec.parse(judge_model)) if judge_model else None
    specs = list(dict.fromkeys(s for s in (main, judge, *(str(ModelSpec.parse(m)) for m in extra_models if m)) if s))
    for spec in specs:
        check_endpoint(spec)
    return JobConfig(max_rounds=rounds, models=ModelSettings(model=main, judge_model=judge,
                                                             max_output_tokens=max_output_tokens),
                     max_tokens=max_tokens, max_dollars=max_dollars, prices=prices_for(specs, load_prices(prices)))


def load_prices(path: Path | None) -> dict[str, Price]:
    """The default table, extended/overridden by a JSON file `{"model": {"input": …, …}}`."""
    from nodes.config import Price
    from nodes.usage import DEFAULT_PRICES

    table = dict(DEFAULT_PRICES)
    if path is None:
        return table
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
        if not isinstance(raw, dict):
            raise ValueError("the top level must be an object of model → prices")
        for name, row in raw.items():
            if not isinstance(row, dict):
                raise ValueError(f"{name!r}: expected an object with input, cached_input, output")
            table[str(name)] = Price(**{k: float(v) for k, v in row.items() if k in ("input", "cached_input", "output")})
    except (OSError, ValueError, TypeError) as exc:
        raise QuarryError("bad_prices", f"cannot read the price table {path}: {exc}",
                          'write JSON like {"openai:gpt-4o-mini": {"input": 0.15, "cached_input": 0.075, "output": 0.6}}'
                          " (dollars per million tokens)") from None
    return table
