"""The explorer on a simulated cluster of GPU nodes: its admin actions, its scheduling invariants.

Covers:
- NodePool: nodes are added (once), removed, tainted NoSchedule or NoExecute and untainted on
  the API server; the GPUs of the pool are counted.
- The scheduling invariants: a converged cluster world, with or without a GPU shortage, breaks
  none; ready_only_when_scheduled sees a current pod left Pending and a missing pod under
  Ready=True; gpu_shortage_explained sees a status that does not say why pods wait for GPUs,
  reads Ready's message unless Ready explains another problem first; a shortage under
  Ready=True breaks both; shortage_words asks for the scheduler's words; gpus_free_for counts
  the GPUs no pod holds on the nodes a pod may use.
- The machine's composite actions: a full-pool rollout leaves the new pod waiting for GPUs and
  says so; a scale past capacity leaves one replica Pending.
- A bounded, seeded run of the cluster explorer keeps every enforced invariant.
- Regressions: the cluster explorer's findings, as the minimal sequences it printed (among
  them stale scheduler words after a node removal, once rewritten only when the pod diagnosis
  expired).
"""

from __future__ import annotations

from typing import Any

import pytest

from inference_operator.api.constants import KIND
from inference_operator.sim.explore import ENFORCED_INVARIANTS, INVARIANTS, World
from inference_operator.sim.explore.capacity import LAYOUT
from inference_operator.sim.explore.capacitymachine import CIClusterExplorer, ClusterExplorer
from inference_operator.sim.explore.invariants import check
from inference_operator.sim.explore.runner import explore
from inference_operator.sim.explore.scheduling import INSUFFICIENT_GPU, gpus_free_for, shortage_words

from .worlds import SPEC as BASE_SPEC
from .worlds import quiet

Obj = dict[str, Any]
NS = "default"
SPEC: Obj = {**BASE_SPEC, "gpu": 8}
SCHEDULING = frozenset({"ready_only_when_scheduled", "gpu_shortage_explained"})
CLUSTER_EXAMPLES = 12
CLUSTER_STEPS = 15


def cluster_world(**spec: Any) -> World:
    world = World(node_layout=LAYOUT)
    world.apply("llama", {**SPEC, **spec})
    return world


def pods(world: World) -> list[Obj]:
    return world.sim.api.list("Pod", NS)


def ready(world: World) -> Obj:
    obj = world.isvc("llama")
    assert obj is not None
    return next(c for c in obj["status"]["conditions"] if c["type"] == "Ready")


# -- NodePool -------------------------------------------------------------------------------------


def test_the_pool_adds_once_removes_taints_and_untaints_nodes() -> None:
    world = World(node_layout=LAYOUT)
    pool = world.nodes
    assert pool.total_gpus() == 20 and pool.full_gpu_nodes(8) == 2
    pool.add("gpu-h100-2")
    pool.add("gpu-h100-2")
    assert pool.total_gpus() == 28
    pool.remove("gpu-a100-1")
    pool.remove("gpu-a100-1")  # already gone: nothing happens
    assert pool.node("gpu-a100-1") is None and pool.total_gpus() == 20
    pool.taint("gpu-a100-2", "example.com/maintenance", "NoExecute")
    pool.taint("gpu-a100-2", "example.com/maintenance", "NoExecute")
    pool.taint("gpu-a100-2", "nvidia.com/gpu", "NoSchedule")
    node = pool.node("gpu-a100-2")
    assert node is not None
    assert [(t["key"], t["effect"]) for t in node["spec"]["taints"]] == [
        ("example.com/maintenance", "NoExecute"),
        ("nvidia.com/gpu", "NoSchedule"),
    ]
    pool.untaint("gpu-a100-2")
    node = pool.node("gpu-a100-2")
    assert node is not None and not node["spec"].get("taints")


# -- the scheduling invariants ---------------------------------------------------------------------


def test_a_converged_cluster_world_breaks_no_invariant_with_or_without_a_gpu_shortage() -> None:
    world = cluster_world(replicas=2)
    assert check(world.settle()) == {}
    assert ready(world)["status"] == "True"
    world.scale("llama", 3)  # the third replica fits no node
    assert check(world.settle()) == {}
    assert ready(world)["status"] == "False" and INSUFFICIENT_GPU in ready(world)["message"]


def test_ready_only_when_scheduled_sees_a_current_pod_left_pending() -> None:
    world = cluster_world()
    world.settle()
    (pod,) = pods(world)
    unscheduled = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "no node fits"}
    world.sim.api.patch_status(
        "Pod", NS, pod["metadata"]["name"], {"status": {"phase": "Pending", "conditions": [unscheduled]}}
    )
    broken = check(quiet(world), SCHEDULING)
    assert list(broken) == ["ready_only_when_scheduled"]
    assert "is unscheduled (no node fits)" in broken["ready_only_when_scheduled"][0]


