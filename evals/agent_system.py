"""The agent systems for evaluation: real SearchJob workflows on a local dev server + worker.

Evaluation goes through the same workflow code path as users; jobs run several at a time. The
systems are `agent` (the heuristic policy), `llm` and `react` (a model through LangChain, from
the process environment like a user's worker). A job's run is its own deep run (its ranked pool,
then the rest of its full-depth rankings fused the same way), topped up from the user-words BM25
ranking only when shorter than the depth, so depth metrics (Recall@1000) compare like with like.

Queries that have a reference answer (`answers.jsonl`) run in answer mode when a grader model is
available (`--judge`, else `--model`), and the grader scores each answer (evals.answer_judge).

Trajectory recall tiers (Pi-Serini): of a query's relevant documents, the share the job
surfaced (in any cached ranking or channel), previewed, opened and cited — where along the way
relevant documents were lost.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from collections.abc import Callable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from evals.answer_judge import Grade, answer_metrics, grade, response_text
from evals.answer_match import MatchGrade, grade_answer, match_metrics
from nodes.job.config import JobConfig
from nodes.job.usage import Usage
from nodes.llm.models import ModelFactory, make_chat_model
from nodes.policy.registry import DEFAULT_POLICY, model_policies
from nodes.tools.bm25_setting import FixedBM25
from stores.collection import Collection
from stores.job_status import JobStatus
from stores.jobs import JobStore

CONCURRENCY = 4
TIERS = ("surfaced", "previewed", "opened", "cited")
# The agent systems: `agent` is the default policy, and each model policy is a system of its name.
POLICY_OF = {"agent": DEFAULT_POLICY, "agent-self": DEFAULT_POLICY} | {name: name for name in model_policies()}


@dataclass
class AgentOptions:
    """How the agent systems run: the job configuration (models, caps, the time, token and dollar
    budgets per job), the grader of answers, and the model factory (default: LangChain)."""

    config: JobConfig = field(default_factory=JobConfig)
    grader: str | None = None
    models: ModelFactory | None = None

    def grader_spec(self) -> str | None:
        return self.grader or self.config.models.model


def trajectory_tiers(
    qrels: Mapping[str, Mapping[str, int]], trajectories: Mapping[str, Mapping[str, list[str]]]
) -> dict[str, dict[str, float]]:
    """Per query with relevant documents and a trajectory: recall of the relevant documents in
    each tier (`{qid: {"surfaced": r, "previewed": r, "opened": r, "cited": r}}`)."""
    out: dict[str, dict[str, float]] = {}
    for qid, traj in trajectories.items():
        relevant = {d for d, grade_ in qrels.get(qid, {}).items() if grade_ > 0}
        if relevant:
            out[qid] = {t: len(relevant & set(traj.get(t, ()))) / len(relevant) for t in TIERS}
    return out


@contextmanager
def _stdout_to_stderr():
    """Point file descriptor 1 at stderr while a child process is spawned (it inherits it)."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


async def _run_jobs(
    col: Collection,
    texts: dict[str, str],
    modes: dict[str, str],
    home: Path,
    policy: str,
    options: AgentOptions,
    on_done: Callable[[int, int], None] | None,
) -> dict[str, dict]:
    from temporalio.testing import WorkflowEnvironment

    from workflows.client import submit
    from workflows.job_failure import job_result
    from workflows.processes.dev_server import temporal_binary
    from workflows.shared import JobInput
    from workflows.worker import build_worker

    with _stdout_to_stderr():  # the dev server prints a banner; `--json` output must stay pure JSON
        env = await WorkflowEnvironment.start_local(
            dev_server_existing_path=str(temporal_binary()), dev_server_extra_args=["--log-level", "error"]
        )
    results: dict[str, dict] = {}
    async with env:
        queue = f"quarry-eval-{uuid.uuid4().hex[:8]}"
        async with build_worker(env.client, home=home, queue=queue, models=options.models):
            gate = asyncio.Semaphore(CONCURRENCY)

            async def one(qid: str) -> None:
                async with gate:
                    inp = JobInput(
                        job_id=f"eval-{col.name}-{qid}-{uuid.uuid4().hex[:6]}",
                        collection=col.name,
                        intent=texts[qid],
                        mode=modes[qid],
                        policy=policy,
                        config=options.config,
                    )
                    handle = await submit(env.client, inp, queue=queue)
                    # A failed job's workflow ends Failed: its result (status "failed", its error's code) still counts.
                    results[qid] = {"job_id": inp.job_id, **(await job_result(handle))}
                    if on_done:
                        on_done(len(results), len(texts))

            await asyncio.gather(*(one(q) for q in texts))
    return results


