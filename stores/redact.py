"""Keep credentials out of everything Quarry writes.

API keys live only in the worker's environment. They should never reach a prompt, a result or a
span — but an endpoint's error message can echo a key, and a model can be talked into printing
whatever it was shown. So every writer (job store, trace files, logs, error strings) passes text
through `redact`, which replaces the value of every credential-looking environment variable.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

# Environment variables whose values are secrets: *_API_KEY, *_TOKEN, *_SECRET, *_PASSWORD.
_SECRET_NAME = re.compile(r"(?:^|_)(?:API_?KEY|TOKEN|SECRET|PASSWORD|ACCESS_KEY)(?:$|_)", re.I)
# Bearer tokens and provider-style keys that an error message may echo even when they did not
# come from this environment (e.g. a proxy's key).
_KEY_SHAPES = re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_\-]{12,}|\bBearer\s+[A-Za-z0-9._\-]{12,}")
MIN_SECRET_CHARS = 8
REDACTED = "(redacted)"


def secret_values(env: Mapping[str, str] | None = None) -> list[str]:
    """The values of credential-looking variables, longest first (so overlaps redact fully)."""
    env = os.environ if env is None else env
    values = {v for k, v in env.items() if _SECRET_NAME.search(k) and v and len(v) >= MIN_SECRET_CHARS}
    return sorted(values, key=len, reverse=True)


def redact(text: str, env: Mapping[str, str] | None = None) -> str:
    """`text` with every secret value and key-shaped token replaced by REDACTED."""
    if not text:
        return text
    for value in secret_values(env):
        if value in text:
            text = text.replace(value, REDACTED)
    return _KEY_SHAPES.sub(REDACTED, text)
