"""The answer without a model (issue 20, item 4): it quotes the sentences that answer the
question, across the top documents, cites each, fills the Exact Answer only when a value can be
read off the best sentence, claims no confidence, says that it is extractive, and the citation
check reports how many cited sentences share the question's words (a 0% hallucination rate alone
reads as "supported" when the quotes are beside the point).

Fixture: "what is the default weight value?" over three documents: the top one states "The
default weight value is 50." among other sentences, but its strongest evidence passage is another
sentence; the other two open with irrelevant sentences (a grep option, a curl option) — what the
old answer quoted."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from nodes.evidence.answer_extractive import exact_value, question_weights, select_sentences
from nodes.evidence.citation_check import check_citations
from nodes.job.results import answer_docs, checked_answer
from nodes.policy.heuristic import HeuristicPolicy
from nodes.policy.seam import AnswerRequest
from stores.records import DocRecord, chunk_document, document_lines

QUESTION = "what is the default weight value?"
WEIGHT = "The default weight value is 50."
DOCS = {
    "weights-guide": (
        "Configuring field weights",
        [
            "Weights control how much each field contributes to the final score of a document.",
            "Options are read from the configuration file when the service starts.",
            WEIGHT,
            "A weight of 0 disables the field entirely.",
        ],
    ),
    "grep-options": (
        "grep options",
        [
            "The --max-count option makes grep stop reading a file after NUM matching lines.",
            "Patterns given with -e are matched in the order given.",
            "The option takes a numeric value; the default weight of a pattern is not configurable.",
        ],
    ),
    "curl-options": (
        "curl options",
        [
            "The --limit-rate option tells curl the maximum transfer rate it may use.",
            "The value is given in bytes per second unless a suffix is appended.",
        ],
    ),
}
# The verified evidence per document (line ranges of the numbered text: line 1 is the title, line
# 2 the first sentence), strongest first as the verifier scored them: the top document's strongest
# passage is NOT the answering sentence, and the others' strongest is their first sentence.
EVIDENCE = {
    "weights-guide": [(2, 4.0), (4, 3.5)],
    "grep-options": [(2, 3.0), (4, 2.0)],
    "curl-options": [(2, 2.5), (3, 1.0)],
}


def record(docid: str) -> DocRecord:
    title, sentences = DOCS[docid]
    return DocRecord(docid=docid, title=title, text="\n".join(sentences))


def fake_corpus() -> SimpleNamespace:
    recs = {d: record(d) for d in DOCS}
    return SimpleNamespace(
        lines=lambda d: document_lines(recs[d]),
        get_many=lambda ids: {d: recs[d] for d in ids if d in recs},
        chunks=lambda d: chunk_document(recs[d], document_lines(recs[d])),
    )


def ranked() -> list[dict]:
    return [
        {
            "docid": d,
            "title": DOCS[d][0],
            "evidence": [{"lines": [line, line], "score": score} for line, score in EVIDENCE[d]],
        }
        for d in DOCS
    ]


def draft_of(question: str = QUESTION):
    """The heuristic policy's answer from the top documents' evidence, as the answer node asks it."""
    return HeuristicPolicy().answer(AnswerRequest(question, {}, answer_docs(ranked(), fake_corpus(), 8, 1200))).draft


def answer_of(question: str = QUESTION) -> tuple[dict, dict]:
    """The answer as the result carries it, after the citation check, and the check's counts."""
    answer, checked = checked_answer(draft_of(question), opened=set(DOCS), corpus=fake_corpus(), question=question)
    return answer, checked.stats()


def test_the_answer_quotes_the_answering_sentence_first_and_reads_off_the_exact_value() -> None:
    draft = draft_of()
    explanation = draft.explanation
    assert explanation.startswith("The default weight value is 50 [weights-guide].")
    assert draft.exact_answer == "50"
    for filler in ("--max-count", "--limit-rate", "Weights control how much"):
        assert filler not in explanation, f"{filler!r} does not answer the question"


