"""Evidence location, combination and feedback queries (pure functions)."""

from __future__ import annotations

import numpy as np

from nodes.evidence.planning import make_plan
from nodes.evidence.scoring import (
    COSINE_CEIL,
    COSINE_FLOOR,
    combine,
    cosine_to_score,
    locate_evidence,
    locate_evidence_dense,
    relevance_model_query,
    violated_constraint,
)
from nodes.job.state import ranked_candidates
from nodes.rounds.retrieval import as_query, query_key
from stores.dense import ChunkSpan
from stores.records import Chunk, DocRecord

ITEM = {"id": "c1", "kind": "topic", "text": "dense passage retrieval", "weight": 1.0}


def chunks() -> list[Chunk]:
    return [
        Chunk(docid="d", chunk_no=0, line_start=1, line_end=2, text="Title about\ncooking pasta"),
        Chunk(docid="d", chunk_no=1, line_start=3, line_end=5, text="We retrieve passages\nwith dense\nencoders"),
    ]


def test_lexical_evidence_picks_the_chunk_covering_most_item_words() -> None:
    ev = locate_evidence(ITEM, chunks())
    assert (ev["line_start"], ev["line_end"]) == (3, 5)
    assert ev["score"] == 5.0  # dense, passage(s), retrieve(al) all match by prefix stem


def test_cosine_maps_linearly_onto_zero_to_five() -> None:
    assert cosine_to_score(COSINE_FLOOR) == 0.0
    assert cosine_to_score(COSINE_CEIL) == 5.0
    assert cosine_to_score((COSINE_FLOOR + COSINE_CEIL) / 2) == 2.5
    assert cosine_to_score(-1.0) == 0.0 and cosine_to_score(1.0) == 5.0


def test_dense_evidence_takes_the_most_similar_chunk_and_quotes_the_store_text() -> None:
    item_vec = np.array([1.0, 0.0])
    vecs = [(ChunkSpan(0, 1, 2), np.array([0.0, 1.0])), (ChunkSpan(1, 3, 5), np.array([0.8, 0.6]))]
    (ev,) = locate_evidence_dense(ITEM, item_vec, vecs, chunks())
    assert (ev["line_start"], ev["line_end"]) == (3, 5)
    assert ev["chunk"] == "We retrieve passages\nwith dense\nencoders", "the store's exact text"
    assert ev["score"] == cosine_to_score(0.8)


def test_judge_scores_each_item_by_semantic_and_relative_bm25_match() -> None:
    from nodes.policy.heuristic import HeuristicPolicy
    from nodes.policy.seam import JudgeInput

    plan = {"checklist": [ITEM]}
    rec = DocRecord(docid="d", title="Title about cooking pasta", text="We retrieve passages\nwith dense\nencoders")
    item_vec = np.array([1.0, 0.0])
    vecs = [(ChunkSpan(0, 1, 2), np.array([0.0, 1.0])), (ChunkSpan(1, 3, 5), np.array([0.8, 0.6]))]
    # One batch of two candidates: the same document with a strong and a weak BM25 match.
    best, weak = HeuristicPolicy().judge(
        plan,
        [JudgeInput(rec, chunks(), 0.5, vecs, {"c1": 1.0}), JudgeInput(rec, chunks(), 0.5, vecs, {"c1": 0.2})],
        {"c1": item_vec},
    )
    s_best, (ev_best,) = best.score, best.evidence
    s_weak, (ev_weak,) = weak.score, weak.evidence
    assert ev_best["score"] == round((cosine_to_score(0.8) + 5.0) / 2, 3)
    assert ev_weak["score"] == round((cosine_to_score(0.8) + 1.0) / 2, 3)
    assert (ev_best["line_start"], ev_best["line_end"]) == (3, 5) and s_best > s_weak
    # The runner-up chunk is kept as a line range with its own semantic score (top-m, m=2).
    assert ev_best["also"] == [{"line_start": 1, "line_end": 2, "score": cosine_to_score(0.0)}]
    # Without the BM25 match (or embeddings) the chunk's word coverage stands in.
    (plain,) = HeuristicPolicy().judge(plan, [JudgeInput(rec, chunks(), 0.5)])
    (ev_plain,) = plain.evidence
    assert ev_plain["score"] == 5.0 and (ev_plain["line_start"], ev_plain["line_end"]) == (3, 5)


