"""What the local control plane is made of: work-dir layout, PKI, kubeconfigs, flags, fake Nodes.

Why a module of its own: this is the cluster's static configuration, with no
process handling, so ``cluster.py`` reads as the start/stop sequence only.
Command-line flags follow envtest and kwokctl. The PKI mirrors what kubeadm
(and so a kind node) sets up, minus the kubelet parts:

    ca                    signs serving and client certificates
    apiserver             serving cert, SANs 127.0.0.1/localhost/kubernetes.default...
    serving               serving cert of the controller-manager and scheduler endpoints
    admin                 client, O=system:masters (the kubeconfig people and tests use)
    kube-controller-manager, kube-scheduler   clients with their bootstrap RBAC identities
    kwok                  client, O=system:masters (kwok patches any Node and Pod)
    kubelet               client, CN=system:node:real-node, O=system:nodes (the real node)
    kube-proxy            client, CN=system:kube-proxy (bound to system:node-proxier)
    apiserver-kubelet-client  client, O=system:masters (logs/exec on the real node)
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
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
# Pod and Service addresses come from 198.18.0.0/15, the range reserved for network tests
# (RFC 2544): nothing in it can be mistaken for, or routed to, an address off this machine.
SERVICE_CIDR = "198.19.0.0/16"
KUBERNETES_SERVICE_IP = "198.19.0.1"  # first address of the service CIDR
POD_CIDR = "198.18.0.0/16"
# kwok hands out fake Pod IPs from the low half; the real node's bridge owns a /24 of the high
# half, and the API server listens on the bridge's own address when the real node runs.
KWOK_POD_CIDR = "198.18.0.0/17"
NODE_POD_CIDR = "198.18.200.0/24"
KWOK_NODE_ADDRESS_PREFIX = "198.18.254."  # the fake nodes' InternalIPs: .1, .2, ...
NODE_BRIDGE_ADDRESS = "198.18.200.1"
REAL_NODE_NAME = "real-node"
# On kwok nodes when the real node runs, so only Pods that request nvidia.com/gpu (and get the
# toleration from the ExtendedResourceToleration admission plugin) land there.
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
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
IP:127.0.0.1, IP:{KUBERNETES_SERVICE_IP}, IP:{NODE_BRIDGE_ADDRESS}
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
    "kubelet": (f"/O=system:nodes/CN=system:node:{REAL_NODE_NAME}", "client", "ca"),
    "kube-proxy": ("/CN=system:kube-proxy", "client", "ca"),
    "apiserver-kubelet-client": ("/O=system:masters/CN=kube-apiserver-kubelet-client", "client", "ca"),
    "front-proxy-client": ("/CN=front-proxy-client", "client", "front-proxy-ca"),
}

# Every mutating request once (at ResponseComplete), with user, verb and
# objectRef: enough to count writes per object. Reads are logged only for the ServiceAccounts
# of the e2e suite's operator namespace (io-e2e-system): enough to check that every permission
# the shipped RBAC grants is one the operator uses (tests/e2e/test_rbac_usage.py).
AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
- level: Metadata
  userGroups: ["system:serviceaccounts:io-e2e-system"]
- level: None
"""


@dataclass(frozen=True)
class Workdir:
    """Where each file of one control plane lives; everything is under `root`."""

    root: Path

    @property
    def pki(self) -> Path:
        return self.root / "pki"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def kubeconfig(self) -> Path:
        """The admin kubeconfig."""
        return self.root / "kubeconfig"

    @property
    def audit_log(self) -> Path:
        return self.root / "audit.log"

    @property
    def state(self) -> Path:
        return self.root / "state.json"

    def kubeconfig_of(self, component: str) -> Path:
        return self.root / f"{component}.kubeconfig"

    def generated(self) -> list[Path]:
        """Everything start() writes here, so a restart can remove it without touching anything else."""
        names = ["pki", "logs", "etcd", "kwok-home", "flexvolume", "kubeconfig", "audit.log", "audit-policy.yaml"]
        names += ["kwok.yaml", "state.json", *(f"{c}.kubeconfig" for c in COMPONENTS)]
        names += ["node", "kubelet.kubeconfig", "kube-proxy.kubeconfig"]  # the real node (cluster_node.py)
        return [self.root / name for name in names]


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


def fake_node(name: str, *, index: int, gpus: int, gpu_taint: bool = False) -> dict[str, Any]:
    """A Node that kwok manages. No taints, so ordinary (GPU) Pods schedule on it - unless the
    real node runs (`gpu_taint`): then only Pods that request GPUs tolerate it.

    kwok's node-initialize stage keeps the capacity and addresses given here
    and fills in conditions and nodeInfo.
    """
    resources = {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "spec": {"taints": [GPU_TAINT]} if gpu_taint else {},
        "metadata": {
            "name": name,
            "annotations": {KWOK_NODE_ANNOTATION[0]: KWOK_NODE_ANNOTATION[1], "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                KWOK_NODE_LABEL[0]: KWOK_NODE_LABEL[1],
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node-role.kubernetes.io/agent": "",
                # What NVIDIA's GPU feature discovery puts on GPU nodes; samples select on it.
                "nvidia.com/gpu.present": "true",
            },
        },
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "addresses": [
                # In the blackholed range (see cluster_node.py): a dial to a fake node goes nowhere.
                {"type": "InternalIP", "address": f"{KWOK_NODE_ADDRESS_PREFIX}{index + 1}"},
                {"type": "Hostname", "address": name},
            ],
        },
    }


