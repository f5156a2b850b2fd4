"""`quarry run --port P` is remembered (issue 20, item 6).

The home records the server it started (run/temporal-server.json, checked against the process's
identity); with no QUARRY_TEMPORAL_ADDRESS in the environment, every later command — the job
commands Quarry itself prints, a second `quarry run`, `quarry down` — reaches that server.

Real parts: `quarry` commands as subprocesses (so nothing one command sets in its environment
leaks into the next), the embedded dev server `quarry run --port P` starts (one for the module),
and a real worker (tests/drill_worker.py) held at its verification gate, so the job is still
running while progress, steer, list and stop are sent to it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from stores.collection import ingest
from tests.drill_kit import ROOT, Gate, free_port, reachable, wait_for
from tests.fakes import search_docs, write_jsonl
from workflows.processes.background import pid_of, spawn_detached, stop_detached

INTENT = "graph neural networks for molecular property prediction"


def _env(home: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("QUARRY_TEMPORAL_ADDRESS", "QUARRY_TASK_QUEUE", "QUARRY_UI_PORT", "QUARRY_UI_URL")
    }
    return env | {"QUARRY_HOME": str(home), "COLUMNS": "200"}


def _quarry(home: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "quarry", *args],
        cwd=ROOT,
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def running(tmp_path_factory) -> dict:
    """`quarry run --port P` on a fresh home; its job held mid-run by a gated worker of the home."""
    home = tmp_path_factory.mktemp("port-home") / "home"
    ingest(write_jsonl(home.parent / "lit.jsonl", search_docs()), "lit", home=home)
    port, ui = free_port(), free_port()
    gate = Gate(home.parent / "gate")
    gate.hold()
    try:
        ran = _quarry(home, "run", "lit", INTENT, "--port", str(port), "--ui-port", str(ui), "--budget", "300")
        assert ran.returncode == 0, ran.stderr[-2000:]
        job_id = ran.stdout.split("submitted ", 1)[1].split()[0]
        assert f"quarry job watch {job_id}" in ran.stdout
        # The worker `quarry run` started is swapped for the same worker with a verification gate,
        # recorded as the home's worker (so later commands neither start another nor miss it).
        stop_detached(home, "worker")
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("QUARRY_HOME", str(home))
            mp.setenv("PYTHONPATH", str(ROOT))
            worker = spawn_detached(
                home,
                "worker",
                [
                    sys.executable,
                    "-m",
                    "tests.drill_worker",
                    "--home",
                    str(home),
                    "--address",
                    f"127.0.0.1:{port}",
                    "--gate",
                    str(gate.folder),
                ],
            )
        wait_for(lambda: gate.entered() or worker.poll() is not None, "the job to reach its gate", timeout_s=120)
        assert worker.poll() is None, (home / "logs" / "worker.log").read_text()[-2000:]
        yield {"home": home, "port": port, "job": job_id, "gate": gate}
    finally:
        gate.release()
        _quarry(home, "down")


def test_job_commands_reach_the_server_run_started_without_any_address(running: dict) -> None:
    home, job = running["home"], running["job"]
    progress = _quarry(home, "job", "progress", job, "--json")
    assert progress.returncode == 0, progress.stdout + progress.stderr
    assert json.loads(progress.stdout)["job_id"] == job
    steer = _quarry(home, "job", "steer", job, "not surveys")
    assert steer.returncode == 0 and "accepted" in steer.stdout, steer.stdout + steer.stderr
    listed = _quarry(home, "job", "list", "--json")
    assert listed.returncode == 0 and job in listed.stdout, listed.stderr
    shown = _quarry(home, "job", "list")
    assert "no Temporal server answers" not in shown.stdout, shown.stdout
    stop = _quarry(home, "job", "stop", job)
    assert stop.returncode == 0 and "stop sent" in stop.stdout, stop.stdout + stop.stderr

    watch = subprocess.Popen(
        [sys.executable, "-m", "quarry", "job", "watch", job],
        cwd=ROOT,
        env=_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(watch.stdout), daemon=True)
    reader.start()
    try:  # the job is still held: a line of live progress means the watch reached the server
        wait_for(lambda: watch.poll() is not None or bool(lines), "the watch's first progress line", timeout_s=60)
    finally:
        running["gate"].release()
    err = watch.stderr.read()
    watch.wait(120)
    reader.join(30)
    out = "".join(lines)
    assert watch.returncode == 0 and "cannot reach Temporal" not in err, (out + err)[-2000:]
    assert job in out or "round" in out, out
    result = _quarry(home, "job", "result", job, "--wait", "--json")
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout.strip().splitlines()[-1])["status"] in ("stopped", "completed")
    assert "cannot reach Temporal" not in out + err


def test_resolution_order_and_a_second_run_reuse_the_recorded_server(running: dict, monkeypatch) -> None:
    from workflows.processes.address import resolve_address

    home, port = running["home"], running["port"]
    monkeypatch.delenv("QUARRY_TEMPORAL_ADDRESS", raising=False)
    assert resolve_address(home).address == f"127.0.0.1:{port}"
    monkeypatch.setenv("QUARRY_TEMPORAL_ADDRESS", "10.0.0.1:7999")
    assert resolve_address(home).address == "10.0.0.1:7999"
    monkeypatch.delenv("QUARRY_TEMPORAL_ADDRESS")

    running["gate"].release()
    again = _quarry(
        home, "run", "lit", "transformer language models for translation", "--budget", "60", "--wait", "--json"
    )
    assert again.returncode == 0, again.stderr[-2000:]
    assert "starting the embedded Temporal dev server" not in again.stderr, again.stderr
    assert "starting a Quarry worker" not in again.stderr, "the home's running worker was not found"
    assert json.loads(again.stdout.strip().splitlines()[-1])["status"] == "completed"


def test_down_stops_what_run_started_and_the_address_falls_back(running: dict, monkeypatch) -> None:
    from workflows.processes.address import ADDRESS_DEFAULT, resolve_address

    home, port = running["home"], running["port"]
    down = _quarry(home, "down")
    assert down.returncode == 0 and "worker: stopped" in down.stdout and "temporal-server: stopped" in down.stdout, (
        down.stdout + down.stderr
    )
    wait_for(lambda: not reachable(port), "the server to stop listening", timeout_s=30)
    assert pid_of(home, "temporal-server") is None
    monkeypatch.delenv("QUARRY_TEMPORAL_ADDRESS", raising=False)
    assert resolve_address(home).address == ADDRESS_DEFAULT
