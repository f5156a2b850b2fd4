"""`quarry serve`'s JSON API (quarry.http.api) as a real subprocess on loopback, with jobs on a real
Temporal dev server and a background worker: every endpoint's response validates against the
server's own /openapi.json; a job's Server-Sent Events resume after a disconnect with
Last-Event-ID, nothing missed or repeated; hostile requests get one JSON error and change nothing;
a non-loopback bind needs the bearer token. The collection is `lit` (tests.conftest.home)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest

from stores.collection import Collection
from tests.conftest import LITERATURE
from tests.fakes import search_docs
from tests.serve_kit import ROOT, free_port, serving

QUERY = "graph neural networks"
INTENT = "graph neural networks for molecules"
WAIT_S = 240.0


@pytest.fixture(scope="module")
def api(home: Path, server) -> Iterator[dict[str, Any]]:
    """One `quarry serve` for the module, its jobs on the module's Temporal server and a task queue
    of its own; `quarry down` stops the background worker its first job started."""
    env = {"QUARRY_TEMPORAL_ADDRESS": server.address, "QUARRY_TASK_QUEUE": f"http-{uuid.uuid4().hex[:8]}"}
    try:
        with serving(home, env=env) as served, httpx.Client(base_url=served.url, timeout=60) as client:
            doc = client.get("/openapi.json").json()
            yield {"client": client, "openapi": doc, "home": home, "url": served.url}
    finally:
        subprocess.run(
            [sys.executable, "-m", "quarry", "--home", str(home), "down"],
            cwd=ROOT,
            env=dict(os.environ) | env,
            capture_output=True,
            timeout=60,
        )


def conforms(doc: dict[str, Any], method: str, template: str, response: httpx.Response) -> Any:
    """The response's JSON, after checking it against the schema /openapi.json gives for this
    operation and status (error statuses included)."""
    op = doc["paths"][template][method]
    declared = op["responses"].get(str(response.status_code))
    assert declared, f"{method.upper()} {template} answered {response.status_code}, not in its OpenAPI responses"
    schema = declared["content"]["application/json"]["schema"]
    body = response.json()
    jsonschema.Draft202012Validator({**schema, "components": doc["components"]}).validate(body)
    return body


def wait_finished(client: httpx.Client, job_id: str) -> dict[str, Any]:
    """The job's status once it has finished: the stream of its events ends with `end` (bounded)."""
    events = read_events(client, job_id, timeout=WAIT_S)
    assert events and events[-1]["event"] == "end", events[-3:]
    return client.get(f"/api/jobs/{job_id}").json()


def read_events(
    client: httpx.Client,
    job_id: str,
    last_id: int | None = None,
    stop_after: int | None = None,
    timeout: float = WAIT_S,
) -> list[dict[str, Any]]:
    """The job's Server-Sent Events (id, event, data) from the stream, resuming after `last_id`;
    the connection is dropped after `stop_after` events (a client going away mid-job)."""
    headers = {"Last-Event-ID": str(last_id)} if last_id is not None else {}
    got: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    with client.stream("GET", f"/api/jobs/{job_id}/stream", headers=headers, timeout=timeout) as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if not line:
                if "data" in current:
                    got.append(current)
                    if stop_after is not None and len(got) >= stop_after:
                        break
                current = {}
                continue
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field == "id":
                current["id"] = int(value)
            elif field == "event":
                current["event"] = value
            elif field == "data":
                current["data"] = json.loads(value)
    return got


def start(client: httpx.Client, intent: str = INTENT, budget: float = 90) -> str:
    created = client.post("/api/jobs", json={"collection": LITERATURE, "intent": intent, "budget_seconds": budget})
    assert created.status_code == 201, created.text
    return created.json()["job_id"]


