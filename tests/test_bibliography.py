"""Bibliographies a researcher can cite from (issue 20, item 5): exported BibTeX and CSL-JSON
rendered by a real CSL processor (citeproc-py), RIS parsed back by rispy.

The rendering style below is a minimal CSL style written for these assertions: it prints a
conference paper's container after "In proceedings:" and a journal's after "Journal:", so the
entry type that reaches the processor is visible in the text. For BibTeX it sentence-cases
titles, which is what pandoc does to an unprotected English BibTeX title ("A Python Toolkit" ->
"A python toolkit" under a style without title casing; checked by hand with pandoc 2.17
--citeproc): only case-protected words survive. (CSL-JSON titles are stored as written and
have no such reader step.)
"""

from __future__ import annotations

import csv
import io
import json
import re
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from quarry.cli import app
from quarry.exports.bibliography import Origin, assign_keys, base_key
from quarry.exports.job_export import export
from quarry.exports.rules import is_junk_title, venue_kind
from stores.records import DocRecord

STYLE = """<?xml version="1.0" encoding="utf-8"?>
<style xmlns="http://purl.org/net/xbiblio/csl" class="in-text" version="1.0">
  <info><title>Quarry test style</title><id>quarry-test</id><updated>2026-01-01T00:00:00+00:00</updated></info>
  <citation><layout><text variable="title"/></layout></citation>
  <bibliography>
    <layout suffix=".">
      <group delimiter=". ">
        <text variable="title"{title_case}/>
        <choose>
          <if type="paper-conference"><text variable="container-title" prefix="In proceedings: "/></if>
          <else-if type="article-journal"><text variable="container-title" prefix="Journal: "/></else-if>
        </choose>
        <text variable="publisher"/>
        <text variable="number"/>
        <text variable="genre"/>
        <text variable="URL"/>
      </group>
    </layout>
  </bibliography>
</style>
"""

PYSERINI = "Pyserini: A Python Toolkit for Reproducible Information Retrieval"
DOCS = {
    "papers/pyserini.md": f"---\ntitle: '{PYSERINI}'\nauthors: ['Lin, Jimmy', 'Ma, Xueguang']\nyear: 2021\n"
    "venue: SIGIR\n---\nPyserini is a Python toolkit for reproducible ranking with sparse "
    "and dense representations.\n",
    "papers/monobert.md": "---\ntitle: Passage Re-ranking with BERT\nauthors: ['Nogueira, Rodrigo', 'Cho, Kyunghyun']\n"
    "year: 2019\nvenue: arXiv\nurl: https://arxiv.org/abs/1901.04085\n---\nA BERT "
    "re-ranker of passages for ranking.\n",
    "papers/idf.md": "---\ntitle: A Statistical Interpretation of Term Specificity\nauthors: ['Sparck Jones, Karen']\n"
    "year: 1972\nvenue: Journal of Documentation\n---\nInverse document frequency for ranking.\n",
    "notes/Ranking Ideas.md": "# Ranking Ideas For Quarry\n\nNotes on ranking with fusion.\n",
}


# --- the rules, table-driven --------------------------------------------------------------------


@pytest.mark.parametrize(
    "venue, kind",
    [
        ("NAACL", "conference"),
        ("ACL", "conference"),
        ("EMNLP", "conference"),
        ("Findings of EMNLP", "conference"),
        ("SIGIR", "conference"),
        ("SIGIR 2021", "conference"),
        ("NeurIPS", "conference"),
        ("NIPS", "conference"),
        ("ICML", "conference"),
        ("ICLR", "conference"),
        ("CVPR", "conference"),
        ("CIKM", "conference"),
        ("KDD", "conference"),
        ("TREC", "conference"),
        (
            "Proceedings of the 44th International ACM SIGIR Conference on Research and Development in Information "
            "Retrieval",
            "conference",
        ),
        ("Workshop on Neural IR", "conference"),
        ("Symposium on Document Processing", "conference"),
        ("Annual Conference on Neural Information Processing Systems", "conference"),
        ("Journal of Documentation", "journal"),
        ("Communications of the ACM", "journal"),
        ("Transactions of the Association for Computational Linguistics", "journal"),
        ("TACL", "journal"),
        ("ACM Transactions on Information Systems", "journal"),
        ("SIGIR Forum", "journal"),
        ("Proceedings of the IEEE", "journal"),
        ("Information Processing & Management", "journal"),
        ("Foundations and Trends in Information Retrieval", "journal"),
        ("arXiv", "arxiv"),
        ("arXiv preprint arXiv:1901.04085", "arxiv"),
        ("CoRR", "arxiv"),
        ("Stanford InfoLab Technical Report", "report"),
        ("Microsoft Research Tech. Rep.", "report"),
        ("MIT Press", "book"),
        ("CHIIR", "conference"),
        ("STOC", "conference"),
        ("NAACL-HLT", "conference"),
        ("EMNLP-IJCNLP", "conference"),
        ("ACM Conference on Digital Libraries", "conference"),
        (None, "misc"),
        ("  ", "misc"),
    ],
)
def test_venue_kind(venue: str | None, kind: str) -> None:
    assert venue_kind(venue) == kind


