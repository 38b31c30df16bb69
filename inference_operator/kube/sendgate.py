"""The leader's last check, at the socket: a mutating request's bytes go out only while it may write.

The fence (``fence.py``) is asked before each write and once more in ``KubeClient.request``; what
is left between that check and the API server is urllib3 and http.client: taking a pooled
connection, building the request line and headers, TLS — a few hundred microseconds of Python,
longer when other threads hold the GIL. A process frozen there (SIGSTOP, a node pause) sends the
request when it wakes, past any check: the e2e pause rounds caught exactly that, an Event PATCH
from the old leader after the new one's first write. So the connections of the operator's API
client ask the gate again in ``send``, for every chunk of a mutating request (the headers, then
the body): the API server acts on a request only once its body is complete, and the last check
is now a few microseconds before the ``sendall`` of that body. A refused chunk raises, the
request is abandoned half-sent, and the connection is dropped (the API server discards it).

Reads, and the Lease's own requests (the election renews through the same client), pass.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.poolmanager import PoolManager

__all__ = ["install_send_gate"]

Gate = Callable[[], None]


class _Gated:
    """Mixed into urllib3's connections: the gate before each chunk of a mutating request."""

    send_gate: Gate | None = None
    _gated_request = False

    def putrequest(self, method: str, url: str, *args: Any, **kwargs: Any) -> None:
        self._gated_request = method not in ("GET", "HEAD", "OPTIONS") and "/leases" not in url
        super().putrequest(method, url, *args, **kwargs)  # type: ignore[misc]

    def send(self, data: Any) -> None:
        if self._gated_request and self.send_gate is not None:
            self.send_gate()
        super().send(data)  # type: ignore[misc]


def gated_connection(base: type[HTTPConnection], gate: Gate) -> type[HTTPConnection]:
    return type(f"Gated{base.__name__}", (_Gated, base), {"send_gate": staticmethod(gate)})


def install_send_gate(pool_manager: PoolManager, gate: Gate) -> None:
    """Make every connection of ``pool_manager`` (the operator's client's) ask ``gate`` before
    sending a mutating request's bytes. Pools made before are dropped."""
    http = type(
        "GatedHTTPConnectionPool", (HTTPConnectionPool,), {"ConnectionCls": gated_connection(HTTPConnection, gate)}
    )
    https = type(
        "GatedHTTPSConnectionPool", (HTTPSConnectionPool,), {"ConnectionCls": gated_connection(HTTPSConnection, gate)}
    )
    pool_manager.pool_classes_by_scheme = {"http": http, "https": https}
    pool_manager.clear()
