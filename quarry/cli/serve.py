"""`quarry serve`: this home's collections and jobs over HTTP — the JSON API, live job events,
Pi-Serini's http-json backend, the job pages and the MCP server at /mcp — in one uvicorn process
(quarry.http.app). Loopback by default; any other address needs QUARRY_API_TOKEN. It answers only
the Host names of its allow-list (quarry.http.trust: loopback, --host, --allow-host)."""

from __future__ import annotations

import errno
import ipaddress
import socket
from typing import Annotated

import typer

from quarry.app.terminal import out, safe
from quarry.cli.console import fail
from quarry.cli.options import AddressOpt
from stores import settings
from stores.errors import QuarryError

commands = typer.Typer()
TOKEN_ENV = settings.API_TOKEN.name
ALLOW_HOSTS_ENV = settings.ALLOW_HOSTS.name  # more names the server answers to, separated by spaces
MIN_TOKEN_CHARS = 16


def is_loopback(host: str) -> bool:
    """Whether binding `host` keeps the server on this machine only."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def token_for(host: str) -> str | None:
    """The bearer token the server requires: QUARRY_API_TOKEN when set (on any address); on a
    non-loopback address it must be set, and long enough to resist guessing."""
    token = settings.api_token()
    if token is None and not is_loopback(host):
        raise QuarryError(
            "token_required",
            f"serving on {host} (not this machine only) needs a bearer token",
            f"set {TOKEN_ENV} to a long random secret (e.g. export {TOKEN_ENV}=$(openssl rand -hex 24)), "
            "or serve on 127.0.0.1",
        )
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise QuarryError(
            "weak_token", f"{TOKEN_ENV} is shorter than {MIN_TOKEN_CHARS} characters", "use a long random secret"
        )
    return token


@commands.command("serve")
def serve_cmd(
    host: Annotated[
        str, typer.Option(help="Address to bind (other than loopback needs QUARRY_API_TOKEN)")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to bind")] = 8765,
    cors: Annotated[
        list[str] | None, typer.Option(help="An origin allowed to call the API from a browser (repeat)")
    ] = None,
    allow_host: Annotated[
        list[str] | None,
        typer.Option(
            envvar=ALLOW_HOSTS_ENV,
            help="Another name clients reach this server by, e.g. its LAN address or DNS name (repeat); "
            "the loopback names and --host are always answered, any other Host is refused (421)",
        ),
    ] = None,
    address: AddressOpt = None,
) -> None:
    """Serve the JSON API, live job events, job pages, Pi-Serini's backend and MCP at /mcp over HTTP."""
    try:
        token = token_for(host)
    except QuarryError as err:
        fail(err)
    import logging

    import uvicorn  # lazy: the ASGI stack costs start-up every other command would pay

    logging.getLogger("mcp").setLevel(logging.WARNING)  # the SDK logs every session at INFO

    from quarry.http.app import create_app

    try:
        app = create_app(address, token=token, host=host, port=port, allow_hosts=allow_host, cors=cors or None)
        sock = bound(host, port)
    except QuarryError as err:
        fail(err)
    shown = f"[{host}]" if ":" in host else host
    out.print(
        f"Quarry on http://{safe(shown)}:{port}  ·  jobs http://{safe(shown)}:{port}/jobs  ·  API /docs  ·  MCP /mcp"
        + ("  ·  bearer token required" if token else ""),
        highlight=False,
    )
    if not is_loopback(host):
        names = ", ".join(app.state.allow.names)
        out.print(f"Answers the names {safe(names)} (add one with --allow-host NAME)", highlight=False)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False)).run(sockets=[sock])


def bound(host: str, port: int) -> socket.socket:
    """A listening-ready socket on host:port, bound here so a taken port or an address that is not
    this machine's is one clear error before anything is announced (uvicorn would log and exit 3)."""
    try:
        infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, _, _, _, where = infos[0]
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(where)
        except OSError:
            sock.close()
            raise
    except OSError as err:
        taken = getattr(err, "errno", None) == errno.EADDRINUSE
        raise QuarryError(
            "port_taken" if taken else "cannot_bind",
            f"cannot serve on {host}:{port}: {err.strerror or err}",
            "pick another --port"
            if taken
            else "give an address of this machine: --host 127.0.0.1 (or 0.0.0.0 with a token)",
        ) from None
    return sock
