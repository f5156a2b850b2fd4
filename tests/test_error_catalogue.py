"""The error catalogue (stores.error_catalogue) against the code: an AST scan of the product finds
every error code it gives — a QuarryError's (or a subclass's) code, a tool's error to the model, an
HTTP error body, an ApplicationError's type, a `{code, message}` record — and every code it compares
an error's code with; each must be in the catalogue, and each catalogue entry must be given somewhere.
docs/errors.md is the catalogue as a table: regenerate it with `python -m tests.test_error_catalogue`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from stores.error_catalogue import CATALOGUE, ENTRIES, ErrorCode, exit_status, http_status

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("stores", "observability", "nodes", "graphs", "workflows", "tuning", "evals", "quarry")
DOC = ROOT / "docs" / "errors.md"
# A code passed on from elsewhere (a parameter, `err.code`, a Temporal failure's type): said where it was made.
FORWARDED = "<forwarded>"


@dataclass
class Scan:
    """What the scan found: code → the sites that give it; codes compared with; the literal HTTP
    statuses given with a code; and the sites whose code cannot be read (an f-string, a call)."""

    given: dict[str, list[str]] = field(default_factory=dict)
    compared: dict[str, list[str]] = field(default_factory=dict)
    statuses: list[tuple[str, int, str]] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)


def _name(func: ast.expr) -> str:
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _assignments(tree: ast.Module) -> dict[str, list[ast.expr]]:
    """Every value a plain name is assigned in the module (any scope), by name."""
    found: dict[str, list[ast.expr]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found.setdefault(target.id, []).append(node.value)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            found.setdefault(node.target.id, []).append(node.value)
    return found


def _codes(expr: ast.expr, names: dict[str, list[ast.expr]], depth: int = 0) -> set[str] | None:
    """The codes `expr` can be: string literals, either arm of a conditional, a name's assigned
    values, the members of a literal set/tuple/list (or frozenset of one); {FORWARDED} for a code
    passed on (a parameter, an attribute, a subscript, str(...) of one); None when unreadable."""
    if isinstance(expr, ast.Constant):
        return {expr.value} if isinstance(expr.value, str) else None
    if isinstance(expr, ast.IfExp):
        body, orelse = _codes(expr.body, names, depth), _codes(expr.orelse, names, depth)
        return None if body is None or orelse is None else body | orelse
    if isinstance(expr, (ast.Set, ast.Tuple, ast.List)):
        parts = [_codes(e, names, depth) for e in expr.elts]
        return None if any(p is None for p in parts) else set().union(*(p for p in parts if p is not None))
    if isinstance(expr, ast.Name):
        if expr.id not in names:
            return {FORWARDED}  # a parameter
        if depth > 3:
            return None
        values = [_codes(v, names, depth + 1) for v in names[expr.id]]
        return None if any(v is None for v in values) else set().union(*(v for v in values if v is not None))
    if isinstance(expr, ast.Call) and _name(expr.func) in ("str", "frozenset", "set") and len(expr.args) == 1:
        inner = _codes(expr.args[0], names, depth)
        return {FORWARDED} if inner is None and _name(expr.func) == "str" else inner
    if isinstance(expr, (ast.Attribute, ast.Subscript)):
        return {FORWARDED}
    return None


def _error_classes(trees: dict[str, ast.Module]) -> dict[str, int | None]:
    """QuarryError and its subclasses → the position of `code` among their arguments (None: the
    subclass fixes its code in its own `super().__init__`)."""
    classes: dict[str, int | None] = {"QuarryError": 0}
    grown = True
    while grown:
        grown = False
        for tree in trees.values():
            for node in ast.walk(tree):
                if not isinstance(node, ast.ClassDef) or node.name in classes:
                    continue
                if any(_name(base) in classes for base in node.bases):
                    classes[node.name] = _code_position(node)
                    grown = True
    return classes


def _code_position(cls: ast.ClassDef) -> int | None:
    for item in cls.body:
        if isinstance(item, ast.FunctionDef) and item.name == "__init__":
            params = [a.arg for a in item.args.args[1:]]
            return params.index("code") if "code" in params else None
    return 0  # no __init__ of its own: QuarryError's


def _code_argument(call: ast.Call, classes: dict[str, int | None], in_error_class: bool) -> ast.expr | None:
    """The expression a code-giving call passes as the code, or None for any other call."""
    name, keywords = _name(call.func), {k.arg: k.value for k in call.keywords}
    position: int | None
    if name == "__init__":  # a subclass's super().__init__(code, ...)
        target = call.func.value if isinstance(call.func, ast.Attribute) else None
        is_super = isinstance(target, ast.Call) and _name(target.func) == "super"
        position = 0 if is_super and in_error_class else None
    elif name in classes:
        position = classes[name]
    elif name == "error_response":
        position = 1
    elif name == "ToolError":  # nodes.tools.results.ToolError takes `code=`; the MCP SDK's takes a message
        return keywords.get("code")
    elif name == "ApplicationError":
        return keywords.get("type")
    else:
        return None
    if position is None:
        return None
    return keywords.get("code") or (call.args[position] if len(call.args) > position else None)


def scan_source(source: str, where: str, scan: Scan, classes: dict[str, int | None]) -> None:
    """Add what one module gives and compares to `scan`."""
    tree = ast.parse(source)
    names = _assignments(tree)

    def add(target: dict[str, list[str]], expr: ast.expr, line: int) -> None:
        codes = _codes(expr, names)
        if codes is None:
            scan.unreadable.append(f"{where}:{line}: {ast.unparse(expr)}")
        for code in (codes or set()) - {FORWARDED, ""}:
            target.setdefault(code, []).append(f"{where}:{line}")

    error_class_bodies = {
        id(n)
        for cls in ast.walk(tree)
        if isinstance(cls, ast.ClassDef) and cls.name in classes and cls.name != "QuarryError"
        for n in ast.walk(cls)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            code = _code_argument(node, classes, id(node) in error_class_bodies)
            if code is not None:
                add(scan.given, code, node.lineno)
                status = node.args[0] if _name(node.func) == "error_response" and node.args else None
                if isinstance(status, ast.Constant) and isinstance(code, ast.Constant):
                    scan.statuses.append((code.value, status.value, f"{where}:{node.lineno}"))
        elif isinstance(node, ast.Dict):
            keys = {k.value: v for k, v in zip(node.keys, node.values, strict=True) if isinstance(k, ast.Constant)}
            if "code" in keys and "message" in keys:
                add(scan.given, keys["code"], node.lineno)
        elif isinstance(node, ast.Compare) and _is_code(node.left):
            for comparator in node.comparators:
                codes = _codes(comparator, names)
                if codes is not None:
                    for code in codes - {FORWARDED, ""}:
                        scan.compared.setdefault(code, []).append(f"{where}:{node.lineno}")


def _is_code(expr: ast.expr) -> bool:
    """`err.code` or `record["code"]`: an error's code."""
    if isinstance(expr, ast.Attribute):
        return expr.attr == "code"
    return isinstance(expr, ast.Subscript) and isinstance(expr.slice, ast.Constant) and expr.slice.value == "code"


