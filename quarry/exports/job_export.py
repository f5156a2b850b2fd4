"""A job's result in a researcher's formats: BibTeX, RIS, CSL-JSON, CSV and a Markdown report.

One entry per ranked document with its metadata from the corpus store and, in a note, the
requirements it meets with their evidence quotes and line ranges. What an entry is (its type from
the venue, its citation key, its title, its URL) is decided once in quarry.exports.bibliography, so every
format cites a document by the same key. The bibliographic formats are written in
quarry.exports.formats; CSV and the Markdown report here.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from nodes.evidence.answer_confidence import stated_confidence
from nodes.policy.registry import DEFAULT_POLICY
from quarry.exports.bibliography import Origin, Reference, collection_origin, references
from quarry.exports.formats import bibtex, csl_json, met, ris, where
from quarry.exports.rules import display_title
from stores.errors import UNPRINTABLE, QuarryError
from stores.records import DocRecord

FORMATS = ("bibtex", "ris", "csl-json", "csv", "markdown")
SUFFIX = {"bibtex": ".bib", "ris": ".ris", "csl-json": ".json", "csv": ".csv", "markdown": ".md"}


def suffix_hint(fmt: str, path: Path) -> str | None:
    """A hint when a file's extension will keep a tool from reading it: pandoc picks the
    bibliography reader by extension and reads CSL-JSON only from `.json` (not `.csl-json`)."""
    if fmt == "csl-json" and path.suffix.lower() != ".json":
        return f"hint: pandoc reads CSL-JSON only from a .json file: name it {path.stem}.json"
    return None


def csv_rows(refs: Sequence[Reference]) -> str:
    """One row per ranked document; `key` is the citation key of the other formats."""
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(
        ["rank", "key", "docid", "title", "year", "type", "venue", "authors", "url", "rank_score", "S", "weak", "meets"]
    )
    for ref in refs:
        item = ref.item
        writer.writerow(
            [
                ref.rank,
                ref.key,
                ref.docid,
                ref.title,
                ref.year or "",
                ref.kind,
                ref.venue or "",
                "; ".join(n.display() for n in ref.authors),
                ref.url or "",
                item.get("rank_score", ""),
                item.get("score", ""),
                bool(item.get("weak")),
                " | ".join(met(item)),
            ]
        )
    return buf.getvalue()


def _md(text: Any) -> str:
    """Text for a Markdown table cell or line: no pipes or newlines breaking the layout."""
    return " ".join(str(text).split()).replace("|", "\\|")


def markdown(result: Mapping[str, Any], refs: Sequence[Reference]) -> str:
    """The job as a report: intent, checklist, answer, ranked documents (with their citation
    keys) and the evidence per document."""
    lines = [
        f"# Quarry job {result.get('job_id')}",
        "",
        f"- **intent**: {_md(result.get('intent', ''))}",
        f"- **collection**: {result.get('collection')} · **mode**: {result.get('mode')} · "
        f"**policy**: {result.get('policy', DEFAULT_POLICY)} · **status**: {result.get('status')} · "
        f"**stop**: {result.get('stop_reason') or '-'} · **rounds**: {result.get('rounds')}",
        "",
    ]
    checklist = result.get("checklist") or []
    if checklist:
        lines += ["## Checklist", ""] + [f"- [{i['kind']}] {_md(i['text'])}" for i in checklist] + [""]
    answer = result.get("answer")
    if isinstance(answer, dict) and answer:
        lines += _answer_section(result, answer)
    lines += _documents_section(refs)
    traj, usage = result.get("trajectory") or {}, result.get("usage") or {}
    lines += [
        "## Trajectory and budget",
        "",
        f"surfaced {traj.get('surfaced', 0)} · previewed {len(traj.get('previewed', []))} · opened "
        f"{len(traj.get('opened', []))} · cited {len(traj.get('cited', []))}; tool calls "
        f"{(result.get('stats') or {}).get('tool_calls', 0)}; model calls {usage.get('calls', 0)}, tokens "
        f"{usage.get('total_tokens', 0)}, ${usage.get('dollars', 0.0):.4f}",
        "",
    ]
    return "\n".join(lines)


def _answer_section(result: Mapping[str, Any], answer: dict) -> list[str]:
    """The answer, its exact answer and confidence, and the references it cites."""
    lines = [
        "## Answer",
        "",
        _md(answer.get("explanation", "")),
        "",
        f"**Exact answer**: {_md(answer.get('exact_answer', '') or '-')} · **Confidence**: "
        f"{_md(stated_confidence(answer))}",
        "",
    ]
    cited = result.get("references") or []
    if cited:
        lines += (
            ["### References", ""]
            + [
                f"- [{r['docid']}] {_md(display_title(r.get('title', ''), r['docid']))}, lines "
                f"{r['lines'][0]}–{r['lines'][1]}: “{_md(r.get('quote', ''))}”"
                for r in cited
            ]
            + [""]
        )
    return lines


def _documents_section(refs: Sequence[Reference]) -> list[str]:
    """The ranked documents as a table, then the evidence quoted for each."""
    lines = [
        "## Ranked documents",
        "",
        "| # | key | docid | title | year | rank | S |",
        "|---:|---|---|---|---:|---:|---:|",
    ]
    for ref in refs:
        item = ref.item
        weak = " (weak)" if item.get("weak") else ""
        lines.append(
            f"| {ref.rank} | {ref.key} | {_md(ref.docid)} | {_md(ref.title)}{weak} "
            f"| {ref.year or ''} | {item.get('rank_score', 0):.4f} | {item.get('score', 0):.3f} |"
        )
    lines += ["", "## Evidence", ""]
    for ref in refs:
        item = ref.item
        lines.append(f"**{ref.rank}. {_md(ref.title)}** (`{ref.docid}`, key `{ref.key}`)")
        lines += [
            f"- {_md(e['item'])} — {e['score']:.1f}/5, {where(e)}: “{_md(e['chunk'])}”"
            for e in item.get("evidence", [])
        ] + [""]
    return lines


# the formats written from the references alone (markdown also reports the job itself)
WRITERS: dict[str, Callable[[Sequence[Reference]], str]] = {
    "bibtex": bibtex,
    "ris": ris,
    "csl-json": csl_json,
    "csv": csv_rows,
}


def _clean(value: Any) -> Any:
    """`value` with UNPRINTABLE characters (stores.errors: control characters but tab and newline,
    C1, bidi overrides, lone surrogates) removed from every string in it, keys included.

    Why: an export is a data file that is also printed to a terminal (`job export` writes to
    stdout by default) and imported by reference managers; a title or quote with ESC or OSC
    sequences must reach neither raw. Removing (not escaping) keeps the fields clean data.
    """
    if isinstance(value, str):
        return UNPRINTABLE.sub("", value)
    if isinstance(value, Mapping):
        return {_clean(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_clean(v) for v in value)
    return value


def _clean_record(rec: DocRecord) -> DocRecord:
    return rec.model_copy(
        update={k: _clean(getattr(rec, k)) for k in ("docid", "title", "venue", "authors", "keywords", "extras")}
    )


def export(result: Mapping[str, Any], records: Mapping[str, DocRecord], fmt: str, origin: Origin | None = None) -> str:
    """The job's result in `fmt`, every text field cleaned of terminal control characters first.

    `origin` (where the collection was ingested from) gives local files their `file://` URL; by
    default it is read from the result's collection through the stores API (None when gone)."""
    if fmt not in FORMATS:
        raise QuarryError("bad_format", f"unknown export format {fmt!r}", f"use one of: {', '.join(FORMATS)}")
    clean_records = {_clean(docid): _clean_record(rec) for docid, rec in records.items()}
    clean_result = _clean(result)
    if origin is None and records:
        origin = collection_origin(clean_result.get("collection"))
    refs = references(clean_result, clean_records, origin)
    return markdown(clean_result, refs) if fmt == "markdown" else WRITERS[fmt](refs)
