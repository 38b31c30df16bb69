"""Shared fixtures of the loopback integration tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from inference_operator.lb.registry import RegistryServer
from tests.integration.stubs import StubServer


@pytest.fixture
def registry() -> Iterator[RegistryServer]:
    """A reference registry on 127.0.0.1 and a free port, stopped after the test."""
    server = RegistryServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def stub() -> Iterator[Callable[..., StubServer]]:
    servers: list[StubServer] = []

    def start(status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> StubServer:
        servers.append(StubServer(status, body, headers))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()
