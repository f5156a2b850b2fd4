"""What no web page can make `quarry serve` do, and what no number can make it do: every route of the
app (enumerated from `app.routes`, /docs, /openapi.json and /mcp included) refuses a Host that is not
one of its names (421: DNS rebinding) and an Origin that is not its own or a --cors one (403) before
anything runs — no job is started — while its own names and origins are served, /mcp by the very
same allow-list; every integer a client sends is bounded in /openapi.json and refused with a 4xx,
never a 500; a 405 says what is allowed; the request schemas declare names, policies and non-empty
texts. The app runs in-process (tests.serve_kit.in_process) on the module home's `lit`, its jobs on
a real Temporal dev server."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.routing import iter_route_contexts

from nodes.policy.registry import names
from quarry.http.common import NUMBER_MAX
from stores import job_events
from stores.home import NAME_PATTERN
from stores.jobs import JobStore
from tests.conftest import LITERATURE
from tests.serve_kit import ROOT, free_port, in_process

PORT = 8765  # the port the in-process app is told it serves (nothing listens: requests stay in-process)
OWN = f"http://127.0.0.1:{PORT}"
INTENT = "graph neural networks for molecules"
SAMPLES = {"collection": LITERATURE, "name": LITERATURE, "docid": "gnn00", "fmt": "bibtex"}
HUGE = (NUMBER_MAX + 1, 2**63, 10**30)
NEGATIVE = (-1, -(2**63) - 1)
CORS = "http://localhost:5173"


@pytest.fixture(scope="module")
def queue(home: Path, server) -> Iterator[str]:
    """The module's task queue on its Temporal server; `quarry down` afterwards stops any worker a
    started job would have spawned (none should be)."""
    name = f"trust-{uuid.uuid4().hex[:8]}"
    yield name
    env = dict(os.environ) | {"QUARRY_HOME": str(home), "QUARRY_TEMPORAL_ADDRESS": server.address}
    subprocess.run(
        [sys.executable, "-m", "quarry", "--home", str(home), "down"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        timeout=60,
    )


@pytest.fixture(scope="module")
def client(home: Path, server, queue: str) -> Iterator[Any]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("QUARRY_TASK_QUEUE", queue)
        with in_process(home, OWN, address=server.address, port=PORT, cors=[CORS]) as test_client:
            yield test_client


def requests_for_every_route(app: Any) -> list[tuple[str, str, dict[str, Any] | None]]:
    """(method, path, JSON body) for every method of every route of the app, path parameters filled
    in; POST /api/jobs carries a job that would start."""
    out = []
    for route in iter_route_contexts(app.routes):
        path = re.sub(r"\{(\w+)(?::\w+)?\}", lambda m: SAMPLES.get(m.group(1), "x"), route.path)
        for method in sorted(route.methods or {"GET", "POST", "DELETE"}):
            body = {"collection": LITERATURE, "intent": INTENT} if (method, path) == ("POST", "/api/jobs") else {}
            out.append((method, path, None if method in ("GET", "HEAD", "DELETE") else body))
    return out


def jobs_in(home: Path) -> list[dict[str, Any]]:
    with JobStore(home / "jobs.sqlite") as jobs:
        return jobs.list(1000)


def refused(response: Any, status: int, code: str) -> None:
    assert response.status_code == status, (response.request.method, response.request.url, response.text[:300])
    if response.request.method != "HEAD":
        assert response.json()["code"] == code and response.json()["hint"], response.text


def test_every_route_refuses_a_foreign_host_and_a_foreign_origin_and_starts_nothing(client: Any, home: Path) -> None:
    before = jobs_in(home)
    every = requests_for_every_route(client.app)
    assert {p for _, p, _ in every} >= {"/api/jobs", "/mcp", "/docs", "/openapi.json", "/jobs", "/pi-serini/lit/search"}
    hosts = (
        "evil.example",
        f"evil.example:{PORT}",
        f"127.0.0.1.nip.io:{PORT}",
        f"localhost.:{PORT}",
        f"127.0.0.1:{PORT + 1}",
        f"[::1]:{PORT + 1}",
    )
    origins = ("http://evil.example", "null", f"http://localhost:{PORT + 1}", f"http://127.0.0.1:{PORT}.evil.example")
    for method, path, body in every:
        for host in hosts:
            refused(client.request(method, path, json=body, headers={"Host": host}), 421, "foreign_host")
        for origin in origins:
            refused(client.request(method, path, json=body, headers={"Origin": origin}), 403, "foreign_origin")
    assert jobs_in(home) == before  # nothing was started


def test_its_own_names_and_origins_are_served_and_mcp_shares_the_list(home: Path, client: Any) -> None:
    for host in ("127.0.0.1", f"127.0.0.1:{PORT}", "localhost", f"localhost:{PORT}", "[::1]", f"[::1]:{PORT}"):
        assert client.get("/api/collections", headers={"Host": host}).status_code == 200, host
        assert client.get("/openapi.json", headers={"Host": host}).status_code == 200, host
    for origin in (OWN, f"http://localhost:{PORT}", f"http://[::1]:{PORT}", CORS):
        served = client.get("/api/collections", headers={"Origin": origin})
        assert served.status_code == 200 and LITERATURE in served.json()["collections"], origin
    assert client.get("/api/collections", headers={"Origin": CORS}).headers["access-control-allow-origin"] == CORS

    # a name given with --allow-host is answered by every route, /mcp (the MCP SDK's transport) included
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    mcp_headers = {
        "Accept": "application/json, text/event-stream",
        "Host": f"mybox.lan:{PORT}",
        "Origin": f"http://mybox.lan:{PORT}",
    }
    with in_process(home, OWN, address="127.0.0.1:1", port=PORT, allow_hosts=["mybox.lan"]) as lan:
        assert lan.get("/api/collections", headers={"Host": f"mybox.lan:{PORT}"}).status_code == 200
        opened = lan.post("/mcp", json=initialize, headers=mcp_headers)
        assert opened.status_code == 200 and '"serverInfo"' in opened.text, opened.text[:300]
        refused(lan.post("/mcp", json=initialize, headers=mcp_headers | {"Host": "other.lan"}), 421, "foreign_host")


def test_a_wildcard_bind_answers_the_names_it_is_given_with_its_token(home: Path) -> None:
    token = uuid.uuid4().hex
    bearer = {"Authorization": f"Bearer {token}"}
    options = {"address": "127.0.0.1:1", "host": "0.0.0.0", "port": PORT, "token": token}
    with in_process(home, OWN, allow_hosts=["192.168.1.20", "quarry.example.org"], **options) as lan:
        for host in (f"192.168.1.20:{PORT}", f"quarry.example.org:{PORT}", f"127.0.0.1:{PORT}"):
            assert lan.get("/api/collections", headers=bearer | {"Host": host}).status_code == 200, host
        refused(lan.get("/api/collections", headers=bearer | {"Host": f"10.9.8.7:{PORT}"}), 421, "foreign_host")
        refused(lan.get("/api/collections", headers={"Host": f"192.168.1.20:{PORT}"}), 401, "unauthorized")


@pytest.mark.parametrize(
    ("option", "value", "code"),
    [
        ("--allow-host", "http://evil.example/", "bad_allow_host"),
        ("--allow-host", "*", "bad_allow_host"),
        ("--cors", "*", "bad_origin"),
        ("--cors", "http://x.example/path", "bad_origin"),
    ],
)
def test_a_bad_name_or_origin_is_one_message_before_anything_is_served(
    home: Path, option: str, value: str, code: str
) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "quarry", "--home", str(home), "serve", "--port", str(free_port()), option, value],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    said = run.stdout + run.stderr
    assert run.returncode == 2 and code in said and option in said, said
    assert "Quarry on http" not in said and "Traceback" not in said


def numeric_parameters(doc: dict[str, Any]) -> list[tuple[str, str, str, str, dict[str, Any]]]:
    """(method, path template, where, name, schema) of every integer /openapi.json lets a client send:
    query, path and header parameters and the properties of request bodies."""

    def integer(schema: dict[str, Any]) -> dict[str, Any] | None:
        schema = doc_ref(doc, schema)
        options = [doc_ref(doc, s) for s in schema.get("anyOf", [schema])]
        return next((s for s in options if s.get("type") == "integer"), None)

    found = []
    for path, operations in doc["paths"].items():
        for method, op in operations.items():
            for param in op.get("parameters", []):
                if (schema := integer(param["schema"])) is not None:
                    found.append((method, path, param["in"], param["name"], schema))
            body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
            for name, prop in (doc_ref(doc, body).get("properties", {}) if body else {}).items():
                if (schema := integer(prop)) is not None:
                    found.append((method, path, "body", name, schema))
    return found


def doc_ref(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    return doc["components"]["schemas"][ref.rsplit("/", 1)[-1]] if ref else schema


def test_every_integer_a_client_sends_is_bounded_and_refused_with_a_4xx(client: Any, home: Path) -> None:
    with JobStore(home / "jobs.sqlite") as jobs:  # a job with events: a number reaches the event log
        jobs.create("job-numbers", LITERATURE, INTENT, workflow_id="wf-numbers", trace_id=None)
        jobs.checkpoint("job-numbers", {"round": 1, "node": "retrieval"})
    samples = {"collection": LITERATURE, "docid": "gnn00", "job_id": "job-numbers", "search_id": "s1"}
    values = {"query": "graph neural networks", "docid": "gnn00", "limit": 5}
    doc = client.get("/openapi.json").json()
    found = numeric_parameters(doc)
    assert {(p, n) for _, p, _, n, _ in found} >= {
        ("/api/jobs/{job_id}/events", "after"),
        ("/api/jobs/{job_id}/stream", "after"),
    }
    for method, template, where, name, schema in found:
        assert "maximum" in schema and schema["maximum"] <= NUMBER_MAX, (template, name, schema)
        path = re.sub(r"\{(\w+)\}", lambda m: samples.get(m.group(1), "x"), template)
        body_schema = doc_ref(
            doc,
            doc["paths"][template][method]
            .get("requestBody", {})
            .get("content", {})
            .get("application/json", {})
            .get("schema", {}),
        )
        valid = {k: values[k] for k in body_schema.get("required", [])}  # the rest of a body that is valid
        for value in (*HUGE, *NEGATIVE):
            params, body = ({name: value}, None) if where == "query" else ({}, valid | {name: value})
            sent = client.request(method.upper(), path, params=params, json=body)
            assert 400 <= sent.status_code < 500, (method, template, name, value, sent.status_code, sent.text[:300])
            assert sent.json()["code"] == "bad_request", sent.text
    for value in ("99999999999999999999", str(NUMBER_MAX + 1), "-1", "1e9"):
        sent = client.get("/api/jobs/job-numbers/stream", headers={"Last-Event-ID": value})
        assert sent.status_code == 400 and sent.json()["code"] == "bad_request", (value, sent.text)


def test_the_event_log_takes_any_integer_without_overflowing_sqlite(tmp_path: Path) -> None:
    con = sqlite3.connect(tmp_path / "events.sqlite", isolation_level=None)
    con.executescript(job_events.SCHEMA)
    job_events.append(con, "j", {"round": 1})
    job_events.append(con, "j", {"round": 2})
    assert [e.seq for e in job_events.since(con, "j", -(10**30))] == [1, 2]
    assert [e.seq for e in job_events.since(con, "j", 1, limit=10**30)] == [2]
    assert job_events.since(con, "j", 10**30) == [] and job_events.since(con, "j", 2**63 - 1) == []


def test_a_405_says_what_is_allowed(client: Any) -> None:
    for method, path, allowed in (
        ("DELETE", "/api/jobs", "GET, POST"),
        ("PUT", "/api/jobs/x", "GET"),
        ("GET", "/api/jobs/x/steer", "POST"),
        ("POST", "/openapi.json", "GET, HEAD"),
    ):
        sent = client.request(method, path)
        assert sent.status_code == 405 and sent.headers.get("allow") == allowed, (method, path, sent.headers)
        assert sent.json()["code"] == "method_not_allowed"


def test_the_request_schemas_declare_names_policies_and_non_empty_texts(client: Any) -> None:
    doc = client.get("/openapi.json").json()
    schemas = doc["components"]["schemas"]
    job = schemas["JobRequest"]["properties"]
    assert job["collection"]["pattern"] == NAME_PATTERN and job["intent"]["minLength"] == 1
    assert [s.get("enum") for s in job["policy"]["anyOf"] if s.get("type") == "string"] == [list(names())]
    assert schemas["quarry__http__api__SearchRequest"]["properties"]["query"]["minLength"] == 1
    assert schemas["SteerRequest"]["properties"]["text"]["minLength"] == 1
    path_collection = next(p for p in doc["paths"]["/api/collections/{collection}/search"]["post"]["parameters"])
    assert path_collection["schema"]["pattern"] == NAME_PATTERN

    sent = client.post("/api/jobs", json={"collection": LITERATURE, "intent": INTENT, "policy": "nope"})
    assert sent.status_code == 422 and "heuristic" in sent.json()["message"], sent.text
    for path, body in (
        ("/api/jobs", {"collection": "no such/name", "intent": INTENT}),
        (f"/api/collections/{LITERATURE}/search", {"query": ""}),
        ("/api/jobs/x/steer", {"text": ""}),
    ):
        sent = client.post(path, json=body)
        assert sent.status_code == 422 and sent.json()["code"] == "bad_request", (path, sent.text)
    assert client.post("/api/collections/bad!name/search", json={"query": "graph"}).status_code == 422
