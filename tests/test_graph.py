"""The search graph: its shape, an in-process run on a fixture corpus, and routing under Control.

In-process runs use the same nodes, tools and policy as a Temporal job; routers read the
control installed with `use_control` instead of a workflow's signal/update state.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graphs.search_graph import (
    answered,
    make_search_graph,
    one_step_rounds,
    round_,
    route_after_answer,
    route_after_reflection,
    route_after_retrieval,
    route_after_round,
    route_after_steer,
    route_after_verification,
    route_start,
)
from graphs.state import initial_state
from nodes.job.config import JobConfig
from nodes.job.control import Control, reset_control, use_control
from nodes.job.pool import further_along
from nodes.job.runtime import NodeRuntime, configure_runtime
from nodes.job.state import rounds_run
from tests.conftest import LITERATURE

INTENT = "graph neural networks for molecular property prediction, 2015-2020, not surveys"
NODES = {"navigator", "retrieval", "verification", "librarian", "fold", "reflection", "one_round", "steer", "answer"}
# (source, target, conditional): the design's loop plus the control exits and the steer detour.
EDGES = {
    ("__start__", "navigator", True),
    ("__start__", "retrieval", True),
    ("__start__", "one_round", True),  # a job continued as new resumes at its next round
    ("__start__", "answer", True),
    ("navigator", "retrieval", True),
    ("navigator", "one_round", True),
    ("retrieval", "verification", True),
    ("retrieval", "answer", True),
    ("verification", "reflection", True),
    ("verification", "answer", True),
    ("verification", "librarian", True),
    ("librarian", "fold", False),
    ("fold", "reflection", True),
    ("fold", "answer", True),
    ("reflection", "retrieval", True),
    ("reflection", "steer", True),
    ("reflection", "answer", True),
    ("reflection", "__end__", True),
    ("steer", "retrieval", True),
    ("steer", "one_round", True),
    ("steer", "answer", True),  # a note that came in when the job had to answer shapes the final list
    # A one-step round (a policy's `one_step_rounds`, in a workflow) is retrieval → verification → reflection.
    ("one_round", "one_round", True),
    ("one_round", "steer", True),
    ("one_round", "answer", True),
    ("one_round", "__end__", True),
    ("answer", "__end__", True),
    ("answer", "steer", True),  # a note that came in while the answer was built: the job answers again
}


@pytest.fixture(scope="module")
def runtime(literature, quarry_home: Path) -> Iterator[NodeRuntime]:
    rt = NodeRuntime(quarry_home)
    configure_runtime(rt)
    yield rt
    configure_runtime(None)


@pytest.fixture()
def control() -> Iterator[Control]:
    """A fresh Control installed for the test (routers read it in-process)."""
    ctl = Control()
    token = use_control(ctl)
    yield ctl
    reset_control(token)


async def run_graph(job_id: str, intent: str = INTENT, **kwargs: Any) -> tuple[dict, list[str]]:
    """Run the compiled graph in-process; return the final state and the nodes in the order run."""
    app = make_search_graph().compile()
    state: dict = dict(initial_state(job_id, LITERATURE, intent, config=JobConfig(**kwargs)))
    order: list[str] = []
    async for update in app.astream(state, stream_mode="updates"):
        for node, delta in update.items():
            order.append(node)
            state = state | (delta or {})
    return written(state), order


def written(state: dict) -> dict:
    """The final state with what the job wrote to the job store: the result and the candidate pool
    (state carries them by reference)."""
    from nodes.job.pool import load_pool
    from nodes.job.runtime import runtime as current

    jobs = current().jobs
    return state | {"result": jobs.load_draft(state["job_id"]) or {}, "candidates": load_pool(jobs, state)}


# -- shape -------------------------------------------------------------------------------------


def test_graph_shape_snapshot() -> None:
    drawn = make_search_graph().compile().get_graph()
    assert set(drawn.nodes) == NODES | {"__start__", "__end__"}
    assert {(e.source, e.target, e.conditional) for e in drawn.edges} == EDGES
    mermaid = drawn.draw_mermaid()
    for node in NODES:
        assert f"\t{node}(" in mermaid
    # Conditional edges are drawn dotted, fixed ones solid.
    assert "verification -.-> reflection;" in mermaid and "navigator -.-> retrieval;" in mermaid
    assert "steer -.-> one_round;" in mermaid and "answer -.-> __end__;" in mermaid


def test_nodes_declare_where_they_run() -> None:
    g = make_search_graph()
    where = {name: spec.metadata["execute_in"] for name, spec in g.nodes.items()}
    assert where == {
        "navigator": "activity",
        "retrieval": "activity",
        "verification": "activity",
        "librarian": "activity",
        "fold": "activity",
        "reflection": "activity",
        "one_round": "activity",
        "steer": "workflow",
        "answer": "activity",
    }
    assert all(spec.metadata["start_to_close_timeout"] for n, spec in g.nodes.items() if where[n] == "activity")


# -- an in-process run -------------------------------------------------------------------------


async def test_run_in_process_ranks_real_documents_with_evidence(runtime: NodeRuntime, literature, control) -> None:
    state, order = await run_graph("graph-run-1")
    result = state["result"]
    corpus = literature.corpus
    assert order[:3] == ["navigator", "retrieval", "verification"] and order[-1] == "answer"
    assert state["node"] == "answer" and result["stop_reason"] in ("converged", "max_rounds", "no_new_queries")

    ranked = result["ranked"]
    assert len(ranked) >= 5
    records = corpus.get_many([r["docid"] for r in ranked])
    assert set(records) == {r["docid"] for r in ranked}, "every ranked docid is in the corpus store"
    # The six on-topic papers inside 2015-2020 that are not surveys lead the list.
    assert {r["docid"] for r in ranked[:6]} == {"gnn01", "gnn02", "gnn03", "gnn05", "gnn06", "gnn08"}
    for r in ranked:
        lines = corpus.lines(r["docid"])
        assert r["evidence"], f"{r['docid']} was verified, so it has evidence"
        for ev in r["evidence"]:
            start, end = ev["lines"]
            assert 1 <= start <= end <= len(lines)
            # The evidence chunk is text of those lines (whitespace-normalised, maybe cut).
            assert ev["chunk"][:40] in " ".join(" ".join(lines[start - 1 : end]).split())
        assert records[r["docid"]].title == r["title"]

    # Hard constraints: nothing outside 2015-2020, nothing whose title says survey ...
    assert all(2015 <= r["year"] <= 2020 for r in ranked)
    assert not [r["title"] for r in ranked if "survey" in r["title"].lower()]
    # ... although such papers were retrieved and rejected with a reason.
    cands = state["candidates"]
    assert "2012" in cands["gnn00"]["excluded"] and "before 2015" in cands["gnn00"]["excluded"]
    assert "after 2020" in cands["gnn04"]["excluded"]
    assert "surveys" in cands["gnn07"]["excluded"]
    checklist = {(i["kind"], i["text"]) for i in result["checklist"]}
    assert ("exclusion", "not surveys") in checklist and ("metadata", "published 2015–2020") in checklist


async def test_year_range_is_topic_when_the_store_has_no_years(
    runtime: NodeRuntime, quarry_home: Path, tmp_path_factory: pytest.TempPathFactory, control
) -> None:
    """Without publication years in the store, "2015-2020" cannot be a filter (no document could
    pass it): the years stay words of the topic and the run still ranks documents."""
    from stores.collection import ingest
    from tests.fakes import search_docs, write_jsonl

    docs = [{k: v for k, v in d.items() if k != "metadata"} for d in search_docs()]
    ingest(write_jsonl(tmp_path_factory.mktemp("noyears") / "n.jsonl", docs), "noyears", home=quarry_home)
    assert runtime.collection("noyears").corpus.year_span() is None
    assert runtime.collection(LITERATURE).corpus.year_span() == (2012, 2022)
    app = make_search_graph().compile()
    state = written(await app.ainvoke(initial_state("graph-noyears", "noyears", INTENT)))
    plan = state["plan"]
    assert plan["years_known"] is False and plan["year_min"] is None and plan["year_max"] is None
    assert "2015-2020" in plan["core"] and plan["exclusions"] == ["surveys"]
    assert not [i for i in plan["checklist"] if i["kind"] == "metadata"]
    ranked = state["result"]["ranked"]
    assert len(ranked) >= 5 and ranked[0]["docid"].startswith("gnn")


async def test_run_continues_past_the_pool_with_the_deep_rankings(
    runtime: NodeRuntime, literature, control, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The evaluation run: the ranked pool, then the rest of the job's full-depth rankings fused
    the same way — never a duplicate, never an id no store returned, never a constraint broken."""
    state, _ = await run_graph("graph-deep-run", pool_depth=3)  # a small pool, so the deep rankings hold more
    run, pool = state["result"]["run"], set(state["candidates"])
    rankings = [
        runtime.jobs.load_ranking("graph-deep-run", s["search_id"])
        for s in state["searches"]
        if s.get("search_id", "").startswith("s")
    ]
    deep = {d for r in rankings if r for d in r[1]}
    records = literature.corpus.get_many(deep)
    passing = {d for d in deep if 2015 <= records[d].year <= 2020 and "survey" not in records[d].title.lower()}
    assert len(run) == len(set(run)) and set(run) == passing
    assert set(run) - pool, "documents beyond the pool are in the run"
    assert [d for d in run if d in pool] == run[: len([d for d in run if d in pool])], "the pool comes first"


