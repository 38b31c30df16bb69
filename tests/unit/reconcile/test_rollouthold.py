"""When the maxUnavailable bound holds a rollout, as pure functions.

Covers: a rollout below its bound, no new pod fitting, old pods holding the GPUs a new one
would need, is said to be held by maxUnavailable with the replicas, the bound, the GPUs free and
needed and the ways out (the number maxUnavailable must reach for an old pod to stop, a
percentage named with what it comes to), a scale-up's and a Replace's whose freed GPUs another
workload took alike; status says it as a blocked plan would, and the
Deployment's annotation does not carry it; nothing is counted while the Deployment's numbers or
the pods say the rollout can move (an old pod may stop, none is left, a pod stops or starts, no
new pod waits for GPUs, no old pod holds any, the Pod cache has not yet seen an old pod end that
the Deployment's numbers already count out); no hold where a new pod fits now, where none
would fit even without the old pods, or where Nodes cannot be read.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace
from typing import Any

from inference_operator.api.models import InferenceService
from inference_operator.api.samples import make_inference_service
from inference_operator.reconcile.capacity import UNKNOWN, Capacity
from inference_operator.reconcile.rollout import RolloutPlan
from inference_operator.reconcile.rollouthold import Count, held_by_bound
from inference_operator.reconcile.rolloutstep import blocked_condition
from inference_operator.reconcile.status import DeploymentView

Obj = dict[str, Any]
SHORT = "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."
FULL = Capacity(known=True, fits=0, free_gpus=0, nodes=3, largest=8)
HELD = (
    "maxUnavailable 1 keeps at least 4 of 5 replicas serving and only 3 are available, so no old pod may stop, "
    "and no new pod fits: 0 nvidia.com/gpu free on the 3 nodes it may run on, 4 needed on one node; raise "
    "spec.rollout.maxUnavailable to 3 or more, or free 4 nvidia.com/gpu on one of those nodes"
)


def service(*, unavailable: int | str = 1) -> InferenceService:
    obj = make_inference_service("llama", image="vllm:0.7.0", model="m", replicas=5, gpu=4)
    obj["spec"]["rollout"] = {"strategy": "Auto", "maxUnavailable": unavailable}
    obj["metadata"]["uid"] = "u1"
    return InferenceService.from_object(obj)


def two_replicas() -> InferenceService:
    obj = make_inference_service("llama", image="vllm:0.7.0", model="m", replicas=2, gpu=4)
    obj["spec"]["rollout"] = {"strategy": "Replace"}
    return InferenceService.from_object(obj)


def replacing(unavailable: int | str = 1, *, blocked: str = "") -> RolloutPlan:
    return RolloutPlan("Auto", 0, unavailable, "Replace", "replacing", "digest", blocked=blocked)


def deployment(*, total: int = 5, updated: int = 1, available: int = 3) -> Obj:
    return {"status": {"replicas": total, "updatedReplicas": updated, "availableReplicas": available}}


def pod(name: str, template: str, *, node: str = "", waits: str = "", deleting: bool = False) -> Obj:
    created = "2026-01-01T00:01:00Z" if template == "new" else "2026-01-01T00:00:00Z"
    meta: Obj = {"name": name, "namespace": "default", "labels": {"pod-template-hash": template}}
    meta["creationTimestamp"] = created
    if deleting:
        meta["deletionTimestamp"] = created
    status: Obj = {"phase": "Running" if node else "Pending"}
    if waits:
        status["conditions"] = [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": waits}
        ]
    return {"metadata": meta, "spec": {"nodeName": node} if node else {}, "status": status}


def stuck() -> list[Obj]:
    """Three old pods bound (two of 8 GPUs, one of 4), an old one and a new one waiting for GPUs:
    the Deployment controller scaled the old ReplicaSet up with the template change."""
    return [
        pod("old-1", "old", node="gpu-a"),
        pod("old-2", "old", node="gpu-b"),
        pod("old-3", "old", node="gpu-c"),
        pod("old-4", "old", waits=SHORT),
        pod("new-1", "new", waits=SHORT),
    ]


def counting(now: Capacity = FULL, *, freed: int = 2) -> tuple[Count, list[list[str]]]:
    """A count of room: ``now``, or ``freed`` replicas with the pods left out holding nothing."""
    calls: list[list[str]] = []

    def count(leave_out: Collection[Obj]) -> Capacity:
        calls.append(sorted(p["metadata"]["name"] for p in leave_out))
        return replace(now, fits=freed, free_gpus=16) if leave_out else now

    return count, calls


def held(
    *, isvc: InferenceService | None = None, plan: RolloutPlan | None = None, live: Obj | None = None, **kw: Any
) -> tuple[str, list[list[str]]]:
    pods = kw.pop("pods", None)
    count, calls = counting(**kw)
    said = held_by_bound(
        isvc or service(),
        plan=plan or replacing(),
        live=live or deployment(),
        pods=stuck() if pods is None else pods,
        count=count,
    )
    return said, calls


def test_a_rollout_below_its_bound_with_no_room_says_the_bound_holds_it_with_the_numbers() -> None:
    said, calls = held()
    assert said == HELD
    assert calls == [[], ["old-1", "old-2", "old-3"]]  # now, then with the old pods that hold GPUs gone


def test_a_replace_whose_freed_gpus_another_workload_took_is_held_too() -> None:
    """One of two old pods stopped; another workload took its GPUs; the new pod waits for them."""
    pods = [pod("old-1", "old", node="gpu-a"), pod("new-1", "new", waits=SHORT)]
    said, _ = held(pods=pods, live=deployment(total=2, available=1), freed=1, isvc=two_replicas())
    assert said.startswith("maxUnavailable 1 keeps at least 1 of 2 replicas serving and only 1 is available")
    assert said.endswith(
        "raise spec.rollout.maxUnavailable to 2 or more, or free 4 nvidia.com/gpu on one of those nodes"
    )


def test_status_says_it_as_a_blocked_plan_would_and_the_deployment_does_not_keep_it() -> None:
    plan = replace(replacing(), held=HELD)
    assert plan.status(5)["plan"] == "Blocked" and plan.status(5)["message"] == HELD
    assert plan.annotation() == replacing().annotation()  # no write to the Deployment for it
    view = DeploymentView.of({"metadata": {}, "status": {"replicas": 5, "updatedReplicas": 1, "readyReplicas": 3}})
    cond = blocked_condition(plan, view, 5)
    assert cond is not None and (cond.reason, cond.message) == (
        "RolloutBlocked",
        f"1 of 5 replicas updated, 3 ready; {HELD}",
    )


def test_a_percentage_is_named_with_what_it_comes_to() -> None:
    said, _ = held(isvc=service(unavailable="25%"), plan=replacing("25%"))
    assert said.startswith("maxUnavailable 25% (1 replica) keeps at least 4 of 5 replicas serving")


def test_nothing_is_counted_while_the_deployments_numbers_say_the_rollout_can_move() -> None:
    for plan, live in [
        (replacing(2), deployment(available=4)),  # 4 available, 3 kept: an old pod may stop
        (replacing(), deployment(total=5, updated=5)),  # no old pod left
        (replacing(blocked="a replica can never be scheduled"), deployment()),  # said already
    ]:
        assert held(plan=plan, live=live) == ("", [])


def test_nothing_is_counted_while_the_pods_say_the_rollout_can_move() -> None:
    stopping = [*stuck()[:2], pod("old-3", "old", node="gpu-c", deleting=True), *stuck()[3:]]
    for pods, live in [
        (stopping, deployment()),  # its GPUs come free when it is gone
        (stuck(), deployment(available=2)),  # a bound pod not available yet: starting
        ([*stuck()[:4], pod("new-1", "new", waits="0/3 nodes are available: 3 Insufficient cpu.")], deployment()),
        ([pod("old-4", "old", waits=SHORT), pod("new-1", "new", waits=SHORT)], deployment(total=2, available=0)),
    ]:
        assert held(pods=pods, live=live) == ("", [])


def test_no_hold_while_the_pod_cache_is_behind_the_deployments_numbers() -> None:
    """A switched Replace stopped one of two old pods: the Deployment counts one old replica,
    but the Pod cache, fed by a stream of its own, still shows both bound. On a loaded real
    cluster that was a RolloutBlocked between two Progressing."""
    behind = [pod("old-1", "old", node="gpu-a"), pod("old-2", "old", node="gpu-b"), pod("new-1", "new", waits=SHORT)]
    caught_up = [behind[0], behind[2]]
    live = deployment(total=2, updated=1, available=1)
    assert held(pods=behind, live=live, freed=1, isvc=two_replicas()) == ("", [])
    assert held(pods=caught_up, live=live, freed=1, isvc=two_replicas())[0].startswith("maxUnavailable 1 keeps")


def test_no_hold_where_a_new_pod_fits_now_or_none_would_without_the_old_pods_or_nodes_cannot_be_read() -> None:
    assert held(now=replace(FULL, fits=1, free_gpus=4))[0] == ""  # the scheduler will place it
    assert held(freed=0)[0] == ""  # old pods on nodes the new ones may not use: not the bound
    assert held(now=UNKNOWN)[0] == ""  # the scheduler's words stay
