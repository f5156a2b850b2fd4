"""Evaluate the default agent on the Debian documentation answer set, one split at a time.

    python -m evals.debian_docs.build_corpus build/debian-docs
    python -m evals.debian_docs.evaluate build/debian-docs --split dev --out runs/ddocs-dev.json

Ingests the folder as collection `ddocs` when the home has no such collection (QUARRY_HOME), runs
one real job per question (answer mode) and per list intent (list mode) on a local Temporal dev
server — the path `quarry eval` takes — and measures what the answers and exclusions work promises:

- answers: exact match and token F1 of the Exact Answer, answer-text recall, the share with an
  Exact Answer, the confidence's expected calibration error (evals.answer_match); and the share of
  answers whose every cited document is of the question's product (a document's product is the
  first part of its id), with the share that cite another product's document at all;
- lists: nDCG@20 against the judged documents; excluded documents (`excluded_docids`: documents
  whose subject is the excluded thing) left in each top 20; the spread of requirement scores in each
  top 10 (the standard deviation of a document's mean requirement score over the top 10, and the
  share of top 10s where every document ties); the requirements per checklist and the checklists
  with a requirement that rewords the intent (holds every content word of the intent's positive part).

Rules are chosen on `dev` and reported on `test` (docs/eval/answers-and-exclusions.md).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evals.agent_system import AgentOptions, agent_runs
from evals.answer_match import match_metrics
from nodes.evidence.planning import parse_exclusions
from nodes.job.config import JobConfig
from nodes.tools.excerpts import query_terms
from stores.atomic import write_atomic
from tuning.metrics import per_query

HERE = Path(__file__).resolve().parent
COLLECTION = "ddocs"
TOP_EXCLUDED, TOP_SPREAD = 20, 10


def load(kind: str, split: str) -> list[dict[str, Any]]:
    """Rows of every `{kind}-*.jsonl` part of the answer set in `split`."""
    rows = []
    for path in sorted(HERE.glob(f"{kind}-*.jsonl")):
        rows += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in rows if r.get("split") == split]


def load_qrels() -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for path in sorted(HERE.glob("qrels-*.tsv")):
        for line in path.read_text().splitlines():
            parts = line.split("\t")
            if len(parts) == 3 and parts[2].strip().lstrip("-").isdigit():
                out.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    return out


def product_of(docid: str) -> str:
    return docid.split("/", 1)[0]


def subject_metrics(questions: Sequence[Mapping[str, Any]], results: Mapping[str, Mapping[str, Any]]) -> dict:
    """Shares of answers citing only / any other than the question's product's documents."""
    only = other = cited = 0
    for q in questions:
        docs = list((results.get(q["_id"]) or {}).get("cited") or [])
        if not docs:
            continue
        cited += 1
        products = {product_of(d) for d in docs}
        only += products == {q["product"]}
        other += bool(products - {q["product"]})
    n = max(len(questions), 1)
    return {"answers_citing": cited, "cite_only_subject": round(only / n, 4), "cite_other_product": round(other / n, 4)}


def rewords(item_text: str, intent: str) -> bool:
    """Whether a requirement holds every content word of the intent's positive part (its rewording)."""
    positive = {t.lower() for t in query_terms(parse_exclusions(intent)[1])}
    have = {t.lower() for t in query_terms(item_text)}
    return len(positive) > 1 and positive <= have


