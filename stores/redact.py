"""Keep credentials out of everything Quarry writes.

API keys live only in the worker's environment. They should never reach a prompt, a result or a
span — but an endpoint's error message can echo a key, and a model can be talked into printing
whatever it was shown. So every writer (job store, trace files, logs, error strings) passes text
through `redact`, which replaces the value of every credential-looking environment variable.

A base URL can carry a credential too (`http://user:password@host/v1`, `…?api_key=…`). The model
code never puts one into what it writes (nodes.llm.endpoints keeps it in memory), and `redact`
also scrubs any URL's user-info and credential query values, and the password of every URL in
the environment, for a writer that is handed one anyway.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

# Environment variables whose values are secrets: *_API_KEY, *_TOKEN, *_SECRET, *_PASSWORD.
_SECRET_NAME = re.compile(r"(?:^|_)(?:API_?KEY|TOKEN|SECRET|PASSWORD|ACCESS_KEY)(?:$|_)", re.I)
# Bearer tokens, Basic credentials and provider-style keys that an error message may echo even
# when they did not come from this environment (e.g. a proxy's key, a base URL's user-info).
_KEY_SHAPES = re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_\-]{12,}|\bBearer\s+[A-Za-z0-9._\-]{12,}")
_BASIC = re.compile(r"\bBasic\s+[A-Za-z0-9+/]{8,}={0,2}")
# Query parameters that carry a credential: key, api_key, apikey, x-api-key, token,
# access_token, sig, signature, secret, client_secret, password, auth …
_CREDENTIAL_ENDINGS = ("key", "token", "secret", "password", "passwd", "pwd", "pass", "sig", "signature", "auth",
                       "credential", "credentials")  # fmt: skip
_CREDENTIAL_NAME = rf"(?:[a-z0-9_.\-]*[_.\-])?(?:api[_\-]?key|{'|'.join(_CREDENTIAL_ENDINGS)})"
# What a text must contain for the query scan to be worth running (a regex pass over a long text
# costs about as much as all the other redaction together).
_PARAM_MARKERS = tuple(f"{ending}=" for ending in _CREDENTIAL_ENDINGS)
_CREDENTIAL_PARAM = re.compile(_CREDENTIAL_NAME, re.I)
# The user-info of a URL inside free text (greedy up to its last '@' before the host; a literal
# start, so a long text without URLs is scanned fast).
_URL_USERINFO = re.compile(r"://[^/\s?#'\"<>]*@")
# A credential query parameter inside free text: its value.
_URL_PARAM = re.compile(rf"([?&;]{_CREDENTIAL_NAME})=[^&;#\s'\"<>]*", re.I)
MIN_SECRET_CHARS = 8
REDACTED = "(redacted)"


def is_credential_param(name: str) -> bool:
    """Whether a URL query parameter of this name carries a credential (`api_key`, `sig`, …)."""
    return bool(_CREDENTIAL_PARAM.fullmatch(name))


def url_credentials(url: str) -> list[str]:
    """The secrets a URL carries: its user-info's password (or a lone user name, which is how
    tokens ride in URLs) and its credential query values, decoded as a client would send them."""
    try:
        parts = urlsplit(url.strip())
        password, username = parts.password, parts.username
    except ValueError:
        return []
    found = [unquote(password)] if password else ([unquote(username)] if username else [])
    found += [value for name, value in parse_qsl(parts.query, keep_blank_values=True) if is_credential_param(name)]
    return [value for value in found if value]


def split_url(url: str) -> tuple[str, str | None, str | None, dict[str, str]]:
    """`(url without user-info and credential query parameters, user, password, those parameters)`:
    what may be shown and stored, and what a client needs in memory to authenticate."""
    parts = urlsplit(url.strip())
    user = unquote(parts.username) if parts.username is not None else None
    password = unquote(parts.password) if parts.password is not None else None
    netloc = parts.netloc.rsplit("@", 1)[-1]
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    secret = {name: value for name, value in pairs if is_credential_param(name)}
    kept = urlencode([(name, value) for name, value in pairs if not is_credential_param(name)])
    return urlunsplit((parts.scheme, netloc, parts.path, kept, parts.fragment)), user, password, secret


def shown_url(url: str) -> str:
    """`url` safe to store, trace, log and print: no user-info, credential query values redacted
    (a text that does not parse as a URL gets the generic scrub of `redact`)."""
    try:
        clean, _, _, secret = split_url(url)
    except ValueError:
        return _scrub_urls(url)
    if not secret:
        return clean
    parts = urlsplit(clean)
    query = "&".join(filter(None, [parts.query, *(f"{name}={REDACTED}" for name in secret)]))
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))


def _scrub_urls(text: str) -> str:
    if "@" in text:
        text = _URL_USERINFO.sub(f"://{REDACTED}@", text)
    if "=" in text and _may_hold_param(text):
        text = _URL_PARAM.sub(rf"\1={REDACTED}", text)
    return text


def _may_hold_param(text: str) -> bool:
    low = text.lower()
    return any(marker in low for marker in _PARAM_MARKERS)


def secret_values(env: Mapping[str, str] | None = None) -> list[str]:
    """The values of credential-looking variables, and the credentials inside any URL-valued
    variable (OPENAI_BASE_URL=http://user:password@host/v1), longest first (so overlaps redact
    fully)."""
    env = os.environ if env is None else env
    values: set[str] = set()
    for name, value in env.items():  # one pass: os.environ decodes every item it yields
        if _SECRET_NAME.search(name):
            values.add(value)
        elif "://" in value:
            values.update(url_credentials(value))
    return sorted((v for v in values if len(v) >= MIN_SECRET_CHARS), key=len, reverse=True)


def redact(text: str, env: Mapping[str, str] | None = None) -> str:
    """`text` with every secret value, key-shaped token, URL user-info and credential query value
    replaced by REDACTED."""
    if not text:
        return text
    for value in secret_values(env):
        if value in text:
            text = text.replace(value, REDACTED)
    text = _KEY_SHAPES.sub(REDACTED, text)
    if "Basic" in text:
        text = _BASIC.sub(REDACTED, text)
    return _scrub_urls(text)