def test_combine_is_the_pasamaster_formula() -> None:
    assert combine([(5.0, 1.0), (3.0, 1.0)], 1.0) == round((4.0 + 1.0) / 6, 6)
    assert combine([(5.0, 1.0), (0.0, 0.0)], 0.5) == round((5.0 + 0.5) / 6, 6)  # weight 0 items ignored
    assert combine([], 0.6) == 0.1


def test_hard_constraints() -> None:
    plan = {"year_min": 2019, "year_max": 2021, "exclusions": ["surveys"]}
    assert violated_constraint(plan, DocRecord(docid="a", title="Dense retrieval", year=2020)) == ""
    assert "2018" in violated_constraint(plan, DocRecord(docid="b", title="Dense retrieval", year=2018))
    assert "unknown" in violated_constraint(plan, DocRecord(docid="c", title="Dense retrieval"))
    assert "surveys" in violated_constraint(plan, DocRecord(docid="d", title="A survey of dense retrieval", year=2020))


def test_author_and_venue_constraints_use_store_metadata() -> None:
    plan = {"authors": ["pooch", "prieve"], "authors_exclusive": True, "venue": "SIGIR"}
    ok = DocRecord(docid="a", title="t", authors=("Chattergy, R.", "Pooch, U.W."), venue="sigir")
    assert violated_constraint(plan, ok) == ""
    assert "not by" in violated_constraint(plan, DocRecord(docid="b", title="t", authors=("Smith, J.",), venue="SIGIR"))
    assert "SIGIR" in violated_constraint(
        plan, DocRecord(docid="c", title="t", authors=("Prieve, B. G.",), venue="CIKM")
    )
    soft = {"authors": ["salton"], "authors_exclusive": False}
    assert violated_constraint(soft, DocRecord(docid="d", title="t", authors=("Smith, J.",))) == ""


def test_feedback_query_keeps_every_user_word_and_only_adds() -> None:
    core = "sparse matrix algorithms"
    texts = [
        "graph partitioning for sparse matrices and elimination orderings",
        "elimination orderings minimise fill in sparse factorisation",
    ]
    query = relevance_model_query(core, texts, [1.0, 1.0], n_terms=5)
    words = query.split()
    assert {"sparse", "matrix", "algorithms"} <= set(words)
    assert "elimination" in words and "orderings" in words
    assert words.count("sparse") > words.count("elimination")  # weight shows as repeats
    assert relevance_model_query(core, [], []) == core


def test_queries_in_state_accept_plain_text_and_dicts() -> None:
    assert as_query("x") == {"text": "x", "channel": "lexical", "weight": 1.0}
    q = as_query({"text": "", "channel": "citations", "seeds": ["a", "b"], "weight": 0.5})
    assert query_key(q) == "citations||a,b" and q["weight"] == 0.5


def test_final_order_fuses_verification_and_retrieval_and_drops_excluded() -> None:
    cands = {
        "a": {"docid": "a", "fused": 0.10, "score": 0.2, "verified_version": 1},
        "b": {"docid": "b", "fused": 0.05, "score": 0.9, "verified_version": 1},
        "c": {"docid": "c", "fused": 0.08, "score": 0.5, "verified_version": 1},
        "x": {"docid": "x", "fused": 0.20, "score": 0.0, "verified_version": 1, "excluded": "published 1990"},
        "u": {"docid": "u", "fused": 0.30, "score": 0.0},
    }
    order = [c["docid"] for c in ranked_candidates(cands)]
    # a: S-rank 3, F-rank 1; b: 1, 3; c: 2, 2. 1/61 + 1/63 > 2/62, so a and b (tied, by docid)
    # come before c; the excluded x never appears; the unverified u follows the verified ones.
    assert order == ["a", "b", "c", "u"]