async def test_in_process_run_is_deterministic(runtime: NodeRuntime, control) -> None:
    first, _ = await run_graph("graph-det-1")
    second, _ = await run_graph("graph-det-2")
    key = lambda s: [(r["docid"], r["score"]) for r in s["result"]["ranked"]]  # noqa: E731
    assert key(first) == key(second) and first["result"]["queries"] == second["result"]["queries"]


# -- routers honour Control ------------------------------------------------------------------


@pytest.mark.parametrize("flag, reason", [("stop_requested", "stopped"), ("submit_now", "budget_steer")])
async def test_control_sends_the_run_to_answer_after_first_verification(
    runtime: NodeRuntime, control, flag, reason
) -> None:
    setattr(control, flag, True)
    assert control.answer_reason() == reason
    state, order = await run_graph(f"graph-{flag}")
    assert order == ["navigator", "retrieval", "verification", "answer"]
    assert state["round"] == 1 and state["result"]["rounds"] == 1
    assert state["result"]["ranked"], "answers from what round 1 verified"
    assert state["stop_reason"] == "", "reflection never ran, so no reflection stop reason"


async def test_pending_steering_detours_through_steer(runtime: NodeRuntime, control) -> None:
    control.pending_steering.append({"text": "not benchmark", "round": 1})
    state, order = await run_graph("graph-steer")
    assert order[:6] == ["navigator", "retrieval", "verification", "reflection", "steer", "retrieval"]
    assert control.pending_steering == [], "the steer node took the notes"
    plan = state["plan"]
    assert plan["exclusions"] == ["surveys", "benchmark"] and plan["version"] == 2
    # Round 1's reflection had planned round 2: the steered round takes its place (and its number).
    assert state["steering"] == [{"text": "not benchmark", "round": 1, "applied": "round", "applied_round": 2}]
    # "not benchmark" adds no query: round 2 searched nothing new, re-verified the pool, and counts.
    assert {s["round"] for s in state["searches"]} == {1, 3}, "round 2's query was round 1's"
    assert state["rounds_done"] == state["result"]["rounds"] == 3
    ranked = state["result"]["ranked"]
    assert ranked and not [r for r in ranked if "benchmark" in r["title"].lower()]
    assert "benchmark" in state["candidates"]["gnn05"]["excluded"]


