"""Job commands: server, worker, run, job list/show/progress/stop/steer/result, trace, down."""
from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from nodes.policies import DEFAULT_POLICY, policy_help
from quarry.console import console, fail, out, print_json, safe, terminal_safe
from quarry.job_options import job_config
from quarry.jobs_render import render_progress, render_result, usage_line
from stores.errors import QuarryError, disk_full
from stores.home import quarry_home
from stores.jobs import FINAL
from workflows.shared import DEFAULT_BUDGET_S, UI_PORT_DEFAULT

AddressOpt = Annotated[str | None, typer.Option("--temporal-address", envvar="QUARRY_TEMPORAL_ADDRESS",
                                                   help="Temporal frontend host:port (default: the server this home "
                                                        "started, if it runs, else 127.0.0.1:7233)")]
job_app = typer.Typer(no_args_is_help=True, help="Inspect and steer jobs.")


def _set_address(address: str | None) -> None:
    if address:
        os.environ["QUARRY_TEMPORAL_ADDRESS"] = address


def _trace_file(trace_id: str | None) -> str:
    """Where the job's trace can be read: its local file when one exists, else where it went."""
    from observability import traces_dir
    from observability.setup import trace_files_on
    if not trace_id:
        return ""
    path = traces_dir(quarry_home()) / f"{trace_id}.jsonl"
    if path.is_file():
        return str(path)
    if not trace_files_on():
        return f"trace {trace_id} in your OTLP backend (local files are off: QUARRY_TRACE_FILES=0)"
    return ""


def _ui_port() -> int:
    return int(os.environ.get("QUARRY_UI_PORT", UI_PORT_DEFAULT))


def _ui_base() -> str:
    """The Web UI of the server this command talks to: the one this home started (its recorded
    UI port), else QUARRY_UI_URL if set, else '' — never a guess at another server's UI."""
    from workflows.dev_server import server_record
    from workflows.shared import temporal_address
    record = server_record(quarry_home())
    if record is not None and record.address == temporal_address():
        return record.ui_url
    return os.environ.get("QUARRY_UI_URL", "")


def _web_ui(job_id: str) -> str:
    from workflows.shared import web_ui_url
    return web_ui_url(job_id, _ui_base())


def _is_loopback(address: str) -> bool:
    return address.rsplit(":", 1)[0] in ("127.0.0.1", "localhost", "::1", "[::1]")


def _temporal_error(err: Exception, job_id: str | None = None) -> QuarryError:
    """A Temporal RPC failure as one message saying what to do (never a traceback)."""
    from temporalio.service import RPCStatusCode
    text = str(getattr(err, "message", "") or err)
    what = f"job {job_id}" if job_id else "the job"
    status = getattr(err, "status", None)
    if status == RPCStatusCode.NOT_FOUND:
        return QuarryError("unknown_job", f"{what} is not known to the Temporal server at {_address()}",
                           "list jobs with: quarry job list (is --temporal-address the server it ran on?)")
    if "already completed" in text or "already finished" in text:
        return QuarryError("job_finished", f"{what} has already finished", f"see its result: quarry job result {job_id or 'JOB_ID'}")
    if status in (RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.CANCELLED) or "no poller" in text.lower() \
            or "timeout expired" in text.lower():
        return _no_worker(f"no worker answered for {what}: {text[:200]}", job_id)
    return QuarryError("temporal_error", f"Temporal refused the request for {what}: {text[:300]}",
                       "check `quarry server` / --temporal-address and try again")


def _no_worker(message: str, job_id: str | None) -> QuarryError:
    """No worker answered: while this home's worker is still warming up, say that (and do not
    invite a second worker); otherwise say how to start one."""
    from workflows.warmup import warming_message
    if (warming := warming_message(quarry_home())) is not None:
        return QuarryError("worker_warming_up", warming,
                           f"follow it: quarry job watch {job_id}" if job_id else "try again in a few seconds")
    return QuarryError("no_worker", message, "start one: quarry worker (quarry run starts one in the background)")


def _address() -> str:
    from workflows.shared import temporal_address
    return temporal_address()


def _attempt(coro, job_id: str | None = None):
    """Run a Temporal conversation; its failures come out as one QuarryError (never a traceback),
    for a command to print (`_run`) or to answer itself (`job progress` while a worker warms up)."""
    from temporalio.service import RPCError
    try:
        return asyncio.run(coro)
    except RPCError as err:
        raise _temporal_error(err, job_id) from err
    except RuntimeError as err:
        if "connect" in str(err).lower():
            raise QuarryError("no_server", f"cannot reach Temporal: {err}",
                              "start it with `quarry server`, or set --temporal-address / QUARRY_TEMPORAL_ADDRESS") from err
        raise


def _run(coro, job_id: str | None = None):
    try:
        return _attempt(coro, job_id)
    except QuarryError as err:
        fail(err)


async def _client():
    from workflows.address import resolve_address
    from workflows.client import connect
    where = resolve_address()
    try:
        return await connect(where.address)
    except RuntimeError as err:
        raise QuarryError("no_server", f"cannot reach Temporal at {where.address} ({where.source}): {err}",
                          "start it with `quarry server` (or `quarry run`, which starts it), or set --temporal-address") from err


def _say_note(line: str) -> None:
    console.print(terminal_safe(f"note: {line}"), markup=False, highlight=False)


def _worker_alive(home: Path) -> bool:
    """Whether the worker this home started still runs — that very process, not whatever now has
    its pid (a stale record is removed and said, and `quarry run` then starts a worker)."""
    from workflows.dev_server import pid_of
    return pid_of(home, "worker", say=_say_note) is not None


