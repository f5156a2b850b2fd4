"""BEIR folders and JSONL files as validated document records (`read_corpus` picks the reader).

Split from `stores.file_formats.corpus_reader` (`read_corpus`) so the record rules (ids, sizes,
metadata, `file:line: reason` problems, the `RecordStream` that reads a file again on every pass)
sit apart from the rules for reading document files off disk (`stores.file_formats.document_files`),
which reuse the records and streams defined here.
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stores.errors import IngestError
from stores.file_formats.file_document import MAX_DOCUMENT_CHARS
from stores.records import DocRecord, record_json

ProgressFn = Callable[[str, int, int | None], None]
# A JSONL file's reading is followed in bytes (its documents are not counted before they are read);
# a progress display shows the stages named here as sizes, the others as counts.
READING_BYTES = "reading JSONL"
BYTE_STAGES = frozenset({READING_BYTES})
"""Called as `progress(stage, done, total)`; the command line draws it as a bar."""

_MAX_PROBLEMS = 1000
# What reading a BEIR folder opens (`read_corpus`, `read_beir_extras`): these files and
# `qrels/*.tsv`. `stores.file_formats.document_files.unsafe_dataset_files` checks each before any is opened.
BEIR_FILES = ("corpus.jsonl", "queries.jsonl", "answers.jsonl", "citations.tsv")
QRELS_DIR = "qrels"
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
    # Other forms a right answer may take ("5 minutes" beside "5min"): answers.jsonl's optional "aliases".
    answer_aliases: dict[str, list[str]] = field(default_factory=dict)
    qrels: dict[str, list[tuple[str, str, int]]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "path: reason" of each bad file left out
    unsupported: list[str] = field(default_factory=list)  # files of types Quarry does not read


def _keyed_texts(path: Path, key: str, problems: Problems, bad: str) -> dict[str, tuple[int, str]]:
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


def _answer_aliases(path: Path, problems: Problems) -> dict[str, list[str]]:
    """answers.jsonl's optional "aliases" by query id: each a list of non-empty strings."""
    out: dict[str, list[str]] = {}
    if not path.is_file():
        return out
    for no, obj in _read_jsonl(path, Problems(), None):  # the lines' own problems are reported once, by _keyed_texts
        if not isinstance(obj, dict) or "aliases" not in obj:
            continue
        aliases = obj["aliases"]
        if not isinstance(aliases, list) or not all(isinstance(a, str) and a.strip() for a in aliases):
            problems.add(f"{path}:{no}", '"aliases" must be a list of non-empty strings')
            continue
        out[str(obj.get("_id"))] = [a.strip() for a in aliases]
    return out


def check_size(docid: str, chars: int) -> None:
    if chars > MAX_DOCUMENT_CHARS:
        raise ValueError(
            f"document {docid!r} has {chars:,} characters; Quarry indexes documents of up to "
            f"{MAX_DOCUMENT_CHARS:,} characters: split it into several documents"
        )


class Problems(list):
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
        raise ValueError('missing document id: give each record an "_id" string')
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


def _read_jsonl(
    path: Path, problems: Problems, progress: ProgressFn | None, raw: hashlib._Hash | None = None
) -> Iterator[tuple[int, Any]]:
    """Parsed values of a JSONL file with their line numbers; `raw` (if given) hashes its bytes."""
    total = path.stat().st_size
    done = 0
    for no, line in _utf8_lines(path, problems, raw):
        done += len(line)
        if progress and no % 500 == 0:
            progress(READING_BYTES, done, total)
        if not line.strip():
            continue
        try:
            yield no, json.loads(line)
        except json.JSONDecodeError as exc:
            problems.add(f"{path}:{no}", f"not valid JSON ({exc.msg} at column {exc.colno})")
    if progress:
        progress(READING_BYTES, total, total)


