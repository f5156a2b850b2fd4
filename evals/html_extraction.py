"""How well does each HTML extractor keep a page's main text, and only it?

    python -m evals.html_extraction [--extra-path DIR] [--markdown]

Pages: tests/fixtures/html/*.html, real pages of five generators (mdBook, Sphinx/Furo, MkDocs
Material, Javadoc 8, a static blog), each with a hand-marked `.main.txt` (see the README there):
`[title]`, `[sentences]` that must be kept, `[absent]` chrome strings that must not appear, and
`[main]`, the page's whole main text. For each page and extractor:

- sentences: marked sentences found whole on one line of the output (spaces collapsed within the
  line) — what an evidence quote needs; a sentence cut by a line break does not count;
- chrome: marked chrome strings found anywhere in the output (whitespace collapsed);
- word P / R: bag-of-words precision and recall of the output against `[main]` (lower-cased
  `\\w+` tokens, counted with multiplicity): precision is the share of output words that are
  main text, recall the share of main-text words that are in the output;
- ms: extraction time per page (the median of 5 runs).

Extractors: `quarry` (stores.file_formats.html, this repository: title line + text, as indexed), `bs4-before`
(the reader before the current one: BeautifulSoup `get_text("\\n")` with script/style/nav/header/footer/
aside dropped), and, when importable, `trafilatura` (`extract`, text output, tables kept),
`readability` (readability-lxml `Document.summary()`; its HTML turned into text by the same
block-aware writer Quarry uses, so only its choice of content is measured, with `short_title()`
first) and `resiliparse` (`extract_plain_text(main_content=True)`). They are not dependencies of
Quarry: install them anywhere and pass that folder with `--extra-path` (appended to `sys.path`,
so Quarry's own pinned packages still win).
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from workflows.processes.exit import run_script

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "html"


@dataclass(frozen=True)
class Marked:
    name: str
    title: str
    sentences: list[str]
    absent: list[str]
    main: str


def load_marked(path: Path) -> Marked:
    """The hand-marked sections of a `.main.txt` file."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.fullmatch(r"\[(title|sentences|absent|main)\]", line.strip())
        if m:
            current = sections.setdefault(m.group(1), [])
        elif current is not None and (line.strip() or m is None):
            current.append(line)
    clean = {k: [ln for ln in v if ln.strip()] for k, v in sections.items()}
    return Marked(
        path.name.removesuffix(".main.txt"),
        " ".join(clean.get("title", [""])),
        clean.get("sentences", []),
        clean.get("absent", []),
        "\n".join(sections.get("main", [])).strip(),
    )


def pages() -> list[tuple[Path, Marked]]:
    return [(html, load_marked(html.with_suffix(".main.txt"))) for html in sorted(FIXTURES.glob("*.html"))]


# -- extractors ------------------------------------------------------------------------------------


def quarry(source: str) -> str:
    from stores.file_formats.html import read_html_text

    title, text, _ = read_html_text(source)
    return f"{title}\n\n{text}" if title else text


