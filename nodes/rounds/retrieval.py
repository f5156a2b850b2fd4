"""Retrieval node: run the round's queries through the tools, channel by channel, and pool.

Channels: `lexical` (BM25 via the `search` tool), `semantic` (MiniLM chunks via `search` with
channel="semantic"; without a dense index MiniLM re-scores only the lexical channel's top
candidates, nodes.rounds.semantic_filter, and the search's label says so) and `citations` (citation
expansion from seed documents). Every ranking's top `pool_depth` (nodes.job.config) enters the pool, fused by
weighted Reciprocal Rank Fusion (k=60); deep rankings stay in the job store behind search_ids.
"""

from __future__ import annotations

from typing import Any

from nodes.job.config import config_of
from nodes.job.pool import load_pool, store_pool
from nodes.job.runtime import runtime
from nodes.job.state import Candidate, JobState, bump
from nodes.ranking.fusion import rrf_score
from nodes.rounds.semantic_filter import FilteredSemantic
from nodes.tools.results import SearchPage, ToolError


def as_query(q: Any) -> dict[str, Any]:
    """Queries in state are plain strings (lexical) or dicts with channel, weight and seeds."""
    if isinstance(q, str):
        return {"text": q, "channel": "lexical", "weight": 1.0}
    return {"channel": "lexical", "weight": 1.0, **q}


def query_label(q: dict[str, Any], filtered: int | None = None) -> str:
    """A query as a person reads it: feedback queries repeat words to weight them (Anserini counts
    repeats), which the label leaves out; citation and metadata channels say what they did, and a
    semantic search without a dense index says it ranked only the top `filtered` lexical hits."""
    if q["channel"] == "citations":
        return "citations of " + ", ".join(q.get("seeds", [])[:5])
    if q["channel"] == "metadata":
        return "papers by " + " or ".join(q.get("authors", []))
    words = " ".join(dict.fromkeys(q.get("text", "").split()))
    if q["channel"] != "semantic":
        return words
    return words + (f" (semantic, filtered to the top {filtered} lexical candidates)" if filtered else " (semantic)")


def query_key(q: dict[str, Any]) -> str:
    return f"{q['channel']}|{q.get('text', '')}|{','.join(q.get('seeds', []) or q.get('authors', []))}"


def _rank_map(tools, search_id: str) -> dict[str, int]:
    ranking = tools.ranking(search_id)
    return {d: r for r, d in enumerate(ranking.docids, start=1)} if ranking else {}


