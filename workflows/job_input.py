"""Checks of a job's input, shared by the client (before submitting) and the workflow (first).

Everything a job carries crosses every activity, so an oversized intent must be refused up front,
with the reason, rather than failing rounds later on Temporal's payload limit or never ending.
The same checks run inside the workflow, so a job started without Quarry's client (Temporal's CLI,
another SDK) fails at once with the same message instead of misbehaving.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

from nodes.job.config import JOB_BOUNDS, POLICIES, JobConfig
from stores.errors import QuarryError
from stores.home import check_name

if TYPE_CHECKING:
    from workflows.shared import JobInput

MAX_INTENT_CHARS = 10_000
MODES = ("list", "answer")


def check_text(text: object, what: str, limit: int) -> str:
    """`text` stripped, or a QuarryError saying why it cannot be searched."""
    if not isinstance(text, str) or not text.strip():
        raise QuarryError(
            "empty_intent" if what == "intent" else "empty_text",
            f"the {what} is empty",
            'describe what to find, e.g. "dense retrieval, not surveys"',
        )
    bad = next((i for i, ch in enumerate(text) if 0xD800 <= ord(ch) <= 0xDFFF), None)
    if bad is not None:  # bytes that were not UTF-8, smuggled in as surrogates by the shell's decoding
        raise QuarryError(
            "bad_text",
            f"the {what} is not valid UTF-8 text (a bad byte at character {bad + 1})",
            "re-type it, or convert the file it came from to UTF-8",
        )
    text = text.strip()
    if len(text) > limit:
        raise QuarryError(
            "too_long",
            f"the {what} has {len(text):,} characters; the limit is {limit:,}",
            f"state the {what} in a few sentences; put long material into the collection instead",
        )
    return text


def check_budget(seconds: object) -> float:
    """A wall-clock budget (`JobConfig.max_seconds`, `--budget`) in JobBounds' range, as a float."""
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, (int, float))
        or not math.isfinite(seconds)
        or not JOB_BOUNDS.min_seconds <= seconds <= JOB_BOUNDS.max_seconds
    ):
        raise QuarryError(
            "bad_budget",
            f"a budget of {seconds!r} seconds is not usable",
            f"give between {JOB_BOUNDS.min_seconds:g} and {JOB_BOUNDS.max_seconds:,.0f} seconds "
            f"(a week), e.g. --budget {JobConfig.max_seconds:g}",
        )
    return float(seconds)


def migrated(inp: JobInput) -> JobInput:
    """The input with a budget written by a client from before the budget moved into the config
    (`JobInput.budget_seconds`, in the history of a job started then) moved into `config.max_seconds`,
    where it wins; an input without one as it is."""
    if inp.budget_seconds is None:
        return inp
    return replace(inp, budget_seconds=None, config=replace(inp.config, max_seconds=inp.budget_seconds))


def check_job_input(inp: JobInput) -> None:
    """Raise a QuarryError naming what is wrong with a JobInput (collection, intent, mode, policy, budget)."""
    check_name(inp.collection)
    check_text(inp.intent, "intent", MAX_INTENT_CHARS)
    if inp.mode not in MODES:
        raise QuarryError("bad_mode", f"unknown mode {inp.mode!r}", "use mode list or answer")
    if inp.policy not in POLICIES:
        raise QuarryError("bad_policy", f"unknown policy {inp.policy!r}", f"use one of: {', '.join(POLICIES)}")
    check_budget(migrated(inp).config.max_seconds)
