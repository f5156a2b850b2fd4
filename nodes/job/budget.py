"""Token and dollar budgets over a job's model calls (the clock's budget is the workflow's timers).

At `STEER_FRACTION` of either budget the job is steered to submit now, exactly as the clock does
at 0.7·T; when a budget is spent no further model call is made and the job answers from what it
has. Pure functions of the state, so routers in the workflow can call them deterministically.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodes.job.config import STEER_FRACTION, config_of
from nodes.job.usage import Usage


def budget_used(state: Mapping[str, Any]) -> tuple[str, float]:
    """(which budget, share used) of the tightest model budget; ('', 0.0) when none is set."""
    cfg = config_of(state)
    usage = Usage.from_dict(state.get("usage"))
    shares = []
    if cfg.max_tokens:
        shares.append(("tokens", usage.total_tokens / cfg.max_tokens))
    if cfg.max_dollars:
        shares.append(("dollars", usage.dollars / cfg.max_dollars))
    return max(shares, key=lambda s: s[1]) if shares else ("", 0.0)


def budget_steer(state: Mapping[str, Any]) -> str:
    """'tokens' or 'dollars' once that budget is 70 % used, else ''."""
    which, share = budget_used(state)
    return which if share >= STEER_FRACTION else ""


def budget_spent(state: Mapping[str, Any]) -> str:
    """'tokens' or 'dollars' once that budget is used up, else ''."""
    which, share = budget_used(state)
    return which if share >= 1.0 else ""
