"""Rollout strategies on the simulated cluster, a GPU pool of 8-GPU nodes, on the fake clock.

Covers: on a full pool the default strategy stalls and status says RolloutBlocked with the
scheduler's words, Replace completes without ever asking for a spare GPU, Auto completes by
replacing when nothing is free and by surging where a node is free; Auto that counted a free
node which another workload then took switches to replacing, with a Warning Event; status and
``kubectl get`` (the Rollout column's path) name the plan; the plan lives on the Deployment, so
an operator restart mid-rollout changes nothing, while maxUnavailable raised mid-rollout reaches
the Deployment. Replace to a replica larger than every node it
may use (more GPUs, or a node selector leaving only small nodes) is RolloutBlocked with the
numbers, whether an old pod is left or not, and then writes nothing more; where Nodes cannot be
read it keeps the scheduler's words, and so do the first pods of a replica too big, whatever the
strategy (no rollout yet). A scale-up with a template change that the maxUnavailable bound holds
(Auto or Replace) is RolloutBlocked naming the bound, writes nothing more, and finishes once
maxUnavailable is raised as the message says; so is a Replace whose freed GPUs another workload
took.
"""

from __future__ import annotations

from typing import Any, cast

import pytest

from inference_operator.api.samples import make_inference_service
from inference_operator.core.ports import Backend
from inference_operator.sim.cluster.nodes import NodeShape
from inference_operator.sim.simulation import Simulation
from inference_operator.sim.wiring import Interposer

Obj = dict[str, Any]


def pool(nodes: int) -> Simulation:
    return Simulation(node_layout=[NodeShape(f"gpu-{i}", gpus=8) for i in range(nodes)], termination_seconds=5)


def llama(*, image: str = "vllm:0.6.3", replicas: int = 2, strategy: str | None = None) -> Obj:
    obj = make_inference_service("llama", image=image, model="m", replicas=replicas, gpu=8)
    if strategy is not None:
        obj["spec"]["rollout"] = {"strategy": strategy}
    return obj


def status(sim: Simulation) -> Obj:
    found = sim.get("InferenceService", "default", "llama")
    assert found is not None
    return dict(found["status"])


def ready(sim: Simulation) -> Obj:
    return next(c for c in status(sim)["conditions"] if c["type"] == "Ready")


def live_pods(sim: Simulation) -> int:
    """The service's pods not terminating: more than spec.replicas only while surging."""
    return sum(1 for p in sim.api.list("Pod", "default") if not p["metadata"].get("deletionTimestamp"))


def upgrade(sim: Simulation, strategy: str | None, *, replicas: int = 2, watch: list[int] | None = None) -> None:
    sim.apply(llama(replicas=replicas, strategy=strategy))
    sim.run_until_quiescent(until=sim.now + 300)
    assert status(sim)["phase"] == "Ready"
    sim.apply(llama(image="vllm:0.7.0", replicas=replicas, strategy=strategy))
    for _ in range(600):  # a second of fake time at a time, to watch the pool
        sim.run_until_quiescent(until=sim.now + 1)
        if watch is not None:
            watch.append(live_pods(sim))


def start_auto_rollout(sim: Simulation) -> None:
    """An Auto service Ready on the pool, then an image change, up to the Deployment's patch."""
    sim.apply(llama(strategy="Auto"))
    sim.run_until_quiescent(until=sim.now + 300)
    sim.apply(llama(image="vllm:0.7.0", strategy="Auto"))
    while (d := sim.get("Deployment", "default", "llama")) and "0.7.0" not in str(d["spec"]["template"]):
        assert sim.step()


def test_the_default_strategy_on_a_full_pool_is_blocked_and_says_why() -> None:
    sim = pool(2)
    upgrade(sim, None)
    cond = ready(sim)
    assert (cond["status"], cond["reason"]) == ("False", "RolloutBlocked")
    assert (
        "each needs 8 nvidia.com/gpu and old pods hold them: 0/2 nodes are available: 2 Insufficient" in cond["message"]
    )
    assert status(sim)["rollout"]["plan"] == "Blocked"


