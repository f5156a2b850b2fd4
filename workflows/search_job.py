"""The `SearchJob` workflow: runs the search graph durably, with budgets, steering and progress.

Budgets are workflow timers: at 0.7·T a "submit now" steer makes the graph go to answer at its
next router; at T the running activity is cancelled and the answer is built from the best state
seen so far (status `budget_exhausted`); T is the job's `config.max_seconds`. A `stop` signal
answers now, a `steer` update adds a requirement or exclusion (validated), and a `progress` query
reports where the job is. State is checkpointed into the job store after every round, and the run
continues as new with its state when the history grows large. A job that fails stores its final
result (status "failed", its error `{code, message, hint}`) and then ends *Failed* in Temporal,
typed by its code (workflows.job_failure). The graph reads the workflow's `Control` (stop, submit-now, steering,
pause) from nodes.job.control, where `_drive` installs it for the graph it runs.
"""

from __future__ import annotations

import asyncio
from contextlib import suppress
from typing import TYPE_CHECKING, Any, cast

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.exceptions import TimeoutError as StepTimeoutError

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from temporalio.common import SearchAttributeUpdate

with workflow.unsafe.imports_passed_through():
    from temporalio.langgraph import graph

    from graphs.search_graph import answered, quick_activity_options
    from graphs.state import graph_for, initial_state
    from nodes.evidence.planning import parse_years, validate_steering
    from nodes.job.budget import budget_used
    from nodes.job.config import config_of
    from nodes.job.control import Control, reset_control, use_control
    from nodes.job.node_names import PAUSE_POINTS, NodeName
    from nodes.job.state import Mode
    from nodes.job.steering_notes import applies_from, unapplied
    from nodes.job.usage import Usage
    from nodes.policy.registry import DEFAULT_POLICY, ONE_ROUND_NODE
    from observability.agent_span import with_run_start
    from stores.errors import QuarryError, error_record
    from stores.job_status import HALTED, JobStatus
    from workflows import search_attributes
    from workflows.activities import answer_from_state, checkpoint_job, finish_job
    from workflows.job_failure import job_failure
    from workflows.job_input import check_job_input, migrated
    from workflows.shared import STEER_FRACTION, JobInput

# LangGraph's default of 25 supersteps is far below a ReAct job's turns (each is 2-3 steps);
# the real caps are the job's rounds, steps and budgets.
RECURSION_LIMIT = 10_000
CHECKPOINT_EVERY_STEPS = 5
# How long a steering note with a year range waits for the job's plan (which says whether the
# collection has years); below `quarry job steer`'s own wait (quarry.app.actions.STEER_WAIT_S).
STEER_PLAN_WAIT_S = 5.0
STEER_WAITS_FOR_PLAN = "steer-waits-for-plan"
ANSWERING = "the job is already answering or finished; start a new job to change its requirements"
# The patch (workflow.patched) under which a failed job's execution ends Failed instead of Completed.
FAILED_JOBS_FAIL = "failed-job-ends-failed"
# The patch under which the Web UI's round column ends at the rounds the result counts (a round a
# reflection planned and a stop or budget never ran is not one).
ROUNDS_FROM_RESULT = "round-column-from-result"

# Checkpoints, the answer after a hard stop and the final write retry by time like the graph's
# nodes and heartbeat (graphs.search_graph.quick_activity_options): a worker paused while it holds
# one must not fail the job, and a worker lost while it holds one is noticed in seconds.