def component_flags(
    name: str, *, workdir: Workdir, ports: Mapping[str, int], verbosity: int, real_node: bool = False
) -> list[str]:
    """The command line of one component, without the binary (see `<binary> --help`).

    With `real_node` the API server listens on the node bridge's address instead of 127.0.0.1
    (Pods reach it there through the `kubernetes` Service), publishes that address as the
    Service's endpoint, can reach the kubelet (logs, exec), and taints GPU nodes for GPU Pods only.
    """
    w, pki, v = workdir.root, workdir.pki, f"--v={verbosity}"
    etcd_url = f"http://127.0.0.1:{ports['etcd-client']}"
    peer_url = f"http://127.0.0.1:{ports['etcd-peer']}"

    def client_flags(component: str) -> list[str]:
        kubeconfig = workdir.kubeconfig_of(component)
        return [
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1",
            f"--secure-port={ports[component]}",
            f"--tls-cert-file={pki / 'serving.crt'}",
            f"--tls-private-key-file={pki / 'serving.key'}",
            "--leader-elect=false",
        ]

    if name == "etcd":
        return [
            "--name=default",
            f"--data-dir={w / 'etcd'}",
            f"--listen-client-urls={etcd_url}",
            f"--advertise-client-urls={etcd_url}",
            f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=default={peer_url}",
            "--unsafe-no-fsync=true",  # throw-away data: trade durability for speed
            "--log-level=warn",
        ]
    if name == "kube-apiserver":
        if real_node:
            address = [f"--bind-address={NODE_BRIDGE_ADDRESS}", f"--advertise-address={NODE_BRIDGE_ADDRESS}"]
            address += ["--endpoint-reconciler-type=lease", "--enable-admission-plugins=ExtendedResourceToleration"]
            # Dial kubelets (logs, exec, port-forward) by address: a Node's Hostname would be looked up in DNS.
            address += ["--kubelet-preferred-address-types=InternalIP"]
            address += [f"--kubelet-client-certificate={pki / 'apiserver-kubelet-client.crt'}"]
            address += [f"--kubelet-client-key={pki / 'apiserver-kubelet-client.key'}"]
        else:
            # Endpoints may not hold loopback addresses, so the `kubernetes` Service gets none
            # (nothing runs in-cluster here) instead of an error every 10 seconds.
            address = ["--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none"]
        return [
            f"--etcd-servers={etcd_url}",
            *address,
            f"--secure-port={ports['kube-apiserver']}",
            f"--tls-cert-file={pki / 'apiserver.crt'}",
            f"--tls-private-key-file={pki / 'apiserver.key'}",
            f"--client-ca-file={pki / 'ca.crt'}",
            "--authorization-mode=Node,RBAC",
            f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
            f"--service-account-key-file={pki / 'sa.pub'}",
            f"--service-account-signing-key-file={pki / 'sa.key'}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--allow-privileged=true",
            f"--requestheader-client-ca-file={pki / 'front-proxy-ca.crt'}",
            "--requestheader-allowed-names=front-proxy-client",
            "--requestheader-username-headers=X-Remote-User",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            f"--proxy-client-cert-file={pki / 'front-proxy-client.crt'}",
            f"--proxy-client-key-file={pki / 'front-proxy-client.key'}",
            f"--audit-policy-file={w / 'audit-policy.yaml'}",
            f"--audit-log-path={workdir.audit_log}",
            "--audit-log-mode=blocking",  # an entry is on disk before its request returns
            "--audit-log-maxsize=0",  # never rotate
            v,
        ]
    if name == "kube-controller-manager":
        return [
            *client_flags(name),
            "--controllers=*",  # garbagecollector, deployment, replicaset, serviceaccount(-token), ...
            "--use-service-account-credentials=true",
            f"--service-account-private-key-file={pki / 'sa.key'}",
            f"--root-ca-file={pki / 'ca.crt'}",
            f"--cluster-signing-cert-file={pki / 'ca.crt'}",
            f"--cluster-signing-key-file={pki / 'ca.key'}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            f"--flex-volume-plugin-dir={w / 'flexvolume'}",  # the default is under /usr/libexec
            "--kube-api-qps=1000",
            "--kube-api-burst=1000",
            v,
        ]
    if name == "kube-scheduler":
        return [*client_flags(name), v]
    if name == "kwok":
        return [
            f"--kubeconfig={workdir.kubeconfig_of('kwok')}",
            f"--config={w / 'kwok.yaml'}",  # the Stages: kwok >= 0.8 has no built-in ones
            "--manage-all-nodes=false",
            "--manage-nodes-with-annotation-selector=" + "=".join(KWOK_NODE_ANNOTATION),
            "--node-lease-duration-seconds=40",  # heartbeats via Leases, as kubelets do
            f"--cidr={KWOK_POD_CIDR}",
            f"--v={'DEBUG' if verbosity > 0 else 'INFO'}",
        ]
    raise ValueError(f"unknown component {name!r}; expected one of {COMPONENTS}")


def write_configs(workdir: Workdir, *, server: str, kwok_stages: Path) -> None:
    """PKI, kubeconfigs (admin and one per component), audit policy and kwok Stages."""
    write_pki(workdir.pki)
    write_kubeconfig(workdir.kubeconfig, server=server, pki=workdir.pki, user="admin")
    for user in ("kube-controller-manager", "kube-scheduler", "kwok", "kubelet", "kube-proxy"):
        write_kubeconfig(workdir.kubeconfig_of(user), server=server, pki=workdir.pki, user=user)
    (workdir.root / "audit-policy.yaml").write_text(AUDIT_POLICY)
    shutil.copyfile(kwok_stages, workdir.root / "kwok.yaml")
    (workdir.root / "kwok-home").mkdir(exist_ok=True)  # kwok's HOME: see cluster.py
