"""The policy registry (`nodes.policy.registry`): one spec per policy, read wherever policies differ.

A fourth policy registered in one place is validated, configured, given its graph and its
decisions; no package module compares a policy's name; judging is a typed request with a typed
decision (usage and fallback), and the `llm` librarians are that policy's judge.
"""

from __future__ import annotations

import ast
import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest
from langchain_core.messages import AIMessage

from graphs.state import GRAPH_BUILDERS, graph_builders, graph_for, initial_state
from nodes.job.config import POLICIES, JobConfig, ModelSettings
from nodes.policy import registry as policies
from nodes.policy.heuristic import HeuristicPolicy
from nodes.policy.registry import (
    DEFAULT_POLICY,
    HEURISTIC,
    LLM,
    REACT,
    REACT_GRAPH,
    SEARCH_GRAPH,
    CodeRef,
    PolicySpec,
    check,
    policy_help,
    register,
    specs,
    unregister,
)
from nodes.policy.seam import JudgeDecision, JudgeInput, JudgeRequest, Located
from stores.errors import QuarryError
from stores.records import Chunk, DocRecord
from tests.conftest import LITERATURE
from tests.fakes import ScriptedChatModel, structured_reply, usage

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("stores", "observability", "nodes", "graphs", "workflows", "tuning", "evals", "quarry")
REGISTRY = ROOT / "nodes" / "policy" / "registry.py"
CODE_REF = ROOT / "nodes" / "policy" / "code_ref.py"


class EchoPolicy(HeuristicPolicy):
    """A test-only fourth policy: the heuristic's decisions, counting its judge's requests."""

    requests: ClassVar[list[JudgeRequest]] = []

    def judge(self, req):  # type: ignore[override]
        EchoPolicy.requests.append(req)
        return super().judge(req)


ECHO = PolicySpec(
    name="echo",
    help="the heuristic, echoed",
    graph=SEARCH_GRAPH,
    policy=CodeRef("tests.test_policy_registry", "EchoPolicy"),
    result=CodeRef("nodes.rounds.answer", "build_result"),
    order=CodeRef("nodes.ranking.ranker", "HEURISTIC_ORDER"),
    order_help="the echo's order",
)


@pytest.fixture()
def echo() -> Iterator[PolicySpec]:
    EchoPolicy.requests = []
    yield register(ECHO)
    unregister(ECHO.name)


# -- the registry -----------------------------------------------------------------------------------


def test_the_built_in_policies_and_their_specs() -> None:
    assert tuple(POLICIES) == ("heuristic", "llm", "react") and HEURISTIC.name == DEFAULT_POLICY
    assert graph_for(LLM.name) == graph_for(HEURISTIC.name) == SEARCH_GRAPH and graph_for(REACT.name) == REACT_GRAPH
    assert set(graph_builders()) == {SEARCH_GRAPH, REACT_GRAPH}
    assert [s.uses_models for s in (HEURISTIC, LLM, REACT)] == [False, True, True]
    assert LLM.takes("judge_model") and not REACT.takes("judge_model") and REACT.takes("model")
    assert LLM.second_look and not HEURISTIC.second_look and REACT.conversation and HEURISTIC.verifier
    from nodes.ranking.ranker import HEURISTIC_ORDER, REACT_ORDER

    assert HEURISTIC.order_label() == LLM.order_label() == HEURISTIC_ORDER and REACT.order_label() == REACT_ORDER
    assert policy_help() == (
        "heuristic (offline default), llm (models in the round graph) or react (one model driving the tools)"
    )
    with pytest.raises(QuarryError) as err:
        check("nope")
    assert err.value.code == "bad_policy" and "heuristic, llm, react" in str(err.value.hint)
    with pytest.raises(ValueError):
        unregister(LLM.name)


def test_a_fourth_policy_is_registered_in_one_place(echo: PolicySpec) -> None:
    """Validation, the command line's options, graph selection and the runtime's decision maker
    all see a policy registered at run time."""
    from nodes.job.runtime import NodeRuntime
    from quarry.app.options import job_config
    from workflows.job_input import check_job_input
    from workflows.shared import JobInput

    assert "echo" in POLICIES and "echo (the heuristic, echoed)" in policy_help()
    check_job_input(JobInput(job_id="j", collection="lit", intent="anything", policy="echo"))
    assert job_config("echo", None, None).max_rounds == 3
    with pytest.raises(QuarryError, match="need a model policy"):
        job_config("echo", "openai:x", None)
    assert graph_for("echo") == SEARCH_GRAPH
    assert isinstance(NodeRuntime().policy({"policy": "echo"}), EchoPolicy)
    own = register(
        PolicySpec(
            **{
                **ECHO.__dict__,
                "graph": "quarry-echo",
                "graph_builder": CodeRef("graphs.search_graph", "make_search_graph"),
            }
        )
    )
    assert graph_for(own.name) == "quarry-echo" and set(graph_builders()) == {SEARCH_GRAPH, REACT_GRAPH, "quarry-echo"}


