"""The three bibliographic formats of `quarry job export`: BibTeX, RIS and CSL-JSON, each
spelling the `quarry.exports.bibliography.Reference` entries in its own terms (types, containers,
identifiers), written by their libraries (bibtexparser, rispy; CSL-JSON is plain JSON in the CSL
data schema) so they parse back and import into pandoc and reference managers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from quarry.exports.bibliography import Reference
from quarry.exports.names import Name
from quarry.exports.titles import Title

MET_AT = 3.0  # a requirement counts as met from this evidence score (0–5) on


def met(item: Mapping[str, Any]) -> list[str]:
    """The requirements a ranked document meets, each with its quote and line range."""
    return [
        f'{e["item"]} ({e["score"]:.1f}/5, {where(e)}): "{e["chunk"]}"'
        for e in item.get("evidence", [])
        if e["score"] >= MET_AT
    ]


def where(e: Mapping[str, Any]) -> str:
    """Where a quote is: page (paged sources) and lines."""
    return (f"p. {e['page']}, " if e.get("page") else "") + f"lines {e['lines'][0]}-{e['lines'][1]}"


def note(item: Mapping[str, Any], rank: int) -> str:
    """The entry's note: Quarry's rank and scores, and the requirements met with their quotes."""
    meets = met(item)
    head = f"Quarry rank {rank} (rank score {item.get('rank_score', 0):.4f}, S {item.get('score', 0):.3f})"
    return head + (". Meets: " + " | ".join(meets) if meets else ". Meets no requirement at 3/5 or more.")


# BibTeX/LaTeX special characters, escaped by hand: bibtexparser 2 writes values as given, and
# its LatexEncodingMiddleware (pylatexenc) would also rewrite every non-ASCII letter and the
# verbatim fields (url, doi, eprint) where `%` must stay `%`. UTF-8 stays UTF-8 (biber, pandoc,
# Zotero and JabRef read it). A `}` or `\` in a title is data and can never end the field.
_TEX = {
    "\\": r"\textbackslash{}",
    "%": r"\%",
    "&": r"\&",
    "#": r"\#",
    "_": r"\_",
    "$": r"\$",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "{": r"\{",
    "}": r"\}",
}
# BibTeX counts every brace character, escaped or not, so `\{`/`\}` are safe only while the
# text's braces pair up; an unpaired one (a quote cut after "}") is written `$\lbrace$`/
# `$\rbrace$`, which has no brace character and which pandoc and LaTeX print as "{" / "}".
_UNPAIRED = {**_TEX, "{": r"$\lbrace$", "}": r"$\rbrace$"}
_TEX_CHARS = re.compile("[" + re.escape("".join(_TEX)) + "]")


def _paired(text: str) -> bool:
    """Whether the braces in `text` pair up in order (BibTeX's own brace counting)."""
    depth = 0
    for char in text:
        depth += {"{": 1, "}": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0


def tex(text: str) -> str:
    """`text` as a BibTeX field value: special characters escaped, whitespace runs (newlines
    included) as one space."""
    text = " ".join(str(text).split())
    table = _TEX if _paired(text) else _UNPAIRED
    return _TEX_CHARS.sub(lambda m: table[m.group()], text)


def _tex_name(name: Name) -> str:
    """One BibTeX name: "von Last, Jr, First" for a person (BibTeX's own three-part form), an
    organisation braced whole ("{The PARI Group}") so BibTeX never splits or abbreviates it; a
    name containing " and " is braced so BibTeX does not split it into two people."""
    if name.literal:
        return "{" + tex(name.literal) + "}"
    text = tex(", ".join(p for p in (name.surname, name.suffix, name.given) if p))
    return f"{{{text}}}" if re.search(r"\band\b", text, re.I) else text


def csl_title(title: Title) -> str:
    """A title in CSL's rich text: each protected part in `<span class="nocase">`, so a style's
    title casing leaves `printf` and `SQLite` as they are."""
    return "".join(f'<span class="nocase">{text}</span>' if keep else text for text, keep in title.segments)


def csl_name(name: Name) -> dict[str, str]:
    """One CSL name variable: `literal` for an organisation, the parts for a person."""
    if name.literal:
        return {"literal": name.literal}
    parts = {"family": name.family, "given": name.given, "non-dropping-particle": name.particle, "suffix": name.suffix}
    return {key: value for key, value in parts.items() if value}


# kind -> (entry type, field holding the venue); arXiv preprints follow arXiv's own BibTeX export
_BIBTEX_TYPE = {
    "conference": ("inproceedings", "booktitle"),
    "journal": ("article", "journal"),
    "report": ("techreport", "institution"),
    "book": ("book", "publisher"),
    "arxiv": ("misc", None),
    "local": ("misc", None),
    "misc": ("misc", None),
}


def bibtex(refs: Sequence[Reference]) -> str:
    """BibTeX written by bibtexparser. Titles (and proceedings/journal names) are double-braced:
    pandoc and biber otherwise sentence-case an English title ("A Python Toolkit" -> "A python
    toolkit"), and Quarry cannot tell a proper noun from a word, so the whole title is kept —
    which also keeps its code names and acronyms (`printf`, SQLite) as written."""
    import bibtexparser
    from bibtexparser.model import Entry, Field

    library = bibtexparser.Library()
    for ref in refs:
        entry_type, container = _BIBTEX_TYPE[ref.kind]
        fields = [Field("title", "{" + tex(ref.title) + "}")]
        if ref.authors:
            fields.append(Field("author", " and ".join(_tex_name(n) for n in ref.authors)))
        if ref.date:
            fields.append(Field("year", str(ref.date[0])))
        if len(ref.date) > 1:
            fields.append(Field("date", "-".join(f"{p:02d}" for p in ref.date)))
        if container and ref.venue:
            value = tex(ref.venue)
            fields.append(Field(container, "{" + value + "}" if container in ("booktitle", "journal") else value))
        if ref.eprint:
            fields += [Field("eprint", ref.eprint), Field("archivePrefix", "arXiv")]
        if ref.howpublished:
            fields.append(Field("howpublished", tex(ref.howpublished)))
        if ref.url:
            fields.append(Field("url", ref.url))  # percent-encoded: no brace, backslash or space left
        if ref.doi:
            fields.append(Field("doi", ref.doi))
        if ref.keywords:
            fields.append(Field("keywords", tex(", ".join(ref.keywords))))
        fields.append(Field("note", tex(note(ref.item, ref.rank))))
        library.add(Entry(entry_type, ref.key, fields))
    return bibtexparser.write_string(library)


def _ris_writer() -> type:
    """rispy's writer without its "1." line before each record: the RIS spec (and pandoc's and
    reference managers' readers) expect a record to start with `TY  -`."""
    import rispy

    class Writer(rispy.RisWriter):
        def set_header(self, count: int) -> str:
            return ""

    return Writer


def _ris_name(name: Name) -> str:
    """One RIS AU: "Family, Given, Suffix" for a person; an organisation whole, with the
    trailing comma that marks a corporate author (EndNote's convention, which pandoc's reader
    also honours): without it "The PARI Group" is read as the person "Group, The PARI"."""
    return _line(name.literal + "," if name.literal else name.display())


_RIS_TYPE = {
    "conference": "CONF",
    "journal": "JOUR",
    "report": "RPRT",
    "book": "BOOK",
    "arxiv": "UNPB",
    "local": "GEN",
    "misc": "GEN",
}


def _line(text: str) -> str:
    """A RIS value on one line: a newline in a title or quote would start a bogus tag."""
    return " ".join(str(text).split())


def ris(refs: Sequence[Reference]) -> str:
    """RIS written by rispy. CONF + T2 (the proceedings) and JOUR + T2 (the journal) are what
    pandoc's RIS reader and Zotero map to paper-conference / article-journal with a container;
    arXiv preprints are UNPB with PB arXiv and the abs URL; local files GEN with their file URL."""
    import rispy

    entries = []
    for ref in refs:
        entry: dict[str, Any] = {"type_of_reference": _RIS_TYPE[ref.kind], "id": ref.key, "title": _line(ref.title)}
        if ref.authors:
            entry["authors"] = [_ris_name(n) for n in ref.authors]
        if ref.date:
            entry["year"] = str(ref.date[0])
        if len(ref.date) > 1:  # RIS DA is YYYY/MM/DD/
            entry["date"] = "/".join(f"{p:02d}" for p in ref.date) + ("/" if len(ref.date) == 3 else "")
        if ref.venue:
            entry["publisher" if ref.kind in ("report", "book") else "secondary_title"] = _line(ref.venue)
        if ref.kind == "arxiv":
            entry["publisher"] = "arXiv"
            if ref.eprint:
                entry["note"] = f"arXiv:{ref.eprint}"
        if ref.howpublished and ref.kind != "arxiv":
            entry["type_of_work"] = _line(ref.howpublished)
        if ref.url:
            entry["urls"] = [ref.url]
        if ref.doi:
            entry["doi"] = ref.doi
        if ref.keywords:
            entry["keywords"] = [_line(k) for k in ref.keywords]
        entry["notes"] = [_line(note(ref.item, ref.rank))]
        entries.append(entry)
    return rispy.dumps(entries, implementation=_ris_writer())


_CSL_TYPE = {
    "conference": "paper-conference",
    "journal": "article-journal",
    "report": "report",
    "book": "book",
    "arxiv": "article",
    "local": "manuscript",
    "misc": "manuscript",
}


def csl_json(refs: Sequence[Reference]) -> str:
    """CSL-JSON (the CSL 1.0 data schema): arXiv preprints as `article` with publisher arXiv and
    number arXiv:ID (how Zotero exports a preprint), local files as `manuscript` with their URL."""
    items = []
    for ref in refs:
        entry: dict[str, Any] = {
            "id": ref.key,
            "type": _CSL_TYPE[ref.kind],
            "title": csl_title(ref.title_parts),
            "note": note(ref.item, ref.rank),
        }
        if ref.authors:
            entry["author"] = [csl_name(n) for n in ref.authors]
        if ref.date:
            entry["issued"] = {"date-parts": [list(ref.date)]}
        if ref.venue:
            entry["publisher" if ref.kind in ("report", "book") else "container-title"] = ref.venue
        if ref.kind == "arxiv":
            entry["publisher"] = "arXiv"
            if ref.eprint:
                entry["number"] = f"arXiv:{ref.eprint}"
        elif ref.howpublished:
            entry["genre"] = ref.howpublished
        if ref.url:
            entry["URL"] = ref.url
        if ref.doi:
            entry["DOI"] = ref.doi
        if ref.keywords:
            entry["keyword"] = ", ".join(ref.keywords)
        items.append(entry)
    return json.dumps(items, ensure_ascii=False, indent=2)
