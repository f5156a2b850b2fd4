"""Property-based: Schemathesis generates requests for every operation of `quarry serve`'s
/openapi.json — valid ones and ones that break the schema — and sends them to the real app
in-process (quarry.http.app, tests.serve_kit.in_process's app without its client) over the module
home's `lit`, its jobs on a real Temporal dev server. Every check Schemathesis has must hold: no
5xx, every status, content type, header and body what /openapi.json declares, invalid requests
refused, valid ones accepted. Bounded: a fixed number of cases per operation, derandomised."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.config import SchemathesisConfig
from schemathesis.generation.modes import GenerationMode

from tests.serve_kit import ROOT

# Cases per operation: generating invalid data costs Hypothesis far more than the requests cost the
# app (about 0.4 s per 25 invalid job-id cases against 10 s to generate them), so fewer invalid ones:
# the whole run, Temporal and the collection included, stays about a minute on 2 cores.
CASES = {GenerationMode.POSITIVE: 25, GenerationMode.NEGATIVE: 8}
# A request the schema allows may still be one the service cannot serve as asked: a 400 with its
# code (an offset past the end of a ranking, a query of symbols only), as /openapi.json declares.
# Schema-valid data refused with a 422 (the schema promising what the validator refuses) still fails.
CONFIG = SchemathesisConfig.from_dict(
    {"checks": {"positive_data_acceptance": {"expected-statuses": ["2xx", "3xx", 400, 401, 403, 404, 409, 429]}}}
)


@pytest.fixture(scope="module")
def api_schema(home: Path, server) -> Iterator[Any]:
    """The app's schema as Schemathesis loads it (/openapi.json of the app itself); the app answers
    Schemathesis's own Host name (`testserver`) as if started with --allow-host testserver."""
    from quarry.http.app import create_app

    queue = f"props-{uuid.uuid4().hex[:8]}"
    env = {"QUARRY_HOME": str(home), "QUARRY_TEMPORAL_ADDRESS": server.address, "QUARRY_TASK_QUEUE": queue}
    try:
        with pytest.MonkeyPatch.context() as mp:
            for key, value in env.items():
                mp.setenv(key, value)
            app = create_app(server.address, allow_hosts=["testserver"])
            yield schemathesis.openapi.from_asgi("/openapi.json", app, config=CONFIG)
    finally:
        subprocess.run([sys.executable, "-m", "quarry", "--home", str(home), "down"], cwd=ROOT,
                       env=dict(os.environ) | env, capture_output=True, timeout=60)  # fmt: skip


def test_no_generated_request_gets_a_server_error_or_breaks_the_schema(api_schema: Any) -> None:
    """Each operation's strategy is run on its own, valid requests then invalid ones, so every
    operation gets its cases (Schemathesis's pytest plugin would do the same, but its lazy loader
    needs a pytest internal 9.x removed). One test: the app's lifespan (the MCP session manager)
    runs once."""
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 20
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
        for operation in operations:
            if mode is GenerationMode.NEGATIVE and not (
                operation.path_parameters or operation.query or operation.headers or operation.body
            ):
                continue  # an operation that takes nothing has no invalid request

            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(
                max_examples=CASES[mode],
                deadline=None,
                derandomize=True,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            def run(case: Any) -> None:
                case.call_and_validate()

            run()
