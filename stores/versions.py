"""The versions of one collection: which are committed, which may go, and what a writer tidies.

A version folder (`versions/<id>/`) is committed once `CURRENT` has named it; the writer then
leaves a `.committed` marker in it (with the time). A folder with neither was renamed into place
by an ingest killed before its switch: it was never visible, so it is removed and never counts
toward the versions kept. Collections written before markers existed have none at all; all their
folders then count as committed.

Pruning keeps the newest `keep` committed versions, the current one, and every version a running
job may read: the one its checkpoint names (`collection_version`), or — for a job that has not
checkpointed yet — every version that was current at some moment since the job was created. The
job store says which jobs run (`stores.jobs.running_pins`); if it cannot be read nothing is pruned.
Work that runs outside the job store — a durable dense build writing into its version — pins that
version with a file of its own (`pin_version`, `collections/<name>/pins/<holder>.json`), refreshes
it as it goes and removes it when it ends (`unpin`). A pin outlives its holder only when the holder
is killed beyond recovery (its workflow terminated, the server's database gone); it then stops
counting once it has not been refreshed for as long as a running job's row counts
(`stores.jobs.RUNNING_HORIZON_SECONDS`), and the next prune removes its file.

Writers (they hold the collection's writer lock, `stores.locks`, so any other writer is gone)
also remove `.staging-*` folders left by killed ingests and move a dense index kept in the
collection's root by older Quarry versions into the version it was built for.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import time
import warnings
from pathlib import Path

from stores.atomic import write_atomic
from stores.errors import QuarryError
from stores.home import VERSIONS_DIR, CollectionPaths, current_version
from stores.jobs import RUNNING_HORIZON_SECONDS, running_pins
from stores.locks import writer_lock

MARKER = ".committed"
STAGING_PREFIX = ".staging-"
PINS_DIR = "pins"
_HOLDER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$")  # a pin's file name: a workflow id such as dense-…


def _pin_file(root: Path, holder: str) -> Path:
    if not _HOLDER.fullmatch(holder) or ".." in holder:
        raise ValueError(f"not a pin holder's name: {holder!r}")
    return root / PINS_DIR / f"{holder}.json"


def pin_version(root: Path, holder: str, version: str) -> None:
    """Pin `version` of the collection at `root` for `holder` (or refresh its pin): no writer
    prunes it until `unpin` (or until the pin goes stale, see the module doc). A new pin is
    written under the writer lock, so no prune under way can miss it (a busy collection is
    `collection_busy`); a refresh needs no lock (prunes see the pin already). Raises QuarryError
    `version_gone` when the version is no longer there to pin (pruned already)."""
    pin = _pin_file(root, holder)
    if pin.is_file():
        _write_pin(root, pin, version)
        return
    with writer_lock(root, root.name):
        _write_pin(root, pin, version)


def _write_pin(root: Path, pin: Path, version: str) -> None:
    pin.parent.mkdir(mode=0o700, exist_ok=True)
    write_atomic(pin, json.dumps({"version": version, "refreshed": time.time()}) + "\n")
    if not (root / VERSIONS_DIR / version).is_dir():
        pin.unlink(missing_ok=True)
        raise QuarryError(
            "version_gone",
            f"version {version} of collection {root.name!r} is gone (pruned or replaced)",
            f"build the dense index of the current version: quarry index {root.name} --dense",
        )


def unpin(root: Path, holder: str) -> None:
    """Release `holder`'s pin (nothing happens when it holds none)."""
    _pin_file(root, holder).unlink(missing_ok=True)


def held_pins(root: Path, *, now: float | None = None, drop_stale: bool = False) -> dict[str, str]:
    """{holder: version} of the pins that count; with `drop_stale` (a writer, under the lock)
    the files of stale or unreadable pins are removed."""
    folder = root / PINS_DIR
    if not folder.is_dir():
        return {}
    since = (time.time() if now is None else now) - RUNNING_HORIZON_SECONDS
    out = {}
    for pin in folder.glob("*.json"):
        try:
            data = json.loads(pin.read_text(encoding="utf-8"))
            version, refreshed = str(data["version"]), float(data["refreshed"])
        except FileNotFoundError:
            continue  # released meanwhile
        except (OSError, ValueError, KeyError, TypeError):
            version, refreshed = "", 0.0  # a torn write cannot happen (write_atomic): a foreign file
        if version and refreshed >= since:
            out[pin.stem] = version
        elif drop_stale:
            pin.unlink(missing_ok=True)
    return out


def _folders(root: Path) -> list[Path]:
    versions = root / VERSIONS_DIR
    if not versions.is_dir():
        return []
    return sorted((p for p in versions.iterdir() if p.is_dir() and not p.name.startswith(".")), key=lambda p: p.name)


def mark_committed(root: Path, version: str) -> None:
    """Record that `CURRENT` named `version` (called right after the switch). The first marker
    in a collection from before markers first marks every folder it has (they all counted as
    committed until then), so none of them is taken for a killed ingest's afterwards."""
    others = [p for p in _folders(root) if p.name != version]
    if others and not any((p / MARKER).is_file() for p in others):
        for p in others:
            write_atomic(p / MARKER, f"{_written(p):.6f}\n")
    write_atomic(root / VERSIONS_DIR / version / MARKER, f"{time.time():.6f}\n")


