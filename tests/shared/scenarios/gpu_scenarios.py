"""The GPU scenarios, written against a World, each on a pool of nodes of its own
(``scheduling.py``): a fleet that fits; a pool that is full (a pod Pending with the scheduler's
words); a template change on a full pool with the default strategy (the rolling update
deadlocks: RolloutBlocked), with ``Replace`` and with ``Auto`` (both complete), with ``Auto`` and
one node free (it surges one replica and replaces the other, counting 8 GPUs free); a scale-up past
capacity and back; a pod that fits only one node of three (a node selector, a taint it does
not tolerate); a node removed under a full pool (its pod collected, the replacement Pending);
``Auto`` whose counted free nodes another workload takes before the rollout starts (the rollout
paused meanwhile, as ``kubectl rollout pause`` does): it stalls, switches to replacing, says so
and completes.

Every pool node is sized like the simulator's default (96 cpu, 1Ti, 110 pods) with 8 GPUs, so
only GPUs run out.
"""

from __future__ import annotations

from typing import Any, Final

from inference_operator.api.constants import GPU_RESOURCE, EventReason, Reason
from inference_operator.sim.cluster.nodes import NodeShape

from .common import NAME, check, created, llama, ready_message, ready_replicas, ready_with, scenario
from .observe import PROGRESSING, Snapshot
from .world import World

Obj = dict[str, Any]
TWO_NODES: Final = (NodeShape("gpu-a", gpus=8), NodeShape("gpu-b", gpus=8))
NEW_IMAGE: Final = "vllm/vllm-openai:v0.7.0"
SHORT_OF_GPUS: Final = "Insufficient nvidia.com/gpu"


def pending(s: Snapshot) -> list[str | None]:
    return s.pending_messages()


def bound(s: Snapshot) -> dict[str, dict[str, int]]:
    result: dict[str, dict[str, int]] = s.pods_summary()["bound"]
    return result


def short_of_gpus(count: int) -> Any:
    """Exactly ``count`` pods Pending, each with the scheduler's words for a GPU shortage."""
    return lambda s: len(pending(s)) == count and all(SHORT_OF_GPUS in (m or "") for m in pending(s))


def replicasets_seen(world: World) -> list[str]:
    step = world.observation.steps[-1]
    return list((step.scheduling or {}).get("replicaSets") or [])


@scenario("gpu-fits", nodes=True)
def fleet_that_fits(world: World) -> None:
    pool = world.gpu_pool(TWO_NODES)
    s = created(world, replicas=2, gpu=4, **pool)
    check(pending(s) == [] and sum(sum(n.values()) for n in bound(s).values()) == 2, f"both bound: {bound(s)}")
    check(replicasets_seen(world) == ["r1=2"], f"one ReplicaSet of 2, got {replicasets_seen(world)}")


@scenario("gpu-pool-full", nodes=True)
def pool_that_is_full(world: World) -> None:
    pool = world.gpu_pool(TWO_NODES)
    check(world.apply(llama(replicas=3, gpu=8, **pool)) is None, "the InferenceService was refused")
    s = world.settle(
        "3 replicas of 8 GPUs on 2 nodes of 8",
        NAME,
        lambda s: s.stalled_with(Reason.PODS_UNSCHEDULABLE) and ready_replicas(s) == 2 and short_of_gpus(1)(s),
        what="PodsUnschedulable, 2 replicas ready and 1 Pending for GPUs",
    )
    check(ready_message(s).endswith(f"1 pod(s) cannot be scheduled: {pending(s)[0]}"), ready_message(s))
    check(bound(s) == {"gpu-a": {"r1": 1}, "gpu-b": {"r1": 1}}, f"one per node: {bound(s)}")


def _full_pool_rollout(world: World, **spec: Any) -> Obj:
    """Two replicas of 8 GPUs fill the pool's two nodes; then a new image: the template change."""
    pool = world.gpu_pool(TWO_NODES)
    created(world, replicas=2, gpu=8, **pool, **spec)
    world.apply(llama(replicas=2, gpu=8, image=NEW_IMAGE, **pool, **spec))
    return pool


def _rolled_out(s: Snapshot) -> bool:
    """Ready with 2 replicas, both of the new revision, nothing Pending."""
    return ready_with(2)(s) and bound(s) == {"gpu-a": {"r2": 1}, "gpu-b": {"r2": 1}} and pending(s) == []


