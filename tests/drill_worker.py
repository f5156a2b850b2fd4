"""A real Quarry worker process for the drills (tests/test_drills_*.py), with an optional gate.

    python -m tests.drill_worker --home H --address A --queue Q [--gate DIR] [--hold-warm-up DIR]
                                 [--heartbeat-timeout S]

It is `quarry worker` (the same `workflows.worker.serve`, tracing into QUARRY_HOME) plus, for the drills
only, a gate on the verification node: while the file DIR/hold exists, a verification call
writes DIR/entered-<pid> and waits until DIR/release exists. The drill can then SIGKILL this
process, or the Temporal server, at a known point of a job. `--hold-warm-up` holds the warm-up
before polling the same way, so the drill can stop the worker inside it. `--heartbeat-timeout`
scales the node activities' heartbeat timeout (15 s in Quarry) down, and their heartbeats with it
(one every third of it, as in Quarry), so a drill that waits for the server to notice a dead or
stopped worker waits seconds, not tens of seconds. This file is test code; nothing in Quarry knows
about it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from pathlib import Path


def wait_for_release(folder: Path, marker: str, text: str) -> None:
    """Write DIR/marker, then wait until DIR/release exists: the drill, not a timer, decides when
    the held call may go on."""
    (folder / marker).write_text(text)
    while not (folder / "release").exists():
        time.sleep(0.02)


def gate(folder: Path):
    import nodes.rounds.verification as verification_mod

    real = verification_mod.verification

    def gated(state):
        if (folder / "hold").exists():
            wait_for_release(folder, f"entered-{os.getpid()}", str(state.get("round", 0)))
        return real(state)

    verification_mod.verification = gated


def scale_heartbeats(timeout_s: float) -> None:
    """The node activities' heartbeat timeout (graphs.search_graph, read when the worker builds its
    graphs) and the heartbeat interval (nodes.job.heartbeat, one beat per third of the timeout)."""
    from datetime import timedelta

    import graphs.search_graph as search_graph
    import nodes.job.heartbeat as heartbeat

    ratio = heartbeat.HEARTBEAT_EVERY_S / search_graph.HEARTBEAT_TIMEOUT.total_seconds()
    search_graph.HEARTBEAT_TIMEOUT = timedelta(seconds=timeout_s)
    heartbeat.HEARTBEAT_EVERY_S = timeout_s * ratio
    heartbeat.POLL_EVERY_S = min(heartbeat.POLL_EVERY_S, heartbeat.HEARTBEAT_EVERY_S)
    # Loudly, if Quarry stops reading the constant when it builds a node's options (the drill would
    # silently wait 15 s per heartbeat timeout again).
    got = search_graph.activity_options(60)["heartbeat_timeout"]
    assert got == timedelta(seconds=timeout_s), f"the heartbeat timeout was not scaled: {got}"
    got = search_graph.quick_activity_options()["heartbeat_timeout"]
    assert got == timedelta(seconds=timeout_s), f"the workflow's own activities' timeout was not scaled: {got}"


def hold_warm_up(folder: Path):
    """Hold the worker's warm-up: write DIR/warming, then wait until DIR/release exists."""
    from nodes.job.runtime import NodeRuntime

    real = NodeRuntime.warm

    def held(self):
        wait_for_release(folder, "warming", str(os.getpid()))
        return real(self)

    NodeRuntime.warm = held


async def main() -> bool:
    parser = argparse.ArgumentParser()
    parser.add_argument("--home", type=Path, required=True)
    parser.add_argument("--address", required=True)
    parser.add_argument("--queue", help="default: the home's own task queue, as `quarry worker` uses")
    parser.add_argument("--gate", type=Path)
    parser.add_argument("--hold-warm-up", type=Path, help="hold the warm-up until DIR/release exists")
    parser.add_argument("--heartbeat-timeout", type=float, help="seconds (Quarry's: 15)")
    args = parser.parse_args()
    if args.heartbeat_timeout:
        scale_heartbeats(args.heartbeat_timeout)
    if args.gate:
        gate(args.gate)
    if args.hold_warm_up:
        hold_warm_up(args.hold_warm_up)
    from observability import setup_tracing, shutdown_tracing
    from workflows.client import connect
    from workflows.worker import serve

    setup_tracing("quarry-worker", args.home)
    client = await connect(args.address)

    def say(line: str) -> None:  # the drill waits for the line `quarry worker` prints before polling
        print(line, flush=True)
        if line.startswith("worker polling"):
            (args.home / f"worker-ready-{os.getpid()}").write_text("ready")

    # `queue` None: derived from the home; SIGTERM: the same graceful stop as `quarry worker`
    clean = await serve(client, home=args.home, queue=args.queue, say=say)
    shutdown_tracing()
    if not clean:
        os._exit(1)  # activities still running: their threads cannot be stopped (as `quarry worker`)
    return clean


if __name__ == "__main__":
    from workflows.processes.exit import leave

    leave(0 if asyncio.run(main()) else 1)  # the same exit as the `quarry` executable
