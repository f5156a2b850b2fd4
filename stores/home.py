"""Where Quarry keeps its data: one `QUARRY_HOME` folder (default `./.quarry`).

Collection names become folder names, so they are validated here and nowhere else: a name can
never point outside `QUARRY_HOME`.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from stores.errors import QuarryError

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def quarry_home(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The home folder: the explicit argument, else `$QUARRY_HOME`, else `./.quarry`."""
    raw = explicit or os.environ.get("QUARRY_HOME") or ".quarry"
    return Path(raw).expanduser().resolve()


def check_name(name: str) -> str:
    """Return `name` if it is a safe collection name, else raise a repairable error."""
    if not isinstance(name, str) or not _NAME.match(name) or ".." in name:
        raise QuarryError(
            "bad_name",
            f"invalid collection name {name!r}",
            "use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit",
        )
    return name


@dataclass(frozen=True, slots=True)
class CollectionPaths:
    """The files of one collection under `QUARRY_HOME/collections/<name>/`."""

    root: Path

    @property
    def corpus_db(self) -> Path:
        return self.root / "corpus.sqlite"

    @property
    def lucene_dir(self) -> Path:
        return self.root / "lucene"

    @property
    def chroma_dir(self) -> Path:
        return self.root / "chroma"

    @property
    def runs_dir(self) -> Path:
        return self.root / "runs"


def collection_paths(name: str, home: Path | None = None) -> CollectionPaths:
    return CollectionPaths((home or quarry_home()) / "collections" / check_name(name))


def list_collections(home: Path | None = None) -> list[str]:
    base = (home or quarry_home()) / "collections"
    if not base.is_dir():
        return []
    return sorted(p.name for p in base.iterdir() if (p / "corpus.sqlite").is_file())