# The environment a worker's model clients read. A worker started before the user exported a
# key (or pointed OPENAI_BASE_URL elsewhere) would call the wrong endpoint, so `quarry run`
# restarts the background worker when these differ. Only a digest is kept, never a value.
MODEL_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
             "ANTHROPIC_API_URL", "OLLAMA_HOST")


def _model_env_digest() -> str:
    import hashlib
    raw = "\0".join(f"{k}={os.environ.get(k, '')}" for k in MODEL_ENV)
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


# The packages a worker runs. A background worker started before Quarry was upgraded (or its
# code edited) would go on running the old code for every later job, so `quarry run` restarts it
# when their files changed. Sizes and modification times only: no file is read.
CODE_PACKAGES = ("stores", "nodes", "graphs", "workflows", "observability", "quarry")


def _code_digest() -> str:
    import hashlib
    root = Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for package in CODE_PACKAGES:
        for path in sorted((root / package).glob("**/*.py")):
            st = path.stat()
            h.update(f"{path.relative_to(root)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def _spawn_worker(home: Path) -> None:
    from observability.exporter_settings import record_worker_settings
    from stores.atomic import write_atomic
    from workflows.dev_server import spawn_detached
    spawn_detached(home, "worker", [sys.executable, "-m", "quarry", "worker"])
    write_atomic(home / "run" / "worker.models", _model_env_digest(), mode=0o600)
    write_atomic(home / "run" / "worker.code", _code_digest(), mode=0o600)
    record_worker_settings(home)  # the worker writes it too; here so the next command never reads an old one


def ensure_infrastructure(home: Path) -> None:
    """Start the embedded dev server and a worker when none is there (embedded defaults)."""
    from workflows.dev_server import reachable, server_record, start_server, stop_detached
    from workflows.shared import task_queue, temporal_address
    address = temporal_address()
    if not reachable(address):
        if not _is_loopback(address):
            raise QuarryError("no_server", f"no Temporal server at {address}",
                              "check the address, or unset QUARRY_TEMPORAL_ADDRESS to use the embedded server")
        port = int(address.rsplit(":", 1)[1])
        console.print(f"starting the embedded Temporal dev server on {safe(address)} (Web UI :{_ui_port()}) …",
                      highlight=False)
        start_server(home, port, _ui_port())
    elif (record := server_record(home)) is None or record.address != address:
        console.print(f"[yellow]note[/]: the Temporal server at {safe(address)} was not started by this home "
                      f"({safe(home)}); its jobs run on this home's task queue {safe(task_queue(home))}, so they stay apart",
                      highlight=False)
    if _worker_alive(home):
        digest = home / "run" / "worker.models"
        if digest.is_file() and digest.read_text().strip() != _model_env_digest():
            console.print("restarting the background worker: the model settings in this shell "
                          "(OPENAI_*, ANTHROPIC_*, OLLAMA_HOST) changed since it started …")
            stop_detached(home, "worker", say=_say_note)
    if _worker_alive(home):
        code = home / "run" / "worker.code"
        if code.is_file() and code.read_text().strip() != _code_digest():
            console.print("restarting the background worker: Quarry's code changed since it started "
                          "(an upgrade or an edit); running jobs go on with the new one …")
            stop_detached(home, "worker", say=_say_note)
    if _worker_alive(home):
        from observability.exporter_settings import worker_settings_note
        if note := worker_settings_note(home):  # its spans go where its own settings say, not this shell's
            console.print(f"[yellow]warning[/]: {safe(note)}", highlight=False)
    if not _worker_alive(home):
        console.print("starting a Quarry worker in the background (logs: "
                      f"{safe(home / 'logs' / 'worker.log')}; stop both with `quarry down`) …", highlight=False)
        _spawn_worker(home)


def submit_job(name: str, intent: str, *, mode: str, policy: str, budget: float, config, wait: bool,
               json_out: bool) -> None:
    """Submit a job (starting the embedded server and a worker when needed) and, with `wait`,
    follow it live to its result; used by `run` and `job rerun`."""
    from observability import current_trace_id, get_tracer, setup_tracing, shutdown_tracing
    from observability.agent_span import new_agent_trace, under_agent
    from stores.home import ensure_home
    from stores.jobs import JobStore
    from workflows.client import new_job_id, submit
    from workflows.shared import JobInput
    home = ensure_home(quarry_home())  # 0700: the job store, traces, logs and Temporal's database are private
    setup_tracing("quarry-cli", home)

    async def main() -> dict[str, Any]:
        ensure_infrastructure(home)
        client = await _client()
        job_id = new_job_id()
        agent = new_agent_trace()  # the job's invoke_agent span: this command's span sits under it
        inp = JobInput(job_id=job_id, collection=name, intent=intent, mode=mode, policy=policy, budget_seconds=budget,
                       config=config, trace=agent.to_dict())
        with under_agent(agent), get_tracer().start_as_current_span("quarry run", attributes={"quarry.job_id": job_id}):
            trace_id = current_trace_id()
            JobStore(home / "jobs.sqlite").create(job_id, name, intent, workflow_id=job_id, trace_id=trace_id,
                                                  params={"mode": mode, "policy": policy, "budget_seconds": budget,
                                                          "config": config.to_dict()})
            handle = await submit(client, inp)
        info = {"job_id": job_id, "web_ui": _web_ui(job_id), "trace_file": _trace_file(trace_id)}
        if not wait:
            return info
        console.print(f"job {job_id} running (re-attach any time: quarry job watch {job_id})", highlight=False)
        if json_out:  # no live view on the JSON path: stdout carries only the result
            return await _final(handle.result(), job_id) | info
        from quarry.watch import watch

        def emit(line: str) -> None:
            console.print(line, markup=False, highlight=False)
        return await _final(watch(WithStepDetail(handle, job_id, emit), emit), job_id) | info

    result = _run(main())
    shutdown_tracing()
    if json_out:
        print_json(result)
    elif wait:
        render_result(result, web_ui=result["web_ui"], trace_file=result["trace_file"])
    else:
        out.print(f"submitted {safe(result['job_id'])}" + (f"\nWeb UI: {safe(result['web_ui'])}" if result["web_ui"] else "")
                  + f"\nprogress: quarry job watch {result['job_id']}\nresult: quarry job result {result['job_id']} --wait",
                  highlight=False)
    if wait:
        _exit_for(result)


def register(app: typer.Typer) -> None:
    app.add_typer(job_app, name="job")

    @app.command()
    def server(port: Annotated[int, typer.Option(min=1, max=65535, help="gRPC port")] = 7233,
               ui_port: Annotated[int, typer.Option(help="Web UI port")] = UI_PORT_DEFAULT,
               foreground: Annotated[bool, typer.Option(help="Run in this terminal instead of the background")] = False) -> None:
        """Start the embedded Temporal dev server (SQLite and Web UI under QUARRY_HOME)."""
        from stores.home import ensure_home
        from workflows.dev_server import server_command, start_server
        home = ensure_home(quarry_home())
        if foreground:
            os.execv(server_command(home, port, ui_port)[0], server_command(home, port, ui_port))
        try:
            pid = start_server(home, port, ui_port)
        except QuarryError as err:
            fail(err)
        out.print(("already running" if pid == 0 else f"started (pid {pid})") +
                  f": 127.0.0.1:{port}, Web UI http://127.0.0.1:{ui_port}, database {safe(home / 'temporal.db')}",
                  highlight=False)

    @app.command()
    def worker(address: AddressOpt = None) -> None:
        """Run a worker for search jobs in this terminal (Ctrl+C stops it)."""
        _set_address(address)
        from observability import setup_tracing, shutdown_tracing
        from observability.exporter_settings import record_worker_settings
        from workflows.worker import serve
        setup_tracing("quarry-worker", quarry_home())
        record_worker_settings(quarry_home())  # `quarry run` warns when its shell's OTEL_* settings differ

        async def main() -> bool:
            client = await _client()
            return await serve(client, home=quarry_home(), say=lambda line: console.print(safe(line), highlight=False))
        clean = _run(main())
        shutdown_tracing()  # OTLP batches still in memory go out before the process ends
        if not clean:
            console.print("worker stopped with activities still running; Temporal retries them on another worker")
            os._exit(1)  # their threads cannot be stopped, and would keep the process alive

    @app.command()
    def down() -> None:
        """Stop the background server and worker that Quarry started."""
        from workflows.dev_server import stop_detached
        home = quarry_home()
        for name in ("worker", "temporal-server"):
            # Only the very process this home started is signalled: a stale record is said and removed.
            out.print(f"{name}: {'stopped' if stop_detached(home, name, say=_say_note) else 'not running'}")

    @app.command()
    def run(name: str, intent: str,
            budget: Annotated[float, typer.Option(help="Wall-clock budget in seconds (1 s to a week)")] = DEFAULT_BUDGET_S,
            rounds: Annotated[int, typer.Option(min=1, max=20, help="Maximum rounds")] = 3,
            mode: Annotated[str, typer.Option(help="list (ranked documents) or answer (cited answer)")] = "list",
            policy: Annotated[str, typer.Option(help=policy_help())] = DEFAULT_POLICY,
            model: Annotated[str | None, typer.Option(help="PROVIDER:NAME for --policy llm/react, e.g. "
                                                              "openai:gpt-4o-mini, anthropic:claude-3-5-haiku-latest, "
                                                              "ollama:qwen2.5")] = None,
            judge_model: Annotated[str | None, typer.Option(help="PROVIDER:NAME of the librarians that score "
                                                                    "candidates (--policy llm; default: --model)")] = None,
            max_tokens: Annotated[int | None, typer.Option(min=1, help="Token budget over all model calls")] = None,
            max_dollars: Annotated[float | None, typer.Option(min=0.0, help="Dollar budget over all model calls")] = None,
            prices: Annotated[Path | None, typer.Option(help="JSON price table (dollars per million tokens) "
                                                                "extending the built-in one")] = None,
            max_output_tokens: Annotated[int, typer.Option(min=16, help="Longest reply a model may write per call")] = 2048,
            wait: Annotated[bool, typer.Option("--wait", help="Wait for the result")] = False,
            json_out: Annotated[bool, typer.Option("--json", help="Result as JSON on the last line")] = False,
            port: Annotated[int | None, typer.Option(min=1, max=65535,
                                                        help="Port of the embedded server (127.0.0.1:PORT)")] = None,
            ui_port: Annotated[int | None, typer.Option(min=1, max=65535, envvar="QUARRY_UI_PORT",
                                                           help="Web UI port of the embedded server")] = None,
            address: AddressOpt = None) -> None:
        """Submit a durable search job (starts the embedded server and a worker if needed)."""
        _set_address(address or (f"127.0.0.1:{port}" if port else None))
        if ui_port:
            os.environ["QUARRY_UI_PORT"] = str(ui_port)
        from workflows.job_input import MAX_INTENT_CHARS, MODES, check_budget, check_text
        try:
            if mode not in MODES:
                raise QuarryError("bad_mode", f"unknown mode {mode!r}", "use --mode list or --mode answer")
            intent = check_text(intent, "intent", MAX_INTENT_CHARS)
            budget = check_budget(budget)
        except QuarryError as err:
            fail(err)
        from stores.collection import Collection
        try:
            config = job_config(policy, model, judge_model, rounds=rounds, max_tokens=max_tokens,
                                max_dollars=max_dollars, prices=prices, max_output_tokens=max_output_tokens)
            _ = Collection(name).lucene  # clear error now rather than a failed job later
        except QuarryError as err:
            fail(err)
        submit_job(name, intent, mode=mode, policy=policy, budget=budget, config=config, wait=wait, json_out=json_out)

    @app.command()
    def trace(job_id: str,
              json_out: Annotated[bool, typer.Option("--json", help="Spans, tool summary and rounds as JSON")] = False,
              tool: Annotated[str | None, typer.Option(help="Only this tool's spans, e.g. search")] = None,
              round_no: Annotated[int | None, typer.Option("--round", min=0, help="Only this round's spans")] = None,
              grouped: Annotated[bool, typer.Option(help="Per round: queries, tools (count/total/p50), model tokens")] = False) -> None:
        """Print a job's span tree and a per-tool summary (count, total and p50 time)."""
        from observability import load_spans, rounds_summary, select_spans, span_tree_lines, tool_summary, traces_dir
        try:
            row = _store().get(job_id)
            if not row.get("trace_id"):
                raise QuarryError("no_trace", f"job {job_id} has no recorded trace id", "it was submitted without tracing")
            from observability.setup import trace_files_on
            if not trace_files_on() and not (traces_dir(quarry_home()) / f"{row['trace_id']}.jsonl").is_file():
                raise QuarryError("no_trace_file", f"job {job_id}'s spans went to your OTLP backend only "
                                  "(local trace files are off: QUARRY_TRACE_FILES=0)",
                                  f"look up trace {row['trace_id']} there, or unset QUARRY_TRACE_FILES for later jobs")
            spans = load_spans(traces_dir(quarry_home()), row["trace_id"])
        except QuarryError as err:
            fail(err)
        shown = select_spans(spans, tool=tool, round_no=round_no) if tool or round_no is not None else spans
        if tool and not shown:
            names = sorted({str((s.get("attributes") or {}).get("gen_ai.tool.name")) for s in spans
                            if (s.get("attributes") or {}).get("gen_ai.operation.name") == "execute_tool"})
            fail(QuarryError("no_spans", f"no {tool!r} spans in job {job_id}'s trace",
                             f"tools in this trace: {', '.join(names) or 'none'}"))
        if json_out:
            print_json({"job_id": job_id, "trace_id": row["trace_id"], "file": _trace_file(row["trace_id"]),
                        "spans": shown, "tools": tool_summary(shown), "rounds": rounds_summary(spans)})
            return
        out.print(f"trace {safe(row['trace_id'])} · {len(shown)} of {len(spans)} spans · {safe(_trace_file(row['trace_id']))}",
                  highlight=False)
        if grouped:
            for group in rounds_summary(shown):
                label = ("outside rounds (submission, workflow, the agent span)" if group["round"] is None
                         else "round 0 (planning)" if group["round"] == 0 else f"round {group['round']}")
                out.print(terminal_safe(f"{label}: {group['spans']} spans, {group['model_calls']} model calls "
                                        f"({group['input_tokens']} in / {group['output_tokens']} out tokens)"),
                          highlight=False, markup=False)
                for query in group["queries"]:
                    out.print(terminal_safe(f"  query: {query}"), highlight=False, markup=False)
                for t in group["tools"]:
                    out.print(terminal_safe(f"  {t['tool']}: {t['count']} calls, {t['total_ms']:.1f} ms total, "
                                            f"p50 {t['p50_ms']:.1f} ms"),
                              highlight=False, markup=False)
            return
        for line in span_tree_lines(shown):
            out.print(terminal_safe(line), highlight=False, markup=False)
        table = Table(title="tool calls")
        for col in ("tool", "count", "total_ms", "p50_ms"):
            table.add_column(col, justify="left" if col == "tool" else "right")
        for row_ in tool_summary(shown):
            table.add_row(safe(row_["tool"]), str(row_["count"]), f"{row_['total_ms']:.1f}", f"{row_['p50_ms']:.1f}")
        out.print(table)


def _store():
    from stores.jobs import JobStore
    return JobStore(quarry_home() / "jobs.sqlite")


def _known_job(job_id: str) -> dict[str, Any] | None:
    """The job's row in the job store, None if only Temporal might know it; a finished job's row
    says so, which stop and steer turn into a clear message."""
    try:
        return _store().get(job_id)
    except QuarryError:
        return None


def _temporal_statuses(limit: int) -> dict[str, str] | None:
    """This home's jobs as Temporal's visibility sees them (job id → execution status), or None
    when the server cannot be reached."""
    from workflows.dev_server import reachable
    from workflows.shared import task_queue, temporal_address
    if not reachable(temporal_address()):
        return None

    async def main() -> dict[str, str]:
        client = await _client()
        found: dict[str, str] = {}
        async for w in client.list_workflows(f'TaskQueue="{task_queue(quarry_home())}"', limit=limit):
            found.setdefault(w.id, w.status.name.lower() if w.status else "unknown")
        return found
    try:
        return asyncio.run(main())
    except Exception:  # visibility is an addition to the job store's list, never a reason to fail it
        return None


@job_app.command("list")
def job_list(limit: Annotated[int, typer.Option(min=1, max=10_000, help="How many jobs, newest first")] = 20,
             status: Annotated[str | None, typer.Option(help="Only jobs with this status (completed, running, "
                                                                "failed, stopped, budget_exhausted, cancelled, terminated)")] = None,
             collection: Annotated[str | None, typer.Option(help="Only jobs on this collection")] = None,
             json_out: Annotated[bool, typer.Option("--json", help="One JSON object per job")] = False,
             address: AddressOpt = None) -> None:
    """This home's jobs, newest first: the job store's record, with Temporal's view of those still
    running (a job whose worker or server died shows as Temporal sees it)."""
    import datetime as dt
    _set_address(address)
    rows = _store().list(limit, status=status, collection=collection)
    temporal = _temporal_statuses(max(limit * 2, 100)) if any(r["status"] == "running" for r in rows) else {}
    for r in rows:
        seen = (temporal or {}).get(r["job_id"])
        if r["status"] == "running" and seen and seen not in ("running", "continued_as_new"):
            r["status"] = seen  # e.g. terminated or timed out outside Quarry
            if seen == "terminated" and (reason := asyncio.run(_record_termination(r["job_id"], r))) is not None:
                r["error"] = reason
    if json_out:
        for r in rows:
            print_json(r)
        return
    from quarry.screens import intent_table, job_list_tsv

    def created(j: dict[str, Any]) -> str:
        return dt.datetime.fromtimestamp(j["created_at"]).strftime("%Y-%m-%d %H:%M:%S")
    if out.is_terminal:  # the intent takes the width left and ends with … where it is cut
        out.print(intent_table(rows, created, out.width))
    else:  # piped: whole intents, tab-separated
        sys.stdout.write("".join(line + "\n" for line in job_list_tsv(rows, created)))  # rich would expand tabs
    if temporal is None:
        out.print(f"(statuses from the job store: no Temporal server answers at {safe(_address())})", highlight=False)


STEP_LINE_EVERY_S = 5.0  # `job watch` repeats a running step's progress at most this often


def running_step(job_id: str, progress: dict[str, Any]) -> dict[str, Any] | None:
    """The running node's long step (node, stage, done, total) or None. The workflow's progress
    query cannot see inside an activity, so the step is read from the job store, where the
    activity writes it; a step of another node than the one the job reports is over."""
    try:
        step = _store().step(job_id)
    except QuarryError:
        return None
    return step if step and step.get("node") == progress.get("node") else None


def step_text(step: dict[str, Any]) -> str:
    """A long step as one phrase ("semantic step: 240/1,200 chunks embedded (20%)"): the text
    `job progress` and `job watch` both show."""
    if step.get("stage") != "embedding":
        return str(step.get("text") or "")
    done, total = int(step.get("done") or 0), int(step.get("total") or 0)
    share = f" ({done / total:.0%})" if total else ""
    return f"semantic step: {done:,}/{total:,} chunks embedded{share}"


def step_detail(job_id: str, progress: dict[str, Any]) -> str:
    """`step_text` of the job's running step, '' when none runs."""
    step = running_step(job_id, progress)
    return step_text(step) if step else ""


class WithStepDetail:
    """A job's workflow handle for `quarry.watch.watch` that also prints the running step
    (`step_detail`) as "  now: …" — when it starts, every STEP_LINE_EVERY_S and when it ends —
    so a minute of embedding reads as work in `job watch` as it does in `job progress`.
    A snapshot that moves the job to a new round or node prints its header first (watch prints
    it after this query returns), so the step line waits for the next snapshot then."""

    def __init__(self, handle: Any, job_id: str, emit: Callable[[str], None],
                 clock: Callable[[], float] | None = None) -> None:
        import time
        self._handle, self._job_id, self._emit = handle, job_id, emit
        self._clock = clock or time.monotonic
        self._where: tuple | None = None
        self._shown, self._stage, self._shown_at = "", "", float("-inf")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._handle, name)

    async def query(self, name: str, *args: Any, **kwargs: Any) -> Any:
        p = await self._handle.query(name, *args, **kwargs)
        if name == "progress" and isinstance(p, dict):
            where = (p.get("round"), p.get("node"), p.get("steps"))
            moved, self._where = where != self._where, where
            step = await asyncio.to_thread(running_step, self._job_id, p)
            detail = step_text(step) if step else ""
            if step and detail and not moved and detail != self._shown:
                ended = int(step.get("done") or 0) >= int(step.get("total") or 0)
                if step.get("stage") != self._stage or ended or self._clock() - self._shown_at >= STEP_LINE_EVERY_S:
                    self._emit(terminal_safe(f"  now: {detail}"))
                    self._shown, self._stage, self._shown_at = detail, str(step.get("stage")), self._clock()
            if not step:
                self._stage = ""
        return p


