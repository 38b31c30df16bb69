"""The rollout step of a pass: the Deployment to apply, with the strategy its plan chose.

Reads what the plan needs (``rollout.py``) from the Backend's caches: the live Deployment, the
Nodes and Pods (``Backend.cached``; counted only when a new plan is made or a new pod waits),
and, while a template change rolls out, this service's pods, to find a stall or a new pod left
unplaced, and whether the maxUnavailable bound holds the rollout (``rollouthold.py``). A
converged object reads no pod at all. Where the backend has no Pod cache, the stall is the one
the last pod diagnosis found in the pods it read (the reconciler's), so a stall is still found,
one look later; nodes cannot be counted there either.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from dataclasses import replace

from inference_operator.api.constants import DEPLOYMENT, EventReason, Reason
from inference_operator.api.constants import ConditionType as CT
from inference_operator.api.models import InferenceService
from inference_operator.core.conditions import Cond
from inference_operator.core.objects import Obj
from inference_operator.core.ports import Backend
from inference_operator.reconcile.builders import desired_deployment, pod_template
from inference_operator.reconcile.capacity import UNKNOWN, Capacity, count_capacity
from inference_operator.reconcile.rollout import ANNOTATION, RolloutPlan, plan_rollout
from inference_operator.reconcile.rollouthold import held_by_bound
from inference_operator.reconcile.rolloutpods import Stall, detect_stall, new_pod_unplaced, rolling_out
from inference_operator.reconcile.status import DeploymentView

log = logging.getLogger(__name__)


def _pod_key(pod: Obj) -> tuple[str, str]:
    meta = pod.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


class RolloutStep:
    """Plans each pass's rollout; keeps nothing between passes (the plan lives on the Deployment)."""

    def __init__(self, backend: Callable[[], Backend], *, diagnosed_stall: Callable[[str], Stall | None]) -> None:
        """``backend``: the reconciler's backend, looked up at each call (tests wrap it);
        ``diagnosed_stall(uid)``: the stall the last pod diagnosis found, where no Pod cache exists."""
        self._backend = backend
        self._diagnosed = diagnosed_stall

    def desired(self, isvc: InferenceService) -> tuple[Obj, RolloutPlan]:
        """The Deployment to apply and the plan it carries."""
        backend = self._backend()
        template = pod_template(isvc)
        live = backend.get(DEPLOYMENT, isvc.namespace, isvc.name)
        view = DeploymentView.of(live)
        pods = self._pods(backend, isvc, live, view)

        def count(leave_out: Collection[Obj] = ()) -> Capacity:
            return self._capacity(backend, template, isvc.spec.replicas, leave_out=leave_out)

        plan = plan_rollout(
            isvc,
            template=template,
            live=live,
            capacity=count,
            stall=self._stall(isvc, view, pods),
            unplaced=pods is not None and new_pod_unplaced(pods, image=isvc.spec.image),
        )
        if pods is not None and not plan.blocked:
            plan = replace(plan, held=held_by_bound(isvc, plan=plan, live=live, pods=pods, count=count))
        strategy = plan.deployment_strategy()
        annotations = {ANNOTATION: plan.annotation()} if plan.written else None
        return desired_deployment(isvc, template=template, strategy=strategy, annotations=annotations), plan

    def _capacity(self, backend: Backend, template: Obj, replicas: int, *, leave_out: Collection[Obj]) -> Capacity:
        """The room for replicas of ``template``, the pods ``leave_out`` holding nothing."""
        nodes, pods = backend.cached("Node"), backend.cached("Pod")
        if nodes is None or pods is None:
            return UNKNOWN
        if leave_out:
            gone = {_pod_key(p) for p in leave_out}
            pods = [p for p in pods if _pod_key(p) not in gone]
        return count_capacity(template["spec"], nodes=nodes, pods=pods, limit=max(replicas, 1))

    def _pods(
        self, backend: Backend, isvc: InferenceService, live: Obj | None, view: DeploymentView
    ) -> list[Obj] | None:
        """This service's pods in the Pod cache while a template change of its GPU pods rolls
        out (``rolling_out``, or old pods left); None otherwise, or without a Pod cache."""
        if isvc.spec.gpu <= 0 or not (view.total > view.updated or rolling_out(live)):
            return None
        return backend.cached_owned("Pod", isvc.namespace, isvc.name)

    def _stall(self, isvc: InferenceService, view: DeploymentView, pods: list[Obj] | None) -> Stall | None:
        old = view.total - view.updated
        if isvc.spec.gpu <= 0 or old <= 0:
            return None
        if pods is None:  # old pods left, so the rollout is unfinished: there is no Pod cache
            return self._diagnosed(isvc.uid)
        return detect_stall(gpu=isvc.spec.gpu, old_pods=old, pods=pods, image=isvc.spec.image)

    def announce(self, owner: Obj, plan: RolloutPlan | None) -> None:
        """The switch from surging to replacing, as an Event a person sees in ``kubectl describe``."""
        if plan is None or not plan.switched:
            return
        meta = owner["metadata"]
        log.warning(
            "Switched rollout to replacing name=%s namespace=%s message=%r",
            meta["name"],
            meta["namespace"],
            plan.message,
        )
        self._backend().record_event(owner, type="Warning", reason=EventReason.ROLLOUT_SWITCHED, message=plan.message)


def blocked_condition(plan: RolloutPlan | None, view: DeploymentView, replicas: int) -> Cond | None:
    """``DeploymentReady=False, RolloutBlocked`` while a blocked plan, or the maxUnavailable bound,
    keeps the rollout from finishing."""
    why = (plan.blocked or plan.held) if plan is not None else ""
    if not why or not view.exists:
        return None
    if view.updated >= replicas and view.total <= view.updated and view.ready >= replicas:
        return None  # finished after all (capacity came free)
    message = f"{view.updated} of {replicas} replicas updated, {view.ready} ready; {why}"
    return Cond(CT.DEPLOYMENT_READY, "False", Reason.ROLLOUT_BLOCKED, message)
