"""The Deployment controller's arithmetic, as kube-controller-manager 1.36 does it: pure.

Whether a rolling update deadlocks on a full GPU pool is decided by a few lines of integer
arithmetic in ``pkg/controller/deployment`` (``rolling.go``, ``sync.go``, ``progress.go`` and
``util/deployment_util.go``), so they are reproduced here and tested on their own:

- ``ResolveFenceposts``: ``maxSurge`` percentages round up, ``maxUnavailable`` ones down, and
  when both resolve to 0, one pod may be unavailable; Recreate (and 0 replicas) allows none;
- ``NewRSNewReplicas``: the new ReplicaSet grows while all ReplicaSets' replicas stay within
  ``replicas + maxSurge`` (Recreate: straight to ``replicas``);
- ``reconcileOldReplicaSets``: old ReplicaSets shrink by at most
  ``all - (replicas - maxUnavailable) - unavailable pods of the new one``, their unhealthy
  replicas first, then oldest first while more than ``replicas - maxUnavailable`` are available;
- ``calculateStatus`` and ``syncRolloutStatus``: the status numbers and the ``Available`` and
  ``Progressing`` conditions with their real reasons and messages.

Proportional scaling of several active ReplicaSets during a rollout is simplified: the whole
difference goes to the newest (growing) or comes from the oldest (shrinking) ReplicaSet.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from inference_operator.core.objects import Obj

__all__ = [
    "RSView",
    "available_condition",
    "calculate_status",
    "deployment_complete",
    "deployment_progressing",
    "fenceposts",
    "new_rs_replicas",
    "old_replicasets_scale_down",
    "scaled_value",
    "scaling_plan",
    "set_condition",
]


NEW_RS_CREATED: Final = "NewReplicaSetCreated"
FOUND_NEW_RS: Final = "FoundNewReplicaSet"
RS_UPDATED: Final = "ReplicaSetUpdated"
NEW_RS_AVAILABLE: Final = "NewReplicaSetAvailable"
TIMED_OUT: Final = "ProgressDeadlineExceeded"
PAUSED: Final = "DeploymentPaused"
RESUMED: Final = "DeploymentResumed"
MINIMUM_AVAILABLE: Final = "MinimumReplicasAvailable"
MINIMUM_UNAVAILABLE: Final = "MinimumReplicasUnavailable"


@dataclass(frozen=True)
class RSView:
    """What the arithmetic needs of one ReplicaSet."""

    name: str
    replicas: int  # spec.replicas
    available: int = 0  # status.availableReplicas
    ready: int = 0  # status.readyReplicas
    actual: int = 0  # status.replicas
    created: str = ""  # creationTimestamp, for oldest-first order
    desired_annotation: int | None = None


def scaled_value(value: Any, total: int, *, round_up: bool) -> int:
    """``intstr.GetScaledValueFromIntOrPercent``: an int as is, ``"25%"`` of ``total`` rounded."""
    if isinstance(value, str) and value.endswith("%"):
        share = int(value[:-1]) * total / 100
        return math.ceil(share) if round_up else math.floor(share)
    return int(value)


def fenceposts(spec: Mapping[str, Any]) -> tuple[int, int]:
    """(maxSurge, maxUnavailable) of a Deployment spec, resolved against its replicas."""
    strategy = spec.get("strategy") or {}
    replicas = int(spec.get("replicas", 1))
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return 0, 0
    rolling = strategy.get("rollingUpdate") or {}
    surge = scaled_value(rolling.get("maxSurge", "25%"), replicas, round_up=True)
    unavailable = scaled_value(rolling.get("maxUnavailable", "25%"), replicas, round_up=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    if replicas == 0:
        unavailable = 0
    return surge, min(unavailable, replicas)


def new_rs_replicas(*, replicas: int, surge: int, all_replicas: int, new_replicas: int, recreate: bool) -> int:
    """``NewRSNewReplicas``: the new ReplicaSet's next size (all sizes are ``spec.replicas``)."""
    if recreate:
        return replicas
    max_total = replicas + surge
    if all_replicas >= max_total:
        return new_replicas
    return new_replicas + min(max_total - all_replicas, replicas - new_replicas)


def old_replicasets_scale_down(
    *, replicas: int, max_unavailable: int, new: RSView, olds: Sequence[RSView]
) -> dict[str, int]:
    """``reconcileOldReplicaSets``: the new ``spec.replicas`` of the old ReplicaSets that shrink."""
    ordered = sorted(olds, key=lambda rs: (rs.created, rs.name))
    if sum(rs.replicas for rs in ordered) == 0:
        return {}
    all_replicas = new.replicas + sum(rs.replicas for rs in ordered)
    min_available = replicas - max_unavailable
    max_scaled_down = all_replicas - min_available - (new.replicas - new.available)
    if max_scaled_down <= 0:
        return {}
    sizes = {rs.name: rs.replicas for rs in ordered}
    cleaned = 0
    for rs in ordered:  # unhealthy replicas first: removing them costs no availability
        if cleaned >= max_scaled_down:
            break
        if rs.replicas == 0 or rs.replicas == rs.available:
            continue
        count = min(max_scaled_down - cleaned, rs.replicas - rs.available)
        sizes[rs.name] = rs.replicas - count
        cleaned += count
    available = new.available + sum(rs.available for rs in ordered)
    if available > min_available:
        budget, done = available - min_available, 0
        for rs in ordered:
            if done >= budget:
                break
            if sizes[rs.name] == 0:
                continue
            count = min(sizes[rs.name], budget - done)
            sizes[rs.name] -= count
            done += count
    return {rs.name: sizes[rs.name] for rs in ordered if sizes[rs.name] != rs.replicas}


