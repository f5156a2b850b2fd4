"""Navigator node: intent → plan (checklist, constraints) and the first round's queries."""

from __future__ import annotations

from nodes.evidence.planning import parse_authors, parse_venue
from nodes.job.runtime import runtime
from nodes.job.state import JobState, model_step_update
from nodes.policy.seam import PlanRequest
from stores.records import last_name

# The user's own words count double in the fusion, so later feedback queries add and reorder
# documents without drowning the intent (CACM, BM25 + RM3-style feedback: weight 1 → nDCG@20
# 0.482, 2 → 0.484, 4 → 0.477, feedback ranking alone 0.451; BM25 0.477).
USER_WORDS_WEIGHT = 2.0


def _with_metadata_constraints(plan: dict, intent: str, corpus) -> dict:
    """Author and venue constraints, kept only when the store knows that author or venue."""
    names, exclusive = parse_authors(intent)
    found = corpus.docs_by_author([last_name(n) for n in names]) if names else {}
    authors = [last_name(n) for n in names if found.get(last_name(n))]
    venue = parse_venue(intent)
    venues = {v.lower(): v for v in corpus.venues()} if venue else {}
    venue = venues.get(venue.lower()) if venue else None
    if not authors and not venue:
        return plan
    checklist = list(plan.get("checklist", []))
    if authors:
        checklist.append({"id": "a", "kind": "metadata", "text": "by " + " or ".join(names), "weight": 0.0})
    if venue:
        checklist.append({"id": "v", "kind": "metadata", "text": f"published in {venue}", "weight": 0.0})
    return {
        **plan,
        "checklist": checklist,
        "authors": authors,
        "authors_exclusive": exclusive and bool(authors),
        "venue": venue,
    }


def navigator(state: JobState) -> dict:
    rt = runtime()
    policy = rt.policy(state)
    channels = rt.channels(state)
    notes = [s["text"] for s in state.get("steering", [])]
    corpus = rt.collection(state).corpus
    years_known = corpus.year_span() is not None
    decision = policy.plan(PlanRequest(state["intent"], tuple(notes), years_known))
    # Round one asks every query channel the collection offers with the user's own words; a
    # self-tuned profile sets the semantic channel's weight against the lexical one's.
    profile = rt.search_profile(state)
    weights = {"lexical": USER_WORDS_WEIGHT, "semantic": USER_WORDS_WEIGHT * (profile.get("semantic_weight") or 1.0)}
    queries = [
        {"text": t, "channel": ch, "weight": weights[ch]}
        for t in decision.queries
        for ch in ("lexical", "semantic")
        if ch in channels
    ]
    plan = _with_metadata_constraints({**decision.plan, "years_known": years_known}, state["intent"], corpus)
    if plan.get("authors"):
        # Author names are metadata, not indexed text: ask the store for their papers directly.
        queries.append({"text": "", "channel": "metadata", "weight": USER_WORDS_WEIGHT, "authors": plan["authors"]})
    return {
        "plan": plan,
        "queries": queries,
        "round": 1,
        "node": "navigator",
        "collection_version": rt.collection(state).version,
        "profile": profile,
        **model_step_update(state, "navigator", decision.usage, decision.fallback),
    }
