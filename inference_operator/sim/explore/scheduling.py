"""What must hold about scheduling once a simulated cluster has settled: GPUs, pods, status.

On the simulated cluster pods are stored objects, placed by the scheduler stand-in or left
Pending with kube-scheduler's own words. Two promises of the operator depend on them, and these
invariants check both against the pods themselves, not against what the Deployment's counters
say:

- ``ready_only_when_scheduled``: Ready=True never while a desired replica has no running
  place: a pod of the current template still Pending (``PodScheduled=False``), or fewer such
  pods than ``spec.replicas``;
- ``gpu_shortage_explained``: pods waiting for GPUs show in status: Ready=False, with a reason
  and a message carrying the scheduler's words (:data:`INSUFFICIENT_GPU`), and whatever
  :func:`shortage_words` adds to them, unless it is a ``RolloutBlocked`` message, which gives
  the nodes' numbers instead (:mod:`.rollouts` checks those).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from inference_operator.api.constants import DEPLOYMENT, GPU_RESOURCE, Reason
from inference_operator.core.nodefit import allocatable, matches_node_selector, scheduling_taints, tolerates
from inference_operator.core.objects import Obj, controller_owner_uid
from inference_operator.core.resources import pod_requests
from inference_operator.sim.cluster import podstate
from inference_operator.sim.cluster.replicasets import template_without_hash
from inference_operator.sim.explore.isvcs import IsvcView, isvcs, ours, ready_of
from inference_operator.sim.explore.observation import Observation
from inference_operator.sim.simulation import Simulation

__all__ = [
    "INSUFFICIENT_GPU",
    "SCHEDULING_CHECKS",
    "SCHEDULING_INVARIANTS",
    "gpus_free_for",
    "short_of_gpus",
    "shortage_words",
]

INSUFFICIENT_GPU: Final = f"Insufficient {GPU_RESOURCE}"
"""kube-scheduler's reason for a node short of GPUs, as its Unschedulable message spells it."""

SCHEDULING_INVARIANTS: Final[dict[str, str]] = {
    "ready_only_when_scheduled": "Ready=True only while every desired replica has a pod of the current "
    "template placed on a node: none Pending (PodScheduled=False), no fewer than spec.replicas",
    "gpu_shortage_explained": "while pods are Pending for lack of GPUs, Ready=False with a reason and a message "
    f"that carries the scheduler's words ({INSUFFICIENT_GPU})",
}


def shortage_words(*, gpu_per_replica: int, gpus_free: int) -> tuple[str, ...]:
    """What status must say while pods wait for GPUs: today the scheduler's words.

    This is the one place to extend once the operator reads Nodes: add the numbers, e.g.
    ``f"{gpu_per_replica} GPU"`` (needed per replica) and ``f"{gpus_free} free"`` (on the nodes
    the pods may use), in the wording the operator settles on."""
    del gpu_per_replica, gpus_free  # not promised yet
    return (INSUFFICIENT_GPU,)


def gpus_free_for(sim: Simulation, pod_spec: Obj) -> int:
    """GPUs not held by any running or stopping pod on the nodes ``pod_spec`` may use: ready,
    matching its node selector and affinity, every NoSchedule/NoExecute taint tolerated."""
    held: dict[str, int] = {}
    for pod in sim.api.list("Pod"):
        on = podstate.node_of(pod)
        if on and not podstate.is_terminal(pod):
            held[on] = held.get(on, 0) + pod_requests(pod.get("spec") or {}).get(GPU_RESOURCE, 0)
    tolerations = pod_spec.get("tolerations") or []
    free = 0
    for node in sim.api.list("Node"):
        if not matches_node_selector(pod_spec, node["metadata"].get("labels") or {}):
            continue
        taints = [t for t in scheduling_taints(node) if t.get("effect") in ("NoSchedule", "NoExecute")]
        if not all(tolerates(tolerations, t) for t in taints):
            continue
        name = str(node["metadata"]["name"])
        free += max(0, allocatable(node).get(GPU_RESOURCE, 0) - held.get(name, 0))
    return free


# -- the pods of an InferenceService -------------------------------------------------------------


def _own_deployment(sim: Simulation, isvc: IsvcView) -> Obj | None:
    deployment = sim.get(DEPLOYMENT, "default", isvc.name)
    return deployment if deployment is not None and ours(deployment, isvc) else None


