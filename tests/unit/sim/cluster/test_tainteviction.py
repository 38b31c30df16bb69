"""Taint eviction on the simulated cluster: a NoExecute taint drains a node, NoSchedule does not.

Covers: a pod that does not tolerate a node's new NoExecute taint gets the DisruptionTarget
condition (DeletionByTaintManager) and is deleted with its grace period, holding its GPUs until
it has stopped; its replacement is scheduled elsewhere or, with no room, Pending with the
scheduler's words; a pod that tolerates the taint stays; a NoSchedule taint evicts nothing.
"""

from __future__ import annotations

from typing import Any

from inference_operator.api.samples import make_inference_service
from inference_operator.sim.cluster.tainteviction import EVICTION_MESSAGE, EVICTION_REASON
from inference_operator.sim.simulation import Simulation

Obj = dict[str, Any]
MAINTENANCE: Obj = {"key": "example.com/maintenance", "value": "present"}


def serving(*, nodes: int = 2, **spec: Any) -> tuple[Simulation, list[Obj]]:
    """One replica of 8 GPUs on ``nodes`` 8-GPU nodes, recording each pod update."""
    sim = Simulation(nodes=nodes, termination_seconds=10)
    updates: list[Obj] = []
    sim.cluster.pod_cache.add_event_handler(on_update=lambda _old, new: updates.append(new))
    sim.apply(make_inference_service("llama", image="vllm:0.6.3", model="Llama-3", replicas=1, gpu=8, **spec))
    sim.run_until_quiescent(until=60)
    return sim, updates


def taint(sim: Simulation, node: str, effect: str) -> None:
    sim.api.patch("Node", "", node, {"spec": {"taints": [{**MAINTENANCE, "effect": effect}]}})


def pods(sim: Simulation) -> dict[str, Obj]:
    return {p["metadata"]["name"]: p for p in sim.api.list("Pod", "default")}


def test_a_no_execute_taint_evicts_the_pod_which_keeps_its_gpus_until_stopped_and_is_replaced() -> None:
    sim, updates = serving()
    ((first, pod),) = pods(sim).items()
    node = pod["spec"]["nodeName"]
    taint(sim, node, "NoExecute")
    sim.run_until_quiescent(until=sim.now + 1)
    marked = next(u for u in updates if u["metadata"]["name"] == first and u["metadata"].get("deletionTimestamp"))
    disruption = next(c for c in marked["status"]["conditions"] if c["type"] == "DisruptionTarget")
    assert (disruption["reason"], disruption["message"]) == (EVICTION_REASON, EVICTION_MESSAGE)
    assert first in pods(sim)  # stopping, and holding the node's 8 GPUs meanwhile
    sim.run_until_quiescent(until=sim.now + 60)
    (replacement,) = pods(sim).values()
    assert replacement["metadata"]["name"] != first
    assert replacement["spec"]["nodeName"] not in ("", node)


def test_with_no_room_elsewhere_the_replacement_waits_with_the_schedulers_words() -> None:
    sim, _ = serving(nodes=1)
    taint(sim, "sim-node-1", "NoExecute")
    sim.run_until_quiescent(until=sim.now + 60)
    (replacement,) = pods(sim).values()
    scheduled = next(c for c in replacement["status"]["conditions"] if c["type"] == "PodScheduled")
    assert scheduled["status"] == "False"
    assert "1 node(s) had untolerated taint(s)" in scheduled["message"]


def test_a_pod_that_tolerates_the_taint_stays() -> None:
    sim, _ = serving(tolerations=[{"key": MAINTENANCE["key"], "operator": "Exists", "effect": "NoExecute"}])
    before = set(pods(sim))
    taint(sim, next(iter(pods(sim).values()))["spec"]["nodeName"], "NoExecute")
    sim.run_until_quiescent(until=sim.now + 60)
    assert set(pods(sim)) == before


def test_a_no_schedule_taint_evicts_nothing() -> None:
    sim, _ = serving()
    before = set(pods(sim))
    taint(sim, next(iter(pods(sim).values()))["spec"]["nodeName"], "NoSchedule")
    sim.run_until_quiescent(until=sim.now + 60)
    assert set(pods(sim)) == before
