"""`quarry serve` as a real subprocess on a free loopback port, for the tests of its doors (the JSON
API, SSE, Pi-Serini's backend, the job pages, MCP over Streamable HTTP): started, waited for on a
real condition (its API answers), and stopped."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[1]
READY_S = 60.0  # the longest `quarry serve` may take to answer (imports, opening the job store)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Served:
    url: str
    proc: subprocess.Popen
    log: Path


@contextlib.contextmanager
def serving(home: Path, *args: str, env: dict[str, str] | None = None, host: str = "127.0.0.1") -> Iterator[Served]:
    """`python -m quarry --home HOME serve --host HOST --port P ARGS…` until the block ends; its
    environment is this one's plus `env`, without a QUARRY_API_TOKEN that `env` does not set."""
    port = free_port()
    inherited = {k: v for k, v in os.environ.items() if k != "QUARRY_API_TOKEN"}
    log = Path(tempfile.mkdtemp(prefix="quarry-serve-")) / "serve.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "quarry", "--home", str(home), "serve", "--host", host, "--port", str(port), *args],
            cwd=ROOT,
            env=inherited | (env or {}),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    token = (env or {}).get("QUARRY_API_TOKEN")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    deadline = time.monotonic() + READY_S
    try:
        while True:
            assert proc.poll() is None, f"quarry serve exited {proc.returncode}: {log.read_text()}"
            try:
                if httpx.get(f"{url}/api/collections", headers=headers, timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, (
                f"quarry serve did not answer on {url} in {READY_S:g} s: {log.read_text()}"
            )
            time.sleep(0.1)  # the interval of a poll on a real condition (the API answers), bounded above
        yield Served(url, proc, log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def in_process(home: Path, base_url: str = "http://127.0.0.1:8765", **options: Any) -> Iterator[Any]:
    """`quarry serve`'s app (quarry.http.app.create_app with `options`) over `home` in this process,
    behind a Starlette TestClient (its lifespan, hence /mcp, running): for requests no real client on
    loopback would send — any Host, any Origin — and for checks that must see the app before any
    route runs. QUARRY_HOME is `home` while the block runs."""
    from starlette.testclient import TestClient

    from quarry.http.app import create_app

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("QUARRY_HOME", str(home))
        app = create_app(**options)
        with TestClient(app, base_url=base_url) as client:
            yield client
