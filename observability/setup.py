"""Process-wide OpenTelemetry setup: where spans go, and the Temporal plugin that links them.

Why this shape:
- `build_provider` is a pure factory (environment passed in) so tests can build fresh
  providers and inspect their processors without touching the process-global provider, which
  OpenTelemetry lets a process set only once.
- Spans always go to JSONL files under `QUARRY_HOME/traces` through a *simple* (synchronous)
  processor, so each span is on disk when it ends even if the worker is killed a moment later,
  and `quarry trace` works whatever else is configured. The standard
  `OTEL_EXPORTER_OTLP_ENDPOINT` adds OTLP export (batched: a collector is a network hop);
  `QUARRY_TRACE_FILES=0` then turns the files off (and `quarry trace` says so).
- Every exporter sits behind `ShapingExporter`: final statuses, and the GenAI content policy
  (`content_policy`: content kept in local files, dropped from OTLP unless
  `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`, dropped everywhere when `false`).
- Workflow queries (progress polls, the Web UI's) are not sampled (`sampling.NoQuerySpans`): a
  read is not a trace.
- The SDK provider is built with Temporal's `TemporalIdGenerator` and installed globally wrapped
  in `ReplaySafeTracerProvider`, which `OpenTelemetryPlugin` requires: span ids inside workflows
  are then deterministic and replays do not emit duplicate spans. Inside it, `ForcedIds` lets the
  job's final activity emit the `invoke_agent` span under the ids fixed when it was submitted.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, cast

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator

from observability.agent_span import ForcedIds
from observability.conventions import ShapingExporter, capture_content
from observability.jsonl_exporter import JsonlSpanExporter
from observability.sampling import NoQuerySpans
from observability.whole_activities import WholeActivities
from stores import settings
from stores.errors import QuarryError
from stores.home import traces_dir as traces_dir  # re-exported: where trace files live is the home's layout

if TYPE_CHECKING:
    from temporalio.plugin import SimplePlugin

PROTOCOLS = ("http/protobuf", "grpc")

_lock = threading.Lock()
_provider: TracerProvider | None = None


def _otlp_exporter(env: Mapping[str, str]) -> SpanExporter | None:
    """The OTLP exporter the environment asks for, or None when no endpoint is configured.

    The signal-specific `OTEL_EXPORTER_OTLP_TRACES_*` variables win over the general ones, as
    the OpenTelemetry spec says; a general HTTP endpoint is a base URL and gets `/v1/traces`.
    """
    traces_endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    base_endpoint = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    if not traces_endpoint and not base_endpoint:
        return None
    protocol = (
        (env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf")
        .strip()
        .lower()
    )
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as Grpc

        return Grpc(endpoint=traces_endpoint or base_endpoint)
    if protocol == "http/protobuf":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as Http

        return Http(endpoint=traces_endpoint or base_endpoint.rstrip("/") + "/v1/traces")
    raise QuarryError(
        "bad_config",
        f"unsupported OTLP protocol {protocol!r}",
        f"set OTEL_EXPORTER_OTLP_PROTOCOL to one of: {', '.join(PROTOCOLS)}",
    )


def build_provider(service_name: str, home: Path, env: Mapping[str, str] | None = None) -> TracerProvider:
    """A new, non-global SDK provider whose exporters follow `env` (default `os.environ`)."""
    env = os.environ if env is None else env
    from temporalio.contrib.opentelemetry._id_generator import TemporalIdGenerator

    provider = TracerProvider(
        resource=Resource.create({"service.name": service_name}),
        id_generator=TemporalIdGenerator(ForcedIds(RandomIdGenerator())),
        sampler=NoQuerySpans(),  # a progress poll is not a trace (observability.sampling)
    )
    otlp = _otlp_exporter(env)
    if otlp is not None:
        provider.add_span_processor(
            WholeActivities(BatchSpanProcessor(ShapingExporter(otlp, capture_content(env, local_file=False))))
        )
    if trace_files_on(env):
        provider.add_span_processor(
            WholeActivities(
                SimpleSpanProcessor(
                    ShapingExporter(JsonlSpanExporter(traces_dir(home)), capture_content(env, local_file=True))
                )
            )
        )
    return provider


def trace_files_on(env: Mapping[str, str] | None = None) -> bool:
    """Whether spans are written to local JSONL files: always, unless OTLP is configured and
    `QUARRY_TRACE_FILES=0` turns them off."""
    env = os.environ if env is None else env
    otlp = any(env.get(k, "").strip() for k in ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"))
    return settings.trace_files(env) or not otlp


def setup_tracing(service_name: str, home: Path) -> TracerProvider:
    """Build the provider once per process and install it globally; later calls return it.

    The first call's `service_name` and `home` win: OpenTelemetry allows one global provider
    per process, and every component of a process should report into the same one.
    """
    global _provider
    with _lock:
        if _provider is None:
            from opentelemetry import trace
            from temporalio.contrib.opentelemetry import ReplaySafeTracerProvider
            from temporalio.contrib.opentelemetry._id_generator import TemporalIdGenerator

            provider = build_provider(service_name, home)
            # build_provider always installs a TemporalIdGenerator; the SDK types the attribute as any IdGenerator.
            ids = cast(TemporalIdGenerator, provider.id_generator)
            trace.set_tracer_provider(ReplaySafeTracerProvider(provider, ids))
            _provider = provider
        return _provider


def shutdown_tracing(timeout_millis: int = 10_000) -> None:
    """Flush pending spans (OTLP batches) and shut the exporters down; a no-op if not set up.

    Call it when a worker or CLI command exits cleanly; JSONL spans are already on disk.
    """
    with _lock:
        if _provider is not None:
            _provider.force_flush(timeout_millis)
            _provider.shutdown()


def temporal_plugin(add_temporal_spans: bool = True) -> SimplePlugin:
    """Temporal's `OpenTelemetryPlugin`: client → workflow → activity spans in one trace.

    `add_temporal_spans=True` (our default, the plugin's is False) emits the
    `StartWorkflow`/`RunWorkflow`/`StartActivity`/`RunActivity` spans; without them the trace
    carries the context across but shows tool spans directly under the client's span.
    Register it on `Client.connect(plugins=[...])`; workers built from that client inherit it.
    It requires the global provider to be replay-safe, which `setup_tracing` arranges, so call
    `setup_tracing` before creating workers.
    """
    from temporalio.contrib.opentelemetry import OpenTelemetryPlugin

    return OpenTelemetryPlugin(add_temporal_spans=add_temporal_spans)