async def test_pause_ends_the_graph_after_reflection_without_answering(runtime: NodeRuntime, control) -> None:
    control.pause_requested = True
    state, order = await run_graph("graph-pause")
    assert order == ["navigator", "retrieval", "verification", "reflection"]
    assert state["node"] == "reflection" and not state["result"]


async def test_tool_call_cap_forces_answer(runtime: NodeRuntime, control) -> None:
    state, order = await run_graph("graph-cap", max_tool_calls=1)
    assert order == ["navigator", "retrieval", "verification", "answer"]
    assert state["stats"]["tool_calls"] >= 1


@pytest.mark.parametrize(
    "state, ctl, expected",
    [
        ({}, Control(), "navigator"),
        ({"plan": {"core": "x"}}, Control(), "retrieval"),
        ({"plan": {"core": "x"}}, Control(stop_requested=True), "answer"),
        ({"plan": {"core": "x"}, "stop_reason": "converged"}, Control(), "answer"),
        ({"plan": {"core": "x"}, "stats": {"tool_calls": 5}, "config": {"max_tool_calls": 5}}, Control(), "answer"),
        (
            {"plan": {"core": "x"}, "usage": {"input_tokens": 60, "output_tokens": 10}, "config": {"max_tokens": 100}},
            Control(),
            "answer",
        ),
        (
            {"plan": {"core": "x"}, "usage": {"input_tokens": 50, "output_tokens": 10}, "config": {"max_tokens": 100}},
            Control(),
            "retrieval",
        ),
    ],
)
async def test_route_start(state, ctl, expected) -> None:
    token = use_control(ctl)
    try:
        assert await route_start(state) == expected
    finally:
        reset_control(token)


