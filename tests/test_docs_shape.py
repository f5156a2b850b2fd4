"""The documents stay references a reader can take in: a short README, one current table of
performance figures, and prose wrapped to a width an editor shows.

- README.md is at most 160 lines, and starts with the two commands (`make demo`, `make test`).
- docs/performance.md is at most 400 lines, with no commit hashes (a word of 7–40 hex characters
  with both a digit and a letter), no machine paths (/work, /tmp, /root, /home, …) and no "stop N"
  (the dated history is docs/notes/performance-history.md, where those may stay).
- No line over 120 characters in any .md under docs/, nor in README.md or CONTRIBUTING.md — except
  table rows (lines starting with `|`) and lines inside fenced code blocks (```), which Markdown
  cannot wrap; code lines are kept to 120 where they can be.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WIDTH = 120
HASH = re.compile(r"\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")
MACHINE_PATH = re.compile(r"(?<![\w.~-])/(?:work|tmp|root|home|Users|var|opt|mnt|srv|private)/")
STOP = re.compile(r"\bstops? \d+\b", re.IGNORECASE)


def documents() -> list[Path]:
    return [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]


def long_lines(path: Path) -> list[str]:
    """`path:line (length)` of each prose line over WIDTH (tables and fenced code aside)."""
    found, fenced = [], False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if not fenced and not line.startswith("|") and len(line) > WIDTH:
            name = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
            found.append(f"{name}:{number} ({len(line)})")
    return found


def test_readme_is_short_and_starts_with_the_two_commands() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 160, f"README.md has {len(lines)} lines: move detail to docs/usage.md"
    commands = [line.split("#")[0].strip() for line in lines[:8] if line.startswith("make ")]
    assert commands == ["make demo", "make test"]


def test_performance_is_one_current_table_without_history() -> None:
    text = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 400, "docs/performance.md: the history goes to docs/notes/"
    assert HASH.findall(text) == [], "commit hashes in docs/performance.md"
    assert MACHINE_PATH.findall(text) == [], "machine paths in docs/performance.md"
    assert STOP.findall(text) == [], '"stop N" in docs/performance.md'


def test_no_prose_line_is_over_120_characters() -> None:
    found = [hit for path in documents() for hit in long_lines(path)]
    assert found == [], "rewrap these lines (tables and fenced code aside):\n" + "\n".join(found)


def test_the_checks_catch_what_they_look_for(tmp_path: Path) -> None:
    assert HASH.findall("at 9df32b8 and b89980a; 1000000 documents, 2026-12-04") == ["9df32b8", "b89980a"]
    assert MACHINE_PATH.findall("--dir /tmp/x, cd /work/main, ../shared/datasets, http://h/home/") == [
        "/tmp/",
        "/work/",
    ]
    assert STOP.findall("Stop 35: longest first; stop the worker") == ["Stop 35"]
    page = tmp_path / "page.md"
    page.write_text("x" * 121 + "\n| " + "y" * 130 + "\n```\n" + "z" * 130 + "\n```\n", encoding="utf-8")
    assert long_lines(page) == ["page.md:1 (121)"]
