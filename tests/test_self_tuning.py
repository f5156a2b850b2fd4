"""Self-tuning on pseudo-queries: generation (seeded, bounded, never reading judgements), the stored
profile (carried over, stale, applied), the `*-self` evaluation systems and `quarry tune --self`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evals.runner import evaluate
from nodes.job.config import JobConfig
from nodes.job.profile_choice import resolve_profile
from nodes.job.runtime import NodeRuntime, configure_runtime
from nodes.ranking.ranker import HEURISTIC_ORDER, RANK_FEATURES, Verifier
from quarry.cli import app
from stores.collection import Collection, ingest
from stores.corpus import CorpusStore
from stores.errors import QuarryError
from stores.jobs import JobStore
from stores.judgements import Judgement, JudgementStore, judgements_path
from stores.lucene import IndexMeta
from stores.profiles import SelfProfile, documents_signature, profile_status, read_profile, save_profile
from tests.fakes import run_search_graph, search_docs, write_beir
from tuning.pseudo_queries import KINDS, from_judgements, generate, sentence_query
from tuning.self_tuning import MIN_CHOOSING_QUERIES, self_profile, self_tune
from tuning.self_verifier import MIN_GAIN

# Small, and without the verifier's jobs: the behaviour, not the figures (one test fits a verifier).
GRID = {"k1_grid": (0.9, 2.0), "b_grid": (0.4, 0.9), "verifier": False}


def citations(docs: list[dict]) -> list[tuple[str, str]]:
    """Each paper cites the two before it in its topic (a chain per topic)."""
    ids = [d["_id"] for d in docs]
    return [(a, b) for i, a in enumerate(ids) for b in ids[max(0, i - 2) : i] if a[:2] == b[:2]]


def judged_source(folder: Path, queries: dict[str, str] | None = None) -> Path:
    docs = search_docs()
    qs = queries or {"q1": "graph neural networks"}
    return write_beir(
        folder, docs, queries=qs, qrels={"test": [(q, docs[0]["_id"], 1) for q in qs]}, citations=citations(docs)
    )


@pytest.fixture()
def col(tmp_path: Path) -> Collection:
    ingest(judged_source(tmp_path / "src"), "selfish", home=tmp_path / "home")
    return Collection("selfish", home=tmp_path / "home")


@pytest.fixture()
def no_judgements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every way to the collection's queries and qrels raises (and is recorded)."""
    touched: list[str] = []

    def refuse(name: str):
        def method(self, *args, **kwargs):
            touched.append(name)
            raise AssertionError(f"self-tuning read {name}")

        return method

    for name in ("qrels", "queries", "splits", "answers"):
        monkeypatch.setattr(CorpusStore, name, refuse(name))
    monkeypatch.setattr("tuning.judged.judged_queries", refuse("judged_queries"))
    return touched


def test_pseudo_queries_are_seeded_bounded_and_made_from_documents_only(col: Collection, no_judgements) -> None:
    first = generate(col, n=30, seed=5)
    again = generate(col, n=30, seed=5)
    other = generate(col, n=30, seed=6)
    assert first.queries == again.queries  # reproducible
    assert [q.text for q in first.queries] != [q.text for q in other.queries]  # the seed matters
    assert len(first.queries) == 30 and set(first.by_kind()) == set(KINDS)
    assert {k: len(v) for k, v in first.by_kind().items()} == {"title": 10, "sentence": 10, "citation": 10}
    docs = col.corpus.get_many(q.source for q in first.queries)
    for q in first.queries:
        rec = docs[q.source]
        if q.kind == "title":
            assert q.text == rec.title and q.relevant == (rec.docid,) and not q.exclude
        elif q.kind == "sentence":
            words = rec.text.lower()
            assert q.relevant == (rec.docid,) and all(w.lower() in words for w in q.text.split())
            assert 4 <= len(q.text.split()) <= 12
        else:  # the cited papers are what a citing title asks for; the citing paper is left out
            assert q.text == rec.title and q.exclude == (rec.docid,)
            assert set(q.relevant) <= {b for a, b in citations(search_docs()) if a == rec.docid} and q.relevant
    assert len(generate(col, n=5, seed=5).queries) == 5
    assert set(first.sources) == {q.source for q in first.queries}
    assert not no_judgements