@pytest.mark.parametrize(
    "state, ctl, expected",
    [
        ({}, Control(), "reflection"),
        ({}, Control(submit_now=True), "answer"),
        ({"stats": {"tool_calls": 9}, "config": {"max_tool_calls": 9}}, Control(), "answer"),
        ({"usage": {"dollars": 0.08}, "config": {"max_dollars": 0.1}}, Control(), "answer"),
    ],
)
async def test_route_after_verification(state, ctl, expected) -> None:
    token = use_control(ctl)
    try:
        assert await route_after_verification(state) == expected
        assert await route_after_retrieval(state) == "verification"  # always verify what was retrieved
    finally:
        reset_control(token)


@pytest.mark.parametrize(
    "state, ctl, expected",
    [
        ({}, Control(), "retrieval"),
        ({"stop_reason": "converged"}, Control(), "answer"),
        ({"stop_reason": "converged"}, Control(pending_steering=[{"text": "x", "round": 1}]), "steer"),
        # A job that must answer still folds a pending note into the plan its final list is built from.
        ({}, Control(stop_requested=True, pending_steering=[{"text": "x", "round": 1}]), "steer"),
        ({}, Control(stop_requested=True), "answer"),
        ({}, Control(pause_requested=True), "__end__"),
        ({"stop_reason": "max_rounds"}, Control(pause_requested=True), "answer"),
    ],
)
async def test_route_after_reflection(state, ctl, expected) -> None:
    token = use_control(ctl)
    try:
        assert await route_after_reflection(state) == expected
    finally:
        reset_control(token)


