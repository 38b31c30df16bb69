"""The leader's last check at the socket: no byte of a refused mutating request is sent.

Covers, on urllib3's connection with a stand-in socket (nothing is opened): each chunk of a
mutating request (headers, then body) asks the gate first, and a refusal stops it before the
chunk reaches the socket; reads and the Lease's own requests never ask; the gate is installed
on a real ``ApiClient``'s pool manager, whose new pools make gated connections.
"""

from __future__ import annotations

from typing import Any

import pytest
from urllib3.connection import HTTPConnection

from inference_operator.kube.fence import NotLeader
from inference_operator.kube.sendgate import gated_connection, install_send_gate


class Socket:
    def __init__(self) -> None:
        self.sent: list[bytes] = []

    def sendall(self, data: bytes) -> None:
        self.sent.append(data)

    def settimeout(self, timeout: Any) -> None:
        pass


class Gate:
    def __init__(self) -> None:
        self.open = True
        self.asked = 0

    def __call__(self) -> None:
        self.asked += 1
        if not self.open:
            raise NotLeader("send request: not sent, this replica does not hold the leader lease")


def connection(gate: Gate) -> tuple[HTTPConnection, Socket]:
    conn = gated_connection(HTTPConnection, gate)("127.0.0.1", 6443)
    sock = Socket()
    conn.sock = sock  # type: ignore[assignment]
    return conn, sock


def test_each_chunk_of_a_mutating_request_asks_the_gate_and_a_refusal_sends_nothing_more() -> None:
    gate = Gate()
    conn, sock = connection(gate)
    conn.putrequest("PATCH", "/apis/apps/v1/namespaces/ns/deployments/x")
    conn.endheaders()
    assert gate.asked == 1 and len(sock.sent) == 1
    gate.open = False  # the process was frozen between the headers and the body
    with pytest.raises(NotLeader):
        conn.send(b'{"spec": {}}')
    assert len(sock.sent) == 1, "the body, which would complete the request, was not sent"


def test_reads_and_the_leases_own_requests_never_ask() -> None:
    gate = Gate()
    gate.open = False
    read, read_sock = connection(gate)
    read.putrequest("GET", "/apis/apps/v1/namespaces/ns/deployments/x")
    read.endheaders()
    lease, lease_sock = connection(gate)
    lease.putrequest("PUT", "/apis/coordination.k8s.io/v1/namespaces/ops/leases/inference-operator")
    lease.endheaders()
    lease.send(b"{}")
    assert gate.asked == 0 and len(read_sock.sent) == 1 and len(lease_sock.sent) == 2


def test_the_gate_is_installed_on_a_pool_managers_pools() -> None:
    import urllib3

    manager = urllib3.PoolManager()
    manager.connection_from_url("https://127.0.0.1:6443/api")  # a pool made before: dropped
    gate = Gate()
    install_send_gate(manager, gate)
    pool = manager.connection_from_url("https://127.0.0.1:6443/api")
    assert pool.ConnectionCls.__name__ == "GatedHTTPSConnection"
    assert pool.ConnectionCls.send_gate is gate
