"""docs/settings.md, generated from the catalogue: `python -m stores.settings.table > docs/settings.md`
(tests/test_settings.py fails when the file and the catalogue differ)."""

from __future__ import annotations

from stores.settings import VARIABLES

INTRO = """# Settings

Quarry reads these environment variables, and no others of its own. Each is read when it is
needed (not once at start), by its reader in `stores/settings/__init__.py`, which holds this list;
`stores.settings.model.Settings` is the same list as one pydantic-settings object. A command-line
option named beside a variable sets the same thing for one command.

This file is generated: `python -m stores.settings.table > docs/settings.md`.
"""


def markdown() -> str:
    """The whole page: the introduction, then one table row per variable."""
    rows = ["| Variable | Default | What it does |", "| --- | --- | --- |"]
    rows += [f"| `{var.name}` | {var.shown} | {var.doc} |" for var in VARIABLES]
    return f"{INTRO}\n" + "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(markdown(), end="")
