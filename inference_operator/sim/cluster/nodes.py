"""Simulated Nodes: the shapes a user describes, and the Node objects a kubelet would register.

A node layout is a list of :class:`NodeShape` (name, allocatable cpu/memory/GPUs/pods, labels,
taints, readiness); :func:`build_node` turns one into the Node manifest a kubelet (or kwok)
would create, with capacity equal to allocatable (no system reservations) and the well-known
labels (GPU nodes also ``nvidia.com/gpu.present``, as GPU feature discovery sets it).
The default layout is the one the simulator always implied: two nodes with 8 GPUs each,
sized like a common 8-GPU server (96 cpu, 1 TiB memory — enough that only GPUs run out), and
kubelet's default limit of 110 pods. What the scheduler sees in a stored Node, whoever created
it, is read by :mod:`inference_operator.core.nodefit`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from inference_operator.api.constants import GPU_RESOURCE
from inference_operator.core.objects import Obj

__all__ = [
    "DEFAULT_LAYOUT",
    "NodeShape",
    "build_node",
    "default_layout",
]


@dataclass(frozen=True)
class NodeShape:
    """One simulated node, as a user describes it."""

    name: str
    cpu: str = "96"
    memory: str = "1Ti"
    gpus: int = 8
    pods: int = 110
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: Sequence[Mapping[str, str]] = ()
    ready: bool = True
    unschedulable: bool = False


def default_layout(*, nodes: int = 2, gpus_per_node: int = 8) -> tuple[NodeShape, ...]:
    """``nodes`` identical nodes named ``sim-node-1`` …, each with ``gpus_per_node`` GPUs."""
    return tuple(NodeShape(f"sim-node-{i + 1}", gpus=gpus_per_node) for i in range(nodes))


DEFAULT_LAYOUT: Final = default_layout()


def build_node(shape: NodeShape, *, now: str) -> Obj:
    """The Node a kubelet registers for ``shape`` (``now``: its conditions' timestamps)."""
    resources = {"cpu": shape.cpu, "memory": shape.memory, "pods": str(shape.pods)}
    if shape.gpus:
        resources[GPU_RESOURCE] = str(shape.gpus)
    labels = {
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": shape.name,
        "kubernetes.io/os": "linux",
        **({"nvidia.com/gpu.present": "true"} if shape.gpus else {}),  # as NVIDIA's feature discovery labels
        **shape.labels,
    }
    spec: Obj = {}
    if shape.taints:
        spec["taints"] = [dict(t) for t in shape.taints]
    if shape.unschedulable:
        spec["unschedulable"] = True
    ready = {
        "type": "Ready",
        "status": "True" if shape.ready else "False",
        "reason": "KubeletReady" if shape.ready else "KubeletNotReady",
        "message": "kubelet is posting ready status" if shape.ready else "container runtime is down",
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": shape.name, "labels": labels},
        "spec": spec,
        "status": {"capacity": dict(resources), "allocatable": dict(resources), "conditions": [ready]},
    }
