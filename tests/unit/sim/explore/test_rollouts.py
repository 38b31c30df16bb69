"""The explorer's rollout invariants and actions, on the simulated cluster of GPU nodes.

Covers:
- The counts the invariants make themselves: maxUnavailable resolved as the Deployment
  controller does (percentages round down, Replace takes at least 1, Auto's 0 stays 0); the
  room on the nodes a pod may use, the object's own pods counted or not.
- never_more_unavailable_than_allowed: a Replace rollout on a full pool keeps the bound at
  every step; a broken plan (a Deployment whose maxUnavailable lets every old pod go at once)
  breaks it, seen mid-flight; a drain in the middle closes the window, and a window does not
  open on an object already below its bound.
- auto_completes_with_capacity: an Auto rollout with room ends Ready and keeps it; a status
  doctored to Ready=False with room for the replicas breaks it; without room it says nothing.
- stall_explained_with_numbers: a Surge stall's RolloutBlocked message carries the replicas,
  the GPUs per replica and the GPUs free; one doctored to drop the numbers breaks it, naming
  what is missing; an unfinished Auto rollout whose status says Ready=True breaks it; a
  rollout the maxUnavailable bound holds (a scale-up with a template change) is RolloutBlocked
  naming the bound, the replicas it keeps and the way out, and a status that does not name it
  breaks it.
- Regressions: the rollout invariants' findings, as the minimal sequences the explorer printed.
- The new actions: fill takes a node's free GPUs with another workload's pod, release gives
  them back; cordon, uncordon, drain; a drain, a removal and a NoExecute taint tell the watch.
"""

from __future__ import annotations

from typing import Any

from inference_operator.api.constants import DEPLOYMENT
from inference_operator.api.models import InferenceService
from inference_operator.api.samples import make_inference_service
from inference_operator.sim.explore import World
from inference_operator.sim.explore.capacity import LAYOUT
from inference_operator.sim.explore.capacitymachine import ClusterExplorer
from inference_operator.sim.explore.invariants import check
from inference_operator.sim.explore.isvcs import isvcs
from inference_operator.sim.explore.rollouts import allowed_unavailable, room_for

from .worlds import SPEC as BASE_SPEC
from .worlds import quiet

Obj = dict[str, Any]
NS = "default"
ROLLOUT = frozenset(
    {"auto_completes_with_capacity", "never_more_unavailable_than_allowed", "stall_explained_with_numbers"}
)
OTHER_IMAGE = "vllm/vllm-openai:v0.7.0"


def world_with(**spec: Any) -> World:
    world = World(node_layout=LAYOUT, watch_rollouts=True)
    world.apply("llama", {**BASE_SPEC, "gpu": 4, **spec})
    return world


def isvc(world: World) -> Obj:
    obj = world.isvc("llama")
    assert obj is not None
    return obj


def condition(world: World, kind: str) -> Obj:
    return next(c for c in isvc(world)["status"]["conditions"] if c["type"] == kind)


def parsed(rollout: Obj | None, replicas: int) -> InferenceService:
    obj = make_inference_service("llama", image="i", model="m", replicas=replicas)
    if rollout is not None:
        obj["spec"]["rollout"] = rollout
    return InferenceService.from_object(obj)


def doctor(world: World, kind: str, **fields: str) -> None:
    """Overwrite fields of the InferenceService's ``kind`` condition, as a broken operator would."""
    obj = isvc(world)
    next(c for c in obj["status"]["conditions"] if c["type"] == kind).update(fields)
    world.sim.api.update_status(obj)


# -- the counts ------------------------------------------------------------------------------------


def test_max_unavailable_is_resolved_as_the_deployment_controller_rounds_it() -> None:
    assert allowed_unavailable(parsed(None, 4)) == 1
    assert allowed_unavailable(parsed({"strategy": "Auto"}, 4)) == 1
    assert allowed_unavailable(parsed({"strategy": "Auto", "maxUnavailable": "50%"}, 3)) == 1  # 1.5 rounds down
    assert allowed_unavailable(parsed({"strategy": "Auto", "maxUnavailable": "25%"}, 3)) == 0
    assert allowed_unavailable(parsed({"strategy": "Auto", "maxUnavailable": 0}, 3)) == 0
    assert allowed_unavailable(parsed({"strategy": "Replace", "maxUnavailable": "25%"}, 3)) == 1  # 0+0 takes 1
    assert allowed_unavailable(parsed({"strategy": "Replace", "maxUnavailable": 2}, 3)) == 2
    assert allowed_unavailable(parsed({"strategy": "Auto", "maxUnavailable": "100%"}, 3)) == 3


