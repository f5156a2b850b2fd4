"""The one registry of policies: every place that behaves differently per policy reads its spec here.

A `PolicySpec` says everything the rest of Quarry needs to know about a policy — its name, the
graph it runs on, the class that makes its decisions, the function that builds its result, the
label of its final order, whether it calls models, which command-line options it takes — so no
module compares a policy's name (tests/test_policy_registry.py scans the sources for that).
Adding a policy is one new module (its `Policy` class, perhaps a result builder) and one
`register(PolicySpec(...))` here.

Where it lives, and why the spec names things instead of holding them: the layers import only
downwards (the floors of tests/import_graph.py: stores ← observability ← nodes ← graphs ← workflows ←
tuning ← the application ← evals ← the front doors), and every layer
needs the registry — `nodes.job.config` for validation, the nodes for the policy's decisions, `graphs`
to pick a graph, `workflows` and the command line to validate and render. So the registry is the
lowest module that can hold a policy's vocabulary: it is in `nodes/` (policies are nodes' business)
and imports nothing of Quarry at import time but `stores.errors` and `nodes.policy.code_ref` (which
imports nothing of Quarry). The parts that live higher or import heavily — the policy class
(LangChain for `llm`), the result builder (`nodes.rounds.answer`, `nodes.react.finish`), the order
label (`nodes.ranking.ranker`) — are named by a `CodeRef` (a module and an attribute, imported on
first use); the graph is a registered graph *name*, which `graphs.state` maps to its builder.
Nothing here is nondeterministic, so Temporal workflow code may import it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from nodes.policy.code_ref import CodeRef
from stores.errors import QuarryError

# The graphs a policy can run on (graphs.state maps each name to its builder).
SEARCH_GRAPH = "quarry-search"  # navigator → retrieval → verification → reflection → answer
REACT_GRAPH = "quarry-react"  # agent ⇄ tools → finish
# The search graph's node that runs a whole round for a `one_step_rounds` policy, and the steps it
# runs (progress names the node; each step writes its own long-step progress under its own name).
ONE_ROUND_NODE: Final = "one_round"
ONE_ROUND_STEPS = ("retrieval", "verification", "reflection")

# Command-line options a policy may take beyond the common ones (PolicySpec.options).
MODEL_OPTIONS = ("model", "max_tokens", "max_dollars")


@dataclass(frozen=True, kw_only=True)
class PolicySpec:
    """One policy, as the rest of Quarry sees it."""

    name: str
    help: str  # what it is, in a few words (the --policy help)
    graph: str  # the registered graph it runs on (SEARCH_GRAPH, REACT_GRAPH)
    graph_builder: CodeRef | None = None  # the function building that graph when it is a new one (the
    #                                          built-in graphs' builders are graphs.state.GRAPH_BUILDERS)
    policy: CodeRef  # the class of its decisions (nodes.policy.seam.Policy; `Class.for_job(rt, state)`)
    result: CodeRef  # the function building its result: `(state, *, use_model) -> Answered`
    order: CodeRef  # the constant labelling its final order (the manifest's ranker)
    order_help: str  # what the rank column of its results means
    uses_models: bool = False  # calls chat models: needs --model; its manifest names prompts and models
    options: tuple[str, ...] = ()  # command-line options beyond the common ones (MODEL_OPTIONS, "judge_model")
    second_look: bool = False  # its judge looks again at the best verified candidates, in batches the
    #                             graph fans out (nodes.llm.librarian); verification plans the batches
    verifier: bool = False  # the shipped learned verifier (trained on this policy's scores) may reorder
    conversation: bool = False  # keeps a model conversation whose tool calls are the trajectory's steps
    one_step_rounds: bool = False  # its round steps are quick and call no model: a whole round is one
    #                                 activity (graphs.search_graph.round_)

    def __post_init__(self) -> None:
        if self.one_step_rounds and self.second_look:
            raise ValueError(f"policy {self.name!r}: a one-step round cannot fan its judge out (second_look)")

    def takes(self, option: str) -> bool:
        return option in self.options

    def policy_class(self) -> Any:
        return self.policy.load()

    def result_builder(self) -> Any:
        return self.result.load()

    def order_label(self) -> str:
        return str(self.order.load())


_REGISTRY: dict[str, PolicySpec] = {}


def register(spec: PolicySpec) -> PolicySpec:
    """Add (or replace) a policy; the first one registered is the default."""
    _REGISTRY[spec.name] = spec
    return spec


def unregister(name: str) -> None:
    """Remove a policy (tests register throwaway ones); the built-in ones stay put."""
    if name in BUILT_IN:
        raise ValueError(f"the {name!r} policy is built in")
    _REGISTRY.pop(name, None)


def names() -> tuple[str, ...]:
    return tuple(_REGISTRY)


def specs() -> tuple[PolicySpec, ...]:
    return tuple(_REGISTRY.values())


def find(name: object) -> PolicySpec | None:
    """The spec of a policy name, or None for a name no policy has."""
    return _REGISTRY.get(name) if isinstance(name, str) else None


def check(name: object) -> PolicySpec:
    """The spec of a policy name; an unknown name is the user's `bad_policy` error."""
    spec = find(name)
    if spec is None:
        raise QuarryError("bad_policy", f"unknown policy {name!r}", f"use one of: {', '.join(names())}")
    return spec


