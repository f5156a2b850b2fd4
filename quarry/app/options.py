"""The job configuration from command-line options, shared by `quarry run` and `quarry eval`.

Checked before anything is submitted: the policy exists, token and dollar budgets are finite and
in range, the price table reads and fits its schema, and a model policy has a model
(PROVIDER:NAME) whose endpoint answers.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, cast

from nodes.job.config import JOB_BOUNDS, SEARCH_PROFILES, JobConfig, ModelSettings, Price, SearchProfile
from stores.errors import QuarryError

if TYPE_CHECKING:  # a type only: pydantic loads with the price table that needs it
    from pydantic import ValidationError

    from nodes.policy.registry import PolicySpec


def job_config(
    policy: str,
    model: str | None,
    judge_model: str | None,
    *,
    rounds: int = JobConfig.max_rounds,
    max_seconds: float = JobConfig.max_seconds,
    max_tokens: int | None = None,
    max_dollars: float | None = None,
    prices: Path | None = None,
    max_output_tokens: int = ModelSettings.max_output_tokens,
    extra_models: tuple[str | None, ...] = (),
    strict_tools: bool = ModelSettings.strict_tools,
) -> JobConfig:
    """The job's configuration; endpoints (also of `extra_models`, e.g. an answer grader) are
    probed in seconds so a server that is down is named now, not minutes into a job. The defaults
    are JobConfig's own (nodes.job.config), never copies."""
    from nodes.job.usage import prices_for
    from nodes.llm.models import ModelSpec, check_endpoint
    from nodes.policy.registry import check, model_policies

    chosen = check(policy)
    check_model_budgets(max_tokens, max_dollars)
    if not chosen.uses_models:
        if model or judge_model or max_tokens or max_dollars:
            raise QuarryError(
                "bad_option",
                "--model, --judge-model, --max-tokens and --max-dollars need a model policy",
                f"add {_either(model_policies())} (the {chosen.name} policy calls no model)",
            )
        return JobConfig(max_rounds=rounds, max_seconds=max_seconds)
    main, judge = _models(chosen, policy, model, judge_model, strict_tools)
    specs = list(dict.fromkeys(s for s in (main, judge, *(str(ModelSpec.parse(m)) for m in extra_models if m)) if s))
    table = load_prices(prices)  # a local file: checked before any endpoint is probed
    for spec in specs:
        check_endpoint(spec)
    return JobConfig(
        max_rounds=rounds,
        max_seconds=max_seconds,
        models=ModelSettings(
            model=main, judge_model=judge, max_output_tokens=max_output_tokens, strict_tools=strict_tools
        ),
        max_tokens=max_tokens,
        max_dollars=max_dollars,
        prices=prices_for(specs, table),
    )


def _models(
    chosen: PolicySpec, policy: str, model: str | None, judge_model: str | None, strict_tools: bool
) -> tuple[str, str | None]:
    """The model policy's model and judge as PROVIDER:NAME, once they suit the policy."""
    from nodes.llm.models import ModelSpec
    from nodes.policy.registry import taking

    if not model:
        raise QuarryError(
            "no_model",
            f"--policy {policy} needs a model",
            "add --model PROVIDER:NAME, e.g. --model openai:gpt-4o-mini (see the README for local servers)",
        )
    if judge_model and not chosen.takes("judge_model"):
        raise QuarryError(
            "bad_option",
            f"--judge-model is for {_either(taking('judge_model'))} (the librarians)",
            f"drop --judge-model, or use {_either(taking('judge_model'))}",
        )
    main = str(ModelSpec.parse(model))
    judge = str(ModelSpec.parse(judge_model)) if judge_model else None
    if strict_tools and not any(s and s.startswith("openai:") for s in (main, judge)):
        raise QuarryError(
            "bad_option",
            "--strict-tools is OpenAI's strict function calling, for openai: models",
            "drop --strict-tools, or use an openai: --model",
        )
    return main, judge


def _either(policies: tuple[str, ...]) -> str:
    return " or ".join(f"--policy {p}" for p in policies)


def eval_policy(systems: list[str]) -> tuple[str, list[str], bool]:
    """For `quarry eval`: the policy whose options the evaluation's model options are checked
    against (of the systems that are model policies, the first taking a judge model, else the
    first; the default policy when there are none), those systems, and whether any takes a judge model."""
    from nodes.policy.registry import DEFAULT_POLICY, find

    known = [spec for s in systems if (spec := find(s)) is not None and spec.uses_models]
    model_systems = [spec.name for spec in known]
    judged = [spec.name for spec in known if spec.takes("judge_model")]
    return (judged or model_systems or [DEFAULT_POLICY])[0], model_systems, bool(judged)


MAX_DOLLARS = JOB_BOUNDS.max_dollars  # a per-job dollar budget above this is a typo, not a limit
MAX_TOKENS = JOB_BOUNDS.max_tokens


