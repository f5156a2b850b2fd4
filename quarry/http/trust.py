"""Which `Host` and `Origin` `quarry serve` answers: one allow-list, checked on every route by the
app's guard (quarry.http.app) and handed to the MCP SDK's transport for `/mcp`.

Why: a server on 127.0.0.1 is reachable by every web page the user opens. A page can rebind its own
name to 127.0.0.1 (DNS rebinding) and then read the API as if it were same-origin, and any page can
send a POST to localhost. So the server answers only the names it is known by (the loopback names,
the address it binds, the names `--allow-host` adds) and only requests from its own origin or an
origin `--cors` allows — what the MCP specification asks of its HTTP transport, for every route.

A wildcard bind (`--host 0.0.0.0` or `::`) has no single name: it needs the bearer token anyway, and
answers the loopback names, this machine's host name and whatever `--allow-host` names (e.g. the
machine's LAN address or DNS name) — a client using another name gets a 421 that says which option
adds it.

The entries are in the SDK's own format (`TransportSecuritySettings`: exact `host[:port]` values, a
trailing `:*` for any port) and matched with its rules, so the guard and `/mcp` never disagree.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from mcp.server.transport_security import TransportSecuritySettings

from stores.errors import QuarryError

LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
WILDCARDS = ("0.0.0.0", "::", "[::]", "")
ANY_PORT = "*"
_DNS_NAME = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"
)


def host_name(raw: str) -> str:
    """A host name or IP address as a `Host` header carries it (IPv6 in brackets), lower-cased; a
    QuarryError for anything else (a URL, a port, a path, a wildcard)."""
    name = raw.strip().lower()
    try:
        address = ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        if not _DNS_NAME.match(name) or name.replace(".", "").isdigit():
            raise QuarryError(
                "bad_allow_host",
                f"{raw!r} is not a host name or an IP address",
                "give a bare name such as --allow-host mybox.lan or --allow-host 192.168.1.20 (no scheme, port or path)",
            ) from None
        return name
    return f"[{address.compressed}]" if address.version == 6 else address.compressed


def origin_of(raw: str) -> str:
    """An origin as a browser sends it (`scheme://host[:port]`, no path), for `--cors`."""
    text = raw.strip().rstrip("/")
    parts = urlsplit(text)
    try:
        parts.port  # noqa: B018 (raises for a port that is not a number)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname) and not (parts.path or parts.query)
    except ValueError:
        ok = False
    if not ok:
        raise QuarryError(
            "bad_origin",
            f"{raw!r} is not an origin",
            "give the origin of the page that calls the API, e.g. --cors http://localhost:5173 (no '*', no path)",
        )
    return f"{parts.scheme}://{parts.netloc.lower()}"


@dataclass(frozen=True)
class AllowList:
    """The `Host` values and `Origin`s a server answers, in the MCP SDK's format."""

    hosts: tuple[str, ...]
    origins: tuple[str, ...]
    names: tuple[str, ...]  # the names alone, for messages

    @classmethod
    def build(
        cls, host: str = "127.0.0.1", port: int | None = None, extra: Iterable[str] = (), cors: Iterable[str] = ()
    ) -> AllowList:
        """The allow-list of a server bound to `host` on `port` (None: not known, any port): the
        loopback names, `host` itself (a wildcard bind adds this machine's host name instead), the
        `extra` names; its own origins over http and https, and the `cors` origins."""
        bound = host.strip().lower()
        given = [bound] if bound not in WILDCARDS else _machine_names()
        names: list[str] = []
        for name in (*LOOPBACK, *given, *extra):
            checked = host_name(name)
            if checked not in names:
                names.append(checked)
        at = ANY_PORT if port is None else str(port)
        hosts = [h for n in names for h in (n, f"{n}:{at}")]
        own = [f"{scheme}://{n}{suffix}" for n in names for scheme, suffix in _origin_forms(port)]
        allowed = [*own, *(o for o in (origin_of(c) for c in cors) if o not in own)]
        return cls(tuple(hosts), tuple(allowed), tuple(names))

    def allows_host(self, header: str | None) -> bool:
        return bool(header) and _matches(header or "", self.hosts)

    def allows_origin(self, header: str | None) -> bool:
        """No Origin (not a browser, or a same-origin GET) is allowed; `null` (a sandboxed or file
        page) is not."""
        return header is None or _matches(header, self.origins)

    def transport_security(self) -> TransportSecuritySettings:
        """The same list for the MCP SDK's Streamable HTTP transport at /mcp."""
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True, allowed_hosts=list(self.hosts), allowed_origins=list(self.origins)
        )


def _origin_forms(port: int | None) -> list[tuple[str, str]]:
    """(scheme, `:port` suffix) pairs a browser writes for this server's own origin: the default
    port of a scheme is left out of an Origin."""
    if port is None:
        return [(s, x) for s in ("http", "https") for x in ("", f":{ANY_PORT}")]
    defaults = {"http": 80, "https": 443}
    return [(s, "" if defaults[s] == port else f":{port}") for s in ("http", "https")]


def _matches(value: str, allowed: tuple[str, ...]) -> bool:
    """The SDK's rule (mcp.server.transport_security): an exact entry, or `base:*` for base:any port."""
    if value in allowed:
        return True
    return any(a.endswith(":*") and value.startswith(a[:-1]) and value[len(a) - 1 :].isdigit() for a in allowed)


def _machine_names() -> list[str]:
    """This machine's host name, for a wildcard bind (its LAN names and addresses come from --allow-host)."""
    try:
        name = socket.gethostname()
        return [host_name(name)]
    except (OSError, QuarryError):
        return []
