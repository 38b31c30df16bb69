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
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import urllib3

from inference_operator.core.errors import ApiError
from inference_operator.kube.client import KubeClient

BOUND = 10.0  # seconds any socket operation of the server may block
TIMEOUT = 1.5  # the client's request timeout: the TLS handshake with a thread of this process included

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


@pytest.fixture
def scripted(
    certs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[[list[bytes | None]], tuple[ScriptedApiServer, KubeClient]]]:
    """``(answers) -> (server, client)``: a scripted server, and the operator's client configured
    for it by a kubeconfig, as ``run`` configures it. Both are closed after the test."""
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    made: list[tuple[ScriptedApiServer, KubeClient]] = []

    def make(answers: list[bytes | None]) -> tuple[ScriptedApiServer, KubeClient]:
        server = ScriptedApiServer(certs, answers)
        kubeconfig = tmp_path / f"kubeconfig-{server.port}"
        kubeconfig.write_text(KUBECONFIG.format(port=server.port, ca=certs["ca"]))
        monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
        made.append((server, KubeClient.from_environment(timeout=TIMEOUT)))
        return made[-1]

    yield make
    for server, client in made:
        client.transport.close()
        server.stop()


def answer(status: str, body: bytes = b"{}", headers: str = "") -> bytes:
    head = f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{headers}Content-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "team"}}
CALLS = {  # verb → (HTTP method, the call's arguments after the kind)
    "get": (b"GET", {"namespace": "team", "name": "web"}),
    "update": (b"PUT", {"namespace": "team", "name": "web", "body": DEPLOYMENT}),
    "delete": (b"DELETE", {"namespace": "team", "name": "web"}),
    "create": (b"POST", {"namespace": "team", "body": DEPLOYMENT}),
    "patch": (b"PATCH", {"namespace": "team", "name": "web", "body": {"spec": {"replicas": 2}}}),
}
Scripted = Callable[[list[bytes | None]], tuple[ScriptedApiServer, KubeClient]]


@pytest.mark.parametrize("verb", sorted(CALLS))
def test_a_request_without_an_answer_is_sent_once_and_fails_after_one_timeout(scripted: Scripted, verb: str) -> None:
    server, client = scripted([None] * 8)
    method, args = CALLS[verb]
    started = time.monotonic()
    with pytest.raises(urllib3.exceptions.MaxRetryError):  # the transport's error, as the backend maps it
        client.request(verb, "Deployment", **args)  # type: ignore[arg-type]
    took = time.monotonic() - started
    server.stop()
    assert [r.split(b" ")[0] for r in server.requests] == [method], server.requests
    assert server.connections == 1
    assert took < 2 * TIMEOUT, f"{took:.2f}s: sent again after its timeout"


@pytest.mark.parametrize("verb", ["get", "create", "patch"])
def test_an_answer_429_with_retry_after_is_retried_for_every_verb_and_the_retrys_answer_is_the_result(
    scripted: Scripted, verb: str
) -> None:
    busy = answer("429 Too Many Requests", headers="Retry-After: 0\r\n")
    server, client = scripted([busy, answer("200 OK", b'{"kind":"Deployment","metadata":{"name":"web"}}')])
    method, args = CALLS[verb]
    got = client.request(verb, "Deployment", **args)  # type: ignore[arg-type]
    assert got["metadata"]["name"] == "web"
    assert [r.split(b" ")[0] for r in server.requests] == [method, method]


def test_after_three_retries_the_fourth_429_is_the_result_an_error_naming_it(scripted: Scripted) -> None:
    busy = answer("429 Too Many Requests", b'{"reason":"TooManyRequests"}', headers="Retry-After: 0\r\n")
    server, client = scripted([busy] * 5)
    with pytest.raises(ApiError) as caught:
        client.request("get", "Deployment", "team", "web")
    assert caught.value.code == 429 and caught.value.reason == "TooManyRequests"
    assert len(server.requests) == 4


def test_a_redirect_is_not_followed_but_reported_as_an_error(scripted: Scripted) -> None:
    elsewhere = answer("302 Found", b'{"message":"moved"}', headers="Location: https://127.0.0.1:9/x\r\n")
    server, client = scripted([elsewhere])
    with pytest.raises(ApiError) as caught:
        client.request("get", "Deployment", "team", "web")
    assert caught.value.code == 302 and "HTTP 302: moved" in str(caught.value)
    assert len(server.requests) == 1
