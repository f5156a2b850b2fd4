"""PDF reading time against page count: linear, and a file over the size limit refused early.

    python -m bench.bench_pdf_pages [--pages 1000 5000 20000] [--lines 8] [--repeats 1]

For each size, a PDF of that many pages (one fpdf2 page of `--lines` lines of about 50
characters, copied by PDFium — 20,000 pages × 8 lines stay under the 10-million-character
limit) is read through `stores.file_formats.dispatch.read_file` as an ingest reads it: PDFium text per page,
cleaning, pagination into text and page offsets. Reported per size: seconds (best of
`--repeats`), milliseconds per page, and the per-page cost relative to the smallest size —
about 1.0 throughout when reading is linear (pagination alone was quadratic before: 4,000 pages
took 19.5 s). `paginate s` times the pagination step alone. Last row: a 20,000-page file of
long pages (40 lines each, over 40 million characters), which must be refused at the page
that passes the limit rather than after reading all of it. bench/out/bench_pdf_pages.json.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from workflows.processes.exit import run_script

REPO = Path(__file__).resolve().parents[1]
LINE = "Lexical retrieval over long scanned reports, page {page} line {line}."  # about 50 characters


def make_pdf(path: Path, pages: int, lines: int) -> Path:
    from tests.fakes import copied_pdf_pages

    return copied_pdf_pages(path, pages, lines, LINE.replace("{page}", "N"))


T = TypeVar("T")


def best_of(repeats: int, fn: Callable[[], T]) -> tuple[float, T | ValueError | None]:
    best = float("inf")
    result: T | ValueError | None = None
    for _ in range(repeats):
        started = time.perf_counter()
        try:
            result = fn()
        except ValueError as exc:  # Unreadable: the size limit
            result = exc
        best = min(best, time.perf_counter() - started)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, nargs="+", default=[1000, 5000, 20000])
    parser.add_argument("--lines", type=int, default=8, help="lines per page (about 50 characters each)")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()

    from stores.file_formats.dispatch import read_file
    from stores.file_formats.pdf import page_lines, paginate

    work = Path(tempfile.mkdtemp(prefix="quarry-bench-pdf-pages-"))
    rows = []
    for pages in sorted(args.pages):
        pdf = make_pdf(work / f"p{pages}.pdf", pages, args.lines)
        seconds, doc = best_of(args.repeats, lambda: read_file(pdf))
        assert doc is not None and not isinstance(doc, Exception), f"{pages} pages: {doc}"
        lines = [page_lines("\n".join(LINE.format(page=p, line=n) for n in range(args.lines))) for p in range(pages)]
        pag_s, _ = best_of(args.repeats, lambda: paginate(lines))
        rows.append(
            {
                "pages": pages,
                "chars": len(doc.text),
                "read_s": round(seconds, 3),
                "ms_per_page": round(1000 * seconds / pages, 4),
                "paginate_s": round(pag_s, 4),
            }
        )
    base = rows[0]["ms_per_page"]
    for row in rows:
        row["per_page_ratio"] = round(row["ms_per_page"] / base, 2)
    big_pages = max(args.pages)
    big = make_pdf(work / "big.pdf", big_pages, 40)
    big_s, refused = best_of(args.repeats, lambda: read_file(big))
    limit = {
        "pages": big_pages,
        "lines_per_page": 40,
        "refused": isinstance(refused, Exception),
        "seconds": round(big_s, 3),
        "reason": str(refused) if isinstance(refused, Exception) else None,
    }

    print(f"{'pages':>7} {'characters':>11} {'read s':>8} {'ms/page':>8} {'per-page ratio':>15} {'paginate s':>11}")
    for row in rows:
        print(
            f"{row['pages']:>7,} {row['chars']:>11,} {row['read_s']:>8.2f} {row['ms_per_page']:>8.3f} "
            f"{row['per_page_ratio']:>15.2f} {row['paginate_s']:>11.3f}"
        )
    print(
        f"{big_pages:,} pages x 40 lines: {'refused' if limit['refused'] else 'read (under the limit at this size)'} "
        f"after {big_s:.2f} s — {limit['reason']}"
    )
    out = REPO / "bench" / "out"
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_pdf_pages.json").write_text(json.dumps({"sizes": rows, "over_limit": limit}, indent=2))


if __name__ == "__main__":
    run_script(main)
