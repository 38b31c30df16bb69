"""``trace view --serve`` answers only requests addressed to it, on 127.0.0.1.

Covers: a request whose ``Host`` is the server's own ``127.0.0.1:PORT`` or ``localhost:PORT``
gets the page; one naming any other host (what a DNS-rebinding page sends after pointing its
own name at 127.0.0.1), another port, or none at all gets 421 and not a byte of the trace.
"""

from __future__ import annotations

import http.client
import threading
from collections.abc import Iterator

import pytest

from inference_operator.trace.view import page_server

PAGE = "<!doctype html><title>trace</title><p>secret-ish trace"


@pytest.fixture
def port() -> Iterator[int]:
    server = page_server(PAGE)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def get(port: int, host: str | None) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.putrequest("GET", "/", skip_host=True)
        if host is not None:
            connection.putheader("Host", host)
        connection.endheaders()
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}"])
def test_a_request_addressed_to_the_server_gets_the_page(port: int, host: str) -> None:
    assert get(port, host.format(port=port)) == (200, PAGE.encode())


@pytest.mark.parametrize("host", ["evil.example:{port}", "evil.example", "127.0.0.1:1", "127.0.0.1", None])
def test_any_other_host_gets_421_and_nothing_of_the_trace(port: int, host: str | None) -> None:
    status, body = get(port, host.format(port=port) if host else None)
    assert status == 421 and b"secret-ish" not in body
