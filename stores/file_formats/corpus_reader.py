"""Read a corpus from a BEIR folder, a JSONL file, or document files (a file or a folder of them).

BEIR and JSONL readers validate every record and collect *all* problems as `file:line: reason`
before anything is committed, so a user fixes a bad file in one pass and a failed ingest changes
nothing. No reader holds the documents in memory: the validating pass keeps ids and hashes, and
each later pass (comparing, storing, indexing) reads the file again, or for document files a spool
of the parsed records (`RecordStream`). A new collection is validated in the pass that stores and
indexes it (`one_pass`: the file is read once; a problem drops the staged version at its end). Document files (PDF, HTML, DOCX, Markdown, reStructuredText, LaTeX,
text, man pages, any of them gzipped, and text files without an extension such as README or
ChangeLog; see `stores.file_formats.dispatch`) are
read leniently by default: a bad file (unreadable, empty, undecodable, an encrypted PDF) is
skipped and reported as `path: reason` in `CorpusSource.skipped`, files of other types (an
extension-less file that is not UTF-8 text, such as an executable, included) are named in
`CorpusSource.unsupported`, and the rest is read; `strict=True` rejects the whole input instead
when any file is bad. An extension-less file is sniffed only after `unsafe_reason` let it be
opened, so a FIFO named README is never opened.

A folder is read as what it holds, never as what its links point to: a link that resolves
outside the folder (`env.txt → /proc/self/environ` would put the process's API keys in the
corpus), anything that is not a regular file (a FIFO would block the ingest, a device never
ends), system files (/proc, /sys) and files whose names are not valid UTF-8 (no id can be
made of them) are skipped and named with the reason. Names are shown printable
(`printable_path`: undecodable bytes and control characters as backslash escapes).
"""

from __future__ import annotations

from pathlib import Path

from stores.errors import IngestError, QuarryError
from stores.file_formats.dispatch import is_supported
from stores.file_formats.document_files import SOURCE_PATH as SOURCE_PATH
from stores.file_formats.document_files import document_files, is_utf8, read_files, unsafe_dataset_files, unsafe_reason
from stores.file_formats.document_files import printable_path as printable_path
from stores.file_formats.file_document import MAX_DOCUMENT_CHARS as MAX_DOCUMENT_CHARS
from stores.file_formats.jsonl_corpus import BYTE_STAGES as BYTE_STAGES
from stores.file_formats.jsonl_corpus import CorpusSource as CorpusSource
from stores.file_formats.jsonl_corpus import Problems, read_beir_extras, read_documents
from stores.file_formats.jsonl_corpus import ProgressFn as ProgressFn
from stores.file_formats.jsonl_corpus import RecordStream as RecordStream
from stores.file_formats.jsonl_corpus import docids as docids
from stores.home import quarry_home

# Names other modules import from here are re-exported above (`X as X`); they are defined in
# `stores.file_formats.jsonl_corpus` (BEIR and JSONL records) and
# `stores.file_formats.document_files` (document files and the rules for what may be opened).

_JSONL_SUFFIXES = {".jsonl", ".json", ".ndjson"}
_FORMATS_HINT = (
    "give a BEIR folder (with corpus.jsonl), a .jsonl file, or document files or folders "
    "(.pdf .html .docx .md .rst .tex .txt, man pages such as ls.1, any of them gzipped, "
    "or text without an extension such as README)"
)


