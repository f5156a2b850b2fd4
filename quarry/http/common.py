"""What every router of `quarry serve` shares: the service it calls, the one error shape
(`{code, message, hint}` with a 4xx/5xx status) and the status each QuarryError code maps to.

A router (quarry.http.api, quarry.http.pi_serini, quarry.http.pages) takes the app's one
`QuarryService` through the `service` dependency and lets a QuarryError propagate: the app's
handler (quarry.http.app) turns it into the JSON error, so no router builds error bodies itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar, TypeVarTuple, Unpack

import anyio
from fastapi import Depends, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, BeforeValidator

from quarry.app.service import QuarryService
from stores.error_catalogue import http_status
from stores.errors import QuarryError, printable
from stores.redact import redact

MAX_BODY_BYTES = 1 << 20  # a request body larger than 1 MiB is refused (413) before it is read
# The largest integer a client may send (an offset, a line, an event number): what JSON carries
# exactly (JavaScript's Number.MAX_SAFE_INTEGER), far below SQLite's 2**63 - 1, so no number a
# client sends can overflow a store; the schemas declare it (`le`) and a larger one is a 422.
NUMBER_MAX = 2**53 - 1


def _json_integer(value: Any) -> Any:
    """A number with no fraction as the int it is (JSON Schema's `integer` includes 5.0); a string
    or a boolean stays as sent, for a strict model to refuse as /openapi.json says."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


# An integer field of a strict request body: what JSON Schema calls an integer, and nothing else.
Integer = Annotated[int, BeforeValidator(_json_integer)]


class ApiError(BaseModel):
    """Every error `quarry serve` returns: what went wrong (`code`, stable for scripts; `message`)
    and what to do (`hint`)."""

    code: str
    message: str
    hint: str = ""


ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ApiError, "description": text}
    for status, text in (
        (400, "The request cannot be served as asked"),
        (401, "A bearer token is required (QUARRY_API_TOKEN)"),
        (403, "The request comes from a page of another site (Origin not allowed)"),
        (404, "Unknown collection, document, search or job"),
        (409, "The job is not in a state that allows this"),
        (413, "The request body is too large"),
        (421, "The Host is not a name this server answers to (DNS rebinding refused)"),
        (422, "The request does not match the schema"),
        (503, "Temporal, a worker or a store is not reachable"),
    )
}


def status_of(code: str) -> int:
    """The HTTP status of a QuarryError, by its code (stores.error_catalogue: 404 for a thing that does
    not exist, 409 for a job not in a state for it, 503 for a server or store not reachable; any other
    code is a 400: the request cannot be served as asked)."""
    return http_status(code)


def error_response(
    status: int, code: str, message: str, hint: str = "", headers: dict[str, str] | None = None
) -> JSONResponse:
    """The one error body: every text redacted (no key leaves) and control characters made visible."""
    body = ApiError(code=code, message=printable(redact(message)), hint=printable(redact(hint)))
    return JSONResponse(body.model_dump(), status_code=status, headers=headers)


def quarry_error_response(err: QuarryError) -> JSONResponse:
    return error_response(status_of(err.code), err.code, err.message, err.hint)


async def service(request: Request) -> QuarryService:
    """The app's one service (its search sessions outlive a request: a search_id pages later).
    Async, as it does no I/O: FastAPI runs a plain `def` dependency in its thread pool."""
    return request.app.state.service


T = TypeVar("T")
Args = TypeVarTuple("Args")


async def in_thread(fn: Callable[[Unpack[Args]], T], *args: *Args) -> T:
    """Run a blocking service call (Lucene, SQLite) off the event loop, in one hop to a worker thread.
    The hot endpoints (search, paging, reading) are `async def` around it because FastAPI runs a
    plain `def` endpoint, and then the validation of its response, each in its thread pool: with the
    dependency above that was three hops, about 0.5 ms a request more on this 2-core machine
    (docs/notes/performance-history.md)."""
    return await anyio.to_thread.run_sync(fn, *args)


Service = Annotated[QuarryService, Depends(service)]
