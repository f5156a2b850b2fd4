"""Rich rendering of job results and progress for the terminal.

Text that comes from documents, models or users goes through `quarry.app.terminal.safe`, so a
citation like `[ance-2021]`, a document's own brackets or `[/z]` are shown as written (never a
MarkupError), and escape sequences are shown as `\\x1b…` instead of being obeyed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nodes.evidence.answer_confidence import stated_confidence
from nodes.job.steering_notes import describe
from nodes.policy.registry import DEFAULT_POLICY, display_spec
from quarry.app.ended import ENDED_WORDS, ended_record
from quarry.app.terminal import out, print_json, safe
from quarry.cli.screens import cut_words, render_ranked
from stores.job_status import JobStatus

_t = safe  # every field of a job record (intent, docids, titles, quotes, model output, reasons) is untrusted


_CACHE = (("cached_input_tokens", "cached"), ("cache_write_input_tokens", "written to cache"))


def usage_line(usage: dict[str, Any] | None) -> str:
    """ "3 model calls · 1,200 tokens in (800 cached) · 90 out · $0.0021" ('' without calls)."""
    if not usage or not usage.get("calls"):
        return ""
    cache = [f"{usage[k]:,} {what}" for k, what in _CACHE if usage.get(k)]
    cached = f" ({', '.join(cache)})" if cache else ""
    reasoning = f", {usage['reasoning_tokens']:,} reasoning" if usage.get("reasoning_tokens") else ""
    unpriced = f" (no price for {', '.join(usage['unpriced'])})" if usage.get("unpriced") else ""
    retries = usage.get("retries") or 0
    waited = f" · {retries} rate-limit {'retry' if retries == 1 else 'retries'}" if retries else ""
    return (
        f"{usage['calls']} model calls · {usage.get('input_tokens', 0):,} tokens in{cached} · "
        f"{usage.get('output_tokens', 0):,} out{reasoning} · ${usage.get('dollars', 0.0):.4f}{unpriced}{waited}"
    )


def render_answer(result: dict[str, Any]) -> None:
    answer = result.get("answer")
    if not answer:
        return
    if isinstance(answer, str):  # results stored before answers had fields
        answer = {"explanation": answer}
    out.print("\n[bold]Explanation[/]", highlight=False)
    out.print(_t(answer.get("explanation", "")), highlight=False)
    if answer.get("exact_answer"):
        out.print(f"[bold]Exact Answer[/]: {_t(answer['exact_answer'])}", highlight=False)
    stated = _t(stated_confidence(answer))
    out.print(
        f"[bold]Confidence[/]: {stated}"
        + ("  [yellow](the evidence is insufficient)[/]" if answer.get("insufficient_evidence") else ""),
        highlight=False,
    )
    refs = result.get("references", [])
    if refs:
        out.print("[bold]References[/]", highlight=False)
        for ref in refs:
            out.print(
                _t(
                    f"  [{ref['docid']}] {ref.get('title', '')} (lines {ref['lines'][0]}–{ref['lines'][1]}): "
                    f"\u201c{cut_words(ref.get('quote', ''), 160)}\u201d"
                ),
                highlight=False,
            )
    cites = result.get("citations") or {}
    if cites.get("checked"):
        removed = cites.get("removed", [])
        out.print(
            _t(
                f"citations: {cites['checked']} checked, {len(removed)} removed "
                f"(hallucination rate {cites.get('hallucination_rate', 0):.0%})"
            ),
            highlight=False,
        )
        if cites.get("sentences"):  # a 0% rate says the quotes exist, not that they answer
            on_question = cites.get("on_question_sentences")
            out.print(
                _t(
                    f"citations checked: {cites.get('supported_sentences', 0)} of {cites['sentences']} cited "
                    f"sentences found in their documents"
                    + (
                        f"; {on_question} of {cites['sentences']} share the question's content words"
                        if on_question is not None
                        else ""
                    )
                ),
                highlight=False,
            )
        for r in removed[:5]:
            out.print(_t(f"  removed [{r['docid']}]: {r['reason']}"), highlight=False)
    out.print("")


S_HELP = "S = (mean requirement score + p) / 6, 0–1"


def score_help(result: dict[str, Any]) -> str:
    """What the `rank` column means for this result: it depends on the order the job used."""
    ranker = str(result.get("ranker") or "")
    if ranker.startswith("verifier"):
        how = (
            f"the learned verifier {ranker}: weighted reciprocal ranks of the document in the job's rankings "
            "(its searches, by S, by its best evidence) — docs/eval/ranker.md"
        )
    else:
        how = display_spec(result).order_help
    return f"rank: the score the list is ordered by ({how}); {S_HELP}"


def render_error(error: Any) -> None:
    """A failed job's error: "error (CODE): message" and its hint; an error stored as a string (a
    result from before errors had codes) as it was."""
    if not error:
        return
    if isinstance(error, dict):
        code = f" ({_t(error['code'])})" if error.get("code") else ""
        out.print(f"[red]error[/]{code}: {_t(error.get('message') or '')}", highlight=False)
        if error.get("hint"):
            out.print(f"  hint: {_t(error['hint'])}", highlight=False)
        return
    out.print(f"[red]error[/]: {_t(error)}", highlight=False)


def plan_line(checklist: Sequence[Mapping[str, Any]]) -> str:
    """The plan in one line, each item with its kind ("[topic] WAL checkpoints · [product]
    PostgreSQL · [exclusion] not SQLite"): what the job checks documents against, and so what a
    score beside a quote is a score of."""
    return " · ".join(f"[{c.get('kind') or '?'}] {c.get('text', '')}" for c in checklist if c.get("text"))


def render_removed(removed: dict[str, Any], *, full: bool) -> None:
    """How many found documents the list leaves out and why (`nodes.job.results.removed_report`);
    with `full`, which ones."""
    if not removed:
        return
    why = "; ".join(f"{reason}: {n}" for reason, n in removed.get("why", {}).items())
    more = "" if full else " (--full: which)"
    out.print(f"removed: {_t(removed.get('count', 0))} document(s) — {_t(why)}{more}", highlight=False)
    if full:
        for doc in removed.get("documents", []):
            out.print(f"  - {_t(doc['docid'])} {_t(cut_words(doc.get('title', ''), 60))} — {_t(doc['reason'])}")


# A final result's status as the command line colours it (any other: white).
STATUS_COLOUR: dict[str, str] = {
    JobStatus.COMPLETED: "green",
    JobStatus.BUDGET_EXHAUSTED: "yellow",
    JobStatus.STOPPED: "yellow",
    JobStatus.FAILED: "red",
}


def render_result(result: dict[str, Any], *, web_ui: str = "", trace_file: str = "", full: bool = False) -> None:
    status = str(result.get("status", "?"))
    colour = STATUS_COLOUR.get(status, "white")
    models = result.get("models") or {}
    policy = str(result.get("policy", DEFAULT_POLICY)) + (f" ({models['model']})" if models.get("model") else "")
    out.print(
        f"[bold]{_t(result.get('job_id'))}[/] · [{colour}]{_t(status)}[/] · {_t(result.get('collection'))} · "
        f"{_t(policy)} · rounds {_t(result.get('rounds', result.get('stats', {}).get('rounds', '?')))} · "
        f"stop: {_t(result.get('stop_reason') or '-')}",
        highlight=False,
    )
    out.print(f"intent: {_t(result.get('intent'))}", highlight=False)
    if line := plan_line(result.get("checklist") or []):
        out.print(f"plan: {_t(line)}", highlight=False)
    for note in result.get("steering") or []:  # each steer and where it took effect, a cut-off one too
        out.print(f"steer: {_t(describe(note))}", highlight=False)
    render_error(result.get("error"))
    for fb in result.get("fallbacks") or []:
        out.print(
            f"[yellow]fallback[/]: {_t(fb['step'])} used the heuristic — {_t(fb['reason'][:200])}", highlight=False
        )
    render_answer(result)
    ranked = result.get("ranked", [])
    render_ranked(result, full=full)  # compact by default; --full: the requirement matrix and every quote
    if ranked:
        out.print(f"[dim]{_t(score_help(result))}[/]", highlight=False)
    render_removed(result.get("removed") or {}, full=full)
    traj = result.get("trajectory", {})
    if traj:
        out.print(
            f"trajectory: surfaced {_t(traj.get('surfaced', 0))} · previewed {len(traj.get('previewed', []))} · "
            f"opened {len(traj.get('opened', []))} · cited {len(traj.get('cited', []))}"
            + (f" · {len(traj['steps'])} tool calls" if traj.get("steps") else "")
        )
    if line := usage_line(result.get("usage")):
        out.print(f"usage: {_t(line)}", highlight=False)
    if web_ui:
        out.print(f"Web UI: {_t(web_ui)}", highlight=False)
    if trace_file:
        out.print(f"trace:  {_t(trace_file)}", highlight=False)


def render_progress(p: dict[str, Any]) -> None:
    b = p.get("budget", {})
    steps = f" · step {p['steps']}" if p.get("steps") else ""
    out.print(
        _t(
            f"{p.get('job_id')} · {p.get('status')} · {p.get('policy', DEFAULT_POLICY)} · round {p.get('round')}{steps} · "
            f"node {p.get('node')} · {p.get('candidates')} candidates · {p.get('tool_calls')} tool calls · "
            f"budget {b.get('used')}s used / {b.get('left')}s left" + (" · submit-now" if b.get("submit_now") else "")
        ),
        highlight=False,
    )
    if p.get("step_detail"):
        out.print(_t(f"  now: {p['step_detail']}"), highlight=False)
    if line := usage_line(p.get("usage")):
        limit = ""
        if b.get("model_budget"):
            limit = f" ({b['model_budget_used']:.0%} of the {b['model_budget']} budget)"
        out.print(_t(f"  usage: {line}{limit}"), highlight=False)
    for fb in p.get("fallbacks") or []:
        out.print(_t(f"  fallback: {fb['step']} — {fb['reason'][:120]}"), highlight=False)
    for i, t in enumerate(p.get("top", []), start=1):
        out.print(_t(f"  {i}. {t['docid']}  {t['score']:.3f}  {t.get('title', '')}"), highlight=False)


def render_ended(row: dict[str, Any], json_out: bool = False) -> None:
    """Print how a job without a result ended, its intent, and the command that runs it again."""
    if json_out:
        print_json(ended_record(row))
        return
    job_id, status = row["job_id"], row["status"]
    how = ENDED_WORDS.get(status, f"ended ({status})")
    reason = f": {row['error']}" if row.get("error") else ""
    out.print(
        safe(f"{job_id} {how}{reason} — at round {row.get('round', '?')}, before it built a result"), highlight=False
    )
    out.print(safe(f"intent: {row.get('intent', '')}\ncollection: {row.get('collection', '')}"), highlight=False)
    out.print(
        safe(f"its last checkpoint: quarry job show {job_id}\nrun it again: quarry job rerun {job_id}"), highlight=False
    )
