"""References a reference manager accepts: dates, people, organisations and code names exported
as BibTeX, RIS and CSL-JSON from a real ingested folder, and rendered by real pandoc
(`pandoc --citeproc`, the binary pypandoc-binary ships) under its default style — Chicago
author-date, which title-cases titles: only a protected `printf` stays lower-case."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from quarry.cli import app

DOCS = {
    "man/printf.md": "---\ntitle: '`printf` - format and print data'\nauthors: ['Ludwig van der Rohe Jr.']\n"
    "year: 2017\ndate: '2017-03-14'\n---\nprintf formats and prints data under the control of a format.\n",
    "guide/sqlite.md": "---\ntitle: 'Using **SQLite** over HTTP/2 {#sqlite}'\nauthors: ['The PARI Group']\n"
    "year: 2020\n---\nA guide to SQLite databases served over HTTP/2.\n",
    "tutorial/classes.md": "---\ntitle: '.. _tut-classes: Classes and lan- guage design'\n"
    "authors: ['Knuth, Donald E.']\nyear: 1984\n---\nClasses bundle data and behaviour.\n",
}
ORDER = ["man/printf", "guide/sqlite", "tutorial/classes"]
KEYS = ["vanderrohe2017printf", "theparigroup2020sqlite", "knuth1984classes"]


@pytest.fixture(scope="module")
def refs(quarry_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder ingested, a finished job ranking its three documents, exported in each format."""
    from stores.collection import ingest
    from stores.jobs import JobStore

    folder = tmp_path_factory.mktemp("refdocs")
    for rel, body in DOCS.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(body, encoding="utf-8")
    ingest(folder, "ref-folder", home=quarry_home, build_lucene=False)
    ranked = [{"docid": d, "score": 0.5, "rank_score": 0.1, "evidence": []} for d in ORDER]
    result = {"job_id": "job-refs", "collection": "ref-folder", "intent": "x", "status": "completed", "ranked": ranked}
    with JobStore(quarry_home / "jobs.sqlite") as store:
        store.create("job-refs", "ref-folder", "x", workflow_id="job-refs", trace_id=None)
        store.finish("job-refs", result)
    out = tmp_path_factory.mktemp("refs-out")
    for fmt, name in (("bibtex", "refs.bib"), ("ris", "refs.ris"), ("csl-json", "refs.json")):
        res = CliRunner().invoke(
            app, ["--home", str(quarry_home), "job", "export", "job-refs", "--format", fmt, "-o", str(out / name)]
        )
        assert res.exit_code == 0, res.output
    return out


def test_bibtex_has_years_name_parts_whole_organisations_and_clean_titles(refs: Path) -> None:
    import bibtexparser

    library = bibtexparser.parse_string((refs / "refs.bib").read_text(encoding="utf-8"))
    entries = {e.key: e for e in library.entries}
    assert not library.failed_blocks and list(entries) == KEYS
    printf, sqlite, classes = (entries[k] for k in KEYS)
    assert printf["author"] == "van der Rohe, Jr., Ludwig"  # BibTeX's "von Last, Jr, First"
    assert printf["year"] == "2017" and printf["date"] == "2017-03-14"
    assert printf["title"] == "{printf - format and print data}"
    assert sqlite["author"] == "{The PARI Group}"  # braced: one name, never "Group, The PARI"
    assert sqlite["title"] == "{Using SQLite over HTTP/2}"
    assert classes["title"] == "{Classes and language design}" and classes["author"] == "Knuth, Donald E."


def test_ris_has_years_name_parts_and_one_au_per_organisation(refs: Path) -> None:
    import rispy

    entries = {e["id"]: e for e in rispy.loads((refs / "refs.ris").read_text(encoding="utf-8"))}
    printf, sqlite, classes = (entries[k] for k in KEYS)
    assert printf["authors"] == ["van der Rohe, Ludwig, Jr."] and printf["year"] == "2017"
    assert printf["date"] == "2017/03/14/" and printf["title"] == "printf - format and print data"
    assert sqlite["authors"] == ["The PARI Group,"]  # one AU; the comma marks a corporate author
    assert sqlite["title"] == "Using SQLite over HTTP/2" and classes["title"] == "Classes and language design"


def test_csl_json_has_issued_name_parts_literals_and_nocase_code_names(refs: Path) -> None:
    items = {i["id"]: i for i in json.loads((refs / "refs.json").read_text(encoding="utf-8"))}
    printf, sqlite, classes = (items[k] for k in KEYS)
    assert printf["author"] == [
        {"family": "Rohe", "given": "Ludwig", "non-dropping-particle": "van der", "suffix": "Jr."}
    ]
    assert printf["issued"] == {"date-parts": [[2017, 3, 14]]}
    assert printf["title"] == '<span class="nocase">printf</span> - format and print data'
    assert sqlite["author"] == [{"literal": "The PARI Group"}] and sqlite["issued"] == {"date-parts": [[2020]]}
    assert sqlite["title"] == 'Using <span class="nocase">SQLite</span> over <span class="nocase">HTTP/2</span>'
    assert classes["author"] == [{"family": "Knuth", "given": "Donald E."}]


