"""The citation channel: a networkx graph of a collection's `citations.tsv` links (citing → cited).

Every relation returns plain `(docid, score)` tuples sorted by `(-score, docid)`, without the
seed document(s), cut to `limit` (None = all). Only documents with at least one link are nodes;
a corpus without citations gives an empty graph on which every relation returns `[]`.

This module holds graph primitives only. How they are combined into one ranking — the
expansion formula, its weights and the PageRank damping — is ranking policy and lives in
`nodes.ranking.citation_expansion`.

The graph is built on first use, not when the object is made, and `CitationGraph.from_store`
shares one graph per corpus database version (path + fingerprint), so neither a new
`Collection` object nor a new tool session rebuilds it.
"""

from __future__ import annotations

import math
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import ClassVar, Protocol

import networkx as nx

__all__ = ["CitationGraph", "Scored", "ranked", "seed_ids", "seed_weights"]

_DIGITS = 10  # scores are rounded so that float noise cannot beat the docid tie-break
_CACHE_SIZE = 8

Scored = list[tuple[str, float]]


class CitationSource(Protocol):
    """What a graph is built from: a corpus store (`stores.corpus.CorpusStore`) or a stand-in."""

    def citations(self) -> list[tuple[str, str]]: ...


def ranked(scores: Mapping[str, float], exclude: Iterable[str], limit: int | None) -> Scored:
    """`scores` as the relations return them: rounded, sorted by `(-score, docid)`, without
    `exclude`, cut to `limit` (None = all)."""
    skip = set(exclude)
    out = sorted(
        ((d, round(float(s), _DIGITS)) for d, s in scores.items() if d not in skip),
        key=lambda item: (-item[1], item[0]),
    )
    return out if limit is None else out[: max(int(limit), 0)]


def seed_weights(seeds: list[str] | tuple[str, ...] | Mapping[str, float]) -> dict[str, float]:
    """Seeds as positive weights: a list weighs each seed 1; non-positive or non-numeric weights are dropped."""
    if isinstance(seeds, Mapping):
        out = {}
        for d, w in seeds.items():
            try:
                w = float(w)
            except (TypeError, ValueError):
                continue
            if w > 0 and math.isfinite(w):
                out[str(d)] = w
        return out
    return {str(d): 1.0 for d in seeds}


def seed_ids(seeds: list[str] | tuple[str, ...] | Mapping[str, float]) -> set[str]:
    """Every seed named, whatever its weight: none of them is ever returned."""
    return {str(d) for d in seeds}


