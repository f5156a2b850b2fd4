"""How many documents of a real documentation folder get a year and an author when read, by
kind of file, and where those came from (docs/eval/references.md).

    python -m evals.reading_coverage /tmp/refs-docs --sample   # copy the sample, then measure
    cd OLD_CHECKOUT && PYTHONPATH=. python /path/to/evals/reading_coverage.py /tmp/refs-docs

The sample is a fixed choice from this machine's Debian documentation (`sample_paths`): every
4th HTML page under /usr/share/doc (60), every 8th man page of section 1 but Google Cloud's
thousands of generated ones (60) and every 40th of sections 3, 5 and 8 (20), every 8th Markdown,
text or reST file (60), every 10th gzipped changelog, README or NEWS (25) and the PDFs. The
folder is read as an ingest reads it (`stores.file_formats.corpus_reader.read_corpus`); the second form runs an
older checkout's readers on the same folder (the script imports only `stores.file_formats.corpus_reader`).
"""

from __future__ import annotations

import argparse
import inspect
import shutil
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

DOC, MAN = Path("/usr/share/doc"), Path("/usr/share/man")


def _every(paths: list[Path], step: int, limit: int) -> list[Path]:
    return sorted(paths)[::step][:limit]


def sample_paths() -> list[Path]:
    """The files of the sample (see the module docstring), in a fixed order."""
    doc = sorted(p for p in DOC.rglob("*") if p.is_file())
    man1 = [p for p in (MAN / "man1").glob("*.gz") if not p.name.startswith("gcloud")]
    man358 = [p for s in "358" for p in (MAN / f"man{s}").glob("*.gz")]
    texts = [p for p in doc if p.suffix in (".md", ".txt", ".rst")]
    gzipped = [p for p in doc if p.suffix == ".gz" and p.name.lower().startswith(("changelog", "readme", "news"))]
    return (
        _every([p for p in doc if p.suffix == ".html"], 4, 60)
        + _every(man1, 8, 60)
        + _every(man358, 40, 20)
        + _every(texts, 8, 60)
        + _every(gzipped, 10, 25)
        + [p for p in doc if p.suffix == ".pdf"]
    )


def copy_sample(dest: Path) -> None:
    """The sample copied under `dest`, each file at its absolute path below it."""
    for path in sample_paths():
        target = dest / path.relative_to("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)


def kind(path: str) -> str:
    """The row a file counts in."""
    if "/man/" in path:
        return "man page (.gz)"
    if path.endswith(".gz"):
        return "other .gz (changelog, README, NEWS)"
    return {".pdf": "PDF", ".html": "HTML"}.get(Path(path).suffix, "Markdown / text / reST")


def report(folder: Path) -> str:
    """A Markdown table: files, documents, documents with a year and with an author, by kind; then
    the sources of years and authors, and what was skipped or not read."""
    from stores.file_formats.corpus_reader import read_corpus

    # An older checkout's read_corpus may not take `home` (where parsed files are spooled).
    home: dict[str, Any] = (
        {"home": Path(tempfile.mkdtemp())} if "home" in inspect.signature(read_corpus).parameters else {}
    )
    src = read_corpus(folder, **home)
    files = Counter(kind(str(p)) for p in folder.rglob("*") if p.is_file())
    docs: Counter[str] = Counter()
    year: Counter[str] = Counter()
    author: Counter[str] = Counter()
    sources: Counter[str] = Counter()
    for rec in src.records:
        k = kind(str(rec.extras["source_path"]))
        docs[k] += 1
        year[k] += rec.year is not None
        author[k] += bool(rec.authors)
        sources.update(f"{f} ← {w}" for f, w in (rec.extras.get("sources") or {}).items() if f != "date")
    lines = ["| kind | files | documents | with a year | with an author |", "|---|---|---|---|---|"]
    lines += [f"| {k} | {files[k]} | {docs[k]} | {year[k]} | {author[k]} |" for k in sorted(files)]
    n = max(1, sum(docs.values()))
    y, a = sum(year.values()), sum(author.values())
    lines.append(f"| all | {sum(files.values())} | {sum(docs.values())} | {y} ({y / n:.0%}) | {a} ({a / n:.0%}) |")
    lines.append("")
    lines.append("sources: " + (", ".join(f"{s}: {c}" for s, c in sources.most_common()) or "none recorded"))
    lines.append(f"skipped: {len(src.skipped)}; not read (unsupported): {len(src.unsupported)}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--sample", action="store_true", help="copy the sample into the folder first")
    args = parser.parse_args()
    if args.sample:
        copy_sample(args.folder)
    print(report(args.folder))


if __name__ == "__main__":
    from workflows.processes.exit import run_script

    run_script(main)