@scenario("gpu-rollout-blocked", nodes=True)
def template_change_on_a_full_pool_deadlocks(world: World) -> None:
    _full_pool_rollout(world)
    s = world.settle(
        "a new image, the default strategy",
        NAME,
        lambda s: s.stalled_with(Reason.ROLLOUT_BLOCKED) and ready_replicas(s) == 2 and short_of_gpus(1)(s),
        what="RolloutBlocked: the surge pod Pending for the GPUs the old pods hold",
    )
    check("set spec.rollout.strategy to Replace or Auto" in ready_message(s), ready_message(s))
    check(replicasets_seen(world) == ["r1=2 r2=1"], f"one surge replica, got {replicasets_seen(world)}")
    check(world.observation.steps[-1].transitions[-1] == f"False/{Reason.ROLLOUT_BLOCKED}", "said so")


REPLACED: Final = ["r1=2 r2=0", "r1=1 r2=0", "r1=1 r2=1", "r1=0 r2=1", "r1=0 r2=2"]
"""An old pod stops before a new one starts, one at a time (maxSurge 0, maxUnavailable 1)."""


@scenario("gpu-rollout-replace", nodes=True)
def template_change_on_a_full_pool_with_replace(world: World) -> None:
    _full_pool_rollout(world, rollout={"strategy": "Replace"})
    world.settle("a new image, Replace", NAME, _rolled_out, what="rolled out: both replicas new, Ready")
    check(world.observation.steps[-1].transitions == [PROGRESSING, f"True/{Reason.READY}"], "Progressing, Ready")
    check(replicasets_seen(world) == REPLACED, f"replaced one at a time, got {replicasets_seen(world)}")


@scenario("gpu-rollout-auto", nodes=True)
def template_change_on_a_full_pool_with_auto(world: World) -> None:
    _full_pool_rollout(world, rollout={"strategy": "Auto"})
    world.settle("a new image, Auto", NAME, _rolled_out, what="rolled out: both replicas new, Ready")
    check(world.observation.steps[-1].transitions[-1] == f"True/{Reason.READY}", "Ready in the end")
    check(replicasets_seen(world) == REPLACED, f"0 GPUs free: replaced one at a time, got {replicasets_seen(world)}")


THREE_NODES: Final = (*TWO_NODES, NodeShape("gpu-c", gpus=8))


@scenario("gpu-rollout-auto-spare", nodes=True)
def template_change_with_auto_and_one_spare_node(world: World) -> None:
    """Two replicas of 8 GPUs on three nodes of 8: one node is free, so Auto surges one replica
    and replaces the other, and says so with the count."""
    pool = world.gpu_pool(THREE_NODES)
    created(world, replicas=2, gpu=8, rollout={"strategy": "Auto"}, **pool)
    world.apply(llama(replicas=2, gpu=8, image=NEW_IMAGE, rollout={"strategy": "Auto"}, **pool))
    s = world.settle(
        "a new image, Auto, one node free",
        NAME,
        lambda s: ready_with(2)(s) and pending(s) == [] and sum(n.get("r2", 0) for n in bound(s).values()) == 2,
        what="rolled out: both replicas new, Ready",
    )
    rollout = ((s.isvc or {}).get("status") or {}).get("rollout") or {}
    check(rollout.get("plan") == "Surge 1 + Replace", f"surge what fits, replace the rest: {rollout}")
    counted = f"8 nvidia.com/gpu free on the 3 nodes matching {next(iter(pool['nodeSelector']))}="
    check(counted in str(rollout.get("message")), f"the count in words ({counted}…): {rollout}")
    seen = replicasets_seen(world)
    check(seen[0] == "r1=2 r2=1" and seen[-1] == "r1=0 r2=2", f"one surge pod first, old emptied last: {seen}")


FOUR_NODES: Final = (*THREE_NODES, NodeShape("gpu-d", gpus=8))


