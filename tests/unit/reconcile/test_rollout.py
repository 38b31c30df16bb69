"""The rollout plan and the count of free capacity, as pure functions.

Covers: maxSurge/maxUnavailable resolved as the Deployment controller resolves them; an unset
``spec.rollout`` writes nothing; Replace never surges; Auto surges as many replicas as fit node
by node (a replica's GPUs on one node), replaces the rest within maxUnavailable, waits and says
so when maxUnavailable is 0 and nothing fits, and says when a replica can never be scheduled;
a plan is kept for the template it was made for and re-made for a new one, and an Auto plan for
a new maxUnavailable too (one that did not record it is kept); a stall switches
Auto to replacing, and a stalled rollout says how many GPUs are free, or, where no node it may
use could hold a replica any more, says that instead of waiting or replacing; Replace, and an
Auto plan that replaces, say so too once a new pod is stalled or left unplaced (the old pod it
replaced still terminating, or none left), counting only then, and keep the scheduler's words
where Nodes cannot be read; a terminating pod or a replica too big for every node is no stall;
a new pod left unplaced is one of the newest template the scheduler could not place, looked for
only while a Deployment rolls out a template it was not created with; the count
honours node selectors, taints, cordons and readiness, and ignores finished pods.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from inference_operator.api.models import InferenceService
from inference_operator.api.samples import make_inference_service
from inference_operator.reconcile.builders import pod_template
from inference_operator.reconcile.capacity import UNKNOWN, Capacity, count_capacity
from inference_operator.reconcile.rollout import ANNOTATION, plan_rollout, resolve, template_digest
from inference_operator.reconcile.rolloutpods import Stall, detect_stall, new_pod_unplaced, rolling_out
from inference_operator.sim.cluster.nodes import NodeShape, build_node

Obj = dict[str, Any]
FULL = "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."


def service(*, replicas: int = 4, gpu: int = 1, rollout: Obj | None = None, **spec: Any) -> InferenceService:
    obj = make_inference_service("llama", image="vllm:0.7.0", model="m", replicas=replicas, gpu=gpu, **spec)
    if rollout is not None:
        obj["spec"]["rollout"] = rollout
    obj["metadata"]["uid"] = "u1"
    return InferenceService.from_object(obj)


def room(fits: int, *, free: int | None = None, nodes: int = 2, largest: int = 8) -> Capacity:
    return Capacity(known=True, fits=fits, free_gpus=fits if free is None else free, nodes=nodes, largest=largest)


def live_with(plan_record: Obj | None, *, total: int = 4, updated: int = 0) -> Obj:
    meta: Obj = {"name": "llama", "namespace": "default", "generation": 2}
    if plan_record is not None:
        meta["annotations"] = {ANNOTATION: json.dumps(plan_record)}
    return {"metadata": meta, "status": {"observedGeneration": 2, "replicas": total, "updatedReplicas": updated}}


def plan(
    isvc: InferenceService,
    *,
    capacity: Capacity = UNKNOWN,
    live: Obj | None = None,
    stall: Stall | None = None,
    unplaced: bool = False,
):
    if live is None:
        live = live_with(None)
    return plan_rollout(
        isvc, template=pod_template(isvc), live=live, capacity=lambda: capacity, stall=stall, unplaced=unplaced
    )


def pending(
    message: str = FULL, *, bound: str | None = None, deleting: bool = False, template: str = "new", created: str = ""
) -> Obj:
    """A pod of the service: of the ``template`` (pod-template-hash) created at ``created``."""
    created = created or ("2026-01-01T00:01:00Z" if template == "new" else "2026-01-01T00:00:00Z")
    meta = {"name": "p", "labels": {"pod-template-hash": template}, "creationTimestamp": created}
    pod: Obj = {"metadata": meta, "spec": {}, "status": {"phase": "Pending"}}
    if bound:
        pod["spec"]["nodeName"] = bound
        pod["status"] = {"phase": "Running"}
    else:
        pod["status"]["conditions"] = [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}
        ]
    if deleting:
        pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return pod


@pytest.mark.parametrize(
    ("surge", "unavailable", "replicas", "expected"),
    [
        (None, None, 4, (1, 1)),
        (None, None, 2, (1, 0)),  # 25% of 2: surge rounds up, unavailable down
        ("50%", "50%", 3, (2, 1)),
        (0, "10%", 4, (0, 1)),  # both 0: one may be unavailable, as the controller decides
        (3, 0, 4, (3, 0)),
    ],
)
def test_counts_resolve_as_the_deployment_controller_resolves_them(surge, unavailable, replicas, expected) -> None:
    assert resolve(surge, unavailable, replicas) == expected


def test_an_unset_rollout_writes_no_strategy_and_no_annotation() -> None:
    p = plan(service())
    assert not p.written and p.deployment_strategy() is None


def test_replace_never_surges_and_takes_the_allowed_number_at_a_time() -> None:
    p = plan(service(rollout={"strategy": "Replace", "maxUnavailable": 2}))
    assert p.deployment_strategy() == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 2}}
    assert p.status(4)["maxUnavailable"] == 2 and "replacing 2 replica(s) at a time" in p.message


def test_auto_surges_all_replicas_when_they_all_fit() -> None:
    p = plan(service(rollout={"strategy": "Auto"}), capacity=room(4))
    assert (p.max_surge, p.max_unavailable, p.plan) == (4, 0, "Surge")
    assert p.message.startswith("surging all 4 replica(s): 4 nvidia.com/gpu free on the 2 nodes it may run on")


def test_auto_surges_what_fits_and_replaces_the_rest_within_max_unavailable() -> None:
    p = plan(service(rollout={"strategy": "Auto"}), capacity=room(2))
    assert (p.max_surge, p.max_unavailable, p.plan) == (2, 1, "Surge 2 + Replace")
    assert "surging 2 of 4 replicas" in p.message and "replacing the other 2, 1 at a time" in p.message


def test_auto_replaces_when_nothing_fits() -> None:
    p = plan(service(rollout={"strategy": "Auto"}), capacity=room(0))
    assert (p.max_surge, p.max_unavailable, p.plan, p.blocked) == (0, 1, "Replace", "")


def test_auto_with_max_unavailable_zero_and_no_room_waits_and_says_so_with_numbers() -> None:
    p = plan(service(rollout={"strategy": "Auto", "maxUnavailable": 0}), capacity=room(0, free=3))
    assert (p.max_surge, p.max_unavailable) == (1, 0)  # a valid strategy that moves once room appears
    assert "no room for another replica (3 nvidia.com/gpu free" in p.blocked
    assert p.status(4)["plan"] == "Blocked"


def test_a_replica_larger_than_every_node_is_blocked_not_silent() -> None:
    p = plan(service(gpu=16, rollout={"strategy": "Auto"}), capacity=room(0, largest=8))
    assert "it needs 16 nvidia.com/gpu on one node and the largest node" in p.blocked and "has 8" in p.blocked


def test_auto_without_readable_nodes_surges_one_and_says_why() -> None:
    p = plan(service(rollout={"strategy": "Auto"}), capacity=UNKNOWN)
    assert p.max_surge == 1 and "Nodes cannot be read" in p.message


def test_a_plan_is_kept_for_its_template_and_made_anew_for_another() -> None:
    isvc = service(rollout={"strategy": "Auto"})
    record = {"template": template_digest(pod_template(isvc)), "plan": "Surge 2 + Replace", "maxSurge": 2}
    record |= {"maxUnavailable": 1, "message": "kept"}
    calls: list[int] = []

    def counted() -> Capacity:
        calls.append(1)
        return room(4)

    kept = plan_rollout(isvc, template=pod_template(isvc), live=live_with(record), capacity=counted, stall=None)
    assert (kept.max_surge, kept.message, calls) == (2, "kept", [])
    record["template"] = "another"
    fresh = plan_rollout(isvc, template=pod_template(isvc), live=live_with(record), capacity=counted, stall=None)
    assert (fresh.max_surge, calls) == (4, [1])


def test_an_auto_plan_is_made_anew_for_a_new_max_unavailable() -> None:
    """Raising maxUnavailable is the way out of a rollout the bound holds: it must reach the Deployment."""
    isvc = service(rollout={"strategy": "Auto", "maxUnavailable": 3})
    record = {"template": template_digest(pod_template(isvc)), "plan": "Replace", "maxSurge": 0, "maxUnavailable": 1}
    record |= {"message": "replacing 1 replica(s) at a time", "askedMaxUnavailable": 1}
    fresh = plan(isvc, capacity=room(0), live=live_with(record))
    assert (fresh.max_surge, fresh.max_unavailable, fresh.asked) == (0, 3, 3)
    assert fresh.message.startswith("replacing 3 replica(s) at a time: no room for another")
    assert plan(isvc, capacity=room(0), live=live_with(json.loads(fresh.annotation()))) == fresh  # kept from now on
    del record["askedMaxUnavailable"]  # a plan made before it was recorded is kept as it was
    assert plan(isvc, capacity=room(0), live=live_with(record)).max_unavailable == 1


def test_a_stall_switches_auto_to_replacing_once() -> None:
    isvc = service(rollout={"strategy": "Auto"})
    record = {"template": template_digest(pod_template(isvc)), "plan": "Surge", "maxSurge": 4, "maxUnavailable": 0}
    stall = Stall(1, FULL)
    switched = plan(isvc, live=live_with(record), stall=stall)
    assert switched.switched and (switched.max_surge, switched.max_unavailable) == (0, 1)
    assert switched.message.startswith("switched to replacing 1 replica(s) at a time: 1 new pod(s) cannot be scheduled")
    again = plan(isvc, live=live_with(json.loads(switched.annotation())), stall=stall)
    assert not again.switched and again.max_surge == 0


def test_a_surge_stall_is_blocked_and_names_the_way_out() -> None:
    p = plan(service(), stall=Stall(1, FULL))
    assert p.blocked.startswith("rollout stalled: 1 new pod(s) cannot be scheduled, each needs 1 nvidia.com/gpu")
    assert p.blocked.endswith("set spec.rollout.strategy to Replace or Auto to stop old pods first")


def test_a_surge_stall_counts_the_gpus_free() -> None:
    p = plan(service(gpu=8), capacity=room(0, free=4, nodes=3), stall=Stall(1, FULL))
    assert "; 4 nvidia.com/gpu free on the 3 nodes it may run on, 8 needed on one node; set spec.rollout" in p.blocked


def test_a_stall_where_no_node_could_hold_a_replica_says_so_instead_of_replacing() -> None:
    # Found by the explorer: the 8-GPU nodes cordoned after the plan, an old 4-GPU pod on the
    # 4-GPU node: "old pods hold them" would send a person to stop pods that serve, for nothing.
    too_small = room(0, free=0, nodes=1, largest=4)
    surge = plan(service(gpu=8), capacity=too_small, stall=Stall(1, FULL))
    assert surge.blocked.startswith("a replica can never be scheduled: it needs 8 nvidia.com/gpu on one node")
    for unavailable in (0, 1):
        isvc = service(gpu=8, rollout={"strategy": "Auto", "maxUnavailable": unavailable})
        record = {"template": template_digest(pod_template(isvc)), "plan": "Surge 1", "maxSurge": 1}
        auto = plan(isvc, capacity=too_small, live=live_with(record), stall=Stall(1, FULL))
        assert not auto.switched and auto.max_surge == 1
        assert auto.blocked.endswith("the largest node the 1 node it may run on has 4")


def test_replace_stalled_by_a_replica_larger_than_every_node_is_blocked_with_its_numbers() -> None:
    # Two replicas of 8 GPUs on two 8-GPU nodes become 16 GPUs each: Replace stops one old
    # pod, its successor can never be scheduled, and the other old pod holds its GPUs.
    p = plan(service(replicas=2, gpu=16, rollout={"strategy": "Replace"}), capacity=room(0), stall=Stall(1, FULL))
    assert p.blocked == (
        "a replica can never be scheduled: it needs 16 nvidia.com/gpu on one node and the largest node "
        "the 2 nodes it may run on has 8"
    )
    assert p.status(2)["plan"] == "Blocked" and p.status(2)["message"] == p.blocked
    assert p.deployment_strategy() == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}


def test_replace_with_a_new_pod_left_unplaced_and_no_stall_is_blocked_too() -> None:
    """No stall while the old pod it replaced still terminates, nor once no old pod is left
    (one replica, or maxUnavailable as large as spec.replicas): the pod left unplaced is enough."""
    isvc = service(replicas=1, gpu=8, rollout={"strategy": "Replace"}, nodeSelector={"gpu": "h100"})
    p = plan(isvc, capacity=room(0, nodes=1, largest=4), unplaced=True)
    assert p.blocked.endswith(
        "it needs 8 nvidia.com/gpu on one node and the largest node the 1 node it may run on has 4"
    )
    none = plan(isvc, capacity=Capacity(known=True, selector="gpu=h100"), unplaced=True)
    assert none.blocked.startswith("no node can run a replica")


def test_replace_counts_capacity_only_for_a_pod_that_waits_and_blocks_only_a_replica_no_node_holds() -> None:
    calls: list[int] = []

    def counted() -> Capacity:
        calls.append(1)
        return room(0, largest=8)

    isvc = service(replicas=2, gpu=8, rollout={"strategy": "Replace"})
    quiet = plan_rollout(isvc, template=pod_template(isvc), live=live_with(None), capacity=counted, stall=None)
    assert (quiet.blocked, calls) == ("", [])  # a converged or moving rollout counts nothing
    fits = plan_rollout(
        isvc, template=pod_template(isvc), live=live_with(None), capacity=counted, stall=None, unplaced=True
    )
    assert (fits.blocked, calls) == ("", [1])  # an 8-GPU node exists: the pod waits for GPUs to free


def test_replace_where_nodes_cannot_be_read_keeps_the_schedulers_words() -> None:
    p = plan(service(replicas=2, gpu=16, rollout={"strategy": "Replace"}), capacity=UNKNOWN, stall=Stall(1, FULL))
    assert p.blocked == "" and p.status(2)["plan"] == "Replace"


def test_an_auto_plan_that_replaces_is_blocked_when_no_node_could_hold_a_replica_any_more() -> None:
    """The plan counted room; nodes were cordoned or tainted since, and the new pod waits."""
    isvc = service(gpu=8, rollout={"strategy": "Auto"})
    record = {"template": template_digest(pod_template(isvc)), "plan": "Replace", "maxSurge": 0, "maxUnavailable": 1}
    too_small = room(0, free=0, nodes=1, largest=4)
    for stall, unplaced in ((Stall(1, FULL), False), (None, True)):
        p = plan(isvc, capacity=too_small, live=live_with(record), stall=stall, unplaced=unplaced)
        assert not p.switched and p.max_surge == 0
        assert p.blocked.endswith("the largest node the 1 node it may run on has 4")
    assert plan(isvc, capacity=room(0), live=live_with(record), unplaced=True).blocked == ""


def test_a_new_pod_left_unplaced_is_one_of_the_newest_template() -> None:
    assert new_pod_unplaced([pending(), pending(bound="n1", template="old")])
    assert new_pod_unplaced([pending("0/2 nodes are available: 2 node(s) didn't match Pod's node selector.")])
    assert not new_pod_unplaced([pending(template="old"), pending(bound="n1")])  # the old one waits
    assert not new_pod_unplaced([pending(bound="n1"), pending(bound="n2", template="old")])
    assert not new_pod_unplaced([pending(deleting=True), pending(bound="n1", template="old")])
    assert not new_pod_unplaced([])


def test_a_rollout_is_a_template_change_the_deployment_has_not_completed() -> None:
    def deployment(revision: str, reason: str) -> Obj:
        annotations = {"deployment.kubernetes.io/revision": revision} if revision else {}
        progressing = {"type": "Progressing", "status": "True", "reason": reason}
        return {"metadata": {"annotations": annotations}, "status": {"conditions": [progressing]}}

    assert rolling_out(deployment("2", "ReplicaSetUpdated"))
    assert rolling_out(deployment("3", "ProgressDeadlineExceeded"))
    assert not rolling_out(deployment("2", "NewReplicaSetAvailable"))  # completed: a pod lost since is no rollout
    assert not rolling_out(deployment("1", "ReplicaSetUpdated"))  # the first pods of a new Deployment
    assert not rolling_out(deployment("", "ReplicaSetUpdated")) and not rolling_out(None)


def test_a_stall_needs_old_pods_holding_gpus_and_none_terminating() -> None:
    old = pending(bound="n1", template="old")
    assert detect_stall(gpu=8, old_pods=1, pods=[pending(), old]) == Stall(1, FULL)
    assert detect_stall(gpu=8, old_pods=1, pods=[pending(), pending(bound="n1", template="old", deleting=True)]) is None
    assert detect_stall(gpu=8, old_pods=1, pods=[pending(), pending(template="old")]) is None  # nothing holds a GPU
    assert detect_stall(gpu=8, old_pods=0, pods=[pending(), old]) is None
    assert detect_stall(gpu=8, old_pods=1, pods=[pending("0/2 nodes: 2 Insufficient cpu."), old]) is None
    # The Deployment counts one old replica, the Pod cache (a stream of its own) still shows two
    # bound: an old pod's end not seen yet, its GPUs coming free. No stall, no switch.
    assert detect_stall(gpu=8, old_pods=1, pods=[pending(), old, pending(bound="n2", template="old")]) is None
    assert detect_stall(gpu=8, old_pods=2, pods=[pending(), old, pending(bound="n2", template="old")]) == Stall(1, FULL)


def test_a_finished_old_pod_holds_no_gpu_so_is_no_stall() -> None:
    """The real cluster's Pod cache leaves finished pods out; the simulator's holds them: the
    stall must read the same either way."""
    failed = pending(bound="n1", template="old")
    failed["status"] = {"phase": "Failed"}
    assert detect_stall(gpu=8, old_pods=1, pods=[pending(), failed]) is None
    assert detect_stall(gpu=8, old_pods=1, pods=[pending(), failed, pending(bound="n2", template="old")]) == Stall(
        1, FULL
    )


@pytest.mark.parametrize(("new_hash", "old_hash"), [("aaa", "zzz"), ("zzz", "aaa")])
def test_pods_created_in_the_same_second_as_the_old_ones_are_told_apart_by_image(new_hash: str, old_hash: str) -> None:
    """Creation times have a resolution of a second: kwok's pods are Ready at once, and the
    template change can come within the second the old pods were created."""
    same = "2026-01-01T00:00:00Z"
    new = pending(template=new_hash, created=same)
    new["spec"]["containers"] = [{"name": "server", "image": "vllm:0.7"}]
    old = pending(bound="n1", template=old_hash, created=same)
    old["spec"]["containers"] = [{"name": "server", "image": "vllm:0.6"}, {"name": "sidecar", "image": "proxy"}]
    assert detect_stall(gpu=8, old_pods=1, pods=[new, old], image="vllm:0.7") == Stall(1, FULL)


def test_an_old_pod_left_pending_while_a_new_one_runs_is_no_stall() -> None:
    """A replica too big for every node, replaced by one that fits: the pending pod is the old one."""
    assert detect_stall(gpu=1, old_pods=1, pods=[pending(template="old"), pending(bound="n1")]) is None


def test_the_newest_template_is_the_one_whose_pods_were_created_last() -> None:
    rollback = [
        pending(template="a", created="2026-01-01T00:05:00Z"),  # the old template's pods, re-created
        pending(bound="n1", template="b", created="2026-01-01T00:02:00Z"),
    ]
    assert detect_stall(gpu=8, old_pods=1, pods=rollback) == Stall(1, FULL)


def node(name: str, *, gpus: int = 8, **shape: Any) -> Obj:
    return build_node(NodeShape(name, gpus=gpus, **shape), now="2026-01-01T00:00:00Z")


def bound(node_name: str, gpus: int, *, phase: str = "Running") -> Obj:
    container = {"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}
    return {
        "metadata": {"name": f"on-{node_name}"},
        "spec": {"nodeName": node_name, "containers": [container]},
        "status": {"phase": phase},
    }


def test_capacity_is_counted_node_by_node() -> None:
    spec = pod_template(service(gpu=4))["spec"]
    nodes = [node("a"), node("b")]
    counted = count_capacity(spec, nodes=nodes, pods=[bound("a", 6), bound("b", 2)], limit=10)
    assert (counted.fits, counted.free_gpus, counted.nodes, counted.largest) == (1, 8, 2, 8)  # 2 + 6 free: one fits


def test_capacity_honours_selector_taints_cordons_readiness_and_ignores_finished_pods() -> None:
    spec = pod_template(service(gpu=8, nodeSelector={"pool": "h100"}))["spec"]
    nodes = [
        node("a", labels={"pool": "h100"}),
        node("b", labels={"pool": "a100"}),
        node("c", labels={"pool": "h100"}, taints=[{"key": "gpu", "value": "x", "effect": "NoSchedule"}]),
        node("d", labels={"pool": "h100"}, unschedulable=True),
        node("e", labels={"pool": "h100"}, ready=False),
    ]
    counted = count_capacity(spec, nodes=nodes, pods=[bound("a", 8, phase="Succeeded")], limit=10)
    assert (counted.fits, counted.nodes, counted.where) == (1, 1, "on the 1 node matching pool=h100")


def test_capacity_counts_no_further_than_asked() -> None:
    spec = pod_template(service(gpu=1))["spec"]
    assert count_capacity(spec, nodes=[node("a"), node("b")], pods=[], limit=3).fits == 3