def test_keys_are_one_ascii_scheme_with_stable_suffixes() -> None:
    assert base_key("Karpukhin", 2020, "Dense Passage Retrieval for Open-Domain QA", "dpr-2020") == "karpukhin2020dense"
    assert base_key("Oğuz", 2021, "The Ünïcode Title", "x") == "oguz2021unicode"
    assert base_key("Sparck Jones", 1972, "A Statistical Interpretation", "x") == "sparckjones1972statistical"
    assert base_key(None, None, "Ranking Ideas For Quarry", "notes/x") == "rankingideas"
    assert base_key(None, 2023, "日本語", "notes/Ranking_Ideas") == "rankingideas2023"  # no ASCII word: the docid
    same = {"b-doc": "lin2021pyserini", "a-doc": "lin2021pyserini", "c-doc": "lin2021pyserini", "d": "lin2021other"}
    keys = assign_keys(same)
    assert keys == {
        "a-doc": "lin2021pyserinia",
        "b-doc": "lin2021pyserinib",
        "c-doc": "lin2021pyserinic",
        "d": "lin2021other",
    }
    assert assign_keys(dict(reversed(list(same.items())))) == keys  # rank order does not change a key
    assert all(re.fullmatch(r"[a-z0-9]+", k) for k in keys.values())


@pytest.mark.parametrize(
    "title, junk",
    [
        (".. cmake-manual-description: CMake Compile Features Reference", True),
        ("GREP(1) User Commands GREP(1)", True),
        ("<!--", True),
        ("<!-- generated by mdbook -->", True),
        ("<div><span></span></div>", True),
        ("---", True),
        ("{% include nav.html %}", True),
        ("1.2.3", True),
        ("Pyserini: A Python Toolkit", False),
        ("The C++ Programming Language", False),
        ("GREP(1)", False),
        ("Rust 1.75 <br> release notes", False),
    ],
)
def test_junk_titles(title: str, junk: bool) -> None:
    assert is_junk_title(title) is junk


def _ranked(recs: dict[str, DocRecord], quote: str = "a } quote \\ here") -> dict:
    """A finished job's result ranking `recs` in order, each with one evidence quote."""
    return {
        "job_id": "j",
        "collection": "gone",
        "status": "completed",
        "ranked": [
            {
                "docid": d,
                "title": r.title,
                "year": r.year,
                "score": 0.5,
                "rank_score": 0.1,
                "evidence": [{"item": "topic", "score": 4.0, "lines": [3, 4], "chunk": quote}],
            }
            for d, r in recs.items()
        ],
    }


def test_junk_titles_never_reach_an_export() -> None:
    recs = {
        "cmake/manual/cmake-compile-features.7": DocRecord(
            docid="cmake/manual/cmake-compile-features.7",
            text="x",
            title=".. cmake-manual-description: CMake Compile Features Reference",
        ),
        "man/grep": DocRecord(docid="man/grep", title="GREP(1) User Commands GREP(1)", text="x"),
        "site/index": DocRecord(docid="site/index", title="<!--", text="x"),
    }
    for fmt in ("bibtex", "ris", "csl-json", "csv", "markdown"):
        text = export(_ranked(recs), recs, fmt, Origin("jsonl", "/x.jsonl"))
        assert "cmake-manual-description" not in text and "User Commands" not in text and "<!--" not in text, fmt
        assert "cmake-compile-features.7" in text and "grep" in text and "index" in text, fmt


def test_bibtex_special_characters_stay_data() -> None:
    import bibtexparser
    from pylatexenc.latex2text import LatexNodes2Text

    hostile = "Braces } { and \\input{/etc/passwd} 50% & #1 a_b $x ~ ^ @misc{evil,"
    recs = {
        "d1": DocRecord(
            docid="d1", title=hostile, year=2020, venue="SIGIR", authors=("O'Neil & Co, A.",), keywords=("x}y",)
        ),
        "d2": DocRecord(docid="d2", title="Plain Second Title", year=2020),
    }
    text = export(_ranked(recs), recs, "bibtex", Origin("jsonl", "/x.jsonl"))
    library = bibtexparser.parse_string(text)
    # "O'Neil & Co": an organisation ("&"), so its whole name makes the key
    assert not library.failed_blocks and [e.key for e in library.entries] == ["oneilcoa2020braces", "plainsecond2020"]
    entry = library.entries[0]
    assert entry["title"].startswith("{") and entry["title"].endswith("}")  # double-braced: case kept
    decoded = LatexNodes2Text().latex_to_text(entry["title"][1:-1])
    assert decoded.replace("\u02c6", "^") == hostile  # pylatexenc reads \textasciicircum as U+02C6 (pandoc: "^")
    assert "a $\\rbrace$ quote \\textbackslash{} here" in entry["note"] and entry["keywords"] == "x$\\rbrace$y"
    paired = bibtexparser.parse_string(
        export(
            _ranked({"d3": DocRecord(docid="d3", title="The {Python} Way")}), {}, "bibtex", Origin("jsonl", "/x.jsonl")
        )
    ).entries[0]
    assert paired["title"] == "{The \\{Python\\} Way}"  # paired braces keep the usual escape