def test_reflection_adds_feedback_and_leans_toward_the_weakest_requirement() -> None:
    from nodes.policy.heuristic import HeuristicPolicy
    from nodes.policy.seam import ReflectRequest
    from nodes.rounds.reflection import _weakest_item

    plan = make_plan("graph neural networks for molecular property prediction")
    items = [i for i in plan["checklist"] if i["kind"] != "metadata"]
    assert [i["id"] for i in items] == ["c1", "c2"]
    top = [
        {"evidence": [{"item_id": "c1", "score": 4.5}, {"item_id": "c2", "score": 1.0}]},
        {"evidence": [{"item_id": "c1", "score": 5.0}, {"item_id": "c2", "score": 2.0}]},
    ]
    weakest = _weakest_item({"plan": plan}, top)
    assert weakest["id"] == "c2" and weakest["text"] == "molecular property prediction"
    best = [
        DocRecord(docid="a", title="Message passing for molecules", text="Graph networks predict molecular energies.")
    ]
    feedback, leaning = HeuristicPolicy().reflect(ReflectRequest(plan, plan["core"], best, best, weakest)).queries
    assert (
        list(dict.fromkeys(feedback.split()))[:3] == ["graph", "neural", "networks"] and "message" in feedback.split()
    )
    assert leaning == f"{plan['core']} molecular property prediction"
    # The whole requirement as the weakest item adds nothing beyond the user's own query.
    only = HeuristicPolicy().reflect(ReflectRequest(plan, plan["core"], best, best, plan["whole"])).queries
    assert len(only) == 1 and only[0] == feedback


def test_evidence_quotes_whole_sentences_with_their_own_lines() -> None:
    from nodes.evidence.scoring import sentence_quote, sentences

    text = (
        "Background on cooking. We retrieve passages with dense\nencoders (e.g. DPR, Fig. 2) for open\n"
        "question answering at scale. Unrelated closing remark about the weather and other things."
    )
    chunk = Chunk(docid="d", chunk_no=1, line_start=7, line_end=9, text=text)
    assert [text[a:b] for a, b in sentences(text)][1].endswith("for open\nquestion answering at scale."), (
        "abbreviations do not end it"
    )
    ev = locate_evidence(ITEM, [chunk])
    assert (
        ev["chunk"]
        == "We retrieve passages with dense\nencoders (e.g. DPR, Fig. 2) for open\nquestion answering at scale."
    )
    assert (ev["line_start"], ev["line_end"]) == (7, 9)
    short, start, end = sentence_quote(
        Chunk(
            docid="d",
            chunk_no=0,
            line_start=1,
            line_end=2,
            text="Dense retrieval.\nIt works well on many open benchmarks, as shown by several careful studies.",
        ),
        {"dense"},
    )
    assert short.startswith("Dense retrieval.\nIt works") and (start, end) == (1, 2), "a short sentence takes the next"


def test_a_lower_cased_text_still_splits_into_sentences() -> None:
    """Some corpora are lower-cased throughout (Cranfield's abstracts: "… slipstream . an
    experimental study …"): their sentences start with a small letter, and a quote is still one
    sentence, not the whole passage; abbreviations in small letters do not end one."""
    from nodes.evidence.scoring import sentences

    text = (
        "experimental investigation of a wing in a slipstream . an experimental study of a wing in a "
        "propeller slipstream was made (see fig. 3, e.g. the tip) . the results agree with theory ."
    )
    got = [text[a:b] for a, b in sentences(text)]
    assert got == [
        "experimental investigation of a wing in a slipstream .",
        "an experimental study of a wing in a propeller slipstream was made (see fig. 3, e.g. the tip) .",
        "the results agree with theory .",
    ]
    ev = locate_evidence(
        {"id": "c1", "kind": "topic", "text": "results agree theory", "weight": 1.0},
        [Chunk(docid="d", chunk_no=1, line_start=1, line_end=1, text=text)],
    )
    assert ev["chunk"] == "the results agree with theory ."
    cased = "We saw it. then it went on. And stopped."
    assert [cased[a:b] for a, b in sentences(cased)] == ["We saw it. then it went on.", "And stopped."], (
        "a text with capitals keeps the case rule"
    )