def test_the_answer_says_it_is_extractive_and_states_a_confidence_with_its_exact_answer() -> None:
    answer, _ = answer_of()
    assert answer["exact_answer"] == "50" and 0 <= answer["confidence"] <= 100 and answer["method"] == "extractive"
    assert "Extractive answer" in answer["explanation"] and not answer["insufficient_evidence"]


def test_the_citation_check_counts_cited_sentences_that_share_the_questions_words() -> None:
    _, cites = answer_of()
    assert cites["hallucination_rate"] == 0.0
    assert cites["sentences"] == cites["supported_sentences"] >= 1
    assert cites["on_question_sentences"] == cites["sentences"], "every quoted sentence is on the question"
    # The old answer's shape: each document's first sentence, cited. Every citation stands (the
    # sentences are in their documents), but only one of three is about the question.
    corpus = fake_corpus()
    chunks = {d: corpus.chunks(d) for d in DOCS}
    old = (
        f"{WEIGHT[:-1]} [weights-guide]. The --max-count option makes grep stop reading a file after NUM "
        "matching lines [grep-options]. The --limit-rate option tells curl the maximum transfer rate it may use "
        "[curl-options]."
    )
    stats = check_citations(old, allowed=set(DOCS), chunks=chunks, question=QUESTION).stats()
    assert (
        stats["hallucination_rate"],
        stats["sentences"],
        stats["supported_sentences"],
        stats["on_question_sentences"],
    ) == (0.0, 3, 3, 1)


def test_idf_weights_prefer_the_sentence_with_the_rare_words() -> None:
    """ "default" is in most documents, "weight" in few: with IDF a sentence with "weight value"
    beats one with "default value"."""
    docs = answer_docs(ranked(), fake_corpus(), 8, 1200)
    df = {"default": 900, "weight": 12, "value": 300}
    weights = question_weights(QUESTION, lambda w: df.get(w, 0), 1000)
    assert weights["weigh"] > weights["value"] > weights["defau"]
    best = select_sentences(QUESTION, docs, weights)
    assert best[0][1:] == ("weights-guide", WEIGHT)


def test_no_sentence_on_the_question_is_said_plainly() -> None:
    answer, cites = answer_of("how tall is the eiffel tower?")
    assert answer["insufficient_evidence"] and answer["exact_answer"] == "" and answer["confidence"] is None
    assert "[" not in answer["explanation"] and cites["sentences"] == 0


def test_the_result_page_says_what_the_check_found(capsys) -> None:
    """`job result`: no "0%" confidence for an extractive answer, and beside the hallucination rate
    how many cited sentences were found in their documents and share the question's words."""
    from quarry.cli.render import render_answer

    answer, cites = answer_of()
    render_answer({"answer": answer, "citations": cites, "references": []})
    printed = " ".join(capsys.readouterr().out.split())
    assert f"Confidence: {answer['confidence']}%" in printed and "not estimated" not in printed
    n = cites["sentences"]
    assert (
        f"citations checked: {n} of {n} cited sentences found in their documents; {n} of {n} share the "
        "question's content words" in printed
    )
    assert "Exact Answer: 50" in printed


@pytest.mark.parametrize(
    "question,sentence,value",
    [
        (QUESTION, WEIGHT, "50"),
        ("what is the default port?", "The server listens on the default port 7233 unless told otherwise.", "7233"),
        ("what constant does reciprocal rank fusion use?", "Reciprocal rank fusion uses the constant k = 60.", "60"),
        ("what is the default generator?", "The default generator is `Ninja` on this platform.", "Ninja"),
        (
            "who proposed reciprocal rank fusion?",
            "Reciprocal rank fusion was proposed by Cormack, Clarke and Buettcher.",
            "Cormack, Clarke and Buettcher",
        ),
        # Nothing precise to read off: empty.
        (QUESTION, "Weights control how much each field contributes.", ""),
        ("why are weights useful?", "The default weight value is 50.", ""),
        (QUESTION, "The value 50 is the default for the weight of new fields.", ""),
    ],
)
def test_exact_value_only_when_the_sentence_states_it_after_the_questions_words(question, sentence, value) -> None:
    assert exact_value(question, sentence) == value