def _modules() -> Iterator[tuple[str, str]]:
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            yield str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")


def scan_product() -> Scan:
    sources = dict(_modules())
    classes = _error_classes({where: ast.parse(text) for where, text in sources.items()})
    scan = Scan()
    for where, text in sources.items():
        scan_source(text, where, scan, classes)
    return scan


# -- the scanner, on a snippet ---------------------------------------------------------------------

SNIPPET = """
UNKNOWN = "snip_constant"
class Picky(QuarryError):
    def __init__(self, problems):
        super().__init__("snip_fixed", "bad")
class Coded(QuarryError):
    def __init__(self, message, code): super().__init__(code, message)
def f(x, code):
    what = "snip_a" if x else "snip_b"
    raise QuarryError(what, "m")
    raise QuarryError(code=UNKNOWN, message="m")
    raise Picky(["not a code"])
    raise Coded("m", "snip_coded")
    raise QuarryError(err.code, "forwarded")
    raise QuarryError(f"snip_{x}", "unreadable")
    ToolError(tool="t", code="snip_tool", message="m", hint="h")
    ToolError("an MCP message, not a code")
    error_response(418, "snip_http", "m")
    ApplicationError("m", type="snip_type")
    record = {"code": "snip_record", "message": "m"}
    if err.code in ("snip_seen", "snip_seen_too") or record["code"] == "snip_record": pass
"""


