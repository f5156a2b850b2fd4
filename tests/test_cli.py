"""The `quarry` command line end to end (typer's CliRunner, real Lucene, a private --home)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nodes.policy.registry import ONE_ROUND_NODE
from quarry.cli import app
from stores.collection import Collection
from tests.fakes import topic_docs, write_beir, write_jsonl

NAME = "cli"
EVAL_KEYS = {"ndcg@10", "ndcg@20", "recall@20", "precision@20", "f1@20", "recall@100", "recall@1000", "map"}


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """(home, BEIR folder): 28 topic docs + 2 animal docs; q1 finds its one relevant doc at
    rank 1, q2's relevant doc does not contain the query word at all."""
    home = tmp_path_factory.mktemp("cli-home")
    folder = write_beir(
        tmp_path_factory.mktemp("cli-src") / "beir",
        [
            *topic_docs(28),
            {"_id": "zeb", "title": "Zebra stripes", "text": "zebra herd ecology"},
            {"_id": "oce", "title": "Ocelot", "text": "ocelot habitat"},
        ],
        queries={"q1": "zebra", "q2": "ocelot", "q3": "unjudged retrieval"},
        qrels={"test": [("q1", "zeb", 1), ("q2", "t001", 1)]},
    )
    # the app's --home callback exports QUARRY_HOME; keep that out of the other test modules
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("QUARRY_HOME", str(home))
        yield home, folder


def run(home: Path, *args: str):
    return CliRunner().invoke(app, ["--home", str(home), *args])


def last_json(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def ingested(env) -> Path:
    home, folder = env
    result = run(home, "ingest", str(folder), "--name", NAME)
    assert result.exit_code == 0, result.output
    assert "30 documents" in result.stdout and "2 queries" not in result.stdout
    assert "3 queries" in result.stdout and "test" in result.stdout and "BM25 index built" in result.stdout
    return home


def test_reingest_is_unchanged_and_listed(ingested: Path, env) -> None:
    result = run(ingested, "ingest", str(env[1]), "--name", NAME)
    assert result.exit_code == 0 and "unchanged" in result.stdout
    assert run(ingested, "collections").stdout.split() == [NAME]


def test_search_json_previews_five_hits(ingested: Path) -> None:
    data = last_json(run(ingested, "search", NAME, "retrieval", "--json"))
    assert set(data) == {"search_id", "total", "hits"}
    assert data["search_id"] and data["total"] == 28
    assert [h["rank"] for h in data["hits"]] == [1, 2, 3, 4, 5]
    assert all(h["excerpt"] and "retrieval" in h["excerpt"] and h["title"] for h in data["hits"])
    deep = Collection(NAME, ingested).lucene.search("retrieval")
    assert [h["docid"] for h in data["hits"]] == [h.docid for h in deep[:5]]


def test_search_offset_and_limit_page_the_deep_ranking(ingested: Path) -> None:
    data = last_json(run(ingested, "search", NAME, "retrieval", "--offset", "6", "--limit", "10", "--json"))
    assert [h["rank"] for h in data["hits"]] == list(range(6, 16))
    deep = Collection(NAME, ingested).lucene.search("retrieval")
    assert [h["docid"] for h in data["hits"]] == [h.docid for h in deep[5:15]]
    assert data["total"] == 28


def test_search_text_output(ingested: Path) -> None:
    result = run(ingested, "search", NAME, "zebra")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].endswith("1 results for 'zebra'; ranks 1–1:")
    assert lines[1].startswith("1. docid=zeb score=")
    assert lines[-1] == "End of this ranking."


def test_semantic_search_without_a_dense_index_says_it_ranks_bm25_hits_only(ingested: Path) -> None:
    result = run(ingested, "search", NAME, "zebra", "--channel", "semantic")
    assert result.exit_code == 0, result.output
    assert "1. docid=zeb score=" in result.stdout, "the one BM25 hit, re-scored by MiniLM"
    assert "filtered to lexical candidates" in result.stdout and "quarry index NAME --dense" in result.stdout


