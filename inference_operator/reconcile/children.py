"""One child of an InferenceService brought to what the builders say: compare, then write.

Split from the reconciler so that its pass reads as a list of steps. The children step has two
halves: :func:`diff_child` compares the live child with the desired one on the fields the
operator owns (its answer is also the trace's ``diff`` record, told before any write), and
:func:`act_on_child` makes the one write that answer calls for. Both raise the API's errors;
the reconciler turns a refused write into a stalled condition.
"""

from __future__ import annotations

import logging

from inference_operator.api.constants import FIELD_MANAGER, SERVICE, EventReason
from inference_operator.api.constants import ConditionType as CT
from inference_operator.api.models import InferenceService
from inference_operator.core.conditions import is_true
from inference_operator.core.objects import Obj, controller_owner_uid
from inference_operator.core.ports import Backend
from inference_operator.reconcile.announce import Action, Done
from inference_operator.reconcile.ownership import upgrade_ownership
from inference_operator.reconcile.tracesteps import Diffed
from inference_operator.ssa.compare import NOT_APPLIED, drift

log = logging.getLogger(__name__)


def diff_child(*, backend: Backend, isvc: InferenceService, kind: str, desired: Obj) -> Diffed:
    """The live child (from the cache, or the API server when the cache has none) against
    what the operator applies: only the fields it owns are compared."""
    live = backend.get(kind, isvc.namespace, isvc.name)
    if live is None:
        # The cache holds only children with our label; an apply would merge into
        # whatever has the name. Ask the API server whether something is in the way.
        live = backend.read(kind, isvc.namespace, isvc.name)
        if live is None:
            return Diffed(kind=kind, live=None, desired=desired, changed=None)
    if controller_owner_uid(live) != isvc.uid:
        return Diffed(kind=kind, live=live, desired=desired, changed=None, conflict=True)
    return Diffed(kind=kind, live=live, desired=desired, changed=drift(live, desired, kind=kind, manager=FIELD_MANAGER))


def act_on_child(*, backend: Backend, isvc: InferenceService, diff: Diffed) -> tuple[Obj | None, Action]:
    """Create the child, patch the owned fields that differ, or leave it as it is; returns the
    child and what was done (None: nothing)."""
    if diff.live is None:
        return _apply(backend, isvc, diff.kind, diff.desired, created=True)
    if not diff.changed:
        return diff.live, None
    if NOT_APPLIED in diff.changed:
        upgrade_ownership(backend, diff.kind, isvc.namespace, isvc.name)
    return _apply(backend, isvc, diff.kind, diff.desired, fields=diff.changed)


def _apply(
    backend: Backend,
    isvc: InferenceService,
    kind: str,
    desired: Obj,
    *,
    created: bool = False,
    fields: list[str] | None = None,
) -> tuple[Obj, Action]:
    applied = backend.apply(desired)
    if created:
        recreated = _condition_true(isvc.raw, _child_condition(kind))
        verb = EventReason.RECREATED if recreated else EventReason.CREATED
        log.info("%s %s name=%s namespace=%s", verb, kind, isvc.name, isvc.namespace)
        return applied, Done(verb)
    shown = ", ".join(fields or [])
    log.info("Patched %s name=%s namespace=%s fields=%s", kind, isvc.name, isvc.namespace, shown)
    return applied, Done(EventReason.PATCHED, shown)


def _child_condition(kind: str) -> str:
    return CT.SERVICE_READY if kind == SERVICE else CT.DEPLOYMENT_READY


def _condition_true(obj: Obj, type_: str) -> bool:
    return is_true((obj.get("status") or {}).get("conditions") or [], type_)
