"""What the server doors cost: a search through `quarry serve`'s HTTP API and through MCP, against
the same search called in-process, and the HTTP API under 50 concurrent clients.

    python -m bench.bench_serve [--collection cacm] [--n 200] [--load-seconds 30] [--clients 50]

Why: `quarry serve` and `quarry mcp` only translate onto `quarry.app.service.QuarryService`; what a
door adds per call (uvicorn, FastAPI, JSON, the MCP SDK's JSON-RPC and session) should be small
next to the search itself — the issue's target is p50 ≤ 1.15× the in-process call for HTTP and MCP.

In one run: a real collection (CACM by default, BM25 only) is ingested into a temporary
QUARRY_HOME (unless --home is given), `python -m quarry --home HOME serve` is started on a free
loopback port (tests.serve_kit) and `python -m quarry --home HOME mcp` over stdio. Then the same
lexical search of one page (limit 10) runs, round-robin with a rotating order, over a rotating set
of the collection's queries, through

  (a) `QuarryService().search(...)` in this process — the reference,
  (b) `POST /api/collections/{name}/search` (httpx.Client, keep-alive),
  (c) the `search` tool through the MCP SDK's client over Streamable HTTP (`/mcp` of the same server),
  (c') the same tool through a minimal JSON-RPC client (httpx, `RawMcp`) on the same `/mcp`: what the
       server's side of MCP costs, without the SDK client's own (its streams, tasks and the
       validation of every result against the tool's output schema),
  (d) the same tool over stdio to the `quarry mcp` subprocess,
  (d') the same tool over stdio through the minimal client, to a second `quarry mcp` subprocess,

after --warmup untimed rounds; each door's p50/p90, its p50 ratio to (a), and its fixed overhead
per call (p50(door) − p50(a), and the median of the per-query differences) are reported. Then the
load: --clients concurrent httpx.AsyncClient clients search for --load-seconds; every non-200 or
exception counts as an error (must be zero); each search is followed by the next page of its
search_id (`GET /api/searches/ID`), where a 404 — the id already let go — is an error too (the
shared sessions keep ids by age and memory, quarry.app.sessions); searches/s, pages read and
404s, p50 and p99 search latency and the CPU seconds of the server and of this (client) process are
reported. Results go to bench/out/bench_serve.json.
The clients share the 2 cores with the server: run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from bench.raw_mcp import RawMcpHttp, raw_stdio_server
from bench.slices import DEFAULT_DATASETS
from stores.atomic import write_atomic
from workflows.processes.exit import run_script

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "bench" / "out" / "bench_serve.json"
TARGET_RATIO = 1.15
LIMIT = 10  # ranks per page: the search, then its ranking paged to 10 (TOOL_LIMITS.preview is 5)
MIN_QUERIES = 30
MAX_LOAD_S = 300.0  # --load-seconds is bounded: a typo must not hold the machine for an hour
REQUEST_TIMEOUT_S = 60.0

Call = Callable[[str], Awaitable[list[str]]]  # a door: query -> the docids of its page


def ms(samples: list[float], q: float) -> float:
    return round(float(np.percentile(np.asarray(samples) * 1e3, q)), 3)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (all its threads: the server's JVM too), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def queries_of(name: str, home: Path, wanted: int) -> list[str]:
    from stores.collection import Collection

    queries = [t for _, t in sorted(Collection(name, home).corpus.queries().items()) if t.strip()]
    if len(queries) < MIN_QUERIES:
        raise SystemExit(f"{name} has {len(queries)} queries; the bench rotates over at least {MIN_QUERIES}")
    return queries[:wanted] if wanted else queries


def docids_of_mcp(result: Any) -> list[str]:
    if result.is_error:
        raise RuntimeError(f"MCP search failed: {[getattr(c, 'text', c) for c in result.content]}")
    return [h["docid"] for h in result.structured_content["hits"]]


# -- latency, one call at a time ---------------------------------------------------------------


async def latency(doors: dict[str, Call], queries: list[str], n: int, warmup: int) -> dict[str, Any]:
    names = list(doors)
    times: dict[str, list[float]] = {d: [] for d in names}
    differ: Counter[str] = Counter()
    for i in range(warmup + n):
        q = queries[i % len(queries)]
        order = names[i % len(names) :] + names[: i % len(names)]  # rotate who goes first
        pages: dict[str, list[str]] = {}
        for door in order:
            started = time.perf_counter()
            pages[door] = await doors[door](q)
            took = time.perf_counter() - started
            if i >= warmup:
                times[door].append(took)
        differ.update(d for d in names[1:] if pages[d] != pages[names[0]])
    ref = names[0]
    out: dict[str, Any] = {"calls_per_door": n, "warmup_rounds": warmup, "queries": len(queries), "doors": {}}
    for door in names:
        t = times[door]
        paired = np.asarray(t) - np.asarray(times[ref])
        out["doors"][door] = {
            "p50_ms": ms(t, 50),
            "p90_ms": ms(t, 90),
            "mean_ms": round(float(np.mean(t)) * 1e3, 3),
            "p50_ratio": round(ms(t, 50) / ms(times[ref], 50), 3),
            "overhead_p50_diff_ms": round(ms(t, 50) - ms(times[ref], 50), 3),
            "overhead_paired_median_ms": round(float(np.median(paired)) * 1e3, 3),
            "pages_differing_from_in_process": differ[door],
        }
        if door != ref:
            out["doors"][door]["pass"] = out["doors"][door]["p50_ratio"] <= TARGET_RATIO
    return out


# -- load: concurrent HTTP clients -------------------------------------------------------------


async def load(url: str, name: str, queries: list[str], clients: int, seconds: float, pid: int) -> dict[str, Any]:
    lat: list[float] = []
    errors: Counter[str] = Counter()
    pages: Counter[str] = Counter()  # the browse after each search: read, 404 (its search_id gone), other
    deadline = time.monotonic() + seconds

    async def client(k: int) -> None:
        async with httpx.AsyncClient(base_url=url, timeout=REQUEST_TIMEOUT_S) as http:
            i = k * 7  # each client starts elsewhere in the queries
            while time.monotonic() < deadline:
                body = {"query": queries[i % len(queries)], "channel": "lexical", "offset": 1, "limit": LIMIT}
                i += 1
                started = time.perf_counter()
                try:
                    r = await http.post(f"/api/collections/{name}/search", json=body)
                except Exception as err:  # every failure counts, none stops the run
                    errors[type(err).__name__] += 1
                    continue
                if r.status_code != 200:
                    errors[f"HTTP {r.status_code}"] += 1
                    continue
                lat.append(time.perf_counter() - started)
                # Then the next page of that very search, as a client browsing it does: its
                # search_id must still be held although 49 other clients searched meanwhile.
                search_id = r.json()["search_id"]
                try:
                    page = await http.get(f"/api/searches/{search_id}", params={"offset": LIMIT + 1, "limit": LIMIT})
                except Exception as err:
                    errors[type(err).__name__] += 1
                    continue
                if page.status_code == 200:
                    pages["read"] += 1
                else:
                    pages["404" if page.status_code == 404 else "other"] += 1
                    errors[f"page HTTP {page.status_code}"] += 1

    cpu_server, cpu_self = cpu_seconds(pid), os.times()
    started = time.perf_counter()
    await asyncio.wait_for(
        asyncio.gather(*(client(k) for k in range(clients))), seconds + REQUEST_TIMEOUT_S + 30
    )  # bounded: past the deadline only the requests in flight finish
    wall = time.perf_counter() - started
    me = os.times()
    return {
        "clients": clients,
        "seconds": round(wall, 2),
        "requests_ok": len(lat),
        "pages_read": pages["read"],
        "pages_404": pages["404"],
        "errors": sum(errors.values()),
        "error_kinds": dict(errors),
        "requests_per_s": round(len(lat) / wall, 1),
        "p50_ms": ms(lat, 50) if lat else None,
        "p90_ms": ms(lat, 90) if lat else None,
        "p99_ms": ms(lat, 99) if lat else None,
        "max_ms": round(max(lat) * 1e3, 1) if lat else None,
        "server_cpu_s": round(cpu_seconds(pid) - cpu_server, 1),
        "client_cpu_s": round(me.user + me.system - cpu_self.user - cpu_self.system, 1),
    }


# -- main --------------------------------------------------------------------------------------


async def measure(args: argparse.Namespace, home: Path, result: dict[str, Any]) -> None:
    from quarry.app.service import QuarryService
    from tests.serve_kit import serving

    name = args.collection
    queries = queries_of(name, home, args.queries)
    service = QuarryService(door="bench")

    async def in_process(q: str) -> list[str]:
        return [h.docid for h in service.search(name, q, "lexical", 1, LIMIT).hits]

    stdio_log = tempfile.TemporaryFile("w+")  # noqa: SIM115 - the stdio server's stderr, closed below
    try:
        with serving(home) as served, httpx.Client(base_url=served.url, timeout=REQUEST_TIMEOUT_S) as http:

            async def over_http(q: str) -> list[str]:
                r = http.post(f"/api/collections/{name}/search", json={"query": q, "offset": 1, "limit": LIMIT})
                r.raise_for_status()
                return [h["docid"] for h in r.json()["hits"]]

            params = StdioServerParameters(
                command=sys.executable,
                args=["-m", "quarry", "--home", str(home), "mcp"],
                cwd=REPO,
                env=dict(os.environ),
            )
            async with Client(f"{served.url}/mcp") as mcp_http, Client(stdio_client(params, errlog=stdio_log)) as stdio:

                async def mcp_over_http(q: str) -> list[str]:
                    args_ = {"collection": name, "query": q, "offset": 1, "limit": LIMIT}
                    return docids_of_mcp(await mcp_http.call_tool("search", args_))

                async def mcp_over_stdio(q: str) -> list[str]:
                    args_ = {"collection": name, "query": q, "offset": 1, "limit": LIMIT}
                    return docids_of_mcp(await stdio.call_tool("search", args_))

                raw_http = RawMcpHttp(http).start()

                async def mcp_over_http_raw(q: str) -> list[str]:
                    args_ = {"collection": name, "query": q, "offset": 1, "limit": LIMIT}
                    return [h["docid"] for h in raw_http.call_tool("search", args_)["structuredContent"]["hits"]]

                doors: dict[str, Call] = {"in-process": in_process, "http": over_http, "mcp-http": mcp_over_http}
                doors["mcp-http-raw"] = mcp_over_http_raw
                with contextlib.ExitStack() as stack:
                    if not args.no_stdio:
                        raw_stdio = stack.enter_context(raw_stdio_server(home, stdio_log))

                        async def mcp_over_stdio_raw(q: str) -> list[str]:
                            args_ = {"collection": name, "query": q, "offset": 1, "limit": LIMIT}
                            return [
                                h["docid"] for h in raw_stdio.call_tool("search", args_)["structuredContent"]["hits"]
                            ]

                        doors["mcp-stdio"] = mcp_over_stdio
                        doors["mcp-stdio-raw"] = mcp_over_stdio_raw
                    print(
                        f"[{name}] latency: {args.n} calls per door, {len(queries)} queries, limit {LIMIT} …",
                        flush=True,
                    )
                    result["latency"] = await latency(doors, queries, args.n, args.warmup)
                    report_latency(result["latency"])

            if args.load_seconds > 0:
                print(f"[{name}] load: {args.clients} clients for {args.load_seconds:g} s …", flush=True)
                result["load"] = await load(served.url, name, queries, args.clients, args.load_seconds, served.proc.pid)
                report_load(result["load"])
                if result["load"]["errors"]:
                    result["load"]["server_output_tail"] = served.log.read_text(errors="replace").splitlines()[-40:]
    finally:
        stdio_log.seek(0)
        result["mcp_stdio_stderr_tail"] = stdio_log.read().splitlines()[-5:]
        stdio_log.close()


def report_latency(lat: dict[str, Any]) -> None:
    for door, d in lat["doors"].items():
        verdict = "" if "pass" not in d else ("  PASS" if d["pass"] else "  FAIL") + f" (<= {TARGET_RATIO})"
        print(
            f"    {door:<13} p50 {d['p50_ms']:7.2f} ms  p90 {d['p90_ms']:7.2f} ms  ratio {d['p50_ratio']:5.2f}"
            f"  overhead {d['overhead_p50_diff_ms']:+6.2f} ms (paired {d['overhead_paired_median_ms']:+6.2f})"
            f"{verdict}" + (f"  {d['pages_differing_from_in_process']} pages differ" if door != "in-process" else ""),
            flush=True,
        )


def report_load(ld: dict[str, Any]) -> None:
    print(
        f"    {ld['requests_ok']} searches in {ld['seconds']} s: {ld['requests_per_s']} searches/s, "
        f"{ld['pages_read']} pages of them read, {ld['pages_404']} 404s; "
        f"p50 {ld['p50_ms']} ms, p99 {ld['p99_ms']} ms, max {ld['max_ms']} ms; errors {ld['errors']} "
        f"{ld['error_kinds'] or ''}· CPU s: server {ld['server_cpu_s']}, clients {ld['client_cpu_s']}",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_serve", description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", type=Path, default=DEFAULT_DATASETS, help="folder with the BEIR collections")
    parser.add_argument("--collection", default="cacm", help="a BEIR folder under --datasets (cacm, scifact-train …)")
    parser.add_argument("--home", type=Path, default=None, help="reuse this QUARRY_HOME (default: a temporary one)")
    parser.add_argument("--n", type=int, default=200, help="timed calls per door")
    parser.add_argument("--warmup", type=int, default=30, help="untimed round-robin rounds first")
    parser.add_argument("--queries", type=int, default=0, help="rotate over the first N queries (0: all)")
    parser.add_argument("--no-stdio", action="store_true", help="skip MCP over stdio")
    parser.add_argument("--load-seconds", type=float, default=30.0, help=f"load duration (0: none; ≤ {MAX_LOAD_S:g})")
    parser.add_argument("--clients", type=int, default=50, help="concurrent HTTP clients during the load")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    if not 0 <= args.load_seconds <= MAX_LOAD_S or args.clients < 1 or args.n < 1:
        parser.error(f"--load-seconds must be 0…{MAX_LOAD_S:g}, --clients and --n at least 1")
    if 0 < args.queries < MIN_QUERIES:
        parser.error(f"--queries: at least {MIN_QUERIES}")

    temp_home = None if args.home else tempfile.mkdtemp(prefix="quarry-bench-serve-")
    home = Path(temp_home) if temp_home else args.home.expanduser().resolve()
    os.environ["QUARRY_HOME"] = str(home)  # the in-process service and both subprocesses read this home
    result: dict[str, Any] = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        },
        "collection": args.collection,
        "limit": LIMIT,
        "target_p50_ratio": TARGET_RATIO,
    }
    try:
        from stores.collection import ingest

        started = time.perf_counter()
        report = ingest(args.datasets.resolve() / args.collection, args.collection, home=home)
        result["ingest_s"] = round(time.perf_counter() - started, 2)
        result["documents"] = report.documents
        print(f"[{args.collection}] ingest: {report.documents} documents in {result['ingest_s']} s", flush=True)
        asyncio.run(measure(args, home, result))
    finally:
        if temp_home:
            shutil.rmtree(temp_home, ignore_errors=True)
    result["machine"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    doors = result["latency"]["doors"]
    checks = [d["pass"] for d in doors.values() if "pass" in d]
    load_ok = result.get("load", {}).get("errors", 0) == 0
    result["pass"] = all(checks) and load_ok
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(args.out, json.dumps(result, indent=2) + "\n")
    print(
        f"overall: {'PASS' if result['pass'] else 'FAIL'} (ratios ≤ {TARGET_RATIO}, no load errors) · "
        f"load average {result['machine']['load_average_at_start']} → {result['machine']['load_average_at_end']}"
        f" · results in {args.out}",
        flush=True,
    )
    return 0 if result["pass"] else 1


if __name__ == "__main__":
    run_script(lambda: sys.exit(main()))