def retrieval(state: JobState) -> dict:
    rt = runtime()
    tools = rt.tools(state)
    cfg = config_of(state)
    round_no = state.get("round", 1)
    candidates: dict[str, Candidate] = load_pool(rt.jobs, state)
    searches = list(state.get("searches", []))
    previewed = list(state.get("previewed", []))
    seen_preview = set(previewed)
    done = {s.get("key", s["query"]) for s in searches}
    n_search = n_cite = 0
    citation_ranks: dict[str, dict[str, int]] = {}
    semantic = tools.session.semantic
    filtered = semantic.candidates if isinstance(semantic, FilteredSemantic) else None
    if isinstance(semantic, FilteredSemantic):
        semantic.batch = cfg.semantic_batch  # embedded in batches, a stop checked between them
    for q in map(as_query, state.get("queries", [])):
        key = query_key(q)
        if key in done:
            continue
        done.add(key)
        entry = _entry(q, key, round_no, filtered)
        if q["channel"] == "metadata":
            ranked = tools.find_by_metadata(
                f"round {round_no}: documents by the requested authors", q.get("authors", [])
            )
            entry |= {"search_id": f"m{round_no}", "total": len(ranked), "authors": q.get("authors", [])}
        elif q["channel"] == "citations":
            n_cite += 1
            hits = tools.expand_seeds(
                f"round {round_no}: neighbours of the best-verified documents", q.get("seeds", []), cfg.citation_pool
            )
            ranked = [d for d, _ in hits]
            entry |= {"search_id": f"c{round_no}.{n_cite}", "total": len(ranked), "seeds": q.get("seeds", [])}
        else:
            n_search += 1
            page = tools.search(f"round {round_no}: planned {q['channel']} query", q["text"], q["channel"])
            if isinstance(page, ToolError) or not isinstance(page, SearchPage):
                searches.append(entry | {"search_id": "", "total": 0, "error": getattr(page, "code", "error")})
                continue
            entry |= _searched(page, q, entry, semantic)
            previewed.extend(h.docid for h in page.hits if h.docid not in seen_preview)
            seen_preview.update(h.docid for h in page.hits)
            ranking = tools.ranking(page.search_id)
            ranked = list(ranking.docids[: cfg.pool_depth]) if ranking else []
        searches.append(entry)
        for docid in ranked:
            candidates.setdefault(docid, Candidate(docid=docid, ranks={}, fused=0.0, score=0.0))
        if q["channel"] in ("citations", "metadata"):
            citation_ranks[entry["search_id"]] = {d: r for r, d in enumerate(ranked, start=1)}
    _fuse(tools, searches, candidates, citation_ranks)
    return {
        **store_pool(rt.jobs, state, candidates),
        "searches": searches,
        "previewed": previewed,
        "queries": [],
        "stats": bump(state.get("stats", {}), tool_calls=tools.calls, searches=n_search, citations=n_cite),
        "node": "retrieval",
    }


def _entry(q: dict[str, Any], key: str, round_no: int, filtered: int | None) -> dict[str, Any]:
    """A query's record in `searches`, before it has run."""
    entry = {
        "query": q.get("text", ""),
        "channel": q["channel"],
        "weight": q["weight"],
        "round": round_no,
        "key": key,
        "label": query_label(q, filtered if q["channel"] == "semantic" else None),
    }
    if q["channel"] == "semantic" and filtered:
        entry["filtered_to"] = filtered  # the semantic ranking covers only this many BM25 hits
    return entry


def _searched(page: SearchPage, q: dict[str, Any], entry: dict[str, Any], semantic: Any) -> dict[str, Any]:
    """What a search adds to its record: its search_id and total, and whether a stop cut it short."""
    added: dict[str, Any] = {"search_id": page.search_id, "total": page.total}
    run = semantic.last if q["channel"] == "semantic" and isinstance(semantic, FilteredSemantic) else None
    if run is not None and run.stopped:  # a stop or the deadline cut the embedding short: say so
        added |= {
            "partial": run.partial_note(),
            "stopped": run.stopped,
            "label": entry["label"] + f" (partial: {run.scored} of {run.candidates} re-scored)",
        }
    return added


def _fuse(
    tools: Any, searches: list[dict], candidates: dict[str, Candidate], citation_ranks: dict[str, dict[str, int]]
) -> None:
    """Each candidate's ranks and fused score. Fused with each ranking's full depth, not just its
    pooled top: a document at rank 30 in one ranking and 150 in another must get credit from
    both, exactly as plain RRF would."""
    weights = {x["search_id"]: x.get("weight", 1.0) for x in searches if x.get("search_id")}
    # Rankings behind a search_id ("s…") are reloaded at full depth; citation ("c…") and metadata
    # ("m…") lists are short and live in the candidates' ranks.
    deep = {sid: _rank_map(tools, sid) for sid in weights if sid.startswith("s")}
    deep |= citation_ranks | {
        sid: {d: r for d, r in ((c["docid"], c.get("ranks", {}).get(sid)) for c in candidates.values()) if r}
        for sid in weights
        if not sid.startswith("s") and sid not in citation_ranks
    }
    for cand in candidates.values():
        ranks = {sid: rm[cand["docid"]] for sid, rm in deep.items() if cand["docid"] in rm}
        cand["ranks"] = ranks
        cand["fused"] = round(rrf_score(ranks, weights), 8)
