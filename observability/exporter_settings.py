"""What a worker exports traces to, recorded so a later command can tell it differs from its own.

Why: spans of a job are exported by the worker that runs it. A user who sets
`OTEL_EXPORTER_OTLP_ENDPOINT` in a shell while a background worker started without it gets only
the CLI's client spans in the backend — orphans, silently. So the worker's exporter settings are
written beside its run record (`run/worker.otel`, atomically) when it starts, and `quarry run`
compares them with the shell's and says what to do. Header values are credentials (Langfuse's
`Authorization=Basic …`): only a digest of them is kept, and the endpoint is recorded without
user-info or query string.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from observability.content_policy import CAPTURE_ENV
from stores import settings

RECORD = "worker.otel"
# Everything that changes where a worker's spans go or what they carry.
EXPORTER_ENV = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_TRACES_SAMPLER",
    "OTEL_TRACES_SAMPLER_ARG",
    CAPTURE_ENV,
    settings.TRACE_FILES.name,
)


def _shown_endpoint(url: str) -> str:
    """`url` without user-info, query or fragment: safe to write down and print."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(unparsable endpoint)"
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", "")) if parts.scheme else url.split("?", 1)[0]


def exporter_settings(env: Mapping[str, str] | None = None) -> dict[str, str | None]:
    """`{"otlp": endpoint shown or None, "digest": hash of every exporter setting}` for `env`."""
    env = os.environ if env is None else env
    endpoint = (
        env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip() or env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    )
    raw = "\0".join(f"{k}={env.get(k, '').strip()}" for k in EXPORTER_ENV)
    return {
        "otlp": _shown_endpoint(endpoint) if endpoint else None,
        "digest": hashlib.sha256(raw.encode()).hexdigest()[:16],
    }


def record_worker_settings(home: Path, env: Mapping[str, str] | None = None) -> None:
    """Write this worker's exporter settings to `home/run/worker.otel` (0600, atomically)."""
    from stores.atomic import write_atomic

    run = Path(home) / "run"
    run.mkdir(mode=0o700, parents=True, exist_ok=True)
    write_atomic(run / RECORD, json.dumps(exporter_settings(env)), mode=0o600)


def worker_settings_note(home: Path, env: Mapping[str, str] | None = None) -> str | None:
    """What to tell the user when the running worker's exporter settings differ from `env`'s
    (None when they match, or when no worker recorded any)."""
    try:
        worker = json.loads((Path(home) / "run" / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    mine = exporter_settings(env)
    if not isinstance(worker, dict) or worker.get("digest") == mine["digest"]:
        return None
    theirs = worker.get("otlp")
    where = f"exports traces to {theirs}" if theirs else "does not export to OTLP"
    want = f"this shell's {mine['otlp']}" if mine["otlp"] else "this shell's settings (no OTLP export)"
    return (
        f"the running worker {where}, and its trace settings (OTEL_*, QUARRY_TRACE_FILES) differ from "
        f"{want}; its spans follow its own settings: restart it with quarry down to apply"
    )
