"""A whole-request deadline on every registry call (HttpLoadBalancer), against a trickling peer on 127.0.0.1.

Covers: a registry that answers one byte every half second, in the status
line, in the headers, in the body or in its TLS handshake, cannot keep a 2 s-timeout call going past about 2 s — for
register, release, lookup and list alike; the error names the method, the URL and the timeout;
a registry that answers promptly within the deadline is unaffected.

The trickling peer waits on an Event between bytes (it is the peer's behaviour, not a test
sleeping); the client's call is timed with the monotonic clock.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from inference_operator.core.ports import LoadBalancerError
from inference_operator.lb.http import HttpLoadBalancer

TIMEOUT = 2.0
BYTE_EVERY = 0.5
BOUND = 10.0


class TricklingPeer:
    """Reads a request, sends ``prefix`` at once, then one byte of ``drip`` every half second."""

    def __init__(self, prefix: bytes, drip: bytes) -> None:
        self._prefix = prefix
        self._drip = drip
        self._stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(BOUND)
            try:
                received = b""
                while b"\r\n\r\n" not in received and not received.startswith(b"\x16"):  # HTTP, or a TLS hello
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    received += chunk
                conn.sendall(self._prefix)
                for byte in self._drip:
                    if self._stop.wait(BYTE_EVERY):
                        return
                    conn.sendall(bytes([byte]))
            except OSError:  # the client gave up and closed: what the test wants
                return

    def stop(self) -> None:
        self._stop.set()
        self._listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept (close alone does not)
        self._listener.close()
        self._thread.join(BOUND)


@pytest.fixture
def peer() -> Iterator[Callable[[bytes, bytes], TricklingPeer]]:
    peers: list[TricklingPeer] = []

    def start(prefix: bytes, drip: bytes) -> TricklingPeer:
        peers.append(TricklingPeer(prefix, drip))
        return peers[-1]

    yield start
    for p in peers:
        p.stop()


BODY = b'{"id": "lb-1", "address": "http://a", "target": "llama.default.svc:8000"}'
SHAPES = {
    "status line": (b"", b"HTTP/1.1 200 OK\r\n" * 40),
    "headers": (b"HTTP/1.1 200 OK\r\n", b"X-Slow: " + b"a" * 200 + b"\r\n"),
    "body": (b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n", BODY * 100),
}
CALLS: dict[str, Callable[[HttpLoadBalancer], object]] = {
    "register": lambda lb: lb.register("default/llama", target="llama.default.svc:8000"),
    "release": lambda lb: lb.release("default/llama"),
    "lookup": lambda lb: lb.lookup("default/llama"),
    "list": lambda lb: lb.list_registrations(),
}


@pytest.mark.timeout(30)
@pytest.mark.parametrize("shape", SHAPES)
def test_a_trickling_registry_cannot_keep_a_call_past_its_timeout(
    peer: Callable[[bytes, bytes], TricklingPeer], shape: str
) -> None:
    server = peer(*SHAPES[shape])
    lb = HttpLoadBalancer(server.url, timeout=TIMEOUT)
    started = time.monotonic()
    with pytest.raises(LoadBalancerError, match=r"GET .*/v1/registrations/default/llama: no answer within 2 s"):
        lb.lookup("default/llama")
    elapsed = time.monotonic() - started
    assert TIMEOUT - 0.1 <= elapsed < TIMEOUT + 0.75, f"the call took {elapsed:.2f} s"


@pytest.mark.timeout(30)
@pytest.mark.parametrize("call", CALLS)
def test_every_registry_call_has_the_deadline(peer: Callable[[bytes, bytes], TricklingPeer], call: str) -> None:
    server = peer(*SHAPES["headers"])
    lb = HttpLoadBalancer(server.url, timeout=1.0)
    started = time.monotonic()
    with pytest.raises(LoadBalancerError, match=r"no answer within 1 s"):
        CALLS[call](lb)
    assert time.monotonic() - started < 1.75


@pytest.mark.timeout(30)
def test_a_registry_trickling_its_tls_handshake_is_bounded_too(peer: Callable[[bytes, bytes], TricklingPeer]) -> None:
    # A TLS record header announcing a 16 KiB handshake message, then its bytes one by one.
    server = peer(b"\x16\x03\x03\x40\x00", b"\x02" * 200)
    lb = HttpLoadBalancer(server.url.replace("http://", "https://"), timeout=1.0)
    started = time.monotonic()
    with pytest.raises(LoadBalancerError, match=r"no answer within 1 s"):
        lb.lookup("default/llama")
    assert time.monotonic() - started < 1.75


def test_a_prompt_answer_within_the_deadline_is_unaffected(peer: Callable[[bytes, bytes], TricklingPeer]) -> None:
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(BODY), BODY)
    server = peer(answer, b"")
    registration = HttpLoadBalancer(server.url, timeout=TIMEOUT).lookup("default/llama")
    assert registration is not None and registration.id == "lb-1"