def test_room_leaves_out_the_objects_own_pods_unless_told_to_count_them() -> None:
    world = world_with(replicas=2, gpu=8)
    world.settle()  # both 8-GPU nodes held by llama; the 4-GPU node fits no 8-GPU replica
    (view,) = isvcs(world.sim)
    pod_spec = world.sim.api.list("Pod", NS)[0]["spec"]
    assert room_for(world.sim, view, pod_spec) == 2
    assert room_for(world.sim, view, pod_spec, own_held=True) == 0
    world.nodes.fill("gpu-h100-1")  # another workload's pod: counted either way
    world.settle()
    assert room_for(world.sim, view, {**pod_spec, "containers": [{"name": "x", "resources": {}}]}) >= 3


# -- never more unavailable than allowed -----------------------------------------------------------


def test_a_replace_rollout_on_a_full_pool_keeps_the_bound_at_every_step() -> None:
    world = world_with(replicas=5, rollout={"strategy": "Replace", "maxUnavailable": 1})
    assert check(world.settle(), ROLLOUT) == {}
    world.edit("llama", "image", OTHER_IMAGE)
    assert check(world.settle(), ROLLOUT) == {}
    assert condition(world, "Ready")["status"] == "True"


def break_the_plan(world: World) -> None:
    """What a broken plan would write: the new template with maxUnavailable 100%."""
    deployment = world.sim.get(DEPLOYMENT, NS, "llama")
    assert deployment is not None
    deployment["spec"]["strategy"] = {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": 0, "maxUnavailable": "100%"},
    }
    deployment["spec"]["template"]["spec"]["containers"][0]["image"] = OTHER_IMAGE
    world.sim.api.update(deployment)


def test_a_broken_plan_that_lets_every_old_pod_go_at_once_breaks_the_bound_mid_flight() -> None:
    world = world_with(replicas=3, rollout={"strategy": "Replace", "maxUnavailable": 1})
    assert check(world.settle(), ROLLOUT) == {}
    break_the_plan(world)
    world.run(5)
    broken = check(world.settle(), ROLLOUT)
    assert list(broken) == ["never_more_unavailable_than_allowed"]
    (violation,) = broken["never_more_unavailable_than_allowed"]
    assert "default/llama (generation 1, Replace) had 0 pod(s) available" in violation
    assert "below spec.replicas 3 - maxUnavailable 1" in violation


def test_a_drain_closes_the_window_until_the_cluster_settles() -> None:
    world = world_with(replicas=3, rollout={"strategy": "Replace", "maxUnavailable": 1})
    world.settle()
    world.nodes.drain("gpu-a100-1")  # pods lost to the drain are not the rollout's doing
    break_the_plan(world)
    world.run(5)
    assert check(world.settle(), ROLLOUT) == {}
    assert world.availability.disturbed == ""  # settled: the next rollout is watched again


def test_no_window_opens_on_an_object_already_below_its_bound() -> None:
    world = world_with(replicas=3, rollout={"strategy": "Replace", "maxUnavailable": 1})
    world.run(3)  # created, no pod ready yet: 0 available, the bound is 2
    assert world.availability.violations == []


def test_removing_a_node_and_a_no_execute_taint_tell_the_watch() -> None:
    world = world_with()
    world.nodes.taint("gpu-a100-1", "example.com/maintenance", "NoSchedule")
    assert world.availability.disturbed == ""
    world.nodes.taint("gpu-a100-1", "example.com/maintenance", "NoExecute")
    assert world.availability.disturbed == "node gpu-a100-1 tainted example.com/maintenance:NoExecute"
    world.settle()
    world.nodes.remove("gpu-a100-2")
    assert world.availability.disturbed == "node gpu-a100-2 removed"


# -- an Auto rollout with room completes -------------------------------------------------------------


def test_an_auto_rollout_with_room_ends_ready() -> None:
    world = world_with(replicas=3, rollout={"strategy": "Auto"})
    world.settle()
    world.edit("llama", "image", OTHER_IMAGE)
    assert check(world.settle(), ROLLOUT) == {}
    assert condition(world, "Ready")["status"] == "True"


