"""Pi-Serini's http-json backend (quarry.http.pi_serini) on a real `python -m quarry serve` process
over loopback, checked against the contract itself: every request sent and every response received
is validated with the JSON Schema transcribed from Pi-Serini's `schemas.ts`
(tests/data/pi_serini_contract.json). The collections are `lit` (the 40 papers of
tests.fakes.search_docs, the module home of tests.conftest) and `reports` (70 documents that all say
"retrieval", more than a page holds, and one 602-line document, more than a read returns)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest

from nodes.job.config import TOOL_LIMITS
from tests.conftest import LITERATURE
from tests.fakes import long_doc, search_docs, topic_docs, write_jsonl
from tests.serve_kit import serving

CONTRACT = json.loads((Path(__file__).parent / "data" / "pi_serini_contract.json").read_text(encoding="utf-8"))
REPORTS = "reports"
REPORT_DOCS = 70  # > TOOL_LIMITS.page_limit_max: a page of 1000 (what Pi-Serini asks for) spans tool pages
LONG_LINES = 600  # paragraphs of the long document: 602 lines with its title and metadata line
EVERY_PAPER = "variant"  # a word each of the 40 papers has


def schema(name: str) -> dict[str, Any]:
    return {"$defs": CONTRACT["$defs"], "$ref": f"#/$defs/{name}"}


def conforms(value: Any, name: str) -> bool:
    return jsonschema.Draft202012Validator(schema(name)).is_valid(value)


@pytest.fixture(scope="module")
def reports(home: Path, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """`reports` in the module home; returns the long document's lines as read_document numbers them."""
    from stores.collection import ingest

    long_rec, lines = long_doc(paragraphs=LONG_LINES)
    src = write_jsonl(tmp_path_factory.mktemp("reports-src") / "reports.jsonl", [*topic_docs(REPORT_DOCS), long_rec])
    ingest(src, REPORTS, home=home)
    return lines


@pytest.fixture(scope="module")
def client(home: Path, reports: list[str]) -> Iterator[httpx.Client]:
    """An HTTP client of a `quarry serve` subprocess on a free loopback port (no token), once it answers."""
    with serving(home) as served, httpx.Client(base_url=served.url, timeout=60) as http:
        yield http


def search(client: httpx.Client, collection: str, **body: Any) -> dict[str, Any]:
    assert conforms(body, "SearchBackendSearchRequest"), body
    response = client.post(f"/pi-serini/{collection}/search", json=body)
    assert response.status_code == 200, response.text
    answer = response.json()
    jsonschema.validate(answer, schema("SearchBackendSearchResponse"))
    return answer


def read(client: httpx.Client, collection: str, **body: Any) -> dict[str, Any]:
    assert conforms(body, "SearchBackendReadDocumentRequest"), body
    response = client.post(f"/pi-serini/{collection}/read-document", json=body)
    assert response.status_code == 200, response.text
    answer = response.json()
    jsonschema.validate(answer, schema("SearchBackendReadDocumentResponse"))
    return answer


def test_search_pages_a_ranking_by_next_offset(client: httpx.Client) -> None:
    whole = search(client, LITERATURE, query=EVERY_PAPER, limit=40)
    assert whole["totalHits"] == 40 and not whole["hasMore"] and "nextOffset" not in whole
    assert {h["docid"] for h in whole["hits"]} == {d["_id"] for d in search_docs()}

    pages, offset = [], None
    while True:
        body = {"query": EVERY_PAPER, "limit": 15} | ({"offset": offset} if offset else {})
        page = search(client, LITERATURE, **body)
        pages.append(page)
        assert page["totalHits"] == 40
        if not page["hasMore"]:
            assert "nextOffset" not in page
            break
        assert page["nextOffset"] == (offset or 1) + len(page["hits"])
        offset = page["nextOffset"]
    assert [len(p["hits"]) for p in pages] == [15, 15, 10]
    paged = [h for p in pages for h in p["hits"]]
    assert [h["docid"] for h in paged] == [h["docid"] for h in whole["hits"]]  # same order, no overlap, no gap
    assert [h["metadata"]["rank"] for h in paged] == list(range(1, 41))


