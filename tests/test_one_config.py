"""One configuration (issue 21): every cap, depth, limit and budget is declared once, in
nodes/job/config.py, and the tool schemas a model is shown state the limits the tools enforce.

The first test reads the package sources (AST, no import) for numeric literals equal to a
configured default in a default position — a function parameter's default (typer options
included), a `default=` keyword (argparse, `Field`, `field`), the first argument of
`Field`/`Option`/`Argument`, a class-body field (dataclass, pydantic, NamedTuple), or
`.get("<config field>", N)` — outside the file that declares it. A copy fails CI; a number that
only happens to be equal is allow-listed below with the reason it is unrelated.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterator
from dataclasses import MISSING, dataclass, fields
from fnmatch import fnmatch
from pathlib import Path

import pytest
from langchain_core.utils.function_calling import convert_to_openai_tool

from nodes.job.config import (
    CITATION_DIRECTIONS,
    JOB_BOUNDS,
    MODEL_ATTEMPTS,
    STEER_FRACTION,
    TOOL_LIMITS,
    JobBounds,
    JobConfig,
    ModelSettings,
    ToolLimits,
)
from nodes.tools.agent_tools import TOOL_ARGS, parse_args, tool_definitions
from nodes.tools.corpus import ToolSession
from nodes.tools.results import CitationPage, DocumentPage, SearchPage, ToolError
from stores.citations import CitationGraph
from stores.errors import QuarryError
from stores.records import DocRecord

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("nodes", "graphs", "workflows", "quarry", "tuning", "evals", "observability")
CONFIG = "nodes/job/config.py"
FIELD_CALLS = {"Field", "field", "Option", "Argument"}


def configured_defaults() -> dict[tuple[type, float], list[str]]:
    """(type, value) -> the names declaring it: every numeric default of the typed configuration.
    0 and 1 are left out: they are the neutral value of everything (a zero price, a first line)."""
    out: dict[tuple[type, float], list[str]] = {}

    def add(name: str, value: object) -> None:
        if type(value) in (int, float) and value not in (0, 1):
            out.setdefault((type(value), value), []).append(name)

    for cls in (JobConfig, ModelSettings, ToolLimits, JobBounds):
        for f in fields(cls):
            if f.default is not MISSING:
                add(f"{cls.__name__}.{f.name}", f.default)
    add("ToolLimits.page_offset", TOOL_LIMITS.page_offset)
    add("MODEL_ATTEMPTS", MODEL_ATTEMPTS)
    add("STEER_FRACTION", STEER_FRACTION)
    return out


CONFIG_FIELDS = {f.name for cls in (JobConfig, ModelSettings) for f in fields(cls)}


@dataclass(frozen=True)
class Default:
    path: str
    line: int
    name: str  # the parameter, field or option the value is the default of
    value: float

    def __str__(self) -> str:
        return f"{self.path}:{self.line} {self.name} = {self.value!r}"


def _number(node: ast.expr | None) -> float | None:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    return None


def _call_name(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _defaults_in(path: str, tree: ast.AST) -> Iterator[Default]:
    def hit(node: ast.expr | None, name: str) -> Iterator[Default]:
        if isinstance(node, ast.Call) and _call_name(node) in FIELD_CALLS:  # x = Field(N) / typer.Option(N)
            yield from hit(node.args[0] if node.args else None, name)
            for kw in node.keywords:
                if kw.arg == "default":
                    yield from hit(kw.value, name)
            return
        value = _number(node)
        if value is not None and node is not None:
            yield Default(path, node.lineno, name, value)

    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = node.args
            positional = a.posonlyargs + a.args
            for arg, d in zip(positional[len(positional) - len(a.defaults) :], a.defaults, strict=True):
                yield from hit(d, arg.arg)
            for arg, kd in zip(a.kwonlyargs, a.kw_defaults, strict=True):
                yield from hit(kd, arg.arg)
        elif isinstance(node, ast.ClassDef):
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    yield from hit(stmt.value, f"{node.name}.{stmt.target.id}")
        elif isinstance(node, ast.Call):
            called = _call_name(node)
            first = node.args[0] if node.args else None
            label = first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else called
            for kw in node.keywords:
                if kw.arg == "default" and called not in FIELD_CALLS:  # those are read with their owner's name
                    yield from hit(kw.value, f"{label}(default=)")
            if called == "get" and len(node.args) == 2 and label in CONFIG_FIELDS:
                yield from hit(node.args[1], f'get("{label}")')


def copied_defaults() -> list[Default]:
    wanted = configured_defaults()
    out = []
    for package in PACKAGES:
        for file in sorted((ROOT / package).rglob("*.py")):
            path = file.relative_to(ROOT).as_posix()
            if path == CONFIG:
                continue
            for d in _defaults_in(path, ast.parse(file.read_text(encoding="utf-8"), path)):
                if (type(d.value), d.value) not in wanted:
                    continue
                out.append(d)
    return out


# (path, name, value) -> why it is allowed. Two kinds: a number that only happens to equal a
# configured default (unrelated), and a copy in a file this change could not edit (TODO). A path
# may be a glob.
ALLOWED: dict[tuple[str, str, float], str] = {
    # -- unrelated coincidences ------------------------------------------------------------------
    ("nodes/evidence/planning.py", "max_added", 8): "words a rewritten query may add; not a config value",
    ("nodes/evidence/scoring.py", "n_terms", 10): "RM3 feedback terms (an algorithm parameter)",
    ("nodes/evidence/scoring.py", "max_repeat", 10): "RM3 word repetitions (an algorithm parameter)",
    ("workflows/worker.py", "max_concurrent_activities", 8): "a worker's activity slots, not a job's setting",
    ("workflows/processes/dev_server.py", "wait_s", 60.0): "waiting for the dev server to answer, not a model timeout",
    ("evals/cv.py", "threads", 2): "CPU threads of an evaluation",
    ("evals/runner.py", "threads", 2): "CPU threads of an evaluation",
    ("tuning/grid.py", "threads", 2): "CPU threads of an evaluation",
    ("tuning/self_tuning.py", "threads", 2): "CPU threads of the tuning's searches",
    ("evals/html_extraction.py", "runs", 5): "timing repetitions of a benchmark",
    ("evals/dense_adaptation_probe.py", "--pairs(default=)", 1000): "training pairs of a probe, not a search depth",
    ("nodes/tools/agent_tools.py", "SubmitArgs.confidence", 50): "a neutral confidence (of 0-100), not a limit",
    ("tuning/significance.py", "digits", 3): "decimal places a comparison is printed with, not a cap",
}


def allowed(d: Default) -> str | None:
    """Why this default may stay, or None."""
    return next(
        (
            why
            for (path, name, value), why in ALLOWED.items()
            if fnmatch(d.path, path) and (name, value) == (d.name, d.value)
        ),
        None,
    )


def test_no_default_of_a_cap_is_written_twice() -> None:
    wanted = configured_defaults()
    found = copied_defaults()
    copies = [
        f"{d}  (the default of {', '.join(wanted[(type(d.value), d.value)])} in {CONFIG})"
        for d in found
        if allowed(d) is None
    ]
    assert not copies, (
        "a configured default is written again; read it from nodes.job.config instead (or, if the "
        "number is unrelated, allow-list it in tests/test_one_config.py with the reason):\n  " + "\n  ".join(copies)
    )
    stale = sorted(
        key for key in ALLOWED if not any(fnmatch(d.path, key[0]) and (d.name, d.value) == key[1:] for d in found)
    )
    assert not stale, f"allow-listed defaults that are gone (drop them from ALLOWED): {stale}"


def test_the_scan_sees_each_kind_of_default() -> None:
    source = """
