"""Quarry's Temporal search attributes: a job indexed by collection, policy, round and status.

The embedded dev server registers them at start (workflows.processes.dev_server.SEARCH_ATTRIBUTES); the
client sets the first values when it starts a job and the workflow updates round and status as
the job goes (only when the start succeeded with them: `JobInput.indexed`).
"""

from __future__ import annotations

from temporalio.common import SearchAttributeKey, SearchAttributePair

from stores.job_status import JobStatus

COLLECTION = SearchAttributeKey.for_keyword("QuarryCollection")
POLICY = SearchAttributeKey.for_keyword("QuarryPolicy")
STATUS = SearchAttributeKey.for_keyword("QuarryStatus")
ROUND = SearchAttributeKey.for_int("QuarryRound")


def initial_attributes(inp) -> list[SearchAttributePair]:
    return [
        SearchAttributePair(COLLECTION, inp.collection),
        SearchAttributePair(POLICY, inp.policy),
        SearchAttributePair(STATUS, JobStatus.RUNNING),
        SearchAttributePair(ROUND, 0),
    ]