def spec_of(state: Mapping[str, Any]) -> PolicySpec:
    """The spec of a job's state or result (the default policy when it names none)."""
    return check(state.get("policy", DEFAULT_POLICY))


def find_or_default(name: object) -> PolicySpec:
    """The spec of a policy name, the default policy's for a name no policy has (where a name was
    validated long before, or only decides how something is shown)."""
    return find(name) or _REGISTRY[DEFAULT_POLICY]


def display_spec(result: Mapping[str, Any]) -> PolicySpec:
    """For showing a stored result: its policy's spec, the default's for a name no longer known."""
    return find_or_default(result.get("policy", DEFAULT_POLICY))


def model_policies() -> tuple[str, ...]:
    return tuple(s.name for s in specs() if s.uses_models)


def taking(option: str) -> tuple[str, ...]:
    """The policies that take a command-line option."""
    return tuple(s.name for s in specs() if s.takes(option))


def policy_help() -> str:
    """`a (what a is), b (…) or c (…)`: every policy, for the --policy option's help."""
    parts = [f"{s.name} ({s.help})" for s in specs()]
    return ", ".join(parts[:-1]) + (" or " if len(parts) > 1 else "") + parts[-1]


class _Names(Sequence[str]):
    """The registered names as a live sequence (`nodes.job.config.POLICIES`): `in`, iteration and
    joining see policies registered after import too."""

    def __getitem__(self, i):
        return names()[i]

    def __len__(self) -> int:
        return len(_REGISTRY)

    def __iter__(self) -> Iterator[str]:
        return iter(names())

    def __contains__(self, name: object) -> bool:
        return find(name) is not None

    def __repr__(self) -> str:
        return repr(names())


POLICIES: Sequence[str] = _Names()

# -- the built-in policies (the first is the default) --------------------------------------------

_RULE_ORDER = CodeRef("nodes.ranking.ranker", "HEURISTIC_ORDER")
_RULE_ORDER_HELP = "reciprocal-rank fusion of the verification score S and the retrieval score"

HEURISTIC = register(
    PolicySpec(
        name="heuristic",
        help="offline default",
        graph=SEARCH_GRAPH,
        policy=CodeRef("nodes.policy.heuristic", "HeuristicPolicy"),
        result=CodeRef("nodes.rounds.answer", "build_result"),
        order=_RULE_ORDER,
        order_help=_RULE_ORDER_HELP,
        verifier=True,
        one_step_rounds=True,
    )
)
LLM = register(
    PolicySpec(
        name="llm",
        help="models in the round graph",
        graph=SEARCH_GRAPH,
        policy=CodeRef("nodes.llm.policy", "LLMPolicy"),
        result=CodeRef("nodes.rounds.answer", "build_result"),
        order=_RULE_ORDER,
        order_help=_RULE_ORDER_HELP,
        uses_models=True,
        options=(*MODEL_OPTIONS, "judge_model"),
        second_look=True,
    )
)
REACT = register(
    PolicySpec(
        name="react",
        help="one model driving the tools",
        graph=REACT_GRAPH,
        policy=CodeRef("nodes.policy.heuristic", "HeuristicPolicy"),
        result=CodeRef("nodes.react.finish", "build_react_result"),
        order=CodeRef("nodes.ranking.ranker", "REACT_ORDER"),
        order_help="by evidence (RRF of S and the model's submission, then the job's rankings); "
        "the model's own order when it submits ranked=true",
        uses_models=True,
        options=MODEL_OPTIONS,
        conversation=True,
    )
)

BUILT_IN = frozenset(names())
DEFAULT_POLICY = HEURISTIC.name

__all__ = [
    "BUILT_IN",
    "DEFAULT_POLICY",
    "HEURISTIC",
    "LLM",
    "MODEL_OPTIONS",
    "ONE_ROUND_NODE",
    "ONE_ROUND_STEPS",
    "POLICIES",
    "REACT",
    "REACT_GRAPH",
    "SEARCH_GRAPH",
    "CodeRef",
    "PolicySpec",
    "check",
    "display_spec",
    "find",
    "find_or_default",
    "model_policies",
    "names",
    "policy_help",
    "register",
    "spec_of",
    "specs",
    "taking",
    "unregister",
]