def test_without_citations_the_other_kinds_take_the_share(tmp_path: Path) -> None:
    src = write_beir(tmp_path / "src", search_docs())
    ingest(src, "plain", home=tmp_path / "home")
    made = generate(Collection("plain", home=tmp_path / "home"), n=31, seed=1)
    assert {k: len(v) for k, v in made.by_kind().items()} == {"title": 15, "sentence": 16}


def test_a_sentence_query_keeps_half_the_content_words_in_order() -> None:
    import random

    from stores.records import DocRecord

    rec = DocRecord(docid="d", text="Short. " + " ".join(f"word{i}alpha" for i in range(16)) + ".")
    text = sentence_query(rec, random.Random(1))
    assert text is not None
    kept = [int(w.removeprefix("word").removesuffix("alpha")) for w in text.split()]
    assert len(kept) == 8 and kept == sorted(kept)
    assert sentence_query(DocRecord(docid="e", text="Too short to ask."), random.Random(1)) is None


def test_self_tune_stores_a_profile_and_reads_no_judgements(col: Collection, no_judgements) -> None:
    seen: list[str] = []
    result = self_tune(col, queries=40, seed=3, progress=lambda stage, n, total: seen.append(stage), **GRID)
    p = result.profile
    assert (p.k1, p.b) in {(k, b) for k in GRID["k1_grid"] for b in GRID["b_grid"]} | {(0.9, 0.4)}
    assert p.pseudo_chosen >= p.pseudo_default  # the stored setting was one of the candidates
    assert p.queries == 40 and set(p.kinds) == set(KINDS) and p.semantic_weight is None  # no dense index
    assert p.chosen_on == () and (p.k1, p.b) == (0.9, 0.4)  # no judged queries: the kinds only report
    assert not p.applied and "settings" in seen
    assert read_profile(col.paths, col.name) == p
    assert (IndexMeta.load(col.paths.lucene_dir).k1, IndexMeta.load(col.paths.lucene_dir).b) == (0.9, 0.4)
    queries = json.loads(result.queries_file.read_text())
    assert len(queries["queries"]) == 40 and queries["seed"] == 3
    assert not no_judgements


def test_apply_stores_the_setting_with_the_index(col: Collection) -> None:
    p = self_tune(col, queries=20, seed=3, k1_grid=(2.0,), b_grid=(0.9,), apply=True, verifier=False).profile
    meta = IndexMeta.load(Collection(col.name, home=col.paths.root.parent.parent).paths.lucene_dir)
    assert p.applied and (meta.k1, meta.b) in {(2.0, 0.9), (0.9, 0.4)} and (meta.k1, meta.b) == (p.k1, p.b)


def test_profile_carries_over_unchanged_documents_and_goes_stale_when_they_change(
    col: Collection, tmp_path: Path
) -> None:
    home = col.paths.root.parent.parent
    self_tune(col, queries=20, seed=3, **GRID)
    # A new version with the same documents and another query: the profile holds as it is.
    ingest(judged_source(tmp_path / "src2", {"q1": "graph neural networks", "q2": "federated"}), "selfish", home=home)
    now = Collection("selfish", home=home)
    status = profile_status(now.paths, now.name, now.corpus.hashes())
    assert status is not None and status.changed_share == 0 and not status.stale
    assert self_profile(now, tune_if_missing=False) == status.profile
    # Most documents rewritten: stale, with the command that fixes it.
    docs = [{**d, "text": d["text"] + " revised"} for d in search_docs()]
    ingest(write_beir(tmp_path / "src3", docs), "selfish", home=home)
    now = Collection("selfish", home=home)
    status = profile_status(now.paths, now.name, now.corpus.hashes())
    assert status is not None and status.stale and "stale" in status.describe()
    with pytest.raises(QuarryError) as err:
        self_profile(now, tune_if_missing=False)
    assert err.value.code == "stale_profile" and "quarry tune selfish --self" in err.value.hint


