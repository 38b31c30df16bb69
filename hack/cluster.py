"""A real Kubernetes control plane as local processes, for the e2e suite.

Why this exists: the machines this project is built on have no Docker, so kind
cannot create clusters. The e2e suite still wants the real thing - the same
kube-apiserver, kube-controller-manager and kube-scheduler a kind node runs,
on a real etcd - because wherever our in-process fake and a real API server
disagree, the real one is right. kwok stands in for kubelets: it marks fake
Nodes (with ``nvidia.com/gpu`` capacity) and the Pods bound to them Ready.

Binaries come from ``hack/build-controlplane.sh`` (built once from pinned Go
modules, cached outside the repo). Everything else - PKI, kubeconfigs, the
audit policy, etcd data, logs - lives in a throw-away work directory:

    workdir/kubeconfig     admin (system:masters) kubeconfig
    workdir/audit.log      every mutating request, Metadata level (JSON lines)
    workdir/logs/*.log     one log per component: read these first when paged
    workdir/state.json     pids and ports, for ``down`` and ``status``

Use it from pytest (``start_control_plane(workdir)`` or ``with
LocalControlPlane(...)``) or from a shell::

    eval "$(python hack/cluster.py up)"   # prints: export KUBECONFIG=...
    python hack/cluster.py status
    python hack/cluster.py down

Standard library only (plus the ``openssl`` CLI for the PKI). All network
traffic stays on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import logging
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from base64 import b64encode
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

HACK_DIR = Path(__file__).resolve().parent
DEFAULT_WORKDIR = HACK_DIR.parent / ".cluster"
BUILD_SCRIPT = HACK_DIR / "build-controlplane.sh"
KWOK_STAGES = HACK_DIR / "controlplane" / "kwok-stages.yaml"
BIN_DIR_ENV = "INFERENCE_OPERATOR_BIN_DIR"

SERVICE_CIDR = "10.96.0.0/12"
KUBERNETES_SERVICE_IP = "10.96.0.1"
POD_CIDR = "10.244.0.0/16"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
KWOK_NODE_ANNOTATION = ("kwok.x-k8s.io/node", "fake")
KWOK_NODE_LABEL = ("type", "kwok")
CONTEXT_NAME = "inference-operator-local"

COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")
POLL_INTERVAL_SECONDS = 0.25
STOP_GRACE_SECONDS = 15.0
LOG_TAIL_LINES = 30

logger = logging.getLogger("cluster")


class ControlPlaneError(RuntimeError):
    """The local control plane could not be built, started, or stopped."""


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """Return the last lines of a log file, or a note that it is missing."""
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 64 * 1024))
            text = f.read().decode("utf-8", errors="replace")
    except OSError:
        return f"(no log at {path})"
    return "\n".join(text.splitlines()[-lines:])


# --- binaries ---------------------------------------------------------------


def ensure_binaries() -> Path:
    """Return the bin dir with all control-plane binaries, building them if needed.

    ``$INFERENCE_OPERATOR_BIN_DIR`` skips the build script (for CI images that
    ship the binaries). A cold build takes 10-25 minutes; cached, under a second.
    """
    if override := os.environ.get(BIN_DIR_ENV):
        return Path(override)
    logger.info("Ensuring control-plane binaries, script=%s", BUILD_SCRIPT)
    result = subprocess.run(
        ["bash", str(BUILD_SCRIPT)], stdout=subprocess.PIPE, text=True, check=False
    )
    if result.returncode != 0:
        raise ControlPlaneError(
            f"{BUILD_SCRIPT} failed with exit code {result.returncode}; its output above says why "
            "(build logs: ~/.cache/inference-operator/logs/)."
        )
    return Path(result.stdout.strip().splitlines()[-1])


# --- PKI and configuration files --------------------------------------------

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

# name -> (subject, openssl extension section)
_CERTIFICATES = {
    "apiserver": ("/CN=kube-apiserver", "server"),
    "serving": ("/CN=localhost", "server"),  # controller-manager and scheduler endpoints
    "admin": ("/O=system:masters/CN=kubernetes-admin", "client"),
    "kube-controller-manager": ("/CN=system:kube-controller-manager", "client"),
    "kube-scheduler": ("/CN=system:kube-scheduler", "client"),
    "kwok": ("/O=system:masters/CN=kwok-controller", "client"),
}


def _openssl(*args: str) -> None:
    result = subprocess.run(["openssl", *args], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise ControlPlaneError(f"openssl {' '.join(args)} failed:\n{result.stderr.strip()}")


def write_pki(pki: Path) -> None:
    """One CA, serving certs for 127.0.0.1/localhost, client certs, an SA key pair (EC P-256)."""
    if shutil.which("openssl") is None:
        raise ControlPlaneError("the openssl CLI is needed to create the cluster PKI; install openssl")
    pki.mkdir(parents=True, exist_ok=True)
    config = pki / "openssl.cnf"
    config.write_text(_OPENSSL_CONFIG)
    for name in ("ca", "sa", *_CERTIFICATES):
        _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                 "-out", str(pki / f"{name}.key"))
    _openssl("pkey", "-in", str(pki / "sa.key"), "-pubout", "-out", str(pki / "sa.pub"))
    _openssl("req", "-config", str(config), "-x509", "-new", "-key", str(pki / "ca.key"),
             "-subj", "/CN=inference-operator-local-ca", "-days", "3650", "-extensions", "ca",
             "-out", str(pki / "ca.crt"))
    for name, (subject, extensions) in _CERTIFICATES.items():
        csr = pki / f"{name}.csr"
        _openssl("req", "-config", str(config), "-new", "-key", str(pki / f"{name}.key"),
                 "-subj", subject, "-out", str(csr))
        _openssl("x509", "-req", "-in", str(csr), "-CA", str(pki / "ca.crt"),
                 "-CAkey", str(pki / "ca.key"), "-set_serial", str(secrets.randbits(63)),
                 "-days", "365", "-extfile", str(config), "-extensions", extensions,
                 "-out", str(pki / f"{name}.crt"))
        csr.unlink()


def write_kubeconfig(path: Path, *, server: str, pki: Path, user: str) -> None:
    """A kubeconfig with the CA and the client cert embedded (portable, copyable)."""

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


def fake_node(name: str, *, gpus: int) -> dict[str, object]:
    """A Node that kwok manages; no taints, so ordinary (GPU) pods schedule on it."""
    resources = {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {KWOK_NODE_ANNOTATION[0]: KWOK_NODE_ANNOTATION[1],
                            "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                KWOK_NODE_LABEL[0]: KWOK_NODE_LABEL[1],
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node-role.kubernetes.io/agent": "",
            },
        },
        "status": {"capacity": resources, "allocatable": resources},
    }


# --- talking to the components ----------------------------------------------


class ApiClient:
    """Just enough HTTPS for health checks and bootstrap objects; never proxied."""

    def __init__(self, server: str, pki: Path, user: str = "admin") -> None:
        self.server = server
        context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        context.load_cert_chain(str(pki / f"{user}.crt"), str(pki / f"{user}.key"))
        self._opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=context)
        )

    def request(self, method: str, url: str, body: object = None) -> tuple[int, bytes]:
        """Return (status, body); raises OSError when nothing answers."""
        data = None if body is None else json.dumps(body).encode()
        full = url if url.startswith("https://") else self.server + url
        req = urllib.request.Request(full, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with self._opener.open(req, timeout=5) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    def get_json(self, url: str) -> dict[str, object] | None:
        status, body = self.request("GET", url)
        return json.loads(body) if status == 200 else None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:
    """preexec_fn: SIGTERM the child if the test process dies (Linux only)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


