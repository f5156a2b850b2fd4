"""`quarry add` ids (issue 20, item 1): an added file never silently replaces a different file's
document, ids follow the folder-ingest rule relative to a root the user can name, and the error
names both paths."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from quarry.cli import app
from stores.collection import Collection, ingest
from stores.collection_edits import add
from stores.errors import QuarryError
from stores.file_formats.corpus_reader import SOURCE_PATH


def readme(folder: Path, project: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "README.md"
    path.write_text(f"# {project}\n\n{project} is a tool for lexical ranking of notes.\n", encoding="utf-8")
    return path


@pytest.fixture
def collection(tmp_path: Path) -> tuple[Path, Path]:
    home, docs = tmp_path / "home", tmp_path / "docs"
    docs.mkdir()
    (docs / "intro.md").write_text("# Intro\n\nA note on graph mining.\n", encoding="utf-8")
    ingest(docs, "notes", home=home)
    return home, tmp_path


def test_a_second_file_with_the_same_name_is_refused_naming_both_paths(collection) -> None:
    home, tmp = collection
    first, second = readme(tmp / "a", "Alpha"), readme(tmp / "b", "Bravo")
    assert add("notes", [first], home=home).added == 1
    with pytest.raises(QuarryError) as info:
        add("notes", [second], home=home)
    assert info.value.code == "id_collision"
    assert str(first) in info.value.message and str(second) in info.value.message
    kept = Collection("notes", home).corpus.get("README")
    assert kept is not None and "Alpha" in kept.text  # the first text is still there


def test_the_same_file_changed_is_an_update(collection) -> None:
    home, tmp = collection
    path = readme(tmp / "a", "Alpha")
    add("notes", [path], home=home)
    path.write_text("# Alpha\n\nAlpha now ranks graphs too.\n", encoding="utf-8")
    report = add("notes", [path], home=home)
    assert (report.added, report.updated) == (0, 1)
    stored = Collection("notes", home).corpus.get("README")
    assert stored is not None and stored.extras[SOURCE_PATH] == str(path)


def test_root_gives_folder_ids_like_a_folder_ingest(collection) -> None:
    home, tmp = collection
    first, second = readme(tmp / "a", "Alpha"), readme(tmp / "b", "Bravo")
    report = add("notes", [first, second], home=home, root=tmp)
    assert report.added == 2
    corpus = Collection("notes", home).corpus
    assert corpus.has("a/README") and corpus.has("b/README") and not corpus.has("README")


def test_a_source_outside_root_is_refused(collection) -> None:
    home, tmp = collection
    path = readme(tmp / "a", "Alpha")
    with pytest.raises(QuarryError) as info:
        add("notes", [path], home=home, root=tmp / "docs")
    assert info.value.code == "outside_root"


def test_the_command_line_says_it_in_one_message(collection) -> None:
    home, tmp = collection
    first, second = readme(tmp / "a", "Alpha"), readme(tmp / "b", "Bravo")
    runner = CliRunner()
    assert runner.invoke(app, ["--home", str(home), "add", "notes", str(first)]).exit_code == 0
    result = runner.invoke(app, ["--home", str(home), "add", "notes", str(second)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "id_collision" in result.output and "--root" in result.output
    ok = runner.invoke(app, ["--home", str(home), "add", "notes", str(second), "--root", str(tmp)])
    assert ok.exit_code == 0, ok.output
    assert Collection("notes", home).corpus.has("b/README")


def test_a_collision_under_a_given_root_does_not_suggest_giving_one(collection) -> None:
    home, tmp = collection
    first, second = readme(tmp / "x" / "a", "Alpha"), readme(tmp / "y" / "a", "Bravo")
    add("notes", [first], home=home, root=tmp / "x")
    with pytest.raises(QuarryError) as info:
        add("notes", [second], home=home, root=tmp / "y")
    assert info.value.code == "id_collision" and "add with --root" not in info.value.hint
