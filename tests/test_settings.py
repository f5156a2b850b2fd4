"""One settings catalogue (issue 46): every QUARRY_* variable is named once, in stores/settings/,
read there when it is needed, documented in docs/settings.md, and the pydantic-settings object
agrees with the readers the product code calls."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from stores import settings
from stores.errors import QuarryError
from stores.home import quarry_home
from stores.settings.model import Settings
from stores.settings.table import markdown

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("stores", "observability", "nodes", "graphs", "workflows", "tuning", "evals", "quarry")
SETTINGS_DIR = ROOT / "stores" / "settings"
# A string that is a variable's whole name, or the bare prefix (a name about to be built): a read.
NAME = re.compile(r"QUARRY_[A-Z0-9_]*")


def product_modules() -> list[Path]:
    return [
        path
        for package in PRODUCT
        if (ROOT / package).is_dir()
        for path in sorted((ROOT / package).rglob("*.py"))
        if SETTINGS_DIR not in path.parents
    ]


def docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring constants of a module and of its classes and functions."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def test_no_product_module_names_a_variable_itself() -> None:
    """`os.environ.get("QUARRY_X")`, `envvar="QUARRY_X"`, `{"QUARRY_X": …}`, `b"QUARRY_X"`,
    `f"QUARRY_{x}"` outside stores/settings/ fail; prose that mentions a variable (a message, a
    docstring, a comment) is not a read."""
    found = []
    for path in product_modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = docstrings(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Constant) or id(node) in skip:
                continue
            value = node.value.decode("latin-1") if isinstance(node.value, bytes) else node.value
            if isinstance(value, str) and NAME.fullmatch(value.strip()):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {value!r}")
    assert found == [], "read it through stores.settings (a reader, VARIABLE.name or entries())"


def test_every_variable_the_code_mentions_is_in_the_catalogue() -> None:
    known = {var.name for var in settings.VARIABLES} | {settings.PREFIX}
    mentioned = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in product_modules()
        for name in NAME.findall(path.read_text(encoding="utf-8"))
        if name not in known
    }
    assert mentioned == set(), "add the variable to stores/settings/__init__.py (and regenerate docs/settings.md)"


def test_the_catalogue_is_consistent() -> None:
    names = [var.name for var in settings.VARIABLES]
    assert len(set(names)) == len(names) and all(n.startswith(settings.PREFIX) for n in names)
    assert set(settings.READERS) == set(settings.VARIABLES)
    assert all(var.doc.endswith(".") and "|" not in var.doc + var.shown for var in settings.VARIABLES)


def test_docs_settings_is_the_catalogue_table() -> None:
    page = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert page == markdown(), "regenerate it: python -m stores.settings.table > docs/settings.md"
    for var in settings.VARIABLES:
        assert f"| `{var.name}` |" in page
    assert [line for line in page.splitlines() if len(line) > 120 and not line.startswith("|")] == []


def test_the_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in settings.VARIABLES:
        monkeypatch.delenv(var.name, raising=False)
    assert settings.home() == ".quarry" and quarry_home() == (Path.cwd() / ".quarry").resolve()
    assert (settings.temporal_address(), settings.task_queue(), settings.chroma_host()) == (None, None, None)
    assert (settings.temporal_namespace(), settings.ui_port(), settings.ui_url()) == ("default", 8233, "")
    assert (settings.chroma_port(), settings.embed_precision(), settings.embed_threads()) == (8000, "auto", None)
    assert (settings.embed_concurrency(), settings.api_token(), settings.allow_hosts()) == (1, None, [])
    assert settings.trace_files() and settings.resident() and not settings.self_tune()
    assert settings.models() is None


def test_a_setting_is_read_when_it_is_asked_for(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("QUARRY_HOME", str(tmp_path / "a"))
    assert quarry_home() == tmp_path / "a"
    monkeypatch.setenv("QUARRY_HOME", str(tmp_path / "b"))
    assert quarry_home() == tmp_path / "b"
    monkeypatch.setenv("QUARRY_HOME", "")
    assert settings.home() == ".quarry", "an empty value counts as unset"
    monkeypatch.setenv("QUARRY_RESIDENT", " Off ")
    assert not settings.resident()
    monkeypatch.setenv("QUARRY_EMBED_THREADS", "-3")
    assert settings.embed_threads() is None, "a value that is not a positive count is ignored, as before"
    assert settings.temporal_namespace({"QUARRY_TEMPORAL_NAMESPACE": ""}) == "", "a mapping is read instead"


def test_a_bad_value_says_which_and_how_to_fix_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QUARRY_CHROMA_PORT", "80x")
    monkeypatch.delenv("QUARRY_CHROMA_HOST", raising=False)
    from stores.chroma_build import chroma_server

    assert chroma_server() is None, "the port is not read without a host"
    monkeypatch.setenv("QUARRY_CHROMA_HOST", "chroma.local")
    with pytest.raises(QuarryError) as err:
        chroma_server()
    assert err.value.code == "bad_config"
    assert str(err.value) == (
        "QUARRY_CHROMA_PORT must be a port number, got '80x'\n  hint: set it to the port of `chroma run` (default 8000)"
    )
    monkeypatch.setenv("QUARRY_CHROMA_PORT", " 8001 ")
    assert chroma_server() == ("chroma.local", 8001)
    with pytest.raises(ValueError, match="invalid literal for int"):
        settings.ui_port({"QUARRY_UI_PORT": "eighty"})


def test_entries_name_the_variables_for_a_child_process() -> None:
    assert settings.entries(home=Path("/h"), ui_port=8300) == {"QUARRY_HOME": "/h", "QUARRY_UI_PORT": "8300"}
    with pytest.raises(TypeError, match="no such setting: hme"):
        settings.entries(hme="/h")
    assert settings.quarry_entries({"QUARRY_X": "1", "PATH": "/bin"}) == {"QUARRY_X": "1"}


SAMPLES = ("", "0", "1", " 7 ", "off", "BF16", "auto", "chroma.local", "a b", "70000", "-2")


def outcome(read: Callable[[], object]) -> object:
    """A read's value, or the kind of error it raised (with the message for a QuarryError)."""
    try:
        return ("value", read())
    except QuarryError as exc:
        return ("quarry error", str(exc))
    except ValueError:
        return ("value error",)


@pytest.mark.parametrize("var", settings.VARIABLES, ids=lambda var: var.name)
def test_the_settings_object_agrees_with_the_readers(monkeypatch: pytest.MonkeyPatch, var: settings.Var) -> None:
    for other in settings.quarry_entries():
        monkeypatch.delenv(other)
    reader = settings.READERS[var]
    assert getattr(Settings(), var.field) == reader({})
    for raw in SAMPLES:
        monkeypatch.setenv(var.name, raw)
        mine = outcome(lambda: getattr(Settings(), var.field))
        assert mine == outcome(lambda: reader(None)), (var.name, raw)


def test_reading_a_setting_loads_neither_pydantic_nor_typing() -> None:
    """The `quarry` executable's first step reads QUARRY_HOME and QUARRY_RESIDENT: it stays lean."""
    code = "import sys, stores.settings as s; s.home(); s.resident(); print(' '.join(sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    loaded = {m.split(".")[0] for m in done.stdout.split()}
    assert loaded & {"pydantic", "pydantic_settings", "typing"} == set()