def test_search_channel_options_are_checked(ingested: Path) -> None:
    assert "--channel lexical or --channel semantic" in assert_fails(
        run(ingested, "search", NAME, "zebra", "--channel", "fuzzy"), "bad_option"
    )
    assert "semantic channel does not use" in assert_fails(
        run(ingested, "search", NAME, "zebra", "--channel", "semantic", "--k1", "2"), "bad_option"
    )


def test_semantic_search_after_building_the_dense_index(env, tmp_path: Path) -> None:
    home = tmp_path / "home"
    src = write_jsonl(
        tmp_path / "animals.jsonl",
        [*topic_docs(6), {"_id": "zeb", "title": "Zebra stripes", "text": "zebra herd ecology"}],
    )
    assert run(home, "ingest", str(src), "--name", "animals").exit_code == 0
    built = run(home, "index", "animals", "--dense")
    assert built.exit_code == 0 and "dense index animals" in built.stdout, built.output
    found = last_json(
        run(home, "search", "animals", "striped horses of the savanna", "--channel", "semantic", "--json")
    )
    assert found["total"] == 7 and found["hits"][0]["docid"] == "zeb"


def test_read_prints_numbered_lines(ingested: Path) -> None:
    result = run(ingested, "read", NAME, "zeb")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "[docid=zeb lines 1–2 of 2]",
        "1  Zebra stripes",
        "2  zebra herd ecology",
        "End of document.",
    ]
    result = run(ingested, "read", NAME, "t003", "--offset", "2", "--limit", "1")
    assert result.stdout.splitlines()[0].startswith("[docid=t003 lines 2–2 of ")


def test_eval_json(ingested: Path, tmp_path: Path) -> None:
    run_file = tmp_path / "bm25.trec"
    data = last_json(run(ingested, "eval", NAME, "--json", "--run", str(run_file)))
    assert set(data) >= EVAL_KEYS
    assert data["queries"] == 2 and data["split"] == "test" and data["system"] == "bm25"
    # q1: its only relevant doc at rank 1 (every metric 1, P@20 = 1/20); q2: nothing relevant found
    expected = {
        "ndcg@10": 0.5,
        "ndcg@20": 0.5,
        "recall@20": 0.5,
        "recall@1000": 0.5,
        "map": 0.5,
        "precision@20": (1 / 20) / 2,
        "f1@20": (2 * (1 / 20) * 1 / (1 / 20 + 1)) / 2,
    }
    for key, value in expected.items():
        assert data[key] == pytest.approx(value, abs=1e-4), key
    lines = run_file.read_text().splitlines()
    assert lines[0].split()[:4] == ["q1", "Q0", "zeb", "1"]
    assert {line.split()[0] for line in lines} == {"q2"} | {"q1"}


# -- errors: exit 2 with the code and a hint on stderr -------------------------------------------------


def assert_fails(result, code: str) -> str:
    assert result.exit_code == 2, result.output
    assert f"({code})" in result.stderr and "hint:" in result.stderr, result.stderr
    assert result.stdout == ""
    return result.stderr


def test_unknown_collection(env) -> None:
    stderr = assert_fails(run(env[0], "search", "nope", "retrieval"), "no_collection")
    assert "quarry ingest" in stderr


def test_unknown_docid(ingested: Path) -> None:
    assert_fails(run(ingested, "read", NAME, "no-such-doc"), "unknown_docid")


def test_empty_query(ingested: Path) -> None:
    assert_fails(run(ingested, "search", NAME, "   "), "empty_query")


def test_bad_collection_name(env) -> None:
    assert_fails(run(env[0], "ingest", str(env[1]), "--name", "../escape"), "bad_name")
    assert not (env[0].parent / "escape").exists()


def test_nonexistent_input(env, tmp_path: Path) -> None:
    assert_fails(run(env[0], "ingest", str(tmp_path / "missing.jsonl"), "--name", "x"), "not_found")


def test_bad_ingest_file_names_file_and_line(env, tmp_path: Path) -> None:
    bad = write_jsonl(
        tmp_path / "bad.jsonl",
        [{"_id": "a", "title": "fine"}, '{"_id": "b" "title": "x"}', {"_id": "a", "title": "dup"}],
    )
    stderr = assert_fails(run(env[0], "ingest", str(bad), "--name", "badone"), "bad_input")
    assert f"{bad}:2:" in stderr and f"{bad}:3:" in stderr
    assert not (env[0] / "collections" / "badone" / "CURRENT").exists()
    assert not list((env[0] / "collections").glob("badone/**/corpus.sqlite"))