@dataclass(frozen=True)
class WorkerWarmingUp:
    """`job progress` while this home's worker is still warming up (opening indexes, loading
    models: 14–25 s): the job waits for it, which is not a failure, so this is shown and the
    command exits 0 (no worker at all stays an error)."""

    job_id: str
    status: str             # the job store's status ("running" until the job ends)
    round: int | None
    collection: str | None
    warming_s: float | None  # how long the worker has been warming up, when it says

    @classmethod
    def of(cls, job_id: str, row: dict[str, Any] | None) -> WorkerWarmingUp:
        from workflows.warmup import warming_for
        row = row or {}
        return cls(job_id, str(row.get("status") or "unknown to this home's job store"),
                   row.get("round") if isinstance(row.get("round"), int) else None, row.get("collection"),
                   warming_for(quarry_home()))

    def line(self) -> str:
        where = " · ".join(filter(None, [self.job_id, self.status, self.collection,
                                         f"round {self.round}" if self.round is not None else ""]))
        so_far = f", {self.warming_s:.0f} s so far" if self.warming_s is not None else ""
        return (f"{where}\nthe worker is warming up (opening indexes and loading models{so_far}); "
                f"the job goes on when it is ready — follow it: quarry job watch {self.job_id}")

    def as_json(self) -> dict[str, Any]:
        return {"job_id": self.job_id, "status": self.status, "round": self.round, "collection": self.collection,
                "worker": "warming_up",
                "warming_seconds": round(self.warming_s, 1) if self.warming_s is not None else None}


