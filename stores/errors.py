"""Typed errors with a code and a repair hint.

Every failure a user can cause (bad input, missing index, unknown docid) is raised as a
`QuarryError` so the command line can print *what went wrong and what to do* and exit with a
stable status, instead of a stack trace.
"""
from __future__ import annotations

from collections.abc import Callable


class QuarryError(Exception):
    """A user-facing failure: `code` is stable for scripts, `hint` says how to repair it."""

    def __init__(self, code: str, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\n  hint: {self.hint}" if self.hint else self.message


class IngestError(QuarryError):
    """Ingestion rejected the input; `problems` lists every bad record as `file:line: reason`."""

    def __init__(self, problems: list[str], hint: str = "") -> None:
        shown = "\n".join(f"  {p}" for p in problems[:50])
        more = f"\n  … and {len(problems) - 50} more" if len(problems) > 50 else ""
        super().__init__(
            "bad_input",
            f"ingest rejected {len(problems)} problem(s); nothing was changed:\n{shown}{more}",
            hint or "fix the records named above (file:line) and run the ingest again",
        )
        self.problems = problems


def run_script(main: Callable[[], None]) -> None:
    """Run a module's `main` (evals/, bench/ scripts) so a QuarryError ends it with one line and
    its hint on stderr, exit 2 — never a traceback — as the `quarry` command does."""
    import sys

    try:
        main()
    except QuarryError as err:
        print(f"error ({err.code}): {err}", file=sys.stderr)
        raise SystemExit(2) from None
