"""Answers that are right or say so, without a model: a question about a product is answered from
that product's documents; a comparison cites both sides and picks the side its values favour; the
Exact Answer is read off the sentence for a value, an option or a yes/no, or left empty; the
confidence is stated exactly when there is an Exact Answer."""

from __future__ import annotations

from nodes.evidence.answer_extractive import extractive_draft
from nodes.evidence.answer_kinds import comparison_sides, question_kind
from nodes.evidence.answer_sections import best_paragraphs, with_sections
from nodes.policy.seam import AnswerDoc, Passage

PG_WAL = [
    "20.5. Write Ahead Log",
    "",
    "checkpoint_timeout (integer)",
    "",
    "Maximum time between automatic WAL checkpoints. If this value is specified without units, it is taken",
    "as seconds. The default is five minutes (5min).",
    "",
    "checkpoint_completion_target (floating point)",
    "",
    "Specifies the target of checkpoint completion, as a fraction of total time between checkpoints.",
    "The default is 0.9, which spreads the checkpoint across almost all of the available interval.",
]
SQLITE_WAL = [
    "Write-Ahead Logging",
    "",
    "By default, SQLite does a checkpoint automatically when the WAL file reaches a threshold size of",
    "1000 pages.",
]
LIMITS = [
    "Implementation Limits For SQLite",
    "",
    "The default setting for SQLITE_MAX_COLUMN is 2000. You can change it at compile time.",
    "",
    "The maximum number of terms is SQLITE_MAX_COMPOUND_SELECT which defaults to 500.",
]
RETURNING = [
    "RETURNING",
    "",
    "The RETURNING clause is not a statement itself, but a clause that can optionally appear near the",
    "end of top-level DELETE, INSERT, and UPDATE statements.",
    "",
    "The RETURNING syntax has been supported by SQLite since version 3.35.0 (2021-03-12).",
]
WINDOW = [
    "Window Functions",
    "",
    "Window functions are a special kind of SQL function supported by SQLite.",
    "",
    "In SQLite version 3.28.0 (2019-04-16), windows function support was extended to include the",
    "EXCLUDE clause, GROUPS frame types, window chaining, and support for 'n PRECEDING' frames.",
]
DOCS = {
    "postgresql/runtime-config-wal": PG_WAL,
    "sqlite/wal": SQLITE_WAL,
    "sqlite/limits": LIMITS,
    "sqlite/lang_returning": RETURNING,
    "sqlite/windowfunctions": WINDOW,
}


class Corpus:
    def lines(self, docid: str) -> list[str]:
        return DOCS.get(docid, [])


def doc(docid: str, title: str, first: int = 1) -> AnswerDoc:
    """An answer document whose only evidence passage is its first paragraph (the verified
    evidence seldom holds the answering sentence)."""
    lines = DOCS[docid]
    return AnswerDoc(docid, title, (Passage(first, first, lines[first - 1]),))


def answer(question: str, docids: list[str]):
    docs = [doc(d, DOCS[d][0]) for d in docids]
    return extractive_draft(question, with_sections(question, docs, Corpus()))


def test_the_value_under_the_questions_identifier_is_the_exact_answer() -> None:
    out = answer("What is the default checkpoint_timeout in PostgreSQL?", ["postgresql/runtime-config-wal"])
    assert out.exact == "five minutes"
    assert out.explanation.startswith("The default is five minutes (5min) [postgresql/runtime-config-wal]")
    assert "0.9" not in out.exact, "checkpoint_completion_target's default is another entry's"
    assert out.confidence is not None and 0 <= out.confidence <= 100


def test_a_question_about_one_product_is_never_answered_from_another() -> None:
    out = answer(
        "At what size does SQLite run an automatic checkpoint by default?",
        ["postgresql/runtime-config-wal", "sqlite/wal"],
    )
    assert out.exact == "1000"
    assert "[postgresql/" not in out.explanation and "[sqlite/wal]" in out.explanation
    # Its sentences are not even quoted beside SQLite's answer.
    assert "Maximum time between automatic WAL checkpoints" not in out.explanation


def test_a_comparison_cites_both_sides_and_names_the_side_its_values_favour() -> None:
    question = "In SQLite, which default limit is larger: SQLITE_MAX_COLUMN or SQLITE_MAX_COMPOUND_SELECT?"
    assert question_kind(question, True) == "comparison"
    assert comparison_sides(question) == ("SQLITE_MAX_COLUMN", "SQLITE_MAX_COMPOUND_SELECT")
    out = answer(question, ["sqlite/limits"])
    assert out.exact == "SQLITE_MAX_COLUMN"
    assert "2000" in out.explanation and "500" in out.explanation, "both sides' sentences are quoted"
    smaller = answer(question.replace("larger", "smaller"), ["sqlite/limits"])
    assert smaller.exact == "SQLITE_MAX_COMPOUND_SELECT"


def test_the_paragraph_that_states_the_answer_joins_the_evidence() -> None:
    """Stored documents wrap a paragraph over lines: the answering paragraph is found whole."""
    (passage,) = best_paragraphs(SQLITE_WAL, "at what size does SQLite checkpoint by default", [])
    assert passage.text.endswith("threshold size of 1000 pages.") and (passage.line_start, passage.line_end) == (3, 4)


def test_no_exact_answer_when_no_sentence_states_one() -> None:
    out = answer("Why does SQLite checkpoint the WAL file?", ["sqlite/wal"])
    assert out.exact == "" and out.confidence is None


def test_the_shipped_confidence_was_fitted_on_the_dev_half() -> None:
    """The parameters beside the module are read (not the flat fallback): fitted on dev answers,
    with their cross-validated calibration error, one weight per feature."""
    from nodes.evidence.answer_confidence import FEATURES, parameters, probability

    params = parameters()
    assert params["fitted_on"]["split"] == "dev" and params["fitted_on"]["answers"] > 0
    assert list(params["features"]) == list(FEATURES) and len(params["weights"]) == len(FEATURES)
    assert 0 <= params["cross_validated_ece"] < 0.5
    strong = dict.fromkeys(FEATURES, 0.0) | {"coverage": 1.0, "shaped": 1.0, "identifier_matched": 1.0}
    weak = dict.fromkeys(FEATURES, 0.0) | {"kind_name_option": 1.0}
    assert probability(strong) > probability(weak)


def test_the_release_that_first_supported_a_feature_is_read_off_its_own_page() -> None:
    """The one line naming the version holds few of the question's words: it joins the evidence,
    and another feature's history ("… extended to include the EXCLUDE clause") is not the answer."""
    question = "Which SQLite release first supported the RETURNING clause?"
    assert question_kind(question, True) == "date"
    out = answer(question, ["sqlite/windowfunctions", "sqlite/lang_returning"])
    assert out.exact == "3.35.0"
    assert out.explanation.startswith("The RETURNING syntax has been supported by SQLite since version 3.35.0")
    assert answer(question, ["sqlite/windowfunctions"]).exact == "", "no page says it: no Exact Answer"


def test_a_version_asked_as_a_value_is_not_read_as_a_release() -> None:
    """ "Which protocol version does it use" asks for a value, not for when something appeared."""
    from nodes.evidence.answer_values import version_value

    sentence = "Protocol version 4 was added in Python 3.4."
    assert version_value("Which pickle protocol version does Python use by default?", sentence) == ("", 0.0)
    assert version_value("Since which Python version is protocol 4 available?", sentence)[0] == "3.4"
    rfc = "Chunked transfer encoding is available as described in RFC 7230."
    assert version_value("Since which HTTP version is chunked transfer encoding available?", rfc) == ("", 0.0)
