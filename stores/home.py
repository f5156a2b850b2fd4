"""Where Quarry keeps its data: one `QUARRY_HOME` folder (default `./.quarry`).

Collection names become folder names, so they are validated here and nowhere else: a name can
never point outside `QUARRY_HOME`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from stores import settings
from stores.errors import QuarryError

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"  # a collection's name (check_name also refuses "..")
_NAME = re.compile(NAME_PATTERN)


def quarry_home(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The home folder: the explicit argument, else `$QUARRY_HOME`, else `./.quarry`."""
    raw = explicit or settings.home()
    return Path(raw).expanduser().resolve()


# What only a Quarry home holds: an existing folder with one of these (or an empty one) is ours to tighten.
_HOME_MARKERS = ("jobs.sqlite", "collections", "run", "temporal.db", "traces", "logs")


def traces_dir(home: Path) -> Path:
    """Where JSONL trace files live: `QUARRY_HOME/traces/<trace_id>.jsonl` (here, not in
    observability, so a command that only names a job's trace file does not load OpenTelemetry)."""
    return Path(home) / "traces"


def ensure_home(home: Path | None = None) -> Path:
    """The home folder, private to its owner: created 0700 when missing; an existing Quarry home
    (empty, or holding Quarry's files) that this user owns and that others can read is tightened
    to 0700 — the job store, the Temporal database, traces and logs hold intents and documents.
    A folder that is not this user's, or is not a Quarry home, is left as it is."""
    import stat

    home = Path(home) if home is not None else quarry_home()
    try:
        home.mkdir(mode=0o700, parents=True)
        home.chmod(0o700)  # mkdir's mode is filtered by the umask
        return home
    except FileExistsError:
        pass
    try:
        info = home.stat()
        if (
            stat.S_ISDIR(info.st_mode)
            and info.st_uid == os.geteuid()
            and info.st_mode & 0o077
            and (not any(home.iterdir()) or any((home / m).exists() for m in _HOME_MARKERS))
        ):
            home.chmod(stat.S_IMODE(info.st_mode) & 0o700)
    except OSError:
        pass  # a home we cannot inspect or change: the command that needs it reports that
    return home


def check_name(name: str) -> str:
    """Return `name` if it is a safe collection name, else raise a repairable error."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or ".." in name:
        raise QuarryError(
            "bad_name",
            f"invalid collection name {name!r}",
            "use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit",
        )
    return name


CURRENT_FILE = "CURRENT"
VERSIONS_DIR = "versions"


@dataclass(frozen=True, slots=True)
class CollectionPaths:
    """The files of one collection under `QUARRY_HOME/collections/<name>/`.

    Each ingest writes a complete new version (corpus store + Lucene index) under
    `versions/<id>/` and then points `CURRENT` at it with one atomic rename, so a reader opens
    either the old version or the new one, never a mix, and files it has open are never replaced
    under it. `version` is the id these paths are for (None: a collection written before
    versions, whose files sit in the root). The dense index belongs to its version
    (`versions/<id>/chroma/`), so a job pinned to a version only ever reads that version's
    vectors; collections written before that kept it in the root (`legacy_chroma_dir`), which is
    still read and is moved into its version on the next write (`stores.versions`). Evaluation
    runs live beside the versions.
    """

    root: Path
    version: str | None = None

    @property
    def version_dir(self) -> Path:
        return self.root / VERSIONS_DIR / self.version if self.version else self.root

    @property
    def corpus_db(self) -> Path:
        return self.version_dir / "corpus.sqlite"

    @property
    def lucene_dir(self) -> Path:
        return self.version_dir / "lucene"

    @property
    def chunk_vectors_db(self) -> Path:
        """Chunk vectors embedded on demand for this version (stores.chunk_vectors)."""
        return self.version_dir / "chunk-vectors.sqlite"

    @property
    def chroma_dir(self) -> Path:
        """The dense index of this version (written here; see `legacy_chroma_dir` for reading)."""
        return self.version_dir / "chroma"

    @property
    def legacy_chroma_dir(self) -> Path:
        """Where collections written before per-version dense indexes kept theirs."""
        return self.root / "chroma"

    @property
    def runs_dir(self) -> Path:
        return self.root / "runs"


def current_version(root: Path) -> str | None:
    """The version `CURRENT` names, or None for a collection without versions (or none yet)."""
    try:
        version = (root / CURRENT_FILE).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return version if version and (root / VERSIONS_DIR / version).is_dir() else None


def collection_paths(name: str, home: Path | None = None, version: str | None = None) -> CollectionPaths:
    """Paths of collection `name` at `version` (default: the current one), if that version still exists."""
    root = (home or quarry_home()) / "collections" / check_name(name)
    if version is not None and (root / VERSIONS_DIR / version).is_dir():
        return CollectionPaths(root, version)
    return CollectionPaths(root, current_version(root))


def list_collections(home: Path | None = None) -> list[str]:
    base = (home or quarry_home()) / "collections"
    if not base.is_dir():
        return []
    return sorted(
        p.name
        for p in base.iterdir()
        if _NAME.fullmatch(p.name) and ".." not in p.name and collection_paths(p.name, home).corpus_db.is_file()
    )
