"""The ReAct graph: inbox → agent ⇄ tools → finish, after Temporal's react_agent sample.

`agent` (one model call) and `tools` (the calls it made) are activities; `inbox` and `remind`
are pure workflow-side nodes that turn outside events into messages for the next turn — the
user's steering notes, the submit-now steer when 70 % of the time, token or dollar budget is
used, and a reminder when the model answered without calling a tool. Routers decide from the
state and `current_control()` only, so the workflow stays deterministic.
"""

from __future__ import annotations

from typing import Literal

from langgraph.graph import END, START, StateGraph

from graphs.search_graph import activity_options
from nodes.job.budget import budget_spent, budget_steer
from nodes.job.config import config_of
from nodes.job.control import current_control
from nodes.job.heartbeat import with_heartbeats
from nodes.job.node_names import NodeName
from nodes.job.state import JobState
from nodes.react import agent as react_mod
from nodes.react import finish as finish_mod

GRAPH_NAME = "quarry-react"
# Turns the model gets after the submit-now steer before the job answers without it.
TURNS_AFTER_STEER = 2


async def agent(state: JobState) -> dict:
    return await with_heartbeats(react_mod.agent, state)


async def tools(state: JobState) -> dict:
    return await with_heartbeats(react_mod.tools, state)


async def finish(state: JobState) -> dict:
    return await with_heartbeats(finish_mod.finish, state)


def _out_of_turns(state: JobState) -> bool:
    cfg = config_of(state)
    steps = int(state.get("steps", 0))
    late = state.get("steered") and steps - int(state.get("steer_step", steps)) > TURNS_AFTER_STEER
    return (
        current_control().stop_requested
        or bool(budget_spent(state))
        or steps >= cfg.models.react_max_steps
        or state.get("stats", {}).get("tool_calls", 0) >= cfg.max_tool_calls
        or bool(late)
    )


async def inbox(state: JobState) -> dict:
    """Steering notes, and the submit-now steer once, become the next turn's messages."""
    control = current_control()
    notes = list(state.get("pending_notes", []))
    incoming = control.take_steering()
    notes += [{"kind": "user", "text": n["text"]} for n in incoming]
    update: dict = {"steering": list(state.get("steering", [])) + incoming, "node": "inbox"}
    why = "time" if control.submit_now else budget_steer(state)
    if why and not state.get("steered"):
        notes.append({"kind": "steer", "what": why})
        update |= {"steered": why, "steer_step": int(state.get("steps", 0))}
    return update | {"pending_notes": notes}


async def remind(state: JobState) -> dict:
    return {
        "pending_notes": [*state.get("pending_notes", []), {"kind": "reminder"}],
        "reminders": int(state.get("reminders", 0)) + 1,
        "node": "remind",
    }


async def route_start(state: JobState) -> Literal["tools", "finish", "inbox"]:
    """Where a (possibly continued-as-new) job resumes: pending tool calls first."""
    if state.get("submitted") is not None:
        return "finish"
    if state.get("node") == NodeName.AGENT and state.get("turn", {}).get("tool_calls"):
        return "tools"
    return "finish" if _out_of_turns(state) else "inbox"


async def route_after_agent(state: JobState) -> Literal["tools", "remind", "finish"]:
    turn = state.get("turn", {})
    if turn.get("failed"):
        return "finish"
    if turn.get("tool_calls"):
        return "tools"
    if _out_of_turns(state) or int(state.get("reminders", 0)) >= config_of(state).models.react_reminders:
        return "finish"
    return "remind"


async def route_after_tools(state: JobState) -> Literal["inbox", "finish", "__end__"]:
    if state.get("submitted") is not None or _out_of_turns(state):
        return "finish"
    if current_control().pause_requested:
        return "__end__"  # END; the workflow continues-as-new with this (small) state and resumes at inbox
    return "inbox"


def make_react_graph() -> StateGraph:
    g = StateGraph(JobState)
    g.add_node("inbox", inbox, metadata={"execute_in": "workflow"})
    g.add_node("remind", remind, metadata={"execute_in": "workflow"})
    g.add_node("agent", agent, metadata=activity_options(600))
    g.add_node("tools", tools, metadata=activity_options(300))
    g.add_node("finish", finish, metadata=activity_options(300))
    g.add_conditional_edges(START, route_start)
    g.add_edge("inbox", "agent")
    g.add_edge("remind", "agent")
    g.add_conditional_edges("agent", route_after_agent)
    g.add_conditional_edges("tools", route_after_tools)
    g.add_edge("finish", END)
    return g
