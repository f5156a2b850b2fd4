"""The ReAct searcher's nodes: `agent` (one model call) and `tools` (run the calls it made).

The conversation lives in the job store, one message per position, and the state carries only
its length (`conversation`), so a job's state and Temporal history stay small however long the
conversation grows. Both nodes are idempotent by position:
- `agent` appends any pending notes (steering, the budget's submit-now steer, reminders) at the
  next positions, then — if a previous attempt already stored the model's reply there (the
  worker died after the call returned) — reuses it instead of calling the model again;
- `tools` writes each tool result at a fixed position after the reply it answers.
The prompt is a stable prefix (system prompt, tool schemas, the task) plus an append-only tail.
"""

from __future__ import annotations

import json
import re
from typing import Any

from nodes.job.config import MODEL_ATTEMPTS, config_of
from nodes.job.heartbeat import final_attempt
from nodes.job.runtime import runtime
from nodes.job.state import JobState, add_fallback, bump
from nodes.job.usage import Usage, usage_from_metadata
from nodes.llm.calls import ModelError, invoke
from nodes.llm.context import neutralise, tool_result_for_model
from nodes.react.prompts import (
    DROPPED,
    REFUSED,
    REMINDER,
    STEER_SUBMIT,
    STEERING,
    SUBMITTED,
    SYSTEM,
    TASK_ANSWER,
    TASK_LIST,
    TOOLS_AS_TEXT,
)
from nodes.tools.agent_tools import RETRIEVAL_TOOLS, SubmitArgs, parse_args, tool_definitions
from nodes.tools.results import DocumentPage, SearchPage, ToolError
from observability.tool_spans import joined, span_ref, turn_span

_TEXT_CALL = re.compile(r"\{.*\}", re.S)


def system_prompt(channels: set[str]) -> str:
    """The system prompt with the tools listed as text too (same every turn: a stable prefix),
    for OpenAI-compatible servers that drop tool definitions for models without a tool template."""
    lines = [f"- {t.name}({', '.join(t.args)}): {t.description}" for t in tool_definitions(channels)]
    return SYSTEM + "\n\n" + TOOLS_AS_TEXT.format(tools="\n".join(lines))


def note_text(note: dict[str, str]) -> str:
    """The message a pending note becomes (user steering is inserted as data)."""
    kind = note.get("kind")
    if kind == "steer":
        return STEER_SUBMIT.format(what=note.get("what", "time"))
    if kind == "reminder":
        return REMINDER
    return STEERING.format(text=neutralise(note.get("text", "")))


def task_message(state: JobState) -> str:
    template = TASK_ANSWER if state.get("mode") == "answer" else TASK_LIST
    return template.format(intent=neutralise(state["intent"]))


def _as_messages(rows: list[dict[str, Any]]) -> list[Any]:
    from langchain_core.messages import messages_from_dict

    return messages_from_dict(rows)


def _as_row(message: Any) -> dict[str, Any]:
    from langchain_core.messages import message_to_dict

    return message_to_dict(message)


def _calls_from_text(message: Any) -> list[dict[str, Any]]:
    """Tool calls written as JSON text by models without native tool calling
    (`{"name": "search", "arguments": {...}}`): taken as calls so such a model can still work."""
    content = message.content if isinstance(message.content, str) else ""
    m = _TEXT_CALL.search(content)
    if not m:
        return []
    try:
        obj = json.loads(m.group(0))
    except ValueError:
        return []
    items = obj if isinstance(obj, list) else [obj]
    calls = []
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            args = item.get("arguments", item.get("parameters", item.get("args", {})))
            calls.append({"name": item["name"], "args": args if isinstance(args, dict) else {}, "type": "tool_call"})
    return calls


def _normalised_reply(message: Any, seq: int) -> Any:
    """The reply with every tool call given a deterministic id (some servers send none) and
    text-written calls promoted to tool calls; invalid calls stay listed for an error reply."""
    calls = list(message.tool_calls or []) or _calls_from_text(message)
    fixed = [dict(c, id=c.get("id") or f"call-{seq}-{i}") for i, c in enumerate(calls)]
    bad = [dict(c, id=c.get("id") or f"bad-{seq}-{i}") for i, c in enumerate(message.invalid_tool_calls or [])]
    update: dict[str, Any] = {"tool_calls": fixed, "invalid_tool_calls": bad}
    if (fixed or bad) and not message.content:
        # Sent back as `content: null`, which several OpenAI-compatible servers reject.
        update["content"] = " "
    return message.model_copy(update=update)