@pytest.mark.parametrize("strategy", ["Replace", "Auto"])
def test_replace_and_auto_complete_on_a_full_pool_without_a_spare_gpu(strategy: str) -> None:
    sim = pool(2)
    seen: list[int] = []
    upgrade(sim, strategy, watch=seen)
    assert status(sim)["phase"] == "Ready" and status(sim)["updatedReplicas"] == 2
    assert max(seen) == 2  # never a pod beyond spec.replicas: no spare GPU needed
    assert status(sim)["rollout"]["plan"] == "Replace"
    assert status(sim)["rollout"]["maxSurge"] == 0


def test_auto_surges_onto_a_free_node() -> None:
    sim = pool(3)
    upgrade(sim, "Auto")
    rollout = status(sim)["rollout"]
    assert status(sim)["phase"] == "Ready"
    assert (rollout["plan"], rollout["maxSurge"], rollout["maxUnavailable"]) == ("Surge 1 + Replace", 1, 1)
    assert "8 nvidia.com/gpu free on the 3 nodes it may run on" in rollout["message"]


def test_auto_switches_to_replacing_when_another_workload_takes_the_free_node() -> None:
    sim = pool(3)
    start_auto_rollout(sim)
    # The plan counted one free node; a training job is created before the surge pod and gets it.
    container = {"name": "train", "image": "trainer", "resources": {"limits": {"nvidia.com/gpu": "8"}}}
    sim.apply(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "train", "namespace": "default"},
            "spec": {"containers": [container]},
        }
    )
    sim.run_until_quiescent(until=sim.now + 600)
    assert status(sim)["phase"] == "Ready" and status(sim)["updatedReplicas"] == 2
    assert status(sim)["rollout"]["message"].startswith("switched to replacing 1 replica(s) at a time")
    switched = [e for e in sim.events if e.reason == "RolloutSwitched"]
    assert len(switched) == 1 and switched[0].type == "Warning"


def test_an_operator_restart_mid_rollout_keeps_the_plan() -> None:
    sim = pool(3)
    start_auto_rollout(sim)
    before = sim.get("Deployment", "default", "llama")
    sim.restart_operator()
    sim.run_until_quiescent(until=sim.now + 600)
    after = sim.get("Deployment", "default", "llama")
    assert before is not None and after is not None
    assert after["spec"]["strategy"] == before["spec"]["strategy"]
    assert status(sim)["rollout"]["plan"] == "Surge 1 + Replace"


def test_max_unavailable_raised_in_the_middle_of_an_auto_rollout_reaches_the_deployment() -> None:
    sim = pool(2)  # full: Auto replaces, 1 at a time
    start_auto_rollout(sim)
    raised = llama(image="vllm:0.7.0", strategy="Auto")
    raised["spec"]["rollout"]["maxUnavailable"] = 2
    sim.apply(raised)
    sim.run_until_quiescent(until=sim.now + 600)
    deployment = sim.get("Deployment", "default", "llama")
    assert deployment is not None and deployment["spec"]["strategy"]["rollingUpdate"] == {
        "maxSurge": 0,
        "maxUnavailable": 2,
    }
    assert status(sim)["phase"] == "Ready" and status(sim)["rollout"]["maxUnavailable"] == 2
    assert status(sim)["rollout"]["message"].startswith("replacing 2 replica(s) at a time")


def test_a_replica_too_big_for_every_node_made_smaller_rolls_out_without_a_stall() -> None:
    """The pending pod is the old template's, holding nothing: no stall (the real cluster agrees)."""
    sim = pool(2)
    too_big = make_inference_service("llama", image="vllm:0.6.3", model="m", replicas=1, gpu=16)
    sim.apply(too_big)
    sim.run_until_quiescent(until=sim.now + 60)
    assert ready(sim)["reason"] == "PodsUnschedulable"
    sim.apply({**too_big, "spec": {**too_big["spec"], "gpu": 1}})
    reasons = set()
    for _ in range(120):
        sim.run_until_quiescent(until=sim.now + 1)
        reasons.add(ready(sim)["reason"])
    assert "RolloutBlocked" not in reasons and ready(sim)["reason"] == "Ready"


