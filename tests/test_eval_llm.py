"""Evaluating the model policies: retrieval metrics as for every system, plus answers graded
against reference answers by a judge model (accuracy, calibration error, tokens per query)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, ToolMessage

from evals.agent_system import AgentOptions
from evals.answer_judge import Grade, calibration_error
from evals.runner import evaluate
from nodes.job.config import JobConfig, ModelSettings
from tests.fakes import ModelRouter, ScriptedChatModel, search_docs, structured_reply, tool_call, usage, write_beir

AGENT, GRADER = "openai:scripted-agent", "openai:scripted-grader"
QUERIES = {
    "qa1": "Which models predict molecular properties such as solubility and toxicity?",
    "qa2": "What do reinforcement learning agents learn robot arm control from?",
    "qa3": "federated learning with differential privacy",
}
ANSWERS = {"qa1": "graph neural networks", "qa2": "reward signals"}
QRELS = {"test": [("qa1", "gnn01", 1), ("qa2", "rl01", 1), ("qa3", "fl01", 1)]}


def agent_turn(messages, kwargs) -> AIMessage:
    """A stateless scripted searcher (jobs run concurrently): search, read the top hit, submit
    an answer whose exact answer is right for qa1 and wrong for qa2."""
    task = messages[1].content
    tools = [m for m in messages if isinstance(m, ToolMessage)]
    if not tools:
        words = re.sub(r"<[^>]+>|[?]", " ", task).split("\n")[1]
        return tool_call("search", usage(200, 10), reason="first search", query=words)
    last = tools[-1].content
    if "<search_results" in last:
        docid = re.search(r"docid=(\S+)", last).group(1)
        return tool_call("read_document", usage(300, 10), reason="read the top hit", docid=docid)
    docid = re.search(r'<document docid="([^"]+)">', last).group(1)
    sentence = re.search(r"^\s*3\s+(.+?)\.?$", last, re.M).group(1)  # the document's first body line
    right = "molecular" in task
    exact = "graph neural networks" if right else "supervised labels"
    return tool_call(
        "submit",
        usage(400, 30),
        reason="answer",
        docids=[docid],
        explanation=f"{sentence} [{docid}].",
        exact_answer=exact,
        confidence=90 if right else 70,
    )


def grader_turn(messages, kwargs) -> AIMessage:
    prompt = messages[-1].content
    response = re.search(r"<response>\n(.*?)\n</response>", prompt, re.S).group(1)
    correct = re.search(r"<correct_answer>\n(.*?)\n</correct_answer>", prompt, re.S).group(1)
    exact = re.search(r"Exact Answer: (.*)", response).group(1)
    conf = int(re.search(r"Confidence: (\d+)%", response).group(1))
    return structured_reply(
        "GradeOut",
        usage(50, 20),
        extracted_final_answer=exact,
        reasoning="compared",
        correct="yes" if correct.lower() in exact.lower() else "no",
        confidence=conf,
    )


@pytest.fixture(scope="module")
def qa_collection(quarry_home: Path, tmp_path_factory):
    from stores.collection import Collection, ingest

    folder = write_beir(tmp_path_factory.mktemp("qa") / "beir", search_docs(), queries=QUERIES, qrels=QRELS)
    (folder / "answers.jsonl").write_text("".join(f'{{"_id": "{q}", "answer": "{a}"}}\n' for q, a in ANSWERS.items()))
    ingest(folder, "evalqa", home=quarry_home)
    return Collection("evalqa", home=quarry_home)


def test_answers_are_stored_with_the_collection(qa_collection) -> None:
    assert qa_collection.corpus.answers() == ANSWERS


def test_react_eval_grades_answers_and_reports_cost(qa_collection) -> None:
    agent, grader = ScriptedChatModel(default=agent_turn), ScriptedChatModel(default=grader_turn)
    router = ModelRouter(**{AGENT.replace(":", "__"): agent, GRADER.replace(":", "__"): grader})
    options = AgentOptions(
        config=JobConfig(models=ModelSettings(model=AGENT), max_seconds=120), grader=GRADER, models=router
    )
    res = evaluate(qa_collection, "react", agent=options)
    assert res.system == "react" and res.queries == 3
    # qa1 right at confidence 90, qa2 wrong at confidence 70; qa3 has no reference answer.
    assert res.extras["answer_accuracy"] == 0.5 and res.extras["graded"] == 2
    assert res.extras["calibration_error"] == pytest.approx(0.5 * 0.1 + 0.5 * 0.7)
    assert res.per_query["qa1"]["correct"] == 1.0 and res.per_query["qa2"]["correct"] == 0.0
    assert "correct" not in res.per_query["qa3"]
    # Three model turns per job: (200 + 300 + 400) input + 50 output tokens each.
    assert res.extras["tokens_per_query"] == 950.0 and res.extras["grader_tokens"] == 140
    assert len(grader.calls) == 2
    assert res.metrics["ndcg@10"] > 0 and res.extras["hallucination_rate"] == 0.0
    assert res.extras["citation_hallucination_rate"] == 0.0
    # Graded without a model too: the Exact Answer against the reference (SQuAD normalisation).
    assert res.extras["exact_match"] == 0.5 and res.extras["answers_graded"] == 2
    assert res.per_query["qa1"]["exact_match"] == 1.0 and res.per_query["qa2"]["answer_f1"] == 0.0
    assert res.extras["confidence_ece"] == pytest.approx(0.4) and res.extras["with_confidence"] == 2


def test_the_default_agent_answers_and_is_graded_without_a_model(qa_collection, tmp_path) -> None:
    """No grader and no model: questions with reference answers still run as answers, and each is
    graded by exact match; a confidence is stated exactly when there is an Exact Answer."""
    from evals.report import write_report

    res = evaluate(qa_collection, "agent", agent=AgentOptions(config=JobConfig(max_seconds=120)))
    assert res.extras["answers_graded"] == 2 and "answer_accuracy" not in res.extras
    answered = res.extras["exact_answered"] * 2
    assert res.extras["with_confidence"] == answered
    assert set(res.per_query["qa1"]) >= {"exact_match", "answer_f1", "answer_recall"}
    assert "exact_match" not in res.per_query["qa3"]  # no reference answer: a list job
    report = write_report(tmp_path / "report", qa_collection, [res])
    text = report.read_text()
    assert "exact_match" in text and "## Calibration of agent's confidence" in text
    assert (tmp_path / "report" / "reliability-agent.png").stat().st_size > 1000


def test_calibration_error_by_bins() -> None:
    grades = [Grade("a", "", "", True, 95), Grade("b", "", "", False, 95), Grade("c", "", "", True, 100)]
    # One bin [0.9, 1.0]: accuracy 2/3 against mean confidence 0.9667.
    assert calibration_error(grades) == pytest.approx(abs(2 / 3 - (0.95 + 0.95 + 1.0) / 3), abs=1e-4)
    assert calibration_error([]) == 0.0
    assert calibration_error([Grade("a", "", "", True, 100), Grade("b", "", "", False, 0)]) == 0.0


def test_model_systems_need_a_model(qa_collection) -> None:
    from stores.errors import QuarryError

    with pytest.raises(QuarryError, match="needs a model"):
        evaluate(qa_collection, "llm")


def test_an_answer_for_an_unknown_query_is_reported_with_its_line(tmp_path, quarry_home) -> None:
    from stores.collection import ingest
    from stores.errors import IngestError

    folder = write_beir(tmp_path / "b", search_docs()[:3], queries={"q1": "x"})
    (folder / "answers.jsonl").write_text('{"_id": "q1", "answer": "a"}\n{"_id": "q9", "answer": "b"}\n{"_id": "q1"}\n')
    with pytest.raises(IngestError) as info:
        ingest(folder, "badanswers", home=quarry_home)
    assert info.value.problems == [
        f'{folder / "answers.jsonl"}:3: an answer needs an "_id" (a query id) and a non-empty "answer"',
        f"{folder / 'answers.jsonl'}:2: answer for query 'q9', which queries.jsonl does not have",
    ]