def _pandoc(bibliography: Path) -> tuple[str, str]:
    """(the rendered bibliography as plain text, pandoc's stderr) of every entry of a file."""
    import pypandoc

    done = subprocess.run(
        [pypandoc.get_pandoc_path(), "--citeproc", "-t", "plain", "--wrap=none", "--bibliography", str(bibliography)],
        input="---\nnocite: |\n  @*\n---\n",
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout, done.stderr


@pytest.mark.parametrize("name", ["refs.json", "refs.bib"])
def test_pandoc_citeproc_renders_years_organisations_and_code_names(refs: Path, name: str) -> None:
    text, warnings = _pandoc(refs / name)
    assert warnings == ""
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 3, text
    by_start = {line.split(".")[0]: line for line in lines}
    assert "The PARI Group" in by_start and "2020" in by_start["The PARI Group"], text  # one name, whole
    printf = by_start["Rohe, Ludwig van der, Jr"]  # Chicago demotes the particle: "Rohe, Ludwig van der"
    assert "2017" in printf and "printf - " in printf and "Printf" not in printf, printf
    assert "SQLite over HTTP/2" in by_start["The PARI Group"] and "1984" in by_start["Knuth, Donald E"]


def test_four_real_formats_export_with_year_and_authors_and_render_cleanly(quarry_home: Path, tmp_path: Path) -> None:
    """A PDF whose Info and XMP carry a date and an author, an HTML page with citation tags, a man
    page with a `.TH` date and a Markdown file with front matter — read as an ingest reads them,
    ranked by a job, exported: each entry has its year and authors in BibTeX, RIS and CSL-JSON, and
    pandoc renders the four with their years, the organisation as one name, the command `gp` in its case."""
    import bibtexparser
    import rispy

    from stores.collection import ingest
    from stores.jobs import JobStore
    from tests.test_reference_data import HTML_PAGE, MAN_PAGE, MARKDOWN, pdf_with_metadata

    folder = tmp_path / "docs"
    (folder / "man1").mkdir(parents=True)
    pdf_with_metadata(folder / "guide.pdf", info={"/Author": "Someone Else", "/CreationDate": "D:20100101"}, xmp=True)
    (folder / "classgroups.html").write_text(HTML_PAGE, encoding="utf-8")
    (folder / "man1" / "gp.1").write_text(MAN_PAGE, encoding="utf-8")
    (folder / "printf.md").write_text(MARKDOWN, encoding="utf-8")
    ingest(folder, "ref-formats", home=quarry_home, build_lucene=False)
    years = {"guide": 2016, "classgroups": 2019, "man1/gp.1": 2018, "printf": 2021}
    ranked = [{"docid": d, "score": 0.5, "rank_score": 0.1, "evidence": []} for d in years]
    result = {"job_id": "job-formats", "collection": "ref-formats", "intent": "x", "status": "completed"}
    with JobStore(quarry_home / "jobs.sqlite") as store:
        store.create("job-formats", "ref-formats", "x", workflow_id="job-formats", trace_id=None)
        store.finish("job-formats", {**result, "ranked": ranked})
    out = {}
    for fmt, name in (("bibtex", "f.bib"), ("ris", "f.ris"), ("csl-json", "f.json")):
        out[fmt] = tmp_path / name
        res = CliRunner().invoke(
            app, ["--home", str(quarry_home), "job", "export", "job-formats", "--format", fmt, "-o", str(out[fmt])]
        )
        assert res.exit_code == 0, res.output

    bib = bibtexparser.parse_string(out["bibtex"].read_text(encoding="utf-8"))
    assert not bib.failed_blocks and sorted(int(e["year"]) for e in bib.entries) == sorted(years.values())
    assert all(e.fields_dict.get("author") for e in bib.entries), [e.key for e in bib.entries]
    assert "{The PARI Group}" in [e["author"] for e in bib.entries]
    ris = rispy.loads(out["ris"].read_text(encoding="utf-8"))
    assert sorted(int(e["year"]) for e in ris) == sorted(years.values()) and all(e.get("authors") for e in ris)
    csl = json.loads(out["csl-json"].read_text(encoding="utf-8"))
    assert sorted(i["issued"]["date-parts"][0][0] for i in csl) == sorted(years.values())
    assert all(i.get("author") for i in csl) and [{"literal": "The PARI Group"}] in [i["author"] for i in csl]

    for rendered, warnings in (_pandoc(out["csl-json"]), _pandoc(out["bibtex"])):
        assert warnings == ""
        lines = [line for line in rendered.splitlines() if line.strip()]
        assert len(lines) == 4, rendered
        assert all(any(str(y) in line for line in lines) for y in years.values()), rendered
        assert any(line.startswith("The PARI Group.") for line in lines), rendered  # one name, whole
        gp = next(line for line in lines if "2018" in line)  # the man page's NAME: "gp - the PARI calculator"
        assert "gp - " in gp and "Gp" not in gp, gp