def test_ready_only_when_scheduled_sees_fewer_pods_than_replicas() -> None:
    world = cluster_world()
    world.settle()
    (pod,) = pods(world)
    world.sim.api.delete("Pod", NS, pod["metadata"]["name"], grace_period_seconds=0)
    assert check(quiet(world), SCHEDULING) == {
        "ready_only_when_scheduled": [
            "default/llama says Ready=True, but 0 pod(s) of the current template for 1 replicas"
        ]
    }


def shortage_world() -> World:
    world = cluster_world(replicas=3)
    world.settle()
    return world


def overwrite(world: World, kind: str, *, message: str, reason: str | None = None) -> None:
    """Plant ``message`` (and ``reason``) in the InferenceService's ``kind`` condition."""
    obj = world.isvc("llama")
    assert obj is not None
    condition = next(c for c in obj["status"]["conditions"] if c["type"] == kind)
    condition.update(message=message, **({"reason": reason} if reason else {}))
    world.sim.api.update_status(obj)


def test_gpu_shortage_explained_sees_a_ready_message_without_the_schedulers_words() -> None:
    world = shortage_world()
    overwrite(world, "Ready", message="waiting")
    broken = check(quiet(world), SCHEDULING)
    assert list(broken) == ["gpu_shortage_explained"]
    (violation,) = broken["gpu_shortage_explained"]
    assert "1 pod(s) Pending for lack of GPUs" in violation
    assert "Ready does not say 'Insufficient nvidia.com/gpu' (message 'waiting')" in violation


def test_gpu_shortage_explained_reads_deployment_ready_when_ready_explains_another_problem() -> None:
    world = shortage_world()
    overwrite(world, "Ready", message="a refused write comes first", reason="Planted")
    assert check(quiet(world), SCHEDULING) == {}  # DeploymentReady still carries the words
    overwrite(world, "DeploymentReady", message="rolling out")
    (violation,) = check(quiet(world), SCHEDULING)["gpu_shortage_explained"]
    assert "DeploymentReady does not say 'Insufficient nvidia.com/gpu'" in violation


def test_a_shortage_with_ready_true_is_caught_by_both() -> None:
    world = shortage_world()
    overwrite(world, "Ready", message="all good", reason="Ready")
    obj = world.isvc("llama")
    assert obj is not None
    next(c for c in obj["status"]["conditions"] if c["type"] == "Ready")["status"] = "True"
    world.sim.api.update_status(obj)
    assert set(check(quiet(world), SCHEDULING)) == SCHEDULING


def test_status_must_carry_the_schedulers_words_for_now() -> None:
    assert shortage_words(gpu_per_replica=8, gpus_free=3) == ("Insufficient nvidia.com/gpu",)


def test_free_gpus_are_counted_on_the_nodes_a_pod_may_use() -> None:
    world = cluster_world(replicas=1, gpu=3, nodeSelector={"gpu": "a100"})
    world.settle()
    sim = world.sim
    assert gpus_free_for(sim, {"nodeSelector": {"gpu": "a100"}}) == 13  # 16 minus the 3 held
    assert gpus_free_for(sim, {"nodeSelector": {"gpu": "h100", "zone": "a"}}) == 4
    world.nodes.taint("gpu-h100-1", "nvidia.com/gpu", "NoSchedule")
    assert gpus_free_for(sim, {"nodeSelector": {"gpu": "h100"}}) == 0
    tolerating = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert gpus_free_for(sim, {"nodeSelector": {"gpu": "h100"}, "tolerations": tolerating}) == 4


# -- the machine's composite actions ----------------------------------------------------------------


def test_a_rollout_on_a_full_pool_leaves_the_new_pod_waiting_for_gpus_and_says_so() -> None:
    state = ClusterExplorer()
    state.create(name="llama", spec={**SPEC, "gpu": 2})
    state.full_pool_rollout(name="llama")
    state.settle()
    obj = state.world.isvc("llama")
    assert obj is not None and obj["spec"]["gpu"] == 8 and obj["spec"]["image"] == "vllm/vllm-openai:v0.7.0"
    assert INSUFFICIENT_GPU in ready(state.world)["message"]
    state.teardown()


def test_a_scale_past_capacity_leaves_a_replica_pending() -> None:
    state = ClusterExplorer()
    state.create(name="llama", spec={**SPEC, "gpu": 4})
    state.scale_beyond_capacity(name="llama")
    state.settle()
    obj = state.world.isvc("llama")
    assert obj is not None and obj["spec"]["replicas"] == 20 // 4 + 1
    pending = [p for p in pods(state.world) if not p["spec"].get("nodeName")]
    assert len(pending) == 1 and ready(state.world)["status"] == "False"
    state.teardown()


