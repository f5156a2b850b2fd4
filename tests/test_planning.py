"""Table-driven tests of intent parsing: years, exclusions, checklist, steering validation."""

from __future__ import annotations

import pytest

from nodes.evidence.planning import (
    apply_steering,
    first_queries,
    make_plan,
    parse_authors,
    parse_exclusions,
    parse_venue,
    parse_years,
    validate_steering,
)
from stores.records import last_name


@pytest.mark.parametrize(
    "text, year_min, year_max",
    [
        ("federated learning 2019–2023", 2019, 2023),
        ("federated learning 2019-2023", 2019, 2023),
        ("federated learning from 2023 to 2019", 2019, 2023),
        ("papers between 2001 and 2005 on ranking", 2001, 2005),
        ("dense retrieval after 2015", 2016, None),
        ("dense retrieval since 2015", 2015, None),
        ("dense retrieval before 2010", None, 2009),
        ("dense retrieval until 2010", None, 2010),
        ("ranking published in 2020", 2020, 2020),
        ("ranking with 300 features", None, None),
    ],
)
def test_year_constraints(text: str, year_min: int | None, year_max: int | None) -> None:
    got_min, got_max, rest = parse_years(text)
    assert (got_min, got_max) == (year_min, year_max)
    if year_min or year_max:
        assert str(year_min or year_max) not in rest


@pytest.mark.parametrize(
    "text, exclusions",
    [
        ("dense retrieval, not surveys", ["surveys"]),
        ("dense retrieval excluding surveys and tutorials", ["surveys", "tutorials"]),
        ("query expansion, but not neural models", ["neural models"]),
        ("ranking except for learning to rank", ["learning to rank"]),
        ("programs that do not use recursion", []),  # "not" inside a clause is part of the topic
        ("mechanisms for disjoint processes", []),
    ],
)
def test_exclusions(text: str, exclusions: list[str]) -> None:
    found, rest = parse_exclusions(text)
    assert found == exclusions
    for phrase in found:
        assert phrase not in rest


def test_plan_keeps_every_user_word_in_the_first_query_but_not_excluded_ones() -> None:
    intent = "empirical studies of federated learning across hospitals for medical imaging, 2023–2025, not surveys"
    plan = make_plan(intent)
    (query,) = first_queries(plan, intent)
    for word in ("empirical", "studies", "federated", "learning", "hospitals", "medical", "imaging"):
        assert word in query
    assert "surveys" not in query
    kinds = [i["kind"] for i in plan["checklist"]]
    assert kinds[0] == "topic" and "metadata" in kinds and "exclusion" in kinds
    assert (plan["year_min"], plan["year_max"]) == (2023, 2025)
    assert plan["exclusions"] == ["surveys"]


def test_without_store_years_a_year_phrase_is_part_of_the_topic() -> None:
    intent = "Sepsis related mortality has risen from 2009 to 2014, not surveys"
    plan = make_plan(intent, years=False)
    assert plan["year_min"] is None and plan["year_max"] is None
    assert "2009 to 2014" in first_queries(plan, intent)[0] and plan["exclusions"] == ["surveys"]
    assert (make_plan(intent)["year_min"], make_plan(intent)["year_max"]) == (2009, 2014)


def test_steering_adds_requirement_exclusion_and_years() -> None:
    plan = make_plan("dense retrieval")
    checklist, excl, y_min, y_max = apply_steering(plan["checklist"], [], None, None, "must use hospital data")
    assert any("hospital data" in i["text"] for i in checklist)
    _, excl, _, _ = apply_steering(checklist, excl, None, None, "not surveys")
    assert excl == ["surveys"]
    _, _, y_min, y_max = apply_steering(checklist, excl, None, None, "2019-2021")
    assert (y_min, y_max) == (2019, 2021)


def test_year_steering_on_a_store_without_years_is_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match="no publication year"):
        validate_steering("only 2019-2021", years=False)
    assert validate_steering("not surveys", years=False) == "not surveys"
    # Folded into a plan for such a store, a year phrase stays words and never becomes a filter.
    plan = make_plan("sepsis mortality", ["rates between 2009 and 2014"], years=False)
    assert plan["year_min"] is None and any("2009" in i["text"] for i in plan["checklist"])


@pytest.mark.parametrize(
    ("note", "reason", "hint"),
    [
        ("", "steering text is empty", "e.g. 'must use hospital data'"),
        ("   ", "steering text is empty", "e.g. 'must use hospital data'"),
        (None, "steering text is empty", "e.g. 'must use hospital data'"),
        (5, "steering text is empty", "e.g. 'must use hospital data'"),
        ("the of and", "no requirement found in 'the of and'", "a year range like 2019-2023"),
        ("x" * 501, "longer than 500 characters", "one requirement at a time"),
    ],
)
def test_bad_steering_is_rejected_with_a_reason(note: object, reason: str, hint: str) -> None:
    """Each refusal says what was wrong and how to phrase the steer instead."""
    with pytest.raises(ValueError) as info:
        validate_steering(note)
    assert reason in str(info.value) and hint in str(info.value), str(info.value)


def test_good_steering_is_normalised() -> None:
    assert validate_steering("  not   surveys ") == "not surveys"