@pytest.fixture(scope="module")
def runtime(literature, quarry_home: Path):
    from nodes.job.runtime import NodeRuntime, configure_runtime

    rt = NodeRuntime(quarry_home)
    configure_runtime(rt)
    yield rt
    configure_runtime(None)


def test_a_fourth_policy_decides_a_whole_job(echo: PolicySpec, runtime) -> None:
    from graphs.search_graph import make_search_graph

    state = initial_state(
        "job-echo", LITERATURE, "graph neural networks for molecules", policy="echo", config=JobConfig(max_rounds=1)
    )
    final = asyncio.run(make_search_graph().compile().ainvoke(state))
    result = runtime.jobs.load_draft(final["job_id"])
    assert EchoPolicy.requests and all(r.batch for r in EchoPolicy.requests)
    assert result["policy"] == "echo" and result["ranked"]


# -- no policy-name comparisons outside the registry -----------------------------------------------


def _name_literals(node: ast.AST, names: set[str]) -> list[str]:
    """Policy names as string constants in a node, or in a tuple/list/set/dict it builds."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names:
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [n for e in node.elts for n in _name_literals(e, names)]
    return []


def policy_name_uses(tree: ast.AST, names: set[str]) -> list[tuple[int, str]]:
    """Where a policy name is compared (==, !=, in, a match case), given as a `.get` default or
    defaulted into a parameter."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                found += [(node.lineno, n) for n in _name_literals(operand, names)]
        elif isinstance(node, ast.MatchValue):
            found += [(node.lineno, n) for n in _name_literals(node.value, names)]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            found += [(node.lineno, n) for a in node.args[1:] for n in _name_literals(a, names)]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for default in (*node.args.defaults, *node.args.kw_defaults):
                if default is not None:
                    found += [(node.lineno, n) for n in _name_literals(default, names)]
        elif isinstance(node, ast.AnnAssign) and node.value is not None:  # dataclass field defaults
            found += [(node.lineno, n) for n in _name_literals(node.value, names)]
    return found


def test_the_scan_finds_the_comparisons_it_must() -> None:
    names = set(POLICIES)
    source = (
        'if state.get("policy") == "llm": pass\nx = p in ("llm", "react")\ny = s.get("policy", "heuristic")\n'
        'def f(policy="react"): pass\nclass C:\n    policy: str = "heuristic"\nz = {"n": "llm"}\n'
    )
    assert sorted(n for _, n in policy_name_uses(ast.parse(source), names)) == [
        "heuristic",
        "heuristic",
        "llm",
        "llm",
        "react",
        "react",
    ]


def test_no_policy_name_is_compared_outside_the_registry() -> None:
    names = set(POLICIES)
    offenders = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path == REGISTRY:
                continue
            for line, name in policy_name_uses(ast.parse(path.read_text(encoding="utf-8")), names):
                offenders.append(f"{path.relative_to(ROOT)}:{line}: {name!r}")
    assert not offenders, "compare the spec (nodes.policy.registry), not the name:\n" + "\n".join(offenders)


# -- judging: a typed request, a typed decision ------------------------------------------------------


PLAN = {
    "core": "graph neural networks",
    "checklist": [{"id": "c1", "kind": "topic", "text": "graph neural networks", "weight": 1.0}],
}


def test_the_heuristic_judge_takes_a_request() -> None:
    rec = DocRecord(docid="d1", title="Graph neural networks", text="Graph neural networks for molecules.")
    chunks = [Chunk(docid="d1", chunk_no=0, text=rec.text, line_start=1, line_end=1)]
    inputs = [JudgeInput(rec, chunks, 0.5)]
    decision = HeuristicPolicy().judge(JudgeRequest(PLAN, inputs))
    assert isinstance(decision, JudgeDecision) and decision.usage.calls == 0 and decision.fallback == ""
    assert decision.judgements == HeuristicPolicy().rule_judgements(PLAN, inputs)
    assert HeuristicPolicy().judge(PLAN, inputs) == decision.judgements  # the old call, kept for older callers
    assert HeuristicPolicy().judge(JudgeRequest(PLAN, located=[Located("d1", 0.5, [], ["x"])])).judgements == []


LINES = ["Graph neural networks", "We predict molecular properties with graph neural networks on QM9."]
QUOTE = "molecular properties with graph neural networks"


class _Runtime:
    def __init__(self, model: ScriptedChatModel) -> None:
        self.chat = model

    def model(self, spec, settings):
        return self.chat

    def channels(self, where):
        return {"lexical"}


