"""Floors that only go down (tests/import_graph.py): no module imports a higher floor or sits on no
floor, no front door is imported from below, and no modules import each other in a circle — counting
imports inside functions. One test per package, so a package's own faults show apart (the flat
`quarry/*.py` modules sit on no floor until they move into quarry/app, cli, http, mcp and exports)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.import_graph import PACKAGES, scan

GRAPH = scan()


def _in(package: str, module: str) -> bool:
    return module == package or module.startswith(package + ".")


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_goes_up_a_floor(package: str) -> None:
    assert [m for m in GRAPH.unplaced() if _in(package, m)] == [], "not placed on a floor (tests/import_graph.py)"
    up = [f"{a.source} -> {a.target} (line {a.line})" for a in GRAPH.up_arrows() if _in(package, a.source)]
    assert up == [], "arrows up a floor"
    doors = [f"{a.source} -> {a.target}" for a in GRAPH.front_doors_from_below() if _in(package, a.source)]
    assert doors == [], "front doors imported from below"


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycle(package: str) -> None:
    assert [c for c in GRAPH.cycles() if any(_in(package, m) for m in c)] == []


def test_the_scanner_finds_local_cycles_and_arrows_up(tmp_path: Path) -> None:
    for package, files in {
        "low": {
            "__init__.py": "",
            "a.py": "def f():\n    from high import b\n",
            "c.py": "from . import a\n",
            "d.py": "import door\n",
        },
        "high": {
            "__init__.py": "",
            "b.py": "from low.a import f\nimport importlib\nimportlib.import_module('low.c')\n",
        },
    }.items():
        (tmp_path / package).mkdir()
        for name, text in files.items():
            (tmp_path / package / name).write_text(text)
    (tmp_path / "door.py").write_text("import low.c\n")
    graph = scan(tmp_path, ("low", "high", "door"), floors={"low": 0, "high": 1, "door": 2}, front_doors=("door",))
    assert sorted((a.source, a.target) for a in graph.arrows) == [
        ("door", "low.c"),
        ("high.b", "low.a"),
        ("high.b", "low.c"),
        ("low.a", "high.b"),
        ("low.c", "low.a"),
        ("low.d", "door"),
    ]
    assert graph.cycles() == [["high.b", "low.a", "low.c"]]
    assert sorted((a.source, a.target, a.line) for a in graph.up_arrows()) == [
        ("low.a", "high.b", 2),
        ("low.d", "door", 1),
    ]
    assert [(a.source, a.target) for a in graph.front_doors_from_below()] == [("low.d", "door")]
    assert graph.unplaced() == []
    graph.modules["stray"] = tmp_path / "door.py"
    assert graph.unplaced() == ["stray"]


def test_the_scanner_reads_code_refs_as_references(tmp_path: Path) -> None:
    """A `CodeRef("module", "attribute")` names code imported on first use: a reference, an arrow up
    when it names a higher floor, never an edge of the cycle check."""
    for package, files in {
        "low": {"__init__.py": "", "a.py": 'X = CodeRef("high.b", "f")\nY = ref.CodeRef(module="low.c", attr="g")\n'},
        "high": {"__init__.py": "", "b.py": "from low.a import X\n"},
    }.items():
        (tmp_path / package).mkdir()
        for name, text in files.items():
            (tmp_path / package / name).write_text(text)
    (tmp_path / "low" / "c.py").write_text('Z = "high.b:f"\n')  # a string is only a string
    graph = scan(tmp_path, ("low", "high"), floors={"low": 0, "high": 1})
    assert [(a.source, a.target, a.line) for a in graph.references] == [("low.a", "high.b", 1), ("low.a", "low.c", 2)]
    assert [(a.source, a.target) for a in graph.up_arrows()] == [("low.a", "high.b")]
    assert graph.cycles() == []
