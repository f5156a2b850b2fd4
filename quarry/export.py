"""A job's result in a researcher's formats: BibTeX, RIS, CSL-JSON, CSV and a Markdown report.

One entry per ranked document with its metadata from the corpus store and, in a note, the
requirements it meets with their evidence quotes and line ranges. The bibliographic formats are
written by their libraries (bibtexparser, rispy; CSL-JSON is plain JSON in the CSL data schema),
so they parse back and import into reference managers.
"""
from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from stores.errors import QuarryError
from stores.records import DocRecord

FORMATS = ("bibtex", "ris", "csl-json", "csv", "markdown")
SUFFIX = {"bibtex": ".bib", "ris": ".ris", "csl-json": ".json", "csv": ".csv", "markdown": ".md"}
MET_AT = 3.0  # a requirement counts as met from this evidence score (0–5) on


def _names(authors: Sequence[str]) -> list[tuple[str, str]]:
    """(family, given) for "Last, F." and "First Last" forms."""
    out = []
    for name in authors:
        name = " ".join(name.split())
        if not name:
            continue
        if "," in name:
            family, given = (p.strip() for p in name.split(",", 1))
        else:
            *given_parts, family = name.split(" ")
            given = " ".join(given_parts)
        out.append((family, given))
    return out


def _met(item: Mapping[str, Any]) -> list[str]:
    """The requirements a ranked document meets, each with its quote and line range."""
    return [f"{e['item']} ({e['score']:.1f}/5, {_where(e)}): \"{e['chunk']}\""
            for e in item.get("evidence", []) if e["score"] >= MET_AT]


def _where(e: Mapping[str, Any]) -> str:
    """Where a quote is: page (paged sources) and lines."""
    return (f"p. {e['page']}, " if e.get("page") else "") + f"lines {e['lines'][0]}-{e['lines'][1]}"


def _note(item: Mapping[str, Any], rank: int) -> str:
    met = _met(item)
    head = f"Quarry rank {rank} (rank score {item.get('rank_score', 0):.4f}, S {item.get('score', 0):.3f})"
    return head + (". Meets: " + " | ".join(met) if met else ". Meets no requirement at 3/5 or more.")


def _key(docid: str, used: set[str]) -> str:
    key = re.sub(r"[^A-Za-z0-9_:\-]", "_", docid)[:60] or "doc"
    base, n = key, 1
    while key in used:
        n += 1
        key = f"{base}_{n}"
    used.add(key)
    return key


def bibtex(result: Mapping[str, Any], records: Mapping[str, DocRecord]) -> str:
    import bibtexparser
    from bibtexparser.model import Entry, Field

    library = bibtexparser.Library()
    used: set[str] = set()
    for rank, item in enumerate(result.get("ranked", []), start=1):
        rec = records.get(item["docid"])
        fields = [Field("title", item.get("title") or (rec.title if rec else ""))]
        if rec and rec.authors:
            fields.append(Field("author", " and ".join(f"{f}, {g}".strip(", ") for f, g in _names(rec.authors))))
        if item.get("year"):
            fields.append(Field("year", str(item["year"])))
        if rec and rec.venue:
            fields.append(Field("journal", rec.venue))
        if rec and rec.keywords:
            fields.append(Field("keywords", ", ".join(rec.keywords)))
        if rec and isinstance(rec.extras.get("doi"), str):
            fields.append(Field("doi", rec.extras["doi"]))
        fields.append(Field("note", _note(item, rank).replace("{", "(").replace("}", ")")))
        library.add(Entry("article" if rec and rec.venue else "misc", _key(item["docid"], used), fields))
    return bibtexparser.write_string(library)


def ris(result: Mapping[str, Any], records: Mapping[str, DocRecord]) -> str:
    import rispy

    entries = []
    for rank, item in enumerate(result.get("ranked", []), start=1):
        rec = records.get(item["docid"])
        entry: dict[str, Any] = {"type_of_reference": "JOUR" if rec and rec.venue else "GEN", "id": item["docid"],
                                 "title": item.get("title", ""), "notes": [_note(item, rank)]}
        if rec and rec.authors:
            entry["authors"] = [f"{f}, {g}".strip(", ") for f, g in _names(rec.authors)]
        if item.get("year"):
            entry["year"] = str(item["year"])
        if rec and rec.venue:
            entry["journal_name"] = rec.venue
        if rec and rec.keywords:
            entry["keywords"] = list(rec.keywords)
        entries.append(entry)
    return rispy.dumps(entries)