def test_removing_spec_rollout_puts_the_deployments_default_strategy_back_and_then_writes_nothing() -> None:
    sim = pool(2)
    sim.apply(llama(strategy="Replace"))
    sim.run_until_quiescent(until=sim.now + 60)
    sim.apply(llama())
    sim.run_until_quiescent(until=sim.now + 60)
    dep = sim.get("Deployment", "default", "llama")
    assert dep is not None and dep["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": "25%", "maxUnavailable": "25%"}
    assert "serving.inference-operator.dev/rollout" not in (dep["metadata"].get("annotations") or {})
    assert "rollout" not in status(sim) and status(sim)["phase"] == "Ready"
    writes = sim.backend.writes
    sim.resync()
    sim.run_until_quiescent(until=sim.now + 60)
    assert sim.backend.writes == writes


class NamespacedBackend:
    """The simulator's backend as in namespaced mode: no Node or Pod cache, nothing counted."""

    def __init__(self, inner: Backend) -> None:
        self.inner = inner

    def cached(self, kind: str) -> None:
        return None

    def cached_owned(self, kind: str, namespace: str, owner: str) -> None:
        return None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


SMALL_POOL = [
    NodeShape("gpu-0", gpus=8, labels={"pool": "big"}),
    NodeShape("gpu-1", gpus=8, labels={"pool": "big"}),
    NodeShape("small-0", gpus=4, labels={"pool": "small"}),
]


def replace_to(sim: Simulation, replicas: int, **change: Any) -> None:
    """A Replace service of 8-GPU replicas Ready on the pool, then ``change`` to its spec."""
    sim.apply(llama(replicas=replicas, strategy="Replace"))
    sim.run_until_quiescent(until=sim.now + 300)
    assert status(sim)["phase"] == "Ready"
    changed = llama(replicas=replicas, strategy="Replace")
    changed["spec"].update(change)
    sim.apply(changed)
    sim.run_until_quiescent(until=sim.now + 120)


@pytest.mark.parametrize(
    ("replicas", "change", "largest"),
    [
        (2, {"gpu": 16}, "the 3 nodes it may run on has 8"),
        (1, {"gpu": 16}, "the 3 nodes it may run on has 8"),  # no old pod left: no stall either
        (2, {"nodeSelector": {"pool": "small"}}, "the 1 node matching pool=small has 4"),
    ],
)
def test_replace_to_a_replica_larger_than_every_node_it_may_use_is_blocked_with_the_numbers(
    replicas: int, change: Obj, largest: str
) -> None:
    sim = Simulation(node_layout=SMALL_POOL, termination_seconds=5)
    replace_to(sim, replicas, **change)
    cond = ready(sim)
    assert (cond["status"], cond["reason"], status(sim)["phase"]) == ("False", "RolloutBlocked", "Failed")
    gpu = change.get("gpu", 8)
    assert cond["message"] == (
        f"1 of {replicas} replicas updated, {replicas - 1} ready; a replica can never be scheduled: it needs "
        f"{gpu} nvidia.com/gpu on one node and the largest node {largest}"
    )
    assert status(sim)["rollout"]["plan"] == "Blocked" and status(sim)["rollout"]["maxSurge"] == 0
    writes = sim.backend.writes
    sim.resync()
    sim.run_until_quiescent(until=sim.now + 60)
    assert sim.backend.writes == writes


def test_replace_to_a_replica_too_big_where_nodes_cannot_be_read_keeps_the_schedulers_words() -> None:
    sim = Simulation(
        node_layout=SMALL_POOL,
        termination_seconds=5,
        interpose=Interposer(backend=lambda backend: cast(Backend, NamespacedBackend(backend))),
    )
    replace_to(sim, 2, gpu=16)
    cond = ready(sim)
    assert (cond["reason"], status(sim)["rollout"]["plan"]) == ("PodsUnschedulable", "Replace")
    assert cond["message"].startswith("1 of 2 replicas ready; 1 pod(s) cannot be scheduled: 0/3 nodes are available")


