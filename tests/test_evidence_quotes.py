"""Evidence that is evidence (issue 20, item 3): in a long manual, headings, code examples, page
footers and navigation lists are never quoted on their own, the sentence that states the
requirement is; and a 5/5 needs the requirement's words in the quoted sentence itself.

The fixture is a long reStructuredText/Markdown manual page built here, stored the way Quarry
stores any document (numbered lines, chunks, the quotable view), judged by the heuristic policy
with the strongest BM25 match (the document is the best candidate for every requirement), and
shown the way results show evidence (exact spans widened to whole sentences)."""
from __future__ import annotations

import pytest

from nodes.policy import HeuristicPolicy, JudgeInput
from nodes.quotable import lead_trim, unquotable
from nodes.results import evidence_entry
from nodes.scoring import locate_evidence
from stores.records import DocRecord, body_lines, chunk_document, document_lines, quotable_chunks
from stores.spans import DocumentText

FILLER = ("Projects are configured once per build tree, and every later build reuses the cache that the "
          "first configuration wrote, which keeps repeated builds fast on large source trees.")

MANUAL = "\n".join([
    "cmake-compile-features(7)",
    "*************************",
    "",
    "Home",
    "Download",
    "Documentation",
    "Community",
    "",
    "Introduction",
    "============",
    "",
    "Project source code may depend on the availability of certain language capabilities. " + FILLER,
    "",
    FILLER,
    "",
    "Compile Features",
    "^^^^^^^^^^^^^^^^",
    "",
    "Compile features of a target are requested with the target_compile_features command, and CMake "
    "adds whatever flags the compiler needs for them.",
    "",
    FILLER,
    "",
    ".. code-block:: xml",
    "",
    "  <settings>",
    "    <weight default=\"50\" value=\"integer\"/>",
    "  </settings>",
    "",
    "Copyright 2000-2024 Kitware, Inc. and Contributors. Page 12 of 40",
    "",
    FILLER,
    "",
    FILLER,
    "",
    "## Default weight",
    "The default weight value is 50, and most projects never change it.",
    "",
    "Precision",
    "---------",
    "",
    "The weight value is stored as an integer. Precision is not configurable in any release.",
    "",
    "CMake is maintained by Kitware with a community of contributors from many companies.",
])


def manual() -> tuple[DocRecord, list]:
    rec = DocRecord(docid="cmake-compile-features", title="cmake-compile-features(7)", text=MANUAL)
    lines = document_lines(rec)
    return rec, quotable_chunks(rec, chunk_document(rec, lines))


def judge(requirement: str) -> dict:
    """The policy's evidence for one requirement, as a result shows it (exact quote and score)."""
    rec, chunks = manual()
    item = {"id": "c1", "kind": "topic", "text": requirement, "weight": 1.0}
    (judged,) = HeuristicPolicy().judge({"checklist": [item]}, [JudgeInput(rec, chunks, 1.0, None, {"c1": 1.0})])
    (ev,) = judged.evidence
    doc = DocumentText.of(document_lines(rec))
    return evidence_entry(ev, {"c1": item}, doc, body=body_lines(rec))


# requirement, a piece of the text that must not be the quote (what today's code quotes), the quote
CASES = [
    ("compile features", "Compile Features\n^^^",
     "Compile features of a target are requested with the target_compile_features command, and CMake adds "
     "whatever flags the compiler needs for them."),
    ("cmake compile features", "cmake-compile-features(7)\n***",
     "Compile features of a target are requested with the target_compile_features command, and CMake adds "
     "whatever flags the compiler needs for them."),
    ("default weight value", "<weight default=",
     "The default weight value is 50, and most projects never change it."),
    ("Kitware contributors", "Copyright 2000-2024",
     "CMake is maintained by Kitware with a community of contributors from many companies."),
    ("documentation community download", "Home\nDownload",  # only one word is stated in prose
     "CMake is maintained by Kitware with a community of contributors from many companies."),
]