def csl_json(result: Mapping[str, Any], records: Mapping[str, DocRecord]) -> str:
    items = []
    for rank, item in enumerate(result.get("ranked", []), start=1):
        rec = records.get(item["docid"])
        entry: dict[str, Any] = {"id": item["docid"], "type": "article-journal" if rec and rec.venue else "article",
                                 "title": item.get("title", ""), "note": _note(item, rank)}
        if rec and rec.authors:
            entry["author"] = [{"family": f, "given": g} if g else {"family": f} for f, g in _names(rec.authors)]
        if item.get("year"):
            entry["issued"] = {"date-parts": [[int(item["year"])]]}
        if rec and rec.venue:
            entry["container-title"] = rec.venue
        if rec and rec.keywords:
            entry["keyword"] = ", ".join(rec.keywords)
        items.append(entry)
    return json.dumps(items, ensure_ascii=False, indent=2)


def csv_rows(result: Mapping[str, Any], records: Mapping[str, DocRecord]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(["rank", "docid", "title", "year", "venue", "authors", "rank_score", "S", "weak", "meets"])
    for rank, item in enumerate(result.get("ranked", []), start=1):
        rec = records.get(item["docid"])
        writer.writerow([rank, item["docid"], item.get("title", ""), item.get("year") or "", rec.venue if rec else "",
                         "; ".join(rec.authors) if rec else "", item.get("rank_score", ""), item.get("score", ""),
                         bool(item.get("weak")), " | ".join(_met(item))])
    return buf.getvalue()


def _md(text: Any) -> str:
    """Text for a Markdown table cell or line: no pipes or newlines breaking the layout."""
    return " ".join(str(text).split()).replace("|", "\\|")


def markdown(result: Mapping[str, Any], records: Mapping[str, DocRecord]) -> str:
    lines = [f"# Quarry job {result.get('job_id')}", "",
             f"- **intent**: {_md(result.get('intent', ''))}",
             f"- **collection**: {result.get('collection')} · **mode**: {result.get('mode')} · "
             f"**policy**: {result.get('policy', 'heuristic')} · **status**: {result.get('status')} · "
             f"**stop**: {result.get('stop_reason') or '-'} · **rounds**: {result.get('rounds')}", ""]
    checklist = result.get("checklist") or []
    if checklist:
        lines += ["## Checklist", ""] + [f"- [{i['kind']}] {_md(i['text'])}" for i in checklist] + [""]
    answer = result.get("answer")
    if isinstance(answer, dict) and answer:
        lines += ["## Answer", "", _md(answer.get("explanation", "")), "",
                  f"**Exact answer**: {_md(answer.get('exact_answer', '') or '-')} · **Confidence**: "
                  f"{answer.get('confidence', 0)}%", ""]
        refs = result.get("references") or []
        if refs:
            lines += ["### References", ""] + [f"- [{r['docid']}] {_md(r.get('title', ''))}, lines "
                                               f"{r['lines'][0]}–{r['lines'][1]}: “{_md(r.get('quote', ''))}”"
                                               for r in refs] + [""]
    lines += ["## Ranked documents", "", "| # | docid | title | year | rank | S |", "|---:|---|---|---:|---:|---:|"]
    for rank, item in enumerate(result.get("ranked", []), start=1):
        lines.append(f"| {rank} | {_md(item['docid'])} | {_md(item.get('title', ''))}{' (weak)' if item.get('weak') else ''} "
                     f"| {item.get('year') or ''} | {item.get('rank_score', 0):.4f} | {item.get('score', 0):.3f} |")
    lines += ["", "## Evidence", ""]
    for rank, item in enumerate(result.get("ranked", []), start=1):
        lines.append(f"**{rank}. {_md(item.get('title', ''))}** (`{item['docid']}`)")
        lines += [f"- {_md(e['item'])} — {e['score']:.1f}/5, {_where(e)}: “{_md(e['chunk'])}”"
                  for e in item.get("evidence", [])] + [""]
    traj, usage = result.get("trajectory") or {}, result.get("usage") or {}
    lines += ["## Trajectory and budget", "",
              f"surfaced {traj.get('surfaced', 0)} · previewed {len(traj.get('previewed', []))} · opened "
              f"{len(traj.get('opened', []))} · cited {len(traj.get('cited', []))}; tool calls "
              f"{(result.get('stats') or {}).get('tool_calls', 0)}; model calls {usage.get('calls', 0)}, tokens "
              f"{usage.get('total_tokens', 0)}, ${usage.get('dollars', 0.0):.4f}", ""]
    return "\n".join(lines)


WRITERS = {"bibtex": bibtex, "ris": ris, "csl-json": csl_json, "csv": csv_rows, "markdown": markdown}


def export(result: Mapping[str, Any], records: Mapping[str, DocRecord], fmt: str) -> str:
    if fmt not in WRITERS:
        raise QuarryError("bad_format", f"unknown export format {fmt!r}", f"use one of: {', '.join(FORMATS)}")
    return WRITERS[fmt](result, records)
