"""A real Quarry worker process for the drills (tests/test_drills.py), with an optional gate.

    python -m tests.drill_worker --home H --address A --queue Q [--gate DIR] [--models-url URL]

It is `quarry worker` (the same `build_worker`, tracing into QUARRY_HOME) plus, for the drills
only, a gate on the verification node: while the file DIR/hold exists, a verification call
writes DIR/entered-<pid> and waits until DIR/release exists. The drill can then SIGKILL this
process, or the Temporal server, at a known point of a job. This file is test code; nothing in
Quarry knows about it.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import time
from pathlib import Path


def gate(folder: Path):
    import nodes.verification as verification_mod

    real = verification_mod.verification

    def gated(state):
        if (folder / "hold").exists():
            (folder / f"entered-{os.getpid()}").write_text(str(state.get("round", 0)))
            while not (folder / "release").exists():
                time.sleep(0.02)  # the drill, not a timer, decides when this call may go on
        return real(state)

    verification_mod.verification = gated


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--address", required=True)
    parser.add_argument("--queue", help="default: the home's own task queue, as `quarry worker` uses")
    parser.add_argument("--gate", type=Path)
    args = parser.parse_args()
    if args.gate:
        gate(args.gate)
    from observability import setup_tracing, shutdown_tracing
    from workflows.client import connect
    from workflows.worker import build_worker, run_until_signalled

    setup_tracing("quarry-worker", args.home)
    client = await connect(args.address)
    worker = build_worker(client, home=args.home, queue=args.queue)  # None: derived from the home
    (args.home / f"worker-ready-{os.getpid()}").write_text("ready")
    clean = await run_until_signalled(worker)  # SIGTERM: the same graceful stop as `quarry worker`
    shutdown_tracing()
    if not clean:
        os._exit(1)


if __name__ == "__main__":
    asyncio.run(main())