def test_error_lines_are_not_hard_wrapped(env, tmp_path: Path) -> None:
    # stderr is often a log file or a pipe: a file:line must stay on one line whatever its length
    deep_dir = tmp_path / ("a_fairly_long_folder_name_" * 3) / "and_another_level_of_nesting"
    bad = write_jsonl(deep_dir / "bad.jsonl", ['{"_id": "b" "title": "x"}'])
    stderr = assert_fails(run(env[0], "ingest", str(bad), "--name", "badtwo"), "bad_input")
    assert f"{bad}:1:" in stderr, stderr


def test_ingest_of_notes_is_lenient_with_a_summary_and_strict_on_request(tmp_path: Path) -> None:
    home, notes = tmp_path / "home", tmp_path / "notes"
    notes.mkdir()
    for i in range(3):
        (notes / f"n{i}.md").write_text(f"# Note {i}\nretrieval note {i}\n", encoding="utf-8")
    (notes / "empty.md").write_text("", encoding="utf-8")
    (notes / "slides.pptx").write_bytes(b"PK")
    strict = run(home, "ingest", str(notes), "--name", "notes", "--strict")
    assert strict.exit_code == 2 and "empty.md: empty file" in strict.output and "Traceback" not in strict.output
    assert run(home, "collections").stdout.split() == []  # all or nothing: nothing was stored
    result = run(home, "ingest", str(notes), "--name", "notes")
    assert result.exit_code == 0, result.output
    assert "3 added, 1 skipped, 1 of unsupported type" in result.stdout
    assert f"{notes / 'empty.md'}: empty file (nothing to search)" in result.output
    assert "slides.pptx" in result.output


def test_add_and_remove_commands(tmp_path: Path) -> None:
    home, notes = tmp_path / "home", tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\nretrieval alpha\n", encoding="utf-8")
    assert run(home, "ingest", str(notes), "--name", "inc").exit_code == 0
    extra = tmp_path / "b.txt"
    extra.write_text("B\nretrieval zeppelin\n", encoding="utf-8")
    added = run(home, "add", "inc", str(extra))
    assert added.exit_code == 0 and "1 added, 1 unchanged" in added.stdout and "2 documents" in added.stdout
    assert "docid=b" in run(home, "search", "inc", "zeppelin").stdout
    missing = run(home, "remove", "inc", "ghost")
    assert missing.exit_code == 2 and "unknown_document" in missing.output and "Traceback" not in missing.output
    removed = run(home, "remove", "inc", "b")
    assert removed.exit_code == 0 and "1 removed, 1 unchanged" in removed.stdout
    assert "docid=b" not in run(home, "search", "inc", "zeppelin").stdout


# -- job progress while the worker warms up; job watch shows the running step -----------------------


class _FakeHandle:
    """A workflow handle answering the `progress` query from a script (an exception is raised)
    and finishing after `finish_after` queries."""

    def __init__(self, answers: list, result: dict | None = None, finish_after: int = 10**6) -> None:
        import asyncio

        self.answers, self.result_value, self.finish_after = answers, result or {}, finish_after
        self.queries = 0
        self._done: asyncio.Event | None = None

    def _event(self):
        import asyncio

        if self._done is None:
            self._done = asyncio.Event()
        return self._done

    async def query(self, name: str, *args, **kwargs):
        self.queries += 1
        answer = self.answers[min(self.queries, len(self.answers)) - 1]
        if self.queries >= self.finish_after:
            self._event().set()
        if isinstance(answer, BaseException):
            raise answer
        return dict(answer)

    async def describe(self, *args, **kwargs):
        from types import SimpleNamespace

        return SimpleNamespace(status=SimpleNamespace(name="RUNNING"))

    async def result(self):
        await self._event().wait()
        return self.result_value


def _fake_temporal(monkeypatch: pytest.MonkeyPatch, handle: _FakeHandle) -> None:
    from quarry.app import temporal as temporal_access

    class Client:
        def get_workflow_handle(self, job_id: str) -> _FakeHandle:
            return handle

    async def client(address=None):
        return Client()

    monkeypatch.setattr(temporal_access, "client", client)


