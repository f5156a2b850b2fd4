"""Functions short enough to read at once: none in the product packages over 60 lines, unless the
line right above its `def` (or above its decorators) is a comment starting with `# Long:` that
says why (a typer command that is mostly its options, a table of cases, a list of tools)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("stores", "nodes", "graphs", "workflows", "observability", "tuning", "evals", "quarry")
MAX_LINES = 60


def _explained(lines: list[str], node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    above = lines[first - 2].strip() if first >= 2 else ""
    return above.startswith("# Long:")


def long_functions() -> list[str]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            lines = text.splitlines()
            for node in ast.walk(ast.parse(text)):
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_LINES and not _explained(lines, node):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_no_function_over_60_lines_without_saying_why() -> None:
    assert long_functions() == [], (
        f"functions over {MAX_LINES} lines: split them into named steps, or put a comment starting "
        "'# Long:' right above the def (or its decorators) saying why not"
    )


def test_the_check_sees_a_long_function_and_its_reason() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_LINES))
    source = f"def f():\n{body}\n# Long: a table\n@decorator\ndef g():\n{body}"
    tree = ast.parse(source)
    f, g = (n for n in tree.body if isinstance(n, ast.FunctionDef))
    lines = source.splitlines()
    assert not _explained(lines, f)
    assert _explained(lines, g)