def check_model_budgets(max_tokens: object, max_dollars: object) -> None:
    """Refuse budgets that could never stop a job, for the command line (typer's `min=` refuses
    NaN and negatives but lets Infinity and 1e400 through) and the Python API alike (where NaN,
    which compares false with everything, would make `spent >= budget` never true). Booleans are
    refused too: True is not a budget of 1."""
    if max_tokens is not None and (
        isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or not 1 <= max_tokens <= MAX_TOKENS
    ):
        raise QuarryError(
            "bad_budget",
            f"a token budget of {max_tokens!r} is not usable",
            f"give a whole number of tokens from 1 to {MAX_TOKENS:,}, e.g. --max-tokens 200000",
        )
    if max_dollars is not None and (
        isinstance(max_dollars, bool)
        or not isinstance(max_dollars, (int, float))
        or not math.isfinite(max_dollars)
        or not 0 <= max_dollars <= MAX_DOLLARS
    ):
        raise QuarryError(
            "bad_budget",
            f"a dollar budget of {max_dollars!r} is not usable",
            f"give a finite amount from 0 to {MAX_DOLLARS:,.0f} dollars, e.g. --max-dollars 0.50",
        )


def load_prices(path: Path | None) -> dict[str, Price]:
    """The default table, extended/overridden by a JSON file `{"model": {"input": …, …}}`,
    checked against nodes.job.usage.PriceTable: every price a finite number from 0 to MAX_PRICE (not
    a boolean, not NaN or Infinity), `input` and `output` given, no other keys. A bad table is one
    `bad_prices` error naming the model and field, before anything is submitted."""
    from pydantic import ValidationError

    from nodes.job.usage import DEFAULT_PRICES, PriceTable

    table = dict(DEFAULT_PRICES)
    if path is None:
        return table
    hint = (
        'write JSON like {"openai:gpt-4o-mini": {"input": 0.15, "cached_input": 0.075, "output": 0.6}}'
        " (dollars per million tokens; cached_input and cache_write may be left out)"
    )
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"), object_pairs_hook=_no_duplicate_keys)
        if not isinstance(raw, dict):
            raise ValueError("the top level must be an object of model → prices")
        table.update(PriceTable.model_validate(raw).prices())
    except ValidationError as exc:
        raise QuarryError("bad_prices", f"the price table {path} is not usable: {_price_problems(exc)}", hint) from None
    except (OSError, ValueError, RecursionError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise QuarryError("bad_prices", f"cannot read the price table {path}: {reason}", hint) from None
    return table


def _no_duplicate_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """A JSON object, refusing a key given twice (json keeps the last one silently)."""
    keys = [k for k, _ in pairs]
    if dup := next((k for k in keys if keys.count(k) > 1), None):
        raise ValueError(f"{dup!r} is given twice")
    return dict(pairs)


def _price_problems(exc: ValidationError) -> str:
    """Pydantic's errors as `model → field: what is wrong (got VALUE)`, the first five."""
    problems = []
    for e in exc.errors()[:5]:
        loc = [str(x) for x in e["loc"]]
        what = e["msg"]
        if loc and loc[-1] == "[key]":
            loc, what = [f"model name {loc[0]!r}"], what.replace("String", "it")
        if e["type"] in ("dict_type", "model_type"):
            what = "expected an object with input, cached_input, output"
        elif e["type"] == "extra_forbidden":
            what = "unknown key (the keys are input, cached_input, cache_write, output)"
        elif e["type"] == "missing":
            what = "missing"
        elif "input" in e:
            what += f" (got {json.dumps(e['input']) if _jsonable(e['input']) else repr(e['input'])})"
        where = " → ".join(loc) if loc else "the table"
        problems.append(f"{where}: {what}")
    more = f"; and {len(exc.errors()) - 5} more" if len(exc.errors()) > 5 else ""
    return "; ".join(problems) + more


def _jsonable(value: object) -> bool:
    try:
        json.dumps(value, allow_nan=False)
        return True
    except (TypeError, ValueError):
        return False


def check_profile(col, choice: str) -> SearchProfile:
    """`--profile` as the job will use it; `self` without a usable self-tuned profile is refused
    now, with the command that makes one, rather than as a failed job (nodes.job.profile_choice)."""
    from nodes.job.profile_choice import resolve_profile
    from stores.profiles import profile_status

    if choice not in SEARCH_PROFILES:
        raise QuarryError("bad_option", f"unknown --profile {choice!r}", f"choose one of: {', '.join(SEARCH_PROFILES)}")
    if choice == "self":
        resolve_profile(col.name, choice, profile_status(col.paths, col.name, col.corpus.hashes()))
    return cast(SearchProfile, choice)