def test_bm25_self_runs_on_the_profile_and_refuses_explicit_parameters(col: Collection) -> None:
    p = self_tune(col, queries=20, seed=3, k1_grid=(2.0,), b_grid=(0.9,), verifier=False).profile
    result = evaluate(col, "bm25-self")
    assert (result.extras["k1"], result.extras["b"]) == (p.k1, p.b)
    with pytest.raises(QuarryError) as err:
        evaluate(col, "bm25-self", k1=1.0)
    assert err.value.code == "bad_option"


def test_bm25_self_tunes_first_when_there_is_no_profile(
    col: Collection, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("tuning.self_verifier.fit_self_verifier", lambda *a, **k: (None, {}))  # its own test below
    assert read_profile(col.paths, col.name) is None
    result = evaluate(col, "bm25-self")
    stored = read_profile(col.paths, col.name)
    assert (
        stored is not None and not stored.applied and (result.extras["k1"], result.extras["b"]) == (stored.k1, stored.b)
    )
    assert "pseudo-queries" in capsys.readouterr().err


def test_a_corrupt_profile_is_one_clear_error(col: Collection) -> None:
    col.paths.runs_dir.mkdir(parents=True, exist_ok=True)
    (col.paths.runs_dir / "self-profile.json").write_text("{not json")
    with pytest.raises(QuarryError) as err:
        read_profile(col.paths, col.name)
    assert err.value.code == "bad_profile" and "--self" in err.value.hint


def test_tune_self_on_the_command_line(col: Collection) -> None:
    home = str(col.paths.root.parent.parent)
    shown = CliRunner().invoke(
        app, ["--home", home, "tune", "selfish", "--self", "--queries", "20", "--no-verifier", "--json"]
    )
    assert shown.exit_code == 0, shown.output
    data = json.loads(shown.stdout.strip().splitlines()[-1])
    assert data["queries"] == 20 and not data["applied"] and set(data["kinds"]) == set(KINDS)
    text = CliRunner().invoke(app, ["--home", home, "tune", "selfish", "--self", "--queries", "20", "--no-verifier"])
    assert text.exit_code == 0 and "no qrels read" in text.stdout and "--apply" in text.stdout
    assert "chosen on  nothing yet" in text.stdout and "quarry job mark" in text.stdout
    bad = CliRunner().invoke(app, ["--home", home, "tune", "selfish", "--self", "--split", "test"])
    assert bad.exit_code != 0 and "--split" in bad.output and "Traceback" not in bad.output


def test_collections_lists_the_profile_and_says_when_it_is_stale(col: Collection, tmp_path: Path) -> None:
    home = str(col.paths.root.parent.parent)
    listed = CliRunner().invoke(app, ["--home", home, "collections", "--json"])
    assert json.loads(listed.stdout.strip().splitlines()[-1]) == {"collections": ["selfish"], "profiles": {}}
    p = self_tune(col, queries=20, seed=3, **GRID).profile
    listed = CliRunner().invoke(app, ["--home", home, "collections", "--json"])
    shown = json.loads(listed.stdout.strip().splitlines()[-1])["profiles"]["selfish"]
    assert shown == {
        "k1": p.k1,
        "b": p.b,
        "semantic_weight": None,
        "applied": False,
        "changed_share": 0,
        "stale": False,
    }
    docs = [{**d, "text": d["text"] + " revised"} for d in search_docs()]
    ingest(write_beir(tmp_path / "changed", docs), "selfish", home=col.paths.root.parent.parent)
    text = CliRunner().invoke(app, ["--home", home, "collections"])
    assert text.exit_code == 0 and "stale" in text.stdout and "quarry tune selfish --self" in text.stdout


# -- jobs search with the profile ---------------------------------------------------------------


def test_queries_from_documents_alone_keep_the_defaults(col: Collection) -> None:
    """Title, sentence and citation queries choose nothing (what they chose lost on real queries):
    without judged queries the profile keeps the index's setting, fits no verifier and says so."""
    p = self_tune(col, queries=21, seed=3, k1_grid=(2.0,), b_grid=(0.9,), verifier=True, apply=True).profile
    assert p.chosen_on == () and p.kept_defaults and (p.k1, p.b) == (0.9, 0.4)
    assert p.verifier is None and not p.verifier_pseudo and p.semantic_weight is None
    assert set(p.kinds) == set(KINDS)  # still reported: what each alone would choose
    assert p.brief().startswith("defaults kept")
    meta = IndexMeta.load(col.paths.lucene_dir)
    assert (meta.k1, meta.b) == (0.9, 0.4)


def judge(col: Collection, intents: dict[str, list[str]]) -> None:
    """What a model librarian would have recorded: each intent's documents judged relevant."""
    JudgementStore(judgements_path(col.paths)).record(
        Judgement(f"job-{i}", intent, docid, "model", 0.9, "scripted")
        for i, (intent, docids) in enumerate(intents.items())
        for docid in docids
    )


JUDGED = {
    "graph neural networks for molecules": ["gnn01", "gnn02", "gnn03"],
    "language model pretraining": ["lm01", "lm02"],
    "reinforcement learning for robots": ["rl01", "rl03"],
    "federated learning across hospitals": ["fl01", "fl02", "fl03"],
}


def test_the_profile_fits_its_own_verifier_on_the_agents_candidates(
    col: Collection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("tuning.self_tuning.MIN_VERIFIER_QUERIES", 3)
    monkeypatch.setattr("tuning.self_tuning.MIN_CHOOSING_QUERIES", 3)
    judge(col, JUDGED)
    p = self_tune(col, queries=12, seed=3, k1_grid=(0.9,), b_grid=(0.4,), verifier=True).profile
    figures = p.verifier_pseudo
    assert p.chosen_on == ("judged",)
    assert figures["queries"] == p.kinds["judged"].queries == 4  # fitted on the judged queries only
    assert 0 <= figures["heuristic"] <= 1 and 0 <= figures["verifier"] <= 1
    bar = figures["heuristic"] * (1 + MIN_GAIN)  # kept only when it beat the heuristic order clearly
    if p.verifier is not None:
        assert figures["verifier"] >= bar and tuple(p.verifier["features"]) == RANK_FEATURES
    else:
        assert figures["verifier"] < bar
    jobs = JobStore(col.paths.root.parent.parent / "jobs.sqlite")
    assert jobs.load_draft("ranker-selfish-j0") is None, "the fitting's jobs are not the user's jobs"


def hand_profile(col: Collection, *, applied: bool, verifier: dict | None = None) -> SelfProfile:
    """A profile far from the defaults (k1 12, b 1, semantic ×4), written as `quarry tune --self` would."""
    hashes = col.corpus.hashes()
    profile = SelfProfile(
        collection=col.name,
        documents=documents_signature(hashes),
        document_count=len(hashes),
        sample=dict(list(hashes.items())[:5]),
        k1=12.0,
        b=1.0,
        semantic_weight=4.0,
        verifier=verifier,
        queries=10,
        seed=1,
        pseudo_default=0.5,
        pseudo_chosen=0.6,
        applied=applied,
        tuned_at="2026-12-02T00:00:00+00:00",
        seconds=1.0,
    )
    save_profile(col.paths, profile)
    return profile


def run_graph(job_id: str, config: JobConfig) -> dict:
    return run_search_graph(job_id, "selfish", "graph neural networks for molecules", config)


@pytest.fixture()
def rt(col: Collection) -> Iterator[NodeRuntime]:
    runtime = NodeRuntime(col.paths.root.parent.parent)
    configure_runtime(runtime)
    yield runtime
    configure_runtime(None)


def test_a_job_with_profile_self_searches_at_its_setting_and_names_it(col: Collection, rt: NodeRuntime) -> None:
    hand_profile(col, applied=False)
    state = run_graph("self-job", JobConfig(max_rounds=1, profile="self"))
    assert state["profile"] == {
        "name": "self",
        "k1": 12.0,
        "b": 1.0,
        "semantic_weight": 4.0,
        "tuned_at": "2026-12-02T00:00:00+00:00",
    }
    lexical = next(s for s in state["searches"] if s["channel"] == "lexical")
    stored = rt.tools(state).ranking(lexical["search_id"])
    assert stored is not None
    tuned = col.lucene.ranking(stored.query, 1000, k1=12.0, b=1.0)
    default = col.lucene.ranking(stored.query, 1000)
    assert (stored.docids, stored.scores) == (tuple(tuned[0]), tuple(tuned[1]))
    assert tuple(default[1]) != tuple(tuned[1]), "the two settings must score differently"
    semantic = [s for s in state["searches"] if s["channel"] == "semantic"]
    assert all(s["weight"] == 4 * lexical["weight"] for s in semantic)
    assert rt.manifest(state, "rule")["profile"]["name"] == "self"
    assert rt.jobs.load_draft("self-job")["ranker"] != "self-selfish (self-tuned)"  # no verifier of its own


def test_a_profile_verifier_orders_the_answer_and_is_named(col: Collection, rt: NodeRuntime) -> None:
    weights = {"lex0_rrf": 1.0}  # the intent's own BM25 rank alone
    own = asdict(Verifier("self-selfish", tuple(weights), (0.0,), (1.0,), tuple(weights.values()), 0.0))
    hand_profile(col, applied=True, verifier=own)
    state = run_graph("own-verifier", JobConfig(max_rounds=1))
    assert state["profile"]["verifier"]["name"] == "self-selfish"
    draft = rt.jobs.load_draft("own-verifier")
    assert draft["ranker"] == "self-selfish (self-tuned)"
    assert "verifier" not in rt.manifest(state, draft["ranker"])["profile"]
    off = run_graph("own-verifier-off", JobConfig(max_rounds=1, verifier=False))
    assert rt.jobs.load_draft("own-verifier-off")["ranker"] == HEURISTIC_ORDER and off["profile"]["name"] == "self"


def test_auto_uses_the_profile_only_once_applied(col: Collection, rt: NodeRuntime) -> None:
    hand_profile(col, applied=False)
    assert run_graph("auto-unapplied", JobConfig(max_rounds=1))["profile"] == {"name": "default"}
    hand_profile(col, applied=True)
    assert run_graph("auto-applied", JobConfig(max_rounds=1))["profile"]["name"] == "self"
    assert run_graph("forced-default", JobConfig(max_rounds=1, profile="default"))["profile"] == {"name": "default"}


def test_profile_self_without_a_profile_is_refused_before_the_job(col: Collection) -> None:
    with pytest.raises(QuarryError) as err:
        resolve_profile(col.name, "self", None)
    assert err.value.code == "no_profile" and "quarry tune selfish --self" in err.value.hint
    home = str(col.paths.root.parent.parent)
    shown = CliRunner().invoke(app, ["--home", home, "run", "selfish", "graph networks", "--profile", "self"])
    assert shown.exit_code != 0 and "no self-tuned profile" in shown.output and "Traceback" not in shown.output
    bad = CliRunner().invoke(app, ["--home", home, "run", "selfish", "graph networks", "--profile", "best"])
    assert bad.exit_code != 0 and "auto, self, default" in bad.output


# -- judgements kept and distilled --------------------------------------------------------------


def test_judged_queries_prefer_a_users_mark_to_the_models_mean() -> None:
    rows = [
        Judgement("j1", "federated learning", "a", "model", 0.9, "m"),
        Judgement("j2", "federated learning", "a", "model", 0.3, "m"),  # mean 0.6: relevant
        Judgement("j1", "federated learning", "b", "model", 0.9, "m"),
        Judgement("j1", "federated learning", "b", "user", 0.0),  # the user says not
        Judgement("j1", "federated learning", "c", "model", 0.2, "m"),
        Judgement("j3", "graph networks", "d", "model", 0.1, "m"),  # nothing relevant: no query
    ]
    made = from_judgements(rows)
    assert [(q.kind, q.text, q.relevant) for q in made] == [("judged", "federated learning", ("a",))]


def test_marks_reach_the_tuner_and_unknown_documents_are_refused(
    col: Collection, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = col.paths.root.parent.parent
    JobStore(home / "jobs.sqlite").create(
        "job-1", col.name, "federated learning hospitals", workflow_id="w", trace_id=None
    )
    runner = CliRunner()
    ok = runner.invoke(app, ["--home", str(home), "job", "mark", "job-1", "fl01", "relevant"])
    assert ok.exit_code == 0 and "quarry tune selfish --self" in ok.stdout
    assert runner.invoke(app, ["--home", str(home), "job", "mark", "job-1", "fl02", "not"]).exit_code == 0
    bad = runner.invoke(app, ["--home", str(home), "job", "mark", "job-1", "nosuchdoc", "relevant"])
    assert bad.exit_code != 0 and "not a document" in bad.output and "Traceback" not in bad.output
    odd = runner.invoke(app, ["--home", str(home), "job", "mark", "job-1", "fl01", "maybe"])
    assert odd.exit_code != 0 and "relevant or not" in odd.output
    gone = runner.invoke(app, ["--home", str(home), "job", "mark", "no-such-job", "fl01", "relevant"])
    assert gone.exit_code != 0 and "no job" in gone.output
    stored = JudgementStore(judgements_path(col.paths)).all()
    assert [(j.docid, j.source, j.relevance) for j in stored] == [("fl01", "user", 1.0), ("fl02", "user", 0.0)]
    few = self_tune(col, queries=20, seed=3, **GRID).profile
    assert few.kinds["judged"].queries == 1 and few.kept_defaults, "one judged query is too few to choose on"
    assert (few.k1, few.b) == (0.9, 0.4) and f"fewer than {MIN_CHOOSING_QUERIES} judged queries" in few.brief()
    monkeypatch.setattr("tuning.self_tuning.MIN_CHOOSING_QUERIES", 1)
    p = self_tune(col, queries=20, seed=3, **GRID).profile
    assert p.kinds["judged"].queries == 1 and p.queries == 21 and p.chosen_on == ("judged",)
    assert (p.k1, p.b) == (p.kinds["judged"].k1, p.kinds["judged"].b)  # the marks chose the setting


def test_ingest_and_add_can_self_tune_after_the_change(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tuning.self_verifier.fit_self_verifier", lambda *a, **k: (None, {}))  # tested above
    home = str(tmp_path / "home")
    runner = CliRunner()
    src = judged_source(tmp_path / "src")
    done = runner.invoke(app, ["--home", home, "ingest", str(src), "--name", "tuned", "--self-tune", "--json"])
    assert done.exit_code == 0, done.output
    shown = json.loads(done.stdout.strip().splitlines()[-1])["self_profile"]
    col = Collection("tuned", home=tmp_path / "home")
    stored = read_profile(col.paths, "tuned")
    assert stored is not None and stored.applied and (shown["k1"], shown["b"]) == (stored.k1, stored.b)
    assert (col.lucene.meta.k1, col.lucene.meta.b) == (stored.k1, stored.b)
    note = tmp_path / "note.md"
    note.write_text("# Federated learning across hospitals\n\nHospitals train one model without sharing scans.\n")
    monkeypatch.setenv("QUARRY_SELF_TUNE", "1")  # the setting: every change is followed by a tuning
    added = runner.invoke(app, ["--home", home, "add", "tuned", str(note)])
    assert added.exit_code == 0 and "self-tuned" in added.stdout and "applied" in added.stdout
    again = read_profile(Collection("tuned", home=tmp_path / "home").paths, "tuned")
    assert again is not None and again.document_count == stored.document_count + 1
    refused = runner.invoke(app, ["--home", home, "ingest", str(src), "--name", "x", "--self-tune", "--no-index"])
    assert refused.exit_code != 0 and "--self-tune needs the BM25 index" in refused.output