@job_app.command("watch")
def job_watch(job_id: str, address: AddressOpt = None) -> None:
    """Follow a job live, round by round, until it ends (re-attach at any time)."""
    _set_address(address)
    row = _known_job(job_id)
    if row and row["status"] in FINAL and row.get("result"):
        render_result(row["result"], web_ui=_web_ui(job_id), trace_file=_trace_file(row.get("trace_id")))
        return
    from quarry.watch import watch

    def emit(line: str) -> None:
        out.print(line, markup=False, highlight=False)

    async def main():
        client = await _client()
        return await _final(watch(WithStepDetail(client.get_workflow_handle(job_id), job_id, emit), emit), job_id)
    result = _run(main(), job_id)
    render_result(result, web_ui=_web_ui(job_id), trace_file=_trace_file((row or {}).get("trace_id")))
    _exit_for(result)


async def _final(awaitable, job_id: str) -> dict[str, Any]:
    """A job's result; a job that ended cancelled or terminated has its record in the job store."""
    from temporalio.client import WorkflowFailureError
    from temporalio.exceptions import TerminatedError
    try:
        return await awaitable
    except WorkflowFailureError as err:
        row = _known_job(job_id) or {}
        if isinstance(err.cause, TerminatedError) and row.get("status") not in FINAL:
            await _record_termination(job_id, row or None)  # terminated outside Quarry, while we waited
            row = _known_job(job_id) or {}
        return row.get("result") or {"job_id": job_id, "status": row.get("status", "failed"), "ranked": [],
                                     "intent": row.get("intent"), "collection": row.get("collection"),
                                     "error": row.get("error") or str(err.cause or err)[:300]}