import typer
from dataclasses import dataclass, field
from pydantic import BaseModel, Field
def f(a, rounds=3, *, tokens=2048): ...
def cli(limit: Annotated[int, typer.Option(help="x")] = 500, depth: int = typer.Option(1000)): ...
parser.add_argument("--depth", default=1000)
@dataclass
class C:
    top: int = 20
    chars: int = field(default=1500)
class M(BaseModel):
    limit: int = Field(50, le=50)
cfg.get("verify_top", 100)
"""
    got = {(d.name, d.value) for d in _defaults_in("x.py", ast.parse(source))}
    assert got >= {
        ("rounds", 3),
        ("tokens", 2048),
        ("limit", 500),
        ("depth", 1000),
        ("--depth(default=)", 1000),
        ("C.top", 20),
        ("C.chars", 1500),
        ("M.limit", 50),
        ('get("verify_top")', 100),
    }


def test_budget_bounds_are_the_configured_ones() -> None:
    from quarry.app.options import MAX_DOLLARS, MAX_TOKENS, job_config

    assert (JOB_BOUNDS.max_tokens, JOB_BOUNDS.max_dollars) == (MAX_TOKENS, MAX_DOLLARS)
    sig = inspect.signature(job_config).parameters
    assert sig["rounds"].default == JobConfig().max_rounds
    assert sig["max_output_tokens"].default == ModelSettings().max_output_tokens
    assert sig["max_seconds"].default == JobConfig().max_seconds


def test_the_time_budget_lives_in_the_config() -> None:
    """The wall-clock budget is JobConfig.max_seconds, its range JobBounds', and `--budget`'s
    default and bounds are read from them: no other home (workflows.shared had one)."""
    import workflows.job_input
    import workflows.shared
    from quarry.cli.eval import eval_cmd
    from quarry.cli.run import run
    from workflows.job_input import check_budget
    from workflows.shared import JobInput

    assert (JOB_BOUNDS.min_seconds, JOB_BOUNDS.max_seconds) == (1.0, 7 * 24 * 3600.0)
    for module in (workflows.shared, workflows.job_input):
        assert not {"DEFAULT_BUDGET_S", "MIN_BUDGET_S", "MAX_BUDGET_S"} & set(vars(module))
    assert inspect.signature(run).parameters["budget"].default == JobConfig().max_seconds
    assert inspect.signature(eval_cmd).parameters["budget"].default == JobConfig().max_seconds
    assert JobInput(job_id="j", collection="c", intent="x").budget_seconds is None, "a new input carries none"
    assert check_budget(JOB_BOUNDS.min_seconds) == JOB_BOUNDS.min_seconds
    for bad in (JOB_BOUNDS.min_seconds / 2, JOB_BOUNDS.max_seconds * 2):
        with pytest.raises(QuarryError) as err:
            check_budget(bad)
        assert err.value.code == "bad_budget"


def test_an_old_input_s_budget_moves_into_the_config() -> None:
    """A job started before the move has `budget_seconds` in its history's JobInput: it wins."""
    from workflows.job_input import migrated
    from workflows.shared import JobInput

    old = JobInput(job_id="j", collection="c", intent="x", budget_seconds=120.0)
    new = migrated(old)
    assert new.config.max_seconds == 120.0 and new.budget_seconds is None
    current = JobInput(job_id="j", collection="c", intent="x", config=JobConfig(max_seconds=42.0))
    assert migrated(current) is current