def held_out_verifier(collection: str, options: AgentOptions, own_verifier: bool = False) -> AgentOptions:
    """Options that never score a collection with a verifier trained on its own judgements: the
    shipped verifier is switched off (heuristic order) for the collections it was trained on,
    which is said on stderr; its held-out figures are in docs/eval/ranker.md. A job whose
    self-tuned profile fitted its own verifier (`own_verifier`, on pseudo-queries, never the
    qrels) keeps it."""
    from stores.verifier_file import load_verifier_file

    shipped = load_verifier_file()
    if own_verifier or not (options.config.verifier and shipped and collection in shipped.get("trained_on", [])):
        return options
    print(
        f"note: the shipped verifier {shipped['name']} was trained on {collection}'s judgements; the agent is "
        "evaluated here with the heuristic order (held-out verifier figures: docs/eval/ranker.md)",
        file=sys.stderr,
    )
    return replace(options, config=replace(options.config, verifier=False))


def agent_runs(
    col: Collection,
    texts: dict[str, str],
    *,
    system: str = "agent",
    options: AgentOptions | None = None,
    answers: Mapping[str, str] | None = None,
    depth: int = JobConfig.run_depth,
    on_done: Callable[[int, int], None] | None = None,
    aliases: Mapping[str, Sequence[str]] | None = None,
) -> tuple[dict[str, list[tuple[str, float]]], dict]:
    """Run one job per query; return runs (docid, pseudo-score) and job statistics (each query's
    trajectory, usage, grades of answers, each job's result under "results").

    A query with a reference answer (`answers`, with its `aliases`) runs in answer mode: its Exact
    Answer is graded without a model (evals.answer_match), and by the grader model too when there is one."""
    options = options or AgentOptions()
    home = col.paths.root.parent.parent
    profile = None
    if options.config.profile == "self":
        from tuning.self_tuning import self_profile

        profile = self_profile(col, tune_if_missing=False)
    options = held_out_verifier(col.name, options, own_verifier=bool(profile and profile.verifier))
    grader = options.grader_spec()
    answers = {q: a for q, a in (answers or {}).items() if q in texts}
    modes = {q: "answer" if q in answers else "list" for q in texts}
    results = asyncio.run(_run_jobs(col, texts, modes, home, POLICY_OF[system], options, on_done))
    jobs = JobStore(home / "jobs.sqlite")
    # The deep run goes on past the job's list with BM25 at the setting the job searched with.
    lexical = FixedBM25(col.lucene, profile.k1, profile.b) if profile else col.lucene
    runs, trajectories, counts, usage = _tally(col, results, texts, jobs, lexical, depth)
    unknown, outputs, tool_calls = counts["unknown"], counts["outputs"], counts["tool_calls"]
    checked, removed, fallbacks = counts["checked"], counts["removed"], counts["fallbacks"]
    grades, grader_usage = _grade(results, texts, answers, grader, options)
    matched = [
        grade_answer(q, results[q].get("answer"), [answers[q], *(aliases or {}).get(q, ())])
        for q in sorted(answers, key=lambda q: (len(q), q))
        if q in results
    ]
    n = max(len(results), 1)
    stats = {
        "hallucination_rate": unknown / outputs if outputs else 0.0,
        "tool_calls_per_query": round(tool_calls / n, 2),
        "statuses": sorted({r.get("status", "?") for r in results.values()}),
        "trajectories": trajectories,
        "tokens_per_query": round(usage.total_tokens / n, 1),
        "dollars_per_query": round(usage.dollars / n, 6),
        "fallbacks_per_query": round(fallbacks / n, 3),
        "citation_hallucination_rate": round(removed / checked, 4) if checked else 0.0,
        "grades": {g.qid: g for g in grades},
        "match_grades": {g.qid: g for g in matched},
        "results": results,
    }
    stats |= match_metrics(matched)
    if grades:
        stats |= answer_metrics(grades) | {"grader": grader, "grader_tokens": grader_usage.total_tokens}
    return runs, stats