@pytest.mark.parametrize("strategy", [None, "Surge", "Replace", "Auto"])
def test_the_first_pods_of_a_replica_too_big_keep_the_schedulers_words_whatever_the_strategy(
    strategy: str | None,
) -> None:
    sim = pool(2)
    too_big = llama(strategy=strategy)
    too_big["spec"]["gpu"] = 16
    sim.apply(too_big)
    sim.run_until_quiescent(until=sim.now + 120)
    assert (ready(sim)["reason"], status(sim)["phase"]) == ("PodsUnschedulable", "Pending")


@pytest.mark.parametrize("strategy", ["Auto", "Replace"])
def test_a_scale_up_the_max_unavailable_bound_holds_says_so_and_finishes_when_it_is_raised(strategy: str) -> None:
    # Two 8-GPU replicas become five of 4 GPUs on 8 + 8 + 4 GPUs: the Deployment controller scales
    # the old ReplicaSet up first, its third 8-GPU pod fits nowhere, 3 of 5 are available and the
    # bound keeps 4, so no old pod may stop, and no new pod fits.
    sim = Simulation(node_layout=[*SMALL_POOL[:2], NodeShape("small-0", gpus=4)], termination_seconds=5)
    sim.apply(llama(strategy=strategy))
    sim.run_until_quiescent(until=sim.now + 300)
    five = llama(replicas=5, strategy=strategy)
    five["spec"].update(gpu=4, rollout={"strategy": strategy, "maxUnavailable": 1})
    sim.apply(five)
    sim.run_until_quiescent(until=sim.now + 900)
    cond = ready(sim)
    assert (cond["reason"], status(sim)["phase"], status(sim)["rollout"]["plan"]) == (
        "RolloutBlocked",
        "Failed",
        "Blocked",
    )
    assert cond["message"].endswith(
        "3 ready; maxUnavailable 1 keeps at least 4 of 5 replicas serving and only 3 are available, so no old pod "
        "may stop, and no new pod fits: 0 nvidia.com/gpu free on the 3 nodes it may run on, 4 needed on one node; "
        "raise spec.rollout.maxUnavailable to 3 or more, or free 4 nvidia.com/gpu on one of those nodes"
    )
    writes = sim.backend.writes
    sim.resync()
    sim.run_until_quiescent(until=sim.now + 60)
    assert sim.backend.writes == writes
    five["spec"]["rollout"]["maxUnavailable"] = 3
    sim.apply(five)
    sim.run_until_quiescent(until=sim.now + 900)
    assert (ready(sim)["reason"], status(sim)["readyReplicas"]) == ("Ready", 5)


def test_a_replace_whose_freed_gpus_another_workload_takes_is_held_by_the_bound_and_says_so() -> None:
    sim = pool(2)
    sim.apply(llama(strategy="Replace"))
    sim.run_until_quiescent(until=sim.now + 300)
    sim.apply(llama(image="vllm:0.7.0", strategy="Replace"))
    while not (stopping := [p for p in sim.api.list("Pod", "default") if p["metadata"].get("deletionTimestamp")]):
        assert sim.step()
    # A pod bound by name (no scheduler involved) takes the node the old pod is leaving.
    container = {"name": "train", "image": "trainer", "resources": {"limits": {"nvidia.com/gpu": "8"}}}
    node = stopping[0]["spec"]["nodeName"]
    sim.apply(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "train", "namespace": "default"},
            "spec": {"nodeName": node, "containers": [container]},
        }
    )
    sim.run_until_quiescent(until=sim.now + 600)
    cond = ready(sim)
    assert (cond["reason"], status(sim)["phase"]) == ("RolloutBlocked", "Failed")
    assert cond["message"] == (
        "1 of 2 replicas updated, 1 ready; maxUnavailable 1 keeps at least 1 of 2 replicas serving and only 1 is "
        "available, so no old pod may stop, and no new pod fits: 0 nvidia.com/gpu free on the 2 nodes it may run on, "
        "8 needed on one node; raise spec.rollout.maxUnavailable to 2 or more, or free 8 nvidia.com/gpu on one of "
        "those nodes"
    )
    sim.api.delete("Pod", "default", "train")  # the other workload ends: the rollout moves on by itself
    sim.run_until_quiescent(until=sim.now + 600)
    assert ready(sim)["reason"] == "Ready"
