"""The InferenceService reconciler: one pass from observed state to desired state.

It follows the four rules of reconcile:

1. level-triggered: every pass reads the whole current state from the cache and never asks
   which event woke it; a missing InferenceService means there is nothing to do;
2. idempotent: children are written with server-side apply only when what the operator
   applies differs from the live child or it owns a field it no longer sets (``drift``); fields
   others own are never compared; status is written only when it changed; a converged object
   costs zero writes;
3. never block: waiting for pods is ``requeue_after``, never a sleep;
4. optimistic: status and finalizer writes carry the resourceVersion they read (a Conflict
   goes back to the queue with backoff); child applies carry none: the API server merges only
   the operator's own fields, so a stale read cannot clobber anyone else's.

It knows nothing about Kopf or the simulator: it talks to a ``Backend`` and a
``LoadBalancerProvider``. Errors are raised; the controller turns them into backoff.
"""

from __future__ import annotations

import datetime
import logging

from inference_operator.api.constants import (
    DEPLOYMENT,
    FINALIZER,
    KIND,
    SERVICE,
    EventReason,
    Phase,
    Reason,
)
from inference_operator.api.constants import ConditionType as CT
from inference_operator.api.models import NAME_RULE, InferenceService, SpecError
from inference_operator.core.clock import Clock, format_timestamp, parse_timestamp
from inference_operator.core.conditions import Cond, find
from inference_operator.core.errors import ApiError
from inference_operator.core.objects import Obj, has_finalizer, is_being_deleted, key_of
from inference_operator.core.ports import Backend, LoadBalancerError, LoadBalancerProvider, Result
from inference_operator.reconcile.announce import Action, action_summary, transition_events
from inference_operator.reconcile.balancer import LB_RECHECK_SECONDS, BalancerSync, describe
from inference_operator.reconcile.builders import desired_service
from inference_operator.reconcile.children import act_on_child, diff_child
from inference_operator.reconcile.deferral import StatusDeferral
from inference_operator.reconcile.podcheck import STARTING_RECHECK, WORDS_RECHECK, PodChecks
from inference_operator.reconcile.podproblems import PodProblem
from inference_operator.reconcile.refusals import RefusedApplies, refused_deployment
from inference_operator.reconcile.rollout import RolloutPlan
from inference_operator.reconcile.rolloutstep import RolloutStep, blocked_condition
from inference_operator.reconcile.stalls import Blocked
from inference_operator.reconcile.status import (
    DeploymentView,
    LoadBalancerState,
    compute_status,
    invalid_spec_status,
    override_status,
)
from inference_operator.reconcile.tracesteps import (
    Acted,
    Decided,
    Finalized,
    Observed,
    PhaseRecord,
    StatusDecided,
)
from inference_operator.trace.recorder import NULL_TRACER, Tracer

log = logging.getLogger(__name__)

DEFAULT_REQUEUE_WHILE_PROGRESSING = 5.0
STUCK_AFTER = datetime.timedelta(seconds=10)
STUCK_MARGIN = 0.5  # look again this long after a rollout would count as stuck