def _exit_for(result: dict[str, Any]) -> None:
    """Exit 1 for a job that failed, or ran out of budget with nothing to show."""
    if result.get("status") in ("failed", "cancelled", "terminated") or \
            (result.get("status") == "budget_exhausted" and not result.get("ranked")):
        raise typer.Exit(1)


@job_app.command("cancel")
def job_cancel(job_id: str, address: AddressOpt = None) -> None:
    """Cancel a job: it stops now, keeps its best result so far and ends as cancelled."""
    _set_address(address)
    _refuse_finished(job_id)

    async def main():
        client = await _client()
        await client.get_workflow_handle(job_id).cancel()
    _run(main(), job_id)
    out.print(f"cancel sent to {safe(job_id)}; its best result so far: quarry job result {safe(job_id)} --wait",
              highlight=False)


@job_app.command("terminate")
def job_terminate(job_id: str, reason: Annotated[str, typer.Option(help="Recorded with the job")] = "terminated by the user",
                  address: AddressOpt = None) -> None:
    """Terminate a job at once (no result is built; its last checkpoint stays in the job store)."""
    _set_address(address)
    _refuse_finished(job_id)

    from workflows.client import terminate_job

    async def main():
        client = await _client()
        return await terminate_job(client, job_id, reason[:300])
    trace = _run(main(), job_id)
    row = _known_job(job_id)
    marked = _store().mark(job_id, "terminated", reason[:300]) if row else True
    if trace and marked:
        _close_terminated_trace(trace, job_id, row, reason[:300])
    out.print(f"{safe(job_id)} terminated", highlight=False)


