"""Shared fixtures of the loopback integration tests."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

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


@pytest.fixture(scope="session")
def certs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A CA and a server certificate for 127.0.0.1 signed by it (openssl, a few ms)."""
    d = tmp_path_factory.mktemp("tls")

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True, timeout=60)

    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "ca.key",
            "-out", "ca.crt", "-days", "2", "-subj", "/CN=lb-test-ca")  # fmt: skip
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", "server.key",
            "-out", "server.csr", "-subj", "/CN=127.0.0.1")  # fmt: skip
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "server.crt", "-days", "2", "-extfile", "san.ext")  # fmt: skip
    return {"ca": d / "ca.crt", "cert": d / "server.crt", "key": d / "server.key"}