# --- process bookkeeping ----------------------------------------------------


def pid_alive(pid: int) -> bool:
    """True if pid runs and is not a zombie (our orphans may be reaped late)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def pid_runs(pid: int, executable: str) -> bool:
    """True if pid is alive and still runs `executable` (guards against pid reuse)."""
    try:
        argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0", 1)[0].decode()
    except OSError:
        return False
    return argv0 == executable and pid_alive(pid)


def terminate(pids: dict[str, int], *, grace: float = STOP_GRACE_SECONDS,
              reap: Callable[[], None] = lambda: None) -> list[str]:
    """SIGTERM, wait up to `grace`, then SIGKILL. Returns the names that needed SIGKILL."""
    for pid in pids.values():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        reap()
        if not any(pid_alive(pid) for pid in pids.values()):
            return []
        time.sleep(0.1)
    killed = [name for name, pid in pids.items() if pid_alive(pid)]
    for name in killed:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pids[name], signal.SIGKILL)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(pid_alive(pids[n]) for n in killed):
        reap()
        time.sleep(0.05)
    return killed


@dataclass
class _Component:
    name: str
    argv: list[str]
    log: Path
    env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None


# --- the control plane ------------------------------------------------------


class LocalControlPlane:
    """etcd + kube-apiserver + kube-controller-manager + kube-scheduler + kwok, on 127.0.0.1.

    ``start()`` returns once the API is ready, the fake Nodes are Ready and
    schedulable, and the default ServiceAccount exists. ``stop()`` leaves no
    process behind. ``detach=True`` lets the processes outlive this Python
    process (the ``up`` command); otherwise they die with it.
    """

    def __init__(self, workdir: Path, bin_dir: Path, *, nodes: int = 2, gpus_per_node: int = 8,
                 ready_timeout: float = 90.0, verbosity: int = 0, detach: bool = False) -> None:
        self.workdir = workdir.resolve()
        self.bin_dir = bin_dir
        self.nodes = nodes
        self.gpus_per_node = gpus_per_node
        self.ready_timeout = ready_timeout
        self.verbosity = verbosity
        self.detach = detach
        self.pki = self.workdir / "pki"
        self.logs = self.workdir / "logs"
        self.kubeconfig = self.workdir / "kubeconfig"
        self.audit_log = self.workdir / "audit.log"
        self.state_file = self.workdir / "state.json"
        self.ports: dict[str, int] = {}
        self._components: dict[str, _Component] = {}
        self.startup_seconds: float | None = None
        self._deadline = 0.0

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports['kube-apiserver']}"

    def node_names(self) -> list[str]:
        return [f"kwok-node-{i}" for i in range(self.nodes)]

    def __enter__(self) -> LocalControlPlane:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # start ------------------------------------------------------------------

    def start(self) -> None:
        started = time.monotonic()
        self._deadline = started + self.ready_timeout
        self._check_binaries()
        self._refuse_if_running()
        self._prepare_workdir()
        try:
            self._launch("etcd")
            self._wait("etcd", self._etcd_healthy)
            self._launch("kube-apiserver")
            self._wait("kube-apiserver", self._apiserver_ready)
            for name in ("kube-controller-manager", "kube-scheduler", "kwok"):
                self._launch(name)
            self._create_nodes()
            self._wait("kwok", self._nodes_ready)
            self._wait("kube-controller-manager", self._controller_manager_ready)
            self._wait("kube-scheduler", self._scheduler_healthy)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - started
        logger.info("Started local control plane, seconds=%.1f, kubeconfig=%s",
                    self.startup_seconds, self.kubeconfig)

    def _check_binaries(self) -> None:
        missing = [n for n in COMPONENTS if not os.access(self.bin_dir / n, os.X_OK)]
        if missing:
            raise ControlPlaneError(f"missing binaries in {self.bin_dir}: {', '.join(missing)}; "
                                    f"run {BUILD_SCRIPT}")

    def _refuse_if_running(self) -> None:
        state = read_state(self.workdir)
        if state and any(pid_alive(pid) for pid in state["pids"].values()):
            raise ControlPlaneError(f"a control plane is already running from {self.workdir}; "
                                    f"stop it with: python {Path(__file__)} down --workdir {self.workdir}")

    def _prepare_workdir(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        for stale in ("etcd", "pki", "logs", "kwok-home"):
            shutil.rmtree(self.workdir / stale, ignore_errors=True)
        for stale_file in ("state.json", "audit.log", "kubeconfig", "kwok.yaml",
                           "audit-policy.yaml", *[f"{c}.kubeconfig" for c in COMPONENTS]):
            (self.workdir / stale_file).unlink(missing_ok=True)
        self.logs.mkdir()
        (self.workdir / "kwok-home").mkdir()
        write_pki(self.pki)
        for name in ("etcd-client", "etcd-peer", "kube-apiserver", "kube-controller-manager",
                     "kube-scheduler"):
            self.ports[name] = free_port()
        write_kubeconfig(self.kubeconfig, server=self.server, pki=self.pki, user="admin")
        for user in ("kube-controller-manager", "kube-scheduler", "kwok"):
            write_kubeconfig(self.workdir / f"{user}.kubeconfig", server=self.server,
                             pki=self.pki, user=user)
        (self.workdir / "audit-policy.yaml").write_text(AUDIT_POLICY)
        shutil.copyfile(KWOK_STAGES, self.workdir / "kwok.yaml")
        self._components = {name: self._component(name) for name in COMPONENTS}

    def _component(self, name: str) -> _Component:
        w, pki, ports, v = self.workdir, self.pki, self.ports, f"--v={self.verbosity}"
        etcd_url = f"http://127.0.0.1:{ports['etcd-client']}"
        peer_url = f"http://127.0.0.1:{ports['etcd-peer']}"
        # Flags follow envtest and kwokctl; see `<binary> --help` for each.
        argv: dict[str, list[str]] = {
            "etcd": [
                "--name=default", f"--data-dir={w / 'etcd'}",
                f"--listen-client-urls={etcd_url}", f"--advertise-client-urls={etcd_url}",
                f"--listen-peer-urls={peer_url}", f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=default={peer_url}",
                "--unsafe-no-fsync=true",  # disposable test data: trade durability for speed
                "--log-level=warn",
            ],
            "kube-apiserver": [
                f"--etcd-servers={etcd_url}",
                "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
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
                f"--audit-policy-file={w / 'audit-policy.yaml'}",
                f"--audit-log-path={self.audit_log}",
                "--audit-log-mode=blocking",  # a request's entry is on disk when it returns
                "--audit-log-maxsize=0",
                v,
            ],
            "kube-controller-manager": [
                *self._client_flags("kube-controller-manager"),
                "--controllers=*",  # incl. garbagecollector, deployment, replicaset, serviceaccount(-token)
                "--use-service-account-credentials=true",
                f"--service-account-private-key-file={pki / 'sa.key'}",
                f"--root-ca-file={pki / 'ca.crt'}",
                f"--cluster-signing-cert-file={pki / 'ca.crt'}",
                f"--cluster-signing-key-file={pki / 'ca.key'}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--kube-api-qps=1000", "--kube-api-burst=1000",
                v,
            ],
            "kube-scheduler": [*self._client_flags("kube-scheduler"), v],
            "kwok": [
                f"--kubeconfig={w / 'kwok.kubeconfig'}",
                f"--config={w / 'kwok.yaml'}",
                "--manage-all-nodes=false",
                "--manage-nodes-with-annotation-selector=" + "=".join(KWOK_NODE_ANNOTATION),
                "--node-lease-duration-seconds=40",
                f"--cidr={POD_CIDR}",
                f"--v={['INFO', 'DEBUG'][min(self.verbosity, 1)]}",
            ],
        }[name]
        # kwok also reads ~/.kwok/kwok.yaml if it exists: keep it hermetic.
        env = {"HOME": str(w / "kwok-home")} if name == "kwok" else {}
        return _Component(name, [str(self.bin_dir / name), *argv], self.logs / f"{name}.log", env)

    def _client_flags(self, name: str) -> list[str]:
        kubeconfig = self.workdir / f"{name}.kubeconfig"
        return [
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1", f"--secure-port={self.ports[name]}",
            f"--tls-cert-file={self.pki / 'serving.crt'}",
            f"--tls-private-key-file={self.pki / 'serving.key'}",
            "--leader-elect=false",
        ]

    def _launch(self, name: str) -> None:
        component = self._components[name]
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"} | component.env
        with component.log.open("ab") as log:
            log.write(f"# {' '.join(component.argv)}\n".encode())
            log.flush()
            component.process = subprocess.Popen(
                component.argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env=env, cwd=self.workdir, start_new_session=True,
                preexec_fn=None if self.detach else _die_with_parent,
            )
        logger.info("Started %s, pid=%d, log=%s", name, component.process.pid, component.log)
        self._write_state()

    # readiness --------------------------------------------------------------

    def _wait(self, name: str, check: Callable[[], str | None]) -> None:
        """Poll `check` (None = ready, else what is missing) until the start deadline."""
        missing: str | None = "not checked yet"
        while time.monotonic() < self._deadline:
            self._check_alive()
            try:
                missing = check()
            except OSError as error:  # connection refused while starting
                missing = f"not answering yet ({error})"
            if missing is None:
                logger.info("Checked %s is ready", name)
                return
            time.sleep(POLL_INTERVAL_SECONDS)
        raise ControlPlaneError(
            f"{name} was not ready after {self.ready_timeout:.0f}s: {missing}.\n"
            f"Last lines of {self._components[name].log}:\n{log_tail(self._components[name].log)}"
        )

    def _check_alive(self) -> None:
        for component in self._components.values():
            if component.process is not None and component.process.poll() is not None:
                raise ControlPlaneError(
                    f"{component.name} exited with code {component.process.returncode} while the "
                    f"control plane was starting.\nLast lines of {component.log}:\n"
                    f"{log_tail(component.log)}"
                )

    def _client(self) -> ApiClient:
        return ApiClient(self.server, self.pki)

    def _etcd_healthy(self) -> str | None:
        url = f"http://127.0.0.1:{self.ports['etcd-client']}/health"
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(url, timeout=5) as response:
            health = json.loads(response.read())
        return None if health.get("health") == "true" else f"/health says {health}"

    def _apiserver_ready(self) -> str | None:
        status, body = self._client().request("GET", "/readyz")
        return None if status == 200 else f"/readyz answered {status}: {body[-300:]!r}"

    def _health(self, name: str) -> str | None:
        url = f"https://127.0.0.1:{self.ports[name]}/healthz"
        status, body = self._client().request("GET", url)
        return None if status == 200 else f"/healthz answered {status}: {body[-300:]!r}"

    def _controller_manager_ready(self) -> str | None:
        if missing := self._health("kube-controller-manager"):
            return missing
        status, _ = self._client().request("GET", "/api/v1/namespaces/default/serviceaccounts/default")
        return None if status == 200 else "the default ServiceAccount does not exist yet"

    def _scheduler_healthy(self) -> str | None:
        return self._health("kube-scheduler")

    def _create_nodes(self) -> None:
        client = self._client()
        for name in self.node_names():
            status, body = client.request("POST", "/api/v1/nodes", fake_node(name, gpus=self.gpus_per_node))
            if status not in (201, 409):
                raise ControlPlaneError(f"creating Node {name} failed with {status}: {body[-500:]!r}")
        logger.info("Created fake nodes, names=%s, gpus=%d", self.node_names(), self.gpus_per_node)

    def _nodes_ready(self) -> str | None:
        nodes = self._client().get_json("/api/v1/nodes?labelSelector=" + "%3D".join(KWOK_NODE_LABEL))
        if nodes is None:
            return "listing nodes failed"
        waiting = []
        for node in nodes["items"]:  # type: ignore[union-attr]
            conditions = {c["type"]: c["status"] for c in node["status"].get("conditions", [])}
            taints = [t["key"] for t in node["spec"].get("taints", [])]
            if conditions.get("Ready") != "True" or taints:
                waiting.append(f"{node['metadata']['name']} (Ready={conditions.get('Ready')}, "
                               f"taints={taints})")
        count = len(nodes["items"])  # type: ignore[arg-type]
        if count < self.nodes or waiting:
            return f"{count}/{self.nodes} fake nodes exist; not Ready or still tainted: {waiting}"
        return None

    # stop -------------------------------------------------------------------

    def stop(self) -> None:
        """Stop every component (kwok first, etcd last); idempotent."""
        running = {n: c for n, c in self._components.items() if c.process is not None}
        if not running:
            return

        def reap() -> None:
            for component in running.values():
                component.process.poll()  # type: ignore[union-attr]

        pids = {n: c.process.pid for n, c in running.items()}  # type: ignore[union-attr]
        killed = terminate({n: p for n, p in pids.items() if n != "etcd"}, reap=reap)
        if "etcd" in pids:
            killed += terminate({"etcd": pids["etcd"]}, reap=reap)
        for component in running.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                component.process.wait(timeout=5)  # type: ignore[union-attr]
            component.process = None
        if killed:
            logger.warning("Killed components that ignored SIGTERM for %.0fs, names=%s",
                           STOP_GRACE_SECONDS, killed)
        self.state_file.unlink(missing_ok=True)
        logger.info("Stopped local control plane, workdir=%s", self.workdir)

    # state ------------------------------------------------------------------

    def _write_state(self) -> None:
        state = {
            "pids": {n: c.process.pid for n, c in self._components.items() if c.process},
            "executables": {n: c.argv[0] for n, c in self._components.items()},
            "ports": self.ports,
            "server": self.server,
            "kubeconfig": str(self.kubeconfig),
            "audit_log": str(self.audit_log),
            "logs": str(self.logs),
        }
        self.state_file.write_text(json.dumps(state, indent=2) + "\n")


def read_state(workdir: Path) -> dict[str, dict[str, int]] | None:
    try:
        state: dict[str, dict[str, int]] = json.loads((workdir / "state.json").read_text())
    except (OSError, ValueError):
        return None
    return state


def stop_from_state(workdir: Path) -> bool:
    """Stop a control plane started by another process (``up``); False if none ran."""
    state = read_state(workdir)
    if state is None:
        return False
    executables: dict[str, str] = state.get("executables", {})  # type: ignore[assignment]
    pids = {n: p for n, p in state["pids"].items() if pid_runs(p, executables.get(n, ""))}
    killed = terminate({n: p for n, p in pids.items() if n != "etcd"})
    if "etcd" in pids:
        killed += terminate({"etcd": pids["etcd"]})
    if killed:
        logger.warning("Killed components that ignored SIGTERM, names=%s", killed)
    (workdir / "state.json").unlink(missing_ok=True)
    return True


def start_control_plane(workdir: Path, *, bin_dir: Path | None = None,
                        **options: int | float) -> LocalControlPlane:
    """For pytest: build binaries if needed, start, and return a ready control plane.

    The caller owns it: call ``stop()`` (or use it as a context manager).
    """
    plane = LocalControlPlane(workdir, bin_dir or ensure_binaries(), **options)  # type: ignore[arg-type]
    plane.start()
    return plane


# --- CLI --------------------------------------------------------------------


@contextlib.contextmanager
def _errors_to_exit_code() -> Iterator[None]:
    try:
        yield
    except ControlPlaneError as error:
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(1) from None


def _status(workdir: Path) -> int:
    state = read_state(workdir)
    if state is None:
        print(f"not running (no state in {workdir})")
        return 1
    executables: dict[str, str] = state.get("executables", {})  # type: ignore[assignment]
    healthy = True
    for name, pid in state["pids"].items():
        alive = pid_runs(pid, executables.get(name, ""))
        healthy &= alive
        print(f"{name:<24} pid {pid:<8} {'running' if alive else 'NOT RUNNING'}")
    server: str = state["server"]  # type: ignore[assignment]
    try:
        client = ApiClient(server, workdir / "pki")
        readyz, _ = client.request("GET", "/readyz")
        nodes = client.get_json("/api/v1/nodes") or {"items": []}
    except OSError as error:
        print(f"kube-apiserver {server}: not answering ({error})")
        return 1
    ready = [n["metadata"]["name"] for n in nodes["items"]  # type: ignore[union-attr]
             if any(c["type"] == "Ready" and c["status"] == "True"
                    for c in n["status"].get("conditions", []))]
    print(f"kube-apiserver {server}: /readyz {readyz}; Ready nodes: {', '.join(ready) or 'none'}")
    print(f"export KUBECONFIG={state['kubeconfig']}")
    return 0 if healthy and readyz == 200 else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["up", "down", "status"])
    parser.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR,
                        help=f"where PKI, logs, etcd data and kubeconfig live (default {DEFAULT_WORKDIR})")
    parser.add_argument("--bin-dir", type=Path, default=None,
                        help=f"control-plane binaries (default: ${BIN_DIR_ENV} or build them)")
    parser.add_argument("--nodes", type=int, default=2, help="number of fake kwok nodes")
    parser.add_argument("-v", "--verbosity", type=int, default=0, help="component log verbosity")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    workdir: Path = args.workdir.resolve()
    with _errors_to_exit_code():
        if args.command == "up":
            plane = LocalControlPlane(workdir, args.bin_dir or ensure_binaries(), nodes=args.nodes,
                                      verbosity=args.verbosity, detach=True)
            plane.start()
            print(f"export KUBECONFIG={plane.kubeconfig}")
            return 0
        if args.command == "down":
            if not stop_from_state(workdir):
                print(f"nothing to stop (no state in {workdir})", file=sys.stderr)
            return 0
        return _status(workdir)


if __name__ == "__main__":
    sys.exit(main())