class Reconciler:
    """Reconciles one InferenceService per call; safe to call from several worker threads for
    different keys (the workqueue never hands one key to two workers)."""

    def __init__(
        self,
        backend: Backend,
        load_balancer: LoadBalancerProvider,
        clock: Clock,
        *,
        requeue_while_progressing: float = DEFAULT_REQUEUE_WHILE_PROGRESSING,
        tracer: Tracer = NULL_TRACER,
    ) -> None:
        self.backend = backend
        self.tracer = tracer
        """Told each phase of each pass (observe, diff, act, status); off by default."""
        self.clock = clock
        self.requeue_while_progressing = requeue_while_progressing
        # Per-uid memory between passes. No lock: the workqueue never hands one key to two
        # workers, so an entry is only touched by one thread at a time, and single dict
        # operations are atomic (the pod diagnoses too: podcheck.py).
        self._deferral = StatusDeferral(clock)
        self._pods = PodChecks()
        self._refusals = RefusedApplies(clock)
        self._rollout = RolloutStep(lambda: self.backend, diagnosed_stall=self._pods.stall)
        # Events follow ``self.backend``, even when a test puts a wrapper in its place.
        self.balancer = BalancerSync(load_balancer, lambda *a, **k: self.backend.record_event(*a, **k))

    @property
    def lb(self) -> LoadBalancerProvider:
        """The load balancer as composed once by the backend's ``operator_ports``."""
        return self.balancer.lb

    # -- entry point -------------------------------------------------------------------------

    def reconcile(self, namespace: str, name: str) -> Result:
        key = key_of(namespace, name)
        obj = self.backend.get(KIND, namespace, name)
        self._tell(key, Observed(obj=obj, read_child=lambda kind: self.backend.get(kind, namespace, name)))
        if obj is None:
            return Result()  # deleted: owner references let the garbage collector take the children
        if is_being_deleted(obj):
            return self._finalize(key, obj)
        try:
            isvc = InferenceService.from_object(obj)
        except SpecError as err:
            return self._report_invalid_spec(key, obj, err.message)
        # The Deployment first: its pods take longest. The children need no finalizer (the
        # garbage collector takes them); the load balancer does, so it comes before that.
        # A child that cannot be written does not stop the pass: status must say why.
        blocked: list[Blocked] = []
        desired, plan = self._rollout.desired(isvc)
        deployment, deployment_action = self._ensure_child(key, isvc, DEPLOYMENT, desired, blocked)
        service, service_action = self._ensure_child(key, isvc, SERVICE, desired_service(isvc), blocked)
        obj, finalizer_added = self._ensure_finalizer(obj)
        # Registration follows what can serve: no Deployment, no record at the balancer.
        refused = refused_deployment(blocked)
        lb, lb_note = self.balancer.ensure(isvc, obj, service, deployment=deployment is not None, refused=refused)
        actions = {DEPLOYMENT: deployment_action, SERVICE: service_action}
        self._announce_actions(obj, isvc.name, actions, lb_note)
        self._rollout.announce(obj, plan if deployment_action is not None else None)
        self._tell(
            key, Acted(children=actions, finalizer_added=finalizer_added, lb_note=lb_note, blocked=tuple(blocked))
        )
        view = DeploymentView.of(deployment)
        return self._update_status(
            key, isvc=isvc, obj=obj, view=view, service=service, lb=lb, blocked=blocked, plan=plan
        )

    def _tell(self, key: str, record: PhaseRecord) -> None:
        """The one place the tracer hears of a pass: each phase's record, as that phase ends
        (a child's diff before its write, as the trace's order says). Records are values the
        steps return anyway; only while tracing do they become trace fields."""
        if self.tracer.enabled:
            self.tracer.phase(record.phase, key, record.fields())

    def _update_status(
        self,
        key: str,
        *,
        isvc: InferenceService,
        obj: Obj,
        view: DeploymentView,
        service: Obj | None,
        lb: LoadBalancerState,
        blocked: list[Blocked],
        plan: RolloutPlan,
    ) -> Result:
        """Write the status this pass saw (or hold it while the Deployment controller catches
        up), raise what blocked the pass, and say when to look again."""
        previous = obj.get("status") or {}
        if not blocked and self._deferral.hold(isvc.uid, previous, view, lb):
            self._tell(key, StatusDecided(previous=previous, status=previous, deferred=True))
            return Result(requeue_after=self.requeue_while_progressing)
        problem = self._pod_problem(isvc, view)
        stall = blocked[0].condition if blocked else blocked_condition(plan, view, isvc.spec.replicas)
        rollout = plan.status(isvc.spec.replicas) if plan.written or plan.blocked else None
        status = compute_status(
            isvc, previous, view, service, lb, now=self._now(), problem=problem, blocked=stall, rollout=rollout
        )
        self._write_status(key, obj, status)
        if blocked:
            raise blocked[0].error  # back to the queue, with backoff: status already says why
        if lb.state == "failed":
            raise LoadBalancerError(lb.message)
        result = self._next(status, view)
        if lb.recheck:
            result = _sooner(result, LB_RECHECK_SECONDS)
        if self._pods.recheck(isvc.uid):
            result = _sooner(result, WORDS_RECHECK)
        return result

    # -- steps ------------------------------------------------------------------------------

    def _stuck_in(self, view: DeploymentView) -> float | None:
        """Seconds until a moving rollout counts as stuck (None: it is not moving, or already is)."""
        if not view.last_progress or view.deadline_exceeded:
            return None
        left = (STUCK_AFTER - (self.clock.wall() - parse_timestamp(view.last_progress))).total_seconds()
        return left if left > 0 else None

    def _pod_problem(self, isvc: InferenceService, view: DeploymentView) -> PodProblem | None:
        """Ask the pods why replicas are missing, or why a rollout does not finish, once it has
        made no progress for ``STUCK_AFTER`` (most young pods are simply starting). The answer is kept until the
        Deployment's status moves or the scheduler's words for its pods in the Pod cache change, or as long as
        ``PodsRead.still_holds`` says (podcheck.py): 1,000 Degraded objects must not LIST their pods on every
        pass."""
        rolling = view.total > view.updated  # old pods still run: a new one may be stuck behind them
        if not view.observed or (view.ready >= isvc.spec.replicas and not rolling) or self._stuck_in(view) is not None:
            self._pods.forget(isvc.uid)
            return None
        return self._pods.problem(self.backend, isvc, view, now=self.clock.now(), epoch=self.balancer.resync_epoch)

    def _ensure_finalizer(self, obj: Obj) -> tuple[Obj, bool]:
        """The object with our finalizer, and whether this pass added it."""
        if has_finalizer(obj):
            return obj, False
        patched = self._patch_finalizers(obj, [*(obj["metadata"].get("finalizers") or []), FINALIZER])
        log.info("Added finalizer name=%s namespace=%s", obj["metadata"]["name"], obj["metadata"]["namespace"])
        return patched, True

    def _patch_finalizers(self, obj: Obj, finalizers: list[str]) -> Obj:
        """Replace the finalizer list, on the condition that nobody changed the object since."""
        meta = obj["metadata"]
        return self.backend.patch(
            KIND,
            meta["namespace"],
            meta["name"],
            {"metadata": {"finalizers": finalizers, "resourceVersion": meta["resourceVersion"]}},
        )

    def _ensure_child(
        self, key: str, isvc: InferenceService, kind: str, desired: Obj, blocked: list[Blocked]
    ) -> tuple[Obj | None, Action]:
        """Create or update one child with server-side apply; returns it (None if it could not
        be had) and what was done. A write the API server refuses is appended to ``blocked``,
        not raised: the pass goes on so that status can say why; the very object it refused is
        sent again only after a backoff (``refusals.py``)."""
        if (held := self._refusals.still_refused(uid=isvc.uid, kind=kind, desired=desired)) is not None:
            blocked.append(held)
            return self.backend.get(kind, isvc.namespace, isvc.name), None
        try:
            diff = diff_child(backend=self.backend, isvc=isvc, kind=kind, desired=desired)
        except ApiError as err:
            return self._refused(isvc=isvc, kind=kind, desired=desired, live=None, err=err, blocked=blocked)
        self._tell(key, diff)
        if diff.conflict and diff.live is not None:
            blocked.append(Blocked.conflict(isvc, kind, diff.live))
            return None, None
        try:
            child, action = act_on_child(backend=self.backend, isvc=isvc, diff=diff)
        except ApiError as err:
            return self._refused(isvc=isvc, kind=kind, desired=desired, live=diff.live, err=err, blocked=blocked)
        if action is not None:
            self._refusals.accepted(uid=isvc.uid, kind=kind)
        return child, action

    def _refused(
        self,
        *,
        isvc: InferenceService,
        kind: str,
        desired: Obj,
        live: Obj | None,
        err: ApiError,
        blocked: list[Blocked],
    ) -> tuple[Obj | None, Action]:
        """A refused write (or read) of a child: blocked, logged, remembered (``refusals.py``),
        and the pass goes on."""
        blocked.append(Blocked.from_error(isvc, kind, "create" if live is None else "update", err))
        self._refusals.refused(uid=isvc.uid, kind=kind, desired=desired, blocked=blocked[-1])
        log.warning(
            "Failed to write child kind=%s name=%s namespace=%s code=%d error=%s",
            kind,
            isvc.name,
            isvc.namespace,
            err.code,
            err.api_message,
        )
        return live, None

    def _announce_actions(self, owner: Obj, name: str, children: dict[str, Action], lb_note: str) -> None:
        if (summary := action_summary(name, children, lb_note)) is not None:
            reason, message = summary
            self.backend.record_event(owner, type="Normal", reason=reason, message=message)

    def begin_resync(self) -> None:
        """A resync started: each object's next pass checks its load balancer record once."""
        self.balancer.begin_resync()

    def _finalize(self, key: str, obj: Obj) -> Result:
        """Deletion branch: release the load balancer, then (only then) drop our finalizer."""
        meta = obj["metadata"]
        if not has_finalizer(obj):
            self._tell(key, Decided(subject="deletion", decision="none", reason="no finalizer of ours"))
            return Result()
        why = "release the load balancer, then remove our finalizer"
        self._tell(key, Decided(subject="deletion", decision="finalize", reason=why))
        self.balancer.forget(meta.get("uid", ""))
        self._deferral.forget(meta.get("uid", ""))
        self._pods.forget(meta.get("uid", ""))
        self._refusals.forget(meta.get("uid", ""))
        releasable = NAME_RULE.check(meta["name"])
        try:
            if releasable:
                self.balancer.release(obj, key)
            else:  # no Service can have this name, so no version of the operator registered it
                log.info(
                    "Skipped release, name cannot have a record name=%s namespace=%s", meta["name"], meta["namespace"]
                )
        except LoadBalancerError as err:
            message = (
                f"releasing the load balancer record of {key} failed: {describe(err)}; the finalizer stays "
                "until the release succeeds, retrying with backoff"
            )
            log.warning("Failed to release load balancer key=%s error=%s", key, describe(err))
            self.backend.record_event(obj, type="Warning", reason=EventReason.LB_FAILED, message=message)
            self._write_terminating_status(key, obj, message)
            raise
        self._patch_finalizers(obj, [f for f in meta.get("finalizers") or [] if f != FINALIZER])
        log.info("Removed finalizer name=%s namespace=%s", meta["name"], meta["namespace"])
        self._tell(key, Finalized(released=releasable))
        return Result()

    # -- status -----------------------------------------------------------------------------

    def _now(self) -> str:
        return format_timestamp(self.clock.wall())

    def _write_status(self, key: str, obj: Obj, status: Obj) -> None:
        """Write ``status`` if it differs from the one ``obj`` has, and announce what flipped."""
        decision = StatusDecided(previous=obj.get("status") or {}, status=status)
        self._tell(key, decision)
        if not decision.written:
            return
        meta = obj["metadata"]
        self.backend.update_status(
            {
                "apiVersion": obj["apiVersion"],
                "kind": obj["kind"],
                "metadata": {
                    "name": meta["name"],
                    "namespace": meta["namespace"],
                    "resourceVersion": meta["resourceVersion"],
                },
                "status": status,
            }
        )
        self._announce_transitions(obj, decision.previous, status)

    def _announce_transitions(self, obj: Obj, previous: Obj, status: Obj) -> None:
        for type_, reason, message in transition_events(obj["metadata"]["name"], previous, status):
            self._event(obj, type_, reason, message)

    def _event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        meta = obj["metadata"]
        level = logging.WARNING if type_ == "Warning" else logging.INFO
        log.log(level, "%s name=%s namespace=%s message=%r", reason, meta["name"], meta["namespace"], message)
        self.backend.record_event(obj, type=type_, reason=reason, message=message)

    def _report_invalid_spec(self, key: str, obj: Obj, message: str) -> Result:
        generation = int(obj["metadata"].get("generation") or 1)
        previous = obj.get("status") or {}
        status = invalid_spec_status(previous, generation=generation, message=message, now=self._now())
        self._tell(key, Decided(subject="spec", decision="invalid", reason=message))
        self._write_status(key, obj, status)
        # Nothing to retry: only a new spec can fix it, and a spec change wakes us anyway.
        return Result()

    def _write_terminating_status(self, key: str, obj: Obj, message: str) -> None:
        conds = [
            Cond(CT.READY, "False", Reason.TERMINATING, message),
            Cond(CT.LOAD_BALANCER_READY, "False", Reason.LOAD_BALANCER_FAILED, message),
        ]
        generation = int(obj["metadata"].get("generation") or 1)
        previous = obj.get("status") or {}
        status = override_status(previous, conds, generation=generation, phase=Phase.TERMINATING, now=self._now())
        self._write_status(key, obj, status)

    def _next(self, status: Obj, view: DeploymentView) -> Result:
        """Poll only for what no event will announce: a moving rollout becoming stuck, and a
        server still loading turning into a crash loop. Pods becoming ready, a rollout
        finishing or passing its deadline all change the Deployment's status, whose watch
        event wakes us; resyncs do the rest."""
        if status.get("phase") in (Phase.READY, Phase.FAILED):
            return Result()
        ready = find(status.get("conditions") or [], CT.READY) or {}
        if ready.get("reason") == Reason.SERVER_STARTING:
            return Result(requeue_after=STARTING_RECHECK + STUCK_MARGIN)
        stuck_in = self._stuck_in(view)
        return Result(requeue_after=stuck_in + STUCK_MARGIN) if stuck_in is not None else Result()


def _sooner(result: Result, seconds: float) -> Result:
    """``result``, looking again within ``seconds`` at the latest."""
    if result.requeue_after is not None and result.requeue_after <= seconds:
        return result
    return Result(requeue_after=seconds)
