"""The explorer's GPU nodes: a small pool of node shapes, and what a cluster admin does to them.

On a simulated cluster the capacity itself is something that changes under the operator: nodes
join and leave (their pods then go, through the pod garbage collector), get tainted for
maintenance or for GPUs only, and are untainted again, are cordoned and drained; and another
workload (a training job's pods, no owner, no InferenceService) takes the GPUs a node has free,
and gives them back when it ends. :class:`NodePool` is those actions on the API server, as
``kubectl`` would do them, and tells its ``disrupted`` callback of each one that takes running
pods away (a node removed, a ``NoExecute`` taint, a drain): a rollout is not to blame for those.
:data:`LAYOUT` is the cluster the explorer starts with and :data:`SPARE` the nodes it may add.
The shapes are small on purpose (20 GPUs to start), so that a few replicas fill the pool and the
unhappy paths of a full pool come up often.
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
from inference_operator.core.resources import pod_requests
from inference_operator.sim.cluster import podstate
from inference_operator.sim.cluster.nodes import NodeShape, build_node
from inference_operator.sim.simulation import Simulation

__all__ = ["FILL_LABEL", "LAYOUT", "NODE_NAMES", "SPARE", "TAINT_EFFECTS", "TAINT_KEYS", "NodePool"]

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

FILL_LABEL: Final = ("app", "training-job")
"""The label of another workload's pods (:meth:`NodePool.fill`): no owner, no InferenceService."""
NAMESPACE: Final = "default"

_SHAPES: Final = {shape.name: shape for shape in (*LAYOUT, *SPARE)}


class NodePool:
    """Adds, removes, taints and untaints the simulated cluster's Nodes."""

    def __init__(self, sim: Simulation, *, disrupted: Callable[[str], None] | None = None) -> None:
        """``disrupted(what)``: told of each action that takes running pods away."""
        self.sim = sim
        self._disrupted = disrupted or (lambda _what: None)
        self._fills = 0

    def node(self, name: str) -> Obj | None:
        return self.sim.get("Node", "", name)

    def add(self, name: str) -> None:
        """A node of the pool's shape ``name`` registers (nothing if it is there already)."""
        if self.node(name) is None:
            manifest = build_node(_SHAPES[name], now=format_timestamp(self.sim.clock.wall()))
            self._admin(lambda: self.sim.api.create(manifest, field_manager="kubelet"))

    def remove(self, name: str) -> None:
        """``kubectl delete node``: the node goes; its pods follow after PodGC's quarantine."""
        if self.node(name) is not None:
            self._disrupted(f"node {name} removed")
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
        if effect == "NoExecute":
            self._disrupted(f"node {name} tainted {key}:NoExecute")
        self._admin(lambda: self.sim.api.patch("Node", "", name, {"spec": {"taints": taints}}))

    def untaint(self, name: str) -> None:
        """Every taint of the node removed."""
        node = self.node(name)
        if node is not None and (node.get("spec") or {}).get("taints"):
            self._admin(lambda: self.sim.api.patch("Node", "", name, {"spec": {"taints": None}}))

    def cordon(self, name: str) -> None:
        """``kubectl cordon``: no new pod is placed on the node; those there stay."""
        if self.node(name) is not None:
            self._admin(lambda: self.sim.api.patch("Node", "", name, {"spec": {"unschedulable": True}}))

    def uncordon(self, name: str) -> None:
        if self.node(name) is not None:
            self._admin(lambda: self.sim.api.patch("Node", "", name, {"spec": {"unschedulable": None}}))

    def drain(self, name: str) -> None:
        """``kubectl drain``: cordon, then every pod on the node is deleted with its grace period
        (no PodDisruptionBudget to wait for); controllers re-create theirs elsewhere."""
        if self.node(name) is None:
            return
        self.cordon(name)
        self._disrupted(f"node {name} drained")
        for pod in self.sim.api.list("Pod"):
            if podstate.node_of(pod) == name and podstate.is_active(pod):
                self._delete_pod(pod)

    def fill(self, name: str) -> None:
        """Another workload takes every GPU free on the node now: one pod, no owner, asking for
        them all, pinned to the node by its hostname label (nothing if none is free)."""
        node = self.node(name)
        if node is None:
            return
        free = allocatable(node).get(GPU_RESOURCE, 0) - self._held_on(name)
        if free <= 0:
            return
        self._fills += 1
        gpus = {GPU_RESOURCE: str(free)}
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"train-{self._fills}", "namespace": NAMESPACE, "labels": dict([FILL_LABEL])},
            "spec": {
                "nodeSelector": {"kubernetes.io/hostname": name},
                "containers": [{"name": "train", "image": "trainer", "resources": {"requests": gpus, "limits": gpus}}],
            },
        }
        self._admin(lambda: self.sim.api.create(pod, field_manager="kubectl"))

    def release(self, name: str) -> None:
        """The other workload's pods on the node end (deleted): their GPUs come free."""
        for pod in self.sim.api.list("Pod", NAMESPACE):
            labels = pod["metadata"].get("labels") or {}
            if (
                labels.get(FILL_LABEL[0]) == FILL_LABEL[1]
                and (pod.get("spec") or {}).get("nodeSelector", {}).get("kubernetes.io/hostname") == name
            ):
                self._delete_pod(pod)

    def _delete_pod(self, pod: Obj) -> None:
        """Deleted with its grace period, as ``kubectl`` does (the kubelet stops it, then it goes)."""
        namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        self._admin(lambda: self.sim.api.delete("Pod", namespace, name))

    def _held_on(self, name: str) -> int:
        """GPUs the pods bound to (or pinned to) node ``name`` hold or will hold."""
        held = 0
        for pod in self.sim.api.list("Pod"):
            spec = pod.get("spec") or {}
            pinned = (spec.get("nodeSelector") or {}).get("kubernetes.io/hostname") == name
            if (podstate.node_of(pod) == name or pinned) and not podstate.is_terminal(pod):
                held += pod_requests(spec).get(GPU_RESOURCE, 0)
        return held

    def total_gpus(self) -> int:
        """GPUs on all nodes, held or free."""
        return sum(allocatable(node).get(GPU_RESOURCE, 0) for node in self.sim.api.list("Node"))

    def gpus_by_node(self) -> list[int]:
        """Each node's GPUs (held or free)."""
        return [allocatable(node).get(GPU_RESOURCE, 0) for node in self.sim.api.list("Node")]

    def full_gpu_nodes(self, gpus: int) -> int:
        """How many nodes have at least ``gpus`` GPUs (held or free)."""
        return sum(1 for node in self.sim.api.list("Node") if allocatable(node).get(GPU_RESOURCE, 0) >= gpus)

    def _admin(self, write: Callable[[], object]) -> None:
        with contextlib.suppress(ApiError):  # refused or already gone: the admin sees the error
            write()