@pytest.mark.parametrize("requirement,refused,answer", CASES, ids=["rst-heading", "page-title", "xml-code",
                                                                   "footer", "navigation"])
def test_headings_code_and_boilerplate_are_refused_and_the_answering_sentence_is_quoted(requirement, refused,
                                                                                        answer) -> None:
    entry = judge(requirement)
    assert refused not in entry["quote"], f"quoted {entry['quote']!r}"
    assert " ".join(entry["quote"].split()) == answer and entry["chunk"] == answer, "whole sentence, exact text"


def test_a_glued_markdown_heading_stays_out_of_the_quote() -> None:
    entry = judge("default weight value")
    assert not entry["quote"].startswith("## Default weight")
    assert entry["quote"].startswith("The default weight value is 50")


@pytest.mark.parametrize("requirement,best", [
    ("default weight value", 5.0),           # one sentence holds every word: 5/5 stands
    ("weight value precision", 1 + 4 * 2 / 3),  # the chunk holds all three, no single sentence does
    ("compile features", 5.0),
])
def test_a_five_needs_the_requirements_words_in_the_quoted_sentence(requirement, best) -> None:
    """BM25 rates the document the best for each requirement (relative score 1.0, i.e. 5/5 before
    the quote is checked); the quote caps it at 1 + 4 × the share of the requirement's words it (or the title) holds."""
    entry = judge(requirement)
    assert entry["score"] == pytest.approx(best, abs=1e-3), entry


def test_locate_evidence_scores_the_sentence_not_its_window() -> None:
    rec, chunks = manual()
    ev = locate_evidence({"id": "c1", "kind": "topic", "text": "weight value precision", "weight": 1.0}, chunks,
                         rec.title)
    assert ev["score"] == pytest.approx(5.0 * 2 / 3, abs=1e-3), "two of three words in the quoted sentence"
    assert not unquotable(ev["chunk"]) and not ev["chunk"].startswith("Precision"), "a sentence, not the heading"


@pytest.mark.parametrize("text,why", [
    ("Compile Features\n^^^^^^^^^^^^^^^^", "heading"),
    ("## Default weight", "heading"),
    ("Requiring Language Standards", "heading"),
    ("DESCRIPTION", "heading"),
    ("<settings>\n  <weight default=\"50\"/>\n</settings>", "code"),
    ("set(CMAKE_CXX_STANDARD 11)", "code"),
    ("if (x > 0) {\n  y = x * 2;\n}", "code"),
    ("$ cmake --build . --target install", "code"),
    ("Copyright 2000-2024 Kitware, Inc. and Contributors.", "boilerplate"),
    ("Page 12 of 40", "boilerplate"),
    ("CMake 3.28 Documentation » Reference Manuals » cmake-compile-features(7)", "boilerplate"),
    ("Home\nDownload\nDocumentation\nCommunity", "boilerplate"),
    ("The default weight value is 50, and most projects never change it.", ""),
    ("We retrieve passages\nwith dense\nencoders", ""),
    ("The algorithm computes x = (a+b)/2 for each element of the array.", ""),
    ("Reciprocal Rank Fusion (RRF) sums 1/(k + rank) over the rankings, with k = 60.", ""),
])
def test_sentence_kinds(text: str, why: str) -> None:
    assert unquotable(text) == why


def test_a_title_only_record_still_quotes_its_title() -> None:
    """Half of CACM is titles: the record's header stays its evidence."""
    rec = DocRecord(docid="1", title="Preliminary Report-International Algebraic Language", text="",
                    year=1958, venue="Communications of the ACM")
    chunks = quotable_chunks(rec, chunk_document(rec, document_lines(rec)))
    ev = locate_evidence({"id": "c1", "kind": "topic", "text": "algebraic language", "weight": 1.0}, chunks, rec.title)
    assert ev["chunk"].startswith(rec.title) and ev["score"] == 5.0