def test_search_past_the_end_or_without_matches_is_an_empty_page(client: httpx.Client) -> None:
    past = search(client, LITERATURE, query=EVERY_PAPER, offset=41, limit=5)
    assert past.keys() <= {"hits", "hasMore", "timingMs"}  # the ranking's size is not known from past its end
    assert (past["hits"], past["hasMore"]) == ([], False)
    nothing = search(client, LITERATURE, query="zyzzyva quokka", limit=5)
    assert (nothing["hits"], nothing["totalHits"], nothing["hasMore"]) == ([], 0, False)


def test_a_page_larger_than_the_tools_page_is_filled_from_the_same_ranking(client: httpx.Client) -> None:
    """Pi-Serini's search tool asks for 1000 hits at once and never for a next page: it gets every
    ranked document, in the order of the tools' own pages, from one search."""
    cap = TOOL_LIMITS.page_limit_max
    assert cap < REPORT_DOCS  # more than one tool page
    whole = search(client, REPORTS, query="retrieval", limit=1000)  # what Pi-Serini's search tool sends
    assert len(whole["hits"]) == REPORT_DOCS and not whole["hasMore"] and "nextOffset" not in whole
    assert whole["totalHits"] == REPORT_DOCS
    assert [h["metadata"]["rank"] for h in whole["hits"]] == list(range(1, REPORT_DOCS + 1))
    first = search(client, REPORTS, query="retrieval", limit=cap)
    rest = search(client, REPORTS, query="retrieval", offset=first["nextOffset"], limit=1000)
    assert first["hasMore"] and first["nextOffset"] == cap + 1 and not rest["hasMore"]
    assert [h["docid"] for h in first["hits"] + rest["hits"]] == [h["docid"] for h in whole["hits"]]
    middle = search(client, REPORTS, query="retrieval", offset=cap - 4, limit=10)  # across the tools' page edge
    assert [h["docid"] for h in middle["hits"]] == [h["docid"] for h in whole["hits"][cap - 5 : cap + 5]]


def test_hits_carry_the_search_tools_own_fields(client: httpx.Client) -> None:
    """Title, score and excerpt are what Quarry's own search API shows for the same query."""
    ours = client.post(f"/api/collections/{LITERATURE}/search", json={"query": "graph neural networks", "limit": 10})
    assert ours.status_code == 200, ours.text
    theirs = search(client, LITERATURE, query="graph neural networks", limit=10)
    assert [(h["docid"], h["score"], h["title"], h["snippet"]) for h in theirs["hits"]] == [
        (h["docid"], h["score"], h["title"], h["excerpt"]) for h in ours.json()["hits"]
    ]
    for hit in theirs["hits"]:
        cut = hit["snippet"].startswith("…") or hit["snippet"].endswith("…")
        assert hit["snippetTruncated"] is cut
    assert any(h["snippetTruncated"] for h in theirs["hits"])


def test_read_document_pages_by_lines(client: httpx.Client, reports: list[str]) -> None:
    total = len(reports)
    got, offset = [], 1
    while True:
        page = read(client, REPORTS, docid="long1", offset=offset, limit=250)
        assert page["found"] and page["title"] == "A long handbook" and page["totalUnits"] == total
        assert (page["offset"], page["limit"], page["returnedOffsetStart"]) == (offset, 250, offset)
        shown = page["text"].split("\n")
        assert page["returnedOffsetEnd"] == offset + len(shown) - 1
        got += shown
        if not page["truncated"]:
            assert "nextOffset" not in page and page["returnedOffsetEnd"] == total
            break
        assert page["nextOffset"] == page["returnedOffsetEnd"] + 1
        offset = page["nextOffset"]
    assert got == reports

    default = read(client, REPORTS, docid="long1")
    assert (default["offset"], default["limit"], default["returnedOffsetEnd"]) == (1, TOOL_LIMITS.read_limit, 200)
    clamped = read(client, REPORTS, docid="long1", offset=1, limit=1000)
    cap = TOOL_LIMITS.read_limit_max
    assert (clamped["limit"], clamped["returnedOffsetEnd"], clamped["nextOffset"]) == (cap, cap, cap + 1)
    past = read(client, REPORTS, docid="long1", offset=total + 1, limit=10)
    assert (past["found"], past["text"], past["truncated"], past["totalUnits"]) == (True, "", False, total)
    assert "returnedOffsetStart" not in past and "nextOffset" not in past