def _tally(
    col: Collection, results: dict[str, dict], texts: dict[str, str], jobs: JobStore, lexical: Any, depth: int
) -> tuple[dict[str, list[tuple[str, float]]], dict[str, dict[str, list[str]]], dict[str, int], Usage]:
    """Each query's run (the job's list, then BM25 past it) and trajectory, and the counts and
    usage summed over the jobs; a failed job is said on stderr."""
    runs: dict[str, list[tuple[str, float]]] = {}
    trajectories: dict[str, dict[str, list[str]]] = {}
    unknown = outputs = tool_calls = checked = removed = fallbacks = 0
    usage = Usage()
    for qid, res in results.items():
        if res.get("status") == JobStatus.FAILED:  # counted with what it found; said, with its code, on stderr
            print(
                f"note: query {qid}: job {res['job_id']} failed: error {_error_text(res.get('error'))}", file=sys.stderr
            )
        traj = res.get("trajectory", {})
        trajectories[qid] = {
            "surfaced": sorted(jobs.surfaced(res["job_id"])),
            **{t: list(traj.get(t, [])) for t in TIERS[1:]},
        }
        order = list(res.get("run", []))
        seen = set(order)
        order += [h.docid for h in lexical.search(texts[qid], depth) if h.docid not in seen]
        order = order[:depth]
        outputs += len(order)
        unknown += sum(1 for d in order if not col.corpus.has(d))
        tool_calls += res.get("stats", {}).get("tool_calls", 0)
        usage = usage.add(Usage.from_dict(res.get("usage")))
        cites = res.get("citations") or {}
        checked += cites.get("checked", 0)
        removed += len(cites.get("removed", []))
        fallbacks += len(res.get("fallbacks") or [])
        runs[qid] = [(d, float(depth - i)) for i, d in enumerate(order)]
    counts = {
        "unknown": unknown,
        "outputs": outputs,
        "tool_calls": tool_calls,
        "checked": checked,
        "removed": removed,
        "fallbacks": fallbacks,
    }
    return runs, trajectories, counts, usage


def _error_text(error: object) -> str:
    """A failed job's error as the command line shows it: "(CODE): message" and its hint."""
    if not isinstance(error, dict):
        return f": {error}"
    hint = f" (hint: {error['hint']})" if error.get("hint") else ""
    return f"({error.get('code')}): {error.get('message', '')}{hint}"


def _grade(
    results: Mapping[str, dict],
    texts: Mapping[str, str],
    answers: Mapping[str, str],
    grader: str | None,
    options: AgentOptions,
) -> tuple[list[Grade], Usage]:
    if not answers or not grader:
        return [], Usage()
    model = (options.models or make_chat_model)(grader, options.config.models)
    grades, usage = [], Usage()
    for qid in sorted(answers, key=lambda q: (len(q), q)):
        if qid in results:
            g, u = grade(model, grader, qid, texts[qid], response_text(results[qid]), answers[qid], options.config)
            grades.append(g)
            usage = usage.add(u)
    return grades, usage


def graded_rows(
    grades: Mapping[str, Any], matched: Mapping[str, MatchGrade] | None = None
) -> dict[str, dict[str, float]]:
    """Per-query columns from the grades (the judge's correct 0/1 and the confidence it read) and
    the model-free grades (exact match 0/1, token F1, answer-text recall 0/1)."""
    rows = {q: {"correct": float(g.correct), "confidence": float(g.confidence)} for q, g in grades.items()}
    for q, m in (matched or {}).items():
        rows.setdefault(q, {}).update(
            {"exact_match": float(m.exact), "answer_f1": m.f1, "answer_recall": float(m.recall)}
        )
    return rows


__all__ = ["TIERS", "AgentOptions", "agent_runs", "graded_rows", "trajectory_tiers"]
