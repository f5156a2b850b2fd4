"""The job pages of `quarry serve` (quarry.http.pages) in a real headless Chromium: real heuristic
jobs on a real Temporal dev server with the background worker `start_job` launches (as in
tests/test_mcp.py), served by a real `python -m quarry serve` process on loopback.

The live test runs first on purpose: its job waits for the background worker to warm up (several
seconds), so its page opens on a running job every time and must follow it to its end without a
reload. Screenshots go to each test's tmp_path."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import pytest
from playwright.sync_api import BrowserContext, Page, expect, sync_playwright

from quarry.app.requests import JobRequest
from quarry.app.service import QuarryService
from quarry.http import pages_view as view
from tests.conftest import LITERATURE
from tests.drill_kit import free_port, reachable, wait_for

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")  # Debian's (`make setup` installs it); Playwright's own download fails offline
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
JOB_TIMEOUT_S = 120.0  # a heuristic job on `lit`, the background worker's warm-up included
T = TypeVar("T")
HOSTILE = "<script>window.__pwned=1</script> <b>x</b> graph neural networks"


@pytest.fixture(scope="module", autouse=True)
def this_home(home: Path, server) -> Iterator[Path]:
    """Every call of this module uses the module home (with `lit`), its dev server and a queue of
    its own; the background worker the first job starts is stopped with `quarry down` at the end."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("QUARRY_HOME", str(home))
        mp.setenv("QUARRY_TEMPORAL_ADDRESS", server.address)
        mp.setenv("QUARRY_TASK_QUEUE", f"pages-{uuid.uuid4().hex[:8]}")
        mp.setenv("QUARRY_UI_URL", f"http://127.0.0.1:{server.ui}")
        try:
            yield home
        finally:
            subprocess.run(
                [sys.executable, "-m", "quarry", "down"],
                cwd=ROOT,
                env=dict(os.environ),
                capture_output=True,
                timeout=60,
            )


@pytest.fixture(scope="module")
def site(this_home: Path) -> Iterator[str]:
    """`python -m quarry serve` on a free loopback port, up once it answers /jobs."""
    port = free_port()
    log = this_home / f"serve-{port}.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "quarry", "--home", str(this_home), "serve", "--port", str(port)],
            cwd=ROOT,
            env=dict(os.environ),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_for(lambda: reachable(port) or proc.poll() is not None, "quarry serve answering", timeout_s=60)
        assert proc.poll() is None, log.read_text()[-2000:]
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(20)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrowserContext]:
    """Headless Chromium with a fresh profile."""
    assert CHROMIUM.is_file(), f"no {CHROMIUM}: run `make setup` (it installs Debian's chromium)"
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1280, "height": 900},
        )
        yield context
        context.close()


@pytest.fixture
def page(browser: BrowserContext) -> Iterator[Page]:
    tab = browser.new_page()
    tab.set_default_timeout(15_000)
    yield tab
    tab.close()


