"""The trained verifier shipped with Quarry: a small JSON file of linear weights.

Written by `python -m tuning.train_ranker --home H --write` (trained on the team's judged
collections); read here so that nodes never open files. Absent or unreadable means the
heuristic order stands (nodes.ranking.ranker).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

VERIFIER_FILE = Path(__file__).resolve().parent / "data" / "verifier.json"


def load_verifier_file(path: Path = VERIFIER_FILE) -> dict[str, Any] | None:
    """The verifier's JSON with a `sha256` of the file added (its version in results), or None."""
    try:
        raw = path.read_bytes()
        data = json.loads(raw)
    except (OSError, ValueError):
        return None
    return data | {"sha256": hashlib.sha256(raw).hexdigest()[:16]} if isinstance(data, dict) else None
