"""Requirements a careful reader would write (issue 44 #1): subject and aspects, product and
document-type constraints, exclusions — never the request's opener nor the intent reworded."""

from __future__ import annotations

import pytest

from nodes.evidence.planning import first_queries, make_plan, parse_exclusions
from nodes.evidence.requirements import strip_openers
from nodes.policy.seam import SCORED_KINDS, scored_items


def shown(intent: str) -> list[tuple[str, str]]:
    return [(i["kind"], i["text"]) for i in make_plan(intent)["checklist"]]


def test_qualifiers_are_one_requirement_each_and_none_rewords_the_intent() -> None:
    intent = "find the documents about page caching for SQLite databases with memory-mapped I/O"
    plan = make_plan(intent)
    assert shown(intent) == [
        ("topic", "page caching"),
        ("application", "SQLite databases"),
        ("method", "memory-mapped I/O"),
    ]
    texts = [i["text"].lower() for i in plan["checklist"]]
    assert plan["core"].lower() not in texts and intent.lower() not in texts
    assert not any("documents" in t or t.startswith("find") for t in texts)
    # The whole intent is scored as a ranking signal, never shown as a requirement.
    assert plan["whole"]["text"] == plan["core"] and plan["whole"] not in plan["checklist"]
    assert scored_items(plan)[0] == plan["whole"]


@pytest.mark.parametrize(
    "intent, subject",
    [
        ("find the documents about write-ahead logging", "write-ahead logging"),
        ("Find documents about write-ahead logging", "write-ahead logging"),
        ("I'm looking for write-ahead logging", "write-ahead logging"),
        ("I am interested in articles about write-ahead logging", "write-ahead logging"),
        ("documentation on write-ahead logging", "write-ahead logging"),
        ("pages about write-ahead logging", "write-ahead logging"),
        ("What articles exist which deal with write-ahead logging?", "write-ahead logging"),
        ("how to configure write-ahead logging", "configure write-ahead logging"),
        ("What is write-ahead logging?", "write-ahead logging"),
        ("show me the papers that discuss write-ahead logging", "write-ahead logging"),
        ("write-ahead logging", "write-ahead logging"),
    ],
)
def test_a_plain_intent_gives_exactly_its_subject_without_the_opener(intent: str, subject: str) -> None:
    assert shown(intent) == [("topic", subject)]
    (query,) = first_queries(make_plan(intent), intent)
    assert query.rstrip("?") == intent.rstrip("?")  # the user's words are all still searched


@pytest.mark.parametrize(
    "intent, expected",
    [
        ("WAL checkpoints in PostgreSQL", [("topic", "WAL checkpoints"), ("product", "PostgreSQL")]),
        ("PostgreSQL's WAL checkpoints", [("topic", "WAL checkpoints"), ("product", "PostgreSQL")]),
        ("virtual hosts for Apache", [("topic", "virtual hosts"), ("product", "Apache")]),
        (
            "the default log_rotation_age in PostgreSQL 15?",
            [("topic", "default log_rotation_age"), ("product", "PostgreSQL 15")],
        ),
        ("man pages about the after command", [("topic", "after command"), ("format", "man pages")]),
        ("a tutorial on regular expressions", [("topic", "regular expressions"), ("format", "tutorial")]),
        ("regular expressions, in PDF format", [("topic", "regular expressions"), ("format", "pdf")]),
        ("locking in SQLite, as man pages", [("topic", "locking"), ("product", "SQLite"), ("format", "man pages")]),
        # Not products: an eponym, a name after "of", a place after "the", a capital starting the text.
        ("symptoms of Crohn's disease", [("topic", "symptoms"), ("aspect", "Crohn's disease")]),
        ("signalling downstream of EGFR", [("topic", "signalling downstream"), ("aspect", "EGFR")]),
        ("Apache modules", [("topic", "Apache modules")]),
    ],
)
def test_product_and_document_type_constraints(intent: str, expected: list[tuple[str, str]]) -> None:
    assert shown(intent) == expected


def test_only_products_are_scored_among_the_constraints() -> None:
    kinds = {i["kind"]: i for i in make_plan("locking in SQLite, as man pages")["checklist"]}
    assert "product" in SCORED_KINDS and kinds["product"]["weight"] > 0
    assert "format" not in SCORED_KINDS and kinds["format"]["weight"] == 0.0


@pytest.mark.parametrize(
    "text, exclusions, rest",
    [
        ("event loops, not Python threading", ["Python threading"], "event loops"),
        ("not Python threading", ["Python threading"], ""),
        ("event loops and not Python threading", ["Python threading"], "event loops"),
        ("event loops but not Python threading", ["Python threading"], "event loops"),
        ("compression other than CRC", ["CRC"], "compression"),
        ("compression apart from zlib", ["zlib"], "compression"),
        ("compression aside from zlib.", ["zlib"], "compression"),
        ("compression excluding gzip and bzip2", ["gzip", "bzip2"], "compression"),
        ("compression except zlib, in Python", ["zlib"], "compression, in Python"),
        ("checksums except for CRC?", ["CRC"], "checksums"),
        ("connections: not sqlite3.connect in Python", ["sqlite3.connect in Python"], "connections"),
        ("programs that do not use recursion", [], "programs that do not use recursion"),
        ("which exception is raised", [], "which exception is raised"),
    ],
)
def test_exclusion_phrasings(text: str, exclusions: list[str], rest: str) -> None:
    assert parse_exclusions(text) == (exclusions, rest)


