"""Everything one job page shows, read through the service: the job's record, its result or —
while it runs — where it is, and its event log, turned into the values the templates render
(quarry.http.pages_view). A running job's page re-reads this every poll, so it is cheap: one job
store row, the event log and, while the job runs, one `progress` query to Temporal.

The service's typed result (quarry.app.models.JobResult) keeps what a client acts on; the page
also shows what only the stored record holds (the answer's references and citation check, usage,
statistics, the checklist of a job still running, its trace id), read from the job store row and
redacted as the service redacts its own answers.
"""

from __future__ import annotations

import json
from typing import Any

from quarry.app.service import QuarryService
from quarry.http import pages_view as view
from stores.errors import QuarryError
from stores.job_status import WITH_ERROR, JobStatus
from stores.redact import redact

EVENT_PAGES = 50  # event pages one render reads at most (200 events each: far more than a job writes)
STATUS_TONE: dict[str, str] = {
    JobStatus.COMPLETED: "ok",
    JobStatus.RUNNING: "live",
    JobStatus.STOPPED: "warn",
    JobStatus.BUDGET_EXHAUSTED: "warn",
    JobStatus.CANCELLED: "muted",
    JobStatus.TERMINATED: "bad",
    JobStatus.FAILED: "bad",
}


def _redacted(value: Any) -> Any:
    return json.loads(redact(json.dumps(value, default=str)))


def all_events(service: QuarryService, job_id: str) -> list[dict[str, Any]]:
    """The job's whole event log, oldest first (the service pages it)."""
    events: list[dict[str, Any]] = []
    for _ in range(EVENT_PAGES):
        page = service.job_events(job_id, after=events[-1]["id"] if events else 0)
        events.extend(e.model_dump() for e in page.events)
        if not page.events:
            break
    return events


def titles_of(collection: str, docids: list[str], known: dict[str, str]) -> dict[str, str]:
    """Titles of `docids` (those in `known` first, the rest from the collection, if it still exists)."""
    missing = [d for d in dict.fromkeys(docids) if d not in known]
    found = dict(known)
    if missing and collection:
        try:
            from stores.collection import Collection  # lazy: the collection store costs ~100 ms of start-up

            found |= Collection(collection).corpus.titles(missing)
        except QuarryError:
            pass  # the collection is gone: docids stand for themselves
    return found


def _live(service: QuarryService, job_id: str) -> dict[str, Any]:
    """Where a running job is (round, node, top 5, budget), or why that cannot be asked now —
    the page keeps showing what the job store holds when Temporal does not answer, or has lost the
    job (its `unknown_job` then is Temporal's: the store, read first, knows it)."""
    try:
        return service.job_status(job_id).model_dump()
    except QuarryError as err:
        return {"status": "running", "finished": False, "note": f"{err.message} ({err.code})", "top": [], "budget": {}}


def job_context(service: QuarryService, job_id: str) -> dict[str, Any]:
    """The page's values; a QuarryError (`unknown_job`) for an id this home never saw."""
    from quarry.app import temporal
    from quarry.app.records import store
    from stores.jobs import FINAL

    jobs = store()
    row = jobs.get(job_id)
    live = None if row["status"] in FINAL else _live(service, job_id)
    if live is not None and live.get("finished"):  # it ended between the two reads
        row, live = jobs.get(job_id), None
    result = service.job_result(job_id).model_dump() if live is None else None
    stored = _redacted({k: row.get(k) for k in ("result", "state", "params", "error", "intent")})
    record, state = stored["result"] or {}, stored["state"] or {}
    config = (stored["params"] or {}).get("config") or {}
    collection = str(row.get("collection") or "")
    events = all_events(service, job_id)
    checklist = (result or {}).get("checklist") or (state.get("plan") or {}).get("checklist") or []
    ranked = (result or {}).get("ranked") or []
    requirements = view.requirements_of(checklist, ranked)
    docs = view.ranked_views(ranked, requirements, collection, job_id)
    known = {d.docid: d.title for d in docs}
    latest: dict[str, Any] = next((e["data"] for e in reversed(events) if not e["data"].get("end")), {})
    mentioned = [str(t.get("docid")) for e in events for t in (e["data"].get("top") or [])]
    titles = titles_of(collection, mentioned, known)
    usage = _usage(record, events, state)
    used_s, budget_s = _time(row, state, config, live)
    status = str((result or live or row).get("status") or row["status"])
    web_ui = (result or {}).get("web_ui") or temporal.web_ui(job_id, service.address)
    trace_id = row.get("trace_id") or ""
    return {
        "job_id": job_id,
        "collection": collection,
        "intent": str(stored["intent"] or ""),
        "mode": str((result or {}).get("mode") or (stored["params"] or {}).get("mode") or "list"),
        "policy": str((result or {}).get("policy") or (stored["params"] or {}).get("policy") or ""),
        "status": status,
        "tone": STATUS_TONE.get(status, "muted"),
        "finished": live is None,
        "created": view.when(row.get("created_at")),
        "live": live and _live_view(live, latest, collection, job_id, titles),
        "requirements": requirements,
        "docs": [d for d in docs if not d.weak],
        "weak": [d for d in docs if d.weak],
        "answer": _answer_view((result or {}).get("answer"), record, collection, job_id),
        "rounds": view.rounds_of([e["data"] for e in events], titles, collection, job_id),
        "events": view.event_rows(events, float(row.get("created_at") or 0.0)),
        "queries": record.get("queries") or [],
        "meters": view.meters(usage, config, used_s, budget_s),
        "usage": view.usage_parts(usage),
        "stats": record.get("stats") or {},
        "stop_reason": str((result or {}).get("stop_reason") or ""),
        "rounds_done": (result or {}).get("rounds") or (live or {}).get("round") or row.get("round") or 0,
        "ranker": str(record.get("ranker") or ""),
        "error": _error((result or {}).get("error") or (stored["error"] if status in WITH_ERROR else None)),
        "fallbacks": record.get("fallbacks") or [],
        "web_ui": web_ui,
        "trace_id": trace_id,
        "trace_url": f"/api/jobs/{job_id}/trace" if trace_id else "",
    }


