"""A job's event log (stores.job_events): every checkpoint appends what a watcher is shown, numbered
1, 2, … per job without a gap or a repeat — also when a retried activity writes the same checkpoint
again and when several processes write at once — and the job's end (finished or terminated) is the
last event, marked `end`."""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

from stores.jobs import JobStore

KEY = "sk-test-abcdefghijklmnopqrstuvwxyz0123"


def state(round_no: int, node: str = "reflection", top: tuple[str, ...] = ("a", "b")) -> dict[str, Any]:
    return {
        "job_id": "job-1",
        "collection": "c",
        "intent": "graph neural networks",
        "round": round_no,
        "node": node,
        "top": [{"docid": d, "score": 1.0 / (i + 1)} for i, d in enumerate(top)],
        "searches": [{"round": round_no, "channel": "lexical", "query": f"q{round_no}"}],
        "pool": {"size": 10 * round_no},
    }


def test_checkpoints_become_numbered_events_and_a_repeat_is_not_one(tmp_path: Path) -> None:
    jobs = JobStore(tmp_path / "jobs.sqlite")
    jobs.checkpoint("job-1", state(1))
    jobs.checkpoint("job-1", state(1))  # a retried activity writes the same checkpoint again
    jobs.checkpoint("job-1", state(2, top=("b", "c")))
    jobs.checkpoint("job-2", state(1))  # another job numbers its own events
    jobs.finish("job-1", {"status": "completed", "rounds": 2, "ranked": [{"docid": "b", "score": 0.9}]})
    events = jobs.events("job-1")
    assert [e.seq for e in events] == [1, 2, 3]
    assert [(e.data["round"], e.data["end"]) for e in events] == [(1, False), (2, False), (2, True)]
    assert [t["docid"] for t in events[1].data["top"]] == ["b", "c"] and events[1].data["candidates"] == 20
    assert events[-1].data["status"] == "completed" and events[-1].data["top"] == [{"docid": "b", "score": 0.9}]
    assert [e.seq for e in jobs.events("job-1", after=1)] == [2, 3]
    assert [e.seq for e in jobs.events("job-1", after=1, limit=1)] == [2]
    assert [e.seq for e in jobs.events("job-2")] == [1]
    assert jobs.events("no-such-job") == []


def test_a_termination_ends_the_log_once(tmp_path: Path) -> None:
    jobs = JobStore(tmp_path / "jobs.sqlite")
    jobs.create("job-1", "c", "intent", workflow_id="job-1", trace_id=None)
    jobs.checkpoint("job-1", state(1))
    assert jobs.mark("job-1", "terminated", "by the user")
    assert not jobs.mark("job-1", "terminated", "seen again")  # already ended: no second end event
    assert [(e.data["status"], e.data["end"]) for e in jobs.events("job-1")] == [
        ("running", False),
        ("terminated", True),
    ]


def test_a_late_checkpoint_never_reopens_a_finished_job(tmp_path: Path) -> None:
    """An activity the job abandoned (cancelled, out of time) may finish a step after the job's
    final write: its checkpoint changes nothing — status, state and events stay the job's end."""
    jobs = JobStore(tmp_path / "jobs.sqlite")
    jobs.checkpoint("job-1", state(1))
    jobs.finish("job-1", {"status": "cancelled", "rounds": 1, "ranked": []}, state(1, node="answer"))
    jobs.checkpoint("job-1", state(2, node="verification"))
    row = jobs.get("job-1")
    assert row["status"] == "cancelled" and row["state"]["node"] == "answer" and row["round"] == 1
    assert [e.data["status"] for e in jobs.events("job-1")] == ["running", "cancelled"]


def test_no_key_reaches_an_event(tmp_path: Path) -> None:
    jobs = JobStore(tmp_path / "jobs.sqlite")
    leaky = state(1) | {"searches": [{"round": 1, "channel": "lexical", "query": f"api_key={KEY}"}]}
    jobs.checkpoint("job-1", leaky)
    assert KEY not in str(jobs.events("job-1")[0].data)


def _write(path: str, worker: int) -> None:
    jobs = JobStore(Path(path))
    for i in range(25):
        jobs.checkpoint("job-1", state(i, node=f"w{worker}"))


def test_writers_in_several_processes_never_share_a_number(tmp_path: Path) -> None:
    path = tmp_path / "jobs.sqlite"
    JobStore(path).close()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_write, args=(str(path), w)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    seqs = [e.seq for e in JobStore(path).events("job-1", limit=1000)]
    assert seqs == list(range(1, len(seqs) + 1)) and len(seqs) == 75  # every state differs: all kept, in order