async def _record_termination(job_id: str, row: dict[str, Any] | None) -> str | None:
    """A job the job store calls running but that was terminated outside Quarry (the Web UI,
    `temporal workflow terminate`) ran no code at its end: record it as terminated with the reason
    its terminator gave, and close its trace with the root span, as `job terminate` does. Returns
    the reason, or None when the job was not terminated (or the server cannot say)."""
    from workflows.client import termination
    try:
        ended = await termination(await _client(), job_id)
    except Exception:  # the server's view is an addition, never a reason to fail the command
        return None
    if ended is None:
        return None
    if _store().mark(job_id, "terminated", ended.reason[:300]) and ended.trace:
        _close_terminated_trace(ended.trace, job_id, row, ended.reason[:300])
    return ended.reason


def _seen_terminated(job_id: str, row: dict[str, Any]) -> dict[str, Any]:
    """The job's row, after asking the server (if it answers) whether a job the store calls
    running was terminated outside Quarry."""
    from workflows.dev_server import reachable
    from workflows.shared import temporal_address
    if not reachable(temporal_address()) or asyncio.run(_record_termination(job_id, row)) is None:
        return row
    return _known_job(job_id) or row


def _close_terminated_trace(trace: dict[str, Any], job_id: str, row: dict[str, Any] | None, reason: str) -> None:
    """Emit the terminated job's `invoke_agent` span (status ERROR, the reason as its message), so
    its trace has a root like every other job's; recorded in the job store as finish_job does."""
    from observability.agent_span import AgentTrace, emit_agent_span
    from observability.setup import build_provider

    ref = AgentTrace.from_dict(trace)
    if ref is None:  # the callers pass a recorded trace: never reached
        return
    provider = build_provider("quarry-cli", quarry_home())  # its own, not the process's global one
    try:
        emit_agent_span(ref, job_id=job_id, intent=str((row or {}).get("intent", "")), output={"ranked": []},
                        status="terminated", error=reason,
                        attributes={"quarry.collection": str((row or {}).get("collection", ""))},
                        tracer=provider.get_tracer("quarry"))
    finally:
        provider.shutdown()  # flushes an OTLP batch too
    if row:
        _store().set_trace(job_id, ref.trace_id)


