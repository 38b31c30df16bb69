"""The explorer's GPU nodes: a small pool of node shapes, and what a cluster admin does to them.

On a simulated cluster the capacity itself is something that changes under the operator: nodes
join and leave (their pods then go, through the pod garbage collector), get tainted for
maintenance or for GPUs only, and are untainted again. :class:`NodePool` is those actions on
the API server, as ``kubectl`` would do them; :data:`LAYOUT` is the cluster the explorer starts
with and :data:`SPARE` the nodes it may add. The shapes are small on purpose (20 GPUs to start),
so that a few replicas fill the pool and the unhappy paths of a full pool come up often.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Final

from inference_operator.api.constants import GPU_RESOURCE
from inference_operator.core.clock import format_timestamp
from inference_operator.core.errors import ApiError
from inference_operator.core.nodefit import allocatable
from inference_operator.core.objects import Obj
from inference_operator.sim.cluster.nodes import NodeShape, build_node
from inference_operator.sim.simulation import Simulation

__all__ = ["LAYOUT", "NODE_NAMES", "SPARE", "TAINT_EFFECTS", "TAINT_KEYS", "NodePool"]

A100: Final = {"gpu": "a100"}
H100: Final = {"gpu": "h100", "zone": "a"}  # what the explorer's specs select
LAYOUT: Final = (
    NodeShape("gpu-a100-1", gpus=8, labels=A100),
    NodeShape("gpu-a100-2", gpus=8, labels=A100),
    NodeShape("gpu-h100-1", gpus=4, labels=H100),
)
SPARE: Final = (NodeShape("gpu-h100-2", gpus=8, labels=H100), NodeShape("cpu-1", gpus=0))
NODE_NAMES: Final = tuple(shape.name for shape in (*LAYOUT, *SPARE))
TAINT_KEYS: Final = (GPU_RESOURCE, "example.com/maintenance")
"""The first is tolerated by the explorer's specs that carry a toleration (NoSchedule only)."""
TAINT_EFFECTS: Final = ("NoSchedule", "NoExecute")

_SHAPES: Final = {shape.name: shape for shape in (*LAYOUT, *SPARE)}


class NodePool:
    """Adds, removes, taints and untaints the simulated cluster's Nodes."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim

    def node(self, name: str) -> Obj | None:
        return self.sim.get("Node", "", name)

    def add(self, name: str) -> None:
        """A node of the pool's shape ``name`` registers (nothing if it is there already)."""
        if self.node(name) is None:
            manifest = build_node(_SHAPES[name], now=format_timestamp(self.sim.clock.wall()))
            self._admin(lambda: self.sim.api.create(manifest, field_manager="kubelet"))

    def remove(self, name: str) -> None:
        """``kubectl delete node``: the node goes; its pods follow after PodGC's quarantine."""
        self._admin(lambda: self.sim.api.delete("Node", "", name))

    def taint(self, name: str, key: str, effect: str) -> None:
        """``kubectl taint node <name> <key>=present:<effect>`` (nothing if it has that taint)."""
        node = self.node(name)
        if node is None:
            return
        taints = list((node.get("spec") or {}).get("taints") or [])
        if any(t.get("key") == key and t.get("effect") == effect for t in taints):
            return
        taints.append({"key": key, "value": "present", "effect": effect})
        self._admin(lambda: self.sim.api.patch("Node", "", name, {"spec": {"taints": taints}}))

    def untaint(self, name: str) -> None:
        """Every taint of the node removed."""
        node = self.node(name)
        if node is not None and (node.get("spec") or {}).get("taints"):
            self._admin(lambda: self.sim.api.patch("Node", "", name, {"spec": {"taints": None}}))

    def total_gpus(self) -> int:
        """GPUs on all nodes, held or free."""
        return sum(allocatable(node).get(GPU_RESOURCE, 0) for node in self.sim.api.list("Node"))

    def full_gpu_nodes(self, gpus: int) -> int:
        """How many nodes have at least ``gpus`` GPUs (held or free)."""
        return sum(1 for node in self.sim.api.list("Node") if allocatable(node).get(GPU_RESOURCE, 0) >= gpus)

    def _admin(self, write: Callable[[], object]) -> None:
        with contextlib.suppress(ApiError):  # refused or already gone: the admin sees the error
            write()
