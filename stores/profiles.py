"""A collection's self-tuned profile: the settings `quarry tune NAME --self` chose on its own documents.

The profile lives beside the collection's versions (`runs/self-profile.json`), with the pseudo-queries
it was tuned on (`runs/pseudo-queries.json`), so a new version keeps it. What it was tuned on is
recorded as a documents-only signature plus the content hash of a sample of documents (the
pseudo-queries' sources): a new version with the same documents (queries or qrels added) finds the
signature equal and uses the profile as it is; one whose documents changed estimates how many
did from the sample and marks the profile stale from `STALE_SHARE` on (jobs then fall back to the
defaults and `quarry collections` says to tune again). A tune without `--apply` never replaces a
profile that is applied and in use: its result is kept beside it as a candidate
(`runs/self-profile-candidate.json`), which no job reads. This module only keeps the numbers: the
choice is `tuning.self_tuning`'s, the use is the job's and the evaluation's.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from stores.atomic import write_atomic
from stores.errors import QuarryError
from stores.home import CollectionPaths

PROFILE_FILE = "self-profile.json"
CANDIDATE_FILE = "self-profile-candidate.json"
PSEUDO_QUERIES_FILE = "pseudo-queries.json"
STALE_SHARE = 0.1  # from this share of changed documents on, a profile is stale


def documents_signature(hashes: dict[str, str]) -> str:
    """One hash of every (docid, content hash): equal exactly when the documents are."""
    h = hashlib.sha256()
    for docid in sorted(hashes):
        h.update(f"{docid}\t{hashes[docid]}\n".encode())
    return h.hexdigest()


class KindChoice(BaseModel):
    """What one kind of pseudo-query alone would choose, and how it scored (reported, not used)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    queries: int
    k1: float
    b: float
    semantic_weight: float | None = None
    ndcg_default: float  # nDCG@20 of BM25 at the index's default setting on these pseudo-queries
    ndcg_chosen: float  # … at this kind's own best setting


class SelfProfile(BaseModel):
    """Settings chosen without relevance judgements, and what they were chosen on."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal[1] = 1
    collection: str
    documents: str  # documents_signature at tuning time
    document_count: int
    sample: dict[str, str]  # docid -> content hash of the pseudo-queries' source documents
    k1: float
    b: float
    # Relative RRF weights of the lexical and semantic channels for the intent's words (hybrid, and
    # a job's first round); None when the collection had no dense index to tune them on.
    semantic_weight: float | None = None
    # A verifier (nodes.ranking.ranker.Verifier as a dict) fitted on the agent's candidates for the
    # pseudo-queries, and the objective of the agent's heuristic order and of it on them; None when
    # it did not beat that order there (or was not fitted).
    verifier: dict[str, Any] | None = None
    verifier_pseudo: dict[str, float] = Field(default_factory=dict)
    queries: int
    seed: int
    kinds: dict[str, KindChoice] = Field(default_factory=dict)
    # The kind of query that chose the settings: ("judged",) (tuning.pseudo_queries.CHOOSING_KINDS),
    # else ("cloze",) for k1/b alone (tuning.cloze_queries); empty when neither could and the
    # defaults were kept; None in a profile from before these rules (all kinds chose).
    chosen_on: tuple[str, ...] | None = None
    min_judged: int = 0  # judged queries the tuner needed before they choose (0: any, in older profiles)
    objective: str = "ndcg@20"
    pseudo_default: float  # the objective on all pseudo-queries at the defaults
    pseudo_chosen: float  # … with the chosen settings
    applied: bool = False
    tuned_at: str
    seconds: float

    @property
    def kept_defaults(self) -> bool:
        """Whether nothing chose: too few judged and cloze queries, so the defaults stand."""
        return self.chosen_on == ()

    def brief(self) -> str:
        """One line for listings: `k1 0.9 b 0.4 · semantic ×2`."""
        if self.kept_defaults:
            enough = f"fewer than {self.min_judged}" if self.min_judged > 1 else "no"
            return (
                f"defaults kept (k1 {self.k1:g} b {self.b:g}: {enough} judged queries to tune on yet, "
                "and too few documents with running text for cloze queries)"
            )
        sem = "" if self.semantic_weight is None else f" · semantic ×{self.semantic_weight:g}"
        return f"k1 {self.k1:g} b {self.b:g}{sem}" + (" · own verifier" if self.verifier else "")


@dataclass(frozen=True, slots=True)
class ProfileStatus:
    """A stored profile as it stands for the collection's current documents."""

    profile: SelfProfile
    changed_share: float  # estimated share of documents changed since tuning (0: the same documents)

    @property
    def stale(self) -> bool:
        return self.changed_share >= STALE_SHARE

    def describe(self) -> str:
        if self.changed_share == 0:
            state = "applied" if self.profile.applied else "not applied"
        elif self.stale:
            state = f"stale: ~{self.changed_share:.0%} of documents changed"
        else:
            state = f"carried over, ~{self.changed_share:.0%} of documents changed"
        return f"{self.profile.brief()} ({state})"


