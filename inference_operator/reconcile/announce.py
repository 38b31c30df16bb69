"""The Events a reconcile pass posts, worded for the person reading ``kubectl describe``.

Pure functions: what a pass did (one Normal Event saying all of it, not one per write: Events
are writes too) and the status transitions a person cares about (ready, degraded, failed,
stalled), each posted once per transition, not once per pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from inference_operator.api.constants import ConditionType as CT
from inference_operator.api.constants import EventReason, Reason
from inference_operator.core.objects import Obj

__all__ = ["Action", "Done", "action_summary", "transition_events"]


@dataclass(frozen=True)
class Done:
    """What a pass did to a child, for the Event: a verb, and the fields it patched."""

    verb: str
    fields: str = ""


Action = Done | None


def action_summary(name: str, children: dict[str, Action], lb_note: str) -> tuple[str, str] | None:
    """(reason, message) of the one Normal Event of a pass that changed something, or None.

    A new InferenceService gets one ("Created Deployment x and Service x; registered … with
    the load balancer"), not three.
    """
    by_verb: dict[str, list[str]] = {}
    for kind, action in children.items():
        if action is not None:
            detail = f" ({action.fields})" if action.fields else ""
            by_verb.setdefault(action.verb, []).append(f"{kind} {name}{detail}")
    parts = [f"{verb} {' and '.join(kinds)}" for verb, kinds in by_verb.items()]
    if lb_note:
        parts.append(lb_note if not parts else lb_note[0].lower() + lb_note[1:])
    if not parts:
        return None
    return next(iter(by_verb), EventReason.LB_REGISTERED), "; ".join(parts)


STALL_REASONS = (Reason.CHILD_CONFLICT, Reason.CHILD_REJECTED, Reason.CHILD_FORBIDDEN, Reason.API_UNAVAILABLE)


def transition_events(name: str, previous: Obj, status: Obj) -> list[tuple[str, str, str]]:
    """(type, reason, message) of the Events for the transitions from ``previous`` to ``status``."""
    old: dict[str, dict[str, Any]] = {c["type"]: c for c in previous.get("conditions") or []}
    new: dict[str, dict[str, Any]] = {c["type"]: c for c in status.get("conditions") or []}

    def flipped(type_: str, status_: str, reason: str | None = None) -> dict[str, Any] | None:
        c = new.get(type_)
        if c is None or c["status"] != status_ or (reason and c["reason"] != reason):
            return None
        o = old.get(type_)
        if (
            o is not None
            and o["status"] == c["status"]
            and o["reason"] == c["reason"]
            and (reason not in Reason.NEEDS_ACTION or o["message"] == c["message"])
        ):
            return None
        return c

    out: list[tuple[str, str, str]] = []
    if c := flipped(CT.READY, "True"):
        out.append(("Normal", EventReason.READY, f"InferenceService {name} is ready: {c['message']}"))
    if c := flipped(CT.DEGRADED, "True"):
        out.append(("Warning", EventReason.DEGRADED, f"InferenceService {name} is degraded: {c['message']}"))
    if c := flipped(CT.PROGRESSING, "False", Reason.PROGRESS_DEADLINE_EXCEEDED):
        out.append(("Warning", EventReason.FAILED, f"InferenceService {name} failed: {c['message']}"))
    if c := flipped(CT.READY, "False", Reason.INVALID_SPEC):
        out.append(("Warning", EventReason.INVALID_SPEC, f"Invalid spec: {c['message']}"))
    for reason in STALL_REASONS:
        if c := flipped(CT.READY, "False", reason):
            out.append(("Warning", reason, f"InferenceService {name} is stalled: {c['message']}"))
    return out