class CitationGraph:
    """Citation relations of one collection over a directed graph, edge citing → cited."""

    _cache: ClassVar[OrderedDict[tuple[str, str], CitationGraph]] = OrderedDict()
    _cache_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, load: Callable[[], Iterable[tuple[str, str]]]) -> None:
        self._load = load
        self._lock = threading.Lock()
        self._graph: nx.DiGraph | None = None
        self._undirected: nx.Graph | None = None

    @classmethod
    def from_edges(cls, edges: Iterable[tuple[str, str]]) -> CitationGraph:
        edges = list(edges)
        return cls(lambda: edges)

    @classmethod
    def from_store(cls, store: CitationSource) -> CitationGraph:
        """The shared (lazily built) graph of a corpus store, keyed by its path and fingerprint."""
        path, fingerprint = getattr(store, "path", None), getattr(store, "fingerprint", None)
        if path is None or fingerprint is None:
            return cls(store.citations)
        key = (str(path), str(fingerprint))
        with cls._cache_lock:
            graph = cls._cache.get(key)
            if graph is None:
                graph = cls._cache[key] = cls(store.citations)
            cls._cache.move_to_end(key)
            while len(cls._cache) > _CACHE_SIZE:
                cls._cache.popitem(last=False)
            return graph

    # -- the graph -----------------------------------------------------------------------------

    @property
    def graph(self) -> nx.DiGraph:
        if self._graph is None:
            with self._lock:
                if self._graph is None:
                    g = nx.DiGraph()
                    g.add_edges_from((str(a), str(b)) for a, b in self._load() if a != b)
                    self._undirected = g.to_undirected(as_view=False)
                    self._graph = g
        return self._graph

    @property
    def undirected(self) -> nx.Graph:
        _ = self.graph  # builds the undirected copy too
        assert self._undirected is not None
        return self._undirected

    def __len__(self) -> int:
        return self.graph.number_of_nodes()

    def has(self, docid: str) -> bool:
        """Whether `docid` has at least one citation link (cites or is cited)."""
        try:
            return docid in self.graph
        except TypeError:  # unhashable
            return False

    def degree(self, docid: str) -> int:
        """Number of links (references + citing papers); 0 for unknown documents."""
        return int(self.graph.degree(docid)) if self.has(docid) else 0

    # -- relations -----------------------------------------------------------------------------

    def linked(self, docid: str) -> set[str]:
        """The documents `docid` cites or is cited by (unscored); empty for unknown documents."""
        if not self.has(docid):
            return set()
        return set(self.graph.successors(docid)) | set(self.graph.predecessors(docid))

    def references(self, docid: str, limit: int | None = None) -> Scored:
        """The documents `docid` cites, each scored 1.0."""
        if not self.has(docid):
            return []
        return ranked(dict.fromkeys(self.graph.successors(docid), 1.0), [docid], limit)

    def cited_by(self, docid: str, limit: int | None = None) -> Scored:
        """The documents citing `docid`, each scored 1.0."""
        if not self.has(docid):
            return []
        return ranked(dict.fromkeys(self.graph.predecessors(docid), 1.0), [docid], limit)

    def co_cited(self, docid: str, limit: int | None = None, *, normalize: bool = False) -> Scored:
        """Documents cited together with `docid`: score = number of papers citing both.

        With `normalize`, the count is divided by sqrt(in-degree(docid) · in-degree(other))
        (Salton's cosine), so documents that are cited everywhere do not dominate.
        """
        if not self.has(docid):
            return []
        g = self.graph
        counts = Counter(other for citing in g.predecessors(docid) for other in g.successors(citing))
        return ranked(self._maybe_cosine(counts, docid, g.in_degree) if normalize else counts, [docid], limit)

    def coupled(self, docid: str, limit: int | None = None, *, normalize: bool = False) -> Scored:
        """Bibliographic coupling: documents sharing references with `docid`, score = shared references.

        With `normalize`, divided by sqrt(out-degree(docid) · out-degree(other)).
        """
        if not self.has(docid):
            return []
        g = self.graph
        counts = Counter(other for ref in g.successors(docid) for other in g.predecessors(ref))
        return ranked(self._maybe_cosine(counts, docid, g.out_degree) if normalize else counts, [docid], limit)

    @staticmethod
    def _maybe_cosine(counts: Mapping[str, int], docid: str, deg) -> dict[str, float]:
        own = deg(docid)
        return {d: c / math.sqrt(own * deg(d)) for d, c in counts.items()}

    def ppr_scores(self, seeds: list[str] | Mapping[str, float], alpha: float) -> dict[str, float]:
        """Personalised PageRank of every node (seeds included) with damping `alpha`; {} when no
        seed is in the graph. Seeds are a list (each weighs 1) or docid → weight.

        The walk runs on the *undirected* view: citations point back in time, so a directed walk
        from a seed could only reach older work and would drain into papers whose references are
        outside the corpus; relatedness runs both ways (a paper's references and its citers are
        both its neighbourhood). Only the seeds' connected components can receive mass, so the
        walk runs on those components alone (same scores, less work).
        """
        weights = {d: w for d, w in seed_weights(seeds).items() if self.has(d)}
        if not weights:
            return {}
        und = self.undirected
        nodes: set[str] = set()
        for d in weights:
            if d not in nodes:
                nodes |= nx.node_connected_component(und, d)
        sub = und.subgraph(nodes)
        return nx.pagerank(sub, alpha=alpha, personalization=weights, max_iter=200, tol=1e-10)

    def ppr(self, seeds: list[str] | Mapping[str, float], limit: int | None = None, *, alpha: float) -> Scored:
        """Personalised PageRank from `seeds` (a list, or docid → weight); seeds not in the graph
        are ignored, and the result is empty if none is. Scores over all nodes, seeds included,
        sum to 1; the seeds themselves are not returned. The damping `alpha` is ranking policy, so
        the caller passes it (`nodes.ranking.citation_expansion.ppr`)."""
        scores = self.ppr_scores(seeds, alpha)
        return ranked(scores, seed_ids(seeds), limit)
