"""`eval` and `tune`: systems measured on a collection's judged queries (pytrec_eval, graded
answers, a Markdown report), and the BM25 k1 × b grid search."""

from __future__ import annotations

import shlex
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from nodes.job.config import JOB_BOUNDS, JobConfig
from quarry.app.collections import check_bm25, open_collection
from quarry.app.options import eval_policy, job_config
from quarry.app.terminal import console, out, print_json, progress_bar, safe
from quarry.cli.console import fail
from stores.errors import QuarryError
from workflows.job_input import check_budget

if TYPE_CHECKING:
    from evals.agent_system import AgentOptions
    from evals.runner import EvalResult
    from stores.profiles import SelfProfile
    from tuning.grid import TuneResult
    from tuning.self_tuning import SelfTuneResult

DEFAULTS = JobConfig()  # the options' defaults are the job's own (nodes.job.config), never copies

commands = typer.Typer()


# Long: 18 options, each declared where typer reads it; the body's steps are the helpers below.
@commands.command("eval")
def eval_cmd(
    name: str,
    system: Annotated[
        list[str] | None,
        typer.Option(
            help="bm25, bm25-tuned, bm25-self, dense, hybrid, hybrid-self, agent (heuristic jobs on a local dev "
            "server), llm or react (model jobs; need --model); repeat or comma-separate for several, e.g. "
            "bm25,hybrid,agent. *-self use the collection's self-tuned profile (quarry tune NAME --self; tuned "
            "on pseudo-queries when missing)"
        ),
    ] = None,
    split: Annotated[str | None, typer.Option(help="qrels split (default: test, else the only one)")] = None,
    queries: Annotated[int | None, typer.Option(min=1, help="Only the first N judged queries")] = None,
    k1: float | None = None,
    b: float | None = None,
    run_file: Annotated[Path | None, typer.Option("--run", help="Where to write the TREC run (one system)")] = None,
    report: Annotated[Path | None, typer.Option("--report", help="Write DIR/report.md with a table and plots")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Metrics as JSON on the last line")] = False,
    model: Annotated[str | None, typer.Option(help="PROVIDER:NAME for --system llm/react")] = None,
    judge_model: Annotated[str | None, typer.Option(help="PROVIDER:NAME of the librarians (--system llm)")] = None,
    judge: Annotated[
        str | None, typer.Option(help="PROVIDER:NAME that grades answers against answers.jsonl (default: --model)")
    ] = None,
    budget: Annotated[
        float, typer.Option(min=JOB_BOUNDS.min_seconds, metavar="SECONDS", help="Wall-clock budget per job in seconds")
    ] = DEFAULTS.max_seconds,
    max_tokens: Annotated[int | None, typer.Option(min=1, help="Token budget per job")] = None,
    max_dollars: Annotated[float | None, typer.Option(min=0.0, help="Dollar budget per job")] = None,
    max_output_tokens: Annotated[
        int, typer.Option(min=JOB_BOUNDS.min_output_tokens, help="Longest reply per model call")
    ] = DEFAULTS.models.max_output_tokens,
    prices: Annotated[Path | None, typer.Option(help="JSON price table extending the built-in one")] = None,
    metric: Annotated[str, typer.Option(help="The report's main metric (significance, per-query plot)")] = "ndcg@20",
) -> None:
    """Evaluate systems on the collection's judged queries (pytrec_eval); model systems' answers
    are graded against answers.jsonl when the collection has it."""
    # lazy: the evaluation stack (pytrec_eval, workflows) costs ~0.2 s of start-up
    from evals.runner import evaluate, parse_systems
    from tuning.metrics import BASE_METRICS

    try:
        if metric not in BASE_METRICS:
            raise QuarryError("bad_option", f"unknown metric {metric!r}", f"use one of: {', '.join(BASE_METRICS)}")
        budget = check_budget(budget)  # typer's min=1 lets inf and 1e400 through
        check_bm25(k1, b)
        systems = parse_systems(system)
        agent = _agent_options(
            systems,
            model,
            judge_model,
            judge,
            budget=budget,
            max_tokens=max_tokens,
            max_dollars=max_dollars,
            prices=prices,
            max_output_tokens=max_output_tokens,
        )
        if run_file is not None and len(systems) > 1:
            raise QuarryError(
                "bad_option",
                "--run names one run file but several systems were given",
                "drop --run (runs go to the collection's runs folder) or evaluate one system",
            )
        col = open_collection(name)
        results = []
        with progress_bar(console.is_terminal) as progress:
            for sys_name in systems:
                results.append(
                    evaluate(
                        col,
                        sys_name,
                        split=split,
                        k1=k1,
                        b=b,
                        limit_queries=queries,
                        run_file=run_file,
                        agent=agent,
                        on_query=partial(progress, sys_name),
                    )
                )
        report_path = None
        if report is not None:
            from evals.report import write_report  # lazy: the report pulls in the plots and significance tests

            given = {
                "--split": split,
                "--queries": queries,
                "--k1": k1,
                "--b": b,
                "--model": model,
                "--judge-model": judge_model,
                "--judge": judge,
                "--metric": metric if metric != "ndcg@20" else None,
            }
            command = _eval_command(name, systems, given, report)
            report_path = write_report(report, col, results, metric=metric, command=command)
    except QuarryError as err:
        fail(err)
    summaries = {r.system: r.summary() for r in results}
    if json_out:
        obj = next(iter(summaries.values())) if len(summaries) == 1 else {"systems": summaries}
        print_json(obj | ({"report": str(report_path)} if report_path else {}))
        return
    out.print(_eval_table(name, systems, results[0], summaries))
    if report_path:
        out.print(f"report: {safe(report_path)}", highlight=False)


def _agent_options(
    systems: list[str],
    model: str | None,
    judge_model: str | None,
    judge: str | None,
    *,
    budget: float,
    max_tokens: int | None,
    max_dollars: float | None,
    prices: Path | None,
    max_output_tokens: int,
) -> AgentOptions:
    """The agent systems' job options: a model job's configuration (its endpoints probed now) when
    a model system or a model is named, else a heuristic job's budget."""
    from evals.agent_system import AgentOptions

    policy, model_systems, judged = eval_policy(systems)
    config = (
        job_config(
            policy,
            model,
            judge_model if judged else None,
            max_seconds=budget,
            max_tokens=max_tokens,
            max_dollars=max_dollars,
            prices=prices,
            max_output_tokens=max_output_tokens,
            extra_models=(judge,),
        )
        if (model_systems or model or judge_model)
        else None
    )
    return AgentOptions(config=config, grader=judge) if config else AgentOptions(config=JobConfig(max_seconds=budget))


def _eval_command(name: str, systems: list[str], given: dict[str, str | int | float | None], report: Path) -> str:
    """The `quarry eval` command line that makes the report again, for the report to show."""
    return " ".join(
        [
            "quarry eval",
            shlex.quote(name),
            "--system",
            ",".join(systems),
            *(f"{k} {shlex.quote(str(v))}" for k, v in given.items() if v is not None),
            "--report",
            shlex.quote(str(report)),
        ]
    )


def _eval_table(name: str, systems: list[str], first: EvalResult, summaries: dict[str, dict]) -> Table:
    """One column of metrics per system."""
    table = Table(title=safe(f"{name} · {', '.join(systems)} · {first.split} · {first.queries} queries"))
    table.add_column("metric")
    for sys_name in summaries:
        table.add_column(safe(sys_name), justify="right")
    keys = [
        k for k in dict.fromkeys(k for s in summaries.values() for k in s) if k not in ("system", "split", "queries")
    ]
    for key in keys:
        cells = [summaries[s].get(key) for s in summaries]
        table.add_row(
            safe(key), *("–" if v is None else f"{v:.4f}" if isinstance(v, float) else safe(v) for v in cells)
        )
    return table


@commands.command()
def tune(
    name: str,
    split: Annotated[str | None, typer.Option(help="qrels split to tune on (default: test, else the only one)")] = None,
    apply: Annotated[
        bool,
        typer.Option(
            "--apply", help="Store the best setting with the index (every system that uses the index then uses it)"
        ),
    ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Result as JSON on the last line")] = False,
    self_tuned: Annotated[
        bool,
        typer.Option(
            "--self",
            help="Tune on pseudo-queries made from the documents (titles, sentences, citations), never on qrels: "
            "BM25 k1/b and the semantic channel's weight, kept as the collection's self-tuned profile",
        ),
    ] = False,
    queries: Annotated[
        int | None, typer.Option(min=10, max=5000, help="--self: pseudo-queries to make (default: a few hundred)")
    ] = None,
    seed: Annotated[int | None, typer.Option(help="--self: seed of the pseudo-query sample (fixed by default)")] = None,
    verifier: Annotated[
        bool,
        typer.Option(
            help="--self: also fit the collection's own verifier on the agent's candidates for the pseudo-queries "
            "(runs one job in-process per query it uses)"
        ),
    ] = True,
) -> None:
    """Grid-search BM25 k1/b by nDCG@20 and show the best (default rule without qrels); --apply stores it.
    With --self, tune on the collection's own documents instead of its judgements."""
    from tuning.grid import DefaultParams  # lazy: the grid search costs ~0.6 s of start-up
    from tuning.grid import tune as run_tune

    if self_tuned:
        if split is not None:
            fail(QuarryError("bad_option", "--self never reads qrels, so --split does not apply", "drop --split"))
        return _tune_self(name, apply=apply, json_out=json_out, queries=queries, seed=seed, verifier=verifier)
    try:
        col = open_collection(name)
        with progress_bar(console.is_terminal) as progress:
            result = run_tune(col, split, apply=apply, progress=progress)
    except QuarryError as err:
        fail(err)
    stored = "stored with the index" if apply else "not stored: add --apply to use it"
    if json_out:
        print_json(result.summary() | {"applied": apply})
        return
    if isinstance(result, DefaultParams):
        out.print(
            f"[bold]{safe(name)}[/] has no relevance judgements, so nothing to tune on: {stored}, the [bold]default[/] "
            f"BM25 k1={result.k1} b={result.b} for a mean document length of {result.avg_doc_tokens:.0f} words "
            f"(was k1={result.baseline[0]} b={result.baseline[1]})"
        )
        return
    _print_tuned(name, result, stored)


def _print_tuned(name: str, result: TuneResult, stored: str) -> None:
    best, base = result.best.brief(), result.baseline.brief()
    out.print(
        f"tuned [bold]{safe(name)}[/] on {safe(result.split)} ({result.queries} queries, "
        f"{len(result.cells)} settings, {result.seconds:.0f} s)"
    )
    out.print(
        f"best      k1={best['k1']:g} b={best['b']:g}  nDCG@20 {best['ndcg@20']:.4f}  MAP {best['map']:.4f}  ({stored})"
    )
    out.print(
        f"baseline  k1={base['k1']:g} b={base['b']:g}  nDCG@20 {base['ndcg@20']:.4f}  MAP {base['map']:.4f}"
        "  (the setting stored before)"
    )
    out.print(f"heatmap   {safe(result.heatmap)}", highlight=False)


def _tune_self(
    name: str, *, apply: bool, json_out: bool, queries: int | None, seed: int | None, verifier: bool
) -> None:
    from tuning.pseudo_queries import DEFAULT_QUERIES, DEFAULT_SEED  # lazy, as above (the tuner's own defaults)
    from tuning.self_tuning import self_tune

    try:
        col = open_collection(name)
        with progress_bar(console.is_terminal) as progress:
            result = self_tune(
                col,
                apply=apply,
                verifier=verifier,
                progress=progress,
                queries=DEFAULT_QUERIES if queries is None else queries,
                seed=DEFAULT_SEED if seed is None else seed,
            )
    except QuarryError as err:
        fail(err)
    if json_out:
        print_json(
            result.profile.model_dump(exclude={"sample"})
            | {"profile_file": str(result.profile_file), "candidate": result.in_use is not None}
            | ({"in_use": result.in_use.brief()} if result.in_use else {})
        )
        return
    _print_self_tuned(name, result, apply)


def _print_self_tuned(name: str, result: SelfTuneResult, apply: bool) -> None:
    p, in_use = result.profile, result.in_use
    if apply:
        stored = "applied: jobs and tools use it"
    elif in_use is not None:
        stored = (
            f"a candidate only: the applied profile ({safe(in_use.brief())}) stays in use; add --apply to use this one"
        )
    else:
        stored = "not applied: add --apply for jobs to use it"
    out.print(
        f"self-tuned [bold]{safe(name)}[/] on {p.queries} pseudo-queries (seed {p.seed}, no qrels read, "
        f"{p.seconds:.0f} s): {safe(p.brief())} ({stored})"
    )
    if p.kept_defaults:
        out.print(
            "chosen on  nothing yet: cloze queries need documents of 40 words or more, and title, sentence "
            "and citation queries favour exact word matches by construction (what they chose lost on every "
            f"judged collection measured, docs/eval/self-tuning/README.md); judged queries choose, from "
            f"{p.min_judged} on — mark results (quarry job mark JOB DOCID relevant|not) or run jobs with a "
            "model policy, then tune again"
        )
    else:
        what = " (k1/b only)" if p.chosen_on == ("cloze",) else ""
        out.print(f"chosen on  {', '.join(p.chosen_on or p.kinds)} pseudo-queries{what}")
        out.print(f"pseudo-query nDCG@20  {p.pseudo_default:.4f} at the stored setting → {p.pseudo_chosen:.4f}")
    out.print(_kinds_table(p))
    if p.verifier_pseudo:
        v = p.verifier_pseudo
        kept = "kept" if p.verifier else "not kept: the heuristic order was as good"
        out.print(
            f"verifier  fitted on the agent's candidates for {v['queries']:.0f} pseudo-queries: nDCG@20 "
            f"{v['heuristic']:.4f} heuristic order → {v['verifier']:.4f} ({kept})"
        )
    out.print(f"profile   {safe(result.profile_file)}", highlight=False)
    out.print(f"queries   {safe(result.queries_file)}", highlight=False)


def _kinds_table(p: SelfProfile) -> Table:
    table = Table(title="what each kind of pseudo-query alone would choose")
    for column in ("kind", "queries", "k1", "b", "semantic ×", "nDCG@20 stored → own"):
        table.add_column(column, justify="left" if column == "kind" else "right")
    for kind, c in p.kinds.items():
        weight = "–" if c.semantic_weight is None else f"{c.semantic_weight:g}"
        table.add_row(
            kind, str(c.queries), f"{c.k1:g}", f"{c.b:g}", weight, f"{c.ndcg_default:.4f} → {c.ndcg_chosen:.4f}"
        )
    return table