def off_loop(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """`fn` on a thread of its own: Playwright's sync API keeps an event loop running on this one,
    and the service's Temporal calls start their own (asyncio.run)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(fn, *args, **kwargs).result()


def start(intent: str, mode: str = "list") -> str:
    request = JobRequest(collection=LITERATURE, intent=intent, mode=mode, budget_seconds=90.0)
    return off_loop(QuarryService().start_job, request).job_id


def result_of(job_id: str) -> dict[str, Any]:
    return off_loop(QuarryService().job_result, job_id).model_dump()


def finished(job_id: str) -> None:
    service = QuarryService()
    off_loop(
        wait_for,
        lambda: service.job_status(job_id).finished,
        f"job {job_id} finishing",
        timeout_s=JOB_TIMEOUT_S,
        every_s=0.3,
    )


def requirement_texts(result: dict[str, Any]) -> list[str]:
    """The matrix's columns: the checklist, then requirements only the evidence names."""
    names = [str(c["text"]) for c in result["checklist"]]
    for r in result["ranked"]:
        names += [e["item"] for e in r["evidence"] if e["item"] not in names]
    return list(dict.fromkeys(names))


def test_a_running_job_page_follows_it_live_to_its_result(site: str, page: Page, tmp_path: Path) -> None:
    """The page opens on the running job, then — with no reload (a marker set on the window
    survives) — shows its progress and, once it has ended, its result."""
    job_id = start("graph neural networks for molecules")
    listing = page.context.new_page()  # the jobs list follows it too
    listing.goto(f"{site}/jobs")
    row = listing.locator(f'#jobs tr[data-job="{job_id}"] .pill')
    expect(row).to_have_text("running")
    listing.evaluate("window.__marker = 1")
    page.goto(f"{site}/jobs/{job_id}")
    assert page.locator("#job").get_attribute("data-finished") == "false"
    expect(page.locator("#status")).to_have_text("running")
    expect(page.locator("#live")).to_be_visible()
    page.screenshot(path=tmp_path / "running.png", full_page=True)
    page.evaluate("window.__marker = 1")

    expect(page.locator("#job")).to_have_attribute("data-finished", "true", timeout=JOB_TIMEOUT_S * 1000)
    expect(page.locator("#status")).to_have_text("completed")
    assert page.evaluate("window.__marker") == 1  # the same document: it changed in place
    expect(page.locator("#live")).to_have_count(0)
    result = result_of(job_id)
    strong = [r["title"] for r in result["ranked"] if not r["weak"]]
    expect(page.locator("#ranked > article.doc-card h3")).to_have_text(strong)
    assert page.locator("#events tbody tr").count() >= 2  # its progress events, then its end
    assert page.locator("#rounds .round").count() >= 1
    page.screenshot(path=tmp_path / "live-finished.png", full_page=True)
    expect(row).to_have_text("completed", timeout=15_000)
    assert listing.evaluate("window.__marker") == 1  # the list changed in place too
    listing.close()


def test_a_finished_job_page_shows_evidence_matrix_answer_and_links(site: str, page: Page, tmp_path: Path) -> None:
    job_id = start("transformer language models for translation", mode="answer")
    finished(job_id)
    result = result_of(job_id)
    assert result["status"] == "completed" and result["ranked"], result
    page.goto(f"{site}/jobs/{job_id}")
    assert page.locator("#job").get_attribute("data-finished") == "true"

    strong = [r for r in result["ranked"] if not r["weak"]]
    expect(page.locator("#ranked > article.doc-card h3")).to_have_text([r["title"] for r in strong])
    quotes = {e["quote"] for r in result["ranked"] for e in r["evidence"] if e["quote"] and e["score"] > 0}
    marks = page.locator("#ranked > article.doc-card mark").all_inner_texts()
    assert marks and set(marks) <= quotes, (marks, quotes)

    columns = requirement_texts(result)
    headers = page.locator("#matrix thead th.req-col")
    expect(headers).to_have_count(len(columns))
    assert [headers.nth(i).get_attribute("data-requirement") for i in range(len(columns))] == columns
    rows = page.locator("#matrix tbody tr")
    expect(rows).to_have_count(len(result["ranked"]))
    assert [rows.nth(i).get_attribute("data-docid") for i in range(len(result["ranked"]))] == [
        r["docid"] for r in result["ranked"]
    ]
    best: dict[str, float] = {}
    for e in result["ranked"][0]["evidence"]:
        best[e["item"]] = max(best.get(e["item"], 0.0), e["score"])
    expected = [f"{best[c]:.1f}" if c in best else "·" for c in columns]
    expect(rows.first.locator("td.cell")).to_have_text(expected)  # each cell: the requirement's best score

    answer = page.locator("#answer")
    expect(answer.locator(".cite").first).to_be_visible()
    assert set(answer.locator(".cite").all_inner_texts()) <= {r["docid"] for r in result["ranked"]}
    expect(page.locator("#web-ui")).to_have_attribute("href", result["web_ui"])
    assert job_id in result["web_ui"]
    expect(page.locator("#trace")).to_have_attribute("href", f"/api/jobs/{job_id}/trace")
    page.screenshot(path=tmp_path / "finished.png", full_page=True)

    # A quote's line link opens the document at those lines, marked.
    first = strong[0]
    quoted = next(e for e in first["evidence"] if e["quote"] and e["score"] > 0)
    page.locator("#doc-1 .passage-foot a").first.click()
    expect(page.locator("h1")).to_have_text(first["title"])
    expect(page.locator("#lines tr.hl").first).to_contain_text(quoted["quote"][:40])
    assert page.url.endswith(f"#L{page.locator('#lines tr.hl').first.get_attribute('id')[1:]}")
    page.screenshot(path=tmp_path / "document.png", full_page=True)
    page.get_by_text("Back to the job").click()
    expect(page.locator("#intent")).to_have_text(result["intent"])


def test_markup_in_an_intent_is_shown_as_text(site: str, page: Page, tmp_path: Path) -> None:
    job_id = start(HOSTILE)
    finished(job_id)
    page.goto(f"{site}/jobs/{job_id}")
    expect(page.locator("#intent")).to_have_text(HOSTILE)
    assert page.locator("#intent b, #intent script").count() == 0
    assert page.evaluate("typeof window.__pwned") == "undefined"
    expect(page.locator("#checklist")).to_contain_text("<b>x</b>")
    page.screenshot(path=tmp_path / "escaped.png", full_page=True)

    page.goto(f"{site}/jobs")
    expect(page.locator(f'#jobs tr[data-job="{job_id}"] td.intent')).to_have_text(HOSTILE)
    assert page.evaluate("typeof window.__pwned") == "undefined"
    page.screenshot(path=tmp_path / "jobs.png", full_page=True)


def fetched(url: str) -> tuple[int, str, str]:
    """(status, content type, body) of a GET, errors included."""
    try:
        with urllib.request.urlopen(url, timeout=10) as got:
            return got.status, got.headers.get_content_type(), got.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get_content_type(), err.read().decode()


def test_an_unknown_job_is_a_plain_404_page(site: str) -> None:
    for url in (f"{site}/jobs/job-does-not-exist", f"{site}/jobs/job-does-not-exist/live"):
        status, kind, body = fetched(url)
        assert (status, kind) == (404, "text/html"), (url, status, body)
        assert "unknown_job" in body and "Traceback" not in body
    with urllib.request.urlopen(f"{site}/", timeout=10) as redirected:
        assert redirected.url.endswith("/jobs") and redirected.status == 200


@pytest.mark.parametrize(
    ("passage", "quote", "marked"),
    [
        ("We study GNNs. They work well.", "They work well.", ["They work well."]),
        ("We study GNNs.\nThey  WORK well.", "they work well", ["They  WORK well"]),  # case and spacing
        ("We study GNNs.", "not in it", ["not in it"]),  # shown after the passage, never dropped
        ("<b>x</b> and more", "<b>x</b>", ["<b>x</b>"]),  # text: the template escapes it
        ("no quote", None, []),
    ],
)
def test_a_quote_is_marked_inside_its_passage(passage: str, quote: str | None, marked: list[str]) -> None:
    segments = view.highlight(passage, quote)
    assert [s.text for s in segments if s.marked] == marked
    assert passage in "".join(s.text for s in segments)


def test_the_rounds_say_what_entered_and_left_the_top_5() -> None:
    def top(*ids: str) -> list[dict[str, Any]]:
        return [{"docid": d, "score": 1.0} for d in ids]

    events = [
        {"round": 2, "searches": [{"round": 1, "channel": "lexical", "query": "q1"}], "top": top("a", "b")},
        {
            "round": 2,
            "searches": [
                {"round": 1, "channel": "lexical", "query": "q1"},
                {"round": 2, "channel": "semantic", "query": "q2"},
            ],
            "top": top("a", "c"),
        },
        {"end": True, "top": top("c", "a")},
    ]
    rounds = view.rounds_of(events, {"c": "Title C"}, LITERATURE, "job-1")
    assert [r.name for r in rounds] == ["1", "2", "final"]
    assert [r.queries for r in rounds] == [[("lexical", "q1")], [("semantic", "q2")], []]
    assert [[t.docid for t in r.entered] for r in rounds] == [["a", "b"], ["c"], []]
    assert [[t.docid for t in r.left] for r in rounds] == [[], ["b"], []]
    assert rounds[1].entered[0].title == "Title C" and rounds[2].top[0].docid == "c"
