"""Answer the questions of a split again over the final lists of jobs that already ran.

    QUARRY_HOME=H python -m evals.debian_docs.evaluate CORPUS --split dev --out dev.json   # the jobs
    QUARRY_HOME=H python -m evals.debian_docs.replay_answers --split dev --out dev-replay.json
    python -m evals.debian_docs.fit_confidence dev-replay.json

Why: the answer step is a pure function of a job's final list and the store (the round graph's
`build_result`: IDF weights, `answer_docs`, `with_sections`, the heuristic policy's `answer`), and
the list does not depend on it. Rules of the extractive answer can then be tried on the dev half in
seconds instead of re-running every job; the report has evaluate.py's `per_question` shape, so
fit_confidence reads either. The test half is reported by evaluate.py's real jobs only.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from evals.answer_match import grade_answer, match_metrics
from evals.debian_docs.evaluate import COLLECTION, load, subject_metrics
from nodes.evidence.answer_extractive import question_weights
from nodes.evidence.answer_sections import with_sections
from nodes.job.config import JobConfig
from nodes.job.results import answer_docs
from nodes.policy.heuristic import HeuristicPolicy
from nodes.policy.seam import AnswerRequest
from stores.atomic import write_atomic
from stores.collection import Collection
from stores.home import quarry_home
from stores.job_status import JobStatus
from stores.jobs import JobStore


def last_results(store: JobStore, prefix: str) -> dict[str, dict[str, Any]]:
    """The newest completed eval job's result per question id (`eval-ddocs-<qid>-…`)."""
    out: dict[str, dict[str, Any]] = {}
    for job in sorted(store.list(limit=100_000), key=lambda j: j.get("created_at") or 0):
        job_id = str(job.get("job_id", ""))
        if job.get("status") == JobStatus.COMPLETED and job_id.startswith(prefix):
            qid = job_id[len(prefix) :].rsplit("-", 1)[0]
            full = store.get(job_id)
            if full and full.get("result"):
                out[qid] = full["result"]
    return out


def replay(split: str) -> dict[str, Any]:
    home = quarry_home()
    col = Collection(COLLECTION, home=home)
    corpus = col.corpus
    cfg = JobConfig()
    policy = HeuristicPolicy()
    questions = load("questions", split)
    results = last_results(JobStore(home / "jobs.sqlite"), f"eval-{COLLECTION}-")
    per_question, grades, answered = {}, [], {}
    for q in questions:
        result = results.get(q["_id"])
        if result is None:
            continue
        question = q["question"]
        weights = question_weights(question, lambda w: len(col.lucene.search(w, k=cfg.idf_depth)), corpus.count())
        docs = with_sections(
            question, answer_docs(result["ranked"], corpus, cfg.models.answer_docs, cfg.models.answer_chars), corpus
        )
        draft = policy.answer(AnswerRequest(question, {}, docs, weights, cfg.answer_sentences)).draft
        answer = {"explanation": draft.explanation, "exact_answer": draft.exact_answer, "confidence": draft.confidence}
        grade = grade_answer(q["_id"], answer, [q["answer"], *(q.get("aliases") or [])])
        grades.append(grade)
        cited = [d.docid for d in docs if f"[{d.docid}]" in draft.explanation]
        answered[q["_id"]] = {"cited": cited}
        per_question[q["_id"]] = {
            "question": question,
            "reference": q["answer"],
            "exact_answer": grade.exact_answer,
            "exact": grade.exact,
            "f1": grade.f1,
            "confidence": grade.confidence,
            "features": draft.features,
            "cited": cited,
        }
    return {
        "split": split,
        "replayed": True,
        "questions": len(per_question),
        "answers": match_metrics(grades) | subject_metrics([q for q in questions if q["_id"] in answered], answered),
        "per_question": per_question,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("dev", "test"), default="dev")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    report = replay(args.split)
    if args.out:
        write_atomic(args.out, json.dumps(report, indent=1, default=str))
    print(
        json.dumps({"split": report["split"], "questions": report["questions"], "answers": report["answers"]}, indent=1)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
