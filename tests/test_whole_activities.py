"""observability.whole_activities: an activity's spans leave the process together, when the
activity's own span ends — so a worker killed mid-activity never leaves children without their
parent (tests/test_drills_recovery.py kills one inside a heuristic round)."""

from __future__ import annotations

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from observability.whole_activities import WholeActivities


def tracer_and_exported():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(WholeActivities(SimpleSpanProcessor(exporter)))
    return provider.get_tracer("test"), lambda: [s.name for s in exporter.get_finished_spans()]


def test_an_activitys_spans_wait_for_it_and_others_pass_at_once() -> None:
    tracer, exported = tracer_and_exported()
    with tracer.start_as_current_span("StartActivity:quarry-search.one_round"):  # workflow side: not held
        pass
    assert exported() == ["StartActivity:quarry-search.one_round"]
    with tracer.start_as_current_span("RunActivity:quarry-search.one_round"):
        with tracer.start_as_current_span("node retrieval"), tracer.start_as_current_span("execute_tool search"):
            pass
        assert exported() == ["StartActivity:quarry-search.one_round"], "held while the activity runs"
        with tracer.start_as_current_span("node verification"):
            pass
    assert exported() == [
        "StartActivity:quarry-search.one_round",
        "RunActivity:quarry-search.one_round",
        "execute_tool search",
        "node retrieval",
        "node verification",
    ]
    with tracer.start_as_current_span("quarry search"):  # outside any activity
        pass
    assert exported()[-1] == "quarry search"


def test_an_activity_that_never_ends_leaves_no_orphans() -> None:
    """What a SIGKILL does: the activity's span never ends — none of its children are exported."""
    tracer, exported = tracer_and_exported()
    activity = tracer.start_span("RunActivity:quarry-search.one_round")
    from opentelemetry import trace

    with (
        trace.use_span(activity, end_on_exit=False),
        tracer.start_as_current_span("node retrieval"),
        tracer.start_as_current_span("execute_tool search"),
    ):
        pass
    assert exported() == []
    # A child that outlives its activity (a cancelled step's thread ending late) passes on alone.
    late = tracer.start_span("node verification", context=trace.set_span_in_context(activity))
    activity.end()
    assert exported() == ["RunActivity:quarry-search.one_round", "execute_tool search", "node retrieval"]
    late.end()
    assert exported()[-1] == "node verification"