def snapshot(*roots: Path) -> dict[str, tuple[int, int]]:
    """Size and modification time of every file under `roots` (a file root is itself)."""
    files = [f for r in roots for f in ([r] if r.is_file() else r.rglob("*")) if f.is_file()]
    return {str(f): (f.stat().st_size, f.stat().st_mtime_ns) for f in files}


@pytest.mark.parametrize(
    "docid", ["no-such-paper", "../etc/passwd", "../../../../etc/passwd", "/etc/passwd", "gnn00/.."]
)
def test_an_unknown_docid_is_found_false_and_touches_nothing(client: httpx.Client, home: Path, docid: str) -> None:
    outside = home.parent / "etc" / "passwd"  # what ../etc/passwd would name beside the home
    outside.parent.mkdir(exist_ok=True)
    outside.write_text("root:x:0:0\n")
    before = snapshot(home, outside)
    answer = read(client, LITERATURE, docid=docid, offset=1, limit=5)
    assert answer.keys() <= {"found", "docid", "timingMs"}
    assert (answer["found"], answer["docid"]) == (False, docid)
    assert snapshot(home, outside) == before and outside.read_text() == "root:x:0:0\n"


BAD = [
    ("search", b'{"query": "graph', 422),  # not JSON
    ("search", {"limit": 5}, 422),  # no query
    ("search", {"query": "", "limit": 5}, 422),
    ("search", {"query": "graph", "offset": 0, "limit": 5}, 422),
    ("search", {"query": "graph", "limit": 0}, 422),
    ("search", {"query": "graph"}, 422),  # limit is required
    ("search", {"query": "graph", "limit": "5"}, 422),
    ("search", {"query": "graph", "offset": None, "limit": 5}, 422),  # optional means absent, not null
    ("search", {"query": "graph", "limit": 5, "channel": "semantic"}, 422),  # additionalProperties: false
    ("read-document", {"offset": 1}, 422),
    ("read-document", {"docid": ""}, 422),
    ("read-document", {"docid": "gnn00", "offset": 0}, 422),
    ("read-document", {"docid": "gnn00", "limit": 0}, 422),
    ("read-document", {"docid": "gnn00", "limit": None}, 422),
    ("read-document", {"docid": 7}, 422),
    ("read-document", {"docid": "gnn00", "collection": "lit"}, 422),
]


@pytest.mark.parametrize(("endpoint", "body", "status"), BAD)
def test_a_request_the_contract_refuses_gets_a_json_error(
    client: httpx.Client, endpoint: str, body: Any, status: int
) -> None:
    if not isinstance(body, bytes):
        name = "SearchBackendSearchRequest" if endpoint == "search" else "SearchBackendReadDocumentRequest"
        assert not conforms(body, name), body  # refused here exactly when the contract refuses it
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    response = client.post(
        f"/pi-serini/{LITERATURE}/{endpoint}", content=content, headers={"content-type": "application/json"}
    )
    assert_json_error(response, status)


@pytest.mark.parametrize(
    ("path", "body", "status", "code"),
    [
        ("/pi-serini/no-such-collection/search", {"query": "graph", "limit": 5}, 404, "no_collection"),
        ("/pi-serini/no-such-collection/read-document", {"docid": "gnn00"}, 404, "no_collection"),
        (f"/pi-serini/{LITERATURE}/search", {"query": "   ", "limit": 5}, 400, "empty_query"),
    ],
)
def test_a_request_quarry_cannot_serve_gets_its_error(
    client: httpx.Client, path: str, body: dict[str, Any], status: int, code: str
) -> None:
    response = client.post(path, json=body)
    assert assert_json_error(response, status)["code"] == code


def assert_json_error(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    assert "Traceback" not in response.text and 'File "' not in response.text, response.text
    error = response.json()
    assert set(error) == {"code", "message", "hint"} and error["code"] and error["message"], error
    return error
