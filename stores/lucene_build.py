"""Build a Lucene BM25 index with Anserini's `IndexCollection`, fed as the documents come.

Anserini runs in a child JVM (a failure there cannot take down the caller's JVM or leave a
half-open index in-process) and reads JsonCollection shards — here named pipes (FIFOs) the
caller writes one document at a time (`IndexFeed`), not files written first and read after. So
an ingest stores each document and hands it to the indexer in the same pass, and on two cores
the store step (Python) and Lucene's indexing (Java threads) run side by side instead of one
after the other (when they ran one after the other, the whole ingest was their sum, 2.0× Anserini's
own time at a million documents); nothing is exported to disk on the way. One shard per indexing
thread: Anserini gives each thread one file, so every pipe has its reader from the start.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path
from types import TracebackType
from typing import IO

import orjson

from stores.anserini_run import TOO_LONG_HINT, dying_with_parent, index_command, indexed_count
from stores.errors import QuarryError
from stores.file_formats.corpus_reader import ProgressFn
from stores.format_chars import drop_format_chars
from stores.lucene import DEFAULT_B, DEFAULT_K1, IndexMeta
from stores.records import DocRecord

# Bytes a pipe holds before the writer waits (Linux's default is 64 KiB, about 40 short
# documents): a larger buffer lets the store step run ahead of a briefly busy indexing thread.
PIPE_BYTES = 1 << 20
# What the documents given before the indexer's JVM has started may hold in memory (it starts in
# a second or two, while the first few thousand short documents are stored).
EARLY_BYTES = 64 << 20
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
# What Java's String.trim() strips: Anserini skips a document whose contents are empty after it
# (DefaultLuceneDocumentGenerator's EmptyDocumentException), counts it as "empty" and names it nowhere.
_JAVA_BLANK = "".join(map(chr, range(0x21)))
NAMED_UNINDEXED = 5  # documents an incomplete index names (their count is always given)


def default_threads() -> int:
    return max(1, min(4, os.cpu_count() or 1))


def index_line(rec: DocRecord) -> bytes:
    """The record as one JsonCollection line. orjson because this runs once per document in the
    ingest's one pass and is ~30× faster than `json.dumps` on a document's text; text with a lone
    surrogate (which UTF-8 cannot carry) is written \\u-escaped by `json` instead. Invisible format
    characters are dropped (`stores.format_chars`): a soft hyphen inside a word would otherwise
    hide the word from the query that names it."""
    return _line(rec.docid, index_text(rec))


def index_text(rec: DocRecord) -> str:
    """What Lucene is given of the record (title + text + keywords, format characters dropped)."""
    return drop_format_chars(rec.index_contents())


def _line(docid: str, contents: str) -> bytes:
    doc = {"id": docid, "contents": contents}
    try:
        return orjson.dumps(doc, option=orjson.OPT_APPEND_NEWLINE)
    except orjson.JSONEncodeError:
        return (json.dumps(doc) + "\n").encode()


def write_json_collection(records: Iterable[DocRecord], folder: Path, threads: int) -> int:
    """The documents as JsonCollection files, the lines and shard layout `IndexFeed` streams —
    what Anserini alone is timed on (the benchmarks' reference); how many were written."""
    folder.mkdir(parents=True)
    shards = [open(folder / f"part{i:02d}.jsonl", "wb") for i in range(threads)]  # noqa: SIM115 - closed below
    count = 0
    try:
        for count, rec in enumerate(records, start=1):
            shards[(count - 1) % threads].write(index_line(rec))
    finally:
        for shard in shards:
            shard.close()
    return count


class IndexFeed:
    """Anserini's IndexCollection building `out_dir` from documents given to `add` one by one.

    Use as a context manager; `finish()` closes the pipes, waits for the indexer and checks its
    count. Leaving the block without `finish()` (an error in the caller, Ctrl+C) kills the
    indexer and removes its pipes; the half-built `out_dir` is the caller's staging to drop."""

    def __init__(self, out_dir: Path, threads: int | None = None) -> None:
        self.out_dir = out_dir
        self.threads = threads or default_threads()
        self.added = 0
        self._tmp: Path | None = None  # the pipes' folder, made on entering (nothing to leak before)
        self._proc: subprocess.Popen[bytes] | None = None
        self._pipes: list[Path] = []
        self._shards: list[IO[bytes] | None] = [None] * self.threads
        self._early: list[bytes] | None = []  # lines given before the indexer opened every pipe
        self._early_bytes = 0
        self.blank = 0  # documents given with nothing to index (Anserini skips them)
        self._blank_ids: list[str] = []  # the first `NAMED_UNINDEXED` of them

    @property
    def _log(self) -> Path:
        assert self._tmp is not None, "IndexFeed is used as a context manager"
        return self._tmp / "indexer.log"

    def __enter__(self) -> IndexFeed:
        """Start the indexer; the JVM's start (a second or two) overlaps the first documents,
        which wait in memory (up to `EARLY_BYTES`) until it has opened its pipes."""
        self._tmp = _pipe_folder(self.out_dir.parent, self.threads)
        self._pipes = [self._tmp / "in" / f"part{i:02d}.jsonl" for i in range(self.threads)]
        try:
            with open(self._log, "wb") as log:  # a file, not a pipe: nobody has to read it while indexing
                self._proc = subprocess.Popen(
                    dying_with_parent(index_command(self._pipes[0].parent, self.out_dir, self.threads)),
                    stdout=log,
                    stderr=log,
                )
        except BaseException:
            self._abort()
            raise
        return self

    def _open_pipes(self, wait: bool) -> None:
        """Open for writing every pipe the indexer has opened for reading (with `wait`, all of
        them: until it has, or fail with its own error if it ends first — a plain blocking open
        would wait for ever); once all are open, send the lines given so far."""
        assert self._proc is not None and self._early is not None
        for i, pipe in enumerate(self._pipes):
            while self._shards[i] is None:
                try:
                    fd = os.open(pipe, os.O_WRONLY | os.O_NONBLOCK)
                except OSError as exc:
                    if exc.errno != errno.ENXIO:  # ENXIO: no reader yet
                        raise
                    if not wait:
                        return
                    try:
                        self._proc.wait(timeout=0.05)
                    except subprocess.TimeoutExpired:
                        continue
                    raise self._failure() from None
                os.set_blocking(fd, True)
                with suppress(OSError):  # above /proc/sys/fs/pipe-max-size for this user: the default works too
                    fcntl.fcntl(fd, _F_SETPIPE_SZ, PIPE_BYTES)
                self._shards[i] = open(fd, "wb", buffering=PIPE_BYTES // 2)  # noqa: SIM115 - closed by finish or the exit
        early, self._early = self._early, None
        for no, line in enumerate(early):
            self._write(no, line)

    def add(self, rec: DocRecord) -> None:
        contents = index_text(rec)
        if not contents.strip(_JAVA_BLANK):
            self.blank += 1
            if len(self._blank_ids) < NAMED_UNINDEXED:
                self._blank_ids.append(rec.docid)
        line = _line(rec.docid, contents)
        if self._early is None:
            self._write(self.added, line)
        else:
            self._early.append(line)
            self._early_bytes += len(line)
            if self.added % 64 == 0 or self._early_bytes > EARLY_BYTES:
                self._open_pipes(wait=self._early_bytes > EARLY_BYTES)
        self.added += 1

    def _write(self, no: int, line: bytes) -> None:
        shard = self._shards[no % self.threads]
        assert shard is not None
        try:
            shard.write(line)
        except BrokenPipeError:  # the indexer stopped reading: it logged why
            raise self._failure() from None

    def finish(self) -> int:
        """Close the pipes, wait for the index to be written and merged; the documents indexed.
        A count short of what was added is an error: a partial index never passes for complete."""
        assert self._proc is not None
        if self._early is not None:
            self._open_pipes(wait=True)
        try:
            for shard in self._shards:
                if shard is not None:
                    shard.close()
        except BrokenPipeError:
            raise self._failure() from None
        self._shards = [None] * self.threads
        indexed = indexed_count(self._proc.wait(), self._output(), self.out_dir)
        if indexed != self.added:
            raise self._incomplete(indexed)
        return indexed

    def _incomplete(self, indexed: int) -> QuarryError:
        """The error for an index short of what was added, naming the documents it can: those
        given with nothing to index (Anserini counts them but never says which they were)."""
        missing = self.added - indexed
        detail = ""
        if self.blank:
            named = ", ".join(repr(d[:80]) for d in self._blank_ids)
            more = f" and {self.blank - len(self._blank_ids):,} more" if self.blank > len(self._blank_ids) else ""
            detail = f"; {self.blank:,} had no text to index: {named}{more}"
        if missing > self.blank:
            detail += f"; {missing - self.blank:,} not named by Lucene (too long or malformed)"
        hint = (
            "give those documents a title or text (or leave them out) and run the command again"
            if self.blank
            else "see the documents named in the error above (too long or malformed) and run the command again"
        )
        return QuarryError(
            "index_incomplete",
            f"Lucene indexed {indexed:,} of {self.added:,} documents{detail}; nothing was changed",
            hint,
        )

    def _output(self) -> str:
        return self._log.read_text(encoding="utf-8", errors="replace") if self._tmp and self._log.is_file() else ""

    def _failure(self) -> QuarryError:
        """The indexer's error, once it has ended: the other pipes are closed so that it reads
        them to their end, writes what it has and says what it could not read."""
        assert self._proc is not None
        self._close_shards()
        self._proc.wait()
        output = self._output()
        try:
            indexed_count(self._proc.returncode, output, self.out_dir)
        except QuarryError as exc:
            return exc
        return QuarryError(
            "index_incomplete",
            f"Lucene stopped reading documents after {self.added:,}; nothing was changed",
            TOO_LONG_HINT,
        )

    def _kill(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()

    def _abort(self) -> None:
        self._kill()
        self._close_shards()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)

    def _close_shards(self) -> None:
        for shard in self._shards:
            if shard is not None:
                with suppress(OSError):  # a pipe whose reader is gone (its buffered lines are lost with it)
                    shard.close()
        self._shards = [None] * self.threads

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._abort()


def _pipe_folder(beside: Path, threads: int) -> Path:
    """A new folder holding `in/part00.jsonl`… as named pipes: beside the index (in the staging
    folder, so a killed writer's pipes are tidied with it), or in the system's temporary folder
    where that filesystem refuses FIFOs (SMB, some FUSE mounts); a clear error where both do."""
    refused: list[str] = []
    for where in (beside, None):
        folder = None
        try:
            folder = Path(tempfile.mkdtemp(prefix="quarry-lucene-", dir=where))
            (folder / "in").mkdir()
            for i in range(threads):
                os.mkfifo(folder / "in" / f"part{i:02d}.jsonl", 0o600)
            return folder
        except OSError as exc:
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)
            refused.append(f"{where or tempfile.gettempdir()} ({exc.strerror or exc})")
    raise QuarryError(
        "no_pipes",
        "Lucene indexing reads the documents through named pipes, and no folder would hold them: " + "; ".join(refused),
        "point TMPDIR at a folder on a local disk with free space (e.g. TMPDIR=~/tmp) and run the command again",
    )


def build_index(
    records: Iterable[DocRecord],
    out_dir: Path,
    *,
    fingerprint: str,
    k1: float = DEFAULT_K1,
    b: float = DEFAULT_B,
    threads: int | None = None,
    progress: ProgressFn | None = None,
    total: int | None = None,
) -> IndexMeta:
    """Build a Lucene index of title + text + keywords into `out_dir` (must not exist)."""
    started = time.perf_counter()
    with IndexFeed(out_dir, threads) as feed:
        for rec in records:
            feed.add(rec)
            if progress and feed.added % 1000 == 0:
                progress("indexing", feed.added, total)
        if progress:
            progress("indexing", feed.added, total)
        count = feed.finish()
    return write_meta(out_dir, fingerprint, k1, b, count, time.perf_counter() - started)


def write_meta(out_dir: Path, fingerprint: str, k1: float, b: float, documents: int, seconds: float) -> IndexMeta:
    meta = IndexMeta(
        k1=float(k1), b=float(b), fingerprint=fingerprint, documents=documents, built_seconds=round(seconds, 3)
    )
    meta.dump(out_dir)
    return meta
