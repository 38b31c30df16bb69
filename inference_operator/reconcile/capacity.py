"""How many more replicas the nodes could hold right now: the operator's count before a rollout.

Before a template change, an ``Auto`` rollout asks: on the nodes this pod may run on (its node
selector and tolerations, the node Ready and not cordoned: kube-scheduler's own filters, from
``core/nodefit.py``), how many more replicas fit in what is allocatable minus what the pods
bound there hold? A replica needs all its GPUs on one node, so free GPUs are counted node by
node, never summed into one pool. Terminating pods still hold their GPUs, as on a real node.

What it cannot know, and status says so where it matters: other workloads being created at the
same moment, GPUs shared (MIG, time slicing) or claimed through dynamic resource allocation, and
nodes an autoscaler would add.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from inference_operator.api.constants import GPU_RESOURCE
from inference_operator.core.nodefit import allocatable, filter_node
from inference_operator.core.objects import Obj
from inference_operator.core.resources import Resources, add, pod_requests

FINISHED_PHASES = ("Succeeded", "Failed")
"""A pod in these phases holds nothing on its node (the scheduler does not count it)."""


@dataclass(frozen=True)
class Capacity:
    """Room for more replicas on the nodes a pod may run on, as counted now."""

    known: bool
    """False: the operator cannot read Nodes (namespaced mode, or no RBAC to): nothing counted."""
    fits: int = 0
    """More replicas that fit now (counted up to the limit asked for)."""
    free_gpus: int = 0
    """``nvidia.com/gpu`` allocatable and not held, summed over the nodes it may run on."""
    nodes: int = 0
    """Nodes it may run on."""
    largest: int = 0
    """The most ``nvidia.com/gpu`` allocatable on one of those nodes."""
    selector: str = ""
    """The pod's node selector as ``k=v,…`` ("" when it has none)."""

    @property
    def nodes_counted(self) -> str:
        """The nodes counted, in words: ``the 2 nodes matching pool=h100``."""
        plural = "" if self.nodes == 1 else "s"
        if self.selector:
            return f"the {self.nodes} node{plural} matching {self.selector}"
        return f"the {self.nodes} node{plural} it may run on"

    @property
    def where(self) -> str:
        """``on the 2 nodes matching pool=h100``."""
        return f"on {self.nodes_counted}"


UNKNOWN = Capacity(known=False)


def _held_by_node(pods: Iterable[Obj]) -> tuple[dict[str, Resources], dict[str, int]]:
    held: dict[str, Resources] = {}
    count: dict[str, int] = {}
    for pod in pods:
        spec = pod.get("spec") or {}
        node = spec.get("nodeName")
        if not node or (pod.get("status") or {}).get("phase") in FINISHED_PHASES:
            continue
        held[node] = add(held.get(node, {}), pod_requests(spec))
        count[node] = count.get(node, 0) + 1
    return held, count


def count_capacity(pod_spec: Obj, *, nodes: Iterable[Obj], pods: Iterable[Obj], limit: int) -> Capacity:
    """Room for up to ``limit`` more pods of ``pod_spec`` on ``nodes``, given the ``pods`` bound there."""
    requests = pod_requests(pod_spec)
    held, on_node = _held_by_node(pods)
    fits = free = eligible = largest = 0
    for node in nodes:
        name = str((node.get("metadata") or {}).get("name") or "")
        # Asking for nothing leaves the filters that do not depend on what is free: cordon,
        # taints (a node not Ready among them), selector.
        if filter_node(pod_spec, {}, node, requested={}, pods_on_node=0) is not None:
            continue
        eligible += 1
        capacity = allocatable(node)
        gpus = capacity.get(GPU_RESOURCE, 0)
        largest = max(largest, gpus)
        used, count = held.get(name, {}), on_node.get(name, 0)
        free += max(gpus - used.get(GPU_RESOURCE, 0), 0)
        while fits < limit and filter_node(pod_spec, requests, node, requested=used, pods_on_node=count) is None:
            fits += 1
            used, count = add(used, requests), count + 1
    selector = ",".join(f"{k}={v}" for k, v in sorted((pod_spec.get("nodeSelector") or {}).items()))
    return Capacity(known=True, fits=fits, free_gpus=free, nodes=eligible, largest=largest, selector=selector)