def _usage(record: dict[str, Any], events: list[dict[str, Any]], state: dict[str, Any]) -> Any:
    """The job's model usage: its result's, else the latest event's, else its state's."""
    return record.get("usage") or next(
        (e["data"]["usage"] for e in reversed(events) if e["data"].get("usage")), state.get("usage") or {}
    )


def _time(
    row: dict[str, Any], state: dict[str, Any], config: dict[str, Any], live: dict[str, Any] | None
) -> tuple[Any, Any]:
    """The seconds the job used and its budget in seconds."""
    budget = (live or {}).get("budget") or {}
    budget_s = budget.get("seconds") or config.get("max_seconds")
    # A finished job's time is counted as its budget was: from when a worker started running it
    # (`run_started_at`), not from its submission — a worker's start-up is not the job's time.
    ran_from = state.get("run_started_at") or row.get("created_at") or 0
    used_s = budget.get("used") if live is not None else max(0.0, (row.get("updated_at") or 0) - ran_from)
    return used_s, budget_s


def _answer_view(answer: Any, record: dict[str, Any], collection: str, job_id: str) -> Any:
    """The answer panel: its text with citations linked, exact answer, confidence, references."""
    if isinstance(answer, str):  # results stored before answers had fields
        answer = {"explanation": answer}
    references = record.get("references") or []
    return answer and {
        "runs": view.cited_segments(str(answer.get("explanation") or ""), references),
        "exact": str(answer.get("exact_answer") or ""),
        "confidence": _confidence(answer),
        "insufficient": bool(answer.get("insufficient_evidence")),
        "references": [_reference(r, collection, job_id) for r in references],
        "number": {str(r.get("docid", "")): n for n, r in reversed(list(enumerate(references, start=1)))},
        "citations": record.get("citations") or {},
    }


def _live_view(
    live: dict[str, Any], latest: dict[str, Any], collection: str, job_id: str, titles: dict[str, str]
) -> dict[str, Any]:
    """The running job's panel: Temporal's answer, or — when it has none — the latest event's."""
    budget = live.get("budget") or {}
    seconds, used = budget.get("seconds"), budget.get("used")
    return {
        "round": live.get("round") or latest.get("round", 0),
        "node": str(live.get("node") or latest.get("node") or ""),
        "candidates": latest.get("candidates"),
        "note": str(live.get("note") or ""),
        "share": min(1.0, float(used) / float(seconds)) if seconds and used is not None else None,
        "used": used,
        "left": budget.get("left"),
        "top": [
            view.TopEntry(
                str(t.get("docid")),
                str(t.get("title") or titles.get(str(t.get("docid")), "")),
                t.get("score"),
                view.doc_url(collection, str(t.get("docid")), job_id=job_id),
            )
            for t in live.get("top") or latest.get("top") or []
        ],
    }


def _reference(ref: dict[str, Any], collection: str, job_id: str) -> dict[str, Any]:
    lines = [int(n) for n in (ref.get("lines") or [])[:2]]
    return {
        "docid": str(ref.get("docid", "")),
        "title": str(ref.get("title") or ""),
        "quote": str(ref.get("quote") or ""),
        "lines": lines,
        "url": view.doc_url(collection, str(ref.get("docid", "")), lines or None, job_id),
    }


def _confidence(answer: dict[str, Any]) -> str:
    from nodes.evidence.answer_confidence import stated_confidence

    return stated_confidence(answer)


def _error(error: Any) -> dict[str, str] | None:
    """A failed job's error as {code, message, hint} (an error stored as text: its message)."""
    if not error:
        return None
    if isinstance(error, dict):
        return {k: str(error.get(k) or "") for k in ("code", "message", "hint")}
    return {"code": "", "message": str(error), "hint": ""}
