"""The simulator's scheduler writes what kube-scheduler v1.36.5 wrote, byte for byte.

The expected messages below were read from ``PodScheduled`` conditions on the project's local
control plane (``hack/cluster.py up --no-node``: kube-scheduler v1.36.5 and kwok nodes of
32 cpu, 256Gi, 110 pods and 8 GPUs), with the same five nodes and pods as here: one full node
matching the pod's selector, one full node and one free node not matching it, a tainted one
and a cordoned one; and a pod asking for more GPUs than any node has.
"""

from __future__ import annotations

from typing import Any

from inference_operator.sim.cluster.nodes import NodeShape
from inference_operator.sim.simulation import Simulation

Obj = dict[str, Any]
KWOK = {"cpu": "32", "memory": "256Gi", "pods": 110}
LAYOUT = [
    NodeShape("kwok-cordoned", unschedulable=True, **KWOK),
    NodeShape("kwok-h100", labels={"pool": "h100"}, **KWOK),
    NodeShape("kwok-l4", labels={"pool": "l4"}, **KWOK),
    NodeShape("kwok-node-0", **KWOK),
    NodeShape("kwok-tainted", taints=[{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}], **KWOK),
]
REAL = {
    "probe-selector": "0/5 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) had untolerated taint(s), "
    "1 node(s) were unschedulable, 2 node(s) didn't match Pod's node affinity/selector. no new claims to deallocate, "
    "preemption: 0/5 nodes are available: 1 No preemption victims found for incoming pod, "
    "4 Preemption is not helpful for scheduling.",
    "probe-too-big": "0/5 nodes are available: 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable, "
    "3 Insufficient nvidia.com/gpu. no new claims to deallocate, preemption: 0/5 nodes are available: "
    "5 Preemption is not helpful for scheduling.",
}


def pod(name: str, gpus: int, selector: dict[str, str] | None = None) -> Obj:
    spec: Obj = {"containers": [{"name": "s", "image": "vllm", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}
    if selector:
        spec["nodeSelector"] = selector
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def test_unschedulable_messages_match_kube_scheduler_1_36_byte_for_byte() -> None:
    sim = Simulation(node_layout=LAYOUT)
    for manifest in (
        pod("fill-h100", 8, {"pool": "h100"}),
        pod("fill-node0", 8, {"kubernetes.io/hostname": "kwok-node-0"}),
        pod("probe-selector", 8, {"pool": "h100"}),
        pod("probe-too-big", 16),
    ):
        sim.api.create(manifest)
        sim.run_until_quiescent(until=sim.now + 2)
    placed = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in sim.api.list("Pod", "default")}
    assert placed == {
        "fill-h100": "kwok-h100",
        "fill-node0": "kwok-node-0",
        "probe-selector": None,
        "probe-too-big": None,
    }
    for name, message in REAL.items():
        found = sim.get("Pod", "default", name)
        assert found is not None
        (scheduled,) = [c for c in found["status"]["conditions"] if c["type"] == "PodScheduled"]
        assert (scheduled["status"], scheduled["reason"]) == ("False", "Unschedulable")
        assert scheduled["message"] == message