def test_every_endpoint_answers_what_openapi_declares(api: dict[str, Any]) -> None:
    client, doc = api["client"], api["openapi"]
    known = set(Collection(LITERATURE, home=api["home"]).corpus.get_many([d["_id"] for d in search_docs()]))

    listed = conforms(doc, "get", "/api/collections", client.get("/api/collections"))
    assert LITERATURE in listed["collections"]
    first = conforms(
        doc,
        "post",
        "/api/collections/{collection}/search",
        client.post(f"/api/collections/{LITERATURE}/search", json={"query": QUERY, "limit": 4}),
    )
    assert [h["rank"] for h in first["hits"]] == [1, 2, 3, 4] and {h["docid"] for h in first["hits"]} <= known
    more = conforms(
        doc,
        "get",
        "/api/searches/{search_id}",
        client.get(f"/api/searches/{first['search_id']}", params={"offset": 5, "limit": 3}),
    )
    assert [h["rank"] for h in more["hits"]] == [5, 6, 7]
    read = conforms(
        doc,
        "get",
        "/api/collections/{collection}/documents/{docid}",
        client.get(f"/api/collections/{LITERATURE}/documents/gnn03", params={"limit": 2}),
    )
    assert read["docid"] == "gnn03" and [line["number"] for line in read["lines"]] == [1, 2]

    job_id = start(client)
    created_listing = conforms(doc, "get", "/api/jobs", client.get("/api/jobs", params={"collection": LITERATURE}))
    assert job_id in {j["job_id"] for j in created_listing["jobs"]}
    running = conforms(doc, "get", "/api/jobs/{job_id}", client.get(f"/api/jobs/{job_id}"))
    assert running["job_id"] == job_id and running["intent"] == INTENT
    early = client.get(f"/api/jobs/{job_id}/result")
    if early.status_code == 409:  # still running: the error says so
        assert conforms(doc, "get", "/api/jobs/{job_id}/result", early)["code"] == "not_finished"
    done = wait_finished(client, job_id)
    assert done["finished"] is True and done["status"] == "completed", done
    result = conforms(doc, "get", "/api/jobs/{job_id}/result", client.get(f"/api/jobs/{job_id}/result"))
    assert result["ranked"] and {r["docid"] for r in result["ranked"]} <= known and result["bibtex"].startswith("@")
    events = conforms(doc, "get", "/api/jobs/{job_id}/events", client.get(f"/api/jobs/{job_id}/events"))
    assert events["finished"] and events["events"][-1]["data"]["end"] is True
    assert [e["id"] for e in events["events"]] == list(range(1, len(events["events"]) + 1))
    trace = conforms(doc, "get", "/api/jobs/{job_id}/trace", client.get(f"/api/jobs/{job_id}/trace"))
    assert trace["spans"] and any(t["tool"] == "search" for t in trace["tools"])
    marked = conforms(
        doc,
        "post",
        "/api/jobs/{job_id}/marks",
        client.post(f"/api/jobs/{job_id}/marks", json={"docid": result["ranked"][0]["docid"], "relevant": True}),
    )
    assert marked["collection"] == LITERATURE and marked["relevant"] is True
    for fmt, first_line in (("bibtex", "@"), ("ris", "TY  -"), ("csl-json", "["), ("csv", "rank"), ("markdown", "#")):
        exported = client.get(f"/api/jobs/{job_id}/export/{fmt}")
        assert exported.status_code == 200 and exported.text.lstrip().startswith(first_line), (fmt, exported.text[:80])
    for action, payload in (("steer", {"text": "not surveys"}), ("stop", None), ("cancel", None)):
        late = conforms(
            doc, "post", f"/api/jobs/{{job_id}}/{action}", client.post(f"/api/jobs/{job_id}/{action}", json=payload)
        )
        assert late["code"] == "job_finished" and late["hint"], late

    # acting on a running job: steer, then stop (it answers with what it has); another is cancelled.
    # A job on `lit` takes a second or two, so each action may find it answering or ended already:
    # then the answer is the declared 409 saying so, and the job's end is consistent with it.
    steered = start(client, "graph neural networks for molecules and proteins", budget=120)
    took = client.post(f"/api/jobs/{steered}/steer", json={"text": "not surveys"})
    body = conforms(doc, "post", "/api/jobs/{job_id}/steer", took)
    assert (took.status_code, body.get("accepted") or body.get("code")) in (
        (200, "not surveys"),
        (409, "steer_rejected"),
        (409, "job_finished"),
    ), body
    stop = client.post(f"/api/jobs/{steered}/stop")
    stopped = conforms(doc, "post", "/api/jobs/{job_id}/stop", stop)
    assert stopped.get("sent") == "stop" if stop.status_code == 200 else stopped["code"] == "job_finished"
    assert wait_finished(client, steered)["status"] in (
        ("stopped", "completed") if stop.status_code == 200 else ("completed",)
    )
    cancelled_id = start(client, "message passing neural networks", budget=120)
    cancel = client.post(f"/api/jobs/{cancelled_id}/cancel")
    cancelled = conforms(doc, "post", "/api/jobs/{job_id}/cancel", cancel)
    assert cancelled.get("sent") == "cancel" if cancel.status_code == 200 else cancelled["code"] == "job_finished"
    assert wait_finished(client, cancelled_id)["status"] in (
        ("cancelled", "completed") if cancel.status_code == 200 else ("completed",)
    )


