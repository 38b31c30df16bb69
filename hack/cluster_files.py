"""Files and manifests the local control plane needs: PKI, kubeconfigs, audit policy, fake Nodes.

Why a module of its own: these are pure writers with no process handling, so
``cluster.py`` reads as the start/stop sequence only. The PKI mirrors what
kubeadm (and so a kind node) sets up, minus the kubelet parts:

    ca                    signs serving and client certificates
    apiserver             serving cert, SANs 127.0.0.1/localhost/kubernetes.default...
    serving               serving cert of the controller-manager and scheduler endpoints
    admin                 client, O=system:masters (the kubeconfig people and tests use)
    kube-controller-manager, kube-scheduler   clients with their bootstrap RBAC identities
    kwok                  client, O=system:masters (kwok patches any Node and Pod)
    front-proxy-ca, front-proxy-client        request-header auth for aggregated APIs
    sa.key / sa.pub       service-account token signing

Separate identities make the audit log say who wrote what. Keys are EC P-256:
fast to generate, so a fresh PKI costs tens of milliseconds. Uses the
``openssl`` CLI so the harness stays standard-library only.
"""

from __future__ import annotations

import secrets
import shutil
import subprocess
from base64 import b64encode
from pathlib import Path
from typing import Any

KUBERNETES_SERVICE_IP = "10.96.0.1"  # first address of the service CIDR
CONTEXT_NAME = "inference-operator-local"
KWOK_NODE_ANNOTATION = ("kwok.x-k8s.io/node", "fake")  # what kwok is told to manage
KWOK_NODE_LABEL = ("type", "kwok")

_OPENSSL_CONFIG = f"""\
[req]
distinguished_name = dn
prompt = no
[dn]
[ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign, digitalSignature
subjectKeyIdentifier = hash
[server]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost, DNS:kubernetes, DNS:kubernetes.default, \
DNS:kubernetes.default.svc, DNS:kubernetes.default.svc.cluster.local, \
IP:127.0.0.1, IP:{KUBERNETES_SERVICE_IP}
[client]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = clientAuth
"""

_CERTIFICATE_AUTHORITIES = {
    "ca": "/CN=inference-operator-local-ca",
    "front-proxy-ca": "/CN=inference-operator-local-front-proxy-ca",
}

# name -> (subject, openssl extension section, signing CA)
_CERTIFICATES = {
    "apiserver": ("/CN=kube-apiserver", "server", "ca"),
    "serving": ("/CN=localhost", "server", "ca"),
    "admin": ("/O=system:masters/CN=kubernetes-admin", "client", "ca"),
    "kube-controller-manager": ("/CN=system:kube-controller-manager", "client", "ca"),
    "kube-scheduler": ("/CN=system:kube-scheduler", "client", "ca"),
    "kwok": ("/O=system:masters/CN=kwok-controller", "client", "ca"),
    "front-proxy-client": ("/CN=front-proxy-client", "client", "front-proxy-ca"),
}

# Every mutating request once (at ResponseComplete), with user, verb and
# objectRef: enough to count writes per object. Reads are not logged.
AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
- level: None
"""


class PkiError(RuntimeError):
    """openssl is missing or refused to create a key or certificate."""


def _openssl(*args: str) -> None:
    result = subprocess.run(["openssl", *args], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise PkiError(f"openssl {' '.join(args)} failed:\n{result.stderr.strip()}")


def write_pki(pki: Path) -> None:
    """Create every key and certificate listed in the module docstring under `pki`."""
    if shutil.which("openssl") is None:
        raise PkiError("the openssl CLI is needed to create the cluster PKI; install openssl")
    pki.mkdir(parents=True, exist_ok=True)
    config = str(pki / "openssl.cnf")
    Path(config).write_text(_OPENSSL_CONFIG)
    for name in ("sa", *_CERTIFICATE_AUTHORITIES, *_CERTIFICATES):
        _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", f"{pki}/{name}.key")
    _openssl("pkey", "-in", f"{pki}/sa.key", "-pubout", "-out", f"{pki}/sa.pub")
    for name, subject in _CERTIFICATE_AUTHORITIES.items():
        _openssl(
            "req", "-config", config, "-x509", "-new", "-key", f"{pki}/{name}.key", "-subj", subject,
            "-days", "3650", "-extensions", "ca", "-out", f"{pki}/{name}.crt",
        )  # fmt: skip
    for name, (subject, extensions, ca) in _CERTIFICATES.items():
        csr = f"{pki}/{name}.csr"
        _openssl("req", "-config", config, "-new", "-key", f"{pki}/{name}.key", "-subj", subject, "-out", csr)
        _openssl(
            "x509", "-req", "-in", csr, "-CA", f"{pki}/{ca}.crt", "-CAkey", f"{pki}/{ca}.key",
            "-set_serial", str(secrets.randbits(63)), "-days", "365",
            "-extfile", config, "-extensions", extensions, "-out", f"{pki}/{name}.crt",
        )  # fmt: skip
        Path(csr).unlink()


def write_kubeconfig(path: Path, *, server: str, pki: Path, user: str) -> None:
    """A kubeconfig for `user` with the CA and client cert embedded (portable, copyable)."""

    def data(name: str) -> str:
        return b64encode((pki / name).read_bytes()).decode()

    path.write_text(f"""\
apiVersion: v1
kind: Config
clusters:
- name: {CONTEXT_NAME}
  cluster:
    server: {server}
    certificate-authority-data: {data("ca.crt")}
users:
- name: {user}
  user:
    client-certificate-data: {data(f"{user}.crt")}
    client-key-data: {data(f"{user}.key")}
contexts:
- name: {CONTEXT_NAME}
  context:
    cluster: {CONTEXT_NAME}
    user: {user}
current-context: {CONTEXT_NAME}
""")
    path.chmod(0o600)


def fake_node(name: str, *, index: int, gpus: int) -> dict[str, Any]:
    """A Node that kwok manages. No taints, so ordinary (GPU) Pods schedule on it.

    kwok's node-initialize stage keeps the capacity and addresses given here
    and fills in conditions and nodeInfo.
    """
    resources = {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {KWOK_NODE_ANNOTATION[0]: KWOK_NODE_ANNOTATION[1], "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                KWOK_NODE_LABEL[0]: KWOK_NODE_LABEL[1],
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node-role.kubernetes.io/agent": "",
            },
        },
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "addresses": [
                {"type": "InternalIP", "address": f"10.200.0.{index + 1}"},
                {"type": "Hostname", "address": name},
            ],
        },
    }