def test_ris_starts_with_a_record_and_keeps_one_line_per_tag() -> None:
    import rispy

    recs = {"d1": DocRecord(docid="d1", title="Two\nLines\nER  - fake", year=2020, venue="EMNLP", authors=("Lin, J.",))}
    text = export(_ranked(recs), recs, "ris", Origin("jsonl", "/x.jsonl"))
    assert text.startswith("TY  - CONF\n")
    assert all(re.match(r"^[A-Z][A-Z0-9]  - ", line) for line in text.splitlines() if line)
    [entry] = rispy.loads(text)
    assert entry["title"] == "Two Lines ER - fake" and entry["secondary_title"] == "EMNLP"
    assert entry["id"] == "lin2020two"


def test_local_file_urls_are_absolute_and_percent_encoded() -> None:
    rec = DocRecord(docid="Ranking_Ideas_{1}", title="Ranking Ideas", text="x")  # the id ingest gives that file
    single = json.loads(
        export(
            _ranked({rec.docid: rec}),
            {rec.docid: rec},
            "csl-json",
            Origin("file", "/home/u/my docs/Ranking Ideas {1}.md"),
        )
    )
    assert single[0]["URL"] == "file:///home/u/my%20docs/Ranking%20Ideas%20%7B1%7D.md"
    assert single[0]["type"] == "manuscript"
    added = DocRecord(docid="other", title="Added Later", text="x")  # `quarry add`ed to that collection
    assert (
        "URL"
        not in json.loads(
            export(
                _ranked({"other": added}),
                {"other": added},
                "csl-json",
                Origin("file", "/home/u/my docs/Ranking Ideas {1}.md"),
            )
        )[0]
    )
    recorded = rec.model_copy(update={"extras": {"source_path": "notes/Ranking Ideas.md"}})
    bib = export(_ranked({rec.docid: recorded}), {rec.docid: recorded}, "bibtex", Origin("folder", "/data/my docs"))
    assert "url = {file:///data/my%20docs/notes/Ranking%20Ideas.md}" in bib and bib.startswith("@misc{")


# --- end to end: a folder of documents, a finished job, every format ----------------------------


