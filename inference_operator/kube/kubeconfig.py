"""Where the API server is and who the operator is to it: the pod's service account or a kubeconfig.

The operator's own requests (``transport.py``) and Kopf's watch streams (its login handler,
``operator.py``) both take their credentials from here, so the two always talk to the same
server as the same user. What is read, as client-go reads it:

- In a pod (``KUBERNETES_SERVICE_HOST`` and ``_PORT`` set, a service account token mounted):
  the service's address, the mounted CA, and the token file, read again every minute (the
  kubelet rotates bound tokens).
- Otherwise the files of ``KUBECONFIG`` (or ``~/.kube/config``), merged as kubectl merges them
  (the first file to name a context, cluster or user, or a current context, wins), each read
  as bounded input. Of the current context: the cluster's ``server``, its CA (file or data) and
  ``insecure-skip-tls-verify``; the user's token (or ``tokenFile``), client certificate and key
  (file or data), basic credentials, or an ``exec`` plugin (``client.authentication.k8s.io``
  ExecCredential: a token or a client certificate, run again when its expiry has passed or the
  API server refused it). Relative paths are relative to the file that names them.

A kubeconfig this cannot use (an ``auth-provider`` user, ``tls-server-name`` or ``proxy-url``,
a context naming a cluster that is not there, an entry that is no map) is a
:class:`KubeconfigError` naming the file and the field.
"""

from __future__ import annotations

import base64
import datetime
import json
import os
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from inference_operator.core.boundedyaml import YamlLimitError, load_documents
from inference_operator.core.files import InputFileError, read_text_file

__all__ = [
    "Credentials",
    "ExecPlugin",
    "KubeconfigError",
    "in_cluster",
    "kubeconfig_paths",
    "load_credentials",
    "read_kubeconfigs",
]

MAX_KUBECONFIG_BYTES = 4 << 20
MAX_SECRET_BYTES = 1 << 20
DEFAULT_KUBECONFIG = os.path.join("~", ".kube", "config")
SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
TOKEN_REREAD_SECONDS = 60.0
EXEC_TIMEOUT_SECONDS = 60.0
EXEC_OUTPUT_LIMIT = 1 << 20


class KubeconfigError(ValueError):
    """No usable client configuration; the message names the file or variable (exit code 2)."""


def kubeconfig_paths(env: Mapping[str, str] | None = None) -> list[str]:
    """The files the client reads: ``KUBECONFIG``'s list, else ``~/.kube/config``."""
    env = os.environ if env is None else env
    listed = env.get("KUBECONFIG")
    if listed:
        return [p for p in listed.split(os.pathsep) if p]
    return [os.path.expanduser(DEFAULT_KUBECONFIG)]


def _read(path: str, *, limit: int, what: str) -> str:
    try:
        return read_text_file(path, limit=limit)
    except InputFileError as err:
        raise KubeconfigError(f"{what} {err}") from None