# -- the tool schemas a model sees state the limits the tools enforce -------------------------------------

N_DOCS = 120  # more than every page cap, fewer than the depth


class _Searcher:
    def __init__(self) -> None:
        self.asked: list[int] = []

    def ranking(self, text: str, k: int = TOOL_LIMITS.depth) -> tuple[list[str], list[float]]:
        self.asked.append(k)
        ids = [f"d{i}" for i in range(N_DOCS)][:k]
        return ids, [float(N_DOCS - i) for i in range(len(ids))]


class _Corpus:
    def __init__(self) -> None:
        self.docs = {f"d{i}": DocRecord(docid=f"d{i}", title=f"doc {i}", text="retrieval words") for i in range(N_DOCS)}

    def get_many(self, docids):
        return {d: self.docs[d] for d in docids if d in self.docs}

    def lines(self, docid: str):
        return ["doc title", *(f"line {n}" for n in range(1000))] if docid in self.docs else None

    def docs_by_author(self, last_names):
        return {}


@pytest.fixture
def session() -> ToolSession:
    graph = CitationGraph.from_edges([("d0", f"d{i}") for i in range(1, N_DOCS)])
    return ToolSession(_Searcher(), _Corpus(), citations=graph)


def model_schemas() -> dict[str, dict]:
    """Each tool as the model receives it (name, description, JSON parameters)."""
    return {t.name: convert_to_openai_tool(t)["function"] for t in tool_definitions({"lexical", "citations"})}


def test_schema_defaults_are_the_tools_defaults() -> None:
    tools = model_schemas()
    assert set(tools) == set(TOOL_ARGS)
    for name in ("search", "read_search_results", "read_document", "expand_citations"):
        sig = inspect.signature(getattr(ToolSession, name)).parameters
        for arg, spec in tools[name]["parameters"]["properties"].items():
            if "default" in spec:
                assert spec["default"] == sig[arg].default, (name, arg)