def _timeout():
    from temporalio.service import RPCError, RPCStatusCode

    return RPCError("Timeout expired", RPCStatusCode.DEADLINE_EXCEEDED, b"")


def _job_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, job_id: str) -> Path:
    from stores.jobs import JobStore

    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("QUARRY_HOME", str(home))
    JobStore(home / "jobs.sqlite").create(job_id, "lit", "graph neural networks", workflow_id=job_id, trace_id=None)
    return home


def test_job_progress_while_the_worker_warms_up_says_so_and_exits_0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A job waiting on a warming worker is not a failure: `job progress` says the worker is
    warming up (and for how long), gives the job's state and exits 0; --json says it too."""
    from workflows.processes.warmup import mark_warming

    home = _job_home(tmp_path, monkeypatch, "job-warm")
    mark_warming(home)  # this (live) process plays the warming worker
    _fake_temporal(monkeypatch, _FakeHandle([_timeout()]))
    res = run(home, "job", "progress", "job-warm")
    assert res.exit_code == 0, res.output
    assert "job-warm · running · lit" in res.stdout and "the worker is warming up" in res.stdout
    assert "s so far" in res.stdout and "error" not in res.output
    as_json = run(home, "job", "progress", "job-warm", "--json")
    assert as_json.exit_code == 0, as_json.output
    obj = json.loads(as_json.stdout.strip().splitlines()[-1])
    assert obj["worker"] == "warming_up" and obj["status"] == "running" and obj["warming_seconds"] >= 0


def test_job_progress_without_any_worker_is_still_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = _job_home(tmp_path, monkeypatch, "job-cold")
    _fake_temporal(monkeypatch, _FakeHandle([_timeout()]))
    res = run(home, "job", "progress", "job-cold")
    assert res.exit_code == 2 and "no_worker" in res.output and "Traceback" not in res.output


PROGRESS = {
    "job_id": "job-step",
    "status": "running",
    "policy": "heuristic",
    "round": 1,
    "node": "retrieval",
    "candidates": 12,
    "tool_calls": 3,
    "budget": {"used": 10, "left": 50, "seconds": 60},
    "top": [],
    "searches": [],
}