def scaling_plan(*, replicas: int, surge: int, new: RSView | None, olds: Sequence[RSView]) -> dict[str, int]:
    """``DeploymentController.scale`` on a scaling event: new ``spec.replicas`` by ReplicaSet."""
    every = [*([new] if new is not None else []), *olds]
    active = [rs for rs in every if rs.replicas > 0]
    if len(active) == 1 or (not active and every):
        target = active[0] if active else max(every, key=lambda rs: (rs.created, rs.name))
        return {} if target.replicas == replicas else {target.name: replicas}
    if new is not None and new.replicas >= replicas and new.available >= replicas:  # saturated
        return {rs.name: 0 for rs in olds if rs.replicas > 0}
    if not active:
        return {}
    allowed = replicas + surge if replicas > 0 else 0
    change = allowed - sum(rs.replicas for rs in active)
    if change == 0:
        return {}
    by_age = sorted(active, key=lambda rs: (rs.created, rs.name))
    if change > 0:
        target = by_age[-1]
        return {target.name: target.replicas + change}
    plan: dict[str, int] = {}
    for rs in by_age:
        take = min(rs.replicas, -change)
        if take:
            plan[rs.name] = rs.replicas - take
            change += take
        if change == 0:
            break
    return plan


def set_condition(conditions: Sequence[Obj], condition: Obj) -> list[Obj]:
    """``SetDeploymentCondition``: unchanged if status and reason match; otherwise replaced (at
    the end, as the real helper appends), keeping ``lastTransitionTime`` if the status did not flip."""
    current = next((c for c in conditions if c.get("type") == condition["type"]), None)
    if (
        current is not None
        and current.get("status") == condition["status"]
        and current.get("reason") == condition.get("reason")
    ):
        return list(conditions)
    if current is not None and current.get("status") == condition["status"]:
        condition = {**condition, "lastTransitionTime": current.get("lastTransitionTime")}
    return [c for c in conditions if c.get("type") != condition["type"]] + [condition]


def _condition(type_: str, status: str, reason: str, message: str, now: str) -> Obj:
    return {
        "type": type_,
        "status": status,
        "lastUpdateTime": now,
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    }


def available_condition(*, available: int, replicas: int, max_unavailable: int, now: str) -> Obj:
    if available >= replicas - max_unavailable:
        return _condition("Available", "True", MINIMUM_AVAILABLE, "Deployment has minimum availability.", now)
    return _condition("Available", "False", MINIMUM_UNAVAILABLE, "Deployment does not have minimum availability.", now)


def calculate_status(
    *,
    generation: int,
    replicas: int,
    max_unavailable: int,
    new: RSView | None,
    olds: Sequence[RSView],
    old_status: Obj,
    now: str,
) -> Obj:
    """``calculateStatus``: the numbers, the old conditions, and a fresh ``Available`` condition."""
    every = [*([new] if new is not None else []), *olds]
    available = sum(rs.available for rs in every)
    status: Obj = {
        "observedGeneration": generation,
        "replicas": sum(rs.actual for rs in every),
        "updatedReplicas": new.actual if new is not None else 0,
        "readyReplicas": sum(rs.ready for rs in every),
        "availableReplicas": available,
        "unavailableReplicas": max(sum(rs.replicas for rs in every) - available, 0),
    }
    for field in [f for f, value in status.items() if not value]:  # Go's omitempty, as a real one shows
        del status[field]
    if "collisionCount" in old_status:
        status["collisionCount"] = old_status["collisionCount"]
    conditions = [dict(c) for c in old_status.get("conditions") or ()]
    status["conditions"] = set_condition(
        conditions,
        available_condition(available=available, replicas=replicas, max_unavailable=max_unavailable, now=now),
    )
    return status


def deployment_complete(status: Mapping[str, Any], *, replicas: int, generation: int) -> bool:
    return (
        status.get("updatedReplicas", 0) == replicas
        and status.get("replicas", 0) == replicas
        and status.get("availableReplicas", 0) == replicas
        and int(status.get("observedGeneration") or 0) >= generation
    )


def deployment_progressing(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """``DeploymentProgressing``: more updated, ready or available pods, or fewer old ones."""

    def number(status: Mapping[str, Any], field: str) -> int:
        return int(status.get(field) or 0)

    old_olds = number(old, "replicas") - number(old, "updatedReplicas")
    new_olds = number(new, "replicas") - number(new, "updatedReplicas")
    return (
        number(new, "updatedReplicas") > number(old, "updatedReplicas")
        or new_olds < old_olds
        or number(new, "readyReplicas") > number(old, "readyReplicas")
        or number(new, "availableReplicas") > number(old, "availableReplicas")
    )


def progressing_condition(status: str, reason: str, message: str, now: str) -> Obj:
    return _condition("Progressing", status, reason, message, now)