def training_pod(name: str, pool: Obj) -> Obj:
    """Another workload's pod that takes a whole 8-GPU node of the pool (no owner: nothing replaces it)."""
    container = {
        "name": "train",
        "image": "trainer:v1",
        "resources": {"requests": {GPU_RESOURCE: "8"}, "limits": {GPU_RESOURCE: "8"}},
    }
    spec = {"containers": [container], "nodeSelector": pool["nodeSelector"], "tolerations": pool["tolerations"]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def _others_bound(s: Snapshot) -> int:
    """Pods bound that belong to no ReplicaSet of the service (the training pods)."""
    return sum(n.get("r?", 0) for n in bound(s).values())


@scenario("gpu-rollout-auto-switch", nodes=True)
def auto_switches_when_the_counted_nodes_are_taken(world: World) -> None:
    """Two replicas of 8 GPUs on four nodes of 8: two nodes are free, so Auto plans to surge both
    replicas (maxUnavailable 0: nothing old stops first). The Deployment is paused before the image
    changes, so the plan is made but the Deployment controller does not act on it; two training
    pods take the free nodes; the rollout resumes. Both new pods wait for GPUs the old pods hold,
    and with maxUnavailable 0 nothing would ever free them: the operator switches to replacing,
    with a RolloutSwitched Warning Event and the reason in status, and the rollout completes."""
    pool = world.gpu_pool(FOUR_NODES)
    auto = {"rollout": {"strategy": "Auto"}, **pool}
    created(world, replicas=2, gpu=8, **auto)
    world.pause_rollout(NAME)
    world.apply(llama(replicas=2, gpu=8, image=NEW_IMAGE, **auto))
    s = world.settle(
        "paused, then a new image, Auto",
        NAME,
        lambda s: s.stalled_with(Reason.ROLLOUT_PAUSED) and ready_replicas(s) == 2,
        what="RolloutPaused with the plan made and both old replicas serving",
    )
    rollout = ((s.isvc or {}).get("status") or {}).get("rollout") or {}
    check(rollout.get("plan") == SURGE_ALL, f"surge both into the two free nodes: {rollout}")
    check("kubectl rollout resume" in ready_message(s), ready_message(s))
    check(replicasets_seen(world) == [], f"no new ReplicaSet while paused, got {replicasets_seen(world)}")
    for name in ("train-0", "train-1"):
        world.create(training_pod(name, pool))
    world.settle(
        "two training pods take the free nodes",
        NAME,
        lambda s: _others_bound(s) == 2 and ready_replicas(s) == 2,
        what="both training pods bound, both old replicas serving",
    )
    world.resume_rollout(NAME)
    s = world.settle(
        "the rollout resumed",
        NAME,
        lambda s: ready_with(2)(s) and pending(s) == [] and sum(n.get("r2", 0) for n in bound(s).values()) == 2,
        what="switched to replacing and rolled out: both replicas new, Ready",
    )
    rollout = ((s.isvc or {}).get("status") or {}).get("rollout") or {}
    check(str(rollout.get("message")).startswith("switched to replacing 1 replica(s) at a time"), f"{rollout}")
    check(
        (rollout.get("plan"), rollout.get("maxSurge"), rollout.get("maxUnavailable")) == ("Replace", 0, 1),
        f"replacing one at a time: {rollout}",
    )
    check(f"Warning/{EventReason.ROLLOUT_SWITCHED}" in world.observation.steps[-1].events, "the switch as an Event")
    seen = replicasets_seen(world)
    check(seen == SWITCHED, f"both surged, then the old replaced one at a time: {seen}")
    for name in ("train-0", "train-1"):
        world.delete("Pod", name)


@scenario("gpu-freed-node-to-the-longest-waiting", nodes=True)
def freed_node_goes_to_the_pod_waiting_longest(world: World) -> None:
    """One replica of 8 GPUs and a training pod fill a pool of two 8-GPU nodes; a new image (the
    default rolling update) leaves its surge pod Pending; then another training pod, whose name
    sorts first, waits too. The first training pod is deleted: the freed node goes to the pod
    that has waited longest (kube-scheduler orders pods of one priority by their last failed
    attempt), the surge pod, so the rollout completes, and the other training pod then takes
    the node the old replica left."""
    pool = world.gpu_pool(TWO_NODES)
    created(world, replicas=1, gpu=8, **pool)
    world.create(training_pod("train-0", pool))
    world.settle(
        "a training pod takes the other node",
        NAME,
        lambda s: _others_bound(s) == 1 and ready_replicas(s) == 1,
        what="the training pod bound, the replica serving",
    )
    world.apply(llama(replicas=1, gpu=8, image=NEW_IMAGE, **pool))
    world.settle(
        "a new image, the default strategy",
        NAME,
        lambda s: s.stalled_with(Reason.ROLLOUT_BLOCKED) and short_of_gpus(1)(s),
        what="RolloutBlocked: the surge pod Pending",
    )
    world.create(training_pod("batch-0", pool))  # sorts before the surge pod's name
    world.settle(
        "another training pod waits too",
        NAME,
        lambda s: short_of_gpus(2)(s) and s.stalled_with(Reason.ROLLOUT_BLOCKED),
        what="two pods Pending for GPUs",
    )
    world.delete("Pod", "train-0")
    s = world.settle(
        "the first training pod deleted",
        NAME,
        lambda s: ready_with(1)(s) and pending(s) == [] and _others_bound(s) == 1,
        what="the surge pod took the freed node, the rollout completed, the other training pod took the old node",
    )
    check(sum(n.get("r2", 0) for n in bound(s).values()) == 1, f"the new replica runs: {bound(s)}")
    check(replicasets_seen(world)[-1] == "r1=0 r2=1", f"rolled out: {replicasets_seen(world)}")
    world.delete("Pod", "batch-0")


SURGE_ALL: Final = "Surge"
SWITCHED: Final = ["r1=2 r2=2", "r1=1 r2=2", "r1=0 r2=2"]
"""Both new pods at once (maxSurge 2), Pending; after the switch the old ones stop one at a time."""


@scenario("gpu-scale-beyond", nodes=True)
def scale_up_beyond_capacity(world: World) -> None:
    pool = world.gpu_pool(TWO_NODES)
    created(world, replicas=2, gpu=8, **pool)
    world.apply(llama(replicas=3, gpu=8, **pool))
    world.settle(
        "scaled to 3 replicas of 8 GPUs on 2 nodes of 8",
        NAME,
        lambda s: s.stalled_with(Reason.PODS_UNSCHEDULABLE) and ready_replicas(s) == 2 and short_of_gpus(1)(s),
        what="PodsUnschedulable, 2 replicas ready and 1 Pending for GPUs",
    )
    check(replicasets_seen(world) == ["r1=3"], f"the ReplicaSet scaled, got {replicasets_seen(world)}")
    world.apply(llama(replicas=2, gpu=8, **pool))
    world.settle("scaled back to 2", NAME, lambda s: ready_with(2)(s) and pending(s) == [], what="Ready with 2")
    check(replicasets_seen(world) == ["r1=2"], f"the ReplicaSet scaled back, got {replicasets_seen(world)}")


THREE_KINDS: Final = (
    NodeShape("h100", gpus=8, labels={"accelerator": "h100"}),
    NodeShape(
        "h100-reserved",
        gpus=8,
        labels={"accelerator": "h100"},
        taints=[{"key": "dedicated", "value": "training", "effect": "NoSchedule"}],
    ),
    NodeShape("l4", gpus=8, labels={"accelerator": "l4"}),
)


@scenario("gpu-one-node-fits", nodes=True)
def pod_that_fits_only_one_node(world: World) -> None:
    """Two replicas asking for H100s: one node has them free, one is reserved by a taint the
    pods do not tolerate, one has other GPUs. One replica runs, the other waits."""
    pool = world.gpu_pool(THREE_KINDS)
    selector = {**pool["nodeSelector"], "accelerator": "h100"}
    check(
        world.apply(llama(replicas=2, gpu=8, nodeSelector=selector, tolerations=pool["tolerations"])) is None, "refused"
    )
    s = world.settle(
        "2 replicas of 8 H100s",
        NAME,
        lambda s: s.stalled_with(Reason.PODS_UNSCHEDULABLE) and ready_replicas(s) == 1 and short_of_gpus(1)(s),
        what="PodsUnschedulable, 1 replica on the one H100 node and 1 Pending",
    )
    check(bound(s) == {"h100": {"r1": 1}}, f"on the untainted H100 node: {bound(s)}")
    message = pending(s)[0] or ""
    for reason in ("1 Insufficient nvidia.com/gpu", "1 node(s) had untolerated taint(s)"):
        check(reason in message, f"{reason!r} in {message!r}")
    world.apply(llama(replicas=1, gpu=8, nodeSelector=selector, tolerations=pool["tolerations"]))
    world.settle("scaled to 1", NAME, lambda s: ready_with(1)(s) and pending(s) == [], what="Ready with 1")


@scenario("gpu-node-removed", nodes=True)
def node_removed(world: World) -> None:
    """Two replicas of 8 GPUs on two nodes of 8; one node is deleted. Its pod is left to the pod
    garbage collector (40 s of quarantine), then replaced, and the replacement has nowhere to go."""
    pool = world.gpu_pool(TWO_NODES)
    created(world, replicas=2, gpu=8, **pool)
    world.remove_node("gpu-b")
    s = world.settle(
        "the node gpu-b deleted",
        NAME,
        lambda s: (
            s.stalled_with(Reason.PODS_UNSCHEDULABLE) and bound(s) == {"gpu-a": {"r1": 1}} and short_of_gpus(1)(s)
        ),
        what="the lost pod collected and replaced, the replacement Pending: PodsUnschedulable",
    )
    check(ready_replicas(s) == 1, f"one replica ready, got {ready_replicas(s)}")
    check(replicasets_seen(world) == [], f"the ReplicaSet keeps its size, got {replicasets_seen(world)}")
