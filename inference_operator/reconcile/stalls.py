"""What status says when a child cannot be written: the condition, and the error to retry.

Nothing stalls silently: a Deployment or Service the API server refuses, or one
someone else owns under our name, becomes a False condition of that child, with a reason a
person can act on and the API server's own words, while the error goes back to the queue.
"""

from __future__ import annotations

from dataclasses import dataclass

from inference_operator.api.constants import SERVICE, Reason
from inference_operator.api.constants import ConditionType as CT
from inference_operator.api.models import InferenceService
from inference_operator.core.conditions import Cond
from inference_operator.core.errors import ApiError, Conflict
from inference_operator.core.objects import Obj, key_of, owner_key

__all__ = ["Blocked", "ChildConflict", "child_condition"]


class ChildConflict(ApiError):
    """A child with the InferenceService's name exists but is controlled by something else."""

    code = 409
    reason = "ChildConflict"


@dataclass(frozen=True)
class Blocked:
    """A child the pass could not write: the condition that says why, and the error to raise
    once status is written (so the key goes back to the queue with backoff)."""

    condition: Cond
    error: ApiError

    @classmethod
    def conflict(cls, isvc: InferenceService, kind: str, live: Obj) -> Blocked:
        if owner_key(live) == key_of(isvc.namespace, isvc.name):
            # The child of a deleted InferenceService of the same name: the garbage collector
            # takes it soon, then ours is created. Nothing for a person to do.
            message = (
                f"{kind} {isvc.namespace}/{isvc.name} still belongs to a deleted InferenceService of the same "
                "name; waiting for the garbage collector to remove it"
            )
            error = ChildConflict(message, kind=kind, namespace=isvc.namespace, name=isvc.name)
            return cls(Cond(child_condition(kind), "False", Reason.WAITING_FOR_CHILDREN, message), error)
        owner = _controller_of(live)
        message = (
            f"{kind} {isvc.namespace}/{isvc.name} already exists but is not controlled by this InferenceService "
            f"(uid {isvc.uid}): {owner}; delete or rename that {kind}, or rename the InferenceService"
        )
        error = ChildConflict(message, kind=kind, namespace=isvc.namespace, name=isvc.name)
        return cls(Cond(child_condition(kind), "False", Reason.CHILD_CONFLICT, message), error)

    @classmethod
    def from_error(cls, isvc: InferenceService, kind: str, verb: str, err: ApiError) -> Blocked:
        where = f"{kind} {isvc.namespace}/{isvc.name}"
        if err.code == 403:
            reason = Reason.CHILD_FORBIDDEN
            hint = "check the operator's RBAC, resource quotas and admission policies"
        elif isinstance(err, Conflict):
            reason = Reason.API_UNAVAILABLE
            hint = "someone else changed it at the same moment; retrying"
        elif err.code in (408, 429):
            reason = Reason.API_UNAVAILABLE
            hint = "the API server is busy (throttling or a timeout); retrying"
        elif 400 <= err.code < 500:
            reason = Reason.CHILD_REJECTED
            hint = "change the InferenceService (or what rejects it) so the child is valid"
        else:
            reason = Reason.API_UNAVAILABLE
            hint = "the API server should recover by itself"
        message = f"cannot {verb} {where}: the API server answered {err.code} {err.reason}: {err.api_message}; {hint}"
        return cls(Cond(child_condition(kind), "False", reason, message), err)


def child_condition(kind: str) -> str:
    """The condition that reports on a child of this kind."""
    return CT.SERVICE_READY if kind == SERVICE else CT.DEPLOYMENT_READY


def _controller_of(obj: Obj) -> str:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return f"its controller is {ref.get('kind')} {ref.get('name')} (uid {ref.get('uid')})"
    return "it has no controller"
