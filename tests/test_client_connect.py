"""Connecting to a server that is still starting waits for it; other failures are raised at once."""
from __future__ import annotations

import asyncio

import pytest

from workflows import client as client_mod


class FlakyConnect:
    def __init__(self, errors: list[str]) -> None:
        self.errors, self.calls = list(errors), 0

    async def __call__(self, *args, **kwargs):
        self.calls += 1
        if self.errors:
            raise RuntimeError(self.errors.pop(0))
        return "connected"


def test_a_server_still_starting_is_waited_for(monkeypatch):
    fake = FlakyConnect(["Failed client connect: Frontend is not healthy yet"] * 2)
    monkeypatch.setattr(client_mod.Client, "connect", fake)
    assert asyncio.run(client_mod.connect("127.0.0.1:1", tracing=False)) == "connected"
    assert fake.calls == 3


def test_other_failures_are_not_retried(monkeypatch):
    fake = FlakyConnect(["Failed client connect: connection refused"])
    monkeypatch.setattr(client_mod.Client, "connect", fake)
    with pytest.raises(RuntimeError, match="refused"):
        asyncio.run(client_mod.connect("127.0.0.1:1", tracing=False))
    assert fake.calls == 1


def test_waiting_is_bounded(monkeypatch):
    fake = FlakyConnect(["Frontend is not healthy yet"] * 1000)
    monkeypatch.setattr(client_mod.Client, "connect", fake)
    with pytest.raises(RuntimeError, match="not healthy"):
        asyncio.run(client_mod.connect("127.0.0.1:1", tracing=False, starting_up_wait_s=0.0))
    assert fake.calls == 1
