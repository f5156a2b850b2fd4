"""Store metadata lookups behind the author/venue constraints."""

from __future__ import annotations

import json
from pathlib import Path

from stores.collection import Collection, ingest


def test_docs_by_author_and_venue(tmp_path: Path) -> None:
    docs = [
        {"_id": "a", "title": "One", "metadata": {"authors": ["Prieve, B. G."], "venue": "CACM"}},
        {"_id": "b", "title": "Two", "metadata": {"authors": ["Prieve, B. G.", "Fabry, R. S."], "venue": "JACM"}},
        {"_id": "c", "title": "Three", "metadata": {"authors": ["Udo Pooch"]}},
        {"_id": "d", "title": "Four"},
    ]
    src = tmp_path / "c.jsonl"
    src.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    ingest(src, "meta", home=tmp_path / "home", build_lucene=False)
    corpus = Collection("meta", tmp_path / "home").corpus
    assert corpus.docs_by_author(["prieve", "Pooch", "nobody"]) == {"prieve": ["a", "b"], "pooch": ["c"], "nobody": []}
    assert sorted(corpus.venues()) == ["CACM", "JACM"]
    assert corpus.docs_by_venue("jacm") == ["b"]


def test_stored_and_asked_author_names_share_one_last_name_rule(tmp_path: Path) -> None:
    """'Smith J.' in the store and 'John Smith' in an intent meet (the rule lives in stores/records)."""
    from nodes.evidence.scoring import violated_constraint
    from stores.records import last_name

    docs = [{"_id": "s", "title": "One", "metadata": {"authors": ["Smith J."]}}]
    src = tmp_path / "c.jsonl"
    src.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    ingest(src, "names", home=tmp_path / "home", build_lucene=False)
    corpus = Collection("names", tmp_path / "home").corpus
    assert last_name("John Smith") == "smith" and corpus.docs_by_author(["smith"]) == {"smith": ["s"]}
    plan = {"authors": ["smith"], "authors_exclusive": True}
    assert violated_constraint(plan, corpus.get("s")) == ""