def profile_path(paths: CollectionPaths) -> Path:
    return paths.runs_dir / PROFILE_FILE


def candidate_path(paths: CollectionPaths) -> Path:
    return paths.runs_dir / CANDIDATE_FILE


def pseudo_queries_path(paths: CollectionPaths) -> Path:
    return paths.runs_dir / PSEUDO_QUERIES_FILE


def save_profile(paths: CollectionPaths, profile: SelfProfile, *, candidate: bool = False) -> Path:
    """Store the collection's profile, or with `candidate` a candidate beside it (see the module doc)."""
    path = candidate_path(paths) if candidate else profile_path(paths)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, profile.model_dump_json(indent=1))
    return path


def save_pseudo_queries(paths: CollectionPaths, payload: dict) -> Path:
    """The pseudo-queries a profile was tuned on, kept for inspection (`quarry tune --self` names the file)."""
    path = pseudo_queries_path(paths)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(payload, indent=1, ensure_ascii=False))
    return path


def read_profile(paths: CollectionPaths, name: str) -> SelfProfile | None:
    """The stored profile, None when there is none; an unreadable file is a clear error."""
    path = profile_path(paths)
    if not path.is_file():
        return None
    try:
        return SelfProfile.model_validate_json(path.read_bytes())
    except (OSError, ValidationError, ValueError) as exc:
        raise QuarryError(
            "bad_profile",
            f"the self-tuned profile of {name!r} ({path}) is unreadable ({type(exc).__name__})",
            f"tune it again: quarry tune {name} --self",
        ) from exc


def profile_status(paths: CollectionPaths, name: str, hashes: dict[str, str]) -> ProfileStatus | None:
    """The stored profile against the current documents (`hashes`: docid → content hash)."""
    profile = read_profile(paths, name)
    if profile is None:
        return None
    if documents_signature(hashes) == profile.documents:
        return ProfileStatus(profile, 0.0)
    changed = sum(hashes.get(d) != h for d, h in profile.sample.items()) / max(len(profile.sample), 1)
    grown = abs(len(hashes) - profile.document_count) / max(profile.document_count, 1)
    # A changed signature means something changed, so the estimate is never 0.
    return ProfileStatus(profile, max(changed, grown, 1.0 / max(len(hashes), 1)))


__all__ = [
    "CANDIDATE_FILE",
    "PROFILE_FILE",
    "PSEUDO_QUERIES_FILE",
    "STALE_SHARE",
    "KindChoice",
    "ProfileStatus",
    "SelfProfile",
    "candidate_path",
    "documents_signature",
    "profile_path",
    "profile_status",
    "pseudo_queries_path",
    "read_profile",
    "save_profile",
    "save_pseudo_queries",
]
