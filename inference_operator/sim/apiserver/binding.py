"""The ``pods/binding`` subresource: what a Binding does to the pod it names.

kube-scheduler binds a pod by creating a Binding (``POST pods/<name>/binding``). The API server
writes the pod straight through its storage, around the pod strategies and the field manager
(``BindingREST.setPodNodeAndMetadata``): one write, one resourceVersion, one watch event, that sets
``spec.nodeName`` and the ``PodScheduled=True`` condition together. Nothing is recorded in
``managedFields``: no entry owns ``spec.nodeName`` afterwards.

A pod that is already bound, being deleted, or still gated is refused with a Conflict on
``pods/binding``; a uid in the Binding that is not the pod's is a failed precondition.
"""

from __future__ import annotations

from typing import Any

from inference_operator.api.fielderrors import go_value
from inference_operator.core.errors import Conflict
from inference_operator.core.objects import Obj

__all__ = ["bound", "with_condition"]


def bound(stored: Obj, node: str, *, uid: str = "", now: str) -> Obj:
    """``stored`` (a pod) bound to ``node`` at ``now``; :class:`Conflict` when it cannot be."""
    meta, spec = stored["metadata"], stored.get("spec") or {}
    name, namespace = str(meta["name"]), str(meta.get("namespace", ""))
    if uid and uid != meta.get("uid"):
        raise Conflict(
            f'Operation cannot be fulfilled on pods "{name}": Precondition failed: UID in precondition: {uid}, '
            f"UID in object meta: {meta.get('uid')} (the pod was deleted and created again since it was read)",
            kind="Pod",
            namespace=namespace,
            name=name,
        )
    if "deletionTimestamp" in meta:
        refused = f"pod {name} is being deleted, cannot be assigned to a host"
    elif spec.get("nodeName"):
        refused = f"pod {name} is already assigned to node {go_value(spec['nodeName'])}"
    elif spec.get("schedulingGates"):
        refused = f"pod {name} has non-empty .spec.schedulingGates"
    else:
        status = {k: v for k, v in (stored.get("status") or {}).items() if k != "nominatedNodeName"}
        scheduled = {"type": "PodScheduled", "status": "True"}
        status["conditions"] = with_condition(status.get("conditions"), scheduled, now=now)
        return {**stored, "spec": {**spec, "nodeName": node}, "status": status}
    raise Conflict(
        f'Operation cannot be fulfilled on pods/binding "{name}": {refused}',
        kind="Pod",
        namespace=namespace,
        name=name,
    )


def with_condition(conditions: Any, condition: Obj, *, now: str) -> list[Obj]:
    """``conditions`` with ``condition`` put in its type's place, or appended (``UpdatePodCondition``):
    it replaces the old one whole, whose ``lastTransitionTime`` stays when the status does not change."""
    current = [c for c in conditions or () if isinstance(c, dict)]
    for index, old in enumerate(current):
        if old.get("type") == condition["type"]:
            if old.get("status") != condition["status"]:
                current[index] = {**condition, "lastTransitionTime": now}
            elif "lastTransitionTime" in old:
                current[index] = {**condition, "lastTransitionTime": old["lastTransitionTime"]}
            else:  # the old one's zero time is copied: still none
                current[index] = dict(condition)
            return current
    return [*current, {**condition, "lastTransitionTime": now}]
