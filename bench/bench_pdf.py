"""Which PDF text extractor Quarry uses: pypdf vs PyMuPDF vs pypdfium2, text quality and speed.

    python -m bench.bench_pdf [PDF ...]     (needs `pip install pymupdf`; pypdf is a test dependency)

Quality is measured two ways. (1) On a PDF generated here with fpdf2 from known text (a
three-page article: two justified pages and a two-column page), as
word recall and precision against that text, and whether the words come out in reading order
(the longest common subsequence of the word sequences over the known length). (2) On the real
PDFs found on this machine (Debian's package manuals; more can be passed as arguments), where no
truth exists, as the share of extracted words that are "glued" (over 25 letters, the sign of
lost spaces), the word count relative to the best of the three, and the control characters
left in the text (to be cleaned). Speed is pages per second,
best of 3. bench/out/bench_pdf.json.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from difflib import SequenceMatcher
from pathlib import Path

from workflows.processes.exit import run_script

REAL_PDFS = [
    Path("/usr/share/doc/libtasn1-doc/libtasn1.pdf"),
    Path("/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf"),
]
_WORD = re.compile(r"[A-Za-z]+")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")  # e.g. PDFium's \x02 for a soft hyphen

KNOWN_PAGES = [
    "Efficient retrieval of scientific literature. We study lexical and dense retrieval over "
    "collections of research papers, notes and reports that researchers keep on their own disks. "
    "The official benchmark suites rarely match such corpora, so we measure effectiveness on "
    "personal libraries with fine-grained relevance judgements and reflective query refinement.",
    "Results on three collections show that reciprocal rank fusion of BM25 and MiniLM embeddings "
    "outperforms either channel alone, and that citation expansion recovers relevant documents "
    "one hop away from the first retrieved set. Efficiency figures are reported for two cores.",
    "Two columns of running text follow, as conference papers print them. The left column "
    "discusses tokenisation, stemming and stopword removal for scientific vocabulary, which "
    "differs from news text in its long compound terms and formulae. The right column turns to "
    "evaluation: pooled judgements, graded relevance, normalised discounted cumulative gain at "
    "rank twenty, mean average precision and recall at one hundred, with paired randomisation "
    "tests and bootstrap confidence intervals over queries. We close with a discussion of "
    "limitations, reproducibility and the cost of judging personal collections by hand.",
]


def make_known_pdf(path: Path) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    for text in KNOWN_PAGES[:2]:
        pdf.add_page()
        pdf.multi_cell(0, 6, text, align="J")
    pdf.add_page()  # a two-column page: reading order must go down the left column first
    with pdf.text_columns(ncols=2, gutter=10, text_align="J") as cols:
        cols.write(KNOWN_PAGES[2])
    pdf.output(str(path))


def extract_pypdf(path: Path) -> list[str]:
    from pypdf import PdfReader

    return [p.extract_text() or "" for p in PdfReader(path).pages]


def extract_pymupdf(path: Path) -> list[str]:
    import pymupdf

    with pymupdf.open(path) as doc:
        return [page.get_text("text") for page in doc]


def extract_pdfium(path: Path) -> list[str]:
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(path)
    try:
        return [doc[i].get_textpage().get_text_bounded() for i in range(len(doc))]
    finally:
        doc.close()


EXTRACTORS = {"pypdf": extract_pypdf, "pymupdf": extract_pymupdf, "pypdfium2": extract_pdfium}
_MODULES = {"pypdf": "pypdf", "pymupdf": "pymupdf", "pypdfium2": "pypdfium2"}


def timed(fn, path: Path) -> tuple[list[str], float]:
    best, pages = float("inf"), []
    for _ in range(3):
        started = time.perf_counter()
        pages = fn(path)
        best = min(best, time.perf_counter() - started)
    return pages, best


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pdfs", nargs="*", type=Path)
    args = parser.parse_args()
    import importlib.util

    for name, module in _MODULES.items():
        if importlib.util.find_spec(module) is None:
            print(f"{name} is not installed (pip install {name}); left out")
            del EXTRACTORS[name]
    results: dict = {"known": {}, "real": {}}
    with tempfile.TemporaryDirectory() as tmp:
        known = Path(tmp) / "known.pdf"
        make_known_pdf(known)
        truth = words(" ".join(KNOWN_PAGES))
        for name, fn in EXTRACTORS.items():
            pages, _ = timed(fn, known)
            got = words(" ".join(pages))
            recall = sum(min(got.count(w), truth.count(w)) for w in set(truth)) / len(truth)
            precision = sum(min(got.count(w), truth.count(w)) for w in set(got)) / max(len(got), 1)
            order = sum(b.size for b in SequenceMatcher(None, truth, got, autojunk=False).get_matching_blocks()) / len(
                truth
            )
            results["known"][name] = {
                "pages": len(pages),
                "recall": round(recall, 4),
                "precision": round(precision, 4),
                "order": round(order, 4),
            }
    for pdf in [*(p for p in REAL_PDFS if p.is_file()), *args.pdfs]:
        row = {}
        for name, fn in EXTRACTORS.items():
            pages, seconds = timed(fn, pdf)
            ws = [w for p in pages for w in _WORD.findall(p)]
            row[name] = {
                "pages": len(pages),
                "seconds": round(seconds, 4),
                "pages_per_s": round(len(pages) / seconds, 1),
                "words": len(ws),
                "glued_per_1000": round(1000 * sum(len(w) > 25 for w in ws) / max(len(ws), 1), 2),
                "control_chars": sum(len(_CONTROL.findall(p)) for p in pages),
            }
        most = max(r["words"] for r in row.values())
        for r in row.values():
            r["words_vs_best"] = round(r["words"] / most, 3)
        results["real"][pdf.name] = row
    for name in EXTRACTORS:
        k = results["known"][name]
        print(f"{name:10} known: recall {k['recall']:.3f} precision {k['precision']:.3f} order {k['order']:.3f}")
        for pdf, row in results["real"].items():
            r = row[name]
            print(
                f"{'':10} {pdf}: {r['pages']} pages, {r['pages_per_s']:.0f} pages/s, words {r['words']} "
                f"({r['words_vs_best']:.3f} of best), glued {r['glued_per_1000']}/1000, "
                f"control chars {r['control_chars']}"
            )
    out = Path(__file__).resolve().parent / "out"
    out.mkdir(exist_ok=True)
    (out / "bench_pdf.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    run_script(main)