def bs4_before(source: str) -> str:
    """The HTML reader as it was before the current one (then in the module that dispatched by suffix)."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(source, "lxml")
    head_title = soup.title.get_text(" ", strip=True) if soup.title else ""
    for tag in soup(["script", "style", "noscript", "template", "nav", "header", "footer", "aside", "head"]):
        tag.decompose()
    body = soup.body or soup
    h1 = body.find("h1")
    title = head_title or (h1.get_text(" ", strip=True) if h1 else "")
    if h1 is not None and h1.get_text(" ", strip=True) == title:
        h1.decompose()
    lines = [" ".join(line.split()) for line in body.get_text("\n").splitlines()]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    return f"{title}\n\n{text}" if title else text


def trafilatura_text(source: str) -> str:
    import trafilatura

    return trafilatura.extract(source, output_format="txt", include_tables=True, include_comments=False) or ""


def readability_text(source: str) -> str:
    from readability import Document

    from stores.file_formats.html import render_html

    doc = Document(source)
    return f"{doc.short_title()}\n\n{render_html(doc.summary(html_partial=True), chrome=False)}"


def resiliparse_text(source: str) -> str:
    from resiliparse.extract.html2text import extract_plain_text

    return extract_plain_text(source, main_content=True, preserve_formatting=True)


EXTRACTORS: dict[str, Callable[[str], str]] = {
    "quarry": quarry,
    "bs4-before": bs4_before,
    "trafilatura": trafilatura_text,
    "readability": readability_text,
    "resiliparse": resiliparse_text,
}


# -- measures --------------------------------------------------------------------------------------


def _words(text: str) -> Counter[str]:
    return Counter(re.findall(r"\w+", text.lower()))


def kept_sentences(output: str, sentences: list[str]) -> list[str]:
    lines = {" ".join(line.split()) for line in output.splitlines()}
    return [s for s in sentences if any(" ".join(s.split()) in line for line in lines)]


def found_chrome(output: str, absent: list[str]) -> list[str]:
    flat = " ".join(output.split())
    return [a for a in absent if a in flat]


def word_scores(output: str, main: str) -> tuple[float, float]:
    out, gold = _words(output), _words(main)
    overlap = sum((out & gold).values())
    return (overlap / max(1, sum(out.values())), overlap / max(1, sum(gold.values())))


@dataclass(frozen=True)
class Score:
    page: str
    extractor: str
    sentences: int
    of_sentences: int
    chrome: int
    of_chrome: int
    precision: float
    recall: float
    ms: float
    error: str = ""


def measure(extractors: dict[str, Callable[[str], str]], runs: int = 5) -> list[Score]:
    scores = []
    for html, marked in pages():
        source = html.read_text(encoding="utf-8")
        for name, fn in extractors.items():
            try:
                times = []
                for _ in range(runs):
                    t0 = time.perf_counter()
                    output = fn(source)
                    times.append((time.perf_counter() - t0) * 1000)
            except ImportError as exc:
                scores.append(
                    Score(
                        marked.name,
                        name,
                        0,
                        len(marked.sentences),
                        0,
                        len(marked.absent),
                        0,
                        0,
                        0,
                        f"not installed ({exc.name})",
                    )
                )
                continue
            p, r = word_scores(output, marked.main)
            scores.append(
                Score(
                    marked.name,
                    name,
                    len(kept_sentences(output, marked.sentences)),
                    len(marked.sentences),
                    len(found_chrome(output, marked.absent)),
                    len(marked.absent),
                    p,
                    r,
                    statistics.median(times),
                )
            )
    return scores


def table(scores: list[Score]) -> str:
    rows = [
        "| page | extractor | sentences kept whole | chrome kept | word P | word R | ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in scores:
        if s.error:
            rows.append(f"| {s.page} | {s.extractor} | {s.error} | | | | |")
            continue
        rows.append(
            f"| {s.page} | {s.extractor} | {s.sentences}/{s.of_sentences} | {s.chrome}/{s.of_chrome} | "
            f"{s.precision:.3f} | {s.recall:.3f} | {s.ms:.1f} |"
        )
    worst: dict[str, list[Score]] = {}
    for s in scores:
        if not s.error:
            worst.setdefault(s.extractor, []).append(s)
    rows += [
        "",
        "| extractor | worst sentences | worst chrome | worst word P | worst word R | mean word P | mean word R |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, ss in worst.items():
        rows.append(
            f"| {name} | {min(s.sentences / s.of_sentences for s in ss):.2f} | "
            f"{max(s.chrome / s.of_chrome for s in ss):.2f} | {min(s.precision for s in ss):.3f} | "
            f"{min(s.recall for s in ss):.3f} | {statistics.mean(s.precision for s in ss):.3f} | "
            f"{statistics.mean(s.recall for s in ss):.3f} |"
        )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--extra-path",
        action="append",
        default=[],
        help="a folder with trafilatura / readability-lxml / resiliparse installed (appended to sys.path)",
    )
    ap.add_argument("--only", help="comma-separated extractors")
    args = ap.parse_args(argv)
    sys.path.extend(args.extra_path)
    chosen = {k: v for k, v in EXTRACTORS.items() if not args.only or k in args.only.split(",")}
    print(table(measure(chosen)))


if __name__ == "__main__":
    run_script(main)
