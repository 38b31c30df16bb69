"""What the controllers read off a Pod: bound, terminating, ready (since when), its owner.

Every simulated component asks the same few questions of pod objects (the ReplicaSet
controller to count and rank them, the scheduler to account for what they hold, the kubelet to
move them on), so the answers are written once, here, as pure functions of the object; so is
the one condition two controllers write before deleting a pod (``DisruptionTarget``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from inference_operator.core.clock import parse_timestamp

__all__ = [
    "condition",
    "deletion_rank",
    "disrupted",
    "is_active",
    "is_ready",
    "is_terminal",
    "node_of",
    "ready_since",
]

_PHASE_ORDER: Final = {"Pending": 0, "Unknown": 1, "Running": 2}


def node_of(pod: Mapping[str, Any]) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def is_terminal(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def is_terminating(pod: Mapping[str, Any]) -> bool:
    return "deletionTimestamp" in (pod.get("metadata") or {})


def is_active(pod: Mapping[str, Any]) -> bool:
    """``controller.IsPodActive``: neither finished nor being deleted."""
    return not is_terminal(pod) and not is_terminating(pod)


def condition(pod: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == type_:
            return dict(c)
    return None


def is_ready(pod: Mapping[str, Any]) -> bool:
    ready = condition(pod, "Ready")
    return ready is not None and ready.get("status") == "True"


def ready_since(pod: Mapping[str, Any]) -> float | None:
    """When the pod became Ready (POSIX seconds), None if it is not."""
    ready = condition(pod, "Ready")
    if ready is None or ready.get("status") != "True" or not ready.get("lastTransitionTime"):
        return None
    return parse_timestamp(str(ready["lastTransitionTime"])).timestamp()


def deletion_rank(pod: Mapping[str, Any]) -> tuple[int, int, int, float, str]:
    """``controller.ActivePods`` order: the pods to delete first sort first (unassigned before
    assigned, pending before running, not ready before ready, ready for less time before more,
    newer before older)."""
    phase = (pod.get("status") or {}).get("phase") or "Pending"
    since = ready_since(pod)
    created = str((pod.get("metadata") or {}).get("creationTimestamp") or "")
    newest_first = "".join(chr(0x10FFFF - ord(c)) for c in created)
    return (
        1 if node_of(pod) else 0,
        _PHASE_ORDER.get(phase, 0),
        1 if is_ready(pod) else 0,
        -(since or 0.0),
        newest_first,
    )


def disrupted(pod: Mapping[str, Any], *, reason: str, message: str, now: str) -> list[dict[str, Any]]:
    """The pod's conditions with ``DisruptionTarget`` True for ``reason``: what a controller about
    to delete a pod (the pod garbage collector, taint eviction) writes first, so that people and
    the Job controller can tell a disruption from a failure."""
    others = [dict(c) for c in (pod.get("status") or {}).get("conditions") or () if c.get("type") != "DisruptionTarget"]
    target = {"type": "DisruptionTarget", "status": "True", "reason": reason, "message": message}
    return [*others, {**target, "lastTransitionTime": now}]
