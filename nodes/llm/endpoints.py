"""Where a provider's calls go, split into what may be written down and what stays in memory.

A user may put a credential in a base URL (`OPENAI_BASE_URL=http://user:password@proxy/v1`, a
gateway's `?api_key=…`). Handed to a client as it is, that URL ends up in the client's attributes,
its debug logs and every error message that names the endpoint — and from there in the job store,
the traces, the worker's log and Temporal's history. So the URL is read from the worker's own
environment when a model is built, and split: the `url` without user-info or credential query
parameters is the only one a client, a message or a span ever sees; the user-info becomes the
Basic `Authorization` header a client would have derived from it, and the credential parameters
the client's default query — both only in memory.
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from stores.redact import shown_url, split_url

# Per provider: the environment variables of its base URL, in the order its LangChain client
# reads them (the first one set wins), and the address used when none is.
BASE_URL_ENV: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_BASE", "OPENAI_BASE_URL"),
    "anthropic": ("ANTHROPIC_API_URL", "ANTHROPIC_BASE_URL"),
    "ollama": ("OLLAMA_HOST",),
}
OLLAMA_PORT = 11434
DEFAULT_URL = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
    "ollama": f"http://127.0.0.1:{OLLAMA_PORT}",
}


@dataclass(frozen=True)
class Endpoint:
    """A provider's base URL: `url` is safe to pass, store, trace and print; `headers` and `query`
    are the credentials it carried (never in its repr). `configured`: set by the environment, not
    the provider's default."""

    url: str
    configured: bool = False
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    query: dict[str, str] = field(default_factory=dict, repr=False)


def resolve(provider: str) -> Endpoint:
    """The endpoint of `provider` as this process's environment sets it, credentials split off."""
    raw = next((v for name in BASE_URL_ENV[provider] if (v := os.environ.get(name, "").strip())), "")
    if not raw:
        return Endpoint(DEFAULT_URL[provider])
    try:
        url, user, password, query = split_url(raw if "://" in raw else f"http://{raw}")
        if "://" not in raw and provider == "ollama":  # OLLAMA_HOST may be host[:port], as Ollama reads it
            parts = urlsplit(url)
            url = url if parts.port else urlunsplit(parts._replace(netloc=f"{parts.netloc}:{OLLAMA_PORT}"))
        elif "://" not in raw:  # not a URL: check_endpoint refuses it, without what it carried
            url = url.removeprefix("http://")
    except ValueError:  # not a URL at all: nothing to split off; check_endpoint names it
        return Endpoint(shown_url(raw), configured=True)
    headers = {}
    if user is not None or password is not None:
        token = base64.b64encode(f"{user or ''}:{password or ''}".encode()).decode()
        headers["Authorization"] = f"Basic {token}"
    return Endpoint(url, configured=True, headers=headers, query=query)
