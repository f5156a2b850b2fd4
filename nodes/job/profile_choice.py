"""Which search settings a job uses: the collection's self-tuned profile or the defaults.

One rule for the worker (NodeRuntime.search_profile, at a job's first step) and the command line
(`quarry run --profile self` is refused at once when there is no usable profile): `auto` takes
the profile when `quarry tune NAME --self --apply` made it the collection's default and it is not
stale; `self` requires a profile that is not stale, applied or not; `default` ignores it.
"""

from __future__ import annotations

from typing import Any

from stores.errors import QuarryError
from stores.profiles import ProfileStatus

DEFAULT_PROFILE: dict[str, Any] = {"name": "default"}


def resolve_profile(collection: str, choice: str, status: ProfileStatus | None) -> dict[str, Any]:
    """The settings as the job records them (state and manifest): `{"name": "default"}` or
    `{"name": "self", "k1", "b", "semantic_weight", "tuned_at"}` (and `verifier`, its weights, when
    the profile fitted one)."""
    if choice == "default":
        return dict(DEFAULT_PROFILE)
    usable = status is not None and not status.stale
    if choice == "self" and not usable:
        raise QuarryError(
            "no_profile" if status is None else "stale_profile",
            f"{collection!r} has no self-tuned profile"
            if status is None
            else f"the self-tuned profile of {collection!r} is stale ({status.describe()})",
            f"run: quarry tune {collection} --self (or drop --profile self)",
        )
    if status is None or not usable or (choice == "auto" and not status.profile.applied):
        return dict(DEFAULT_PROFILE)
    p = status.profile
    chosen = {"name": "self", "k1": p.k1, "b": p.b, "semantic_weight": p.semantic_weight, "tuned_at": p.tuned_at}
    return chosen | ({"verifier": p.verifier} if p.verifier else {})


__all__ = ["DEFAULT_PROFILE", "resolve_profile"]