def _llm(model: ScriptedChatModel):
    from nodes.llm.policy import LLMPolicy

    cfg = JobConfig(models=ModelSettings(model="openai:nav", judge_model="openai:judge"))
    return LLMPolicy.for_job(_Runtime(model), {"job_id": "j", "config": cfg.to_dict()})


def test_the_llm_judge_is_the_librarian() -> None:
    reply = structured_reply(
        "JudgementsOut",
        usage(300, 30),
        judgements=[
            {"docid": "d1", "p": 0.81234, "items": [{"item_id": "c1", "score": 4, "quote": QUOTE}]},
            {"docid": "elsewhere", "p": 1.0, "items": []},
        ],
    )
    model = ScriptedChatModel(script=[reply])
    req = JudgeRequest(
        PLAN, located=[Located("d1", 0.4, [("c1", 2, 2)], LINES)], intent="gnn", label="librarian batch 0"
    )
    decision = _llm(model).judge(req)
    assert decision.judged_by == "openai:judge" and decision.usage.calls == 1 and decision.fallback == ""
    (judged,) = decision.judgements
    assert judged.docid == "d1" and judged.p == 0.8123
    assert judged.evidence == [{"item_id": "c1", "score": 4.0, "chunk": QUOTE, "line_start": 2, "line_end": 2}]
    assert '<document docid="d1">' in model.calls[0]["messages"][-1].content


def test_the_llm_judge_falls_back_and_says_why() -> None:
    req = JudgeRequest(
        PLAN, located=[Located("d1", 0.4, [("c1", 2, 2)], LINES)], intent="gnn", label="librarian batch 0"
    )
    down = _llm(ScriptedChatModel(script=[RuntimeError("endpoint down")])).judge(req)
    assert down.judgements == [] and down.fallback and down.judged_by == "openai:judge"
    junk = _llm(ScriptedChatModel(default=AIMessage(content='{"judgements": "nope"}', usage_metadata=usage(10, 5))))
    bad = junk.judge(req)
    assert bad.judgements == [] and bad.fallback and bad.usage.calls >= 1
    # The first look stays the rule's: a model judges only what the rule located.
    rec = DocRecord(docid="d1", title=LINES[0], text=LINES[1])
    inputs = [JudgeInput(rec, [Chunk(docid="d1", chunk_no=0, text=LINES[1], line_start=1, line_end=1)], 0.5)]
    first = junk.judge(JudgeRequest(PLAN, inputs))
    assert first.judgements == HeuristicPolicy().rule_judgements(PLAN, inputs) and first.usage.calls == 0


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module} | {
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
    }


def test_policies_module_imports_nothing_of_quarry_but_errors() -> None:
    """The registry imports nothing of Quarry but the errors and the `CodeRef` it names code with,
    which imports nothing of Quarry at all."""
    library = {"__future__", "importlib", "collections", "dataclasses", "typing"}
    assert {m.split(".")[0] for m in _imports(REGISTRY) - {"nodes.policy.code_ref"}} <= {*library, "stores"}
    assert {m for m in _imports(REGISTRY) if m.split(".")[0] == "stores"} == {"stores.errors"}
    assert {m.split(".")[0] for m in _imports(CODE_REF)} <= library
    assert policies.__name__ == "nodes.policy.registry"


def test_every_registered_code_ref_resolves() -> None:
    """Each reference a built-in policy or graph names imports and has its attribute, of the kind its
    place wants: a policy class, a result builder, an order label, a graph builder."""
    decisions = ("plan", "judge", "reflect", "answer", "reason", "for_job")  # nodes.policy.seam.Policy's
    for spec in specs():
        cls = spec.policy_class()
        assert isinstance(cls, type) and all(callable(getattr(cls, d, None)) for d in decisions), spec.policy
        assert callable(spec.result_builder()), spec.result
        assert isinstance(spec.order.load(), str) and spec.order_label(), spec.order
        if spec.graph_builder is not None:
            assert callable(spec.graph_builder.load()), spec.graph_builder
    for name, builder in GRAPH_BUILDERS.items():
        assert callable(builder.load()), (name, str(builder))
    assert set(GRAPH_BUILDERS) >= {spec.graph for spec in specs() if spec.graph_builder is None}


def test_a_code_ref_is_a_module_and_an_attribute() -> None:
    ref = CodeRef("nodes.ranking.ranker", "HEURISTIC_ORDER")
    assert str(ref) == "nodes.ranking.ranker:HEURISTIC_ORDER" and ref == CodeRef(*str(ref).split(":"))
    assert ref.load() is ref.load()
    with pytest.raises(ValueError):
        CodeRef("nodes.ranking.ranker:HEURISTIC_ORDER", "")
    with pytest.raises(ModuleNotFoundError):
        CodeRef("nodes.no_such_module", "x").load()
    with pytest.raises(AttributeError):
        CodeRef("nodes.ranking.ranker", "NO_SUCH_ORDER").load()