@pytest.mark.parametrize(
    "tool, cap, kwargs, shown",
    [
        ("read_search_results", TOOL_LIMITS.page_limit_max, {"offset": 1}, lambda page: len(page.hits)),
        ("read_document", TOOL_LIMITS.read_limit_max, {"docid": "d1", "offset": 1}, lambda page: len(page.lines)),
        (
            "expand_citations",
            TOOL_LIMITS.citation_limit_max,
            {"docid": "d0", "direction": "references"},
            lambda page: len(page.hits),
        ),
    ],
)
def test_schema_maximum_is_the_enforced_cap(session: ToolSession, tool, cap, kwargs, shown) -> None:
    spec = model_schemas()[tool]["parameters"]["properties"]["limit"]
    assert spec["maximum"] == cap
    if "description" in spec:
        assert f"at most {cap}" in spec["description"]
    if tool == "read_search_results":
        kwargs = kwargs | {"search_id": session.search("r", "retrieval").search_id}
    page = getattr(session, tool)("r", limit=cap + 1, **kwargs)
    assert isinstance(page, (SearchPage, DocumentPage, CitationPage)), page
    assert shown(page) == cap and page.note.startswith(f"limit capped at {cap}")
    assert shown(getattr(session, tool)("r", limit=cap, **kwargs)) == cap
    # …and the schema refuses what the tool would cap, so a model is told before it is cut.
    assert isinstance(parse_args(tool, {"reason": "r", "search_id": "s1", "docid": "d0", "limit": cap + 1}), ToolError)
    assert not isinstance(parse_args(tool, {"reason": "r", "search_id": "s1", "docid": "d0", "limit": cap}), ToolError)


def test_search_description_states_depth_and_preview(session: ToolSession) -> None:
    description = model_schemas()["search"]["description"]
    assert f"({TOOL_LIMITS.depth} deep)" in description and f"ranks 1-{TOOL_LIMITS.preview}." in description
    page = session.search("r", "retrieval")
    assert isinstance(page, SearchPage)
    assert [h.rank for h in page.hits] == list(range(1, TOOL_LIMITS.preview + 1))
    assert session.searcher.asked == [TOOL_LIMITS.depth]
    follow = session.read_search_results("r", page.search_id)  # the schema's default offset: the next rank
    assert isinstance(follow, SearchPage) and follow.offset == TOOL_LIMITS.preview + 1
    assert len(follow.hits) == TOOL_LIMITS.page_limit


def test_citation_directions_offered_are_the_ones_accepted(session: ToolSession) -> None:
    offered = model_schemas()["expand_citations"]["parameters"]["properties"]["direction"]["enum"]
    assert tuple(offered) == CITATION_DIRECTIONS
    for direction in offered:
        assert isinstance(session.expand_citations("r", "d0", direction), CitationPage), direction
    refused = session.expand_citations("r", "d0", "sideways")
    assert isinstance(refused, ToolError) and refused.code == "bad_direction"


def test_argument_lengths_are_the_configured_ones() -> None:
    big = {
        "reason": "r" * 9999,
        "query": "q" * 99999,
        "search_id": "s" * 999,
        "docid": "d" * 9999,
        "docids": ["x"] * 9999,
        "explanation": "e" * 99999,
        "exact_answer": "a" * 99999,
    }
    lengths = {
        "reason": TOOL_LIMITS.reason_chars,
        "query": TOOL_LIMITS.query_arg_chars,
        "search_id": TOOL_LIMITS.search_id_chars,
        "docid": TOOL_LIMITS.docid_chars,
        "docids": TOOL_LIMITS.submit_docids,
        "explanation": TOOL_LIMITS.explanation_chars,
        "exact_answer": TOOL_LIMITS.exact_answer_chars,
    }
    for name in TOOL_ARGS:
        args = parse_args(name, big)
        for field_name, value in args.model_dump().items():
            if field_name in lengths:
                assert len(value) == lengths[field_name], (name, field_name)


def test_job_tools_keep_the_tools_defaults() -> None:
    """nodes.job.traced_tools.JobTools repeats the tools' defaults (TODO issue 21): until it reads them from
    TOOL_LIMITS, they must at least agree."""
    from nodes.job.traced_tools import JobTools

    for name in ("read_search_results", "read_document", "expand_citations"):
        ours = inspect.signature(getattr(JobTools, name)).parameters
        theirs = inspect.signature(getattr(ToolSession, name)).parameters
        for arg in ("offset", "limit", "direction"):
            if arg in ours:
                assert ours[arg].default == theirs[arg].default, (name, arg)
