"""The scratch area for the user's text (`stores.scratch`): inside QUARRY_HOME, never the system's
temporary folder, and what a killed process left there is swept by the next one that uses it."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from stores.collection import Collection, ingest
from stores.file_formats.corpus_reader import read_corpus
from stores.scratch import SCRATCH_DIR, held_scratch, scratch_dir, sweep

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def system_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty folder as the system's temporary folder, for this process and its children."""
    folder = tmp_path / "system-tmp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    return folder


def _notes(folder: Path, n: int = 3) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (folder / f"note{i}.md").write_text(f"# Note {i}\n\nPrivate field notes about sample {i} and its dating.\n")
    return folder


def _killed_reader(home: Path, notes: Path) -> Path:
    """Run a folder read in another process that is killed (SIGKILL) while it holds the spool;
    the scratch folder it leaves behind."""
    code = (
        "import os, signal, sys\n"
        "from pathlib import Path\n"
        "from stores.file_formats.corpus_reader import read_corpus\n"
        "src = read_corpus(Path(sys.argv[2]), home=Path(sys.argv[1]))\n"
        "print(src.records.path, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(home), str(notes)], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert out.returncode == -9, out.stderr
    spool = Path(out.stdout.strip())
    assert spool.is_file() and "Private field notes" in spool.read_text()
    return spool.parent


def test_a_killed_readers_spool_is_in_the_home_and_swept_by_the_next_command(tmp_path: Path, system_tmp: Path):
    home = tmp_path / "home"
    left = _killed_reader(home, _notes(tmp_path / "notes"))
    assert left.parent == home / SCRATCH_DIR  # the user's text never went to the system's /tmp
    assert list(system_tmp.iterdir()) == []
    with scratch_dir(home, "next-") as mine:  # the next command that uses the area
        assert mine.is_dir() and mine.parent == home / SCRATCH_DIR
        assert not left.exists()
        assert sweep(home) == []  # a running process's own folder is never swept
        assert mine.is_dir()
    assert list((home / SCRATCH_DIR).iterdir()) == []


def test_a_pid_now_running_another_process_does_not_keep_a_folder(tmp_path: Path):
    """The owner is its pid *and* start time: this process's pid with another start time is dead."""
    home = tmp_path / "home"
    held = held_scratch(home, "read-")
    name = Path(held.name).name
    pid, start, rest = name.removeprefix("read-").split("-", 2)
    assert int(pid) == os.getpid()
    impostor = home / SCRATCH_DIR / f"read-{pid}-{int(start) + 1}-{rest}"
    impostor.mkdir()
    stray = home / SCRATCH_DIR / "records.jsonl"  # not a name the area makes: nobody owns it
    stray.write_text("{}\n")
    assert sorted(sweep(home)) == sorted([impostor.name, stray.name])
    assert Path(held.name).is_dir()
    held.cleanup()


def test_ingest_of_document_files_writes_nothing_to_the_system_temp_folder(tmp_path: Path, system_tmp: Path):
    """Looked at while the ingest runs (each progress report), not only after: a spool removed at
    the end was still the user's text in /tmp for as long as it ran — and forever if it was killed."""
    home = tmp_path / "home"
    seen: list[tuple[list[str], list[str]]] = []

    def look(stage: str, done: int, total: int | None) -> None:
        scratch = home / SCRATCH_DIR
        seen.append(([p.name for p in system_tmp.iterdir()], [p.name for p in scratch.glob("read-*/records.jsonl")]))

    ingest(_notes(tmp_path / "notes", 5), "notes", home=home, progress=look)
    assert Collection("notes", home=home).corpus.count() == 5
    assert seen and all(in_tmp == [] for in_tmp, _ in seen), seen
    assert any(spool for _, spool in seen), "the spool was in the home's scratch area while the ingest ran"
    assert list(system_tmp.iterdir()) == []
    assert list((home / SCRATCH_DIR).iterdir()) == []  # the spool went with the stream


def test_read_corpus_spools_under_the_given_home(tmp_path: Path, system_tmp: Path):
    home = tmp_path / "home"
    src = read_corpus(_notes(tmp_path / "notes"), home=home)
    assert src.records.path.is_relative_to(home / SCRATCH_DIR)
    assert list(system_tmp.iterdir()) == []
