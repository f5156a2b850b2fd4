"""What `quarry add` reads: the records of the sources given, with ids by the folder-ingest rule,
and the check that an added file never silently replaces a different file's document.

Ids: a file inside `root` (the `--root` folder given, else the folder the collection was ingested
from) gets the id a folder ingest of `root` gives it — its path under `root` without the suffix;
any other source is read like a folder ingest of itself (a folder: paths under it; a single file:
its name). Two different files can therefore arrive at one id (`a/README.md` and `b/README.md`
added one after the other are both `README`): each document file's record carries the absolute
path it was read from (`extras["source_path"]`, `stores.file_formats.corpus_reader.SOURCE_PATH`), and an added file
whose id belongs to a document read from another path is refused with both paths named —
replacing it needs `--root` (ids that keep folder names) or a `quarry remove` first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from stores.corpus import CorpusStore
from stores.errors import IngestError, QuarryError
from stores.file_formats.corpus_reader import SOURCE_PATH, ProgressFn, printable_path, read_corpus
from stores.records import DocRecord


@dataclass
class Additions:
    """The records to add and what was left out, by reason."""

    records: list[DocRecord] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def source_root(corpus: CorpusStore) -> Path | None:
    """The folder a collection was ingested from, when it was a folder of document files."""
    meta = corpus.meta()
    return Path(meta["source"]) if meta.get("kind") == "folder" and meta.get("source") else None


def read_additions(
    sources: list[str | Path],
    corpus: CorpusStore,
    *,
    root: Path | None = None,
    strict: bool = False,
    progress: ProgressFn | None = None,
) -> Additions:
    """Read `sources` for `add` (ids: see the module docstring); a source outside an explicit
    `root` is an error, bad files are skipped (or, under `strict`, reject everything)."""
    explicit = root is not None
    base = (root.expanduser().resolve() if root is not None else None) or source_root(corpus)
    base = base.resolve() if base is not None else None
    if explicit and (base is None or not base.is_dir()):
        raise QuarryError(
            "bad_root",
            f"--root {printable_path(root or '')} is not a folder",
            "give the folder that ids are relative to (e.g. the folder you ingested)",
        )
    out, problems = Additions(), []
    seen: dict[str, Path] = {}
    for source in sources:
        path = Path(source).expanduser().absolute()
        inside = base is not None and path.resolve().is_relative_to(base)
        if explicit and not inside:
            raise QuarryError(
                "outside_root",
                f"{printable_path(path)} is not inside --root {printable_path(base or '')}",
                "give files under that folder, or another --root",
            )
        try:
            # Inside the root, the resolved path gives the folder-ingest id; elsewhere the path is
            # read as typed, so a link given on the command line is judged as a link.
            src = read_corpus(
                path.resolve() if inside else path, progress, strict=strict, docid_root=base if inside else None
            )
        except IngestError as exc:
            if strict or (len(sources) == 1 and not path.is_file()):
                raise
            out.skipped += [p for p in exc.problems if "no readable documents found" not in p] or exc.problems
            continue
        out.skipped += src.skipped
        out.unsupported += src.unsupported
        out.warnings += src.warnings
        for rec in src.records:
            if rec.docid in seen:
                problems.append(
                    f"{printable_path(path)}: duplicate document id {rec.docid!r} "
                    f"(also given by {printable_path(seen[rec.docid])})"
                )
                continue
            seen[rec.docid] = path
            out.records.append(rec)
    if problems and strict:
        raise IngestError(problems)
    out.skipped += problems
    return out


def refuse_replacing_other_files(records: list[DocRecord], corpus: CorpusStore, *, root_given: bool = False) -> None:
    """Raise when an added file's id is the id of a document read from a different file: an
    update must come from the same file, never from another one that happens to share its name."""
    ids = [r.docid for r in records if r.extras.get(SOURCE_PATH)]
    stored = corpus.get_many(ids) if ids else {}
    clashes = []
    for rec in records:
        old = stored.get(rec.docid)
        new_path, old_path = rec.extras.get(SOURCE_PATH), old.extras.get(SOURCE_PATH) if old else None
        if new_path and old_path and new_path != old_path:
            clashes.append(
                f"{printable_path(new_path)}: id {rec.docid!r} is already the id of {printable_path(old_path)}"
            )
    if clashes:
        raise QuarryError(
            "id_collision",
            "these files would replace documents read from other files; "
            "nothing was changed:\n" + "\n".join(f"  {c}" for c in clashes[:50]),
            (
                "choose a --root that keeps the folders that tell them apart in their ids, "
                if root_given
                else "add with --root FOLDER so ids keep their folder names (a/README, b/README), "
            )
            + "or quarry remove the old document first",
        )