# -- through the round graph, on a real (Lucene-indexed) collection --------------------------------


@pytest.fixture(scope="module")
def weights_runtime(quarry_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    from nodes.job.control import Control, reset_control, use_control
    from nodes.job.runtime import NodeRuntime, configure_runtime
    from stores.collection import ingest
    from tests.fakes import write_jsonl

    rows = [{"_id": d, "title": title, "text": "\n".join(sentences)} for d, (title, sentences) in DOCS.items()]
    rows += [
        {
            "_id": f"filler-{i}",
            "title": f"Release notes {i}",
            "text": f"Version {i} fixes crashes in the parser. It also updates the manual pages.",
        }
        for i in range(6)
    ]
    ingest(write_jsonl(tmp_path_factory.mktemp("weights-src") / "weights.jsonl", rows), "weights", home=quarry_home)
    rt = NodeRuntime(quarry_home)
    configure_runtime(rt)
    token = use_control(Control())
    yield
    reset_control(token)
    configure_runtime(None)


async def test_an_answer_job_without_a_model_quotes_the_weight_sentence(weights_runtime) -> None:
    from graphs.search_graph import make_search_graph
    from graphs.state import initial_state
    from nodes.job.config import JobConfig
    from nodes.job.runtime import runtime

    app = make_search_graph().compile()
    state: dict = dict(
        initial_state("extractive-1", "weights", QUESTION, mode="answer", config=JobConfig(max_rounds=1))
    )
    async for update in app.astream(state, stream_mode="updates"):
        for delta in update.values():
            state = state | (delta or {})
    result = runtime().jobs.load_draft("extractive-1")
    answer = result["answer"]
    assert "The default weight value is 50 [weights-guide]." in answer["explanation"]
    assert answer["exact_answer"] == "50" and 0 <= answer["confidence"] <= 100
    assert result["citations"]["on_question_sentences"] >= 1
    assert all(
        r["docid"] in {"weights-guide", "grep-options", "curl-options"} or r["docid"].startswith("filler")
        for r in result["references"]
    )


def test_every_front_door_states_a_missing_confidence_the_same_way() -> None:
    """The terminal, the Markdown export and the answer grader say "not estimated", never "None%"."""
    from evals.answer_judge import response_text
    from nodes.evidence.answer_confidence import stated_confidence
    from quarry.exports.job_export import export

    answer = {
        "explanation": "The default weight value is 50 [d1].",
        "exact_answer": "50",
        "confidence": None,
        "method": "extractive",
    }
    assert stated_confidence(answer) == "not estimated (extractive answer)"
    assert stated_confidence({"confidence": 80}) == "80%"
    markdown = export({"job_id": "j", "intent": "default weight?", "answer": answer, "ranked": []}, {}, "markdown")
    graded = response_text({"answer": answer})
    for text in (markdown, graded):
        assert "not estimated (extractive answer)" in text and "None%" not in text


def test_brackets_inside_a_quoted_sentence_are_text_not_citations() -> None:
    """A quote such as "compression levels [1-19]" (a man page's own brackets) in an extractive
    answer is kept word for word and neither counted nor removed as an invented citation; a model's
    answer with the same bracket still has it removed."""
    from nodes.evidence.citation_check import check_citations
    from stores.records import Chunk

    sentence = "zstd offers compression levels [1-19] and the default level is 3."
    chunks = {"zstd": [Chunk(docid="zstd", chunk_no=0, line_start=1, line_end=1, text=sentence)]}
    quoted = check_citations(f"{sentence[:-1]} [zstd].", allowed={"zstd"}, chunks=chunks, quoted_text=True)
    assert "levels [1-19] and" in quoted.text and quoted.removed == [] and quoted.cited == ["zstd"]
    assert (quoted.sentences, quoted.supported) == (1, 1)
    modelled = check_citations(f"{sentence[:-1]} [zstd].", allowed={"zstd"}, chunks=chunks)
    assert [r["docid"] for r in modelled.removed] == ["1-19"]


# -- values in the shapes reference documents use (fixtures: tests/fixtures/evidence/) ----------------

NUM_CALLERS = "What is the default value of Valgrind's --num-callers?"
GZIP_LEVEL = "What is gzip's default compression level?"
LISTENERS = "How many listeners can an EventEmitter have by default?"
IRIS = "How many instances does the Iris dataset have?"
STICKY = "What is the default schedule-to-start timeout of sticky task queues?"


def fixture_sentence(name: str, start: str) -> str:
    """The quotable sentence of a fixture document that starts with `start`, whitespace collapsed
    (as the answer step reads evidence passages)."""
    from nodes.evidence.quotable import quotable_spans
    from nodes.evidence.scoring import sentences

    text = (Path(__file__).parent / "fixtures" / "evidence" / name).read_text(encoding="utf-8")
    found = [
        " ".join(text[a:b].split())
        for a, b in quotable_spans(text, sentences(text))
        if " ".join(text[a:b].split()).startswith(start)
    ]
    assert found, f"no sentence starting {start!r} in {name}"
    return found[0]


@pytest.mark.parametrize(
    "question,name,start,title,value",
    [
        (
            NUM_CALLERS,
            "valgrind-manual-core.txt",
            "--num-callers=<number>",
            "Using and understanding the Valgrind core",
            "12",
        ),
        (GZIP_LEVEL, "gzip.1.txt", "The default compression level is -6", "GZIP(1)", "-6"),
        (GZIP_LEVEL, "gzip.1.txt", "In some rare cases, the --best option", "GZIP(1)", "-6"),
        (LISTENERS, "node-events.txt", "By default, a maximum of 10 listeners", "Events | Node.js Documentation", "10"),
        (IRIS, "iris.rst", ":Number of Instances:", "Iris plants dataset", "150"),
        (STICKY, "temporal-sticky.md", "If the Worker is slow or gone", "Sticky Execution", "5s"),
    ],
)
def test_exact_value_from_reference_documents(question, name, start, title, value) -> None:
    """Values stated as "[default: 12]", "is -6", "a maximum of 10 …", ":Field: 150", "(default `5s`)"."""
    assert exact_value(question, fixture_sentence(name, start), title) == value


@pytest.mark.parametrize(
    "question,sentence,title",
    [
        # A number beside other words: never the answer.
        (NUM_CALLERS, "The maximum value for this is 500.", "Using and understanding the Valgrind core"),
        (NUM_CALLERS, "--unw-stack-scan-thresh=<number> [default: 0]", "Using and understanding the Valgrind core"),
        (GZIP_LEVEL, "gzip 1.12 was released in April 2022 with 3 bug fixes.", "GZIP(1)"),
        (LISTENERS, "The EventEmitter class is defined and exposed by the node:events module since v0.1.26.", ""),
        (
            LISTENERS,
            (
                "By default EventEmitters will print a warning if more than 10 listeners are added for a particular "
                "event."
            ),
            "",
        ),
        (IRIS, ":Number of Attributes: 4 numeric, predictive attributes and the class", "Iris plants dataset"),
        (IRIS, "The famous Iris database, first used by Sir R.A. Fisher in 1936.", "Iris plants dataset"),
        (STICKY, "A Worker keeps at most 1000 Workflow Executions in its cache.", "Sticky Execution"),
    ],
)
def test_no_exact_value_from_an_unrelated_number(question, sentence, title) -> None:
    assert exact_value(question, sentence, title) == ""


def _answer(question: str, docs: list[tuple[str, str, list[str]]]) -> tuple[str, str]:
    from nodes.evidence.answer_extractive import extractive_answer
    from nodes.policy.seam import AnswerDoc, Passage

    answer_docs_ = [
        AnswerDoc(docid, title, tuple(Passage(n + 2, n + 2, p) for n, p in enumerate(passages)))
        for docid, title, passages in docs
    ]
    explanation, exact, _ = extractive_answer(question, answer_docs_)
    return explanation, exact


def test_the_sentence_that_states_the_value_comes_first() -> None:
    """Node.js events: several sentences mention listeners by default; the one that says how many
    is quoted first and its value is the Exact Answer."""
    starts = [
        "By default EventEmitters will print a warning",
        "This is not a hard limit.",
        "By default, a maximum of 10 listeners",
    ]
    explanation, exact = _answer(
        LISTENERS,
        [("events", "Events | Node.js Documentation", [fixture_sentence("node-events.txt", s) for s in starts])],
    )
    assert explanation.startswith(
        "By default, a maximum of 10 listeners can be registered for any single event [events]."
    )
    assert exact == "10"


def test_the_value_of_the_document_the_question_names_comes_first() -> None:
    """zstd's page states a default compression level too, and ranks first: gzip's, whose title
    the question names, is the answer."""
    explanation, exact = _answer(
        GZIP_LEVEL,
        [
            (
                "zstd",
                "ZSTD(1)",
                [
                    fixture_sentence("zstd.1.txt", "zstd is a fast lossless"),
                    "-#: selects # compression level [1-19] (default: 3)",
                ],
            ),
            ("gzip", "GZIP(1)", [fixture_sentence("gzip.1.txt", "The default compression level is -6")]),
        ],
    )
    assert explanation.startswith("The default compression level is -6") and exact == "-6"


def test_an_answer_quotes_a_man_page_word_whole() -> None:
    """A passage read from a rendered man page holds "notifica‐ tions" (U+2010 at a line end):
    the answer quotes "notifications"."""
    explanation, _ = _answer(
        "does zstd display progress notifications?",
        [("zstd", "ZSTD(1)", [" ".join(fixture_sentence("zstd.1.txt", "○ When compressing a single file").split())])],
    )
    assert "displays progress notifications and result summary" in explanation


def test_the_title_counts_when_choosing_between_sentences_of_one_passage() -> None:
    """The shared-mime-info spec (PDF, p. 4): the evidence passage holds "The default priority
    value is 50, …" and "Each element corresponds to one line of file(1)'s magic.mime file.",
    which share as many of the question's words on their own; the document's title ("Shared
    MIME-info Database") names the rest for the first, which is quoted and gives the value."""
    passage = (
        "The default priority value is 50, and the maximum is 100.\nEach match element has a number of "
        "attributes:\nEach element corresponds to one line of file(1)’s magic.mime file."
    )
    explanation, exact = _answer(
        "What is the default priority of a magic rule in the shared MIME-info database?",
        [("pdf/shared-mime-info-spec", "Shared MIME-info Database", [passage])],
    )
    assert explanation.startswith(
        "The default priority value is 50, and the maximum is 100 [pdf/shared-mime-info-spec]"
    ), explanation
    assert exact == "50"


def test_a_cited_sentence_is_on_the_question_with_its_documents_title() -> None:
    """The walkthrough's answer quoted "The default priority value is 50, …" from "Shared MIME-info
    Database" and the report said 0 of 2 cited sentences share the question's words: counted
    alone, the sentence holds two of eight. With the title printed beside it, it is on the
    question; a sentence that holds none of the words itself is not, whatever its title."""
    from nodes.evidence.citation_check import check_citations
    from stores.records import Chunk

    question = "What is the default priority of a magic rule in the shared MIME-info database?"
    spec = (
        "The default priority value is 50, and the maximum is 100. Each element corresponds to one line of "
        "file(1)'s magic.mime file. Thomas Leonard wrote it in 2018."
    )
    chunks = {"spec": [Chunk(docid="spec", chunk_no=0, text=spec, line_start=1, line_end=1)]}
    titles = {"spec": "Shared MIME-info Database"}
    answer = "The default priority value is 50, and the maximum is 100 [spec]. Thomas Leonard wrote it in 2018 [spec]."
    with_title = check_citations(
        answer, allowed={"spec"}, chunks=chunks, titles=titles, question=question, quoted_text=True
    ).stats()
    assert (with_title["supported_sentences"], with_title["on_question_sentences"]) == (2, 1)
    alone = check_citations(answer, allowed={"spec"}, chunks=chunks, question=question, quoted_text=True).stats()
    assert alone["on_question_sentences"] == 0
