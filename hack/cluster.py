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

From pytest: ``start_control_plane(workdir)`` or ``with LocalControlPlane(...)``;
``plane.restart("kube-apiserver")`` stops one component and starts it again, same flags.
From a shell::

    eval "$(python hack/cluster.py up)"   # prints: export KUBECONFIG=...
    python hack/cluster.py status
    python hack/cluster.py down

With ``real_node=True`` (``up`` does it by default; ``--no-node`` or
``INFERENCE_OPERATOR_REAL_NODE=0`` leave it out) one real node joins the kwok ones:
containerd + kubelet + kube-proxy, Pods on a bridge at 198.18.200.0/24, the API server on
the bridge address 198.18.200.1 (see ``cluster_node.py`` for the host side and
``cluster_node_config.py`` for its configs). Needs root.

This file is the entry point: the CLI and ``start_control_plane``, re-exporting
``LocalControlPlane`` (``cluster_plane.py``: the cluster's life cycle), ``ControlPlaneError``
and the component processes (``cluster_components.py``), and ``ensure_binaries``
(``cluster_binaries.py``). PKI, kubeconfigs and flags are ``cluster_config.py``'s.

Standard library only (plus the ``openssl`` CLI, and ``ip``/``iptables``/``runc`` for the real
node). All traffic stays on this machine: 127.0.0.1, and the node's bridge.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

HACK_DIR = Path(__file__).resolve().parent
if str(HACK_DIR) not in sys.path:  # also when this file is imported by path
    sys.path.insert(0, str(HACK_DIR))

from cluster_binaries import BIN_DIR_ENV, ensure_binaries  # noqa: E402
from cluster_components import ControlPlaneError  # noqa: E402
from cluster_node import NodeError  # noqa: E402
from cluster_plane import LocalControlPlane  # noqa: E402
from cluster_state import print_status, stop_from_state  # noqa: E402

__all__ = ["ControlPlaneError", "LocalControlPlane", "ensure_binaries", "main", "start_control_plane"]

DEFAULT_WORKDIR = HACK_DIR.parent / ".cluster"
REAL_NODE_ENV = "INFERENCE_OPERATOR_REAL_NODE"  # 0: `up` starts no real node


def start_control_plane(
    workdir: Path,
    *,
    bin_dir: Path | None = None,
    nodes: int = 2,
    gpus_per_node: int = 8,
    ready_timeout: float = 90.0,
    real_node: bool = False,
) -> LocalControlPlane:
    """For pytest: build binaries if needed, start, return a ready control plane. Caller calls stop().

    `real_node` adds the one real node (containerd + kubelet + kube-proxy, see cluster_node.py).
    """
    plane = LocalControlPlane(
        workdir,
        bin_dir or ensure_binaries(),
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        ready_timeout=ready_timeout,
        real_node=real_node,
    )
    plane.start()
    return plane


# --- CLI --------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run a local Kubernetes control plane for the e2e suite.")
    parser.add_argument("command", choices=["up", "down", "status"])
    parser.add_argument("--workdir", type=Path, default=DEFAULT_WORKDIR, help=f"default: {DEFAULT_WORKDIR}")
    parser.add_argument("--bin-dir", type=Path, help=f"binaries (default: ${BIN_DIR_ENV}, else build them)")
    parser.add_argument("--nodes", type=int, default=2, help="number of fake kwok Nodes (default: 2)")
    parser.add_argument(
        "--no-node",
        action="store_true",
        help=f"start no real node (containerd + kubelet + kube-proxy); also: {REAL_NODE_ENV}=0",
    )
    parser.add_argument("-v", "--verbosity", type=int, default=0, help="component log verbosity (default: 0)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    workdir: Path = args.workdir.resolve()
    try:
        if args.command == "up":
            bin_dir = args.bin_dir or ensure_binaries()
            real_node = not args.no_node and os.environ.get(REAL_NODE_ENV, "1") != "0"
            plane = LocalControlPlane(
                workdir, bin_dir, nodes=args.nodes, verbosity=args.verbosity, detach=True, real_node=real_node
            )
            plane.start()
            print(f"export KUBECONFIG={plane.kubeconfig}")
            return 0
        if args.command == "down":
            if not stop_from_state(workdir):
                print(f"nothing to stop (no state in {workdir})", file=sys.stderr)
            return 0
        return print_status(workdir)
    except (ControlPlaneError, NodeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