def test_auto_completes_with_capacity_sees_a_status_that_is_not_ready_with_room() -> None:
    world = world_with(replicas=3, rollout={"strategy": "Auto"})
    world.settle()
    doctor(world, "Ready", status="False", reason="Planted", message="not yet")
    broken = check(quiet(world), ROLLOUT)
    assert list(broken) == ["auto_completes_with_capacity"]
    (violation,) = broken["auto_completes_with_capacity"]
    assert "default/llama has room for 5 replica(s) (spec.replicas 3), but is not Ready on generation 1" in violation


def test_a_finished_rollout_on_a_full_pool_has_no_excuse_for_a_status_that_is_not_ready() -> None:
    world = world_with(replicas=2, gpu=8, rollout={"strategy": "Auto"})  # both 8-GPU nodes held
    world.settle()
    doctor(world, "Ready", status="False", reason="Planted", message="not yet")
    (violation,) = check(quiet(world), ROLLOUT)["auto_completes_with_capacity"]
    assert "has room for 2 replica(s) (spec.replicas 2)" in violation


def bound_holds() -> ClusterExplorer:
    """Two 8-GPU replicas become five of 4 GPUs, maxUnavailable 1: the Deployment controller
    scales the old ReplicaSet up first, its third 8-GPU pod fits nowhere, and with 3 of 5
    available no old pod may stop (the bound keeps 4) while no new pod fits: there is room for
    five 4-GPU replicas, but only by going below the bound."""
    state = ClusterExplorer(invariants=ROLLOUT)
    state.create(name="llama", spec={**BASE_SPEC, "replicas": 2, "gpu": 8, "rollout": {"strategy": "Auto"}})
    state.settle()
    state.full_pool_rollout_with(name="llama", rollout={"strategy": "Auto", "maxUnavailable": 1}, gpu=4)
    state.settle()
    return state