def agent(state: JobState) -> dict[str, Any]:
    """Append pending notes, then one model turn (or the stored reply of a previous attempt)."""
    from langchain_core.messages import HumanMessage, SystemMessage

    rt = runtime()
    cfg = config_of(state)
    jobs, job_id = rt.jobs, state["job_id"]
    seq = int(state.get("conversation", 0))
    if seq == 0:
        jobs.put_message(job_id, 0, _as_row(HumanMessage(content=task_message(state))))
        seq = 1
    for note in state.get("pending_notes", []):
        jobs.put_message(job_id, seq, _as_row(HumanMessage(content=note_text(note))))
        seq += 1
    update: dict[str, Any] = {"pending_notes": [], "node": "agent", "steps": int(state.get("steps", 0)) + 1}
    if "collection_version" not in state:  # the job's first turn pins the collection version it reads
        update["collection_version"] = rt.collection(state).version
    if "profile" not in state:  # … and the search settings
        update["profile"] = rt.search_profile(state)
    stored = jobs.message(job_id, seq)
    turn_ref: dict[str, str] | None = None  # this turn's span, for the tools step to join
    model_spec = cfg.models.model or ""
    if stored is not None and stored.get("type") == "ai":
        reply = _as_messages([stored])[0]  # the model already answered this turn: never ask twice
        usage = usage_from_metadata(reply.usage_metadata, model_spec, cfg.prices)
    else:
        history = _as_messages(jobs.messages(job_id, seq))
        model = rt.model(model_spec, cfg.models)
        try:
            channels = rt.channels(state)
            with turn_span(update["steps"], job_id=job_id) as span:
                turn_ref = span_ref(span)
                made = invoke(
                    model,
                    [SystemMessage(content=system_prompt(channels)), *history],
                    spec=model_spec,
                    purpose="react",
                    prices=cfg.prices,
                    job_id=job_id,
                    tools=tool_definitions(channels),
                    settings=cfg.models,
                )
        except ModelError as exc:
            if exc.retryable and not final_attempt(MODEL_ATTEMPTS):
                raise
            return update | {
                "conversation": seq,
                "turn": {"tool_calls": 0, "submit": False, "failed": True},
                "fallbacks": add_fallback(state, "react agent", str(exc)),
            }
        reply = _normalised_reply(made.message, seq)
        usage = made.usage
        jobs.put_message(job_id, seq, _as_row(reply))
    calls = list(reply.tool_calls or []) + list(reply.invalid_tool_calls or [])
    total = Usage.from_dict(state.get("usage")).add(usage)
    turn: dict[str, Any] = {"tool_calls": len(calls), "submit": any(c.get("name") == "submit" for c in calls)}
    if turn_ref:
        turn["span"] = turn_ref
    return update | {"conversation": seq + 1, "usage": total.to_dict(), "turn": turn}


def tools(state: JobState) -> dict[str, Any]:
    """Run the tool calls of the last reply; each result (or refusal, or repair hint) is stored
    as the next message. After the budget steer only `submit` is served. The calls' spans sit
    under the turn's span, which the agent step opened in its own activity."""
    with joined(state.get("turn", {}).get("span")):
        return _run_calls(state)


def _run_calls(state: JobState) -> dict[str, Any]:
    from langchain_core.messages import ToolMessage

    rt = runtime()
    jobs, job_id = rt.jobs, state["job_id"]
    seq = int(state["conversation"])
    last = jobs.message(job_id, seq - 1)
    assert last is not None, f"job {job_id} has no message {seq - 1}"
    reply = _as_messages([last])[0]
    jt = rt.tools(state)
    previewed, opened = list(state.get("previewed", [])), list(state.get("opened", []))
    submitted = state.get("submitted")
    searches = 0
    steered = state.get("steered", "")
    for call in list(reply.tool_calls or []) + list(reply.invalid_tool_calls or []):
        name = call.get("name") or ""
        if call in (reply.invalid_tool_calls or []):
            content = ToolError(
                tool=name or "?",
                code="bad_arguments",
                message="the tool call was malformed JSON",
                hint="send the arguments as one JSON object matching the tool's schema",
            ).render()
        elif steered and name in RETRIEVAL_TOOLS:
            content = REFUSED.format(what=steered)
        else:
            args = parse_args(name, call.get("args"))
            if isinstance(args, ToolError):
                content = args.render()
            elif isinstance(args, SubmitArgs):
                submitted, content = _submission(args, jobs.surfaced(job_id))
            else:
                result = jt.call(args)
                searches += isinstance(result, SearchPage)
                if isinstance(result, SearchPage):
                    previewed += [h.docid for h in result.hits if h.docid not in previewed]
                elif isinstance(result, DocumentPage) and result.docid not in opened:
                    opened.append(result.docid)
                content = tool_result_for_model(result)
        jobs.put_message(
            job_id,
            seq,
            _as_row(
                ToolMessage(content=content, tool_call_id=call.get("id") or f"call-{seq}", name=name[:60] or "unknown")
            ),
        )
        seq += 1
    previewed += [d for d in sorted(jt.session.trajectory.previewed) if d not in previewed]
    update: dict[str, Any] = {
        "conversation": seq,
        "previewed": previewed,
        "opened": opened,
        "node": "tools",
        "stats": bump(state.get("stats", {}), tool_calls=jt.calls, searches=searches, reads=jt.calls - searches),
    }
    if submitted is not None:
        update["submitted"] = submitted
    return update


def _submission(args: SubmitArgs, surfaced: set[str]) -> tuple[dict[str, Any], str]:
    """The model's submission, keeping only docids a store returned to this job."""
    ids = list(dict.fromkeys(d.strip() for d in args.docids if d.strip()))
    kept = [d for d in ids if d in surfaced]
    dropped = [d for d in ids if d not in surfaced]
    sub = {
        "docids": kept,
        "dropped": dropped[:50],
        "explanation": args.explanation,
        "exact_answer": args.exact_answer,
        "confidence": args.confidence,
        "insufficient_evidence": args.insufficient_evidence,
        "ranked": args.ranked,
        "reason": args.reason,
    }
    note = DROPPED.format(ids=", ".join(dropped[:10])) if dropped else ""
    return sub, SUBMITTED.format(n=len(kept), dropped=note)