def test_lead_trim_keeps_prose_whole() -> None:
    assert lead_trim("The default weight value is 50.") == 0
    assert lead_trim("## Default weight\nThe default weight value is 50.") == len("## Default weight\n")
    assert lead_trim("Precision\n---------\nThe weight value is stored as an integer.") == len("Precision\n---------\n")
    assert lead_trim("Compile Features\n^^^^") == 0, "nothing but a heading: the caller refuses it"


@pytest.mark.parametrize("quote,title,cap", [
    ("The default weight value is 50.", "", 5.0),
    ("The weight value is stored as an integer.", "", 1 + 4 * 2 / 3),
    ("The weight value is stored as an integer.", "Default settings", 5.0),  # the title, printed above the quote
    ("Copyright 2000-2024 Kitware, Inc.", "", 1.0),
])
def test_quote_cap(quote: str, title: str, cap: float) -> None:
    from nodes.scoring import quote_cap

    assert quote_cap({"id": "c1", "kind": "topic", "text": "default weight value", "weight": 1.0}, quote, title) \
        == pytest.approx(cap, abs=1e-3)


def test_code_blocks_are_code_by_context_whatever_their_lines_look_like() -> None:
    """A fenced shell example reads like prose word by word; an rst directive and its body, a
    comment and a literal block are markup: none is quotable. An admonition's body is prose."""
    from nodes.quotable import quotable_spans
    from nodes.scoring import sentences

    text = "\n".join([
        ".. cmake-manual-description: CMake Compile Features Reference",
        "",
        "Run a search job on the sample corpus.",
        "",
        "```bash",
        "quarry run cacm \"time sharing systems\" --policy react --wait",
        "```",
        "",
        "For example::",
        "",
        "    set the default weight value to fifty for every field of the index",
        "",
        ".. note::",
        "",
        "   The default weight value is 50.",
    ])
    got = [text[a:b] for a, b in quotable_spans(text, sentences(text))]
    assert got == ["Run a search job on the sample corpus.", "For example::", "The default weight value is 50."]


def test_a_passage_cut_inside_a_fenced_example_knows_it_is_inside() -> None:
    """A long example spans two stored chunks: the second starts inside the fence, and its closing
    ``` must not be read as an opening one (which would make the example prose)."""
    example = [f"quarry run cacm \"default weight value for field {i}\" --policy react --wait --budget {i}"
               for i in range(12)]
    rec = DocRecord(docid="readme", title="Quarry", text="\n".join(
        ["Quarry searches your documents.", "", "```bash", *example, "```", "",
         "The default weight value is 50, and most projects never change it."]))
    chunks = quotable_chunks(rec, chunk_document(rec, document_lines(rec)))
    assert len(chunks) >= 2 and not any(c.text.lstrip().startswith("```bash") for c in chunks[1:])
    ev = locate_evidence({"id": "c1", "kind": "topic", "text": "default weight value field", "weight": 1.0}, chunks,
                         rec.title)
    assert ev["chunk"] == "The default weight value is 50, and most projects never change it."


def test_each_bulleted_item_is_its_own_sentence() -> None:
    """A Markdown list is not one run-on sentence: a quote (or an extractive answer) is one item."""
    from nodes.scoring import sentences

    text = ("It combines three published ideas:\n- **Pi-Serini**: well-configured BM25, deep cached rankings.\n"
            "- **Hybrid practice**: dense + BM25 fused with Reciprocal Rank Fusion (k=60), answers with\n"
            "  inline citations.\nThe rest follows.")
    assert [text[a:b] for a, b in sentences(text)] == [
        "It combines three published ideas:", "- **Pi-Serini**: well-configured BM25, deep cached rankings.",
        "- **Hybrid practice**: dense + BM25 fused with Reciprocal Rank Fusion (k=60), answers with\n  inline citations.",
        "The rest follows."]
