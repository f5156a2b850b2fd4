"""What nodes may touch: stores and tools through one narrow runtime, configured by the worker.

Nodes never open files; they ask the runtime for a collection's corpus, the job's tools (whose
rankings persist in the job store so a retried or resumed node sees the same search_ids) and
the policy. Tool calls go through `JobTools` (`nodes.job.traced_tools`), which traces each one as an
OpenTelemetry span.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from nodes.job.config import JobConfig, ModelSettings, config_of
from nodes.job.profile_choice import DEFAULT_PROFILE, resolve_profile
from nodes.job.state import JobState
from nodes.job.traced_tools import JobTools, StoredRankingCache
from nodes.llm.models import ModelFactory, make_chat_model
from nodes.policy.registry import spec_of
from nodes.policy.seam import Policy
from nodes.rounds.semantic_filter import FilteredSemantic
from nodes.tools.bm25_setting import FixedBM25
from nodes.tools.corpus import ToolSession
from stores.collection import Collection
from stores.embedder import model_available
from stores.errors import QuarryError
from stores.home import collection_paths, quarry_home
from stores.jobs import JobStore
from stores.judgements import Judgement, JudgementStore, judgements_path
from stores.profiles import ProfileStatus, profile_path, profile_status

# Words of a collection's first document that the worker searches for once before it polls.
WARM_QUERY_WORDS = 24

# A collection by name, or a job state naming it (and the version the job pinned).
CollectionRef = str | Mapping[str, Any]


class NodeRuntime:
    """Stores, tools, models and policies for the nodes of one worker (one QUARRY_HOME).

    `models` builds a chat model from `provider:name` and the job's model settings; it is
    `nodes.llm.models.make_chat_model` unless the worker is given another factory (tests use that to
    script a model). Built models are kept per (spec, settings) and shared by threads.
    """

    def __init__(self, home: Path | None = None, models: ModelFactory | None = None) -> None:
        self.home = home or quarry_home()
        self.jobs = JobStore(self.home / "jobs.sqlite")
        self.models: ModelFactory = models or make_chat_model
        self._collections: dict[tuple[str, str | None], Collection] = {}
        self._models: dict[tuple, Any] = {}
        self._profiles: dict[tuple[str, str | None, int], ProfileStatus | None] = {}
        self._lock = threading.Lock()

    def model(self, spec: str, settings: ModelSettings) -> Any:
        if not spec:
            raise QuarryError(
                "no_model",
                "this job's policy needs a model but none was given",
                "pass --model PROVIDER:NAME, e.g. --model openai:gpt-4o-mini",
            )
        key = (spec, tuple(sorted(asdict(settings).items())))
        with self._lock:
            if key not in self._models:
                self._models[key] = self.models(spec, settings)
            return self._models[key]

    def collection(self, where: CollectionRef) -> Collection:
        """A collection by name (its current version) or for a job's state (the version the job
        pinned when it started, so one job never mixes two versions). Writers never prune a
        version a running job pins (stores.versions); if it is gone all the same (removed by
        hand, or the job outlived its budget), the job is told so (`version_gone`) rather than
        moved silently to another version. A new version ingested while the worker runs is
        noticed here: the current version is read from disk on every call."""
        name, pinned = (
            (where, None) if isinstance(where, str) else (where["collection"], where.get("collection_version"))
        )
        version = collection_paths(name, self.home, pinned).version
        if pinned is not None and version != pinned:
            raise QuarryError(
                "version_gone",
                f"version {pinned} of collection {name!r}, which this job started "
                "on, no longer exists; its results would mix two versions",
                "start the job again on the current version: quarry job rerun JOB_ID",
            )
        key = (name, version)
        with self._lock:
            if key not in self._collections:
                col = Collection(name, self.home, version)
                _ = col.lucene  # fail early (missing or stale index) with a clear message
                # Older versions of this collection are not reopened by new jobs: drop them.
                for stale in [k for k in self._collections if k[0] == name and k != key and pinned is None]:
                    del self._collections[stale]
                self._collections[key] = col
            return self._collections[key]

    def warm(self) -> list[str]:
        """Open now what a job's first steps would otherwise pay for inside its budget: the JVM
        with each collection's Lucene searcher and one search on it (the JIT), the channels the
        planner asks for (Chroma's import), the MiniLM model when jobs would use it, the shipped
        verifier: ~10 s of a fresh worker's first CACM job (bench/bench_cold_start.py). Returns
        what was opened, for the worker's log; a collection that cannot be opened is left for
        its jobs to report."""
        from stores.embedder import embed_texts
        from stores.home import list_collections

        opened, semantic = [], False
        for name in list_collections(self.home):
            try:
                col = self.collection(name)
                first = next(col.corpus.iter_records(batch=1), None)
                if first is not None:  # a real search: the JIT, not only the searcher, is cold
                    words = " ".join(f"{first.title} {first.text}".split()[:WARM_QUERY_WORDS])
                    docids, _ = col.lucene.ranking(words)
                    col.lucene.score_documents(words, docids[:100])
                # The planner asks for them first (this imports Chroma when it is needed).
                semantic |= "semantic" in self.channels(name)
            except QuarryError:
                continue
            opened.append(name)
        if semantic:  # its queries (and the chunks it lacks) are embedded with MiniLM
            embed_texts(["warm up"])
            opened.append("MiniLM")
        if self.verifier() is not None:
            opened.append("verifier")
        return opened

    def search_profile(self, state: Mapping[str, Any]) -> dict[str, Any]:
        """The search settings of this job: `{"name": "default"}`, or the collection's self-tuned
        profile as `{"name": "self", "k1", "b", "semantic_weight", "tuned_at"}` (JobConfig.profile
        says which). The navigator keeps it in the job's state, so every step of a job searches
        alike even if the profile is tuned again meanwhile."""
        if state.get("profile"):
            return dict(state["profile"])
        choice = config_of(state).profile
        if choice == "default":
            return dict(DEFAULT_PROFILE)
        col = self.collection(state)
        return resolve_profile(col.name, choice, self._profile_status(col))

    def _profile_status(self, col: Collection) -> ProfileStatus | None:
        """The collection's profile status, re-read when the profile file changes (hashing the
        documents once per version and file, not once per job)."""
        path = profile_path(col.paths)
        try:
            stamp = path.stat().st_mtime_ns
        except OSError:
            return None
        key = (col.name, col.version, stamp)
        with self._lock:
            if key in self._profiles:
                return self._profiles[key]
        status = profile_status(col.paths, col.name, col.corpus.hashes())
        with self._lock:
            self._profiles[key] = status
        return status

    def lexical(self, state: Mapping[str, Any]) -> Any:
        """The BM25 searcher of this job: the index, at the profile's k1/b when it has its own."""
        col = self.collection(state)
        profile = self.search_profile(state)
        return FixedBM25(col.lucene, profile["k1"], profile["b"]) if "k1" in profile else col.lucene

    def tools(self, state: JobState) -> JobTools:
        col = self.collection(state)
        counter = iter(range(int(state.get("stats", {}).get("searches", 0)) + 1, 10**9))
        session = ToolSession(
            self.lexical(state),
            col.corpus,
            cache=StoredRankingCache(self.jobs, state["job_id"]),
            new_search_id=lambda: f"s{next(counter)}",
            citations=col.citations,
            semantic=self.semantic(state),
        )
        return JobTools(session, state["job_id"], self.jobs)

    def dense(self, where: CollectionRef):
        """The collection's semantic index if it is built and current, else None (lexical only)."""
        try:
            return self.collection(where).dense
        except QuarryError:
            return None

    def semantic(self, where: CollectionRef):
        """The semantic channel's searcher: the dense index when it is current, else MiniLM over
        the lexical candidates (`nodes.rounds.semantic_filter`, depth from the job's configuration), or
        None when that is switched off (`semantic_candidates=0`) or the model is not installed."""
        dense = self.dense(where)
        if dense is not None:
            return dense
        cfg = config_of(where) if isinstance(where, Mapping) else JobConfig()
        if cfg.semantic_candidates < 1 or not model_available():
            return None
        col = self.collection(where)
        return FilteredSemantic(
            self.lexical(where) if isinstance(where, Mapping) else col.lucene,
            col.corpus,
            col.chunk_vectors,
            candidates=cfg.semantic_candidates,
            chunks_per_doc=cfg.semantic_chunks,
        )

    def channels(self, where: CollectionRef) -> set[str]:
        """Which retrieval channels this collection offers (planners only ask for those)."""
        col = self.collection(where)
        out = {"lexical"}
        if self.semantic(where) is not None:
            out.add("semantic")
        if len(col.citations):
            out.add("citations")
        return out

    def similarity(self, where: CollectionRef):
        """`(text, docid) -> best cosine` against the document's chunk vectors, or None without
        a dense index (citation checking then relies on word coverage alone)."""
        dense = self.dense(where)
        if dense is None:
            return None

        def best_cosine(text: str, docid: str) -> float | None:
            vecs = dense.chunk_vectors([docid]).get(docid)
            if not vecs or not text.strip():
                return None
            query = dense.embed_query(text)
            return max(float(v @ query) for _, v in vecs)

        return best_cosine

    def verifier(self) -> Any:
        """The shipped learned verifier (nodes.ranking.ranker.Verifier), or None: then the heuristic order."""
        if not hasattr(self, "_verifier"):
            from nodes.ranking.ranker import Verifier
            from stores.verifier_file import load_verifier_file

            raw = load_verifier_file()
            try:
                self._verifier = Verifier.from_dict(raw) if raw else None
                self.verifier_version = f"{raw['name']}@{raw['sha256']}" if raw else None
            except (KeyError, ValueError, TypeError):
                self._verifier, self.verifier_version = None, None
        return self._verifier

    def record_judgements(self, state: Mapping[str, Any], judged: list[tuple[str, float, str]]) -> None:
        """Keep a job's model judgements `(docid, p, model)` with its collection (stores.judgements)."""
        if judged:
            col = self.collection(state)
            JudgementStore(judgements_path(col.paths)).record(
                Judgement(state["job_id"], state["intent"], docid, "model", p, model) for docid, p, model in judged
            )

    def verifier_for(self, state: Mapping[str, Any]) -> tuple[Any, str | None]:
        """The verifier that orders this job's answer and its name for the result: the one its
        self-tuned profile fitted on the collection's pseudo-queries, else the shipped one."""
        own = self.search_profile(state).get("verifier")
        if own:
            from nodes.ranking.ranker import Verifier

            try:
                verifier = Verifier.from_dict(own)
                return verifier, f"{verifier.name} (self-tuned)"
            except (KeyError, ValueError, TypeError):
                pass  # a profile from another feature set: the shipped verifier stands
        return self.verifier(), getattr(self, "verifier_version", None)

    def manifest(self, state: Mapping[str, Any], ranker: str) -> dict[str, Any]:
        """What the job's result was computed from: collection data and index parameters, code,
        policy, prompts and models (stores.manifest + nodes.job.manifest)."""
        from nodes.job.config import config_of
        from nodes.job.manifest import policy_manifest
        from stores.manifest import collection_manifest

        try:
            data = collection_manifest(self.collection(state))
        except QuarryError as err:  # the collection is gone: say so rather than fail the finish
            data = {"collection": state.get("collection"), "error": err.code}
        try:  # the settings it searched with; the profile's verifier is named by `ranker`
            profile = {k: v for k, v in self.search_profile(state).items() if k != "verifier"}
        except QuarryError as err:  # a profile required but gone before the first step: say so
            profile = {"name": config_of(state).profile, "error": err.code}
        return data | policy_manifest(spec_of(state), config_of(state), ranker) | {"profile": profile}

    def policy(self, state: Mapping[str, Any]) -> Policy:
        """The job's decision maker: the class its policy's spec names (`nodes.policy.registry`; the
        `react` graph makes its own decisions and uses the heuristic only to attach evidence)."""
        return spec_of(state).policy_class().for_job(self, state)


_runtime: NodeRuntime | None = None
_runtime_lock = threading.Lock()


def configure_runtime(runtime: NodeRuntime | None) -> None:
    global _runtime
    with _runtime_lock:
        _runtime = runtime


def runtime() -> NodeRuntime:
    global _runtime
    with _runtime_lock:
        if _runtime is None:
            _runtime = NodeRuntime()
        return _runtime
