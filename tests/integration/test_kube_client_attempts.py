"""Each request of the operator's API client is one attempt within its timeout.

Covers, against a TLS server on 127.0.0.1 that reads each request and answers as the test says:
a GET, a PUT and a DELETE that get no answer fail after one timeout, having been sent once (urllib3's default
would send each again three times: four times the timeout, and a write that may land twice); an
answer 429 with ``Retry-After`` (the API server shedding load) is still retried, as client-go
does, and the retry's answer is the result.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
import time
from pathlib import Path

import pytest
import urllib3
from kubernetes.config import kube_config

from inference_operator.kube.client import KubeClient

BOUND = 10.0  # seconds any socket operation of the server may block
TIMEOUT = 0.5  # the client's request timeout

KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {{server: "https://127.0.0.1:{port}", certificate-authority: "{ca}"}}
users:
- name: me
  user: {{token: a-token}}
contexts:
- name: local
  context: {{cluster: local, user: me}}
current-context: local
"""


class ScriptedApiServer:
    """Answers the n-th request it reads with ``answers[n]``: raw HTTP bytes, or None for no answer
    (the connection is held open until the client gives up on it)."""

    def __init__(self, certs: dict[str, Path], answers: list[bytes | None]) -> None:
        self.answers = answers
        self.requests: list[bytes] = []
        self.connections = 0
        self._tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._tls.load_cert_chain(str(certs["cert"]), str(certs["key"]))
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        self.port = self._listener.getsockname()[1]
        self._stop = threading.Event()
        self._open: list[ssl.SSLSocket] = []
        self._threads: list[threading.Thread] = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(BOUND)
        try:
            with self._tls.wrap_socket(conn, server_side=True) as tls:
                self._open.append(tls)
                while not self._stop.is_set():
                    request = self._read_request(tls)
                    if request is None:
                        return
                    answer = self.answers[len(self.requests)] if len(self.requests) < len(self.answers) else None
                    self.requests.append(request)
                    if answer is None:
                        tls.recv(1)  # hold: until the client closes (its timeout) or BOUND
                        return
                    tls.sendall(answer)
        except (OSError, ssl.SSLError):
            return  # the client hung up or timed out: what these tests provoke

    @staticmethod
    def _read_request(tls: ssl.SSLSocket) -> bytes | None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = tls.recv(65536)
            if not chunk:
                return None
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = next(
            (
                int(line.split(b":", 1)[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            ),
            0,
        )
        while len(body) < length:
            chunk = tls.recv(65536)
            if not chunk:
                return None
            body += chunk
        return head.split(b"\r\n", 1)[0]

    def stop(self) -> None:
        self._stop.set()
        self._listener.close()
        for conn in self._open:  # a kept-alive connection's reader waits for the next request
            with contextlib.suppress(OSError):  # closed already
                conn.shutdown(socket.SHUT_RDWR)
        for thread in self._threads:
            thread.join(BOUND)


def client_for(
    server: ScriptedApiServer, tmp_path: Path, certs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> KubeClient:
    kubeconfig = tmp_path / f"kubeconfig-{server.port}"
    kubeconfig.write_text(KUBECONFIG.format(port=server.port, ca=certs["ca"]))
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    # The official client reads KUBECONFIG once, when it is imported (a process starts with it set).
    monkeypatch.setattr(kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", str(kubeconfig))
    return KubeClient.from_environment(timeout=TIMEOUT)


DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "team"}}


@pytest.mark.parametrize(
    ("verb", "method"),
    [("get", b"GET"), ("update", b"PUT"), ("delete", b"DELETE")],
)
def test_a_request_without_an_answer_is_sent_once_and_fails_after_one_timeout(
    certs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, verb: str, method: bytes
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    server = ScriptedApiServer(certs, [None] * 8)
    try:
        client = client_for(server, tmp_path, certs, monkeypatch)
        body = DEPLOYMENT if verb == "update" else None
        started = time.monotonic()
        with pytest.raises(urllib3.exceptions.MaxRetryError):  # the transport's error, as the backend maps it
            client.request(verb, "Deployment", "team", "web", body=body)
        took = time.monotonic() - started
    finally:
        server.stop()
    assert [r.split(b" ")[0] for r in server.requests] == [method], server.requests
    assert server.connections == 1
    assert took < 3 * TIMEOUT, f"{took:.2f}s: retried after its timeout"


def test_an_answer_429_with_retry_after_is_retried_and_the_retrys_answer_is_the_result(
    certs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    busy = (
        b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 0\r\nContent-Type: application/json\r\n"
        b"Content-Length: 2\r\n\r\n{}"
    )
    found = b'{"kind":"Deployment","metadata":{"name":"web"}}'
    ok = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(found), found)
    server = ScriptedApiServer(certs, [busy, ok])
    try:
        client = client_for(server, tmp_path, certs, monkeypatch)
        got = client.request("get", "Deployment", "team", "web")
    finally:
        server.stop()
    assert got["metadata"]["name"] == "web"
    assert len(server.requests) == 2