def read_corpus(
    path: str | Path,
    progress: ProgressFn | None = None,
    *,
    strict: bool = False,
    docid_root: Path | None = None,
    one_pass: bool = False,
    home: Path | None = None,
) -> CorpusSource:
    """Read and validate a corpus; raise `IngestError` listing every bad record.

    Document files are lenient unless `strict` (see the module docstring). Their ids are paths
    relative to the folder given, or to `docid_root` when given (a single file: its name).
    With `one_pass`, a BEIR folder or JSONL file is not read here: its records come back as an
    unchecked `RecordStream` whose first pass validates them (and then reads the BEIR extras and
    raises what `read_corpus` would have), so a fresh ingest reads the file once.
    Parsed document files are spooled in the scratch area of `home` (default: QUARRY_HOME).
    """
    path = Path(path).expanduser()
    problems = Problems()
    beir = _checked_path(path)
    if one_pass and (beir or (path.is_file() and path.suffix.lower() in _JSONL_SUFFIXES)):
        return _streamed(path, beir, problems, progress)
    if beir:
        src = CorpusSource("beir", path)
        src.records = read_documents(path / "corpus.jsonl", problems, progress, src.warnings)
        read_beir_extras(path, src, problems)
    elif path.is_file() and path.suffix.lower() in _JSONL_SUFFIXES:
        src = CorpusSource("jsonl", path)
        src.records = read_documents(path, problems, progress, src.warnings)
    elif path.is_dir() or (path.is_file() and is_supported(path)):
        src = CorpusSource("folder" if path.is_dir() else "file", path)
        root = docid_root or (path if path.is_dir() else path.parent)
        files = document_files(path, src) if path.is_dir() else [path]
        within = path.resolve() if path.is_dir() else None
        read_files(files, root, src, problems, progress, within, home or quarry_home())
        if not strict:
            src.skipped, problems = list(problems), Problems()
        if not src.records and not problems:
            found = (
                f"; {len(src.unsupported)} file(s) of unsupported types: " + ", ".join(src.unsupported[:10])
                if src.unsupported
                else ""
            )
            raise IngestError(
                [*src.skipped, f"{printable_path(path)}: no readable documents found{found}"], _FORMATS_HINT
            )
    elif not path.exists():
        raise QuarryError("not_found", f"no such file or folder: {printable_path(path)}", _FORMATS_HINT)
    else:
        raise QuarryError(
            "bad_input", f"cannot ingest {printable_path(path)}: unsupported file type {path.suffix!r}", _FORMATS_HINT
        )
    _raise_problems(src, problems)
    return src


def _checked_path(path: Path) -> bool:
    """Whether `path` is a BEIR folder, once its name is UTF-8 and nothing unsafe would be opened."""
    if not is_utf8(str(path)):
        raise IngestError(
            [f"{printable_path(path)}: the name is not valid UTF-8"],
            "rename the file or folder (names are stored as UTF-8 text)",
        )
    if path.exists() and not path.is_dir():
        reason = unsafe_reason(path)
        if reason is not None:  # a FIFO named x.jsonl, /proc/self/environ: never opened
            raise IngestError([f"{printable_path(path)}: {reason}"], "give a regular file or a folder")
    beir = path.is_dir() and (path / "corpus.jsonl").is_file()
    if beir and (unsafe := unsafe_dataset_files(path)):  # links out of the dataset: never opened
        raise IngestError(
            unsafe, "copy the files named into the dataset folder (links that stay inside it are followed)"
        )
    return beir


def _streamed(path: Path, beir: bool, problems: Problems, progress: ProgressFn | None) -> CorpusSource:
    """A BEIR folder or JSONL file read in one pass: an unchecked stream whose first pass
    validates the records, then reads the BEIR extras and raises what `read_corpus` would have."""
    src = CorpusSource("beir" if beir else "jsonl", path)

    def then() -> None:
        if beir:
            read_beir_extras(path, src, problems)
        _raise_problems(src, problems)

    src.records = RecordStream.unchecked(
        path / "corpus.jsonl" if beir else path, problems, progress, src.warnings, then
    )
    return src


def _raise_problems(src: CorpusSource, problems: Problems) -> None:
    """The end of every read: an IngestError naming every problem, or saying there is nothing."""
    if problems:
        raise IngestError(
            list(problems),
            "fix or remove the files named above, or leave out --strict to skip them"
            if src.kind in ("folder", "file")
            else "",
        )
    if not src.records:
        raise IngestError([f"{src.path}: no documents found"])
