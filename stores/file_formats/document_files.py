"""Document files and folders (PDF, HTML, Markdown, … read through `stores.file_formats.dispatch`)
as records, with the safety rules for what may be opened: `unsafe_reason` (links out of the folder,
FIFOs, devices, /proc and /sys are never opened) and `printable_path` (names shown with undecodable
bytes and control characters escaped).

Split from `stores.file_formats.corpus_reader` because these rules are about the file system, not
record validation (`stores.file_formats.jsonl_corpus`); see `stores.file_formats.corpus_reader` for
what a folder read skips and why.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from pathlib import Path

from stores.file_formats.dispatch import Unreadable, format_suffix, is_supported, read_file
from stores.file_formats.file_ids import base_docid, file_docids
from stores.file_formats.jsonl_corpus import (
    BEIR_FILES,
    QRELS_DIR,
    CorpusSource,
    EmptyRecord,
    Problems,
    ProgressFn,
    RecordStream,
    record_from_json,
)
from stores.records import DocRecord, record_json
from stores.scratch import held_scratch


def file_docid(path: Path, root: Path) -> str:
    """A document file's id: its path under `root` without the format suffix, whitespace as "_"
    (`notes/a b.md` under `notes` → `a_b`; `README.Debian` keeps its name: `.Debian` is no format);
    files that would share one are told apart when read (`stores.file_formats.file_ids`)."""
    return base_docid(path, root, format_suffix)


# The absolute path a document file was read from, kept in its record's extras: `quarry add` tells
# an update of the same file from a different file that arrives at the same id (stores.additions),
# and exports give local files their file:// URL.
SOURCE_PATH = "source_path"


def _file_record(path: Path, docid: str) -> DocRecord:
    """One file as a validated record; raises ValueError (Unreadable, EmptyRecord) with the reason."""
    doc = read_file(path)
    metadata = {**doc.metadata, SOURCE_PATH: str(path.absolute())}
    try:
        rec = record_from_json({"_id": docid, "title": doc.title, "text": doc.text, "metadata": metadata})
    except EmptyRecord:
        raise Unreadable("empty file (nothing to search)") from None
    if doc.page_starts:
        assert rec.text == doc.text, "page offsets must index the stored text"
        rec = rec.model_copy(update={"page_starts": doc.page_starts})
    return rec


def _hidden(path: Path, root: Path) -> bool:
    return any(part.startswith(".") for part in path.relative_to(root).parts)


HIDDEN_NAMED = 5  # how many hidden entries the warning names; the rest are counted


def _hidden_names(hidden: list[Path], root: Path) -> str:
    """The hidden entries, named so the user can tell a stray `.env` from `.git/`: each hidden
    folder once, with how many files it holds (`.git/ (140 files)`), each hidden file by its
    path in the folder; up to HIDDEN_NAMED, then "… and N more"."""
    groups: dict[str, int] = {}
    for p in hidden:
        parts = p.relative_to(root).parts
        first = next(i for i, part in enumerate(parts) if part.startswith("."))
        key = "/".join(parts[: first + 1]) + ("/" if first < len(parts) - 1 else "")
        groups[key] = groups.get(key, 0) + 1
    named = [
        printable_path(k) + (f" ({n} files)" if k.endswith("/") and n > 1 else "")
        for k, n in list(groups.items())[:HIDDEN_NAMED]
    ]
    more = len(groups) - len(named)
    return ", ".join(named) + (f" … and {more} more" if more else "")


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_SYSTEM_DIRS = (Path("/proc"), Path("/sys"))  # what /dev holds is refused as not regular files
_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def printable_path(path: str | Path) -> str:
    """A path as text that can be printed, stored and serialised: bytes that are not UTF-8 (which
    Python carries as lone surrogates, and JSON, SQLite and Pydantic refuse) and control
    characters written as backslash escapes (`caf\\xe9.txt`)."""
    text = os.fsencode(path).decode("utf-8", "backslashreplace")
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def unsafe_reason(path: Path, within: Path | None = None) -> str | None:
    """Why `path` must not be opened (None: it may be). `within` is the resolved folder a walk
    started from: what resolves outside it (a link to /proc/self/environ, to /etc/passwd) is
    not read. Checked without opening anything: opening a FIFO blocks until a writer comes."""
    try:
        real = path.resolve(strict=True)
        mode = path.stat().st_mode
    except FileNotFoundError:
        return "broken link (its target does not exist)" if path.is_symlink() else "vanished while it was being read"
    except (OSError, RuntimeError) as exc:  # a link loop is RuntimeError before Python 3.13
        return f"cannot be read ({getattr(exc, 'strerror', None) or exc})"
    if within is not None and not real.is_relative_to(within):
        return f"link to {printable_path(real)}, outside the folder being read: not followed"
    if any(real.is_relative_to(d) for d in _SYSTEM_DIRS):
        return f"system file {printable_path(real)}: not read"
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _KINDS if test(mode)), "a special file")
        return f"not a regular file ({kind})"
    return None


def unsafe_dataset_files(folder: Path) -> list[str]:
    """`path: reason` for each file of a BEIR folder that must not be opened — the rule a folder
    of documents follows (`unsafe_reason` within the folder), so a `corpus.jsonl` or
    `qrels/test.tsv` linked to /proc/self/environ or /etc/passwd is never read into the corpus,
    its queries or its judgements; a link that stays inside the folder is followed. Checked
    before any of them is opened (`BEIR_FILES`, and `qrels/*.tsv` wherever `qrels` leads)."""
    within = folder.resolve()
    qrels = folder / QRELS_DIR
    entries = [folder / name for name in BEIR_FILES] + (sorted(qrels.glob("*.tsv")) if qrels.is_dir() else [])
    found = [p for p in entries if p.exists() or p.is_symlink()]
    return [f"{printable_path(p)}: {reason}" for p in found if (reason := unsafe_reason(p, within)) is not None]


def read_files(
    files: list[Path],
    root: Path,
    src: CorpusSource,
    problems: Problems,
    progress: ProgressFn | None,
    within: Path | None,
    home: Path,
) -> None:
    """Read document files (ids relative to `root`) into a spooled RecordStream; a bad file
    becomes a problem `path: reason`. `within`: see `unsafe_reason`. The spool holds the user's
    text, so it lives in `home`'s scratch area (`stores.scratch`), never the system's /tmp."""
    first_file: dict[str, Path] = {}
    keep = held_scratch(home, "read-")  # removed with the stream; swept if this process is killed
    spool = Path(keep.name) / "records.jsonl"
    digest, raw = hashlib.sha256(), hashlib.sha256()
    readable = []
    for path in files:
        reason = unsafe_reason(path, within)  # first: whatever its name, it is never opened
        if reason is not None:
            problems.add(printable_path(path), reason)
        elif not is_supported(path):  # after unsafe_reason: a suffix-less file is sniffed, so opened
            src.unsupported.append(printable_path(path))
        else:
            readable.append(path)
    # `manual.html` and `manual.pdf`, `README` and `README.md`: both read, each under its whole name.
    ids = file_docids(readable, root, format_suffix)
    with spool.open("wb") as out:
        for i, path in enumerate(readable, start=1):
            if progress:
                progress("reading", i - 1, len(readable))
            shown = printable_path(path)
            docid = ids[path]
            if not is_utf8(docid):
                problems.add(shown, "the file name is not valid UTF-8: rename the file")
                continue
            if docid in first_file:
                problems.add(
                    shown,
                    f"duplicate document id {docid!r} (also the id of "
                    f"{printable_path(first_file[docid])}); rename one file",
                )
                continue
            try:
                rec = _file_record(path, docid)
            except ValueError as exc:
                problems.add(shown, str(exc))
                continue
            except Exception as exc:  # a parser's own failure on a damaged file is that file's problem
                problems.add(shown, f"cannot be read ({type(exc).__name__}: {exc})")
                continue
            first_file[docid] = path
            body = record_json(rec).encode()  # complete (it leaves out only empty pages): the spool line
            digest.update(body)
            out.write(body + b"\n")
            raw.update(body + b"\n")
    src.records = RecordStream(spool, first_file, digest, raw.hexdigest(), spooled=True, keep=keep)
    if progress and readable:
        progress("reading", len(readable), len(readable))


def document_files(path: Path, src: CorpusSource) -> list[Path]:
    """Every entry under `path` to read or name: files, and links that are not to a folder inside
    it (a folder link inside is not followed: its files are read where they are, and a link
    loop ends there). Other folders are walked, not listed."""
    within = path.resolve()
    entries = []
    for p in sorted(path.rglob("*")):
        if p.is_symlink():
            try:
                if p.is_dir() and p.resolve(strict=True).is_relative_to(within):
                    continue
            except (OSError, RuntimeError):
                pass  # a loop or a broken link: named with its reason when read
        elif p.is_dir():
            continue
        entries.append(p)
    hidden = [p for p in entries if _hidden(p, path)]
    if hidden:
        src.warnings.append(
            f"{printable_path(path)}: {len(hidden)} hidden file(s) not read (names starting with '.'): "
            + _hidden_names(hidden, path)
        )
    return [p for p in entries if not _hidden(p, path)]
