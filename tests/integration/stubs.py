"""A canned HTTP server on 127.0.0.1 for the load balancer client's tests (the ``stub`` fixture).

It plays a registry that answers oddly or with hostile content: one fixed status, body and
headers for every request, and a record of what it received. ``FreezingTlsServer`` holds one
client still in its TLS handshake while the test moves time on.
"""

from __future__ import annotations

import http.server
import socket
import ssl
import threading
from collections.abc import Callable
from typing import Any

BOUND = 10.0  # seconds any network wait may take before the test fails


class StubServer:
    """Answers every request with one canned response and records what it received."""

    def __init__(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.requests: list[tuple[str, str, dict[str, str], bytes]] = []
        stub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                stub.requests.append((self.command, self.path, dict(self.headers), self.rfile.read(length)))
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_PUT = do_DELETE = _answer

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(BOUND)


class FreezingTlsServer:
    """A TLS server on 127.0.0.1 for one connection, during whose handshake the client stands still.

    It accepts the connection and runs ``during_handshake`` before it answers the client's hello:
    the client is blocked in its TLS handshake (as a process frozen while connecting is) for as
    long as that takes. Then it records every byte the client sends until the client closes, and
    answers a complete request head with a 503 so that a client that sent one is not kept waiting."""

    def __init__(self, cert: str, key: str) -> None:
        self.during_handshake: Callable[[], None] = lambda: None
        self.received = b""
        self.handshakes = 0
        self.error: BaseException | None = None
        self._tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._tls.load_cert_chain(cert, key)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(BOUND)
        self.url = f"https://127.0.0.1:{self._listener.getsockname()[1]}"
        self.thread = threading.Thread(target=self._serve_one, daemon=True)
        self.thread.start()

    def _serve_one(self) -> None:
        try:
            conn, _ = self._listener.accept()
        except OSError as err:
            self.error = err
            return
        with conn:
            conn.settimeout(BOUND)
            try:
                self.during_handshake()
                with self._tls.wrap_socket(conn, server_side=True) as tls:
                    self.handshakes += 1
                    while chunk := tls.recv(65536):
                        self.received += chunk
                        if b"\r\n\r\n" in self.received:
                            tls.sendall(b"HTTP/1.1 503 Frozen\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                            break
            except (ssl.SSLEOFError, ssl.SSLZeroReturnError, ConnectionResetError):
                pass  # the client hung up without a TLS goodbye: it sent nothing more
            except BaseException as err:  # noqa: BLE001 - reported by the test, not lost in a thread
                self.error = err

    def stop(self) -> None:
        self.thread.join(BOUND)
        self._listener.close()
