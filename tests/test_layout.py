"""The layout keeps showing the architecture: small modules, and `nodes/` grouped into subpackages
that each say in one line what they hold (issue 21)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("stores", "observability", "nodes", "graphs", "workflows", "tuning", "evals", "quarry")
MAX_LINES = 400


def test_no_module_outside_tests_and_benchmarks_is_over_400_lines() -> None:
    long = {
        str(path.relative_to(ROOT)): n
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}, "split these by concern"


def test_nodes_is_grouped_into_documented_subpackages() -> None:
    nodes = ROOT / "nodes"
    assert sorted(p.name for p in nodes.glob("*.py")) == ["__init__.py"], "every node module lives in a subpackage"
    subpackages = sorted(p for p in nodes.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert {p.name for p in subpackages} >= {"job", "policy", "tools", "rounds", "evidence", "ranking", "llm", "react"}
    for package in subpackages:
        doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8")))
        assert doc and "\n" not in doc.strip(), f"nodes/{package.name} needs a one-line docstring"