def test_exclusions_are_items_of_their_own_kind_and_not_requirements() -> None:
    plan = make_plan("I'm looking for event loops other than Tcl's, not Python threading")
    assert plan["exclusions"] == ["Tcl's", "Python threading"]
    assert [(i["kind"], i["text"]) for i in plan["checklist"]] == [
        ("topic", "event loops"),
        ("exclusion", "not Tcl's"),
        ("exclusion", "not Python threading"),
    ]


@pytest.mark.parametrize(
    "question, expected",
    [
        (
            "What is the default timeout of Python's sqlite3.connect() when the database is locked?",
            [
                ("topic", "default timeout"),
                ("aspect", "sqlite3.connect()"),
                ("aspect", "database is locked"),
                ("product", "Python"),
            ],
        ),
        (
            "Which caches more prepared statements by default: a Python sqlite3 connection or a database command "
            "of SQLite's Tcl interface?",
            [
                ("topic", "caches more prepared statements by default"),
                ("aspect", "Python sqlite3 connection"),
                ("aspect", "database command of Tcl interface"),
                ("product", "SQLite"),
            ],
        ),
        (
            "Can a lookbehind assertion in Python's re module contain a variable-length pattern?",
            [
                ("topic", "lookbehind assertion"),
                ("aspect", "re module contain a variable-length pattern"),
                ("product", "Python"),
            ],
        ),
    ],
)
def test_questions_get_requirements_too(question: str, expected: list[tuple[str, str]]) -> None:
    assert shown(question) == expected


@pytest.mark.parametrize(
    "aspect, parts",
    [
        ("backups with compression and encryption", ["compression", "encryption"]),
        ("tumours with regional or distant metastases", ["regional or distant metastases"]),  # a shared head noun
    ],
)
def test_and_joined_qualifiers(aspect: str, parts: list[str]) -> None:
    assert [t for _, t in shown(aspect)][1:] == parts


def test_an_author_only_request_leaves_the_author_to_the_navigator() -> None:
    """An "articles written by X" request has no subject: no requirement rewords it; the intent still ranks."""
    plan = make_plan("I am interested in articles written either by Prieve or Udo Pooch")
    assert plan["checklist"] == [] and [i["text"] for i in scored_items(plan)] == [plan["core"]]
    assert shown("papers written by Robertson on BM25") == [("topic", "BM25")]


def test_strip_openers_never_empties_the_text() -> None:
    assert strip_openers("How to?") == "How to?"
    assert strip_openers("What is it?") == "What is it?"


def test_the_result_shows_the_plan_with_each_items_kind() -> None:
    from quarry.cli.render import plan_line

    plan = make_plan("find the documents about WAL checkpoints in PostgreSQL, as man pages, not SQLite")
    assert plan_line(plan["checklist"]) == (
        "[topic] WAL checkpoints · [product] PostgreSQL · [format] man pages · [exclusion] not SQLite"
    )


def test_a_steer_is_read_like_the_intent() -> None:
    plan = make_plan(
        "write-ahead logging", ["only in PostgreSQL, as man pages", "must use hospital data", "not SQLite"]
    )
    assert [(i["kind"], i["text"]) for i in plan["checklist"]] == [
        ("topic", "write-ahead logging"),
        ("product", "PostgreSQL"),
        ("format", "man pages"),
        ("aspect", "use hospital data"),
        ("exclusion", "not SQLite"),
    ]


@pytest.mark.parametrize(
    "intent, expected",
    [
        ("compression of data streams", [("topic", "compression"), ("aspect", "data streams")]),
        (
            "write-ahead logging and checkpoint configuration",
            [("topic", "write-ahead logging"), ("topic", "checkpoint configuration")],
        ),
        ("log file configuration and rotation", [("topic", "log file configuration"), ("topic", "log file rotation")]),
        ("vacuuming and reclaiming free space", [("topic", "vacuuming"), ("topic", "reclaiming free space")]),
        (
            "date and time formatting and parsing",
            [("topic", "date and time formatting"), ("topic", "date and time parsing")],
        ),
        # One notion each: a shared modifier, two lone words, sides that are not parallel nouns.
        ("date and time handling", [("topic", "date and time handling")]),
        ("search and replace", [("topic", "search and replace")]),
        ("regular expressions and globbing", [("topic", "regular expressions and globbing")]),
        ("index tuning in practice", [("topic", "index tuning in practice")]),
    ],
)
def test_a_subject_is_cut_into_the_notions_it_names(intent: str, expected: list[tuple[str, str]]) -> None:
    """No requirement is the intent reworded: a subject with a qualifier or two notions gives one
    requirement each, while a phrase that names one notion stays whole."""
    assert shown(intent) == expected
