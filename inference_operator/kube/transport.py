"""HTTP to the API server: a urllib3 connection pool with the credentials of ``kubeconfig.py``.

The operator sends a handful of verbs on a handful of paths, JSON in and JSON out; it needs a
pool of keep-alive connections, TLS with the cluster's CA, and the current token or client
certificate on each request. That is all this is. Every request is made once within its
timeout (``preflight.one_attempt``): the callers decide when to try again.
"""

from __future__ import annotations

import base64
import os
import ssl
import tempfile
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import urllib3

from inference_operator.kube.kubeconfig import Credentials, KubeconfigError

__all__ = ["Answer", "Transport"]

POOL_SIZE = 16
"""Connections kept per server by default: the workers, the Event poster and the election each
hold one at a time (the operator's client keeps its worker count and a few more)."""


@dataclass(frozen=True)
class Answer:
    status: int
    data: bytes


def _context(credentials: Credentials, certificate: tuple[str, str] | None) -> ssl.SSLContext:
    context = urllib3.util.ssl_.create_urllib3_context()
    if credentials.insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif credentials.ca_data:
        try:
            context.load_verify_locations(cadata=credentials.ca_data)
        except (ssl.SSLError, ValueError) as err:
            raise KubeconfigError(
                f"{credentials.source}: the cluster's certificate authority is unusable: {err}"
            ) from None
    else:
        context.load_default_certs()
    if certificate is not None:
        _load_certificate(context, certificate, credentials.source)
    return context


def _load_certificate(context: ssl.SSLContext, certificate: tuple[str, str], source: str) -> None:
    """Python's ssl reads a client certificate only from files: written to a private directory,
    loaded, and removed at once."""
    with tempfile.TemporaryDirectory(prefix="inference-operator-") as folder:
        paths = []
        for name, pem in zip(("client.crt", "client.key"), certificate, strict=True):
            path = os.path.join(folder, name)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as out:
                out.write(pem)
            paths.append(path)
        try:
            context.load_cert_chain(paths[0], paths[1])
        except ssl.SSLError as err:
            raise KubeconfigError(f"{source}: the client certificate and key are unusable: {err}") from None


class Transport:
    """Requests to one API server as one user, over a pool of kept-alive connections."""

    def __init__(
        self, credentials: Credentials, *, user_agent: str, retries: Any = None, pool_size: int = POOL_SIZE
    ) -> None:
        self.credentials = credentials
        self.server = credentials.server
        self.user_agent = user_agent
        self._lock = threading.Lock()
        self._certificate = credentials.client_certificate()
        pool_kw: dict[str, Any] = {}
        if self.server.startswith("https://"):
            pool_kw["ssl_context"] = _context(credentials, self._certificate)
            if credentials.insecure:
                pool_kw["cert_reqs"] = ssl.CERT_NONE
                urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
        self.pool = urllib3.PoolManager(num_pools=4, maxsize=pool_size, retries=retries, **pool_kw)

    def headers(self) -> dict[str, str]:
        """Who we are, for this request: the user agent and the current credentials."""
        headers = {"User-Agent": self.user_agent}
        token = self.credentials.token()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        elif self.credentials.basic is not None:
            pair = ":".join(self.credentials.basic).encode()
            headers["Authorization"] = f"Basic {base64.b64encode(pair).decode()}"
        if self.credentials.exec_plugin is not None:
            self._follow_certificate()
        return headers

    def _follow_certificate(self) -> None:
        """An exec plugin's new client certificate: new connections present it."""
        certificate = self.credentials.client_certificate()
        if certificate == self._certificate:
            return
        with self._lock:
            if certificate != self._certificate:
                self.pool.connection_pool_kw["ssl_context"] = _context(self.credentials, certificate)
                self.pool.clear()
                self._certificate = certificate

    def request(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, str] | None = None,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        timeout: float | tuple[float, float] = 30.0,
    ) -> Answer:
        """One request; its status and body. ``timeout`` bounds the whole request, or its connect
        and each read when a pair. urllib3's errors (no connection, a timeout) are raised. An
        answer 401 makes the next request read the token file or run the exec plugin again."""
        url = self.server + path
        if query:
            url += "?" + urlencode(query)
        sent = {**self.headers(), **(headers or {})}
        token = sent.get("Authorization", "").removeprefix("Bearer ") or None
        limit = (
            urllib3.Timeout(connect=timeout[0], read=timeout[1])
            if isinstance(timeout, tuple)
            else urllib3.Timeout(total=timeout)
        )
        response = self.pool.request(
            method,
            url,
            body=body,
            headers=sent,
            timeout=limit,
            redirect=False,
            preload_content=True,
        )
        if response.status == 401:
            self.credentials.refused(token)
        return Answer(response.status, response.data or b"")

    def close(self) -> None:
        self.pool.clear()
