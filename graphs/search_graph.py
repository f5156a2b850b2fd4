"""The round graph: navigator → retrieval → verification → [librarians] → reflection → (retrieval | answer).

`make_search_graph()` returns an *uncompiled* StateGraph: the worker registers it with the
Temporal LangGraph plugin, which runs I/O nodes as activities (timeouts, retries, heartbeats)
and routers and pure nodes in the workflow; tests and evaluation compile it directly and run it
in-process. Routers consult `current_control()` for the stop signal and the budget's steer.
Under a policy whose judge takes a second look (`nodes.policy.registry`: `llm`), verification fans out
to librarian activities (one per batch of candidates, a LangGraph `Send` each; the run's
`max_concurrency` bounds how many run at once) and their judgements are folded in before reflection.
Under a policy whose round steps call no model (`one_step_rounds`: `heuristic`), a durable job runs
each round — retrieval, verification, reflection; the first also plans, the last also answers — as
one `one_round` activity (`round_`): a third of the task transitions, which were most of a heuristic
job's cost over the same graph in-process.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Mapping
from dataclasses import replace
from datetime import timedelta
from typing import Any, Literal, cast

from langgraph.graph import START, StateGraph
from langgraph.types import Send
from temporalio import workflow
from temporalio.common import RetryPolicy

from nodes.job.budget import budget_steer
from nodes.job.config import config_of
from nodes.job.control import current_control, reset_control, use_control
from nodes.job.heartbeat import with_heartbeats
from nodes.job.node_names import NodeName
from nodes.job.state import JobState
from nodes.job.steering_notes import FINAL_LIST, placed, steered_round
from nodes.llm import librarian as librarian_mod
from nodes.policy.registry import ONE_ROUND_NODE, spec_of
from nodes.rounds import answer as answer_mod
from nodes.rounds import navigator as navigator_mod
from nodes.rounds import reflection as reflection_mod
from nodes.rounds import retrieval as retrieval_mod
from nodes.rounds import verification as verification_mod
from nodes.rounds.steering import fold_steering

GRAPH_NAME = "quarry-search"
# The patch (workflow.patched) under which a job of a `one_step_rounds` policy runs each round as one
# activity; a job started before it replays its rounds step by step, as it ran.
ONE_STEP_ROUNDS = "one-step-rounds"
# The patch under which such a job's first round also plans it (the navigator inside `round_`).
PLAN_IN_FIRST_ROUND = "plan-in-first-round"
# The patch under which every steering note the job took reaches its final list: one that comes in
# while the job must answer is folded into the plan the answer is built from (`_round_over`,
# `route_after_steer`), one that comes in while the answer is built leads to another round
# (`route_after_answer`), and the steered round is numbered as the note was promised (`steer`). A
# job started before it replays as it ran (such a note was dropped).
STEER_REACHES_FINAL_LIST = "steer-reaches-final-list"


# Async shells: the blocking node bodies run in a thread while the activity heartbeats.
async def navigator(state: JobState) -> dict:
    return await with_heartbeats(navigator_mod.navigator, state)


async def retrieval(state: JobState) -> dict:
    return await with_heartbeats(retrieval_mod.retrieval, state)


async def verification(state: JobState) -> dict:
    return await with_heartbeats(verification_mod.verification, state)


async def librarian(task: dict) -> dict:
    return await with_heartbeats(librarian_mod.librarian, task)


async def reflection(state: JobState) -> dict:
    return _reflected(state, await with_heartbeats(reflection_mod.reflection, state))


def _reflected(state: Mapping[str, Any], update: dict) -> dict:
    """A reflection's update with the round it closed (`rounds_done`): a steered round follows it
    (nodes.job.steering_notes.steered_round), and a round counts as run even when it searched nothing."""
    return update | {"rounds_done": int(state.get("round", 1) or 1)}


async def answer(state: JobState) -> dict:
    return await with_heartbeats(answer_mod.answer, state)


async def round_(state: JobState) -> dict:
    """A whole round as one step, for a policy whose round steps are quick and call no model
    (`PolicySpec.one_step_rounds`): retrieval, verification and reflection — after the navigator in
    the first round (`plans_in_first_round`), and followed by the answer in the last. Under Temporal
    that is one activity: one task transition per round instead of three to five, each of which costs
    a job ~20-25 ms (docs/notes/performance-history.md,
    "Whole heuristic jobs"). Each step is still its own call — its span, heartbeats, stop watch and
    progress — and after retrieval and verification the state is checkpointed (a watcher sees the
    step; a hard stop answers from it: workflows.activities.answer_from_state). The round ends early
    where the routers between the steps would go to answer (`must_answer`: inside an activity, what
    the state says — a token or dollar budget's steer, the tool-call cap) or at the time budget's
    steer (`answer_at`); a stop or a steering note reaches the workflow's router when the round ends."""
    bodies = [retrieval_mod.retrieval, verification_mod.verification, reflection_mod.reflection]
    current: dict[str, Any] = dict(state)
    update: dict[str, Any] = {}
    if not state.get("plan"):  # the first round plans the job too (`route_start`)
        bodies.insert(0, navigator_mod.navigator)
    for body in bodies:  # the bodies are looked up at call time, like the one-step shells' (tests patch them)
        step = await with_heartbeats(body, current)
        if body is reflection_mod.reflection:
            step = _reflected(current, step)
        update.update(step)
        current.update(step)
        if body in (retrieval_mod.retrieval, verification_mod.verification):
            await asyncio.to_thread(reflection_mod.checkpoint, cast(JobState, current))
        if await _round_ends(cast(JobState, current)):
            # The answer is built here too, saving the job one more task transition; the workflow's
            # router ends the graph on it (`route_after_round`) unless it has news the activity could
            # not see (a steering note), and then a later round answers again.
            step = await with_heartbeats(answer_mod.answer, current)
            update.update(step)
            break
    return update


async def _round_ends(state: JobState) -> bool:
    """Whether a one-step round goes to answer after the step that made `state`: what the router
    after that step says, with the time budget's steer set once `answer_at` has passed — as the
    workflow's timer sets it for the routers it runs."""
    control = current_control()
    late = time.time() >= state.get("answer_at", math.inf)
    token = use_control(replace(control, submit_now=control.submit_now or late))
    try:
        node = state.get("node")
        if node == NodeName.NAVIGATOR:  # a round is not over before it searched
            return False
        if node == NodeName.REFLECTION:
            return _round_over(state) == NodeName.ANSWER
        after = route_after_verification if node == NodeName.VERIFICATION else route_after_retrieval
        return await after(state) == NodeName.ANSWER
    finally:
        reset_control(token)


def answered(state: Mapping[str, Any]) -> bool:
    """Whether the step that made `state` was the answer (the workflow then has nothing left to build)."""
    return state.get("node") == NodeName.ANSWER and bool((state.get("result") or {}).get("ready"))


# Errors no retry can fix fail the node at once. A `QuarryError` leaves a node's activity as an
# ApplicationError whose type is its code and which says itself whether it is retryable
# (nodes.job.heartbeat.application_error: the user's to fix, so not, but for a few codes); these
# names cover one raised outside those wrappers, and the bugs. Everything else is retried.
NON_RETRYABLE = [
    "QuarryError",
    "IngestError",
    "TypeError",
    "AttributeError",
    "NameError",
    "KeyError",
    "IndexError",
    "AssertionError",
    "ZeroDivisionError",
    "NotImplementedError",
    "RecursionError",
]
# How long a node may keep being retried. Attempts are counted by time, not by number: a worker
# that stalls inside an activity (a laptop asleep, a paused VM, SIGSTOP) lets each attempt it
# holds time out on its heartbeat — and its still-open polls take the next attempts too — so a
# small count (3) failed a job after a pause of about 50 s. Within this window a job survives a
# pause of minutes; the job's own budget (a workflow timer) still ends it on time.
RETRY_WINDOW = timedelta(hours=1)
RETRY_BACKOFF_CAP = timedelta(seconds=10)
# Heartbeats come every 5 s (nodes.job.heartbeat); a worker that died is noticed within 15 s.
HEARTBEAT_TIMEOUT = timedelta(seconds=15)


def retry_by_time() -> RetryPolicy:
    """Unlimited attempts (bounded by RETRY_WINDOW as the activity's schedule-to-close), backoff
    1 s doubling to RETRY_BACKOFF_CAP; NON_RETRYABLE errors fail at once."""
    return RetryPolicy(
        initial_interval=timedelta(seconds=1),
        backoff_coefficient=2.0,
        maximum_interval=RETRY_BACKOFF_CAP,
        maximum_attempts=0,
        non_retryable_error_types=NON_RETRYABLE,
    )


def activity_options(timeout_s: int) -> dict[str, Any]:
    """Node metadata for the Temporal plugin: an activity with a per-attempt timeout, heartbeats
    and retries by time (`retry_by_time`). Model steps still fall back to the heuristic decision
    on their MODEL_ATTEMPTS-th attempt (nodes.job.heartbeat.final_attempt) instead of failing."""
    return {
        "execute_in": "activity",
        "start_to_close_timeout": timedelta(seconds=timeout_s),
        "schedule_to_close_timeout": RETRY_WINDOW,
        "heartbeat_timeout": HEARTBEAT_TIMEOUT,
        "retry_policy": retry_by_time(),
    }


QUICK_ATTEMPT_TIMEOUT = timedelta(seconds=60)


def quick_activity_options() -> dict[str, Any]:
    """The workflow's own short activities (checkpoint, the answer after a hard stop, the final
    write): retried by time like the nodes, and heartbeating (`nodes.job.heartbeat.beating`) so a
    worker lost while it holds one is noticed within HEARTBEAT_TIMEOUT, not at the attempt's
    timeout. Read when called, like `activity_options`."""
    return {
        "start_to_close_timeout": QUICK_ATTEMPT_TIMEOUT,
        "schedule_to_close_timeout": RETRY_WINDOW,
        "heartbeat_timeout": HEARTBEAT_TIMEOUT,
        "retry_policy": retry_by_time(),
    }


def must_answer(state: JobState) -> bool:
    """Stop, the submit-now steer (clock, tokens or dollars), or the tool-call cap."""
    stats = state.get("stats", {})
    return (
        bool(current_control().answer_reason())
        or bool(budget_steer(state))
        or stats.get("tool_calls", 0) >= config_of(state).max_tool_calls
    )


def one_step_rounds(state: JobState) -> bool:
    """Whether this job runs each round as one step (`round_`): its policy says so, it runs in a
    workflow (in-process there is no task transition to save, so a run there goes step by step —
    and a durable job ranking as its in-process twin does is what tests/test_workflow checks), and
    the job started under the ONE_STEP_ROUNDS patch."""
    if not spec_of(state).one_step_rounds or not workflow.in_workflow():
        return False
    return workflow.patched(ONE_STEP_ROUNDS)


def next_round(state: JobState) -> Literal["one_round", "retrieval"]:
    return ONE_ROUND_NODE if one_step_rounds(state) else "retrieval"


def plans_in_first_round(state: JobState) -> bool:
    """Whether a one-step job plans inside its first round, one task transition fewer (under the
    PLAN_IN_FIRST_ROUND patch: a job started before it replays its navigator step). Until that round
    ends the workflow has no plan to check a steering note's year range against: the `steer` update
    waits for it a few seconds (workflows.search_job.STEER_PLAN_WAIT_S)."""
    if not spec_of(state).one_step_rounds or not workflow.in_workflow():
        return False
    # This patch is asked first: replaying a job started before it, ONE_STEP_ROUNDS must not be asked
    # here, earlier than that job asked it (the SDK remembers a patch's first answer).
    return workflow.patched(PLAN_IN_FIRST_ROUND) and workflow.patched(ONE_STEP_ROUNDS)


async def route_start(state: JobState) -> Literal["navigator", "one_round", "retrieval", "answer"]:
    if not state.get("plan"):
        return ONE_ROUND_NODE if plans_in_first_round(state) else "navigator"
    return "answer" if must_answer(state) or state.get("stop_reason") else next_round(state)


async def route_after_retrieval(state: JobState) -> Literal["verification", "answer"]:
    # Verification also applies the hard constraints, so it runs at least once before answering.
    if must_answer(state) and (state.get("pool") or {}).get("verified"):
        return "answer"
    return "verification"


async def route_after_verification(state: JobState) -> Any:
    if must_answer(state):
        return "answer"
    tasks = state.get("librarian_tasks") or []
    if tasks:
        return [Send("librarian", task) for task in tasks]
    return "reflection"


async def fold(state: JobState) -> dict:
    """The librarians' judgements folded into the candidate pool."""
    return await with_heartbeats(librarian_mod.fold_judgements, state)


async def route_after_fold(state: JobState) -> Literal["reflection", "answer"]:
    return "answer" if must_answer(state) else "reflection"


def steer_reaches_final_list() -> bool:
    """Whether this job folds every steering note into its final list (STEER_REACHES_FINAL_LIST):
    always in-process; in a workflow, unless it started before the patch. Asked only when a note is
    pending, so a job never steered carries no marker."""
    return not workflow.in_workflow() or workflow.patched(STEER_REACHES_FINAL_LIST)


def _round_over(state: JobState) -> Literal["steer", "answer", "__end__", ""]:
    """Where a job goes once a round is over ('' for the next round). A pending steering note goes
    through `steer` even when the job must answer: then its plan shapes the final list
    (`route_after_steer` goes on to answer) rather than the note being dropped."""
    control = current_control()
    if must_answer(state):
        return "steer" if control.pending_steering and steer_reaches_final_list() else "answer"
    if control.pending_steering:
        return "steer"
    if state.get("stop_reason"):
        return "answer"
    if control.pause_requested:
        return "__end__"  # END; the workflow continues-as-new with this state and resumes at the next round
    return ""


async def route_after_reflection(state: JobState) -> Literal["steer", "retrieval", "answer", "__end__"]:
    return _round_over(state) or "retrieval"


async def route_after_round(state: JobState) -> Literal["steer", "one_round", "answer", "__end__"]:
    """After a one-step round: where `_round_over` says — but to the end when the round has answered
    already (`round_`: it went to answer on what the state says, or at `answer_at`, which this
    workflow's timer may not have marked yet), unless a steering note came in meanwhile."""
    where = _round_over(state) or ONE_ROUND_NODE
    return "__end__" if answered(state) and where != NodeName.STEER else where


async def route_to_round(state: JobState) -> Literal["one_round", "retrieval"]:
    """After the navigator: the first round, in one step or step by step."""
    return next_round(state)


async def route_after_steer(state: JobState) -> Literal["one_round", "retrieval", "answer"]:
    """After a steer: the steered round — or, when the job had to answer (`steer` marked the notes
    FINAL_LIST), the answer, built from the plan the notes changed."""
    notes = state.get("steering") or []
    return "answer" if notes and notes[-1].get("applied") == FINAL_LIST else next_round(state)


async def route_after_answer(state: JobState) -> Literal["steer", "__end__"]:
    """After the answer: the end — unless a steering note came in while it was built (step by step,
    the answer is an activity of its own); then the note is folded in and the job answers again."""
    if current_control().pending_steering and steer_reaches_final_list():
        return "steer"
    return "__end__"


async def steer(state: JobState) -> dict:
    """Fold steering notes received mid-job into the plan (nodes.rounds.steering; pure, so it runs
    in the workflow). Each note records where it took effect (nodes.job.steering_notes): from the
    round it was promised — the one after the round it came in, even past the planned rounds — or,
    when the job must answer now, on the final list only (the round number and the stop reason stay)."""
    notes = current_control().take_steering()
    update = fold_steering(state, notes)
    if not steer_reaches_final_list():
        return update
    before = list(state.get("steering", []))
    if must_answer(state):
        return update | {
            "steering": before + placed(notes, round_no=0, final_only=True),
            "round": int(state.get("round", 0) or 0),
            "stop_reason": state.get("stop_reason", ""),
        }
    round_no = steered_round(state, notes)
    return update | {"steering": before + placed(notes, round_no=round_no, final_only=False), "round": round_no}


def make_search_graph() -> StateGraph:
    g = StateGraph(JobState)
    g.add_node("navigator", navigator, metadata=activity_options(600))
    g.add_node("retrieval", retrieval, metadata=activity_options(300))
    g.add_node("verification", verification, metadata=activity_options(300))
    # A Send target: its input is the Send payload (a plain dict), which langgraph's stubs do not allow
    # for; a TypedDict hint would not do, as add_node would take it for the node's input schema.
    g.add_node("librarian", librarian, metadata=activity_options(600))  # type: ignore[arg-type]
    g.add_node("fold", fold, metadata=activity_options(120))
    g.add_node("reflection", reflection, metadata=activity_options(600))
    g.add_node(ONE_ROUND_NODE, round_, metadata=activity_options(1200))  # retrieval + verification + reflection
    g.add_node("steer", steer, metadata={"execute_in": "workflow"})
    g.add_node("answer", answer, metadata=activity_options(600))
    g.add_conditional_edges(START, route_start)
    g.add_conditional_edges("navigator", route_to_round)
    g.add_conditional_edges("retrieval", route_after_retrieval)
    g.add_conditional_edges("verification", route_after_verification, ["librarian", "reflection", "answer"])
    g.add_edge("librarian", "fold")
    g.add_conditional_edges("fold", route_after_fold)
    g.add_conditional_edges("reflection", route_after_reflection)
    g.add_conditional_edges("steer", route_after_steer)
    g.add_conditional_edges(ONE_ROUND_NODE, route_after_round)
    g.add_conditional_edges("answer", route_after_answer)
    return g