def read_kubeconfigs(paths: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """Each existing kubeconfig, read as bounded input, with its path; :class:`KubeconfigError`
    naming the file when one is no regular file, too big, not YAML or not a map."""
    found = []
    for path in paths:
        if not os.path.lexists(path):
            continue
        text = _read(path, limit=MAX_KUBECONFIG_BYTES, what="kubeconfig")
        try:
            documents = list(load_documents(text))
        except (YamlLimitError, yaml.YAMLError) as err:
            problem = str(err).splitlines()[0] if str(err) else type(err).__name__
            raise KubeconfigError(f"kubeconfig {path}: not valid YAML: {problem}") from None
        document = documents[0] if documents else None
        if document is None:
            document = {}
        if not isinstance(document, dict):
            raise KubeconfigError(f"kubeconfig {path}: not a kubeconfig (the document is no map)")
        found.append((path, document))
    return found


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
                text = _read(path, limit=MAX_SECRET_BYTES, what="token file").strip()
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


# --- in a pod --------------------------------------------------------------------------------------


def in_cluster(env: Mapping[str, str] | None = None, *, account: str = SERVICE_ACCOUNT) -> Credentials | None:
    """The pod's service account, or None when not in a pod (as client-go's InClusterConfig)."""
    env = os.environ if env is None else env
    host, port = env.get("KUBERNETES_SERVICE_HOST"), env.get("KUBERNETES_SERVICE_PORT")
    token = os.path.join(account, "token")
    if not host or not port or not os.path.exists(token):
        return None
    server = f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"
    ca = os.path.join(account, "ca.crt")
    namespace = os.path.join(account, "namespace")
    return Credentials(
        server=server,
        source="the pod's service account",
        ca_data=_read(ca, limit=MAX_SECRET_BYTES, what="service account CA") if os.path.exists(ca) else None,
        token_file=token,
        namespace=_read(namespace, limit=4096, what="namespace file").strip() if os.path.exists(namespace) else None,
    )


# --- kubeconfig ------------------------------------------------------------------------------------


def _named(documents: list[tuple[str, dict[str, Any]]], section: str, body: str) -> dict[str, tuple[str, Any]]:
    """Entries of a section by name, each with the file it came from; the first file wins.
    :class:`KubeconfigError` naming an entry that is no map."""
    found: dict[str, tuple[str, Any]] = {}
    for path, document in documents:
        entries = document.get(section) or []
        if not isinstance(entries, list):
            raise KubeconfigError(f"kubeconfig {path}: {section}: must be a list")
        for item in entries:
            if not isinstance(item, dict) or not isinstance(item.get("name"), str):
                raise KubeconfigError(f"kubeconfig {path}: {section}: each entry needs a name and a {body}")
            value = item.get(body) or {}
            if not isinstance(value, dict):
                raise KubeconfigError(f"kubeconfig {path}: {section}[{item['name']}].{body}: must be a map")
            if item["name"] not in found:
                found[item["name"]] = (path, value)
    return found


def _file(base: str, value: Any, what: str) -> str:
    return _read(_resolved(base, value), limit=MAX_SECRET_BYTES, what=what)


def _data(value: Any, where: str) -> str:
    try:
        return base64.b64decode("".join(str(value).split()), validate=True).decode()  # line breaks are allowed
    except (ValueError, UnicodeDecodeError):
        raise KubeconfigError(f"{where}: not base64 of PEM text") from None


def _pem(base: str, entry: Mapping[str, Any], key: str, where: str) -> str | None:
    if entry.get(f"{key}-data"):
        return _data(entry[f"{key}-data"], f"{where}.{key}-data")
    if entry.get(key):
        return _file(base, entry[key], f"{where}.{key}:")
    return None


def _exec(base: str, spec: Any, where: str) -> ExecPlugin:
    if not isinstance(spec, dict) or not spec.get("command"):
        raise KubeconfigError(f"{where}.exec.command: required")
    command = str(spec["command"])
    if os.sep in command and not os.path.isabs(command):
        command = _resolved(base, command)  # client-go: relative to the file
    env = tuple((str(e.get("name")), str(e.get("value", ""))) for e in spec.get("env") or () if isinstance(e, dict))
    if spec.get("interactiveMode") == "Always":
        raise KubeconfigError(f"{where}.exec.interactiveMode: Always needs a terminal, which the operator never has")
    return ExecPlugin(
        command=command,
        args=tuple(str(a) for a in spec.get("args") or ()),
        env=env,
        api_version=str(spec.get("apiVersion") or "client.authentication.k8s.io/v1"),
        provide_cluster_info=spec.get("provideClusterInfo") is True,
        where=where,
    )


def from_kubeconfig(documents: list[tuple[str, dict[str, Any]]], where: str) -> Credentials:
    """The current context's credentials from merged kubeconfig documents."""
    current = next((d.get("current-context") for _, d in documents if d.get("current-context")), None)
    if not current:
        raise KubeconfigError(f"no cluster to run against: {where} has no current-context (set KUBECONFIG)")
    contexts = _named(documents, "contexts", "context")
    if current not in contexts:
        raise KubeconfigError(f"{where}: current-context {current!r} is not among its contexts")
    _, context = contexts[current]
    cluster_name, user_name = str(context.get("cluster") or ""), str(context.get("user") or "")
    clusters, users = _named(documents, "clusters", "cluster"), _named(documents, "users", "user")
    if cluster_name not in clusters:
        raise KubeconfigError(f"{where}: context {current!r} names cluster {cluster_name!r}, which it does not have")
    cluster_file, cluster = clusters[cluster_name]
    user_file, user = users.get(user_name, (cluster_file, {}))
    at = f"kubeconfig {cluster_file}: clusters[{cluster_name}].cluster"
    if not cluster.get("server"):
        raise KubeconfigError(f"{at}.server: required")
    server = str(cluster["server"]).rstrip("/")
    if not server.startswith(("https://", "http://")):
        raise KubeconfigError(f"{at}.server: {server!r} is no http(s) URL")
    for unsupported, why in _UNSUPPORTED.items():
        if cluster.get(unsupported):
            raise KubeconfigError(f"{at}.{unsupported}: not supported: {why}")
    insecure = cluster.get("insecure-skip-tls-verify", False)
    if not isinstance(insecure, bool):
        raise KubeconfigError(f"{at}.insecure-skip-tls-verify: must be true or false, not {insecure!r}")
    who = f"kubeconfig {user_file}: users[{user_name}].user"
    if user.get("auth-provider"):
        raise KubeconfigError(f"{who}.auth-provider: not supported; use an exec plugin (e.g. kubelogin) instead")
    cert, key = _pem(user_file, user, "client-certificate", who), _pem(user_file, user, "client-key", who)
    if bool(cert) != bool(key):
        raise KubeconfigError(f"{who}: a client certificate needs both client-certificate and client-key")
    token_file = user.get("tokenFile")
    return Credentials(
        server=server,
        source=f"kubeconfig {cluster_file}, context {current}",
        ca_data=_pem(cluster_file, cluster, "certificate-authority", at),
        insecure=insecure,
        static_token=str(user["token"]) if user.get("token") else None,
        token_file=None if user.get("token") or not token_file else _resolved(user_file, token_file),
        certificate=(cert, key) if cert and key else None,
        basic=(str(user["username"]), str(user.get("password") or "")) if user.get("username") else None,
        exec_plugin=_exec(user_file, user["exec"], who) if user.get("exec") else None,
        namespace=str(context["namespace"]) if context.get("namespace") else None,
    )


_UNSUPPORTED = {
    "tls-server-name": "Kopf's watch streams cannot verify the server by another name; use a server address its "
    "certificate names",
    "proxy-url": "the operator connects to the API server directly",
}


def _resolved(base: str, value: Any) -> str:
    """A path a kubeconfig names: relative to that file's directory."""
    path = os.path.expanduser(str(value))
    return path if os.path.isabs(path) else os.path.normpath(os.path.join(os.path.dirname(base), path))


def load_credentials(env: Mapping[str, str] | None = None) -> Credentials:
    """The pod's service account in a pod, else the current context of the kubeconfig files;
    :class:`KubeconfigError` (one line naming the file or variable) when neither is usable."""
    env = os.environ if env is None else env
    found = in_cluster(env)
    if found is not None:
        return found
    paths = kubeconfig_paths(env)
    documents = read_kubeconfigs(paths)
    where = f"kubeconfig {':'.join(paths)}"
    if not documents:
        raise KubeconfigError(f"no cluster to run against: not in a pod, and no {where} (set KUBECONFIG)")
    return from_kubeconfig(documents, where)
