"""`quarry serve`'s one ASGI app (FastAPI): the JSON API (quarry.http.api), Pi-Serini's `http-json`
backend (quarry.http.pi_serini), the job pages (quarry.http.pages) and the MCP server over
Streamable HTTP at `/mcp` (quarry.mcp.server) — every door calling one `QuarryService`.

Safety lives here, once for every route: only the Host names and Origins of one allow-list
(quarry.http.trust, shared with /mcp: no DNS rebinding, no cross-site request), a bearer token when
one is configured (required by `quarry serve` on any non-loopback address), request bodies bounded
before they are read, CORS only for origins asked for, and every failure — a QuarryError, a body
that is not the schema, an unknown route (a 405 with its `Allow`), a bug — as the JSON
`{code, message, hint}` with a 4xx/5xx status, never a traceback.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
from collections.abc import AsyncIterator
from http.cookies import CookieError, SimpleCookie
from typing import Any
from urllib.parse import parse_qs, urlencode

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import iter_route_contexts
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from quarry.app.service import QuarryService
from quarry.http.common import MAX_BODY_BYTES, error_response, quarry_error_response
from quarry.http.trust import AllowList, origin_of
from stores.errors import QuarryError

log = logging.getLogger("quarry.serve")


COOKIE = "quarry_token"  # where a browser keeps the bearer token for the job pages


def _cookie(header: str, name: str) -> str:
    jar = SimpleCookie()
    try:
        jar.load(header)
    except CookieError:
        return ""
    return jar[name].value if name in jar else ""


class Guard:
    """Pure ASGI middleware (it must not buffer Server-Sent Events or MCP streams, as Starlette's
    BaseHTTPMiddleware would), before any route runs, so a refused request starts nothing: refuses
    a `Host` the allow-list does not name (421: a rebound name) and an `Origin` it does not (403: a
    page of another site), a request without the bearer token when one is set (401) and a body over
    `max_body` bytes (413) — by its Content-Length, or while it streams in. A browser cannot send a
    bearer header to a page, so a page opened once with `?token=` keeps it in a same-site HttpOnly
    cookie, honoured for reading (GET) only."""

    def __init__(
        self, app: ASGIApp, token: str | None, allow: AllowList, max_body: int = MAX_BODY_BYTES, preflight: bool = False
    ) -> None:
        self.app, self.token, self.allow, self.max_body = app, token, allow, max_body
        self.preflight = preflight  # CORS is on: a browser's preflight (OPTIONS) carries no token by design

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        method = scope.get("method", "GET")
        refusal = self._foreign(headers.get("host"), headers.get("origin"))
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        exempt = self.preflight and method == "OPTIONS"
        if self.token is not None and not exempt and not self._authorised(headers.get("authorization", "")):
            reading = method in ("GET", "HEAD")
            if reading and self._matches(_cookie(headers.get("cookie", ""), COOKIE)):
                await self.app(scope, receive, send)  # a browser on the job pages (reads only: no CSRF)
                return
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            if reading and self._matches((query.pop("token", None) or [""])[0]):
                await self._sign_in(scope, query, send)
                return
            await error_response(
                401,
                "unauthorized",
                "this Quarry server needs a bearer token",
                "send the header Authorization: Bearer $QUARRY_API_TOKEN (in a browser: open /jobs?token=… once)",
                headers={"WWW-Authenticate": "Bearer"},
            )(scope, receive, send)
            return
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > self.max_body:
            await self._too_large(scope, receive, send)
            return
        seen, refused = 0, False

        async def bounded() -> Message:
            # A body streamed without a Content-Length is counted as it arrives: past the bound the
            # 413 is sent at once and the app is told the client left (an exception raised here
            # would reach FastAPI's body parser, which answers it as a 400).
            nonlocal seen, refused
            message = await receive()
            if message["type"] == "http.request" and not refused:
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    refused = True
                    await self._too_large(scope, receive, send)
                    return {"type": "http.disconnect"}
            return message

        async def unless_refused(message: Message) -> None:
            if not refused:  # after the 413, whatever the app answers is dropped
                await send(message)

        await self.app(scope, bounded, unless_refused)

    def _foreign(self, host: str | None, origin: str | None) -> JSONResponse | None:
        """The refusal of a request from a name or a site this server is not (None: neither)."""
        names = ", ".join(self.allow.names)
        if not self.allow.allows_host(host):
            return error_response(
                421,
                "foreign_host",
                f"this Quarry server does not answer to the Host {host or '(none)'!r}",
                f"open it by a name it answers ({names}), or start quarry serve with --allow-host NAME",
            )
        if not self.allow.allows_origin(origin):
            return error_response(
                403,
                "foreign_origin",
                f"requests from the page {origin!r} are refused (it is not this server's own origin)",
                "call the API from this server's pages or a client outside the browser, "
                "or start quarry serve with --cors ORIGIN for a page you trust",
            )
        return None

    def _authorised(self, header: str) -> bool:
        scheme, _, given = header.partition(" ")
        return scheme.lower() == "bearer" and self._matches(given.strip())

    def _matches(self, given: str) -> bool:
        return bool(given) and hmac.compare_digest(given.encode(), (self.token or "").encode())

    async def _sign_in(self, scope: Scope, query: dict[str, list[str]], send: Send) -> None:
        """A browser opened a page with `?token=`: keep the token in an HttpOnly, same-site cookie
        and send it to the same page without the token in its address (or its history)."""
        rest = urlencode(query, doseq=True)
        where = scope.get("path", "/") + (f"?{rest}" if rest else "")
        cookie = f"{COOKIE}={self.token}; HttpOnly; SameSite=Strict; Path=/"
        await send({"type": "http.response.start", "status": 303,
                    "headers": [(b"location", where.encode("latin-1")), (b"set-cookie", cookie.encode("latin-1")),
                                (b"cache-control", b"no-store"), (b"content-length", b"0")]})  # fmt: skip
        await send({"type": "http.response.body", "body": b""})

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        await error_response(
            413,
            "body_too_large",
            f"the request body is over {self.max_body:,} bytes",
            "send a smaller request: intents and steering are a few hundred characters",
        )(scope, receive, send)


def _handlers(app: FastAPI) -> None:
    @app.exception_handler(QuarryError)
    async def quarry_error(request: Request, err: QuarryError) -> Any:
        return quarry_error_response(err)

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, err: RequestValidationError) -> Any:
        problems = []
        if any(e.get("type") == "json_invalid" for e in err.errors()):
            return error_response(422, "bad_json", "the request body is not valid JSON", "send a JSON object")
        for e in err.errors()[:5]:
            where = ".".join(str(p) for p in e.get("loc", ()) if p != "body") or "body"
            problems.append(f"{where}: {e.get('msg', 'invalid')}")
        return error_response(
            422,
            "bad_request",
            "; ".join(problems) or "the request does not match the schema",
            "see the request schemas at /docs (or /openapi.json)",
        )

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, err: StarletteHTTPException) -> Any:
        if err.status_code == 404:
            return error_response(404, "not_found", f"no route {request.url.path!r}", "the API is listed at /docs")
        if err.status_code == 405:
            allowed = _methods_at(request)
            return error_response(
                405,
                "method_not_allowed",
                f"{request.method} is not served at {request.url.path!r}",
                f"use {' or '.join(allowed)}",
                headers={"Allow": ", ".join(allowed)},
            )
        return error_response(err.status_code, "http_error", str(err.detail), headers=dict(err.headers or {}))

    @app.exception_handler(Exception)
    async def bug(request: Request, err: Exception) -> Any:
        log.exception("unexpected error serving %s", request.url.path)
        return error_response(
            500,
            "internal_error",
            f"an unexpected {type(err).__name__} served this request",
            "not an input problem: see the server's log",
        )


def _methods_at(request: Request) -> list[str]:
    """The methods some route serves at the request's path (the `Allow` header of a 405): every
    route whose path matches, as `GET` and `POST /api/jobs` are two routes (Starlette's own 405
    names only the first)."""
    path = request.scope.get("path", "")
    methods: set[str] = set()
    for route in iter_route_contexts(request.app.routes):
        pattern = getattr(route, "path_regex", None)
        if route.methods and pattern is not None and pattern.match(path):
            methods |= set(route.methods)
    return sorted(methods)


def create_app(
    address: str | None = None,
    *,
    token: str | None = None,
    host: str = "127.0.0.1",
    port: int | None = None,
    allow_hosts: list[str] | None = None,
    cors: list[str] | None = None,
) -> FastAPI:
    """The app for `quarry serve`: `address` is the Temporal frontend (None: the usual rule), `token`
    the bearer token every request must carry (None: none), `host` and `port` the address it binds
    (None: any port) and `allow_hosts` more names it answers to — one allow-list
    (quarry.http.trust) for every route and the MCP transport — and `cors` the origins allowed to
    call it from a browser. A bad name or origin is a QuarryError before anything is built."""
    from quarry.http import api as http_api
    from quarry.http import pages as http_pages
    from quarry.http import pi_serini as http_pi_serini
    from quarry.mcp.server import build_server

    allow = AllowList.build(host, port, allow_hosts or (), cors or ())
    mcp = build_server(address)
    mcp_app = mcp.streamable_http_app(streamable_http_path="/mcp", transport_security=allow.transport_security())

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with mcp.session_manager.run():
            yield

    app = FastAPI(
        title="Quarry", summary="Durable agentic search over your own collections", version="1", lifespan=lifespan
    )
    app.state.service = QuarryService(address, door="http")
    app.state.address = address
    app.state.allow = allow
    _handlers(app)
    app.include_router(http_api.router)
    app.include_router(http_pi_serini.router)
    app.include_router(http_pages.router)
    app.router.routes.extend(mcp_app.routes)  # POST/GET/DELETE /mcp: the SDK's own transport
    if cors:
        from starlette.middleware.cors import CORSMiddleware

        origins = [origin_of(c) for c in cors]  # as the allow-list holds them
        app.add_middleware(CORSMiddleware, allow_origins=origins, allow_methods=["*"], allow_headers=["*"])
    app.add_middleware(Guard, token=token, allow=allow, preflight=bool(cors))
    return app
