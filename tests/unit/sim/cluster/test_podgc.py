"""The pod garbage collector on the simulated cluster: a deleted Node's pods do not live on.

Covers: the pods bound to a deleted node are left alone during the quarantine, then marked
Failed with PodGC's DisruptionTarget condition and deleted with grace 0, their ReplicaSet makes
replacements, which the scheduler reports it cannot place when the GPUs went with the node; a
node that comes back within the quarantine keeps its pods; pods on other nodes are untouched;
a failed pod is deleted without being written again.
"""

from __future__ import annotations

from typing import Any

from inference_operator.api.samples import make_inference_service
from inference_operator.sim.apiserver.server import FakeApiServer
from inference_operator.sim.clock import FakeClock
from inference_operator.sim.cluster.nodes import NodeShape, build_node
from inference_operator.sim.cluster.podgc import (
    DISRUPTION_REASON,
    ORPHAN_MESSAGE,
    QUARANTINE_SECONDS,
    PodGarbageCollector,
)
from inference_operator.sim.informer import SharedInformer
from inference_operator.sim.simulation import Simulation

Obj = dict[str, Any]


def pods_by_node(sim: Simulation) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for pod in sim.api.list("Pod", "default"):
        found.setdefault(str(pod["spec"].get("nodeName") or ""), []).append(pod["metadata"]["name"])
    return found


def serving_on_two_nodes() -> Simulation:
    sim = Simulation()
    sim.apply(make_inference_service("llama", image="vllm:0.6.3", model="Llama-3", replicas=2, gpu=8))
    sim.run_until_quiescent(until=60)
    assert sorted(pods_by_node(sim)) == ["sim-node-1", "sim-node-2"]
    return sim


def test_a_deleted_nodes_pods_are_collected_after_the_quarantine_and_replaced_where_there_is_room() -> None:
    sim = serving_on_two_nodes()
    kept = pods_by_node(sim)["sim-node-2"]
    gone = pods_by_node(sim)["sim-node-1"]
    sim.api.delete("Node", "", "sim-node-1")
    sim.run_until_quiescent(until=sim.now + QUARANTINE_SECONDS - 1)
    assert pods_by_node(sim)["sim-node-1"] == gone  # still quarantined
    sim.run_until_quiescent(until=sim.now + 5)
    now = pods_by_node(sim)
    assert "sim-node-1" not in now and now["sim-node-2"] == kept
    (replacement,) = now[""]
    assert replacement not in gone
    pending = sim.get("Pod", "default", replacement)
    assert pending is not None and pending["status"]["phase"] == "Pending"
    scheduled = next(c for c in pending["status"]["conditions"] if c["type"] == "PodScheduled")
    assert "Insufficient nvidia.com/gpu" in scheduled["message"]


def test_a_node_back_within_the_quarantine_keeps_its_pods() -> None:
    sim = serving_on_two_nodes()
    before = pods_by_node(sim)
    node = sim.api.get("Node", "", "sim-node-1")
    sim.api.delete("Node", "", "sim-node-1")
    sim.run_until_quiescent(until=sim.now + 10)
    sim.api.create(build_node(NodeShape("sim-node-1"), now=node["metadata"]["creationTimestamp"]))
    sim.run_until_quiescent(until=sim.now + 2 * QUARANTINE_SECONDS)
    assert pods_by_node(sim) == before


def collector_over_one_orphan(phase: str) -> tuple[FakeApiServer, PodGarbageCollector, list[Obj]]:
    clock = FakeClock()
    api = FakeApiServer(clock)
    api.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "orphan", "namespace": "default"},
            "spec": {"nodeName": "gone", "containers": [{"name": "c", "image": "i"}]},
        }
    )
    api.patch_status("Pod", "default", "orphan", {"status": {"phase": phase}})
    nodes, pods = SharedInformer(api, "Node"), SharedInformer(api, "Pod")
    nodes.start()
    pods.start()
    written: list[Obj] = []
    pods.add_event_handler(on_update=lambda _old, new: written.append(new))
    return api, PodGarbageCollector(api=api, clock=clock, nodes=nodes, pods=pods), written


def test_an_orphan_is_marked_failed_with_podgcs_condition_then_deleted_with_grace_zero() -> None:
    api, collector, written = collector_over_one_orphan("Running")
    collector.reconcile("", "gone")
    assert api.list("Pod", "default") == []
    collector.pods.pump()
    marked = written[0]
    assert marked["status"]["phase"] == "Failed"
    disruption = next(c for c in marked["status"]["conditions"] if c["type"] == "DisruptionTarget")
    assert (disruption["status"], disruption["reason"], disruption["message"]) == (
        "True",
        DISRUPTION_REASON,
        ORPHAN_MESSAGE,
    )


def test_a_pod_already_finished_is_deleted_without_another_status_write() -> None:
    api, collector, written = collector_over_one_orphan("Succeeded")
    collector.reconcile("", "gone")
    collector.pods.pump()
    assert api.list("Pod", "default") == [] and written == []
