"""Exclusions that exclude: an exclusion from the intent or from a steer removes a document whose
*subject* it names (judged on path, title, headings and dominant terms) and keeps one that
mentions it in passing; the result says how many were removed and why."""

from __future__ import annotations

import pytest

from nodes.evidence.exclusions import excluded_by, headings, subject_match
from nodes.evidence.planning import make_plan
from nodes.evidence.scoring import violated_constraint
from nodes.job.results import removed_report
from nodes.job.state import Candidate
from nodes.rounds.steering import fold_steering
from stores.records import DocRecord

FILLER = "Each call returns at once and the caller goes on with its work while the request is served."

# The Tcl manual's page: its title never says "Tcl", its path does.
TCL_AFTER = DocRecord(
    docid="tcl/after.3tcl",
    title="after - Execute a command after a time delay",
    text="\n\n".join(["NAME", "after - Execute a command after a time delay", "DESCRIPTION", FILLER * 3]),
)
# Python's tkinter page says "Tcl" in passing: Tk is driven through an embedded Tcl interpreter.
TKINTER = DocRecord(
    docid="python/library/tkinter",
    title="tkinter - Python interface to Tcl/Tk",
    text="\n\n".join(
        [
            "Architecture",
            "The tkinter package is a thin object-oriented layer on top of Tk. " + FILLER,
            "Widgets",
            "A widget is placed with a geometry manager, and events are bound with the bind method. " + FILLER,
        ]
    ),
)
ASYNCIO = DocRecord(
    docid="python/library/asyncio-dev",
    title="Developing with asyncio",
    text="\n\n".join(
        [
            "Concurrency and Multithreading",
            "An event loop runs in a thread and executes all callbacks and tasks in that thread. " + FILLER,
            "Debug Mode",
            "Debug mode of asyncio is enabled with the PYTHONASYNCIODEBUG environment variable. " + FILLER,
            "Logging",
            "asyncio uses the logging module and all logging is performed via the asyncio logger. " + FILLER,
        ]
    ),
)
THREADING = DocRecord(
    docid="python/library/threading",
    title="threading - Thread-based parallelism",
    text="\n\n".join(
        [
            "Thread Objects",
            "The Thread class represents an activity that is run in a separate thread of control. " + FILLER,
            "Lock Objects",
            "A primitive lock is a synchronization primitive that is not owned by a particular thread. " + FILLER,
            "Thread-Local Data",
            "Thread-local data is data whose values are thread specific. " + FILLER,
        ]
    ),
)
DOCS = {d.docid: d for d in (TCL_AFTER, TKINTER, ASYNCIO, THREADING)}


class Corpus:
    """The store's `get_many`, over the records above."""

    def get_many(self, ids):
        return {d: DOCS[d] for d in ids if d in DOCS}


def test_the_subject_is_read_from_path_title_headings_and_dominant_terms() -> None:
    match = subject_match("Tcl", TCL_AFTER)
    assert match is not None and match.signals == ("path",) and "path names 'Tcl'" in match.reason
    match = subject_match("Python threading", THREADING)
    assert match is not None and match.signals == ("path",), "python/library/threading: both words"
    assert subject_match("threading", ASYNCIO) is None, "one heading of three and a sentence: in passing"
    # Its title is "tkinter - Python interface to Tcl/Tk": the name before the dash is the subject.
    assert subject_match("Tcl", TKINTER) is None and subject_match("tkinter", TKINTER) is not None
    assert subject_match("", TCL_AFTER) is None and subject_match("the of", TCL_AFTER) is None
    assert headings("Intro\n\nSome text here.\n\nThread Objects\n\nMore.") == ["Intro", "Thread Objects"]


def test_an_exclusion_names_a_word_not_the_words_that_share_its_first_letters() -> None:
    """ "not socketserver" is not "not socket", "without asyncio" not "without asynchronous": a
    word is compared whole (less its plural and -ing/-ed ending), never cut to a five-letter stem."""
    socket = DocRecord(docid="python/library/socket", title="socket - Low-level networking interface", text=FILLER)
    assert subject_match("socketserver", socket) is None and subject_match("sockets", socket) is not None
    signal = DocRecord(docid="python/library/signal", title="signal - Asynchronous events", text=FILLER)
    assert subject_match("asyncio", signal) is None and subject_match("signals", signal) is not None
    # A name with an underscore is one word: its title and path name it, another tool's do not.
    pgdump = DocRecord(docid="postgresql/app-pgdump", title="pg_dump", text=FILLER)
    dumpall = DocRecord(docid="postgresql/app-pg-dumpall", title="pg_dumpall", text="pg_dump " * 40)
    assert subject_match("pg_dump", pgdump) is not None and subject_match("pg_restore", pgdump) is None
    assert subject_match("pg_dump", dumpall) is None


