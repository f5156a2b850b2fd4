"""docs/usage.md's command reference stays true: every command the `quarry` command line has gets
its own section, and every option of the command is named in that section. A command or option
added without a line in the reference fails here, not in a user's hands."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import typer.main

from quarry.cli import app

USAGE = Path(__file__).resolve().parent.parent / "docs" / "usage.md"


def commands() -> dict[str, Any]:
    """Every leaf command by its full name ("search", "job list"), read from the command tree (a
    group is whatever lists commands: typer ships its own click)."""
    root = typer.main.get_command(app)
    found: dict[str, Any] = {}

    def walk(group: Any, prefix: str) -> None:
        ctx = group.context_class(group)
        for name in group.list_commands(ctx):
            cmd = group.get_command(ctx, name)
            if hasattr(cmd, "list_commands"):
                walk(cmd, f"{prefix}{name} ")
            elif cmd is not None:
                found[f"{prefix}{name}"] = cmd

    assert hasattr(root, "list_commands")
    walk(root, "")
    return found


def sections() -> dict[str, str]:
    """The reference's sections by command name: the text under each "### `quarry NAME`"."""
    text = USAGE.read_text()
    parts = re.split(r"^### `quarry ([a-z -]+)`$", text, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def test_every_command_has_a_section_naming_each_of_its_options() -> None:
    documented = sections()
    missing = []
    for name, cmd in commands().items():
        if name not in documented:
            missing.append(f"quarry {name}: no section")
            continue
        for param in cmd.params:
            if param.param_type_name == "option" and not getattr(param, "hidden", False):
                longest = max(param.opts, key=len)
                if f"`{longest}`" not in documented[name]:
                    missing.append(f"quarry {name}: {longest}")
    assert not missing, "docs/usage.md's command reference lacks:\n" + "\n".join(missing)


def test_the_reference_names_no_command_that_is_gone() -> None:
    gone = set(sections()) - set(commands())
    assert not gone, f"docs/usage.md documents commands the command line no longer has: {sorted(gone)}"


def test_the_tree_is_read_whole() -> None:
    """The walk itself: the lazy groups give their commands, the job group included."""
    names = commands()
    assert {"search", "read", "run", "job list", "job result", "job steer"} <= set(names)