@job_app.command("rerun")
def job_rerun(job_id: str, wait: Annotated[bool, typer.Option("--wait")] = False, address: AddressOpt = None) -> None:
    """Run a job again with the same collection, intent, mode, policy, budget and configuration."""
    _set_address(address)
    try:
        row = _store().get(job_id)
    except QuarryError as err:
        fail(err)
    params = row.get("params") or {}
    state = row.get("state") or {}
    from nodes.config import JobConfig
    config = JobConfig.from_dict(params.get("config") or state.get("config"))
    submit_job(row["collection"], row["intent"], mode=params.get("mode", state.get("mode", "list")),
               policy=params.get("policy", state.get("policy", DEFAULT_POLICY)),
               budget=float(params.get("budget_seconds", DEFAULT_BUDGET_S)), config=config, wait=wait, json_out=False)


def _refuse_finished(job_id: str) -> None:
    row = _known_job(job_id)
    if row and row["status"] in FINAL:
        fail(QuarryError("job_finished", f"job {job_id} has already finished ({row['status']})",
                         f"see its result: quarry job result {job_id}, or run it again: quarry job rerun {job_id}"))


@job_app.command("show")
def job_show(job_id: str, json_out: Annotated[bool, typer.Option("--json")] = False,
             full: Annotated[bool, typer.Option("--full", help="Every passage, whole, and the weak matches")] = False) -> None:
    """A job's stored record: status, plan, latest checkpoint or result, Web UI and trace file."""
    try:
        row = _store().get(job_id)
    except QuarryError as err:
        fail(err)
    if json_out:
        print_json({k: v for k, v in row.items() if k != "state"} | {"web_ui": _web_ui(job_id)})
        return
    if row.get("result"):
        render_result(row["result"], web_ui=_web_ui(job_id), trace_file=_trace_file(row.get("trace_id")), full=full)
        return
    state = row.get("state") or {}
    out.print(safe(f"{job_id} · {row['status']} · {row['collection']} · round {row['round']}\nintent: {row['intent']}"),
              highlight=False)
    for item in state.get("plan", {}).get("checklist", []):
        out.print(safe(f"  [{item['kind']}] {item['text']}"), highlight=False)
    if line := usage_line(state.get("usage")):
        out.print(f"usage (at the last checkpoint): {safe(line)}", highlight=False)
    if ui := _web_ui(job_id):
        out.print(f"Web UI: {safe(ui)}", highlight=False)
    out.print(f"trace:  {safe(_trace_file(row.get('trace_id')))}", highlight=False)