def _pods(sim: Simulation, deployment: Obj) -> tuple[list[Obj], list[Obj]]:
    """The active pods of ``deployment``: those of its current template, and all of them."""
    namespace, uid = deployment["metadata"]["namespace"], deployment["metadata"]["uid"]
    template = deployment["spec"]["template"]
    replicasets = [rs for rs in sim.api.list("ReplicaSet", namespace) if controller_owner_uid(rs) == uid]
    current = {rs["metadata"]["uid"] for rs in replicasets if template_without_hash(rs["spec"]["template"]) == template}
    every = {rs["metadata"]["uid"] for rs in replicasets}
    pods = [p for p in sim.api.list("Pod", namespace) if podstate.is_active(p)]
    return (
        [p for p in pods if controller_owner_uid(p) in current],
        [p for p in pods if controller_owner_uid(p) in every],
    )


def _unscheduled(pod: Obj) -> str | None:
    """Why ``pod`` has no running place (None: it has one)."""
    scheduled = podstate.condition(pod, "PodScheduled") or {}
    if not podstate.node_of(pod) or scheduled.get("status") == "False":
        return str(scheduled.get("message") or "not scheduled yet")
    if (pod.get("status") or {}).get("phase", "Pending") == "Pending":
        return f"Pending on {podstate.node_of(pod)}"
    return None


def short_of_gpus(pod: Obj) -> bool:
    """The scheduler left ``pod`` Pending, and one of its reasons is too few GPUs free."""
    scheduled = podstate.condition(pod, "PodScheduled") or {}
    return (
        scheduled.get("status") == "False"
        and scheduled.get("reason") == "Unschedulable"
        and INSUFFICIENT_GPU in str(scheduled.get("message"))
    )


# -- the invariants ------------------------------------------------------------------------------


def ready_only_when_scheduled(o: Observation) -> list[str]:
    out = []
    for isvc in isvcs(o.sim):
        ready, parsed = ready_of(isvc.obj), isvc.parsed
        if parsed is None or isvc.deleting or (ready or {}).get("status") != "True":
            continue
        deployment = _own_deployment(o.sim, isvc)
        current = _pods(o.sim, deployment)[0] if deployment is not None else []
        problems = [f"pod {p['metadata']['name']} is unscheduled ({why})" for p in current if (why := _unscheduled(p))]
        if len(current) < parsed.spec.replicas:
            problems.append(f"{len(current)} pod(s) of the current template for {parsed.spec.replicas} replicas")
        if problems:
            out.append(f"{isvc.key} says Ready=True, but " + "; ".join(problems[:3]))
    return out


def gpu_shortage_explained(o: Observation) -> list[str]:
    if o.status_blocked:
        return []
    out = []
    for isvc in isvcs(o.sim):
        deployment = _own_deployment(o.sim, isvc) if isvc.live and isvc.key not in o.failing else None
        if deployment is None or isvc.parsed is None:
            continue
        waiting = [p for p in _pods(o.sim, deployment)[1] if short_of_gpus(p)]
        if not waiting:
            continue
        words = shortage_words(gpu_per_replica=isvc.parsed.spec.gpu, gpus_free=gpus_free_for(o.sim, waiting[0]["spec"]))
        problem = _explains(isvc, words)
        if problem:
            out.append(f"{isvc.key} has {len(waiting)} pod(s) Pending for lack of GPUs, but {problem}")
    return out


def _explains(isvc: IsvcView, words: tuple[str, ...]) -> str:
    """What is missing from ``isvc``'s status for it to explain a GPU shortage ('' when nothing).

    Ready carries the words, unless it explains a problem that comes first (a refused write):
    then the DeploymentReady condition must carry them. A rollout the operator calls blocked
    (``RolloutBlocked``) explains the shortage in its own words, the nodes' numbers (a replica
    bigger than every node they may use, no room and none allowed to stop); the invariant
    ``stall_explained_with_numbers`` holds it to them."""
    conditions = {c.get("type"): c for c in (isvc.obj.get("status") or {}).get("conditions") or []}
    ready, deployment = conditions.get("Ready") or {}, conditions.get("DeploymentReady") or {}
    if ready.get("status") != "False" or not ready.get("reason") or not ready.get("message"):
        return f"Ready is {ready.get('status')} (reason {ready.get('reason')!r}, message {ready.get('message')!r})"
    where = ready if ready.get("reason") == deployment.get("reason") else deployment
    if where.get("reason") == Reason.ROLLOUT_BLOCKED:
        return ""  # explained with the numbers of the nodes: stall_explained_with_numbers checks them
    message = str(where.get("message") or "")
    missing = [w for w in words if w not in message]
    if missing:
        return f"{where.get('type')} does not say {', '.join(map(repr, missing))} (message {message!r})"
    return ""


SCHEDULING_CHECKS: Final[dict[str, Callable[[Observation], list[str]]]] = {
    "ready_only_when_scheduled": ready_only_when_scheduled,
    "gpu_shortage_explained": gpu_shortage_explained,
}
