"""Connecting to a server that is still starting (listening, not yet answering) waits for it;
when nothing listens the failure is raised at once, as ServerUnreachable — by the port, never by
the error's text."""

from __future__ import annotations

import asyncio

import pytest

from workflows import client as client_mod
from workflows.processes import dev_server
from workflows.rpc_errors import ServerUnreachable, quarry_error


class FlakyConnect:
    def __init__(self, errors: list[str]) -> None:
        self.errors, self.calls = list(errors), 0

    async def __call__(self, *args, **kwargs):
        self.calls += 1
        if self.errors:
            raise RuntimeError(self.errors.pop(0))
        return "connected"


def test_a_server_still_starting_is_waited_for(monkeypatch):
    fake = FlakyConnect(["Failed client connect: any text at all"] * 2)
    monkeypatch.setattr(client_mod.Client, "connect", fake)
    monkeypatch.setattr(dev_server, "reachable", lambda address, timeout=0.5: True)  # listening
    assert asyncio.run(client_mod.connect("127.0.0.1:1", tracing=False)) == "connected"
    assert fake.calls == 3


def test_nothing_listening_is_not_retried(monkeypatch):
    fake = FlakyConnect(["Frontend is not healthy yet"])  # the text does not matter: nothing listens at :1
    monkeypatch.setattr(client_mod.Client, "connect", fake)
    with pytest.raises(ServerUnreachable) as info:
        asyncio.run(client_mod.connect("127.0.0.1:1", tracing=False))
    assert fake.calls == 1 and isinstance(info.value, RuntimeError) and info.value.address == "127.0.0.1:1"
    assert quarry_error(info.value).code == "no_server"


def test_waiting_is_bounded(monkeypatch):
    fake = FlakyConnect(["Frontend is not healthy yet"] * 1000)
    monkeypatch.setattr(client_mod.Client, "connect", fake)
    monkeypatch.setattr(dev_server, "reachable", lambda address, timeout=0.5: True)
    with pytest.raises(ServerUnreachable, match="not healthy"):
        asyncio.run(client_mod.connect("127.0.0.1:1", tracing=False, starting_up_wait_s=0.0))
    assert fake.calls == 1
