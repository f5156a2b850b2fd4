"""Anserini's `IndexCollection` as a child process: its command line, its launch (a JVM that dies
with the process that started it), and the reading of its output into a document count or one
clear error. Kept apart from `stores.lucene_build`, which feeds it documents."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from stores.errors import DISK_FULL_TEXT, QuarryError
from stores.jvm import JVM_OPTIONS, anserini_jar, java_executable

_INDEXED = re.compile(r"Total ([\d,]+) documents indexed")
_JAVA_ERROR = re.compile(r"\bERROR\b.*?- (.*)")
TOO_LONG_HINT = "documents over 20 million characters cannot be indexed; split them and ingest again"


def index_command(input_dir: Path, out_dir: Path, threads: int) -> list[str]:
    """Anserini's IndexCollection over a folder of JsonCollection shards (files or pipes)."""
    return [
        str(java_executable()),
        *JVM_OPTIONS,
        "-cp",
        str(anserini_jar()),
        "io.anserini.index.IndexCollection",
        "-collection",
        "JsonCollection",
        "-generator",
        "DefaultLuceneDocumentGenerator",
        "-input",
        str(input_dir),
        "-index",
        str(out_dir),
        "-threads",
        str(threads),
        "-optimize",
    ]


def run_index_collection(input_dir: Path, out_dir: Path, threads: int) -> int:
    """Run Anserini's IndexCollection over a folder of JsonCollection files; return how many
    documents it reports indexed (the reference the scale benchmark measures Quarry against)."""
    proc = subprocess.run(dying_with_parent(index_command(input_dir, out_dir, threads)), capture_output=True, text=True)
    return indexed_count(proc.returncode, f"{proc.stdout}\n{proc.stderr}", out_dir)


def indexed_count(returncode: int, output: str, out_dir: Path) -> int:
    """How many documents Anserini's output says it indexed; an error when it failed or logged
    a document it could not read (it goes on with the next shard, exit 0)."""
    if returncode != 0 or not list(out_dir.glob("segments_*")) or DISK_FULL_TEXT.search(output):
        raise index_failure(returncode, output, out_dir)
    found = _INDEXED.search(output)
    errors = [m.group(1)[:300] for m in _JAVA_ERROR.finditer(output)]
    if found is None or errors:
        detail = "; ".join(errors[:3]) or "no document count in Anserini's output"
        raise QuarryError("index_incomplete", f"Lucene indexing reported a problem: {detail}", TOO_LONG_HINT)
    return int(found.group(1).replace(",", ""))


def index_failure(returncode: int, output: str, out_dir: Path) -> QuarryError:
    """The error for a failed IndexCollection run. A full disk is named as such (Anserini logs
    the IOException and may still exit 0, having written no segment); otherwise the tail of its
    output. The hint names no command: the build may belong to a first ingest, an `add` or an
    index rebuild, and the collection's previous version is untouched in every case."""
    if DISK_FULL_TEXT.search(output):
        return QuarryError(
            "disk_full",
            f"Lucene indexing failed: the disk holding {out_dir.parent} is full "
            "(No space left on device); nothing was changed",
            "free space on that disk, then run the same command again",
        )
    tail = "\n".join(output.strip().splitlines()[-15:])
    state = f"exit {returncode}" if returncode != 0 else "exit 0, but no index was written"
    return QuarryError(
        "index_failed",
        f"Lucene indexing failed ({state}); nothing was changed:\n{tail}",
        "see the Java output above; check free disk space where QUARRY_HOME lives, then run the same command again",
    )


# Started in place of `java`: set PR_SET_PDEATHSIG (1) to SIGKILL, end if the parent is already
# gone, then exec the JVM (the setting survives exec). Stdlib only, no site packages.
_DIE_WITH_PARENT = (
    "import ctypes, os, signal, sys\n"
    "ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)\n"
    "if os.getppid() != int(sys.argv[1]):\n    os._exit(70)\n"
    "os.execv(sys.argv[2], sys.argv[2:])\n"
)


def dying_with_parent(cmd: list[str]) -> list[str]:
    """`cmd` started so that the child JVM receives SIGKILL when the process that started it dies
    (Linux `prctl(PR_SET_PDEATHSIG)`): a killed ingest leaves no indexer running as an orphan.
    Why a launcher rather than `preexec_fn`: Python code between fork and exec can deadlock when
    other threads (jnius' JVM, a worker's pool) hold locks at the fork; the launcher is a fresh
    process. The signal follows the *thread* that started the child, which stays in the build
    (it feeds and waits) until the child ends. Elsewhere the command runs as it is."""
    if not sys.platform.startswith("linux"):
        return cmd
    return [sys.executable, "-I", "-S", "-c", _DIE_WITH_PARENT, str(os.getpid()), *cmd]