@pytest.mark.parametrize(
    "text, names, exclusive",
    [
        ("I am interested in articles written either by Prieve or Udo Pooch", ["Prieve", "Udo Pooch"], True),
        ("papers by Robertson and Zaragoza on BM25", ["Robertson", "Zaragoza"], True),
        ("Information retrieval articles by Gerard Salton or others about clustering", ["Gerard Salton"], False),
        ("there is an old article by Heindel, L.E. in J. ACM", [], False),  # a reference, not a requirement
        ("shape recognition by computer", [], False),
    ],
)
def test_author_constraints(text: str, names: list[str], exclusive: bool) -> None:
    assert parse_authors(text) == (names, exclusive)


@pytest.mark.parametrize(
    "text, venue",
    [
        ("dense retrieval published in SIGIR", "SIGIR"),
        ("query expansion papers that appeared in the Journal of the ACM after 1970", "Journal of the ACM"),
        ("work presented at NeurIPS on retrieval", "NeurIPS"),
        ("data types in the following languages: Pascal", None),
        ("ranking in Python", None),
    ],
)
def test_venue_constraints(text: str, venue: str | None) -> None:
    assert parse_venue(text) == venue


@pytest.mark.parametrize(
    "name, last", [("Udo Pooch", "pooch"), ("Pooch, U.W.", "pooch"), ("L. E. Heindel", "heindel"), ("Prieve", "prieve")]
)
def test_last_names(name: str, last: str) -> None:
    assert last_name(name) == last


def test_multi_part_intent_keeps_the_whole_intent_as_a_ranking_signal_only() -> None:
    """The core is no requirement (the user did not write it twice) but stays scored: Plan.whole."""
    from nodes.policy.seam import scored_items

    plan = make_plan("graph neural networks for molecular property prediction")
    assert [i["text"] for i in plan["checklist"]] == ["graph neural networks", "molecular property prediction"]
    assert plan["whole"]["text"] == "graph neural networks for molecular property prediction"
    assert next(i["text"] for i in scored_items(plan)) == plan["whole"]["text"]
    single = make_plan("dense retrieval")
    assert [i["text"] for i in single["checklist"]] == ["dense retrieval"] and "whole" not in single
    assert [i["text"] for i in scored_items(single)] == ["dense retrieval"]


@pytest.mark.parametrize(
    "intent, texts",
    [
        # The walkthrough's cases: "by default" alone became a requirement that scored 5.0/5 on an unrelated sentence.
        ("EventEmitter maximum listeners, by default", ["EventEmitter maximum listeners, by default"]),
        (
            "How many listeners can be registered, by default, for an EventEmitter?",
            ["How many listeners can be registered, by default", "EventEmitter"],
        ),
        (
            "By default, how many listeners can an EventEmitter have?",
            ["By default, how many listeners can an EventEmitter have"],
        ),
        ("gzip compression level, in general", ["gzip compression level, in general"]),
        ("zstd compression levels, for example", ["zstd compression levels, for example"]),  # cut at " for "
        ("in practice, at least, e.g. sticky queues", ["in practice, at least, e.g. sticky queues"]),
        ("by default", ["by default"]),  # never no requirement at all
        (
            "dense retrieval, e.g. DPR, for question answering",  # a filler word beside a content word stays
            ["dense retrieval", "e.g. DPR", "question answering"],
        ),
    ],
)
def test_a_filler_phrase_is_no_requirement_of_its_own(intent: str, texts: list[str]) -> None:
    assert [i["text"] for i in make_plan(intent)["checklist"]] == texts


def test_filler_pieces() -> None:
    from nodes.evidence.planning import filler_piece, split_requirements

    assert filler_piece(" by default") and filler_piece("example", " for ") and filler_piece("in general.")
    assert not filler_piece("by default port") and not filler_piece("listeners", " for ")
    pieces, cues = split_requirements("EventEmitter listeners, by default, for Node.js servers")
    assert pieces == ["EventEmitter listeners, by default,", "Node.js servers"] and cues == [" for "]


def test_steering_rebuilds_the_plan_and_keeps_what_the_navigator_checked() -> None:
    """nodes.rounds.steering: a note adds its exclusion, searches only its positive part, keeps the
    store-checked author item and a model navigator's items, and starts the next round."""
    from nodes.rounds.steering import fold_steering

    before = make_plan("graph neural networks for molecules", [])
    author = {"id": "a", "kind": "author", "text": "by Smith"}
    model_item = {"id": "m1", "kind": "topic", "text": "message passing"}
    state = {
        "intent": "graph neural networks for molecules",
        "round": 2,
        "steering": [],
        "plan": {**before, "authors": ["Smith"], "checklist": [*before["checklist"], author, model_item]},
    }
    update = fold_steering(state, [{"text": "toxicity prediction, not benchmarks", "round": 2}])
    plan = update["plan"]
    assert "benchmarks" in plan["exclusions"] and plan["authors"] == ["Smith"]
    assert author in plan["checklist"] and model_item in plan["checklist"]
    assert update["round"] == 3 and update["node"] == "steer" and update["top_ids"] == []
    assert all("toxicity" in q and "benchmark" not in q for q in update["queries"])
    assert update["steering"] == [{"text": "toxicity prediction, not benchmarks", "round": 2}]