@pytest.fixture(scope="module")
def exported(quarry_home: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A folder collection (papers with front matter, a note) and a stored finished job ranking
    all of it, exported through the CLI in every format."""
    from stores.collection import Collection, ingest
    from stores.jobs import JobStore

    folder = tmp_path_factory.mktemp("bib") / "my docs"
    for rel, body in DOCS.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(body, encoding="utf-8")
    ingest(folder, "bib-folder", home=quarry_home, build_lucene=False)
    order = ["papers/pyserini", "papers/monobert", "papers/idf", "notes/Ranking_Ideas"]
    stored = Collection("bib-folder", home=quarry_home).corpus.get_many(order)
    records = {docid: stored[docid] for docid in order}  # the ranking
    # No backslash in the quote: citeproc-py's LaTeX reader fails on `\textbackslash{}` (pandoc, biber
    # and pylatexenc read it; test_bibtex_special_characters_stay_data checks it).
    result = _ranked(records, "a } quote here") | {"job_id": "job-bib", "collection": "bib-folder", "intent": "ranking"}
    with JobStore(quarry_home / "jobs.sqlite") as store:
        store.create("job-bib", "bib-folder", "ranking", workflow_id="job-bib", trace_id=None)
        store.finish("job-bib", result)
    out_dir = tmp_path_factory.mktemp("refs")
    texts, outputs = {}, {}
    for fmt, name in (
        ("bibtex", "refs.bib"),
        ("ris", "refs.ris"),
        ("csl-json", "refs.csl-json"),
        ("csv", "refs.csv"),
        ("markdown", "refs.md"),
    ):
        res = CliRunner().invoke(
            app, ["--home", str(quarry_home), "job", "export", "job-bib", "--format", fmt, "-o", str(out_dir / name)]
        )
        assert res.exit_code == 0, res.output
        texts[fmt], outputs[fmt] = (out_dir / name).read_text(encoding="utf-8"), res.output
    return {"texts": texts, "outputs": outputs, "dir": out_dir, "folder": folder.resolve()}


def _render(source: object, sentence_case: bool) -> list[str]:
    """The bibliography of every entry of `source`, as plain text in the test style."""
    from citeproc import Citation, CitationItem, CitationStylesBibliography, CitationStylesStyle, formatter

    style = Path(tempfile.mkdtemp(prefix="quarry-csl-")) / "quarry-test.csl"
    style.write_text(STYLE.replace("{title_case}", ' text-case="sentence"' if sentence_case else ""), encoding="utf-8")
    bib = CitationStylesBibliography(CitationStylesStyle(str(style), validate=False), source, formatter.plain)
    for key in source:
        bib.register(Citation([CitationItem(key)]))
    return [str(item) for item in bib.bibliography()]


def _by_start(rendered: list[str], start: str) -> str:
    return next(r for r in rendered if r.lower().startswith(start.lower()))


@pytest.mark.filterwarnings("ignore:Unsupported BibTeX field")
def test_bibtex_renders_conference_papers_as_proceedings_with_their_title_case(exported) -> None:
    from citeproc.source.bibtex import BibTeX

    rendered = _render(BibTeX(str(exported["dir"] / "refs.bib"), encoding="utf-8"), sentence_case=True)
    assert _by_start(rendered, "Pyserini") == f"{PYSERINI}. In proceedings: SIGIR."
    assert _by_start(rendered, "A statistical") == (
        "A Statistical Interpretation of Term Specificity. Journal: Journal of Documentation."
    )
    assert "Passage Re-ranking with BERT." in rendered and "Ranking Ideas For Quarry." in rendered


def test_csl_json_renders_types_arxiv_ids_and_local_file_urls(exported) -> None:
    from citeproc.source.json import CiteProcJSON

    rendered = _render(CiteProcJSON(json.loads(exported["texts"]["csl-json"])), sentence_case=False)
    folder_url = exported["folder"].as_uri() + "/"
    assert "%20" in folder_url  # the folder is "my docs": the URL is percent-encoded
    assert _by_start(rendered, "Pyserini") == f"{PYSERINI}. In proceedings: SIGIR."  # no folder URL for a paper
    assert _by_start(rendered, "Passage") == (
        "Passage Re-ranking with BERT. arXiv. arXiv:1901.04085. https://arxiv.org/abs/1901.04085."
    )
    file_url = folder_url + "notes/Ranking%20Ideas.md"  # the file itself: ingest records its path
    assert _by_start(rendered, "Ranking Ideas") == f"Ranking Ideas For Quarry. Local file. {file_url}."


def test_every_format_cites_a_document_by_the_same_key(exported) -> None:
    import bibtexparser
    import rispy

    texts = exported["texts"]
    bib = [e.key for e in bibtexparser.parse_string(texts["bibtex"]).entries]
    assert bib == ["lin2021pyserini", "nogueira2019passage", "sparckjones1972statistical", "rankingideas"]
    assert [e["id"] for e in rispy.loads(texts["ris"])] == bib
    assert [i["id"] for i in json.loads(texts["csl-json"])] == bib
    assert [r["key"] for r in csv.DictReader(io.StringIO(texts["csv"]))] == bib
    assert [line.split(" | ")[1] for line in texts["markdown"].splitlines() if re.match(r"^\| \d", line)] == bib


def test_types_in_bibtex_and_ris(exported) -> None:
    import bibtexparser
    import rispy

    entries = {e.key: e for e in bibtexparser.parse_string(exported["texts"]["bibtex"]).entries}
    assert entries["lin2021pyserini"].entry_type == "inproceedings" and "journal" not in entries["lin2021pyserini"]
    arxiv = entries["nogueira2019passage"]
    assert arxiv.entry_type == "misc" and arxiv["eprint"] == "1901.04085" and arxiv["archivePrefix"] == "arXiv"
    local = entries["rankingideas"]
    assert local.entry_type == "misc" and local["url"] == exported["folder"].as_uri() + "/notes/Ranking%20Ideas.md"
    assert "year" not in local  # a file's modification time is not a publication date
    ris = {e["id"]: e for e in rispy.loads(exported["texts"]["ris"])}
    assert [ris[k]["type_of_reference"] for k in entries] == ["CONF", "UNPB", "JOUR", "GEN"]
    assert ris["lin2021pyserini"]["secondary_title"] == "SIGIR" and exported["texts"]["ris"].startswith("TY  - CONF")


def test_csl_json_file_name_hint(exported) -> None:
    assert "name it refs.json" in exported["outputs"]["csl-json"]  # pandoc reads CSL-JSON only from .json
    assert "hint" not in exported["outputs"]["bibtex"]
