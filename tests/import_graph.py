"""The import graph of Quarry's product code, read with `ast`: floors, arrows that go up, cycles.

Run `python -m tests.import_graph` for the report; tests/test_import_layers.py fails on what it finds.

What counts as an import: every `import` and `from … import` anywhere in a module — at the top, inside
functions, inside `try`, and inside `if TYPE_CHECKING:` too (a type is a dependency as well; none of
them goes up or closes a cycle today, so this costs nothing). `from a.b import c` imports the module `a.b.c`
when there is one, else `a.b`; relative imports are resolved; `importlib.import_module("a.b")` with a
literal counts as importing `a.b`. Only imports of product modules (the packages below) are edges.
`CodeRef("package.module", "attribute")` calls (`nodes.policy.code_ref`: the policy registry's and the
graphs' late-bound references, imported on first use) are listed in the report and count as arrows up
when they name a higher floor, but are not edges of the cycle check (the registry names modules of its
own floor that import it: by design, late-bound).

Floors, lowest first (FLOORS): a module may import its own floor or lower. A module's floor is that
of the longest FLOORS key that is it or a package above it; a module no key covers is "not placed".
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("stores", "observability", "nodes", "graphs", "workflows", "tuning", "evals", "quarry")
# Lowest first; the same number is the same floor. The front doors (the top floor) may import each other.
FLOORS: Mapping[str, int] = {
    "stores": 0,
    "observability": 1,
    "nodes": 2,
    "graphs": 3,
    "workflows": 4,
    "tuning": 5,
    "quarry.app": 6,
    "quarry.exports": 6,
    "evals": 7,
    "quarry.cli": 8,
    "quarry.http": 8,
    "quarry.mcp": 8,
    "quarry.resident": 8,
    "quarry": 8,  # the package itself and `python -m quarry` (EXACT: they place no module under them)
    "quarry.__main__": 8,
}
# Keys that place only the module itself, not the modules under it.
EXACT = frozenset({"quarry", "quarry.__main__"})
FRONT_DOORS = ("quarry.cli", "quarry.http", "quarry.mcp", "quarry.resident")


@dataclass(frozen=True)
class Arrow:
    source: str
    target: str
    line: int


@dataclass
class Graph:
    modules: dict[str, Path] = field(default_factory=dict)
    arrows: list[Arrow] = field(default_factory=list)
    references: list[Arrow] = field(default_factory=list)  # CodeRef("module", "attribute") calls (not edges)
    floors: Mapping[str, int] = field(default_factory=lambda: FLOORS)
    front_doors: tuple[str, ...] = FRONT_DOORS

    def floor(self, module: str) -> int | None:
        return floor_of(module, self.floors)

    def is_front_door(self, module: str) -> bool:
        return any(module == d or module.startswith(d + ".") for d in self.front_doors)

    def package(self, module: str) -> str:
        return module.split(".", 1)[0]

    def up_arrows(self) -> list[Arrow]:
        """Imports, and CodeRef references, of a higher floor."""
        return [
            a
            for a in [*self.arrows, *self.references]
            if (s := self.floor(a.source)) is not None and (t := self.floor(a.target)) is not None and t > s
        ]

    def unplaced(self) -> list[str]:
        return sorted(m for m in self.modules if self.floor(m) is None)

    def front_doors_from_below(self) -> list[Arrow]:
        return [
            a
            for a in self.arrows
            if self.is_front_door(a.target) and not self.is_front_door(a.source) and a.source not in EXACT
        ]

    def cycles(self) -> list[list[str]]:
        g = nx.DiGraph()
        g.add_nodes_from(self.modules)
        g.add_edges_from((a.source, a.target) for a in self.arrows if a.source != a.target)
        return sorted(sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1)


def floor_of(module: str, floors: Mapping[str, int] | None = None, exact: frozenset[str] = EXACT) -> int | None:
    floors = FLOORS if floors is None else floors
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        key = ".".join(parts[:n])
        if key in floors and (key not in exact or n == len(parts)):
            return floors[key]
    return None


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def find_modules(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    """The modules of these packages (or single-file modules), by dotted name."""
    files = [
        path
        for package in packages
        for path in ([root / f"{package}.py"] if (root / f"{package}.py").is_file() else (root / package).rglob("*.py"))
        if "__pycache__" not in path.parts
    ]
    return {module_name(path, root): path for path in sorted(files)}


class _Imports(ast.NodeVisitor):
    def __init__(self, module: str, is_package: bool, known: set[str]) -> None:
        self.module, self.is_package, self.known = module, is_package, known
        self.found: list[tuple[str, int]] = []
        self.references: list[tuple[str, int]] = []

    def _known(self, name: str) -> str | None:
        parts = name.split(".")
        for n in range(len(parts), 0, -1):
            if (candidate := ".".join(parts[:n])) in self.known:
                return candidate
        return None

    def _add(self, name: str, line: int) -> None:
        if (target := self._known(name)) is not None:
            self.found.append((target, line))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name, node.lineno)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if node.level:
            package = self.module.split(".") if self.is_package else self.module.split(".")[:-1]
            package = package[: len(package) - (node.level - 1)]
            base = ".".join([*package, base] if base else package)
        for alias in node.names:
            full = f"{base}.{alias.name}"
            self._add(full if full in self.known else base, node.lineno)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name == "import_module" and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                self._add(arg.value, node.lineno)
        if name == "CodeRef":
            self._reference(node)
        self.generic_visit(node)

    def _reference(self, node: ast.Call) -> None:
        # A `CodeRef("package.module", "attribute")` (nodes.policy.code_ref: imported on first use).
        # Reported apart, not an edge: the registry names modules of its own floor by design, and
        # counting them would make most of nodes/ one cycle through it.
        module = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "module"), None)
        if isinstance(module, ast.Constant) and isinstance(module.value, str) and module.value in self.known:
            self.references.append((module.value, node.lineno))


def scan(
    root: Path = ROOT,
    packages: Iterable[str] = PACKAGES,
    floors: Mapping[str, int] = FLOORS,
    front_doors: tuple[str, ...] = FRONT_DOORS,
) -> Graph:
    graph = Graph(modules=find_modules(root, packages), floors=floors, front_doors=front_doors)
    known = set(graph.modules)
    for module, path in graph.modules.items():
        visitor = _Imports(module, path.name == "__init__.py", known)
        visitor.visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        seen: set[str] = set()
        for target, line in visitor.found:
            if target != module and target not in seen:
                seen.add(target)
                graph.arrows.append(Arrow(module, target, line))
        graph.references += [Arrow(module, target, line) for target, line in visitor.references]
    return graph


def report(graph: Graph, root: Path = ROOT) -> str:
    out: list[str] = []
    packages: dict[str, list[int]] = {}
    for module, path in graph.modules.items():
        counts = packages.setdefault(graph.package(module), [0, 0])
        counts[0] += 1
        counts[1] += len(path.read_text(encoding="utf-8").splitlines())
    total = [sum(c[0] for c in packages.values()), sum(c[1] for c in packages.values())]
    out.append(f"{'package':<16}{'modules':>8}{'lines':>8}")
    out += [f"{p:<16}{m:>8}{n:>8}" for p, (m, n) in sorted(packages.items(), key=lambda kv: kv[0])]
    out.append(f"{'total':<16}{total[0]:>8}{total[1]:>8}")
    out.append("")
    out.append(
        "floors, lowest first: "
        + " < ".join(
            " = ".join(k for k in FLOORS if FLOORS[k] == f and k not in EXACT) for f in sorted(set(FLOORS.values()))
        )
    )
    sections = [
        ("not placed on a floor", graph.unplaced()),
        ("arrows up a floor", [f"{a.source} -> {a.target}  ({_where(graph, a, root)})" for a in graph.up_arrows()]),
        ("cycles", [" <-> ".join(c) for c in graph.cycles()]),
        (
            "front doors imported from below",
            [f"{a.source} -> {a.target}  ({_where(graph, a, root)})" for a in graph.front_doors_from_below()],
        ),
    ]
    sections.append(
        (
            'references by name (CodeRef("module", "attribute"), imported on first use; in arrows up, not in cycles)',
            [f"{a.source} -> {a.target}  ({_where(graph, a, root)})" for a in graph.references],
        )
    )
    for title, lines in sections:
        out.append("")
        out.append(f"{title}: {len(lines)}")
        out += [f"  {line}" for line in lines]
    return "\n".join(out)


def _where(graph: Graph, arrow: Arrow, root: Path) -> str:
    return f"{graph.modules[arrow.source].relative_to(root)}:{arrow.line}"


if __name__ == "__main__":
    sys.stdout.write(report(scan()) + "\n")