@job_app.command("progress")
def job_progress(job_id: str, address: AddressOpt = None,
                 json_out: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Ask a running job where it is (round, node, top 5, budget)."""
    _set_address(address)

    from datetime import timedelta
    row = _known_job(job_id)
    if row and row["status"] in FINAL and row.get("result"):
        out.print(safe(f"{job_id} has finished ({row['status']}); its result: quarry job result {job_id}"), highlight=False)
        return

    async def main():
        client = await _client()
        handle = client.get_workflow_handle(job_id)
        p = await handle.query("progress", rpc_timeout=timedelta(seconds=5))
        # A workflow terminated from outside keeps answering queries with the state it had, which
        # still says "running": Temporal's own status says what happened to it.
        if p.get("status") == "running":
            status = (await handle.describe(rpc_timeout=timedelta(seconds=5))).status
            if status is not None and status.name != "RUNNING":
                p["status"] = status.name.lower()
        return p
    try:
        p = _attempt(main(), job_id)
    except QuarryError as err:
        if err.code != "worker_warming_up":
            fail(err)
        waiting = WorkerWarmingUp.of(job_id, row)  # informational: the job waits, nothing failed
        print_json(waiting.as_json()) if json_out else out.print(terminal_safe(waiting.line()), markup=False,
                                                                 highlight=False)
        return
    if detail := step_detail(job_id, p):
        p["step_detail"] = detail
    try:
        col = p.get("job_id") and _store().get(job_id)["collection"]
        from stores.collection import Collection
        titles = Collection(col).corpus.titles([t["docid"] for t in p["top"]]) if col else {}
        for t in p["top"]:
            t["title"] = titles.get(t["docid"], "")
    except QuarryError:
        pass
    print_json(p) if json_out else render_progress(p)


@job_app.command("stop")
def job_stop(job_id: str, address: AddressOpt = None) -> None:
    """Ask a job to answer now with what it has."""
    _set_address(address)
    row = _known_job(job_id)
    if row and row["status"] in FINAL:
        fail(QuarryError("job_finished", f"job {job_id} has already finished ({row['status']})",
                         f"see its result: quarry job result {job_id}"))

    async def main():
        client = await _client()
        await client.get_workflow_handle(job_id).signal("stop")
    _run(main(), job_id)
    out.print(f"stop sent to {safe(job_id)}; it answers at its next step", highlight=False)


@job_app.command("steer")
def job_steer(job_id: str, text: str, address: AddressOpt = None) -> None:
    """Add a requirement or exclusion to a running job (e.g. "not surveys", "2019-2023")."""
    _set_address(address)
    from temporalio.client import WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError

    from workflows.job_input import check_text
    row = _known_job(job_id)
    try:
        text = check_text(text, "steering text", 500)
        if row and row["status"] in FINAL:
            raise QuarryError("job_finished", f"job {job_id} has already finished ({row['status']})",
                              "start a new job with the added requirement")
    except QuarryError as err:
        fail(err)

    async def main():
        client = await _client()
        try:
            from datetime import timedelta
            return await client.get_workflow_handle(job_id).execute_update("steer", text,
                                                                            rpc_timeout=timedelta(seconds=10))
        except WorkflowUpdateRPCTimeoutOrCancelledError:
            raise _no_worker(f"no worker answered the steering of job {job_id} within 10 s", job_id) from None
        except WorkflowUpdateFailedError as err:
            cause = getattr(err, "cause", None)
            raise QuarryError("steer_rejected", f"steering rejected: {getattr(cause, 'message', None) or cause or err}",
                              'phrase one requirement, e.g. "must use hospital data" or "not surveys"') from None
    accepted = _run(main(), job_id)
    # The steer is applied by now: printing must not fail (a retry would steer twice), so the
    # accepted text goes through `safe` — `[/z]` or an escape sequence in it is shown as written.
    out.print(f"accepted: {safe(repr(accepted['accepted']))} "
              f"(applies from round {safe(accepted['applies_from_round'])})", highlight=False)


@job_app.command("result")
def job_result(job_id: str, wait: Annotated[bool, typer.Option("--wait")] = False,
               json_out: Annotated[bool, typer.Option("--json")] = False,
               full: Annotated[bool, typer.Option("--full", help="Every passage, whole, and the weak matches")] = False,
               address: AddressOpt = None) -> None:
    """A job's final result (from the job store, or wait for it)."""
    _set_address(address)
    try:
        row = _store().get(job_id)
    except QuarryError as err:
        fail(err)
    result = row.get("result")
    if result is None and row["status"] == "running" and not wait:
        row = _seen_terminated(job_id, row)  # ended outside Quarry: the store learns it now
    if result is None and wait and row["status"] not in FINAL:
        async def main():
            client = await _client()
            return await _final(client.get_workflow_handle(job_id).result(), job_id)
        result = _run(main(), job_id)
        row = _known_job(job_id) or row
        if not row.get("result") and row["status"] in FINAL and not result.get("ranked") \
                and result.get("status") in ("terminated", "failed", "cancelled"):
            result = None  # it ended while we waited, without building a result: said below
    if result is None and row["status"] in FINAL:  # terminated (or failed) before it built a result
        from quarry.ended_job import render_ended
        render_ended(row, json_out)
        raise typer.Exit(1)
    if result is None:
        fail(QuarryError("not_finished", f"job {job_id} is {row['status']} (round {row['round']})",
                         f"wait for it: quarry job result {job_id} --wait"))
    result = result | {"web_ui": _web_ui(job_id), "trace_file": _trace_file(row.get("trace_id"))}
    print_json(result) if json_out else render_result(result, web_ui=result["web_ui"], trace_file=result["trace_file"],
                                                      full=full)
    _exit_for(result)


@job_app.command("export")
def job_export(job_id: str,
               fmt: Annotated[str, typer.Option("--format", help="bibtex, ris, csl-json, csv or markdown")] = "bibtex",
               output: Annotated[Path | None, typer.Option(
                   "-o", "--output", help="File to write (default: stdout); name a CSL-JSON file *.json, the "
                                          "extension pandoc reads it by (refs.bib, refs.ris, refs.json)")] = None
               ) -> None:
    """A finished job's ranked documents as BibTeX, RIS, CSL-JSON or CSV, or the job as a Markdown report."""
    from quarry.export import export
    try:
        row = _store().get(job_id)
        result = row.get("result")
        if not result:
            raise QuarryError("not_finished", f"job {job_id} is {row['status']}; there is no result to export yet",
                              f"wait for it: quarry job result {job_id} --wait")
        records = {}
        try:
            from stores.collection import Collection
            records = Collection(result["collection"]).corpus.get_many([r["docid"] for r in result.get("ranked", [])])
        except QuarryError:
            pass  # the collection is gone: export what the result itself holds
        text = export(result, records, fmt)
        if output is not None:
            from stores.atomic import write_atomic
            write_atomic(output, text)  # a full disk or a kill leaves the previous file, never half of one
    except QuarryError as err:
        fail(err)
    except OSError as err:
        fail(disk_full(err) or QuarryError("cannot_write", f"cannot write {output}: {err.strerror}",
                                           "choose another --output path"))
    if output is None:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    else:
        console.print(f"wrote {len(result.get('ranked', []))} documents as {fmt} to {safe(output)}", highlight=False)
        from quarry.export import suffix_hint
        if (hint := suffix_hint(fmt, output)) is not None:
            console.print(terminal_safe(hint), markup=False, highlight=False)
