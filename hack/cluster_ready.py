"""What "ready" means for each component of the local cluster.

Why a module of its own: the start sequence in ``cluster.py`` waits for one component after
another and, when one is not ready by the deadline, tells the person on call what exactly is
missing. Each check here returns None when ready, else that sentence; they are shared by
``start()`` and ``restart()``. Standard library only.
"""

from __future__ import annotations

from collections.abc import Callable

from cluster_config import GPU_TAINT, KWOK_NODE_LABEL, REAL_NODE_NAME
from cluster_node import NodeError, get_plain
from cluster_procs import ApiClient, get_plain_json

Check = Callable[[], str | None]


class ReadinessChecks:
    """One check per component name; `ports` is read at check time (filled in by start)."""

    def __init__(
        self,
        *,
        client: Callable[[], ApiClient],
        ports: dict[str, int],
        nodes: int,
        real_node: bool,
        ctr: Callable[[], None],
    ) -> None:
        self._client = client
        self._ports = ports
        self._nodes = nodes
        self._real_node = real_node
        self._ctr = ctr

    def of(self, name: str) -> Check:
        checks: dict[str, Check] = {
            "etcd": self.etcd,
            "kube-apiserver": self.apiserver,
            "kube-controller-manager": self.controller_manager,
            "kube-scheduler": lambda: self.healthz("kube-scheduler"),
            "kwok": self.kwok_nodes,
            "containerd": self.containerd,
            "kubelet": self.real_node,
            "kube-proxy": lambda: healthz_plain(self._ports["kube-proxy-healthz"]),
        }
        return checks[name]

    def etcd(self) -> str | None:
        health = get_plain_json(f"http://127.0.0.1:{self._ports['etcd-client']}/health")
        return None if health.get("health") == "true" else f"/health says {health}"

    def apiserver(self) -> str | None:
        status, body = self._client().request("GET", "/readyz?verbose")
        return None if status == 200 else f"/readyz answered {status}, failing: {failed_checks(body)}"

    def healthz(self, name: str) -> str | None:
        status, body = self._client().request("GET", f"https://127.0.0.1:{self._ports[name]}/healthz?verbose")
        return None if status == 200 else f"/healthz answered {status}, failing: {failed_checks(body)}"

    def controller_manager(self) -> str | None:
        if unhealthy := self.healthz("kube-controller-manager"):
            return unhealthy
        status, _ = self._client().request("GET", "/api/v1/namespaces/default/serviceaccounts/default")
        return None if status == 200 else "the default ServiceAccount does not exist yet"

    def kwok_nodes(self) -> str | None:
        """Every fake Node Ready and untainted (but for the GPU taint, when the real node runs)."""
        nodes = self._client().get_json("/api/v1/nodes?labelSelector=" + "%3D".join(KWOK_NODE_LABEL))
        if nodes is None:
            return "listing Nodes failed"
        waiting = []
        for node in nodes["items"]:
            conditions = {c["type"]: c["status"] for c in node["status"].get("conditions", [])}
            taints = [t["key"] for t in node["spec"].get("taints", []) if not self._real_node or t != GPU_TAINT]
            if conditions.get("Ready") != "True" or taints:
                waiting.append(f"{node['metadata']['name']} (Ready={conditions.get('Ready')}, taints={taints})")
        if len(nodes["items"]) < self._nodes or waiting:
            return f"{len(nodes['items'])}/{self._nodes} fake Nodes exist; not Ready or still tainted: {waiting}"
        return None

    def containerd(self) -> str | None:
        try:
            self._ctr()
        except NodeError as error:
            return f"not answering yet ({error})"
        return None

    def real_node(self) -> str | None:
        """The kubelet healthy and its Node Ready (runtime and CNI ready, registered, heartbeating)."""
        if unhealthy := healthz_plain(self._ports["kubelet-healthz"]):
            return f"kubelet {unhealthy}"
        node = self._client().get_json(f"/api/v1/nodes/{REAL_NODE_NAME}")
        if node is None:
            return f"Node {REAL_NODE_NAME} is not registered yet"
        conditions = {c["type"]: c for c in node["status"].get("conditions", [])}
        ready = conditions.get("Ready", {})
        if ready.get("status") != "True":
            return f"Node {REAL_NODE_NAME} is not Ready: {ready.get('reason')}: {ready.get('message')}"
        return None


def healthz_plain(port: int) -> str | None:
    status, body = get_plain(f"http://127.0.0.1:{port}/healthz")
    return None if status == 200 else f"/healthz answered {status}: {body[-300:]}"


def failed_checks(body: bytes) -> str:
    """The `[-]check failed: reason` lines of a verbose /readyz or /healthz answer."""
    failed = [line.strip() for line in body.decode(errors="replace").splitlines() if line.startswith("[-]")]
    return "; ".join(failed) or body.decode(errors="replace")[-300:]