def _utf8_lines(path: Path, problems: Problems, digest: hashlib._Hash | None = None) -> Iterator[tuple[int, str]]:
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
    anything was written (docs/notes/performance-history.md). `len()` and the ids (in source order) are known
    from the validating pass, and so is `digest`, the running hash of the records' canonical JSON
    that fingerprints start from. A later pass that reads different bytes (the file changed
    during the ingest) raises IngestError at its end, before anything it fed is committed.

    A stream made `unchecked` has not been validated yet: its first pass *is* the validating read,
    yielding each record as it passes (a fresh ingest stores and indexes them in that same pass
    instead of reading the file twice); at its end the stream is `checked` (ids, digest and
    length known) or the pass raises the IngestError naming every problem.

    Document files (PDF, HTML, …) are parsed once into a spool of records (`spooled`: one
    DocRecord JSON per line, in a temporary folder `keep` holds for the stream's life): parsing a
    PDF again on every pass would cost more than writing its text once."""

    def __init__(
        self,
        path: Path,
        ids: dict[str, Any],
        digest: hashlib._Hash,
        raw: str,
        *,
        spooled: bool = False,
        keep: Any = None,
    ) -> None:
        self.path, self.ids, self.digest, self._raw = path, ids, digest, raw
        self._spooled, self._keep = spooled, keep
        self._unchecked: tuple[Problems, ProgressFn | None, list[str], Callable[[], None]] | None = None

    @classmethod
    def unchecked(
        cls, path: Path, problems: Problems, progress: ProgressFn | None, warnings: list[str], then: Callable[[], None]
    ) -> RecordStream:
        """A stream whose first pass validates the file (problems go to `problems`, warnings to
        `warnings`); `then` runs at that pass's end and raises IngestError when there were problems."""
        stream = cls(path, {}, hashlib.sha256(), "")
        stream._unchecked = (problems, progress, warnings, then)
        return stream

    @property
    def checked(self) -> bool:
        return self._unchecked is None

    def check(self) -> None:
        """The validating pass alone, for a stream made `unchecked` that is not stored after all."""
        for _ in self:
            pass

    def _parse(self, line: bytes) -> DocRecord | None:
        if not line.strip():
            return None
        return DocRecord.model_validate_json(line) if self._spooled else record_from_json(json.loads(line))

    def __len__(self) -> int:
        return len(self.ids)

    def __iter__(self) -> Iterator[DocRecord]:
        if self._unchecked is not None:
            yield from self._checking(*self._unchecked)
            return
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
            raise IngestError(
                [f"{self.path}: the file changed while it was being ingested"],
                "nothing was changed; ingest again once the file is complete",
            )

    def _checking(
        self, problems: Problems, progress: ProgressFn | None, warnings: list[str], then: Callable[[], None]
    ) -> Iterator[DocRecord]:
        """The validating pass, yielding each valid record; once a problem is found nothing more is
        yielded (the ingest will fail: the rest is only read for its problems)."""
        problems.clear()
        self.ids, self.digest, raw = {}, hashlib.sha256(), hashlib.sha256()
        for rec in _checked_records(self.path, problems, progress, warnings, self.ids, self.digest, raw):
            if not problems:
                yield rec
        self._raw, self._unchecked = raw.hexdigest(), None
        then()


def _checked_records(
    path: Path,
    problems: Problems,
    progress: ProgressFn | None,
    warnings: list[str],
    first_seen: dict[str, int],
    digest: hashlib._Hash,
    raw: hashlib._Hash,
) -> Iterator[DocRecord]:
    """Validate every record of a JSONL file (problems collected, not raised), yielding the good
    ones; `first_seen` gets each id's line, `digest` the records' canonical JSON, `raw` the bytes."""
    empty: list[str] = []
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
        yield rec
    if empty:
        shown = ", ".join(empty[:10]) + (f" and {len(empty) - 10} more" if len(empty) > 10 else "")
        warnings.append(
            f"{path}: skipped {len(empty)} document(s) with neither title nor text (nothing to search): {shown}"
        )


def read_documents(path: Path, problems: Problems, progress: ProgressFn | None, warnings: list[str]) -> RecordStream:
    """Validate every record of a JSONL file (problems collected, not raised) and return them as
    a RecordStream; only the ids, line numbers and two running hashes stay in memory."""
    first_seen: dict[str, int] = {}
    digest, raw = hashlib.sha256(), hashlib.sha256()
    for _ in _checked_records(path, problems, progress, warnings, first_seen, digest, raw):
        pass
    return RecordStream(path, first_seen, digest, raw.hexdigest())


def docids(records: RecordStream | list[DocRecord]) -> list[str]:
    """The ids of a source's documents in source order, without reading a stream again."""
    return list(records.ids) if isinstance(records, RecordStream) else [r.docid for r in records]


def _read_tsv(path: Path, problems: Problems, columns: int) -> Iterator[tuple[int, list[str]]]:
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


def read_beir_extras(folder: Path, src: CorpusSource, problems: Problems) -> None:
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
    answers = _keyed_texts(
        folder / "answers.jsonl", "answer", problems, 'an answer needs an "_id" (a query id) and a non-empty "answer"'
    )
    aliases = _answer_aliases(folder / "answers.jsonl", problems)
    for qid, (no, text) in answers.items():
        if qid in src.queries:
            src.answers[qid] = text
            src.answer_aliases.update({qid: aliases[qid]} if aliases.get(qid) else {})
        else:
            problems.add(
                f"{folder / 'answers.jsonl'}:{no}", f"answer for query {qid!r}, which queries.jsonl does not have"
            )
    qrels_dir = folder / QRELS_DIR
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
