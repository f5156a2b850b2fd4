"""Read a corpus from a BEIR folder, a JSONL file, or document files (a file or a folder of them).

BEIR and JSONL readers validate every record and collect *all* problems as `file:line: reason`
before anything is written, so a user fixes a bad file in one pass and a failed ingest changes
nothing. No reader holds the documents in memory: the validating pass keeps ids and hashes, and
each later pass (storing, indexing) reads the file again, or for document files a spool of the
parsed records (`RecordStream`). Document files (PDF, HTML, DOCX, Markdown, reStructuredText, LaTeX,
text, and text files without an extension such as README or ChangeLog; see `stores.formats`) are
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

import csv
import hashlib
import json
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stores.errors import IngestError, QuarryError
from stores.formats import MAX_DOCUMENT_CHARS, Unreadable, format_suffix, is_supported, read_file
from stores.records import DocRecord, record_json

ProgressFn = Callable[[str, int, int | None], None]
"""Called as `progress(stage, done, total)`; the command line draws it as a bar."""

_JSONL_SUFFIXES = {".jsonl", ".json", ".ndjson"}
_FORMATS_HINT = ("give a BEIR folder (with corpus.jsonl), a .jsonl file, or document files or folders "
                 "(.pdf .html .docx .md .rst .tex .txt, or text without an extension such as README)")
_MAX_PROBLEMS = 1000
_KNOWN_META = {"year", "venue", "authors", "keywords"}


@dataclass
class CorpusSource:
    """Everything read from one input: documents plus optional links, queries and judgements."""

    kind: str
    path: Path
    records: RecordStream | list[DocRecord] = field(default_factory=list)  # readers give a stream
    citations: list[tuple[str, str]] = field(default_factory=list)
    queries: dict[str, str] = field(default_factory=dict)
    answers: dict[str, str] = field(default_factory=dict)  # reference answers by query id (answers.jsonl)
    qrels: dict[str, list[tuple[str, str, int]]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "path: reason" of each bad file left out
    unsupported: list[str] = field(default_factory=list)  # files of types Quarry does not read


def _keyed_texts(path: Path, key: str, problems: _Problems, bad: str) -> dict[str, tuple[int, str]]:
    """`{_id: (line, obj[key])}` from a JSONL file of objects (queries.jsonl, answers.jsonl); {} if absent."""
    out: dict[str, tuple[int, str]] = {}
    if not path.is_file():
        return out
    for no, obj in _read_jsonl(path, problems, None):
        qid = obj.get("_id") if isinstance(obj, dict) else None
        text = obj.get(key) if isinstance(obj, dict) else None
        if not isinstance(qid, (str, int)) or isinstance(qid, bool) or not isinstance(text, str) or not text.strip():
            problems.add(f"{path}:{no}", bad)
            continue
        out[str(qid)] = (no, text.strip())
    return out


def check_size(docid: str, chars: int) -> None:
    if chars > MAX_DOCUMENT_CHARS:
        raise ValueError(f"document {docid!r} has {chars:,} characters; Quarry indexes documents of up to "
                         f"{MAX_DOCUMENT_CHARS:,} characters: split it into several documents")


class _Problems(list):
    def add(self, where: str, reason: str) -> None:
        if len(self) < _MAX_PROBLEMS:
            self.append(f"{where}: {reason}")


def _year(value: Any) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ValueError("year must be a number such as 2019")
    if isinstance(value, int) or (isinstance(value, str) and value.strip().isdigit()):
        year = int(value)
        if 1 <= year <= 2999:
            return year
    raise ValueError(f"year must be a whole number such as 2019, got {value!r}")


def _str_list(value: Any, name: str, split: str) -> tuple[str, ...]:
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        return tuple(p.strip() for p in re.split(split, value) if p.strip())
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(v.strip() for v in value if v.strip())
    raise ValueError(f"{name} must be a string or a list of strings")


class EmptyRecord(ValueError):
    """A well-formed record with nothing to search (no title, no text). Readers skip it with a
    warning instead of rejecting the collection: standard collections carry a few (Cranfield's
    documents 471 and 995), and an empty document could never be found anyway."""

    def __init__(self, docid: str) -> None:
        super().__init__(f"document {docid!r} has neither title nor text")
        self.docid = docid


def record_from_json(obj: Any) -> DocRecord:
    """Validate one parsed JSON value as a document (raises ValueError with the reason)."""
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
    raw_id = next((obj[k] for k in ("_id", "id", "docid") if k in obj), None)
    if raw_id is None or isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)):
        raise ValueError("missing document id: give each record an \"_id\" string")
    docid = str(raw_id).strip()
    if not docid or re.search(r"\s", docid) or len(docid) > 200:
        raise ValueError(f"document id {raw_id!r} must be 1-200 characters without spaces")
    title, text = obj.get("title", ""), obj.get("text", obj.get("contents", ""))
    for name, value in (("title", title), ("text", text)):
        if value is not None and not isinstance(value, str):
            raise ValueError(f"{name} must be a string, got {type(value).__name__}")
    title, text = (title or "").strip(), (text or "").strip()
    if not title and not text:
        raise EmptyRecord(docid)
    check_size(docid, len(title) + len(text))
    meta = obj.get("metadata")
    meta = {} if meta is None else meta
    if not isinstance(meta, dict):
        raise ValueError("metadata must be a JSON object")
    merged = {k: obj[k] for k in _KNOWN_META if k in obj} | meta
    venue = merged.get("venue")
    if venue is not None and not isinstance(venue, str):
        raise ValueError("venue must be a string")
    return DocRecord(
        docid=docid,
        title=title,
        text=text,
        year=_year(merged.get("year")),
        venue=(venue or "").strip() or None,
        authors=_str_list(merged.get("authors"), "authors", r";"),
        keywords=_str_list(merged.get("keywords"), "keywords", r"[,;]"),
        extras={k: v for k, v in merged.items() if k not in _KNOWN_META},
    )


def _read_jsonl(path: Path, problems: _Problems, progress: ProgressFn | None,
                raw: hashlib._Hash | None = None) -> Iterator[tuple[int, Any]]:
    """Parsed values of a JSONL file with their line numbers; `raw` (if given) hashes its bytes."""
    total = path.stat().st_size
    done = 0
    for no, line in _utf8_lines(path, problems, raw):
        done += len(line)
        if progress and no % 500 == 0:
            progress("reading", done, total)
        if not line.strip():
            continue
        try:
            yield no, json.loads(line)
        except json.JSONDecodeError as exc:
            problems.add(f"{path}:{no}", f"not valid JSON ({exc.msg} at column {exc.colno})")
    if progress:
        progress("reading", total, total)


def _utf8_lines(path: Path, problems: _Problems, digest: hashlib._Hash | None = None) -> Iterator[tuple[int, str]]:
    """Lines decoded one by one, so a bad byte is reported with its line number."""
    with path.open("rb") as fh:
        for no, raw in enumerate(fh, start=1):
            if digest is not None:
                digest.update(raw)
            try:
                yield no, raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                problems.add(f"{path}:{no}", f"not UTF-8 text ({exc.reason} at byte {exc.start} of the line)")


class RecordStream:
    """The validated documents of one JSONL file, read again from the file on every pass rather
    than held in memory: a corpus of 100k 5,000-word documents held as records took 2.8 GB before
    anything was written (docs/performance.md). `len()` and the ids (in source order) are known
    from the validating pass, and so is `digest`, the running hash of the records' canonical JSON
    that fingerprints start from. A later pass that reads different bytes (the file changed
    during the ingest) raises IngestError at its end, before anything it fed is committed.

    Document files (PDF, HTML, …) are parsed once into a spool of records (`spooled`: one
    DocRecord JSON per line, in a temporary folder `keep` holds for the stream's life): parsing a
    PDF again on every pass would cost more than writing its text once."""

    def __init__(self, path: Path, ids: dict[str, Any], digest: hashlib._Hash, raw: str, *,
                 spooled: bool = False, keep: Any = None) -> None:
        self.path, self.ids, self.digest, self._raw = path, ids, digest, raw
        self._spooled, self._keep = spooled, keep

    def _parse(self, line: bytes) -> DocRecord | None:
        if not line.strip():
            return None
        return DocRecord.model_validate_json(line) if self._spooled else record_from_json(json.loads(line))

    def __len__(self) -> int:
        return len(self.ids)

    def __iter__(self) -> Iterator[DocRecord]:
        raw = hashlib.sha256()
        with self.path.open("rb") as fh:
            for line in fh:
                raw.update(line)
                try:
                    rec = self._parse(line)
                except (ValueError, UnicodeDecodeError):  # EmptyRecord included; a changed file is caught below
                    rec = None
                if rec is not None:
                    yield rec
        if raw.hexdigest() != self._raw:
            raise IngestError([f"{self.path}: the file changed while it was being ingested"],
                              "nothing was changed; ingest again once the file is complete")


def _read_documents(path: Path, problems: _Problems, progress: ProgressFn | None,
                    warnings: list[str]) -> RecordStream:
    """Validate every record of a JSONL file (problems collected, not raised) and return them as
    a RecordStream; only the ids, line numbers and two running hashes stay in memory."""
    first_seen: dict[str, int] = {}
    empty: list[str] = []
    digest, raw = hashlib.sha256(), hashlib.sha256()
    for no, obj in _read_jsonl(path, problems, progress, raw):
        try:
            rec = record_from_json(obj)
        except EmptyRecord as exc:
            empty.append(f"line {no} ({exc.docid})")
            continue
        except ValueError as exc:
            problems.add(f"{path}:{no}", str(exc))
            continue
        if rec.docid in first_seen:
            problems.add(f"{path}:{no}", f"duplicate document id {rec.docid!r} (first at line {first_seen[rec.docid]})")
            continue
        first_seen[rec.docid] = no
        digest.update(record_json(rec).encode())
    if empty:
        shown = ", ".join(empty[:10]) + (f" and {len(empty) - 10} more" if len(empty) > 10 else "")
        warnings.append(f"{path}: skipped {len(empty)} document(s) with neither title nor text (nothing to search): {shown}")
    return RecordStream(path, first_seen, digest, raw.hexdigest())


def docids(records: RecordStream | list[DocRecord]) -> list[str]:
    """The ids of a source's documents in source order, without reading a stream again."""
    return list(records.ids) if isinstance(records, RecordStream) else [r.docid for r in records]


def _read_tsv(path: Path, problems: _Problems, columns: int) -> Iterator[tuple[int, list[str]]]:
    for no, line in _utf8_lines(path, problems):
        for row in csv.reader([line.rstrip("\r\n")], delimiter="\t"):
            if not row or not "".join(row).strip():
                continue
            if no == 1 and not row[-1].strip().lstrip("-").isdigit() and columns == 3:
                continue  # header line
            if no == 1 and columns == 2 and [c.strip().lower() for c in row] == ["citing", "cited"]:
                continue
            if len(row) != columns:
                problems.add(f"{path}:{no}", f"expected {columns} tab-separated columns, got {len(row)}")
                continue
            yield no, [c.strip() for c in row]


def _read_beir_extras(folder: Path, src: CorpusSource, problems: _Problems) -> None:
    known = src.records.ids if isinstance(src.records, RecordStream) else {r.docid for r in src.records}
    cites = folder / "citations.tsv"
    if cites.is_file():
        dropped, seen = 0, set()
        for _, (citing, cited) in _read_tsv(cites, problems, 2):
            if citing not in known or cited not in known:
                dropped += 1
            elif citing != cited and (citing, cited) not in seen:
                seen.add((citing, cited))
                src.citations.append((citing, cited))
        if dropped:
            src.warnings.append(f"{cites}: {dropped} citation(s) name documents not in the corpus; skipped")
    queries = _keyed_texts(folder / "queries.jsonl", "text", problems, 'a query needs an "_id" and a non-empty "text"')
    src.queries = {qid: text for qid, (_, text) in queries.items()}
    answers = _keyed_texts(folder / "answers.jsonl", "answer", problems,
                           'an answer needs an "_id" (a query id) and a non-empty "answer"')
    for qid, (no, text) in answers.items():
        if qid in src.queries:
            src.answers[qid] = text
        else:
            problems.add(f"{folder / 'answers.jsonl'}:{no}", f"answer for query {qid!r}, which queries.jsonl does not have")
    qrels_dir = folder / "qrels"
    if qrels_dir.is_dir():
        for tsv in sorted(p for p in qrels_dir.glob("*.tsv") if p.is_file()):  # a FIFO is never opened
            rows, unknown = [], 0
            for no, (qid, docid, score) in _read_tsv(tsv, problems, 3):
                try:
                    rows.append((qid, docid, int(score)))
                except ValueError:
                    problems.add(f"{tsv}:{no}", f"relevance score must be an integer, got {score!r}")
                    continue
                unknown += docid not in known
            if unknown:
                src.warnings.append(f"{tsv}: {unknown} judgement(s) name documents not in the corpus")
            src.qrels[tsv.stem] = rows


def file_docid(path: Path, root: Path) -> str:
    """A document file's id: its path under `root` without the format suffix, whitespace as "_"
    (`notes/a b.md` under `notes` → `a_b`; `README.Debian` keeps its name: `.Debian` is no format)."""
    rel = path.relative_to(root)
    return re.sub(r"\s+", "_", (rel.with_suffix("") if format_suffix(path) else rel).as_posix())


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
        key = "/".join(parts[:first + 1]) + ("/" if first < len(parts) - 1 else "")
        groups[key] = groups.get(key, 0) + 1
    named = [printable_path(k) + (f" ({n} files)" if k.endswith("/") and n > 1 else "")
             for k, n in list(groups.items())[:HIDDEN_NAMED]]
    more = len(groups) - len(named)
    return ", ".join(named) + (f" … and {more} more" if more else "")


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_SYSTEM_DIRS = (Path("/proc"), Path("/sys"))  # what /dev holds is refused as not regular files
_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def printable_path(path: str | Path) -> str:
    """A path as text that can be printed, stored and serialised: bytes that are not UTF-8 (which
    Python carries as lone surrogates, and JSON, SQLite and Pydantic refuse) and control
    characters written as backslash escapes (`caf\\xe9.txt`)."""
    text = os.fsencode(path).decode("utf-8", "backslashreplace")
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def _utf8(text: str) -> bool:
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


def _read_files(files: list[Path], root: Path, src: CorpusSource, problems: _Problems,
                progress: ProgressFn | None, within: Path | None) -> None:
    """Read document files (ids relative to `root`) into a spooled RecordStream; a bad file
    becomes a problem `path: reason`. `within`: see `unsafe_reason`."""
    first_file: dict[str, Path] = {}
    keep = tempfile.TemporaryDirectory(prefix="quarry-read-")  # removed with the stream
    spool = Path(keep.name) / "records.jsonl"
    digest, raw = hashlib.sha256(), hashlib.sha256()
    # Files without a suffix last: `README` and `README.md` share the id "README", and the file
    # with a format keeps it (the other is left out with a warning, not as a bad file).
    files = sorted(files, key=lambda p: not format_suffix(p))
    with spool.open("wb") as out:
        for i, path in enumerate(files, start=1):
            if progress:
                progress("reading", i - 1, len(files))
            shown = printable_path(path)
            reason = unsafe_reason(path, within)  # first: whatever its name, it is never opened
            if reason is not None:
                problems.add(shown, reason)
                continue
            if not is_supported(path):  # after unsafe_reason: a suffix-less file is sniffed, so opened
                src.unsupported.append(shown)
                continue
            docid = file_docid(path, root)
            if not _utf8(docid):
                problems.add(shown, "the file name is not valid UTF-8: rename the file")
                continue
            if docid in first_file:
                if not format_suffix(path) and format_suffix(first_file[docid]):
                    src.warnings.append(f"{shown}: not read: {printable_path(first_file[docid])} has the same "
                                        f"document id {docid!r}")
                    continue
                problems.add(shown, f"duplicate document id {docid!r} (also the id of "
                                    f"{printable_path(first_file[docid])}); rename one file")
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
    if progress and files:
        progress("reading", len(files), len(files))


def _document_files(path: Path, src: CorpusSource) -> list[Path]:
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
        src.warnings.append(f"{printable_path(path)}: {len(hidden)} hidden file(s) not read (names starting with '.'): "
                            + _hidden_names(hidden, path))
    return [p for p in entries if not _hidden(p, path)]


def read_corpus(path: str | Path, progress: ProgressFn | None = None, *, strict: bool = False,
                docid_root: Path | None = None) -> CorpusSource:
    """Read and validate a corpus; raise `IngestError` listing every bad record.

    Document files are lenient unless `strict` (see the module docstring). Their ids are paths
    relative to the folder given, or to `docid_root` when given (a single file: its name).
    """
    path = Path(path).expanduser()
    problems = _Problems()
    if not _utf8(str(path)):
        raise IngestError([f"{printable_path(path)}: the name is not valid UTF-8"],
                          "rename the file or folder (names are stored as UTF-8 text)")
    if path.exists() and not path.is_dir():
        reason = unsafe_reason(path)
        if reason is not None:  # a FIFO named x.jsonl, /proc/self/environ: never opened
            raise IngestError([f"{printable_path(path)}: {reason}"], "give a regular file or a folder")
    if path.is_dir() and (path / "corpus.jsonl").is_file():
        src = CorpusSource("beir", path)
        src.records = _read_documents(path / "corpus.jsonl", problems, progress, src.warnings)
        _read_beir_extras(path, src, problems)
    elif path.is_file() and path.suffix.lower() in _JSONL_SUFFIXES:
        src = CorpusSource("jsonl", path)
        src.records = _read_documents(path, problems, progress, src.warnings)
    elif path.is_dir() or (path.is_file() and is_supported(path)):
        src = CorpusSource("folder" if path.is_dir() else "file", path)
        root = docid_root or (path if path.is_dir() else path.parent)
        files = _document_files(path, src) if path.is_dir() else [path]
        _read_files(files, root, src, problems, progress, path.resolve() if path.is_dir() else None)
        if not strict:
            src.skipped, problems = list(problems), _Problems()
        if not src.records and not problems:
            found = (f"; {len(src.unsupported)} file(s) of unsupported types: "
                     + ", ".join(src.unsupported[:10]) if src.unsupported else "")
            raise IngestError([*src.skipped, f"{printable_path(path)}: no readable documents found{found}"],
                              _FORMATS_HINT)
    elif not path.exists():
        raise QuarryError("not_found", f"no such file or folder: {printable_path(path)}", _FORMATS_HINT)
    else:
        raise QuarryError("bad_input", f"cannot ingest {printable_path(path)}: unsupported file type {path.suffix!r}",
                          _FORMATS_HINT)
    if problems:
        raise IngestError(list(problems), "fix or remove the files named above, or leave out --strict to skip them"
                          if src.kind in ("folder", "file") else "")
    if not src.records:
        raise IngestError([f"{path}: no documents found"])
    return src