# -- a bounded run ----------------------------------------------------------------------------------


def test_a_bounded_exploration_of_the_cluster_keeps_every_enforced_invariant() -> None:
    finding, observed = explore(
        ENFORCED_INVARIANTS, seed=0, examples=CLUSTER_EXAMPLES, steps=CLUSTER_STEPS, machine=CIClusterExplorer
    )
    if finding is not None:
        pytest.fail(f"{finding.error}\n\nminimal sequence, ready to paste:\n{finding.as_test()}", pytrace=False)
    assert set(observed) <= INVARIANTS.keys()


def test_the_cluster_explorer_starts_on_the_layout_with_a_gpu_server() -> None:
    state = ClusterExplorer()
    state.create(name="llama", spec=SPEC)
    assert [n["metadata"]["name"] for n in state.world.sim.api.list("Node")] == [s.name for s in LAYOUT]
    assert state.world.sim.api.list(KIND)[0]["spec"]["gpu"] == 8
    state.teardown()


# -- regressions: the cluster explorer's findings ---------------------------------------------------


def test_a_node_joining_a_full_pool_leaves_nothing_to_write_once_settled() -> None:
    # A node without GPUs joins a full pool: the pending pods' message goes from "0/3 nodes" to
    # "0/4 nodes" and no Deployment moves; before the rollout step's own look at stalled pods,
    # status kept the old words until a resync after the pod recheck, so one more pass wrote.
    state = ClusterExplorer(invariants={"zero_writes_when_converged"})
    gpu1 = {"model": SPEC["model"], "image": SPEC["image"], "replicas": 0, "gpu": 1, "progressDeadlineSeconds": 60}
    state.create(name="llama", spec=gpu1)
    state.full_pool_rollout(name="llama")
    state.apply(name="mistral", spec=gpu1)
    state.add_node(node="gpu-a100-1")
    state.settle()
    state.add_node(node="cpu-1")
    state.scale_beyond_capacity(name="mistral")
    state.teardown()


def test_a_full_pool_rollout_over_a_lost_delete_lets_the_cache_catch_up_first() -> None:
    # Created and deleted before the operator saw it, the DELETED event lost: the cache kept an
    # InferenceService without a finalizer that the server no longer has. Each pass re-applied
    # its children, the garbage collector removed them (their owner is gone) and each removal
    # woke the operator again: over a 60 s run to fill the pool, 990 passes. The fill now
    # settles, which re-lists the stale cache first.
    state = ClusterExplorer(invariants={"no_hot_loop"})
    state.create(name="llama", spec={**SPEC, "gpu": 1})
    state.delete(name="llama")
    state.informer(kind="InferenceService", what="drop_last")
    assert state.world.isvc("llama") is None
    state.full_pool_rollout(name="mistral")
    state.teardown()


def test_repeated_full_pool_rollouts_over_a_child_conflict_are_no_hot_loop() -> None:
    # The Service's writes conflict for good; another actor's owner reference keeps the
    # Deployment of the deleted llama, which the new one cannot take (ChildConflict). Both
    # retry with backoff; each fill used to let 60 s pass inside one settle window, and four
    # fills added up past the reconcile bound. A fill now settles.
    state = ClusterExplorer(invariants={"no_hot_loop"})
    state.api_fault(applied=False, error="conflict", kind="Service", times=None, verb=None)
    state.full_pool_rollout(name="llama")
    state.full_pool_rollout(name="llama")
    state.foreign_edit(edit="owner_reference", kind="Deployment", name="llama")
    state.delete(name="llama")
    state.full_pool_rollout(name="llama")
    state.full_pool_rollout(name="llama")
    state.teardown()


def test_a_node_removed_under_pending_pods_leaves_nothing_to_write_once_settled() -> None:
    # Found by the cluster explorer with rollouts (seed 2): llama's five pods wait for GPUs,
    # "0/2 nodes are available"; a node goes and the scheduler's words become "0/1 nodes", but
    # the Deployment's status does not move, so the operator kept its diagnosis for 1,800 s.
    # The settle runs 2,400 fake seconds, past that, and one more pass wrote the new words. The
    # new words now wake the service and end the diagnosis at once, within the first settle.
    state = ClusterExplorer(invariants={"zero_writes_when_converged"})
    state.create(name="7b", spec={**SPEC, "replicas": 2, "gpu": 5})
    state.full_pool_rollout_with(gpu=4, name="llama", rollout={"strategy": "Auto"})
    state.remove_node(node="gpu-h100-1")
    state.full_pool_rollout_with(gpu=4, name="mistral", rollout={"strategy": "Auto"})
    state.remove_node(node="gpu-a100-1")
    state.teardown()
