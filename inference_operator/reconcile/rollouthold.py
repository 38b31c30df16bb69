"""When the maxUnavailable bound is what holds a rollout, and the words that say so.

A rollout that replaces pods stops an old one only while enough others stay available: at least
``spec.replicas - maxUnavailable``. Some rollouts are below that and cannot climb back: a scale-up
that comes with a template change (the Deployment controller scales the old ReplicaSet up first,
and the old template's extra pod fits nowhere), or another workload that took the GPUs a stopped
old pod freed. Then no old pod may stop, no new pod fits, and nothing changes by itself: the
Deployment only ever says ProgressDeadlineExceeded and the pods say the scheduler's words, which
name neither the bound nor what to change. This names it, with the numbers and the ways out.

Pure and level-triggered: computed on each pass from the cached Deployment, the service's pods in
the Pod cache and a count of free GPUs, and kept nowhere (it passes as soon as GPUs come free). The
count walks every pod of the cluster, so it comes last, once the Deployment's numbers and the pods
already say that the rollout cannot move.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from inference_operator.api.constants import GPU_RESOURCE
from inference_operator.api.models import InferenceService
from inference_operator.core.objects import Obj
from inference_operator.reconcile.capacity import Capacity
from inference_operator.reconcile.rollout import DEFAULT_PERCENT, RolloutPlan, resolve
from inference_operator.reconcile.rolloutpods import (
    freeing_by_itself,
    is_bound,
    is_newest,
    live_pods,
    newest_template,
    short_of_gpus,
)

Count = Callable[[Collection[Obj]], Capacity]
"""The count of room for a replica, the given pods of the service holding nothing."""


def held_by_bound(isvc: InferenceService, *, plan: RolloutPlan, live: Obj | None, pods: list[Obj], count: Count) -> str:
    """Why the maxUnavailable bound holds the rollout, with numbers ('' when it does not).

    It does when old pods are left and none may stop (the available ones are no more than the
    bound keeps); every pod not available waits for the scheduler (none starting, none
    stopping), a new one among them for GPUs; none fits now; and one would with the old pods
    bound to nodes gone. Otherwise something else explains the wait (a pod starting or crashing,
    no room even without the old pods, a plan already blocked), or it passes by itself."""
    gpu, replicas = isvc.spec.gpu, isvc.spec.replicas
    status = (live or {}).get("status") or {}
    total, updated = int(status.get("replicas") or 0), int(status.get("updatedReplicas") or 0)
    available = int(status.get("availableReplicas") or 0)
    unavailable = resolve(plan.max_surge, plan.max_unavailable, replicas)[1]
    keeps = replicas - unavailable
    if gpu <= 0 or plan.blocked or total <= updated or available > keeps:
        return ""  # no old pod left, or one may stop
    listed = live_pods(pods)
    newest = newest_template(listed, isvc.spec.image)
    waiting = [pod for pod in listed if not is_bound(pod)]
    holding = [pod for pod in listed if is_bound(pod) and not is_newest(pod, newest)]
    if freeing_by_itself(listed, bound_old=len(holding), old_replicas=total - updated):
        return ""  # a pod terminating, or one the Pod cache has not seen end yet
    short = any(is_newest(pod, newest) and short_of_gpus(pod) for pod in waiting)
    if not short or not holding or total - available > len(waiting):
        return ""  # no new pod waits for GPUs, no old pod holds any, or a pod is still starting
    now = count(())
    if not now.known or now.fits > 0 or count(holding).fits == 0:
        return ""  # not counted, a new pod fits now, or stopping old pods would make no room either
    value = DEFAULT_PERCENT if plan.max_unavailable is None else plan.max_unavailable
    named = (
        str(value) if isinstance(value, int) else f"{value} ({unavailable} replica{'' if unavailable == 1 else 's'})"
    )
    are = "is" if available == 1 else "are"
    return (
        f"maxUnavailable {named} keeps at least {keeps} of {replicas} replicas serving and only {available} {are} "
        f"available, so no old pod may stop, and no new pod fits: {now.free_gpus} {GPU_RESOURCE} free {now.where}, "
        f"{gpu} needed on one node; raise spec.rollout.maxUnavailable to {replicas - available + 1} or more, "
        f"or free {gpu} {GPU_RESOURCE} on one of those nodes"
    )
