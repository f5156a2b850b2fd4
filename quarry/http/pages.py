"""The pages of `quarry serve` (quarry.http.app): the job list, a page per job that follows a running
job live, and a document page its evidence links to — what a researcher reads instead of a terminal.

Server-rendered: Jinja2 templates in quarry/http/templates/ with autoescape on, so intents, titles, quotes and
docids (all untrusted) are text, never markup. A running job's page polls `/jobs/{id}/live` — the same
server-rendered body, as a fragment — and swaps it in place until the job has ended: no reload, no
client-side rendering, no resource from outside this server (styles and script are inline).

A QuarryError on a page becomes a plain HTML error page with the status its code maps to
(quarry.http.common.status_of); the JSON API's errors stay JSON.
"""

from __future__ import annotations

from functools import lru_cache
from http import HTTPStatus
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import HTMLResponse, RedirectResponse
from jinja2 import Environment, PackageLoader, StrictUndefined

from quarry.http import pages_view as view
from quarry.http.common import NUMBER_MAX, Service, status_of
from stores.errors import QuarryError, printable
from stores.redact import redact

router = APIRouter(include_in_schema=False)  # HTML for people; the JSON API documents itself at /docs
POLL_MS = 1500  # how often a running job's page asks for its fresh body
DOC_LINES = 200  # lines one document page shows
DOC_CONTEXT = 10  # lines shown above the marked ones when a page starts near them
JOBS_LISTED = 50


@lru_cache(maxsize=1)
def templates() -> Environment:
    """The templates, escaping every value (`autoescape=True` for every template, whatever its name)."""
    env = Environment(
        loader=PackageLoader("quarry.http", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["heat"] = view.heat
    env.filters["when"] = view.when
    return env


def render(
    name: str, values: dict[str, Any], status: int = HTTPStatus.OK, headers: dict[str, str] | None = None
) -> HTMLResponse:
    html = templates().get_template(name).render(**values)
    return HTMLResponse(html, status_code=status, headers={"Cache-Control": "no-store"} | (headers or {}))


def error_page(err: QuarryError, fragment: bool = False) -> HTMLResponse:
    """The error as a page (or, for the live fragment, a banner): what went wrong and what to do."""
    values = {"code": err.code, "message": printable(redact(err.message)), "hint": printable(redact(err.hint))}
    return render("error.html", values | {"fragment": fragment}, status_of(err.code))


@router.get("/")
def home() -> RedirectResponse:
    return RedirectResponse("/jobs", status_code=303)


@router.get("/jobs", response_class=HTMLResponse)
def jobs_page(
    service: Service,
    collection: str | None = None,
    status: str | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = JOBS_LISTED,
) -> HTMLResponse:
    """This home's jobs, newest first, and its collections (each a filter of the list)."""
    try:
        listed = service.list_jobs(limit, status=status or None, collection=collection or None)
        names = service.list_collections().collections
    except QuarryError as err:
        return error_page(err)
    values = {"jobs": listed.jobs, "note": listed.note, "collections": names, "tones": _tones()}
    return render("jobs.html", values | {"collection": collection or "", "status": status or ""})


@router.get("/jobs/{job_id}", response_class=HTMLResponse)
def job_page(job_id: str, service: Service) -> HTMLResponse:
    """A job: its intent and checklist, ranked documents with their evidence, the requirement
    matrix, its rounds, budget and usage — following it live while it runs."""
    from quarry.http.pages_job import job_context

    try:
        job = job_context(service, job_id)
    except QuarryError as err:
        return error_page(err)
    return render("job.html", {"job": job, "poll_ms": POLL_MS, "live_url": f"/jobs/{_path(job_id)}/live"})


@router.get("/jobs/{job_id}/live", response_class=HTMLResponse)
def job_live(job_id: str, service: Service) -> HTMLResponse:
    """The job page's body alone, for its poll; `X-Quarry-Finished: 1` once the job has ended."""
    from quarry.http.pages_job import job_context

    try:
        job = job_context(service, job_id)
    except QuarryError as err:
        return error_page(err, fragment=True)
    return render("job_body.html", {"job": job}, headers={"X-Quarry-Finished": "1" if job["finished"] else "0"})


@router.get("/collections/{name}/documents/{docid:path}", response_class=HTMLResponse)
def document_page(
    name: str,
    docid: str,
    service: Service,
    offset: Annotated[int | None, Query(ge=1, le=NUMBER_MAX)] = None,
    lines: Annotated[str, Query(pattern=r"^(\d{1,9}(-\d{1,9})?)?$")] = "",
    job: str = "",
) -> HTMLResponse:
    """A document's numbered lines (as `quarry read` shows them), the `lines` a quote came from
    marked and scrolled to; `job` links back to the job page that sent the reader here."""
    first, _, last = lines.partition("-")
    marked = (int(first), int(last or first)) if first else None
    start = offset or (max(1, marked[0] - DOC_CONTEXT) if marked and marked[0] > DOC_LINES - DOC_CONTEXT else 1)
    try:
        doc = service.read_document(name, docid, start, DOC_LINES)
    except QuarryError as err:
        return error_page(err)
    last_shown = doc.lines[-1].number if doc.lines else start - 1
    values = {
        "doc": doc,
        "marked": marked,
        "job": job,
        "job_url": f"/jobs/{_path(job)}" if job else "",
        "shown": (doc.lines[0].number if doc.lines else start, last_shown),
        "prev_url": _doc_page(name, docid, max(1, start - DOC_LINES), lines, job) if start > 1 else "",
        "next_url": _doc_page(name, docid, doc.next_offset, lines, job) if doc.next_offset else "",
    }
    return render("document.html", values)


def _path(part: str) -> str:
    from urllib.parse import quote

    return quote(part, safe="")


def _doc_page(name: str, docid: str, offset: int, lines: str, job: str) -> str:
    url = view.doc_url(name, docid, job_id=job)
    extra = f"offset={offset}" + (f"&lines={lines}" if lines else "")
    return url + ("&" if "?" in url else "?") + extra


def _tones() -> dict[str, str]:
    from quarry.http.pages_job import STATUS_TONE

    return STATUS_TONE