def test_events_resume_after_a_disconnect_without_a_gap_or_a_repeat(api: dict[str, Any]) -> None:
    client = api["client"]
    job_id = start(client, "graph neural networks for molecular property prediction")
    before = read_events(client, job_id, stop_after=1)  # the client goes away after one event
    assert len(before) == 1 and before[0]["event"] == "progress", before  # ...while the job runs
    after = read_events(client, job_id, last_id=before[-1]["id"])
    assert after and after[-1]["event"] == "end" and after[-1]["data"]["status"] == "completed"
    replay = read_events(client, job_id)  # a finished job replays every event, then the stream closes
    assert [e["id"] for e in before + after] == [e["id"] for e in replay] == list(range(1, len(replay) + 1))
    assert [e["data"] for e in before + after] == [e["data"] for e in replay]
    query_resume = read_events(client, job_id, last_id=replay[-2]["id"])
    assert [e["id"] for e in query_resume] == [replay[-1]["id"]]


def test_hostile_requests_get_one_json_error_and_change_nothing(api: dict[str, Any]) -> None:
    client, doc = api["client"], api["openapi"]
    jobs_before = client.get("/api/jobs", params={"limit": 1000}).json()["jobs"]

    def refused(response: httpx.Response, status: int, code: str) -> None:
        assert response.status_code == status, (response.status_code, response.text[:300])
        body = response.json()
        assert set(body) == {"code", "message", "hint"} and body["code"] == code, body
        assert "Traceback" not in response.text and 'File "' not in response.text

    search = f"/api/collections/{LITERATURE}/search"
    refused(client.post(search, content=b'{"query": "x"' + b" " * (2 << 20) + b"}"), 413, "body_too_large")
    chunks = (b"x" * 65536 for _ in range(40))  # 2.5 MB without a Content-Length
    refused(client.post(search, content=chunks, headers={"content-type": "application/json"}), 413, "body_too_large")
    refused(client.post(search, content=b"{not json", headers={"content-type": "application/json"}), 422, "bad_json")
    refused(client.post(search, json={"query": QUERY, "extra": 1}), 422, "bad_request")
    refused(client.post(search, json={"query": QUERY, "offset": 0}), 422, "bad_request")
    refused(client.post(search, json={"query": "?! ..."}), 400, "empty_query")
    refused(client.post("/api/collections/nope/search", json={"query": QUERY}), 404, "no_collection")
    refused(client.post("/api/collections/..%2F..%2Fetc/search", json={"query": QUERY}), 404, "not_found")
    refused(client.get(f"/api/collections/{LITERATURE}/documents/../../etc/passwd"), 404, "not_found")
    refused(client.get(f"/api/collections/{LITERATURE}/documents/..%2F..%2Fetc%2Fpasswd"), 404, "unknown_docid")
    refused(client.get("/api/searches/s999"), 404, "unknown_search_id")
    for path in ("/api/jobs/no-such-job", "/api/jobs/no-such-job/result", "/api/jobs/no-such-job/stream"):
        refused(client.get(path), 404, "unknown_job")
    refused(client.post("/api/jobs/no-such-job/marks", json={"docid": "gnn03", "relevant": True}), 404, "unknown_job")
    refused(client.get("/api/jobs/x/stream", headers={"Last-Event-ID": "abc"}), 400, "bad_request")
    refused(client.post("/api/jobs", json={"collection": LITERATURE, "intent": "   "}), 400, "empty_intent")
    refused(client.post("/api/jobs", json={"collection": LITERATURE, "intent": 42}), 422, "bad_request")
    refused(client.post("/api/jobs", json={"collection": LITERATURE, "intent": "x" * 10_001}), 422, "bad_request")
    refused(client.post("/api/jobs", json={"collection": LITERATURE, "intent": "x", "budget_seconds": 1e9}), 422, "bad_request")  # fmt: skip
    refused(client.post("/api/jobs", json={"collection": "../etc", "intent": INTENT}), 422, "bad_request")
    refused(client.get("/api/nothing-here"), 404, "not_found")
    refused(client.delete("/api/collections"), 405, "method_not_allowed")
    for response in (client.post(search, json={"query": QUERY, "extra": 1}), client.get("/api/jobs/no-such-job")):
        conforms(doc, response.request.method.lower(), "/api/collections/{collection}/search"
                 if "search" in str(response.url) else "/api/jobs/{job_id}", response)  # fmt: skip
    assert client.get("/api/jobs", params={"limit": 1000}).json()["jobs"] == jobs_before

    # markup and control characters in an intent are data: kept exactly, shown escaped, never obeyed
    hostile = "<script>alert(1)</script> [/z] \x1b]0;PWNED\x07 graph neural networks"
    job_id = start(client, hostile, budget=30)
    assert client.get(f"/api/jobs/{job_id}").json()["intent"] == hostile
    assert wait_finished(client, job_id)["finished"] is True


