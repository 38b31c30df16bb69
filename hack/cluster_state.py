"""A started cluster seen from another process: its state.json, ``down`` and ``status``.

Why a module of its own: ``python hack/cluster.py up`` detaches, so ``down`` and ``status``
run in a later process that only has the work dir. They read ``state.json`` (pids with their
executables, ports, whether a real node runs) and never trust a pid whose command line changed.
``cluster.py`` keeps the start sequence of a ``LocalControlPlane``.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from cluster_config import Workdir
from cluster_node import cleanup_node
from cluster_node_config import NODE_COMPONENTS, NodeFiles
from cluster_procs import ApiClient, pid_runs, terminate

logger = logging.getLogger("cluster")


def read_state(workdir: Path) -> Any:
    """The state.json of a started control plane, or None."""
    try:
        return json.loads(Workdir(workdir).state.read_text())
    except (OSError, ValueError):
        return None


def stop_from_state(workdir: Path) -> bool:
    """Stop a control plane started by another process (``up``). False if there was none."""
    state = read_state(workdir)
    files = NodeFiles(Workdir(workdir))
    if state is None:
        if not (files.root.exists() or files.saved_sysctls.exists()):
            return False
        cleanup_node(files, kube_proxy=None)  # a real node whose start crashed before state.json
        return True
    pids = {n: p for n, p in state["pids"].items() if pid_runs(p, state["executables"].get(n, ""))}
    killed = terminate({n: p for n, p in pids.items() if n in NODE_COMPONENTS})
    killed += terminate({n: p for n, p in pids.items() if n not in NODE_COMPONENTS and n != "etcd"})
    if "etcd" in pids:
        killed += terminate({"etcd": pids["etcd"]})
    if killed:
        logger.warning("Killed components that ignored SIGTERM, names=%s", killed)
    if state.get("real_node"):
        kube_proxy = state["executables"].get("kube-proxy")
        cleanup_node(files, kube_proxy=Path(kube_proxy) if kube_proxy else None)
    Workdir(workdir).state.unlink(missing_ok=True)
    logger.info("Stopped local control plane, workdir=%s", workdir)
    return True


def print_status(workdir: Path) -> int:
    state = read_state(workdir)
    if state is None:
        print(f"not running (no state in {workdir})")
        return 1
    healthy = True
    for name, pid in state["pids"].items():
        alive = pid_runs(pid, state["executables"].get(name, ""))
        healthy &= alive
        print(f"{name:<24} pid {pid:<8} {'running' if alive else 'NOT RUNNING'}")
    server = state["server"]
    try:
        client = ApiClient(server, Workdir(workdir).pki)
        readyz, _ = client.request("GET", "/readyz")
        nodes = client.get_json("/api/v1/nodes") or {"items": []}
    except OSError as error:
        print(f"kube-apiserver {server}: not answering ({error})")
        return 1
    ready = [
        node["metadata"]["name"]
        for node in nodes["items"]
        if any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions", []))
    ]
    print(f"kube-apiserver {server}: /readyz {readyz}; Ready nodes: {', '.join(ready) or 'none'}")
    if state.get("containerd_socket"):
        print(f"real node's containerd: {state['containerd_socket']} (ctr --address ... -n k8s.io images import)")
    print(f"export KUBECONFIG={state['kubeconfig']}")
    return 0 if healthy and readyz == 200 else 1