@pytest.mark.parametrize(
    "intent, removed, kept",
    [
        ("running a callback after a delay, not Tcl", "tcl/after.3tcl", "python/library/asyncio-dev"),
        ("concurrency in Python other than threading", "python/library/threading", "python/library/asyncio-dev"),
        ("thread-safe callbacks, leaving out Python threading", "python/library/threading", "tcl/after.3tcl"),
    ],
)
def test_an_exclusion_in_the_intent_removes_its_subject_and_keeps_a_passing_mention(intent, removed, kept) -> None:
    plan = make_plan(intent)
    assert plan["exclusions"], f"no exclusion read from {intent!r}"
    assert violated_constraint(plan, DOCS[removed]).startswith("matches the exclusion")
    assert violated_constraint(plan, DOCS[kept]) == ""


def test_a_steer_removes_its_subject_keeps_a_passing_mention_and_the_result_says_so() -> None:
    state = {"intent": "event loops and threads in Python", "plan": make_plan("event loops and threads in Python")}
    update = fold_steering(state, [{"text": "not threading", "round": 1}])
    plan = update["plan"]
    assert "threading" in plan["exclusions"]
    pool = [Candidate(docid=d) for d in DOCS]
    report = removed_report({}, pool, plan, Corpus())
    assert report["count"] == 1 and [d["docid"] for d in report["documents"]] == ["python/library/threading"]
    assert report["why"] == {"matches the exclusion 'threading'": 1}
    assert "python/library/asyncio-dev" not in {d["docid"] for d in report["documents"]}
    # Candidates the judge already excluded while verifying are counted with their own reason.
    judged = {"tcl/after.3tcl": Candidate(docid="tcl/after.3tcl", excluded="matches the exclusion 'Tcl' (path)")}
    both = removed_report(judged, pool[1:], plan, Corpus())
    assert both["count"] == 2 and both["why"]["matches the exclusion 'Tcl'"] == 1


def test_no_exclusion_removes_nothing() -> None:
    assert removed_report({}, [Candidate(docid=d) for d in DOCS], make_plan("threads in Python"), Corpus()) == {}
    assert excluded_by([], THREADING) is None


def test_the_result_says_how_many_were_removed_and_full_says_which(capsys) -> None:
    from quarry.cli.render import render_result

    plan = make_plan("event loops and threads in Python, not threading")
    removed = removed_report({}, [Candidate(docid=d) for d in DOCS], plan, Corpus())
    base = {"job_id": "job-1", "status": "completed", "collection": "c", "intent": "x", "ranked": []}
    render_result(base | {"removed": removed})
    shown = capsys.readouterr().out
    assert "removed: 1 document(s) — matches the exclusion 'threading': 1 (--full: which)" in shown
    assert "python/library/threading" not in shown
    render_result(base | {"removed": removed}, full=True)
    shown = capsys.readouterr().out
    assert "python/library/threading" in shown and "path names 'threading'" in shown
    render_result(base)
    assert "removed" not in capsys.readouterr().out


def test_mcp_and_http_results_carry_the_removed_documents_and_the_steers() -> None:
    """The front doors' typed result (quarry.app.models.JobResult) keeps what the terminal shows."""
    from quarry.app.models import JobResult

    removed = removed_report(
        {}, [Candidate(docid=d) for d in DOCS], make_plan("threads in Python, not threading"), Corpus()
    )
    steering = [{"text": "not threading", "round": 2, "applies_from_round": 3, "applied": "final_list"}]
    out = JobResult.model_validate(
        {"job_id": "j", "status": "completed", "removed": removed, "steering": steering}
    ).model_dump()
    assert out["removed"]["count"] == 1 and out["steering"] == steering
