"""The features a verifier learns from: one heuristic job run in-process on a query, and its verified
candidates' features exactly as its answer step hands them to a verifier.

Both the shipped verifier's training (tuning.train_ranker, over judged queries) and the self-tuned
verifier (tuning.self_verifier, over pseudo-queries) collect them here; it imports neither.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

from nodes.ranking.ranker import candidate_features
from stores.collection import Collection


def collect_one(
    rt, col: Collection, qid: str, text: str, config: Any = None, profile: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One heuristic job in-process on `text` (with `config`, a JobConfig, else the defaults): its
    run and its verified candidates' features, exactly as its answer step hands them to a verifier.
    `profile` pins the job's search settings (as NodeRuntime.search_profile gives them) instead of
    those the collection's stored profile gives: self-tuning fits a verifier for a profile not
    stored as the collection's yet."""
    from graphs.search_graph import make_search_graph
    from graphs.state import initial_state
    from nodes.job.control import Control, reset_control, use_control
    from nodes.job.pool import load_pool
    from nodes.job.state import JobState
    from nodes.rounds.answer import ranker_inputs

    job_id = f"ranker-{col.name}-{qid}"
    start = initial_state(job_id, col.name, text, config=config)
    if profile is not None:
        start["profile"] = profile
    token = use_control(Control())
    try:
        state = cast(
            JobState, asyncio.run(make_search_graph().compile().ainvoke(start, config={"recursion_limit": 10_000}))
        )
    finally:
        reset_control(token)
    pool = load_pool(rt.jobs, state)
    inputs = ranker_inputs(rt, state, pool)  # exactly what a job's answer step hands the verifier
    feats = candidate_features(
        list(pool.values()),
        inputs.channel_of,
        neighbours=inputs.neighbours,
        lengths=inputs.lengths,
        context=inputs.context,
    )
    return {"qid": qid, "run": rt.jobs.load_draft(job_id)["run"], "features": feats}
