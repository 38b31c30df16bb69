"""What the flight recorder hears of the simulated cluster: the capacity facts of Nodes and Pods.

The trace viewer shows a GPU pool filling and draining during a rollout: each node with what
it can hold and what its pods hold, and the pods no node could take, with the scheduler's
words. A Node or Pod object carries far more than that (heartbeats, timestamps, the whole
container spec with its env and args), and most of its updates change none of it. So each
object is cut down here to the few facts capacity depends on (:func:`node_state`,
:func:`pod_state`, pure), and :class:`CapacityTrace` tells the tracer only when those facts
moved: a compact record per real change, no env or args ever read. The record types are
``node`` and ``pod`` in docs/trace-format.md.
"""

from __future__ import annotations

from typing import Final

from inference_operator.core.nodefit import allocatable, is_ready
from inference_operator.core.objects import Obj, obj_key
from inference_operator.core.resources import pod_requests
from inference_operator.sim.cluster import podstate
from inference_operator.sim.cluster.replicasets import controller_of
from inference_operator.trace.recorder import Tracer

__all__ = ["ADDED", "CHANGED", "DELETED", "CapacityTrace", "node_state", "pod_state"]

ADDED: Final = "added"
CHANGED: Final = "changed"
DELETED: Final = "deleted"


def _taint(taint: Obj) -> str:
    """A taint as ``kubectl describe node`` writes it: ``key=value:Effect`` (``key:Effect``)."""
    value = taint.get("value")
    return f"{taint.get('key', '')}{'=' + str(value) if value else ''}:{taint.get('effect', '')}"


def node_state(node: Obj) -> Obj:
    """What the scheduler may place on ``node`` and whether it places anything there at all."""
    spec = node.get("spec") or {}
    state: Obj = {
        "allocatable": allocatable(node),
        "ready": is_ready(node),
        "unschedulable": bool(spec.get("unschedulable")),
    }
    taints = [_taint(t) for t in spec.get("taints") or () if isinstance(t, dict)]
    if taints:
        state["taints"] = taints
    return state


def pod_state(pod: Obj) -> Obj:
    """Where ``pod`` runs (or why nowhere), what it holds there and how far it got.

    ``requests`` are the scheduler's integers (cpu in millicores) and only the non-zero ones;
    ``unschedulable`` is the scheduler's message while the pod is bound nowhere.
    """
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    owner = controller_of(pod)
    state: Obj = {
        "owner": f"{owner.get('kind', '')}/{owner.get('name', '')}" if owner is not None else None,
        "requests": {name: value for name, value in sorted(pod_requests(spec).items()) if value},
        "phase": str(status.get("phase") or "Pending"),
        "ready": podstate.is_ready(pod),
        "terminating": podstate.is_terminating(pod),
    }
    node = podstate.node_of(pod)
    if node:
        state["nodeName"] = node
    else:
        scheduled = podstate.condition(pod, "PodScheduled")
        if scheduled is not None and scheduled.get("status") == "False":
            state["unschedulable"] = str(scheduled.get("message") or scheduled.get("reason") or "")
    for container in status.get("containerStatuses") or ():
        reason = (((container.get("state") or {}).get("waiting")) or {}).get("reason")
        if reason:  # why a bound pod is not running yet, or no longer: CrashLoopBackOff
            state["waiting"] = str(reason)
            break
    return state


class CapacityTrace:
    """Tells a tracer each change of a Node's or Pod's capacity facts, and nothing else.

    It remembers the facts last told per object, so an update that moves none of them
    (a heartbeat, a timestamp, a label) records nothing.
    """

    def __init__(self) -> None:
        self._told: dict[tuple[str, str], Obj] = {}  # (kind, name) → the facts last told

    def node(self, tracer: Tracer, old: Obj | None, new: Obj | None) -> None:
        """A watch event of a Node (``new`` None: deleted)."""
        node = new if new is not None else old
        if node is not None:
            self._tell(tracer, "node", str(node["metadata"]["name"]), None if new is None else node_state(new))

    def pod(self, tracer: Tracer, old: Obj | None, new: Obj | None) -> None:
        """A watch event of a Pod (``new`` None: deleted)."""
        pod = new if new is not None else old
        if pod is not None:
            self._tell(tracer, "pod", obj_key(pod), None if new is None else pod_state(new))

    def _tell(self, tracer: Tracer, kind: str, name: str, state: Obj | None) -> None:
        before = self._told.get((kind, name))
        if state is None:
            if self._told.pop((kind, name), None) is not None:
                tracer.cluster(kind, name, change=DELETED, state={})
            return
        if state == before:
            return
        self._told[(kind, name)] = state
        tracer.cluster(kind, name, change=ADDED if before is None else CHANGED, state=state)