def failure_of(exc: BaseException, job_id: str = "JOB_ID") -> dict[str, str]:
    """What a failed job reports, `{code, message, hint}`: the record an activity's QuarryError
    carries (the details of its ApplicationError, nodes.job.heartbeat.application_error), found
    anywhere in the cause chain ("Activity task failed" wraps it); else the innermost cause as
    `internal_error` (its class, or its ApplicationError type, and message: a bug or a failure
    outside Quarry) — an activity's timeout as `activity_timeout`."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and len(chain) < 20:
        chain.append(current)
        current = current.__cause__
    for err in chain:
        if (
            isinstance(err, ApplicationError)
            and err.details
            and isinstance(err.details[0], dict)
            and err.details[0].get("code")
        ):
            record = err.details[0]
            return {
                "code": str(record["code"]),
                "message": str(record.get("message") or err.message),
                "hint": str(record.get("hint") or ""),
            }
    root = chain[-1]
    if isinstance(root, StepTimeoutError):
        return {
            "code": "activity_timeout",
            "message": f"a step of the job timed out ({root.type.name.lower()})"
            if root.type is not None
            else "a step of the job timed out",
            "hint": f"a worker stalled or died mid-step; run the job again: quarry job rerun {job_id}",
        }
    text = (
        f"{root.type}: {root.message}"
        if isinstance(root, ApplicationError) and root.type
        else f"{type(root).__name__}: {root}"
    )
    return {
        "code": "internal_error",
        "message": text,
        "hint": f"not an input problem: see the worker's log; its last checkpoint: quarry job show {job_id}",
    }


@workflow.defn
class SearchJob:
    def __init__(self) -> None:
        self.control = Control()
        self.state: dict[str, Any] = {}
        self.status = JobStatus.RUNNING
        self.started_at = 0.0
        self.budget_s = 0.0
        self.indexed = False
        self.running: dict[str, int] = {}  # the graph's nodes running now (librarians run several at once)

    # -- handlers ------------------------------------------------------------------------------

    @workflow.query
    def progress(self) -> dict[str, Any]:
        used = max(0.0, workflow.now().timestamp() - self.started_at) if self.started_at else 0.0
        top = list(self.state.get("top", []))[:5] if self.state else []
        cfg = config_of(self.state)
        usage = Usage.from_dict(self.state.get("usage"))
        which, share = budget_used(self.state) if self.state else ("", 0.0)
        round_no, node = self._where()
        return {
            "job_id": self.state.get("job_id"),
            "status": self.status,
            "policy": self.state.get("policy", DEFAULT_POLICY),
            "round": round_no,
            "steps": self.state.get("steps", 0),
            "node": node,
            # The nodes running now (`node` is the last one that finished): whose step progress to show.
            "running": sorted(name for name, count in self.running.items() if count),
            "candidates": int((self.state.get("pool") or {}).get("size", 0)),
            "top": top,
            "budget": {
                "seconds": self.budget_s,
                "used": round(used, 1),
                "left": round(max(0.0, self.budget_s - used), 1),
                "deadline": (self.started_at + self.budget_s) if self.started_at else None,
                "submit_now": self.control.submit_now or bool(self.state.get("steered")),
                "max_tokens": cfg.max_tokens,
                "max_dollars": cfg.max_dollars,
                "model_budget": which,
                "model_budget_used": round(share, 4),
            },
            "usage": usage.to_dict(),
            "fallbacks": list(self.state.get("fallbacks", [])),
            "tool_calls": self.state.get("stats", {}).get("tool_calls", 0),
            # The latest round's searches, readable (for `quarry job watch`).
            "searches": [
                {"round": s.get("round"), "channel": s.get("channel"), "query": s.get("label") or s.get("query", "")}
                for s in self.state.get("searches", [])[-6:]
            ],
            "stop_requested": self.control.stop_requested,
            # Steering notes not yet taken by the graph: a long step inside a node ends early for them.
            "steering_pending": len(self.control.pending_steering),
        }

    @workflow.signal
    def stop(self) -> None:
        self.control.stop_requested = True

    @workflow.update
    async def steer(self, text: str) -> dict[str, Any]:
        has_years = any(y is not None for y in parse_years(text)[:2])
        # (under a patch: a job that took a year note before this wait replays without its timer)
        if has_years and not self.state.get("plan") and workflow.patched(STEER_WAITS_FOR_PLAN):
            # A year range is checked against the plan, which the first round (or the navigator)
            # makes: wait for it a little, then check (past that, years are taken as known).
            with suppress(TimeoutError):
                await workflow.wait_condition(lambda: bool(self.state.get("plan")), timeout=STEER_PLAN_WAIT_S)
            if self._answering():
                raise ApplicationError(ANSWERING, type="steer_rejected", non_retryable=True)
        try:
            checked = validate_steering(text, years=self._years_known())
        except ValueError as err:
            raise ApplicationError(str(err), type="steer_rejected", non_retryable=True) from None
        round_no = self._where()[0]
        applies = applies_from(round_no)
        note: dict[str, Any] = {"text": checked, "round": round_no, "applies_from_round": applies}
        self.control.pending_steering.append(note)
        # Past the planned rounds the steered round is one more (graphs.search_graph.steer): after it
        # the job answers again, so the note reshapes the final list rather than a planned round.
        extra = applies > config_of(self.state).max_rounds
        return {"accepted": note["text"], "applies_from_round": applies, "extra_round": extra}

    @steer.validator
    def _validate_steer(self, text: str) -> None:
        if self._answering():
            raise ValueError(ANSWERING)
        validate_steering(text, years=self._years_known())

    def _answering(self) -> bool:
        return (
            self.status != JobStatus.RUNNING
            or bool(self.control.answer_reason())
            or self.state.get("node") == NodeName.ANSWER
        )

    def _where(self) -> tuple[int, str]:
        """The round the job is in and its node: while a one-step round runs, the state is the one it
        started from (numbered with this round already) at the node before it, so the node is the
        round's own."""
        round_no, node = int(self.state.get("round", 0)), str(self.state.get("node", "start"))
        # (a first round that plans the job too starts from round 0, before its plan numbers it 1)
        return (max(round_no, 1), ONE_ROUND_NODE) if self.running.get(ONE_ROUND_NODE) else (round_no, node)

    def _years_known(self) -> bool:
        """Whether the collection has publication years (the navigator records it in the plan)."""
        return bool((self.state or {}).get("plan", {}).get("years_known", True))

    # -- run -----------------------------------------------------------------------------------
    # Long: the workflow's commands in their replayed order (patched markers inline); module at the cap.
    @workflow.run
    async def run(self, inp: JobInput) -> dict[str, Any]:
        inp = migrated(inp)  # a budget in the input of a job started before it moved into the config
        try:
            check_job_input(inp)
        except QuarryError as err:  # started without Quarry's client: fail at once, saying why
            self.status = JobStatus.FAILED
            self.indexed = inp.indexed
            self._index(status=self.status)  # the Web UI's QuarryStatus column says it failed
            self.state = {
                "job_id": inp.job_id,
                "collection": str(inp.collection)[:100],
                "intent": str(inp.intent)[:500],
                "mode": inp.mode,
                "policy": inp.policy,
            }
            final = await workflow.execute_activity(
                finish_job,
                args=[self.state, JobStatus.FAILED, error_record(err), "bad_input", inp.trace],
                **quick_activity_options(),
            )
            return self._failed(final)
        now = workflow.now().timestamp()
        self.started_at = inp.started_at or now
        self.budget_s = float(inp.config.max_seconds)
        # Signals and updates can be handled before this line runs (they arrive with the first
        # workflow task): keep what they set, and add what the previous run carried over.
        self.control.submit_now = self.control.submit_now or inp.steer_fired
        self.control.pending_steering = list(inp.pending_steering or []) + self.control.pending_steering
        mode = cast(Mode, inp.mode)  # one of MODES: check_job_input accepted it
        self.state = inp.state or dict(
            initial_state(inp.job_id, inp.collection, inp.intent, mode=mode, policy=inp.policy, config=inp.config)
        )
        # The budget runs from here: the first workflow task a worker ran (its time, workflow.now()),
        # not the submission — a job queued while its worker starts or warms up loses none of it.
        self.state["run_started_at"] = self.started_at
        self.state["answer_at"] = self.started_at + STEER_FRACTION * self.budget_s  # a one-step round ends there
        steer_task = asyncio.create_task(self._submit_now_at(self.started_at + STEER_FRACTION * self.budget_s))
        self.indexed = inp.indexed
        drive = asyncio.create_task(self._drive(self.state, graph_for(inp.policy)))
        error: dict[str, str] | None = None
        try:
            await workflow.wait_condition(drive.done, timeout=max(0.0, self.started_at + self.budget_s - now))
            await drive  # re-raises a graph failure
        except TimeoutError:
            self.status = JobStatus.BUDGET_EXHAUSTED
            await self._halt(drive)
        except asyncio.CancelledError:  # `quarry job cancel`: keep what the job has, then end as cancelled
            self.status = JobStatus.CANCELLED
            await self._halt(drive)
        except Exception as exc:  # the graph failed after Temporal's retries: keep what we have
            self.status = JobStatus.FAILED
            error = failure_of(exc, inp.job_id)
            workflow.logger.warning("search graph failed (%s): %s", error["code"], error["message"])
        finally:
            steer_task.cancel()

        done = answered(self.state)
        if self.status == JobStatus.RUNNING and not done:
            # The graph paused for continue-as-new: carry the state, the budget and the flags over.
            workflow.continue_as_new(
                JobInput(
                    job_id=inp.job_id,
                    collection=inp.collection,
                    intent=inp.intent,
                    mode=inp.mode,
                    policy=inp.policy,
                    config=inp.config,
                    started_at=self.started_at,
                    steer_fired=self.control.submit_now,
                    state=self.state,
                    pending_steering=self.control.pending_steering,
                    indexed=inp.indexed,
                    trace=inp.trace,
                )
            )
        if not done:
            try:  # the result of the best state so far waits in the job store
                await workflow.execute_activity(answer_from_state, self.state, **quick_activity_options())
            except ActivityError:  # nothing to answer from (e.g. the collection is gone)
                if self.status != JobStatus.FAILED:
                    raise
        # Why the job answered when the graph did not say: a stop, the budget steer or the hard stop.
        reason = self.status if self.status in HALTED else self.control.answer_reason()
        if self.status == JobStatus.RUNNING:
            self.status = JobStatus.STOPPED if self.control.stop_requested else JobStatus.COMPLETED
        self._index(status=self.status)
        # A steering note the job took but was cut off before folding in (the hard stop, a
        # cancellation, a failure) is reported as not applied, never dropped unsaid.
        state = self.state
        if self.control.pending_steering:
            state = state | {"steering_unapplied": unapplied(self.control.pending_steering, self.status)}
        # The agent span starts when the job started running here, not when it was submitted.
        final = await workflow.execute_activity(
            finish_job,
            args=[state, self.status, error, reason, with_run_start(inp.trace, self.started_at)],
            **quick_activity_options(),
        )
        rounds = final.get("rounds")
        if isinstance(rounds, int) and workflow.patched(ROUNDS_FROM_RESULT):
            self._index(round_no=rounds)
        # A steering note still waiting for the plan (`steer`) is answered — refused, the job has
        # ended — before the run closes, rather than left to a "workflow completed" error.
        await workflow.wait_condition(workflow.all_handlers_finished)
        if self.status == JobStatus.CANCELLED:
            raise asyncio.CancelledError("cancelled by request; the best result so far is in the job store")
        if self.status == JobStatus.FAILED:
            return self._failed(final)
        return final

    def _failed(self, final: dict[str, Any]) -> dict[str, Any]:
        """End a failed job whose final result is stored: the execution fails, typed by the error's
        code (workflows.job_failure). A job that failed before this change (its history is replayed
        for a query) returned its result and completed, and still does."""
        if workflow.patched(FAILED_JOBS_FAIL):
            raise job_failure(final)
        return final

    async def _halt(self, drive: asyncio.Task) -> None:
        """Stop the graph (its running activity is cancelled) and keep the state reached."""
        drive.cancel()
        with suppress(asyncio.CancelledError, ActivityError):  # the running node activity was cancelled
            await drive

    def _index(self, *, round_no: int | None = None, status: str | None = None) -> None:
        """Update the job's search attributes (round, status) when it was started with them."""
        if not self.indexed:
            return
        updates: list[SearchAttributeUpdate[Any]] = []
        if round_no is not None:
            updates.append(search_attributes.ROUND.value_set(round_no))
        if status is not None:
            updates.append(search_attributes.STATUS.value_set(status))
        if updates:
            workflow.upsert_search_attributes(updates)

    async def _submit_now_at(self, at: float) -> None:
        delay = at - workflow.now().timestamp()
        if delay > 0:
            await asyncio.sleep(delay)
        self.control.submit_now = True

    async def _drive(self, state: dict[str, Any], graph_name: str) -> None:
        # The graph's routers and workflow-side nodes read this job's control (nodes.job.control); the
        # tasks the graph creates copy this task's context, so they all see this very object.
        token = use_control(self.control)
        try:
            await self._stream(state, graph_name)
        finally:
            reset_control(token)

    async def _stream(self, state: dict[str, Any], graph_name: str) -> None:
        app = graph(graph_name).compile()
        cfg = config_of(state)
        run_config: RunnableConfig = {
            "recursion_limit": RECURSION_LIMIT,
            "max_concurrency": max(1, cfg.models.judge_concurrency),
        }
        async for mode, chunk in app.astream(state, config=run_config, stream_mode=["values", "tasks"]):
            value = cast(dict[str, Any], chunk)
            if mode == "tasks":  # a node's task starting (it has no "result" yet) or ending
                name = str(value.get("name"))
                self.running[name] = max(0, self.running.get(name, 0) + (-1 if "result" in value else 1))
                continue
            if int(value.get("round", 0)) != int(self.state.get("round", 0)):
                self._index(round_no=int(value.get("round", 0)))
            self.state = value
            node = value.get("node")
            # The round graph's reflection node checkpoints itself; a ReAct job every few turns.
            if node == NodeName.TOOLS and int(value.get("steps", 0)) % CHECKPOINT_EVERY_STEPS == 0:
                await workflow.execute_activity(checkpoint_job, value, **quick_activity_options())
            if node in PAUSE_POINTS and workflow.info().is_continue_as_new_suggested():
                self.control.pause_requested = True