def test_the_scanner_finds_each_kind_of_code_giving_site() -> None:
    scan = Scan()
    tree = {"snippet": ast.parse(SNIPPET)}
    scan_source(SNIPPET, "snippet", scan, _error_classes(tree))
    assert set(scan.given) == {
        "snip_constant", "snip_fixed", "snip_a", "snip_b", "snip_coded",
        "snip_tool", "snip_http", "snip_type", "snip_record",
    }  # fmt: skip
    assert set(scan.compared) == {"snip_seen", "snip_seen_too", "snip_record"}
    assert scan.statuses == [("snip_http", 418, "snippet:18")]
    assert len(scan.unreadable) == 1 and "snip_{x}" in scan.unreadable[0]


# -- the product against the catalogue -------------------------------------------------------------


def test_every_code_the_product_gives_or_compares_is_in_the_catalogue() -> None:
    scan = scan_product()
    assert not scan.unreadable, f"codes the scan cannot read (use a literal): {scan.unreadable}"
    missing = {code: sites for code, sites in (scan.given | scan.compared).items() if code not in CATALOGUE}
    assert not missing, f"codes missing from stores/error_catalogue.py: {missing}"


def test_no_catalogue_entry_is_dead() -> None:
    dead = sorted(set(CATALOGUE) - set(scan_product().given))
    assert not dead, f"catalogued codes nothing gives: {dead}"


def test_each_code_is_catalogued_once() -> None:
    assert len(ENTRIES) == len(CATALOGUE), [e.code for e in ENTRIES if [x.code for x in ENTRIES].count(e.code) > 1]


def test_the_http_statuses_given_with_a_code_are_the_catalogues() -> None:
    """An HTTP error body built with a literal status (quarry.http.app) says its code's status; a
    body that fails the schema is `bad_request` with 422 (as the entry says), a QuarryError's 400."""
    for code, status, site in scan_product().statuses:
        if (code, status) != ("bad_request", 422):
            assert CATALOGUE[code].http_status == status, f"{site}: {code} {status}"


def test_the_tables_read_the_catalogue() -> None:
    """The command line's exit status and the HTTP status are the catalogue's (with the defaults
    they always had: 2 and 400 for a code passed on from elsewhere)."""
    import pytest
    import typer

    from nodes.job.heartbeat import RETRYABLE_CODES
    from quarry.cli.console import fail
    from quarry.http.common import status_of
    from stores.errors import QuarryError

    for code, status in (("job_finished", 1), ("not_finished", 1), ("bad_option", 2), ("SomePythonError", 2)):
        with pytest.raises(typer.Exit) as exited:
            fail(QuarryError(code, "message", "hint"))
        assert exited.value.exit_code == exit_status(code) == status, code
    assert exit_status("SomePythonError") == 2 and status_of("SomePythonError") == 400
    for entry in ENTRIES:
        if entry.http_status is not None:
            assert status_of(entry.code) == http_status(entry.code) == entry.http_status
    assert {"chroma_unreachable", "collection_busy", "endpoint_down"} == RETRYABLE_CODES


# -- docs/errors.md ----------------------------------------------------------------------------------

HEADER = """# Error codes

Every failure Quarry reports carries a stable code (for scripts), a message and a hint. The command
line prints `error (CODE): message` and the hint, then exits with the status below; the HTTP API
answers `{code, message, hint}` with the HTTP status below; a failed job's result carries the same
record. The message and hint of each error name the specific path, id or command; this table says
what each code means in general. "—" means the code never reaches the command line (it comes from
the HTTP server itself); an HTTP status of "—" is that of the HTTP error it wraps.

This file is generated from `stores/error_catalogue.py` (`python -m tests.test_error_catalogue`);
tests/test_error_catalogue.py fails when they differ.

| code | meaning | what to do | exit | HTTP |
|---|---|---|---|---|
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _row(entry: ErrorCode) -> str:
    exit_ = "—" if entry.exit_status is None else str(entry.exit_status)
    http = "—" if entry.http_status is None else str(entry.http_status)
    return f"| `{entry.code}` | {_cell(entry.meaning)} | {_cell(entry.hint)} | {exit_} | {http} |"


def errors_markdown() -> str:
    return HEADER + "".join(_row(entry) + "\n" for entry in sorted(ENTRIES, key=lambda e: e.code))


def test_docs_errors_md_is_the_catalogue() -> None:
    assert DOC.read_text(encoding="utf-8") == errors_markdown(), "regenerate: python -m tests.test_error_catalogue"
    long = [line for line in DOC.read_text(encoding="utf-8").splitlines() if len(line) > 120 and line[:1] != "|"]
    assert not long


if __name__ == "__main__":
    DOC.write_text(errors_markdown(), encoding="utf-8")
    print(f"wrote {DOC.relative_to(ROOT)}")
