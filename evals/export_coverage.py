"""What a reference manager gets from a real documentation folder: every document exported as
BibTeX, RIS and CSL-JSON, counted for a year and an author, every title that still carries markup
listed, and the CSL-JSON rendered by `pandoc --citeproc` with its warnings counted
(docs/eval/references.md, "Exporting").

    python -m evals.export_coverage FOLDER
    cd OLD_CHECKOUT && PYTHONPATH=. python /path/to/evals/export_coverage.py FOLDER   # before

The folder is ingested into a scratch home (no index: only the corpus store is read), and one
finished result ranks all of its documents, so each document is exported exactly once, through
`quarry.exports.job_export.export` as `quarry job export` writes it. The script imports only that function,
`Origin` and the ingest, which older checkouts have too.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any

# Markup a cleaned title must not keep: emphasis (not a C name's "__x"), code, links, anchors, reST labels and roles,
# HTML tags, Markdown heading marks, adornments, and a word broken at a line end ("lan- guage").
MARKUP = re.compile(
    r"\*\*|__[^_]*\s[^_]*__|`|\]\(|\{#|^\.\. |:[a-z]+:`|</?[a-z][^>]*>|^#+ |\w[\u2010-] [a-z]|([=~^*])\1\1|\u00ad", re.M
)
_SPAN = re.compile(r"</?span[^>]*>")


def coverage(folder: Path) -> dict[str, Any]:
    """The counts for `folder` (see the module docstring)."""
    from quarry.exports.bibliography import Origin
    from quarry.exports.job_export import export
    from stores.collection import Collection, ingest

    home = Path(tempfile.mkdtemp(prefix="export-coverage-"))
    ingest(folder, "docs", home=home, build_lucene=False)
    records = {r.docid: r for r in Collection("docs", home=home).corpus.iter_records()}
    ranked = [{"docid": d, "score": 0.5, "rank_score": 0.1, "evidence": []} for d in sorted(records)]
    result = {"job_id": "coverage", "collection": "docs", "status": "completed", "ranked": ranked}
    origin = Origin("folder", str(folder.resolve()))
    bib = export(result, records, "bibtex", origin)
    ris = export(result, records, "ris", origin)
    csl = export(result, records, "csl-json", origin)
    items = json.loads(csl)
    titles = {item["id"]: _SPAN.sub("", item["title"]) for item in items}
    csl_file, bare_file = home / "refs.json", home / "bare.json"
    csl_file.write_text(csl, encoding="utf-8")
    # The same entries without case protection: what citeproc does to them unprotected.
    bare_file.write_text(json.dumps([item | {"title": titles[item["id"]]} for item in items]), encoding="utf-8")
    rendered, bare = _pandoc(csl_file), _pandoc(bare_file)
    return {
        "documents": len(records),
        "bibtex": _counts(re.split(r"^@", bib, flags=re.M)[1:], r"^\s*year = ", r"^\s*author = "),
        "ris": _counts(re.split(r"^ER  -.*$", ris, flags=re.M)[:-1], r"^PY  - ", r"^AU  - "),
        "csl-json": {
            "entries": len(items),
            "year": sum("issued" in i for i in items),
            "author": sum("author" in i for i in items),
        },
        "protected_titles": sum('class="nocase"' in item["title"] for item in items),
        "marked_titles": sorted((key, title) for key, title in titles.items() if MARKUP.search(title)),
        "pandoc_warnings": rendered[1] if rendered else None,
        # Entries whose rendering changes when their protection is taken away (citeproc would
        # re-case a code name or acronym of theirs).
        "recased_without_protection": len(set(bare[0]) - set(rendered[0])) if rendered and bare else None,
    }


def _counts(entries: list[str], year: str, author: str) -> dict[str, int]:
    """Entries of one format, and how many have a line matching `year` and `author`."""
    return {
        "entries": len(entries),
        "year": sum(bool(re.search(year, e, re.M)) for e in entries),
        "author": sum(bool(re.search(author, e, re.M)) for e in entries),
    }


def _pandoc(bibliography: Path) -> tuple[list[str], list[str]] | None:
    """(the rendered entries, one a line, and pandoc's warnings) of every entry of a CSL-JSON
    file under pandoc's default style (Chicago author-date, which title-cases titles); None
    without pandoc."""
    try:
        import pypandoc

        binary = pypandoc.get_pandoc_path()
    except (ImportError, OSError):
        return None
    done = subprocess.run(
        [binary, "--citeproc", "-t", "plain", "--wrap=none", "--bibliography", str(bibliography)],
        input="---\nnocite: |\n  @*\n---\n",
        capture_output=True,
        text=True,
        check=False,
    )
    return [line for line in done.stdout.splitlines() if line.strip()], [
        line for line in done.stderr.splitlines() if line.strip()
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    args = parser.parse_args()
    data = coverage(args.folder)
    print(f"documents: {data['documents']}")
    print("| format | entries | with a year | with an author |\n|---|---|---|---|")
    for fmt in ("bibtex", "ris", "csl-json"):
        row = data[fmt]
        n = row["entries"] or 1
        print(
            f"| {fmt} | {row['entries']} | {row['year']} ({100 * row['year'] / n:.0f}%) "
            f"| {row['author']} ({100 * row['author'] / n:.0f}%) |"
        )
    print(f"titles with a case-protected part (CSL nocase): {data['protected_titles']}")
    print(f"entries pandoc renders differently without that protection: {data['recased_without_protection']}")
    print(f"titles with markup: {len(data['marked_titles'])}")
    for key, title in data["marked_titles"]:
        print(f"  {key}: {title}")
    warnings = data["pandoc_warnings"]
    print("pandoc --citeproc warnings: " + ("pandoc not installed" if warnings is None else str(len(warnings))))
    for line in warnings or []:
        print(f"  {line}")


if __name__ == "__main__":
    from workflows.processes.exit import run_script

    run_script(main)
