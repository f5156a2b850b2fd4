"""How a Quarry program ends: a QuarryError as one line and exit 2, and an exit that the Temporal
SDK's bridge threads cannot crash.

Every program — the `quarry` command, each evals/ and bench/ script, a drill's worker — ends through
`run_script` (or `leave` directly). Its own module in `workflows/` because the way it leaves exists
for the Temporal SDK's sake (see `leave`), and because process exit is no store's business.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NoReturn

from stores.errors import QuarryError, disk_full, printable


def run_script(main: Callable[[], None]) -> NoReturn:
    """Run a program's `main` (the `quarry` command, evals/ and bench/ scripts) so a QuarryError
    (or a full disk, see `disk_full`) ends it with one line and its hint on stderr, exit 2 —
    never a traceback; then `leave`."""
    import sys

    code = 0
    try:
        main()
    except QuarryError as err:
        print(f"error ({err.code}): {printable(str(err))}", file=sys.stderr)
        code = 2
    except BrokenPipeError:
        # The reader went away (`| head`): what it read is all it wanted. Python's documented way:
        # point stdout at devnull so the interpreter's own flush at exit cannot raise again.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 1
    except Exception as exc:  # only a full disk is translated; anything else re-raises
        full = disk_full(exc)
        if full is None:
            raise
        print(f"error ({full.code}): {printable(str(full))}", file=sys.stderr)
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
