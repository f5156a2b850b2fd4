"""A job's candidate pool lives in the job store, not in the graph state.

The pool (every candidate with its ranks, evidence and scores) is the largest part of a job and
would otherwise cross every activity twice — megabytes of Temporal history per job. State keeps a
reference (`pool.seq`) plus counts and the current top ten; each node that changes the pool writes
the next snapshot under a number derived from its input state, so a retried or resumed activity
rewrites the same snapshot and every reader sees the pool its input state names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodes.job.state import Candidate, ranked_candidates

TOP = 10


def load_pool(jobs: Any, state: Mapping[str, Any]) -> dict[str, Candidate]:
    """The candidates of the snapshot `state` refers to ({} before the first retrieval)."""
    ref = state.get("pool") or {}
    return {d: Candidate(**c) for d, c in jobs.load_pool(state["job_id"], int(ref.get("seq", 0))).items()}


def store_pool(jobs: Any, state: Mapping[str, Any], candidates: Mapping[str, Candidate]) -> dict[str, Any]:
    """Write `candidates` as the next snapshot; the state update that refers to it."""
    seq = int((state.get("pool") or {}).get("seq", 0)) + 1
    jobs.save_pool(state["job_id"], seq, dict(candidates))
    ranked = ranked_candidates(candidates)
    return {
        "pool": {
            "seq": seq,
            "size": len(candidates),
            "verified": sum(1 for c in candidates.values() if c.get("verified_version")),
        },
        "top": [{"docid": c["docid"], "score": round(c.get("score", 0.0), 4)} for c in ranked[:TOP]],
    }


def further_along(state: Mapping[str, Any], stored: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """Of a job's state and its stored checkpoint, the one further along. A one-step round
    (graphs.search_graph.round_) checkpoints after each of its steps while the workflow still holds
    the state it started the round from; every step that changes the pool writes a higher `seq`, so
    the higher one has done more (the same job: a checkpoint only ever grows from its own state)."""
    if not stored or stored.get("job_id") != state.get("job_id"):
        return state
    seq = lambda s: int((s.get("pool") or {}).get("seq", 0))  # noqa: E731
    return stored if seq(stored) > seq(state) else state