def test_a_quote_from_a_passage_that_began_inside_a_sentence_is_that_sentence_alone() -> None:
    """The passage saw only the tail of its best sentence ("stresses in … aircraft ."), found it
    short and took the next sentence too; read whole in the document the sentence is long
    enough, so the result quotes it alone. A sentence that is short when whole keeps its company."""
    from nodes.evidence.scoring import whole_sentences
    from nodes.job.results import evidence_entry
    from stores.spans import DocumentText

    lines = [
        "a title",
        "the new technique was correlated with several theories which analyzed the transient thermal",
        "stresses in idealized wing structures of high-speed aircraft . various theories were investigated",
        "which represented the same idealized wing models .",
    ]
    e = {
        "item_id": "c1",
        "score": 3.0,
        "line_start": 3,
        "line_end": 4,
        "chunk": "stresses in idealized wing structures of high-speed aircraft . various theories were investigated\n"
        "which represented the same idealized wing models .",
    }
    entry = evidence_entry(e, {}, DocumentText.of(lines), body=(2, 4))
    assert entry["chunk"] == (
        "the new technique was correlated with several theories which analyzed the transient "
        "thermal stresses in idealized wing structures of high-speed aircraft ."
    )
    assert entry["lines"] == [2, 3]
    short = "Dense retrieval. It works well on many open benchmarks, as shown by several careful studies."
    assert whole_sentences(short, 3, len(short)) == (0, len(short)), "a first sentence short when whole keeps the next"


def test_field_lists_table_rows_and_option_runs_are_one_statement_each() -> None:
    """A reference page states facts as definitions with no sentence end between them: an rst
    field list (scikit-learn's iris.rst), a Markdown table, a `--help` listing. Each is its own
    statement, so a quote is one definition, not the whole list."""
    from nodes.evidence.scoring import sentences

    fields = (
        ":Number of Instances: 150 (50 in each of three classes)\n"
        ":Number of Attributes: 4 numeric, predictive attributes and the class\n:Attribute Information:"
    )
    assert [fields[a:b] for a, b in sentences(fields)] == fields.split("\n")
    table = (
        "| Option | Description | Default |\n|---|---|---|\n"
        "| `max_cached_workflows` | How many Workflow Executions a Worker keeps in its cache | `1000` |"
    )
    assert [table[a:b] for a, b in sentences(table)] == table.split("\n")
    listing = (
        "  user options for Valgrind tools that report errors:\n"
        "    --demangle=no|yes         automatically demangle C++ names? [yes]\n"
        "    --num-callers=<number>    show <number> callers in stack traces [12]\n"
        "    --error-markers=<begin>,<end> add lines with begin/end markers before/after\n"
        "                              each error output in plain text mode [none]"
    )
    got = [listing[a:b] for a, b in sentences(listing)]
    assert "--num-callers=<number>    show <number> callers in stack traces [12]" in got
    assert got[-1] == (
        "--error-markers=<begin>,<end> add lines with begin/end markers before/after\n"
        "                              each error output in plain text mode [none]"
    ), "a description's continuation line stays with its option"


def test_an_option_named_inside_wrapped_prose_does_not_cut_the_sentence() -> None:
    """man gzip: one option name at a line start inside a sentence is prose, not a listing."""
    from nodes.evidence.scoring import sentences

    text = (
        "In  some rare cases, the --best option gives worse compression than the\n"
        "--fast  option would on files that are already compressed."
    )
    assert [text[a:b] for a, b in sentences(text)] == [text]


def test_man_page_hyphenation_is_joined_for_reading_only() -> None:
    from nodes.evidence.scoring import display_text, quote

    text = "The  gzip command will only attempt to compress regular files.  In par\u2010\n       ticular, it will"
    assert display_text(text).endswith("In particular, it will")
    assert quote(text).endswith("In particular, it will")
    assert display_text("pre\u2010 and post\u2010processing") == "pre\u2010 and post\u2010processing", (
        "suspended hyphen"
    )
    assert display_text("Lempel-\nZiv coding") == "Lempel- Ziv coding", "an ASCII hyphen is left as written"