def test_job_watch_shows_the_running_step_as_job_progress_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The semantic step's progress (written by the activity to the job store) appears in
    `job watch` with the same text as in `job progress`."""
    from stores.jobs import JobStore

    home = _job_home(tmp_path, monkeypatch, "job-step")
    JobStore(home / "jobs.sqlite").set_step("job-step", "retrieval", "embedding", 240, 1200)
    want = "now: semantic step: 240/1,200 chunks embedded (20%)"
    _fake_temporal(monkeypatch, _FakeHandle([PROGRESS]))
    shown = run(home, "job", "progress", "job-step")
    assert shown.exit_code == 0 and want in shown.stdout, shown.output
    # A heuristic job's round runs as one step: the workflow names that node, the step its own.
    _fake_temporal(monkeypatch, _FakeHandle([PROGRESS | {"node": ONE_ROUND_NODE}]))
    assert want in run(home, "job", "progress", "job-step").stdout
    _fake_temporal(monkeypatch, _FakeHandle([PROGRESS | {"node": "answer"}]))
    assert "now:" not in run(home, "job", "progress", "job-step").stdout, "a step of another node is over"
    # `node` is the last node that finished; `running` (a newer worker's) names the one whose step it is.
    _fake_temporal(monkeypatch, _FakeHandle([PROGRESS | {"node": "navigator", "running": ["retrieval"]}]))
    assert want in run(home, "job", "progress", "job-step").stdout
    _fake_temporal(monkeypatch, _FakeHandle([PROGRESS | {"running": ["verification"]}]))
    assert "now:" not in run(home, "job", "progress", "job-step").stdout, "retrieval's step is over"
    result = {
        "job_id": "job-step",
        "status": "completed",
        "collection": "lit",
        "intent": "graph neural networks",
        "ranked": [],
    }
    _fake_temporal(monkeypatch, _FakeHandle([PROGRESS], result=result, finish_after=2))
    watched = run(home, "job", "watch", "job-step")
    assert watched.exit_code == 0, watched.output
    lines = watched.stdout.splitlines()
    assert sum(want in line for line in lines) == 1, watched.stdout
    assert lines.index(next(line for line in lines if want in line)) > lines.index(
        next(line for line in lines if line.startswith("round 1"))
    ), "under the round's header"


def test_progress_of_a_one_step_round_shows_the_steps_it_has_checkpointed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a heuristic round runs as one activity, the workflow's progress is the state the round
    started from; `job progress`, `job watch` and MCP's job_status add what the round checkpointed."""
    from quarry.app.progress import with_round_so_far
    from stores.jobs import JobStore

    home = _job_home(tmp_path, monkeypatch, "job-step")
    running = PROGRESS | {"node": ONE_ROUND_NODE, "round": 2, "candidates": 4, "tool_calls": 2}
    assert with_round_so_far("job-step", running) == running, "no step of round 2 checkpointed yet"
    JobStore(home / "jobs.sqlite").checkpoint(
        "job-step",
        {
            "job_id": "job-step",
            "round": 2,
            "node": "retrieval",
            "pool": {"seq": 3, "size": 30},
            "top": [{"docid": f"d{i}", "score": 1.0 - i / 10} for i in range(8)],
            "searches": [{"round": 2, "channel": "lexical", "query": "gnn molecules"}],
            "stats": {"tool_calls": 5},
        },
    )
    shown = with_round_so_far("job-step", running)
    assert shown["candidates"] == 30 and shown["tool_calls"] == 5 and shown["node"] == ONE_ROUND_NODE
    assert [t["docid"] for t in shown["top"]] == ["d0", "d1", "d2", "d3", "d4"]
    assert shown["searches"] == [{"round": 2, "channel": "lexical", "query": "gnn molecules"}]
    assert with_round_so_far("job-step", running | {"round": 3}) == running | {"round": 3}, "another round's"
    assert with_round_so_far("job-step", PROGRESS) == PROGRESS, "a step-by-step job's progress is its own"


def test_a_worker_running_older_code_is_restarted_by_run(tmp_path, monkeypatch, capsys) -> None:
    """A background worker keeps the code it started with: after an upgrade (or an edit) every
    later `quarry run` ran its jobs on the old code — seen in the issue 20 walkthrough, where
    fixed quotes did not appear until `quarry down`. The worker's code digest is recorded at
    spawn; a different one restarts it, the same one leaves it alone."""
    from quarry.app import infrastructure

    home = tmp_path / "home"
    (home / "run").mkdir(parents=True)
    alive = {"worker": True}
    stopped, spawned = [], []
    monkeypatch.setattr(infrastructure, "current_address", lambda address=None: "127.0.0.1:7233")
    monkeypatch.setattr(infrastructure, "reachable", lambda address: True)
    monkeypatch.setattr(infrastructure, "server_record", lambda h: type("Record", (), {"address": "127.0.0.1:7233"})())
    monkeypatch.setattr(
        infrastructure, "stop_detached", lambda h, name, say=None: (stopped.append(name), alive.update(worker=False))
    )
    monkeypatch.setattr(infrastructure, "worker_alive", lambda h: alive["worker"])
    monkeypatch.setattr(
        infrastructure, "spawn_worker", lambda h, address=None: (spawned.append(h), alive.update(worker=True))
    )
    (home / "run" / "worker.models").write_text(infrastructure.model_env_digest())

    (home / "run" / "worker.code").write_text(infrastructure.code_digest())
    infrastructure.ensure_infrastructure(home)
    assert (stopped, spawned) == ([], [])

    (home / "run" / "worker.code").write_text("0123456789abcdef")  # the digest of other code
    infrastructure.ensure_infrastructure(home)
    assert stopped == ["worker"] and spawned == [home]
    assert "Quarry's code changed since it started" in capsys.readouterr().err

    # A worker spawned by a Quarry from before this record has none: it is older code too.
    stopped.clear()
    spawned.clear()
    (home / "run" / "worker.code").unlink()
    infrastructure.ensure_infrastructure(home)
    assert stopped == ["worker"] and spawned == [home]
