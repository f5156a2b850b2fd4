"""The names of the graphs' nodes: the round graph's (graphs.search_graph) and the ReAct graph's
(graphs.react_graph).

A node's name is also its Temporal activity's name (the LangGraph plugin runs an I/O node as an
activity of that name), the `node` a step writes into the job's state, what the `progress` query
and `quarry job progress` show, and the `node {name}` span. A `NodeName` is a `StrEnum`: each member
*is* its value (`NodeName.ANSWER == "answer"`), so states, payloads and outputs carry the same
strings as before. Compare node names with these members, never with string literals
(tests/test_named_seams.py checks it).
"""

from __future__ import annotations

from enum import StrEnum


class NodeName(StrEnum):
    # The round graph: navigator → retrieval → verification → [librarian → fold] → reflection →
    # (retrieval | answer); `one_round` runs a whole round as one step, `steer` folds steering notes.
    NAVIGATOR = "navigator"
    RETRIEVAL = "retrieval"
    VERIFICATION = "verification"
    LIBRARIAN = "librarian"
    FOLD = "fold"
    REFLECTION = "reflection"
    ONE_ROUND = "one_round"
    STEER = "steer"
    ANSWER = "answer"
    # The ReAct graph: inbox → agent ⇄ tools → finish (remind when the model called no tool).
    INBOX = "inbox"
    REMIND = "remind"
    AGENT = "agent"
    TOOLS = "tools"
    FINISH = "finish"


# The nodes after which the workflow may ask a job to pause and continue as new (workflows.search_job):
# a round is over (reflection) or a turn's tool calls are done (tools); their routers then go to the end.
PAUSE_POINTS = frozenset({NodeName.REFLECTION, NodeName.TOOLS})
