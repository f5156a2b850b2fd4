"""Named seams: job statuses and node names are compared as `JobStatus` / `NodeName` members
(stores.job_status, nodes.job.node_names), never as string literals outside those modules.

An AST scan of the product packages finds a comparison (`==`, `!=`, `in`/`not in` a literal
tuple, list or set, a `match` case, a lookup in a literal dict) of a status or node-name literal
with something that reads as a job's status or node. The same words have other meanings
(Temporal's execution statuses, an error's code, a job's mode "answer", a note's kind "steer"),
so a literal counts only against a status-like or node-like operand: an expression naming
`status` (a variable, an attribute, a `["status"]` or `.get("status")`), or `node` likewise, or a
router's answer (a call of `route_*` / `_round_over`). "budget_exhausted" means one thing only
and counts wherever it is compared. A line that compares another vocabulary's word against a
status-like operand says so with a comment `# other vocabulary: …` (Temporal's status of a dense
build, say) and is left alone.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from nodes.job.node_names import NodeName
from stores.job_status import JobStatus

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("stores", "observability", "nodes", "graphs", "workflows", "tuning", "evals", "quarry")
# The modules that define the names (wherever they move).
DEFINITIONS = {Path(sys.modules[cls.__module__].__file__ or "").resolve() for cls in (JobStatus, NodeName)}

STATUSES = frozenset(s.value for s in JobStatus)
NODES = frozenset(n.value for n in NodeName)
ALWAYS = frozenset({JobStatus.BUDGET_EXHAUSTED.value})  # no other meaning: a literal anywhere in a comparison
_STATUS_WORD = re.compile(r"status", re.IGNORECASE)
_NODE_WORD = re.compile(r"(^|_)node($|_)", re.IGNORECASE)
_ROUTER = re.compile(r"^(route_|_round_over$)")
OTHER_VOCABULARY = "# other vocabulary:"


def _words(expr: ast.AST) -> Iterator[str]:
    """The names an expression reads: variables, attributes, string keys, called functions."""
    for n in ast.walk(expr):
        if isinstance(n, ast.Name):
            yield n.id
        elif isinstance(n, ast.Attribute):
            yield n.attr
        elif isinstance(n, ast.Constant) and isinstance(n.value, str):
            yield n.value


def _kinds(expr: ast.AST) -> set[str]:
    """Which vocabularies an operand reads as: 'status', 'node' (or neither)."""
    kinds = set()
    words = list(_words(expr))
    if any(_STATUS_WORD.search(w) for w in words):
        kinds.add("status")
    if any(_NODE_WORD.search(w) for w in words):
        kinds.add("node")
    routers = (n.func for n in ast.walk(expr) if isinstance(n, ast.Call))
    if any(isinstance(f, ast.Name) and _ROUTER.search(f.id) for f in routers):
        kinds.add("node")
    return kinds


def _literals(expr: ast.AST) -> list[str]:
    """The string literals an operand holds: itself, or the items of a literal tuple/list/set."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return [expr.value]
    if isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
        return [e.value for e in expr.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def _offending(literals: list[str], other: ast.AST) -> list[str]:
    kinds = _kinds(other)
    return [
        w for w in literals if w in ALWAYS or (w in STATUSES and "status" in kinds) or (w in NODES and "node" in kinds)
    ]


def _pattern_literals(pattern: ast.pattern) -> list[str]:
    if isinstance(pattern, ast.MatchValue):
        return _literals(pattern.value)
    if isinstance(pattern, ast.MatchOr):
        return [w for p in pattern.patterns for w in _pattern_literals(p)]
    if isinstance(pattern, ast.MatchAs) and pattern.pattern is not None:
        return _pattern_literals(pattern.pattern)
    return []


def literal_comparisons(source: str, filename: str = "<snippet>") -> list[str]:
    """Every status or node-name literal compared in `source`, as `file:line: word`."""
    found: list[tuple[int, str]] = []
    lines = source.splitlines()
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for op, left, right in zip(node.ops, operands[:-1], operands[1:], strict=True):
                if isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn, ast.Is, ast.IsNot)):
                    words = _offending(_literals(right), left)
                    if not isinstance(op, (ast.In, ast.NotIn)):
                        words += _offending(_literals(left), right)
                    found += [(node.lineno, w) for w in words]
        elif isinstance(node, ast.Match):
            for case in node.cases:
                found += [(case.pattern.lineno, w) for w in _offending(_pattern_literals(case.pattern), node.subject)]
        elif isinstance(node, (ast.Subscript, ast.Call)):
            # {"completed": …, "failed": …}[status] or {…}.get(status): a lookup that compares keys.
            if isinstance(node, ast.Subscript):
                table, keys_of = node.value, [node.slice]
            elif isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args:
                table, keys_of = node.func.value, node.args[:1]
            else:
                continue
            if isinstance(table, ast.Dict):
                keys = [w for k in table.keys if k is not None for w in _literals(k)]
                found += [(node.lineno, w) for w in _offending(keys, keys_of[0])]
    marked = {n for n, text in enumerate(lines, 1) if OTHER_VOCABULARY in text}
    return [f"{filename}:{line}: {word!r}" for line, word in sorted(set(found)) if line not in marked]


