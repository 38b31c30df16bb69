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
:class:`KubeconfigError` naming the file and the field. What is sent, and when it is fetched
again, is ``credentials.py``'s.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping
from typing import Any

import yaml

from inference_operator.core.boundedyaml import YamlLimitError, load_documents
from inference_operator.kube.credentials import (
    MAX_SECRET_BYTES,
    Credentials,
    ExecPlugin,
    KubeconfigError,
    read_secret,
)

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
DEFAULT_KUBECONFIG = os.path.join("~", ".kube", "config")
SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


def kubeconfig_paths(env: Mapping[str, str] | None = None) -> list[str]:
    """The files the client reads: ``KUBECONFIG``'s list, else ``~/.kube/config``."""
    env = os.environ if env is None else env
    listed = env.get("KUBECONFIG")
    if listed:
        return [p for p in listed.split(os.pathsep) if p]
    return [os.path.expanduser(DEFAULT_KUBECONFIG)]


def read_kubeconfigs(paths: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """Each existing kubeconfig, read as bounded input, with its path; :class:`KubeconfigError`
    naming the file when one is no regular file, too big, not YAML or not a map."""
    found = []
    for path in paths:
        if not os.path.lexists(path):
            continue
        text = read_secret(path, limit=MAX_KUBECONFIG_BYTES, what="kubeconfig")
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
    namespace_file = os.path.join(account, "namespace")
    namespace = read_secret(namespace_file, limit=4096, what="namespace file") if os.path.exists(namespace_file) else ""
    return Credentials(
        server=server,
        source="the pod's service account",
        ca_data=read_secret(ca, limit=MAX_SECRET_BYTES, what="service account CA") if os.path.exists(ca) else None,
        token_file=token,
        namespace=namespace.strip() or None,
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
    return read_secret(_resolved(base, value), limit=MAX_SECRET_BYTES, what=what)


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
