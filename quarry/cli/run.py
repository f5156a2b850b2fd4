"""Commands that start and stop things: `server`, `worker`, `down`, and `run` (a job submitted
through `quarry.app.submit`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from nodes.job.config import JOB_BOUNDS
from nodes.policy.registry import DEFAULT_POLICY, policy_help
from quarry.app import temporal
from quarry.app.infrastructure import say_note
from quarry.app.submit import DEFAULTS, checked_job
from quarry.app.terminal import console, out, safe
from quarry.cli.console import fail
from quarry.cli.options import AddressOpt, temporal_run
from quarry.cli.submit import submit_job
from stores import settings
from stores.errors import QuarryError
from stores.home import ensure_home, quarry_home
from workflows.processes.background import stop_detached
from workflows.processes.dev_server import server_command, start_server
from workflows.shared import UI_PORT_DEFAULT

commands = typer.Typer()


@commands.command()
def server(
    port: Annotated[int, typer.Option(min=1, max=65535, help="gRPC port")] = 7233,
    ui_port: Annotated[int, typer.Option(help="Web UI port")] = UI_PORT_DEFAULT,
    foreground: Annotated[bool, typer.Option(help="Run in this terminal instead of the background")] = False,
) -> None:
    """Start the embedded Temporal dev server (SQLite and Web UI under QUARRY_HOME)."""
    home = ensure_home(quarry_home())
    if foreground:
        os.execv(server_command(home, port, ui_port)[0], server_command(home, port, ui_port))
    try:
        pid = start_server(home, port, ui_port)
    except QuarryError as err:
        fail(err)
    out.print(
        ("already running" if pid == 0 else f"started (pid {pid})")
        + f": 127.0.0.1:{port}, Web UI http://127.0.0.1:{ui_port}, database {safe(home / 'temporal.db')}",
        highlight=False,
    )


@commands.command()
def worker(address: AddressOpt = None) -> None:
    """Run a worker for search jobs in this terminal (Ctrl+C stops it)."""
    # lazy: observability and the worker (temporalio, the graphs) cost over a second of start-up
    from observability import setup_tracing, shutdown_tracing
    from observability.exporter_settings import record_worker_settings
    from workflows.worker import serve

    setup_tracing("quarry-worker", quarry_home())
    record_worker_settings(quarry_home())  # `quarry run` warns when its shell's OTEL_* settings differ

    async def main() -> bool:
        client = await temporal.client(address)
        return await serve(client, home=quarry_home(), say=lambda line: console.print(safe(line), highlight=False))

    clean = temporal_run(main(), address=address)
    shutdown_tracing()  # OTLP batches still in memory go out before the process ends
    if not clean:
        console.print("worker stopped with activities still running; Temporal retries them on another worker")
        os._exit(1)  # their threads cannot be stopped, and would keep the process alive


@commands.command()
def down() -> None:
    """Stop the background server, worker and resident process that Quarry started."""
    home = quarry_home()
    for name in ("worker", "temporal-server", "resident"):
        # Only the very process this home started is signalled: a stale record is said and removed.
        out.print(f"{name}: {'stopped' if stop_detached(home, name, say=say_note) else 'not running'}")


# Long: 17 options, each declared where typer reads it; the body is one check and one submit.
@commands.command()
def run(
    name: str,
    intent: str,
    budget: Annotated[
        float,
        typer.Option(
            metavar="SECONDS",
            help=(
                f"Wall-clock budget in seconds ({JOB_BOUNDS.min_seconds:g} s to {JOB_BOUNDS.max_seconds / 86400:g} days)"
            ),
        ),
    ] = DEFAULTS.max_seconds,
    rounds: Annotated[int, typer.Option(min=1, max=JOB_BOUNDS.max_rounds, help="Maximum rounds")] = DEFAULTS.max_rounds,
    mode: Annotated[str, typer.Option(help="list (ranked documents) or answer (cited answer)")] = "list",
    policy: Annotated[str, typer.Option(help=policy_help())] = DEFAULT_POLICY,
    model: Annotated[
        str | None,
        typer.Option(
            help="PROVIDER:NAME for --policy llm/react, e.g. "
            "openai:gpt-4o-mini, anthropic:claude-3-5-haiku-latest, "
            "ollama:qwen2.5"
        ),
    ] = None,
    judge_model: Annotated[
        str | None,
        typer.Option(help="PROVIDER:NAME of the librarians that score candidates (--policy llm; default: --model)"),
    ] = None,
    max_tokens: Annotated[int | None, typer.Option(min=1, help="Token budget over all model calls")] = None,
    max_dollars: Annotated[float | None, typer.Option(min=0.0, help="Dollar budget over all model calls")] = None,
    prices: Annotated[
        Path | None, typer.Option(help="JSON price table (dollars per million tokens) extending the built-in one")
    ] = None,
    max_output_tokens: Annotated[
        int, typer.Option(min=JOB_BOUNDS.min_output_tokens, help="Longest reply a model may write per call")
    ] = DEFAULTS.models.max_output_tokens,
    strict_tools: Annotated[
        bool,
        typer.Option(
            "--strict-tools",
            help="OpenAI models: send tools with strict: true (arguments always match their schema; "
            "not every OpenAI-compatible server accepts it)",
        ),
    ] = DEFAULTS.models.strict_tools,
    profile: Annotated[
        str,
        typer.Option(
            help="Search settings: auto (the self-tuned profile once `quarry tune NAME --self --apply` made it the "
            "default), self (the self-tuned profile, applied or not) or default (ignore it)"
        ),
    ] = DEFAULTS.profile,
    wait: Annotated[bool, typer.Option("--wait", help="Wait for the result")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Result as JSON on the last line")] = False,
    port: Annotated[
        int | None, typer.Option(min=1, max=65535, help="Port of the embedded server (127.0.0.1:PORT)")
    ] = None,
    ui_port: Annotated[
        int | None,
        typer.Option(min=1, max=65535, envvar=settings.UI_PORT.name, help="Web UI port of the embedded server"),
    ] = None,
    address: AddressOpt = None,
) -> None:
    """Submit a durable search job (starts the embedded server and a worker if needed)."""
    address = address or (f"127.0.0.1:{port}" if port else None)
    try:
        intent, config = checked_job(
            name,
            intent,
            mode=mode,
            policy=policy,
            budget=budget,
            rounds=rounds,
            model=model,
            judge_model=judge_model,
            max_tokens=max_tokens,
            max_dollars=max_dollars,
            prices=prices,
            max_output_tokens=max_output_tokens,
            profile=profile,
            strict_tools=strict_tools,
        )
    except QuarryError as err:
        fail(err)
    submit_job(
        name,
        intent,
        mode=mode,
        policy=policy,
        config=config,
        wait=wait,
        json_out=json_out,
        address=address,
        ui_port=ui_port,
    )
