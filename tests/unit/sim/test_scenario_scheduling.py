"""What the GPU pool scenarios observe of scheduling (tests/shared/scenarios/scheduling.py).

Covers: a pool node carries the pool's label and taint beside its own, and the placement
selects and tolerates exactly that; a stored Node reads back as the shape it was built from;
ReplicaSet replica counts become one token per change, by revision, repeats collapsed also
across steps, a deleted ReplicaSet leaving the token; the pods summary counts bound pods per
pool node and revision, lists Pending ones with the scheduler's words, and leaves terminating
pods out; on the simulator a pool joins the layout's nodes, labelled and tainted for it.
"""

from __future__ import annotations

from typing import Any

from inference_operator.sim.cluster.nodes import NodeShape, build_node
from tests.shared.scenarios.scheduling import (
    POOL_LABEL,
    POOL_TAINT,
    ReplicaSetSequence,
    placement,
    pods_summary,
    pool_node,
    shape_of_node,
)
from tests.shared.scenarios.simworld import SimWorld

Obj = dict[str, Any]
TAINT = {"key": "dedicated", "value": "training", "effect": "NoSchedule"}


def test_a_pool_node_carries_the_pools_label_and_taint_beside_its_own() -> None:
    node = pool_node(NodeShape("a", labels={"accelerator": "h100"}, taints=[TAINT]), pool="p1", name="ns-a")
    assert node.name == "ns-a"
    assert node.labels == {"accelerator": "h100", POOL_LABEL: "p1"}
    assert list(node.taints) == [TAINT, {"key": POOL_TAINT, "value": "p1", "effect": "NoSchedule"}]
    fields = placement("p1")
    assert fields["nodeSelector"] == {POOL_LABEL: "p1"}
    assert fields["tolerations"] == [{"key": POOL_TAINT, "operator": "Equal", "value": "p1", "effect": "NoSchedule"}]


def test_a_stored_node_reads_back_as_its_shape() -> None:
    shape = NodeShape("n", cpu="32", memory="256Gi", gpus=4, pods=50, labels={"x": "y"}, taints=[TAINT])
    read = shape_of_node(build_node(shape, now="2026-01-01T00:00:00Z"))
    assert read.name == "n" and (read.cpu, read.memory, read.gpus, read.pods) == ("32", "256Gi", 4, 50)
    assert read.labels["x"] == "y" and list(read.taints) == [TAINT] and read.ready and not read.unschedulable


def _rs(name: str, revision: int, replicas: int) -> Obj:
    annotations = {"deployment.kubernetes.io/revision": str(revision)}
    return {"metadata": {"name": name, "annotations": annotations}, "spec": {"replicas": replicas}}


def test_replicaset_counts_become_one_token_per_change_repeats_collapsed() -> None:
    seq = ReplicaSetSequence()
    assert seq.take([("ADDED", _rs("a", 1, 2)), ("MODIFIED", _rs("a", 1, 2))]) == ["r1=2"]
    assert seq.take([("MODIFIED", _rs("a", 1, 2))]) == []
    assert seq.take([("ADDED", _rs("b", 10, 0)), ("MODIFIED", _rs("a", 1, 1))]) == ["r1=2 r10=0", "r1=1 r10=0"]
    assert seq.take([("DELETED", _rs("a", 1, 1))]) == ["r10=0"]


def _pod(owner: str, *, node: str | None = None, message: str | None = None, terminating: bool = False) -> Obj:
    meta: Obj = {"ownerReferences": [{"name": owner, "controller": True}]}
    if terminating:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    status: Obj = {}
    if message is not None:
        status["conditions"] = [{"type": "PodScheduled", "status": "False", "message": message}]
    return {"metadata": meta, "spec": {"nodeName": node} if node else {}, "status": status}


def test_the_pods_summary_counts_bound_pods_lists_pending_ones_and_leaves_terminating_out() -> None:
    pods = [
        _pod("a", node="ns-gpu-a"),
        _pod("a", node="ns-gpu-a", terminating=True),
        _pod("b", node="ns-gpu-b"),
        _pod("b", message="0/4 nodes are available"),
        _pod("b", message="ignored", terminating=True),
    ]
    summary = pods_summary(
        pods, [_rs("a", 1, 1), _rs("b", 2, 2)], node_names={"ns-gpu-a": "gpu-a", "ns-gpu-b": "gpu-b"}
    )
    assert summary == {
        "bound": {"gpu-a": {"r1": 1}, "gpu-b": {"r2": 1}},
        "pending": [{"revision": "r2", "message": "0/4 nodes are available"}],
    }


def test_on_the_simulator_a_pool_joins_the_layouts_nodes() -> None:
    world = SimWorld(layout=[NodeShape("other", gpus=0)])
    fields = world.gpu_pool([NodeShape("a"), NodeShape("b", labels={"accelerator": "l4"})])
    nodes = {n["metadata"]["name"]: n for n in world.sim.api.list("Node")}
    assert sorted(nodes) == ["a", "b", "other"]
    assert nodes["b"]["metadata"]["labels"]["accelerator"] == "l4"
    for name in ("a", "b"):
        assert nodes[name]["metadata"]["labels"][POOL_LABEL] == fields["nodeSelector"][POOL_LABEL]
        assert [t["key"] for t in nodes[name]["spec"]["taints"]] == [POOL_TAINT]
    assert POOL_LABEL not in nodes["other"]["metadata"]["labels"]