def list_metrics(
    intents: Sequence[Mapping[str, Any]],
    results: Mapping[str, Mapping[str, Any]],
    qrels: Mapping[str, Mapping[str, int]],
) -> tuple[dict, dict[str, dict[str, Any]]]:
    """The list intents' measures (see the module docstring), and per intent the same."""
    rows: dict[str, dict[str, Any]] = {}
    judged = {i["_id"]: qrels.get(i["_id"], {}) for i in intents}
    run = {q: {d: float(1000 - n) for n, d in enumerate((results.get(q) or {}).get("run") or [])} for q in judged}
    ndcg = per_query({q: r for q, r in judged.items() if r}, run)
    for intent in intents:
        qid = intent["_id"]
        res = results.get(qid) or {}
        ranked = res.get("ranked") or []
        top = [d["docid"] for d in ranked[:TOP_EXCLUDED]]
        excluded = sorted(set(top) & set(intent.get("excluded_docids") or []))
        means = [
            statistics.fmean(e["score"] for e in d["evidence"]) if d.get("evidence") else 0.0
            for d in ranked[:TOP_SPREAD]
        ]
        checklist = [i for i in res.get("checklist") or [] if i.get("kind") not in ("metadata", "exclusion")]
        rows[qid] = {
            "ndcg@20": ndcg.get(qid, {}).get("ndcg@20", 0.0),
            "excluded_in_top20": excluded,
            "spread": round(statistics.pstdev(means), 4) if len(means) > 1 else 0.0,
            "all_tie": len(means) > 1 and max(means) - min(means) < 1e-9,
            "requirements": [f"{i.get('kind')}: {i.get('text')}" for i in res.get("checklist") or []],
            "rewording": any(rewords(i.get("text", ""), intent["intent"]) for i in checklist),
        }
    n = max(len(rows), 1)
    summary = {
        "intents": len(rows),
        "ndcg@20": round(statistics.fmean(r["ndcg@20"] for r in rows.values()), 4) if rows else 0.0,
        "excluded_in_top20": sum(len(r["excluded_in_top20"]) for r in rows.values()),
        "intents_with_excluded": sum(bool(r["excluded_in_top20"]) for r in rows.values()),
        "top10_score_spread": round(statistics.fmean(r["spread"] for r in rows.values()), 4) if rows else 0.0,
        "top10_all_tie": round(sum(r["all_tie"] for r in rows.values()) / n, 4),
        "requirements_per_checklist": round(statistics.fmean(len(r["requirements"]) for r in rows.values()), 2)
        if rows
        else 0.0,
        "checklists_rewording": round(sum(r["rewording"] for r in rows.values()) / n, 4),
    }
    return summary, rows


def evaluate(folder: Path, split: str, *, budget: float = 120.0) -> dict[str, Any]:
    from stores.collection import Collection, ingest
    from stores.home import quarry_home

    home = quarry_home()
    if not (home / "collections" / COLLECTION).is_dir():
        ingest(folder, COLLECTION, home=home)
    col = Collection(COLLECTION, home=home)
    questions, intents = load("questions", split), load("intents", split)
    options = AgentOptions(config=JobConfig(max_seconds=budget))
    texts = {q["_id"]: q["question"] for q in questions} | {i["_id"]: i["intent"] for i in intents}
    answers = {q["_id"]: q["answer"] for q in questions}
    aliases = {q["_id"]: list(q.get("aliases") or []) for q in questions}
    _, stats = agent_runs(
        col,
        texts,
        options=options,
        answers=answers,
        aliases=aliases,
        on_done=lambda done, total: print(f"\r{done}/{total} jobs", end="", file=sys.stderr),
    )
    print(file=sys.stderr)
    results = stats["results"]
    lists, list_rows = list_metrics(intents, results, load_qrels())
    grades = stats["match_grades"]
    return {
        "split": split,
        "questions": len(questions),
        "answers": match_metrics(list(grades.values())) | subject_metrics(questions, results),
        "lists": lists,
        "per_question": {
            q["_id"]: {
                "question": q["question"],
                "reference": q["answer"],
                "exact_answer": grades[q["_id"]].exact_answer if q["_id"] in grades else "",
                "exact": grades[q["_id"]].exact if q["_id"] in grades else False,
                "confidence": grades[q["_id"]].confidence if q["_id"] in grades else None,
                "f1": grades[q["_id"]].f1 if q["_id"] in grades else 0.0,
                "features": ((results.get(q["_id"]) or {}).get("answer") or {}).get("confidence_features"),
                "cited": list((results.get(q["_id"]) or {}).get("cited") or []),
            }
            for q in questions
        },
        "per_intent": list_rows,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="the corpus folder build_corpus wrote")
    parser.add_argument("--split", choices=("dev", "test"), default="dev")
    parser.add_argument("--out", type=Path, help="write the figures and per-query rows as JSON here")
    parser.add_argument("--budget", type=float, default=120.0, help="seconds per job")
    args = parser.parse_args(argv)
    report = evaluate(args.folder, args.split, budget=args.budget)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(args.out, json.dumps(report, indent=1, default=str))
    print(json.dumps({"split": report["split"], "answers": report["answers"], "lists": report["lists"]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
