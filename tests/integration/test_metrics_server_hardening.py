"""The metrics server against slow, greedy and rude clients, on 127.0.0.1.

Covers: a client that sends half a request is disconnected after the per-connection timeout, and
so is one that trickles a byte at a time (the timeout bounds the whole request, not each read);
at most ``max_connections`` clients are served at once — the next ones are closed at once and
the thread count stays bounded — and once they are gone a scrape succeeds again; a client that
resets its connection is logged at debug level in one line, with no traceback on stderr;
without a host, the server listens on 127.0.0.1 only.

Tests poll with a deadline (``wait_for``, or a ``recv`` that returns at the server's close).
"""

from __future__ import annotations

import http.client
import logging
import socket
import struct
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator

import pytest

from inference_operator.kube.metricsserver import MetricsServer

BOUND = 10.0  # seconds any wait may take before the test fails
TIMEOUT = 0.5  # the server's per-connection timeout in these tests
CAP = 4
HALF = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n"  # no blank line: the request never ends
BIG = b"m 1\n" * 2_000_000  # 8 MB: more than the socket buffers hold, the write meets the reset


def wait_for(predicate: Callable[[], object], what: str, timeout: float = BOUND) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.005)


def started(timeout: float, cap: int = CAP) -> MetricsServer:
    srv = MetricsServer("127.0.0.1:0", lambda: BIG, request_timeout=timeout, max_connections=cap)
    srv.start()
    return srv


@pytest.fixture
def server() -> Iterator[MetricsServer]:
    srv = started(TIMEOUT)
    yield srv
    srv.stop()


def connect(server: MetricsServer) -> socket.socket:
    assert server.address is not None
    return socket.create_connection(server.address, timeout=BOUND)


def closed_by_server(sock: socket.socket, *, within: float) -> bool:
    """Whether the server closes ``sock`` within ``within`` seconds (EOF or reset)."""
    sock.settimeout(within)
    try:
        while sock.recv(65536):
            pass
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True
    return True


def scrape(server: MetricsServer) -> bool:
    assert server.address is not None
    host, port = server.address
    try:
        with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=BOUND) as response:
            return response.status == 200 and len(response.read()) == len(BIG)
    except (OSError, http.client.HTTPException):
        return False


def test_a_half_sent_request_is_disconnected_after_the_timeout(server: MetricsServer) -> None:
    with connect(server) as sock:
        sock.sendall(HALF)
        began = time.monotonic()
        assert closed_by_server(sock, within=BOUND)
        assert time.monotonic() - began < TIMEOUT + 1.0


def test_a_trickling_client_is_disconnected_after_the_timeout_too(server: MetricsServer) -> None:
    began = time.monotonic()
    with connect(server) as sock:
        for byte in HALF * 10:  # one byte, then up to 0.1 s for the server to hang up
            try:
                sock.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                break
            if closed_by_server(sock, within=0.1):
                break
        else:
            pytest.fail("the server kept a trickling client for the whole request")
    assert time.monotonic() - began < TIMEOUT + 1.0


def test_clients_beyond_the_cap_are_closed_at_once_and_threads_stay_bounded() -> None:
    server = started(BOUND * 3)  # holders keep their slots for the whole test
    try:
        before = threading.active_count()
        holders = [connect(server) for _ in range(CAP)]
        for sock in holders:
            sock.sendall(HALF)
        wait_for(lambda: server.connections == CAP, "the holders to take every slot")
        extra = [connect(server) for _ in range(20)]
        assert all(closed_by_server(sock, within=BOUND / 2) for sock in extra)
        assert threading.active_count() <= before + CAP
        assert not scrape(server)
        for sock in extra + holders:
            sock.close()
        wait_for(lambda: server.connections == 0, "the holders' slots to be freed")
        assert scrape(server)
    finally:
        server.stop()


def test_a_client_that_resets_is_logged_quietly_without_a_traceback(
    server: MetricsServer, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG, logger="inference_operator.kube.metricsserver")
    with connect(server) as sock:
        sock.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close sends RST

    def dropped() -> list[logging.LogRecord]:
        return [r for r in caplog.records if r.getMessage().startswith("Dropped metrics client")]

    wait_for(dropped, "the dropped client to be logged")
    assert all(r.levelno == logging.DEBUG and r.exc_info is None for r in dropped())
    assert scrape(server)
    assert "Traceback" not in capfd.readouterr().err


def test_without_a_host_it_listens_on_loopback_only() -> None:
    srv = MetricsServer(":0", lambda: b"")
    srv.start()
    try:
        assert srv.address is not None and srv.address[0] == "127.0.0.1"
    finally:
        srv.stop()