def commit_times(root: Path) -> dict[str, float]:
    """Committed versions (oldest first) with when they became current: marked ones, the current
    one (its writer may have been killed after the switch, before the marker), or — for a
    collection from before markers — every version folder (its folder's time)."""
    folders = _folders(root)
    current = current_version(root)
    legacy = not any((p / MARKER).is_file() for p in folders)
    out: dict[str, float] = {}
    for p in folders:
        marker = p / MARKER
        if marker.is_file():
            try:
                out[p.name] = float(marker.read_text().strip())
                continue
            except (OSError, ValueError):
                pass
        if marker.is_file() or legacy or p.name == current:
            out[p.name] = _written(p)
    return out


def _written(folder: Path) -> float:
    """When an unmarked version was written: its corpus file's time (the folder's own changes
    when a reader adds its chunk-vector cache)."""
    corpus = folder / "corpus.sqlite"
    return (corpus if corpus.is_file() else folder).stat().st_mtime


def _dense_server_collection(folder: Path) -> tuple[str, str] | None:
    """("host:port", collection) of a version whose dense index lives on a Chroma server."""
    try:
        meta = json.loads((folder / "chroma" / "dense.json").read_text())
    except (OSError, ValueError):
        return None
    return (meta["server"], meta["collection"]) if meta.get("server") and meta.get("collection") else None


def _drop_server(label: str, collection: str) -> None:
    from stores.chroma_build import _drop_server_collection  # chromadb loads only for a server-backed index

    host, _, port = label.rpartition(":")
    _drop_server_collection((host, int(port)), collection)


def prune(paths: CollectionPaths, name: str, home: Path, keep: int) -> list[str]:
    """Remove uncommitted version folders and committed ones nobody may read; return the removed.
    The caller holds the writer lock."""
    root = paths.root
    committed = commit_times(root)
    removed = []
    for p in _folders(root):
        if p.name not in committed:  # renamed into place by a writer killed before its switch
            shutil.rmtree(p, ignore_errors=True)
            removed.append(p.name)
    try:
        pins = running_pins(home / "jobs.sqlite", name)
    except sqlite3.Error as exc:
        warnings.warn(
            f"old versions of {name!r} kept: the job store could not be read ({exc})", RuntimeWarning, stacklevel=2
        )
        return removed
    order = sorted(committed)  # ids start with their creation time
    current = current_version(root)
    held = set(held_pins(root, drop_stale=True).values())
    kept = set(order[-keep:]) | ({current} if current else set()) | {v for v, _ in pins if v} | held
    for _, created in (p for p in pins if p[0] is None):
        # Unknown pin: every version current at some moment since the job was created.
        for i, version in enumerate(order):
            if i + 1 == len(order) or committed[order[i + 1]] >= created:
                kept.add(version)
    doomed = [v for v in order if v not in kept]
    servers = {_dense_server_collection(root / VERSIONS_DIR / v) for v in kept} - {None}
    for version in doomed:
        folder = root / VERSIONS_DIR / version
        server = _dense_server_collection(folder)
        shutil.rmtree(folder, ignore_errors=True)
        if server and server not in servers:
            _drop_server(*server)
        removed.append(version)
    return removed


def tidy(paths: CollectionPaths) -> list[str]:
    """What a writer does first: remove staging folders of writers that are gone (the caller
    holds the lock, so every other writer is), and move a root-level dense index of an older
    Quarry into the version built from the same corpus. Returns the staging folders removed."""
    root = paths.root
    gone = []
    if root.is_dir():
        for p in root.iterdir():
            if p.name.startswith(STAGING_PREFIX) and p.is_dir():
                shutil.rmtree(p, ignore_errors=True)
                gone.append(p.name)
    adopt_legacy_dense(paths)
    return gone


def adopt_legacy_dense(paths: CollectionPaths) -> None:
    """Move `collections/<name>/chroma` (the layout before per-version dense indexes) into the
    committed version whose corpus it was built from, or drop it if no kept version has that
    corpus (it was stale for all of them). A collection from before versions keeps its root
    files until its first versioned commit (`stores.collection_versions.commit_version` removes them)."""
    from stores.lucene import restore_interrupted_swap

    legacy = paths.legacy_chroma_dir
    if not (root_versions := commit_times(paths.root)):
        return
    restore_interrupted_swap(legacy)
    if not legacy.is_dir():
        return
    try:
        fingerprint = json.loads((legacy / "dense.json").read_text())["fingerprint"]
    except (OSError, ValueError, KeyError, TypeError):
        fingerprint = None
    for version in sorted(root_versions, reverse=True):
        folder = paths.root / VERSIONS_DIR / version
        if fingerprint and not (folder / "chroma").exists() and _fingerprint(folder) == fingerprint:
            legacy.rename(folder / "chroma")
            return
    shutil.rmtree(legacy, ignore_errors=True)


def _fingerprint(folder: Path) -> str | None:
    db = folder / "corpus.sqlite"
    if not db.is_file():
        return None
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
        try:
            row = con.execute("SELECT value FROM meta WHERE key='fingerprint'").fetchone()
        finally:
            con.close()
    except sqlite3.Error:
        return None
    return row[0] if row else None


__all__ = [
    "MARKER",
    "PINS_DIR",
    "STAGING_PREFIX",
    "adopt_legacy_dense",
    "commit_times",
    "held_pins",
    "mark_committed",
    "pin_version",
    "prune",
    "tidy",
    "unpin",
]
