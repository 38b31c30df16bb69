"""A canned HTTP server on 127.0.0.1 for the load balancer client's tests (the ``stub`` fixture).

It plays a registry that answers oddly or with hostile content: one fixed status, body and
headers for every request, and a record of what it received.
"""

from __future__ import annotations

import http.server
import threading
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
