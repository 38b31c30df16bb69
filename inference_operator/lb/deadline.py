"""A whole-request deadline for ``http.client``: the timeout bounds the call, not each socket step.

``http.client`` applies a connection's timeout to every socket operation on its own, so a peer
that sends one byte just before each timeout keeps a call going for as long as it likes (up to
the body cap: minutes). The registry calls run on the reconcile workers, so a few such calls
would stall reconciliation of every object. Here each step of a call — connect, TLS handshake,
sending, and every read of the status line, headers and body — gets only the time left until
one deadline (``core.deadline``), and a step that starts after it fails at once with
``TimeoutError``.
"""

from __future__ import annotations

import http.client
import socket
import ssl
from typing import Any

from inference_operator.core.deadline import Deadline, bounded_reader

__all__ = ["Deadline", "DeadlineConnection"]


class DeadlineConnection(http.client.HTTPConnection):
    """One HTTP(S) connection whose every socket step is bounded by one :class:`Deadline`
    (``tls``: the context for https, None for plain http)."""

    def __init__(self, netloc: str, *, deadline: Deadline, tls: ssl.SSLContext | None) -> None:
        self.default_port = http.client.HTTPS_PORT if tls is not None else http.client.HTTP_PORT  # read by super
        super().__init__(netloc, timeout=deadline.remaining())
        self._deadline = deadline
        self._tls = tls
        self.response_class = _response_class(deadline)

    def connect(self) -> None:
        self.timeout = self._deadline.remaining()
        super().connect()  # TCP within the time left
        if self._tls is not None:
            self.sock.settimeout(self._deadline.remaining())  # CPython bounds a whole handshake by it
            self.sock = self._tls.wrap_socket(self.sock, server_hostname=self.host)
        self.sock.settimeout(self._deadline.remaining())  # sendall: bounded as a whole, too


def _response_class(deadline: Deadline) -> type[http.client.HTTPResponse]:
    class DeadlineResponse(http.client.HTTPResponse):
        """Reads through :class:`_DeadlineReader` instead of the socket's own file."""

        def __init__(self, sock: socket.socket, *args: Any, **kwargs: Any) -> None:
            super().__init__(sock, *args, **kwargs)
            # Nothing was read yet. Keep the socket's own raw file (it holds the socket open
            # until the response is closed, as http.client expects) and bound its reads.
            self.fp = bounded_reader(self.fp, sock, deadline)

    return DeadlineResponse
