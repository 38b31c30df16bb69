"""The secret the operator sends now, and when to fetch it again.

:class:`Credentials` is where ``kubeconfig.py`` found the API server and who the operator is to
it; a token file is read again every minute (the kubelet rotates bound tokens), an exec plugin
(``client.authentication.k8s.io`` ExecCredential) is run again when its credential expires, and
either is fetched again when the API server answers 401 (``refused``) or Kopf logs in again
(``refresh``), as client-go does.
"""

from __future__ import annotations

import base64
import datetime
import json
import os
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from inference_operator.core.files import InputFileError, read_text_file

__all__ = ["Credentials", "ExecPlugin", "KubeconfigError", "read_secret", "run_exec_plugin"]

MAX_SECRET_BYTES = 1 << 20
TOKEN_REREAD_SECONDS = 60.0
EXEC_TIMEOUT_SECONDS = 60.0
EXEC_OUTPUT_LIMIT = 1 << 20


class KubeconfigError(ValueError):
    """No usable client configuration; the message names the file or variable (exit code 2)."""


def read_secret(path: str, *, limit: int, what: str) -> str:
    try:
        return read_text_file(path, limit=limit)
    except InputFileError as err:
        raise KubeconfigError(f"{what} {err}") from None


@dataclass(frozen=True)
class ExecPlugin:
    """A kubeconfig user's ``exec``: a command that prints an ExecCredential."""

    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    api_version: str = "client.authentication.k8s.io/v1"
    provide_cluster_info: bool = False
    where: str = ""  # the kubeconfig and user, for messages


@dataclass
class Credentials:
    """The server, how to trust it, and who the operator is to it. ``token()`` and
    ``client_certificate()`` give the current secret (read again or run again as it ages)."""

    server: str
    source: str  # what a message names: "the pod's service account" or "kubeconfig PATH, context NAME"
    ca_data: str | None = None  # PEM
    insecure: bool = False
    static_token: str | None = None
    token_file: str | None = None
    certificate: tuple[str, str] | None = None  # PEM certificate and key
    basic: tuple[str, str] | None = None
    exec_plugin: ExecPlugin | None = None
    namespace: str | None = None
    clock: Callable[[], float] = time.monotonic
    run: Callable[..., subprocess.CompletedProcess[bytes]] = subprocess.run
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _file_token: tuple[float, str] | None = field(default=None, repr=False)
    _exec: tuple[datetime.datetime | None, str | None, tuple[str, str] | None] | None = field(default=None, repr=False)

    def token(self) -> str | None:
        """The bearer token to send now (None: none, the client certificate or basic auth say who)."""
        if self.static_token:
            return self.static_token
        if self.token_file:
            return self._token_from_file(self.token_file)
        if self.exec_plugin is not None:
            return self._exec_output()[1]
        return None

    def client_certificate(self) -> tuple[str, str] | None:
        """The PEM client certificate and key to present now, if any."""
        if self.certificate is not None:
            return self.certificate
        if self.exec_plugin is not None:
            return self._exec_output()[2]
        return None

    def expiration(self) -> datetime.datetime | None:
        """When the exec plugin's credential expires (None: it does not, or there is no plugin)."""
        return self._exec_output()[0] if self.exec_plugin is not None else None

    def refused(self, token: str | None) -> None:
        """The API server answered 401 to a request sent with ``token``: the next request reads
        the token file again or runs the exec plugin again (once, however many requests sent
        with that token were refused), as client-go does."""
        with self._lock:
            if self._exec is not None and self._exec[1] == token:
                self._exec = None
            if self._file_token is not None and self._file_token[1] == token:
                self._file_token = None

    def refresh(self) -> None:
        """Forget what was read or run: the next request reads the token file or runs the exec
        plugin again (Kopf's login after a 401)."""
        with self._lock:
            self._exec = self._file_token = None

    def _cluster_info(self) -> dict[str, Any]:
        """The cluster as an exec plugin is told of it (ExecCredential ``spec.cluster``: the
        kubeconfig's names, empty fields left out, the CA as base64 of PEM)."""
        cluster: dict[str, Any] = {"server": self.server}
        if self.insecure:
            cluster["insecure-skip-tls-verify"] = True
        if self.ca_data:
            cluster["certificate-authority-data"] = base64.b64encode(self.ca_data.encode()).decode()
        return cluster

    def _token_from_file(self, path: str) -> str:
        with self._lock:
            now = self.clock()
            if self._file_token is None or now - self._file_token[0] >= TOKEN_REREAD_SECONDS:
                text = read_secret(path, limit=MAX_SECRET_BYTES, what="token file").strip()
                self._file_token = (now, text)
            return self._file_token[1]

    def _exec_output(self) -> tuple[datetime.datetime | None, str | None, tuple[str, str] | None]:
        with self._lock:
            cached = self._exec
            if cached is not None and (cached[0] is None or cached[0] > _utcnow() + datetime.timedelta(seconds=10)):
                return cached
            assert self.exec_plugin is not None
            self._exec = run_exec_plugin(self.exec_plugin, self._cluster_info(), run=self.run)
            return self._exec


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def run_exec_plugin(
    plugin: ExecPlugin,
    cluster: dict[str, Any],
    *,
    run: Callable[..., subprocess.CompletedProcess[bytes]] = subprocess.run,
) -> tuple[datetime.datetime | None, str | None, tuple[str, str] | None]:
    """Run the plugin once (not interactively, bounded in time); its credential's expiry, token
    and client certificate. ``cluster`` goes to it when it asks (``provideClusterInfo``).
    :class:`KubeconfigError` naming it when it fails."""
    spec: dict[str, Any] = {"interactive": False}
    if plugin.provide_cluster_info:
        spec["cluster"] = cluster
    info = {"apiVersion": plugin.api_version, "kind": "ExecCredential", "spec": spec}
    env = {**os.environ, **dict(plugin.env), "KUBERNETES_EXEC_INFO": json.dumps(info)}
    what = f"{plugin.where}: exec plugin {plugin.command!r}"
    try:
        done = run(
            [plugin.command, *plugin.args],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=EXEC_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as err:
        raise KubeconfigError(f"{what} did not run: {err}") from None
    if done.returncode != 0:
        said = " ".join(done.stderr.decode(errors="replace").split())[:300]
        raise KubeconfigError(f"{what} failed with exit code {done.returncode}: {said or 'no message'}")
    try:
        printed = json.loads(done.stdout[:EXEC_OUTPUT_LIMIT])
    except ValueError:
        printed = None
    status = printed.get("status") if isinstance(printed, dict) else None
    if not isinstance(status, dict):
        raise KubeconfigError(f"{what} printed no ExecCredential (JSON with a status map)")
    token = status.get("token") or None
    cert, key = status.get("clientCertificateData"), status.get("clientKeyData")
    if not token and not (cert and key):
        raise KubeconfigError(f"{what}: its ExecCredential has neither status.token nor a client certificate and key")
    expires = None
    if status.get("expirationTimestamp"):
        try:
            expires = datetime.datetime.fromisoformat(str(status["expirationTimestamp"]).replace("Z", "+00:00"))
        except ValueError:
            raise KubeconfigError(f"{what}: status.expirationTimestamp is no RFC 3339 time") from None
        if expires.tzinfo is None:
            expires = expires.replace(tzinfo=datetime.UTC)
    return expires, (str(token) if token else None), ((str(cert), str(key)) if cert and key else None)