def test_react_graph_shape_and_placement() -> None:
    from graphs.react_graph import make_react_graph
    from graphs.state import REACT_GRAPH, SEARCH_GRAPH, graph_for

    g = make_react_graph()
    drawn = g.compile().get_graph()
    edges = {(e.source, e.target, e.conditional) for e in drawn.edges}
    assert edges == {
        ("__start__", "inbox", True),
        ("__start__", "tools", True),
        ("__start__", "finish", True),
        ("inbox", "agent", False),
        ("remind", "agent", False),
        ("agent", "tools", True),
        ("agent", "remind", True),
        ("agent", "finish", True),
        ("tools", "inbox", True),
        ("tools", "finish", True),
        ("tools", "__end__", True),
        ("finish", "__end__", False),
    }
    where = {name: spec.metadata["execute_in"] for name, spec in g.nodes.items()}
    assert where == {
        "inbox": "workflow",
        "remind": "workflow",
        "agent": "activity",
        "tools": "activity",
        "finish": "activity",
    }
    assert graph_for("react") == REACT_GRAPH and graph_for("llm") == graph_for("heuristic") == SEARCH_GRAPH


# -- one-step rounds ---------------------------------------------------------------------------


def _planned(job_id: str, **config: Any) -> dict:
    """A job's state once its navigator has planned it (the step before its first round)."""
    from nodes.rounds.navigator import navigator

    state: dict = dict(initial_state(job_id, LITERATURE, INTENT, config=JobConfig(**config)))
    return state | navigator(state)  # type: ignore[arg-type]


async def test_a_one_step_round_is_the_three_steps_and_checkpoints_each(runtime: NodeRuntime, control) -> None:
    """`round_` (one activity per round under Temporal) ends where retrieval → verification →
    reflection run one by one end, and a watcher of the job store sees each step."""
    from nodes.rounds.reflection import reflection
    from nodes.rounds.retrieval import retrieval
    from nodes.rounds.verification import verification

    assert not one_step_rounds(_planned("graph-1step-x")), "in-process runs go step by step"
    stepwise = _planned("graph-1step-a")
    for body in (retrieval, verification, reflection):
        stepwise |= body(stepwise)  # type: ignore[arg-type]
    one = _planned("graph-1step-b")
    one |= await round_(one)  # type: ignore[arg-type]
    same = ("round", "node", "queries", "top", "stats", "stop_reason", "new_high", "top_ids", "pool")
    assert {k: one.get(k) for k in same} == {k: stepwise.get(k) for k in same}
    assert one["node"] == "reflection" and one["round"] == 2 and rounds_run(one) == 1
    nodes = [e.data["node"] for e in runtime.jobs.events("graph-1step-b")]
    assert nodes[-3:] == ["retrieval", "verification", "reflection"]


async def test_a_one_step_round_ends_at_the_budget_steer_after_verifying(runtime: NodeRuntime, control) -> None:
    """Past `answer_at` the round goes to answer — but only once verification has applied the
    hard constraints, as the routers between steps would; a hard stop then answers from the
    checkpoint the round left (`further_along`)."""
    state = _planned("graph-1step-late") | {"answer_at": 0.0}
    update = await round_(state)  # type: ignore[arg-type]
    assert update["pool"]["verified"] > 0 and "new_high" not in update, "verified, not reflected on"
    # ...and answered in the same step: the workflow's router then ends the graph, unless it holds
    # a steering note the activity could not see (a later round answers again).
    assert answered(update) and runtime.jobs.load_draft("graph-1step-late")["ranked"]  # type: ignore[arg-type]
    after = state | update
    assert await route_after_round(after) == "__end__"  # type: ignore[arg-type]
    control.pending_steering.append({"kind": "exclude", "text": "surveys"})
    assert await route_after_round(after) == "steer"  # type: ignore[arg-type]
    stored = runtime.jobs.get("graph-1step-late")["state"]
    assert stored["node"] == "verification" and further_along(state, stored) is stored
    assert further_along(stored, state) is stored and further_along(state, None) is state
    assert further_along(state, stored | {"job_id": "another"}) is state


