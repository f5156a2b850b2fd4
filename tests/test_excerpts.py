"""Query-biased excerpts and query terms: table-driven, expected values worked out by hand.

The long texts are built from 5-letter words and single spaces, so every word starts at a
multiple of 6 and the window arithmetic (width 220, centre at a third) can be done on paper;
the comment on each case gives the numbers.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nodes.tools.excerpts import CUT, EXCERPT_CHARS, _first_match, _first_match_by_word, _stems, excerpt, query_terms

A, Z = "alpha", "omega"


def words(*parts: str | tuple[str, int]) -> str:
    out: list[str] = []
    for p in parts:
        out.extend([p[0]] * p[1] if isinstance(p, tuple) else [p])
    return " ".join(out)


@pytest.mark.parametrize(
    ("text", "query", "expected"),
    [
        # short texts come back whole, whitespace normalised
        ("  Dense \n retrieval\tworks  ", "retrieval", "Dense retrieval works"),
        ("", "anything", ""),
        ("x" * EXCERPT_CHARS, "y", "x" * EXCERPT_CHARS),
        # no match: the window starts at 0; the last space before 220 is at 215 -> 36 words + "…"
        (words((A, 100)), "zebra", words((A, 36)) + "…"),
        # match at 300 (after 50 words): start=300-73=227 is a space -> 228 (12 words before the match);
        # end=447 -> last space before it at 443 (23 words after)
        (words((A, 50), "zebra", (Z, 50)), "zebra", "…" + words((A, 12), "zebra", (Z, 23)) + "…"),
        # match at 600, near the end: start clamps to 605-220=385 -> next space 389 -> 390 (35 words)
        (words((A, 100), "zebra"), "zebra", "…" + words((A, 35), "zebra")),
        # match at 0: like no match, but anchored on it
        (words("zebra", (A, 100)), "zebra", words("zebra", (A, 35)) + "…"),
        # case-insensitive, and matched by prefix ("zebras" -> "zebr")
        (words((A, 50), "Zebra", (Z, 50)), "ZEBRAS", "…" + words((A, 12), "Zebra", (Z, 23)) + "…"),
        # stopwords never anchor: "their" at 0 is ignored, "zebra" at 300 anchors
        (words("their", (A, 49), "zebra", (Z, 50)), "their zebra", "…" + words((A, 12), "zebra", (Z, 23)) + "…"),
        # a term never matches inside a word: "cat" skips "scats" at 0 and anchors on "catty" at 300
        (words("scats", (A, 49), "catty", (Z, 50)), "cat", "…" + words((A, 12), "catty", (Z, 23)) + "…"),
        # the first match in the text wins, whatever the order of the query words
        (words((A, 50), "zebra", (Z, 49), "quail"), "quail zebra", "…" + words((A, 12), "zebra", (Z, 23)) + "…"),
    ],
)
def test_excerpt(text: str, query: str, expected: str) -> None:
    assert excerpt(text, query) == expected


@pytest.mark.parametrize(
    ("query", "term", "stem_len"),
    [
        ("retrieval", "retrieving", 6),  # long words match on all but their last 3 letters
        ("indexing", "indexes", 5),
        ("cats", "catsuit", 4),  # words of 4 letters or fewer must match whole as a prefix
    ],
)
def test_prefix_matching_finds_inflected_forms(query: str, term: str, stem_len: int) -> None:
    text = words((A, 60), term, (Z, 60))
    result = excerpt(text, query)
    assert term in result and result.startswith("…") and result.endswith("…")
    near_miss = words((A, 60), term[: stem_len - 1] + "q", (Z, 60))
    assert excerpt(near_miss, query) == words((A, 36)) + "…"  # one letter short of the stem: no anchor


@pytest.mark.parametrize("width", [40, 100, 300])
def test_width_bounds_the_excerpt(width: int) -> None:
    text = words((A, 100), "zebra", (Z, 100))
    result = excerpt(text, "zebra", width=width)
    assert "zebra" in result
    assert len(result.strip("…")) <= width
    assert not result.strip("…").startswith(" ") and not result.strip("…").endswith(" ")


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("The Zebra and the ZEBRA", ["zebra"]),
        ("a b c retrieval", ["retrieval"]),
        ("find papers about dense retrieval", ["dense", "retrieval"]),
        ("state-of-the-art BM25", ["state", "art", "bm25"]),
        ("don't stop", ["don", "stop"]),
        ("Ünïcode Straße", ["ünïcode", "straße"]),
        ("检 索 x", ["检", "索"]),
        ("R2 D2 r2", ["r2", "d2"]),
        ("", []),
        ("the of and", []),
        ("!!! ??? ...", []),
    ],
)
def test_query_terms(query: str, expected: list[str]) -> None:
    assert query_terms(query) == expected


def test_query_terms_of_none_is_empty() -> None:
    assert query_terms(None) == []  # type: ignore[arg-type]


_LETTERS = "abcde\u00e9\u0131\u00df\u03a3\u03c3\u03c2_1 -'.,\u0130\u212a"  # word and non-word characters; some lowercase to other lengths


@settings(max_examples=400, deadline=None)
@given(
    text=st.text(alphabet=_LETTERS, max_size=80),
    terms=st.lists(
        st.text(alphabet="abcde\u00e9\u0131\u00df\u03c3\u03c2_1", min_size=1, max_size=6), min_size=1, max_size=4
    ),
)
def test_the_first_match_is_the_first_word_a_stem_begins(text: str, terms: list[str]) -> None:
    """The search for each stem in the lowercased text finds the word the word-by-word walk finds."""
    stems, lengths = _stems(tuple(dict.fromkeys(t.lower() for t in terms)))
    fast, walked = _first_match(text, stems, lengths), _first_match_by_word(text, stems, lengths)
    assert (fast.span() if fast else None) == (walked.span() if walked else None)


def test_a_long_document_is_excerpted_where_the_query_first_matches() -> None:
    words = ["lorem", "ipsum", "dolor"] * 2000 + ["Volcanic", "ash"] + ["sit", "amet"] * 100
    shown = excerpt(" ".join(words), "volcano eruption")
    assert "Volcanic ash" in shown and shown.startswith(CUT)
