"""Typed errors with a code and a repair hint.

Every failure a user can cause (bad input, missing index, unknown docid) is raised as a
`QuarryError` so the command line can print *what went wrong and what to do* and exit with a
stable status, instead of a stack trace.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import NoReturn


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


def run_script(main: Callable[[], None]) -> NoReturn:
    """Run a program's `main` (the `quarry` command, evals/ and bench/ scripts) so a QuarryError
    ends it with one line and its hint on stderr, exit 2 — never a traceback; then `leave`."""
    import sys

    code = 0
    try:
        main()
    except QuarryError as err:
        print(f"error ({err.code}): {err}", file=sys.stderr)
        code = 2
    except SystemExit as exc:  # argparse's usage errors, a script's own exit status
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    leave(code)


def leave(code: int) -> NoReturn:
    """End the process with `code`, without interpreter teardown once a Temporal client or worker
    has run in it.

    Why: the Temporal SDK's Rust bridge keeps Tokio threads that can outlive the event loop; if
    one touches the GIL while CPython finalises, the process aborts with "Fatal Python error:
    PyGILState_Release" (exit 134) after its work is done — measured here in 2 of 40 `quarry run`
    calls (temporalio/sdk-python#300, open), and seen in a drill worker stopped by SIGTERM. The
    exit handlers still run first (span exporters flush, logging closes), as they would at a
    normal exit; only the finalisation that can crash is skipped.
    """
    import sys

    if "temporalio.bridge.temporal_sdk_bridge" in sys.modules:
        import atexit
        import os

        sys.stdout.flush()
        sys.stderr.flush()
        atexit._run_exitfuncs()  # CPython's hook for what a normal exit runs before finalising
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
