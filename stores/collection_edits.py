"""Adding and removing documents of an existing collection (`quarry add`, `quarry remove`).

Unlike an ingest, which makes a whole source the collection's content, these change only the
documents named: `add` reads files, folders or JSONL files (`stores.additions`) and adds or
updates their documents, `remove` drops documents by id; every other document stays as it is.
Both compare by content hash (`stores.incremental`) and apply the difference as a new version
with the same all-or-nothing staging as an ingest (`stores.collection.apply_delta`), under the
collection's writer lock; they live apart from `stores.collection` because they start from the
stored collection rather than from a source.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from stores.additions import read_additions, refuse_replacing_other_files
from stores.collection import Collection, IngestReport, apply_delta
from stores.collection_versions import index_meta
from stores.errors import QuarryError
from stores.file_formats.corpus_reader import ProgressFn
from stores.incremental import Delta, delta_fingerprint, diff, removal
from stores.locks import writer_lock
from stores.lucene import IndexMeta
from stores.versions import tidy


def add(
    name: str,
    sources: list[str | Path],
    *,
    home: Path | None = None,
    root: Path | None = None,
    strict: bool = False,
    progress: ProgressFn | None = None,
) -> IngestReport:
    """Add or update documents from files, folders or JSONL files, leaving the others untouched.

    Ids follow the folder-ingest rule relative to `root` (default: the folder the collection was
    ingested from, for files inside it); a file whose id is another file's document is refused
    (`stores.additions`)."""
    col = Collection(name, home)
    found = read_additions(sources, col.corpus, root=root, strict=strict, progress=progress)
    records, skipped, unsupported, warnings = found.records, found.skipped, found.unsupported, found.warnings
    with writer_lock(col.paths.root, name):
        col = Collection(name, home)
        tidy(col.paths)
        previous, has_index = index_meta(col.paths)
        refuse_replacing_other_files(records, col.corpus, root_given=root is not None)
        delta = diff(col.corpus.hashes(), records, remove_missing=False)
        report = IngestReport(
            name,
            col.corpus.count() + delta.added,
            0,
            0,
            [],
            unchanged=delta.empty,
            indexed=has_index,
            warnings=warnings,
            added=delta.added,
            updated=delta.updated,
            kept=col.corpus.count() - delta.updated,
            skipped=tuple(skipped),
            unsupported=tuple(unsupported),
        )
        if delta.empty:
            return report
        embedded, notes = _apply(col, name, delta, previous, has_index, progress)
    return replace(report, embedded=embedded, warnings=[*report.warnings, *notes])


def remove(
    name: str, docids: list[str], *, home: Path | None = None, progress: ProgressFn | None = None
) -> IngestReport:
    """Remove documents (and their citations, chunks and vectors); every docid must exist."""
    col = Collection(name, home)
    with writer_lock(col.paths.root, name):
        col = Collection(name, home)
        tidy(col.paths)
        hashes = col.corpus.hashes()
        unknown = [d for d in dict.fromkeys(docids) if d not in hashes]
        if unknown:
            raise QuarryError(
                "unknown_document",
                f"collection {name!r} has no document "
                + ", ".join(repr(d) for d in unknown[:10])
                + "; nothing was removed",
                f"check the ids: quarry read {name} DOCID shows a document by its id",
            )
        previous, has_index = index_meta(col.paths)
        delta = removal(hashes, docids)
        embedded, notes = _apply(col, name, delta, previous, has_index, progress)
    return IngestReport(
        name,
        delta.kept,
        0,
        0,
        [],
        unchanged=False,
        indexed=has_index,
        warnings=notes,
        removed=len(delta.removed),
        kept=delta.kept,
        embedded=embedded,
    )


def _apply(
    col: Collection, name: str, delta: Delta, previous: IndexMeta | None, has_index: bool, progress: ProgressFn | None
) -> tuple[int | None, list[str]]:
    """An edit's delta as the collection's next version, its BM25 settings carried over."""
    old_fp = col.corpus.fingerprint
    return apply_delta(
        col.paths,
        name,
        delta,
        old_fp,
        delta_fingerprint(old_fp, delta),
        src=None,
        build_lucene=has_index,
        k1=None,
        b=None,
        previous=previous,
        progress=progress,
    )
