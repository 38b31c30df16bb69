"""Shared fixtures of the loopback integration tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from inference_operator.lb.registry import RegistryServer


@pytest.fixture
def registry() -> Iterator[RegistryServer]:
    """A reference registry on 127.0.0.1 and a free port, stopped after the test."""
    server = RegistryServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()