def test_rounds_run_counts_the_rounds_that_searched() -> None:
    searches = [{"round": 1}, {"round": 1}, {"round": 2}]
    assert rounds_run({"round": 3, "searches": searches}) == 2, "round 3 was planned, never run"
    assert rounds_run({"round": 1}) == 1 and rounds_run({}) == 0
    # A steered round whose note added no query ("not X") searched nothing, yet ran.
    assert rounds_run({"round": 3, "rounds_done": 3, "searches": searches}) == 3


# -- a steer always reaches the final list -------------------------------------------------------


async def test_a_note_pending_when_the_job_must_answer_shapes_its_final_list(runtime: NodeRuntime, control) -> None:
    """A stop (or the budget's steer) sends the job to answer: a note that came in before it is
    still folded into the plan, and the answer is built again from it — no round searches with it."""
    control.stop_requested = True
    control.pending_steering.append({"text": "not benchmark", "round": 1, "applies_from_round": 2})
    state, order = await run_graph("graph-steer-at-answer")
    assert order == ["navigator", "retrieval", "verification", "answer", "steer", "answer"]
    assert control.pending_steering == []
    assert state["steering"] == [
        {"text": "not benchmark", "round": 1, "applies_from_round": 2, "applied": "final_list"}
    ]
    assert state["round"] == 1 and state["result"]["rounds"] == 1, "no round ran with the note"
    assert "benchmark" in state["plan"]["exclusions"]
    titles = [r["title"].lower() for r in state["result"]["ranked"]]
    assert titles and not [t for t in titles if "benchmark" in t]


async def test_routers_take_a_late_note_to_the_final_list(control) -> None:
    """`steer` marks notes folded when the job must answer; `route_after_steer` then answers; a note
    that came in while the answer was built sends the job back through `steer`."""
    assert await route_after_answer({}) == "__end__"  # type: ignore[typeddict-item]
    control.pending_steering.append({"text": "not x", "round": 2})
    assert await route_after_answer({}) == "steer"  # type: ignore[typeddict-item]
    final = {"steering": [{"text": "not x", "applied": "final_list"}]}
    assert await route_after_steer(final) == "answer"  # type: ignore[arg-type]
    assert await route_after_steer({"steering": [{"text": "not x", "applied": "round"}]}) == "retrieval"  # type: ignore[typeddict-item]


@pytest.mark.parametrize(
    "state, notes, expected",
    [
        ({"round": 3, "rounds_done": 2}, [{"applies_from_round": 3}], 3),  # reflection 2 had planned round 3
        ({"round": 2, "rounds_done": 2}, [{"applies_from_round": 3}], 3),  # round 2 was the last planned
        ({"round": 2, "rounds_done": 1}, [{"applies_from_round": 3}], 3),  # never before the round promised
        ({"round": 2}, [{"text": "a note from before the promise was kept"}], 3),  # no record: after `round`
    ],
)
def test_the_steered_round_is_the_one_promised(state, notes, expected) -> None:
    from nodes.job.steering_notes import steered_round

    assert steered_round(state, notes) == expected


def test_a_steering_report_names_where_each_note_took_effect() -> None:
    from nodes.job.steering_notes import applies_from, describe, steering_report, unapplied

    assert applies_from(0) == applies_from(1) == 2, "the first round plans without the note"
    state = {
        "steering": [
            {"text": "not a", "round": 1},  # folded before the record was kept
            {"text": "not b", "round": 2, "applied": "round", "applied_round": 3},
            {"text": "not c", "round": 3, "applied": "final_list"},
        ],
        "steering_unapplied": unapplied([{"text": "not d", "round": 3}], "budget_exhausted"),
    }
    lines = [describe(n) for n in steering_report(state)]
    assert lines == [
        "'not a' (sent in round 1): applied from the next round",
        "'not b' (sent in round 2): applied from round 3",
        "'not c' (sent in round 3): applied to the final list only (the job had to answer: no round searched with it)",
        "'not d' (sent in round 3): NOT applied: the job's time budget ran out first",
    ]