def product_modules() -> Iterator[Path]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path not in DEFINITIONS:
                yield path


def test_no_status_or_node_name_compared_as_a_literal() -> None:
    found = [
        hit
        for path in product_modules()
        for hit in literal_comparisons(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    ]
    assert not found, "compare with stores.job_status.JobStatus / nodes.job.node_names.NodeName members:\n" + "\n".join(
        found
    )


def test_the_scanner_finds_literal_comparisons() -> None:
    snippet = """
if status == "completed": ...
if "failed" != row["status"]: ...
if result.get("status") in ("failed", "cancelled"): ...
if self.status not in {"running"}: ...
if state.get("node") == "answer": ...
if _round_over(state) == "answer": ...
if reason == "budget_exhausted": ...
match job.status:
    case "stopped" | "terminated":
        pass
colour = {"completed": "green", "failed": "red"}.get(row["status"], "")
"""
    assert [hit.split(": ", 1)[1] for hit in literal_comparisons(snippet)] == [
        "'completed'",
        "'failed'",
        "'cancelled'",
        "'failed'",
        "'running'",
        "'answer'",
        "'answer'",
        "'budget_exhausted'",
        "'stopped'",
        "'terminated'",
        "'completed'",
        "'failed'",
    ]


def test_the_scanner_leaves_other_vocabularies_and_members_alone() -> None:
    snippet = """
if status == JobStatus.COMPLETED: ...
if row["status"] in FINAL: ...
if state.get("node") == NodeName.ANSWER: ...
if state.get("mode") == "answer": ...
if kind == "steer": ...
if err.code == "cancelled": ...
if seen not in ("running", "continued_as_new"): ...
if status.name != "RUNNING": ...
if system == "agent": ...
finished = p["status"] != "running"  # other vocabulary: Temporal's status of a dense build
"""
    assert literal_comparisons(snippet) == []


def test_node_names_are_the_graphs_nodes() -> None:
    """`NodeName` holds every node of the two graphs, and nothing else."""
    from graphs.react_graph import make_react_graph
    from graphs.search_graph import make_search_graph
    from nodes.policy.registry import ONE_ROUND_NODE

    assert set(make_search_graph().nodes) | set(make_react_graph().nodes) == set(NodeName)
    assert ONE_ROUND_NODE == NodeName.ONE_ROUND


def test_statuses_serialise_as_their_strings() -> None:
    """A member is its value wherever it is written: JSON, f-strings, str(), format()."""
    import json

    from stores.job_status import FINAL

    assert json.dumps({"status": JobStatus.BUDGET_EXHAUSTED}) == '{"status": "budget_exhausted"}'
    assert f"{JobStatus.COMPLETED}" == str(JobStatus.COMPLETED) == format(JobStatus.COMPLETED, "") == "completed"
    assert set(JobStatus) - FINAL == {"running"}
