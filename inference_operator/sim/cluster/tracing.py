"""What the flight recorder is told of the simulated cluster: the Deployment controller's moves.

The trace shows the platform beside the operator (``platform`` records, docs/trace-format.md):
each Deployment status the controller writes, named by what a person reading the trace wants
to know first — pods became ready, pods stopped being ready, or only the rollout's numbers
moved — with the numbers before and after and the ``Progressing`` reason.
"""

from __future__ import annotations

from inference_operator.core.objects import Obj, obj_key
from inference_operator.trace.recorder import Tracer

__all__ = ["trace_status"]

_NUMBERS = ("replicas", "updatedReplicas", "readyReplicas", "observedGeneration")


def trace_status(tracer: Tracer, *, old: Obj, written: Obj) -> None:
    """Tell ``tracer`` that the Deployment ``written`` now has its status (it had ``old``)."""
    new = written.get("status") or {}
    detail: Obj = {name: new.get(name) for name in _NUMBERS}
    detail["was"] = {name: old.get(name) for name in _NUMBERS if name in old}
    progressing = [c for c in new.get("conditions") or [] if c.get("type") == "Progressing"]
    if progressing:
        detail["progressing"] = progressing[0].get("reason")
    was_ready, ready = int(old.get("readyReplicas") or 0), int(new.get("readyReplicas") or 0)
    action = "pods-ready" if ready > was_ready else "pods-not-ready" if ready < was_ready else "status"
    rv = str(written["metadata"].get("resourceVersion") or "")
    tracer.platform("deployment-controller", action, "Deployment", obj_key(written), rv=rv or None, detail=detail)