def test_a_server_off_loopback_needs_its_token(home: Path) -> None:
    refused = subprocess.run(
        [sys.executable, "-m", "quarry", "--home", str(home), "serve", "--host", "0.0.0.0", "--port", str(free_port())],
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if k != "QUARRY_API_TOKEN"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    said = refused.stdout + refused.stderr
    assert refused.returncode == 2 and "token_required" in said and "QUARRY_API_TOKEN" in said, said
    assert "Traceback" not in said

    token = uuid.uuid4().hex
    with serving(home, env={"QUARRY_API_TOKEN": token}, host="0.0.0.0") as served:
        for headers in ({}, {"Authorization": "Bearer wrong-token-0123456789"}, {"Authorization": token}):
            for method, path in (("get", "/api/collections"), ("post", "/mcp"), ("get", "/jobs")):
                denied = httpx.request(method, served.url + path, headers=headers, timeout=30)
                assert denied.status_code == 401 and denied.json()["code"] == "unauthorized", (path, headers)
                assert token not in denied.text
        allowed = httpx.get(f"{served.url}/api/collections", headers={"Authorization": f"Bearer {token}"}, timeout=30)
        assert allowed.status_code == 200 and LITERATURE in allowed.json()["collections"]

        # a browser: the page opened once with ?token= keeps it in a cookie, for reading only
        with httpx.Client(base_url=served.url, timeout=30) as browser:
            assert browser.get("/jobs?token=wrong-token-0123456789").status_code == 401
            signed = browser.get(f"/jobs?token={token}&status=completed")
            assert signed.status_code == 303 and signed.headers["location"] == "/jobs?status=completed"
            assert "HttpOnly" in signed.headers["set-cookie"] and "SameSite=Strict" in signed.headers["set-cookie"]
            assert browser.get("/jobs").status_code == 200 and browser.get("/api/collections").status_code == 200
            posted = browser.post(f"/api/collections/{LITERATURE}/search", json={"query": QUERY})
            assert posted.status_code == 401  # a cookie never authorises a change (no cross-site requests)


def test_a_taken_port_is_one_message_before_anything_is_announced(home: Path) -> None:
    import socket

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        taken = subprocess.run(
            [sys.executable, "-m", "quarry", "--home", str(home), "serve", "--port", str(port)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
    said = taken.stdout + taken.stderr
    assert taken.returncode == 2 and "port_taken" in said and "--port" in said, said
    assert "Quarry on http" not in said and "Traceback" not in said


def test_a_dense_index_is_built_as_durable_work_through_the_api(api: dict[str, Any]) -> None:
    """POST .../dense-index starts the durable build and answers at once with its id; its status
    reads as `quarry job progress` reads it, until it has embedded every chunk; asked again, the
    current index is reused. An id that is not a build's is a declared 404."""
    from stores.collection import ingest
    from tests.drill_kit import wait_for
    from tests.fakes import short_docs, write_jsonl

    client, doc, home = api["client"], api["openapi"], api["home"]
    ingest(write_jsonl(home.parent / "dense-src.jsonl", short_docs(12)), "densely", home=home)
    started = client.post("/api/collections/densely/dense-index")
    body = conforms(doc, "post", "/api/collections/{collection}/dense-index", started)
    assert started.status_code == 202 and body["reused"] is False and body["build_id"].startswith("dense-densely-")
    assert started.headers["location"] == f"/api/dense-builds/{body['build_id']}"

    def status() -> dict[str, Any]:
        answer = client.get(started.headers["location"])
        return conforms(doc, "get", "/api/dense-builds/{build_id}", answer)

    wait_for(lambda: status()["finished"], "the dense index build finishing", timeout_s=WAIT_S, every_s=0.5)
    done = status()
    assert done["status"] == "completed" and done["stage"] == "done" and done["collection"] == "densely", done
    chunks = Collection("densely", home=home).corpus.stats()["chunks"]
    assert done["chunks"] == done["chunks_done"] == chunks and str(chunks) in done["line"].replace(",", "")
    again = conforms(
        doc, "post", "/api/collections/{collection}/dense-index", client.post("/api/collections/densely/dense-index")
    )
    assert again["reused"] is True and again["build_id"] == ""
    for bad in ("job-123", "dense-nobody-root-00000000"):
        missing = client.get(f"/api/dense-builds/{bad}")
        assert missing.status_code == 404, missing.text
        assert conforms(doc, "get", "/api/dense-builds/{build_id}", missing)["code"] == "unknown_job"
    unknown = client.post("/api/collections/nobody/dense-index")
    assert unknown.status_code == 404 and conforms(doc, "post", "/api/collections/{collection}/dense-index", unknown)
