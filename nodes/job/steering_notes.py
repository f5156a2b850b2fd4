"""Where a researcher's steering notes take effect, and what a job's result says about each.

A note sent while round n runs is folded into the plan when that round is over and shapes round
n + 1 — even when n was the last planned round (one more round, after which the job answers
again, so the final list always honours it). When the job must answer at once (a stop, the
budget's submit-now steer, the tool-call cap) the note is still folded into the plan the final
list is built from (its hard constraints hold there; no new round searches or scores). Only a
note still waiting when the job is cut off (the hard budget stop, a cancellation, a failure) is
not applied, and the result says so. Pure functions: the workflow and its graph call them on state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from stores.job_status import JobStatus

# How a note took effect (`applied` in the note): from a round on, on the final list only, or not.
IN_A_ROUND = "round"
FINAL_LIST = "final_list"
NOT_APPLIED = "not_applied"


def applies_from(round_no: int) -> int:
    """The round a note sent while `round_no` runs applies from: the next one (the first round, or
    the navigator before it, plans without it, so a note sent then applies from round 2)."""
    return max(round_no, 1) + 1


def steered_round(state: Mapping[str, Any], notes: Sequence[Mapping[str, Any]]) -> int:
    """The number of the round a fold of `notes` starts: the one after the last round that ran to
    its reflection (`rounds_done`; a reflection that planned another round numbered the state with
    it already, and the steered round takes its place), and never before the round the notes were
    promised (`applies_from_round`)."""
    done = state.get("rounds_done")
    after = int(done) + 1 if isinstance(done, int) else int(state.get("round", 0) or 0) + 1
    promised = [int(n["applies_from_round"]) for n in notes if isinstance(n.get("applies_from_round"), int)]
    return max([after, *promised])


def placed(notes: Sequence[Mapping[str, Any]], *, round_no: int, final_only: bool) -> list[dict[str, Any]]:
    """`notes` marked with where they took effect: from round `round_no`, or on the final list only."""
    if final_only:
        return [{**n, "applied": FINAL_LIST} for n in notes]
    return [{**n, "applied": IN_A_ROUND, "applied_round": round_no} for n in notes]


# Why a job that took a note never folded it in, by the status it ended with.
CUT_OFF: dict[str, str] = {
    JobStatus.BUDGET_EXHAUSTED: "the job's time budget ran out first",
    JobStatus.CANCELLED: "the job was cancelled first",
    JobStatus.FAILED: "the job failed first",
}


def unapplied(notes: Sequence[Mapping[str, Any]], status: str) -> list[dict[str, Any]]:
    """Notes the job took but never folded into its plan: it was cut off (`status`) first."""
    why = CUT_OFF.get(status, f"the job ended first ({status})")
    return [{**n, "applied": NOT_APPLIED, "why": why} for n in notes]


def steering_report(state: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every note a job took, as its result lists them: text, the round it came in (`round`), and
    where it took effect. Notes folded before this record was kept (no `applied`) were applied in
    a round; notes the workflow left unapplied travel in `steering_unapplied`."""
    folded = [n if n.get("applied") else {**n, "applied": IN_A_ROUND} for n in state.get("steering") or []]
    return [*folded, *(state.get("steering_unapplied") or [])]


def describe(note: Mapping[str, Any]) -> str:
    """One line for a person: what the note was and where it took effect."""
    came = f"sent in round {note['round']}" if isinstance(note.get("round"), int) and note["round"] else "sent"
    how = note.get("applied")
    if how == FINAL_LIST:
        where = "applied to the final list only (the job had to answer: no round searched with it)"
    elif how == NOT_APPLIED:
        where = f"NOT applied: {note.get('why') or 'the job ended first'}"
    elif isinstance(note.get("applied_round"), int):
        where = f"applied from round {note['applied_round']}"
    else:
        where = "applied from the next round"
    return f"{note.get('text', '')!r} ({came}): {where}"