def test_a_rollout_the_bound_holds_is_asked_to_explain_not_to_finish() -> None:
    state = bound_holds()
    ready = condition(state.world, "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "RolloutBlocked")
    assert (
        "3 ready; maxUnavailable 1 keeps at least 4 of 5 replicas serving and only 3 are available" in ready["message"]
    )
    assert "0 nvidia.com/gpu free on the 3 nodes it may run on, 4 needed on one node" in ready["message"]
    assert ready["message"].endswith(
        "raise spec.rollout.maxUnavailable to 3 or more, or free 4 nvidia.com/gpu on one of those nodes"
    )
    state.teardown()


def test_a_rollout_the_bound_holds_that_does_not_name_it_breaks_it() -> None:
    state = bound_holds()
    message = "rollout made no progress for 60s, 3 of 5 replicas ready: 2 pod(s) cannot be scheduled"
    doctor(state.world, "Ready", reason="ProgressDeadlineExceeded", message=message)
    (violation,) = check(quiet(state.world), ROLLOUT)["stall_explained_with_numbers"]
    assert violation.startswith("default/llama's rollout is held by maxUnavailable (no old pod may stop below 4")
    state.teardown()


def test_auto_completes_with_capacity_asks_nothing_without_room() -> None:
    world = world_with(replicas=6, rollout={"strategy": "Auto"})  # 20 GPUs hold 5 of 4 GPUs
    world.settle()
    assert condition(world, "Ready")["status"] == "False"
    assert "auto_completes_with_capacity" not in check(quiet(world), ROLLOUT)


# -- a stalled rollout is explained with numbers ------------------------------------------------------


def surge_stall() -> World:
    """Two 8-GPU replicas on the two 8-GPU nodes, the default strategy set, an image change."""
    world = world_with(replicas=2, gpu=8, rollout={"strategy": "Surge"})
    world.settle()
    world.edit("llama", "image", OTHER_IMAGE)
    world.settle()
    return world


def test_a_surge_stall_says_the_replicas_the_gpus_per_replica_and_the_gpus_free() -> None:
    world = surge_stall()
    ready = condition(world, "Ready")
    assert ready["reason"] == "RolloutBlocked"
    assert "1 of 2 replicas updated" in ready["message"]
    assert "4 nvidia.com/gpu free on the 3 nodes it may run on, 8 needed on one node" in ready["message"]
    assert check(quiet(world), ROLLOUT) == {}


def test_a_rollout_blocked_message_without_the_numbers_breaks_it() -> None:
    world = surge_stall()
    doctor(world, "DeploymentReady", message="rollout stalled: old pods hold the GPUs")
    broken = check(quiet(world), ROLLOUT)
    assert list(broken) == ["stall_explained_with_numbers"]
    (violation,) = broken["stall_explained_with_numbers"]
    assert violation.startswith(
        "default/llama's DeploymentReady is RolloutBlocked without spec.replicas (2), nvidia.com/gpu per replica "
        "(8), free GPUs (4)"
    )


def test_an_unfinished_auto_rollout_that_says_ready_breaks_it() -> None:
    world = world_with(replicas=2, gpu=8, rollout={"strategy": "Auto", "maxUnavailable": 0})
    world.settle()
    world.edit("llama", "image", OTHER_IMAGE)  # no room to surge, none may go: blocked
    world.settle()
    assert condition(world, "Ready")["reason"] == "RolloutBlocked"
    assert check(quiet(world), ROLLOUT) == {}
    doctor(world, "Ready", status="True", reason="Ready", message="all good")
    unfinished, held = check(quiet(world), ROLLOUT)["stall_explained_with_numbers"]
    assert unfinished.startswith("default/llama's Auto rollout has not finished, but Ready=True/Ready")
    assert held.startswith("default/llama's rollout is held by maxUnavailable (no old pod may stop below 2")


# -- the actions --------------------------------------------------------------------------------------


def train_pods(world: World) -> dict[str, str]:
    """Another workload's pods: node -> GPUs asked for."""
    return {
        p["spec"].get("nodeName", "Pending"): p["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"]
        for p in world.sim.api.list("Pod", NS)
        if p["metadata"]["name"].startswith("train-")
    }


def test_a_fill_takes_the_free_gpus_of_a_node_and_a_release_gives_them_back() -> None:
    world = world_with(replicas=1, nodeSelector={"gpu": "a100"})
    world.settle()
    (pod,) = world.sim.api.list("Pod", NS)
    node = pod["spec"]["nodeName"]  # llama holds 4 of its 8 GPUs
    world.nodes.fill(node)
    world.nodes.fill(node)  # nothing left to take
    world.nodes.fill("gpu-h100-1")
    world.settle()
    assert train_pods(world) == {node: "4", "gpu-h100-1": "4"}
    world.nodes.release("gpu-h100-1")
    world.settle()
    assert train_pods(world) == {node: "4"}


def test_cordon_uncordon_and_drain() -> None:
    world = world_with(replicas=1, gpu=8, nodeSelector={"gpu": "a100"})
    world.settle()
    (pod,) = world.sim.api.list("Pod", NS)
    node = pod["spec"]["nodeName"]
    world.nodes.cordon(node)
    assert (world.nodes.node(node) or {})["spec"]["unschedulable"] is True
    world.nodes.uncordon(node)
    assert "unschedulable" not in (world.nodes.node(node) or {})["spec"]
    world.nodes.drain(node)
    assert world.availability.disturbed == f"node {node} drained"
    world.settle()
    (moved,) = world.sim.api.list("Pod", NS)
    assert moved["spec"]["nodeName"] != node and condition(world, "Ready")["status"] == "True"


# -- regressions: the rollout invariants' findings -----------------------------------------------------


def test_a_replica_no_uncordoned_node_can_hold_is_explained_by_its_largest_node_not_by_old_pods() -> None:
    # The 8-GPU nodes cordoned, an Auto maxUnavailable 0 service moved from 4 to 8 GPUs per
    # replica: its new pods could never be placed, yet status blamed the old pods holding GPUs
    # ("waiting for nvidia.com/gpu to free"), with no number of the node that is too small.
    state = ClusterExplorer(invariants={"stall_explained_with_numbers"})
    state.create(
        name="llama",
        spec={
            "image": "vllm/vllm-openai:v0.6.3",
            "model": "meta-llama/Llama-3.1-8B-Instruct",
            "replicas": 0,
            "gpu": 0,
            "progressDeadlineSeconds": 60,
        },
    )
    state.cordon_node(node="gpu-a100-1")
    state.cordon_node(node="gpu-a100-2")
    state.full_pool_rollout_with(gpu=4, name="llama", rollout={"strategy": "Auto", "maxUnavailable": 0})
    state.full_pool_rollout(name="llama")
    state.teardown()
    assert "the largest node the 1 node it may run on has 4" in condition(state.world, "Ready")["message"]
