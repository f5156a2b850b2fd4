"""Exact provenance: every evidence quote is a whole sentence of the document's text, and its
character span read back from the store gives exactly the quoted text."""

from __future__ import annotations

import string

from hypothesis import given, settings
from hypothesis import strategies as st

from nodes.evidence.scoring import locate_evidence
from nodes.job.results import evidence_entry
from stores.records import DocRecord, body_lines, chunk_document, document_lines, quotable_chunks
from stores.spans import DocumentText, document_text, find_loose, span_of

WORDS = st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=12)
SENTENCE = st.builds(
    lambda ws, end, cap: (" ".join(ws)).capitalize() + end,
    st.lists(WORDS, min_size=1, max_size=20),
    st.sampled_from([".", "!", "?", '."', ""]),
    st.booleans(),
)
PARAGRAPH = st.lists(SENTENCE, min_size=1, max_size=8).map(" ".join)
DOC_TEXT = st.lists(PARAGRAPH, min_size=1, max_size=6).map("\n\n".join)


def quotes_for(rec: DocRecord, item_text: str) -> tuple[list[str], dict]:
    lines = document_lines(rec)
    chunks = quotable_chunks(rec, chunk_document(rec, lines))
    ev = locate_evidence({"id": "c1", "kind": "topic", "text": item_text, "weight": 1.0}, chunks, rec.title)
    return lines, evidence_entry(ev, {}, DocumentText.of(lines), body=body_lines(rec))


@settings(max_examples=200, deadline=None)
@given(DOC_TEXT, st.data())
def test_the_quote_is_its_span_of_the_document_and_a_whole_sentence(text: str, data) -> None:
    rec = DocRecord(docid="d1", title="A title", text=text, year=2020)
    words = text.split()
    item = " ".join(data.draw(st.lists(st.sampled_from(words), min_size=1, max_size=4)))
    lines, entry = quotes_for(rec, item)
    a, b = entry["chars"]
    assert document_text(lines)[a:b] == entry["quote"], "reading the span back gives the quote"
    assert entry["quote"] == entry["quote"].strip() and entry["quote"]
    span = span_of(lines, a, b)
    assert entry["lines"] == [span.line_start, span.line_end]
    assert " ".join(entry["quote"].split()) == entry["chunk"]
    full = document_text(lines)
    # A whole sentence: it starts where a sentence starts and ends at a terminator, a blank
    # line or the end of the passage — never mid-word.
    before, after = full[:a], full[b:]
    assert not before or before[-1].isspace(), f"starts mid-word: …{before[-10:]!r}|{entry['quote'][:20]!r}"
    assert not after or after[0].isspace(), f"ends mid-word: {entry['quote'][-20:]!r}|{after[:10]!r}"
    if entry["quote"] == rec.title:  # no sentence of the text is quotable (text="A"): the title line, whole
        assert entry["lines"] == [1, 1] and entry["score"] == 0.0
        return
    assert (
        entry["quote"][-1] in '.!?"'
        or not after.strip()
        or after.lstrip(" ").startswith("\n\n")
        or after.startswith("\n\n")
    ), f"ends mid-sentence: {entry['quote'][-20:]!r}|{after[:20]!r}"


def test_model_quotes_with_other_spacing_map_onto_the_documents_own_text() -> None:
    lines = ["Title", "We retrieve passages with dense", "encoders for open questions."]
    span = find_loose(lines, "retrieve  PASSAGES with dense encoders")
    assert document_text(lines)[span.char_start : span.char_end] == "retrieve passages with dense\nencoders"
    assert (span.line_start, span.line_end) == (2, 3)
    assert find_loose(lines, "words that are not there") is None


def test_spans_read_back_from_the_store_for_every_document(literature) -> None:
    """Over every document of a real store and several requirements each: the result's quote
    is `CorpusStore.read_span` of its characters, byte for byte."""
    corpus = literature.corpus
    checked = 0
    for rec in corpus.iter_records():
        for item in (rec.title, " ".join(rec.text.split()[3:7]), "graph neural networks molecules"):
            ev = locate_evidence(
                {"id": "c1", "kind": "topic", "text": item, "weight": 1.0},
                quotable_chunks(rec, corpus.chunks(rec.docid)),
                rec.title,
            )
            entry = evidence_entry(ev, {}, DocumentText.of(corpus.lines(rec.docid)))
            assert corpus.read_span(rec.docid, *entry["chars"]) == entry["quote"]
            checked += 1
    assert checked >= 100
    assert corpus.read_span("no-such-doc", 0, 3) is None and corpus.read_span(rec.docid, 5, 10**9) is None


def test_evidence_from_a_paged_source_cites_its_page() -> None:
    from stores.records import page_of_line

    first = "Cats sleep most of the day in warm places near the window."
    text = first + "\n\n" + "Dense retrieval encodes passages and questions with two encoders."
    rec = DocRecord(docid="p1", title="A PDF", text=text, page_starts=(0, 2))  # text lines where pages start
    lines = document_lines(rec)
    chunks = quotable_chunks(rec, chunk_document(rec, lines))
    for item, page in (("dense retrieval encoders", 2), ("cats sleep window", 1)):
        ev = locate_evidence({"id": "c1", "kind": "topic", "text": item, "weight": 1.0}, chunks, rec.title)
        entry = evidence_entry(ev, {}, DocumentText.of(lines), lambda line: page_of_line(rec, line))
        assert entry["page"] == page, (item, entry)
        assert document_text(lines)[slice(*entry["chars"])] == entry["quote"]


def test_a_quote_never_takes_in_the_title_metadata_or_keywords_lines() -> None:
    rec = DocRecord(
        docid="c1",
        title="ColBERT efficient passage search",
        year=2020,
        venue="SIGIR",
        authors=["Khattab, O."],
        keywords=["late interaction", "dense passages"],
        text="Late interaction over dense passages keeps search fast without a terminator",
    )
    _lines, entry = quotes_for(rec, "dense passages late interaction")
    assert entry["quote"] == rec.text and entry["lines"] == [3, 3], entry
    assert "year:" not in entry["quote"] and "keywords:" not in entry["quote"]
