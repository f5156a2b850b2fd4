"""A typed reference to code that is imported on first use: `CodeRef("nodes.llm.policy", "LLMPolicy")`.

The policy registry (`nodes.policy.registry`) and the graphs' builders (`graphs.state.GRAPH_BUILDERS`)
name code they must not import when they are imported: code on a higher floor (the registry is on the
nodes floor, the graphs above it), or code that pulls in a heavy stack (LangChain for the `llm`
policy) which a lean start-up never loads (tests/test_lean_startup.py). A `CodeRef` holds the module
and the attribute apart, so nothing parses a string; `load()` imports the module the first time and
keeps what it found. `str()` is the familiar `"module:attribute"` form, for anything that shows it.

tests/import_graph.py reads `CodeRef("module", "attribute")` calls as references by name (listed in its
report, counted as arrows up when they name a higher floor); tests/test_policy_registry.py checks that
every registered reference resolves.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CodeRef:
    """The attribute `attr` of the module `module`, imported on first use."""

    module: str  # a dotted module name: "nodes.rounds.answer"
    attr: str  # an attribute of it: "build_result"

    def __post_init__(self) -> None:
        if not all(part.isidentifier() for part in self.module.split(".")) or not self.attr.isidentifier():
            raise ValueError(f"not a module and an attribute: {self.module!r}, {self.attr!r}")

    def load(self) -> Any:
        """The attribute, importing its module the first time."""
        try:
            return _LOADED[self]
        except KeyError:
            value = _LOADED[self] = getattr(importlib.import_module(self.module), self.attr)
            return value

    def __str__(self) -> str:
        return f"{self.module}:{self.attr}"


# What each reference has loaded (a reference is a value: equal references share one entry).
_LOADED: dict[CodeRef, Any] = {}

__all__ = ["CodeRef"]
