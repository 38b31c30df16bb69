"""The InferenceService reconciler: one pass from observed state to desired state.

It follows the four rules of reconcile (DESIGN.md):

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
from dataclasses import dataclass
from typing import Any

from .api import NAME_RULE, InferenceService, SpecError
from .backend import Backend, LoadBalancerError, LoadBalancerProvider, Registration, Result
from .builders import desired_deployment, desired_service, selector_string, service_address
from .clock import Clock, format_timestamp, parse_timestamp
from .compare import NOT_APPLIED, drift
from .conditions import Cond, is_true
from .constants import DEPLOYMENT, FIELD_MANAGER, FINALIZER, KIND, SERVICE, EventReason, Phase, Reason
from .constants import ConditionType as CT
from .errors import ApiError, Conflict
from .model import controller_owner_uid, has_finalizer, is_being_deleted, key_of, owner_key
from .status import (
    DeploymentView,
    LoadBalancerState,
    PodProblem,
    compute_status,
    invalid_spec_status,
    override_status,
    pod_problem,
)

Obj = dict[str, Any]
log = logging.getLogger("inference_operator.reconciler")

DEFAULT_REQUEUE_WHILE_PROGRESSING = 5.0
STUCK_AFTER = datetime.timedelta(seconds=10)
DEFER_LIMIT = 30.0  # seconds a status write may wait for the Deployment controller
STUCK_MARGIN = 0.5  # look again this long after a rollout would count as stuck
LB_RECHECK_SECONDS = 30.0  # when a balancer record could not be checked, ask again this much later
POD_RECHECK = 1800.0  # seconds a pod diagnosis is trusted while the Deployment's status stays put


@dataclass(frozen=True)
class PodsRead:
    """The last diagnosis of a Deployment's pods: for which Deployment version, when, what."""

    version: str
    at: float
    problem: PodProblem | None
    epoch: int


@dataclass(frozen=True)
class Done:
    """What a pass did to a child, for the Event: a verb, and the fields it patched."""

    verb: str
    fields: str = ""


Action = Done | None


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
            return cls(Cond(_child_condition(kind), "False", Reason.WAITING_FOR_CHILDREN, message), error)
        owner = _controller_of(live)
        message = (
            f"{kind} {isvc.namespace}/{isvc.name} already exists but is not controlled by this InferenceService "
            f"(uid {isvc.uid}): {owner}; delete or rename that {kind}, or rename the InferenceService"
        )
        error = ChildConflict(message, kind=kind, namespace=isvc.namespace, name=isvc.name)
        return cls(Cond(_child_condition(kind), "False", Reason.CHILD_CONFLICT, message), error)

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
        return cls(Cond(_child_condition(kind), "False", reason, message), err)


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
    ) -> None:
        self.backend = backend
        self.lb = load_balancer
        self.clock = clock
        self.requeue_while_progressing = requeue_while_progressing
        # Per-uid memory between passes. No lock: the workqueue never hands one key to two
        # workers, so an entry is only touched by one thread at a time, and single dict
        # operations are atomic. Registrations not yet recorded in status (their pass
        # deferred its status write); the status is the durable record, this only saves calls.
        self._registered: dict[str, Registration] = {}
        self._deferred_since: dict[str, float] = {}  # when the status write was first held
        self._pods_read: dict[str, PodsRead] = {}
        # Load balancer checks: one per object per resync (see begin_resync).
        self._resync_epoch = 0
        self._checked_epoch: dict[str, int] = {}

    # -- entry point -------------------------------------------------------------------------

    def reconcile(self, namespace: str, name: str) -> Result:
        obj = self.backend.get(KIND, namespace, name)
        if obj is None:
            return Result()  # deleted: owner references let the garbage collector take the children
        if is_being_deleted(obj):
            return self._finalize(obj)
        try:
            isvc = InferenceService.from_object(obj)
        except SpecError as err:
            return self._report_invalid_spec(obj, err.message)
        # The Deployment first: its pods take longest. The children need no finalizer (the
        # garbage collector takes them); the load balancer does, so it comes before that.
        # A child that cannot be written does not stop the pass: status must say why.
        blocked: list[Blocked] = []
        deployment, deployment_action = self._ensure_child(isvc, DEPLOYMENT, desired_deployment(isvc), blocked)
        service, service_action = self._ensure_child(isvc, SERVICE, desired_service(isvc), blocked)
        obj = self._ensure_finalizer(obj)
        lb, lb_note = self._ensure_load_balancer(isvc, obj, service)
        self._announce_actions(obj, isvc.name, {DEPLOYMENT: deployment_action, SERVICE: service_action}, lb_note)
        view = DeploymentView.of(deployment)
        previous = obj.get("status") or {}
        if not blocked and self._defer_status(isvc.uid, previous, view, lb):
            return Result(requeue_after=self.requeue_while_progressing)
        problem = self._pod_problem(isvc, view)
        stall = blocked[0].condition if blocked else None
        status = compute_status(isvc, previous, view, service, lb, now=self._now(), problem=problem, blocked=stall)
        self._write_status(obj, status)
        if blocked:
            raise blocked[0].error  # back to the queue, with backoff: status already says why
        if lb.state == "failed":
            raise LoadBalancerError(lb.message)
        result = self._next(status, view)
        if lb.recheck and (result.requeue_after is None or result.requeue_after > LB_RECHECK_SECONDS):
            return Result(requeue_after=LB_RECHECK_SECONDS)
        return result

    def _defer_status(self, uid: str, previous: Obj, view: DeploymentView, lb: LoadBalancerState) -> bool:
        """Hold the status write while the Deployment controller has not yet observed the
        Deployment's current spec, as long as the current status claims nothing untrue.

        The Deployment controller always writes status after a spec change, and that event
        wakes us again within milliseconds; writing "not observed yet" first would cost one
        more write per object and say nothing a person can act on. Never deferred: a status
        that still says Ready=True (it would be stale), a load balancer failure, or a wait
        longer than ``DEFER_LIMIT`` (the controller-manager may be down: then say so).
        """
        if view.observed or lb.state == "failed" or is_true(previous.get("conditions") or [], CT.READY):
            self._deferred_since.pop(uid, None)
            return False
        now = self.clock.now()
        if now - self._deferred_since.setdefault(uid, now) < DEFER_LIMIT:
            return True
        del self._deferred_since[uid]
        return False

    # -- steps ------------------------------------------------------------------------------

    def _stuck_in(self, view: DeploymentView) -> float | None:
        """Seconds until a moving rollout counts as stuck (None: it is not moving, or already is)."""
        if not view.last_progress or view.deadline_exceeded:
            return None
        left = (STUCK_AFTER - (self.clock.wall() - parse_timestamp(view.last_progress))).total_seconds()
        return left if left > 0 else None

    def _pod_problem(self, isvc: InferenceService, view: DeploymentView) -> PodProblem | None:
        """Ask the pods why replicas are missing, once the rollout has made no progress for
        ``STUCK_AFTER`` (most young pods are simply starting). The answer is kept until the
        Deployment's status moves, or for ``POD_RECHECK`` seconds: 1,000 Degraded objects must
        not LIST their pods on every pass."""
        if not view.observed or view.ready >= isvc.spec.replicas or self._stuck_in(view) is not None:
            self._pods_read.pop(isvc.uid, None)
            return None
        now = self.clock.now()
        seen = self._pods_read.get(isvc.uid)
        fresh = now - seen.at < POD_RECHECK if seen is not None and seen.problem else False
        if seen is not None and seen.version == view.version and (fresh or seen.epoch == self._resync_epoch):
            return seen.problem  # "nothing wrong found" is asked again at the next resync
        problem = pod_problem(self.backend.list_pods(isvc.namespace, selector_string(isvc.name)))
        self._pods_read[isvc.uid] = PodsRead(view.version, now, problem, self._resync_epoch)
        return problem

    def _ensure_finalizer(self, obj: Obj) -> Obj:
        if has_finalizer(obj):
            return obj
        patched = self._patch_finalizers(obj, [*(obj["metadata"].get("finalizers") or []), FINALIZER])
        log.info("Added finalizer name=%s namespace=%s", obj["metadata"]["name"], obj["metadata"]["namespace"])
        return patched

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
        self, isvc: InferenceService, kind: str, desired: Obj, blocked: list[Blocked]
    ) -> tuple[Obj | None, Action]:
        """Create or update one child with server-side apply; returns it (None if it could not
        be had) and what was done. A write the API server refuses is appended to ``blocked``,
        not raised: the pass goes on so that status can say why."""
        live = self.backend.get(kind, isvc.namespace, isvc.name)
        try:
            if live is None:
                # The cache holds only children with our label; an apply would merge into
                # whatever has the name. Ask the API server whether something is in the way.
                live = self.backend.read(kind, isvc.namespace, isvc.name)
                if live is None:
                    return self._apply_child(isvc, kind, desired, created=True)
            if controller_owner_uid(live) != isvc.uid:
                blocked.append(Blocked.conflict(isvc, kind, live))
                return None, None
            changed = drift(live, desired, kind=kind, manager=FIELD_MANAGER)
            if not changed:
                return live, None
            if NOT_APPLIED in changed:
                self._upgrade_ownership(isvc, kind)
            return self._apply_child(isvc, kind, desired, fields=changed)
        except ApiError as err:
            blocked.append(Blocked.from_error(isvc, kind, "create" if live is None else "update", err))
            log.warning(
                "Failed to write child kind=%s name=%s namespace=%s code=%d error=%s",
                kind,
                isvc.name,
                isvc.namespace,
                err.code,
                err.api_message,
            )
            return live, None

    def _apply_child(
        self, isvc: InferenceService, kind: str, desired: Obj, *, created: bool = False, fields: list[str] | None = None
    ) -> tuple[Obj, Action]:
        applied = self.backend.apply(desired)
        if created:
            recreated = _condition_true(isvc.raw, _child_condition(kind))
            verb = EventReason.RECREATED if recreated else EventReason.CREATED
            log.info("%s %s name=%s namespace=%s", verb, kind, isvc.name, isvc.namespace)
            return applied, Done(verb)
        shown = ", ".join(fields or [])
        log.info("Patched %s name=%s namespace=%s fields=%s", kind, isvc.name, isvc.namespace, shown)
        return applied, Done(EventReason.PATCHED, shown)

    def _upgrade_ownership(self, isvc: InferenceService, kind: str) -> None:
        """Children written by operator versions before server-side apply (a POST, merge
        patches) are owned through an ``Update`` entry of ours holding every field they had,
        defaults included; while it stays, a field we stop applying is never removed (and a
        changed port would sit next to the old one). Before the first apply, turn that entry
        into our apply entry, as kubectl's client-side-to-server-side upgrade does: the apply
        then removes whatever it no longer sets. One read and one write, once per such child."""
        live = self.backend.read(kind, isvc.namespace, isvc.name)
        if live is None:
            return
        meta = live["metadata"]
        entries = meta.get("managedFields") or []
        if not any(_legacy_entry(e) for e in entries):
            return
        upgraded = [{**e, "operation": "Apply"} if _legacy_entry(e) else e for e in entries]
        self.backend.patch(
            kind,
            isvc.namespace,
            isvc.name,
            {"metadata": {"managedFields": upgraded, "resourceVersion": meta["resourceVersion"]}},
        )
        log.info("Upgraded field ownership to apply kind=%s name=%s namespace=%s", kind, isvc.name, isvc.namespace)

    def _announce_actions(self, owner: Obj, name: str, children: dict[str, Action], lb_note: str) -> None:
        """One Normal Event per pass that changed something, saying everything it did.

        Events are writes too: a new InferenceService gets one ("Created Deployment x and
        Service x; registered … with the load balancer"), not three.
        """
        by_verb: dict[str, list[str]] = {}
        for kind, action in children.items():
            if action is not None:
                detail = f" ({action.fields})" if action.fields else ""
                by_verb.setdefault(action.verb, []).append(f"{kind} {name}{detail}")
        parts = [f"{verb} {' and '.join(kinds)}" for verb, kinds in by_verb.items()]
        if lb_note:
            parts.append(lb_note if not parts else lb_note[0].lower() + lb_note[1:])
        if parts:
            reason = next(iter(by_verb), EventReason.LB_REGISTERED)
            self.backend.record_event(owner, type="Normal", reason=reason, message="; ".join(parts))

    def begin_resync(self) -> None:
        """A resync started: each object's next pass checks its load balancer record once.

        Status is a record, not the truth about the balancer: it may have been restored from a
        backup or restarted empty. One cheap lookup per object per resync (never per event)
        finds a lost or wrong record, which the pass then registers again.
        """
        self._resync_epoch += 1

    def _check_due(self, uid: str) -> bool:
        return self._checked_epoch.get(uid) != self._resync_epoch

    def _ensure_load_balancer(
        self, isvc: InferenceService, obj: Obj, service: Obj | None
    ) -> tuple[LoadBalancerState, str]:
        """Register once the Service exists; returns the outcome and a note for the Event."""
        epoch = self._resync_epoch  # read first: a resync starting meanwhile still gets its check
        key = key_of(isvc.namespace, isvc.name)
        previous = (obj.get("status") or {}).get("loadBalancer") or {}
        if not isvc.spec.loadBalancer.enabled:
            return self._ensure_released(isvc, obj, key, recorded=bool(previous))
        target = service_address(isvc)
        note = ""
        recorded = None
        if previous.get("id") and previous.get("target") == target:
            recorded = Registration(previous["id"], previous.get("address", ""), target)
        # A registration this process made wins over status, which may not show it yet (its
        # write was deferred, or failed): trusting status would name a record that is gone.
        known = self._registered.get(isvc.uid)
        if known is None or known.target != target:
            known = recorded
        elif recorded is not None and recorded.id == known.id:
            del self._registered[isvc.uid]  # status has it now
        if service is None:
            # Status keeps a record the balancer still holds, so that it is released later.
            return LoadBalancerState("waiting", registration=known), ""
        if known is not None and not self._check_due(isvc.uid):
            return LoadBalancerState("registered", known), ""
        if known is not None:
            try:
                held = self.lb.lookup(key)
            except LoadBalancerError as err:
                # Not knowing is no evidence the record is gone: status stays, we ask again.
                log.warning(
                    "Failed to check load balancer record, keeping it and checking again in %gs "
                    "name=%s namespace=%s id=%s error=%s",
                    LB_RECHECK_SECONDS,
                    isvc.name,
                    isvc.namespace,
                    known.id,
                    err,
                )
                return LoadBalancerState("registered", known, recheck=True), ""
            if held is not None and held.target == target:
                self._checked_epoch[isvc.uid] = epoch
                return LoadBalancerState("registered", held), ""
            lost = "had no record" if held is None else f"pointed at {held.target}"
            note = f"; the load balancer {lost}"
            log.warning(
                "Found load balancer record %s name=%s namespace=%s id=%s",
                "missing" if held is None else f"pointing at {held.target}",
                isvc.name,
                isvc.namespace,
                known.id,
            )
        try:
            registration = self.lb.register(key, target=target)
        except LoadBalancerError as err:
            message = f"registering {key} with the load balancer failed: {err}; retrying with backoff"
            log.warning(
                "Failed to register load balancer name=%s namespace=%s error=%s", isvc.name, isvc.namespace, err
            )
            self.backend.record_event(obj, type="Warning", reason=EventReason.LB_FAILED, message=message)
            return LoadBalancerState("failed", message=message), ""
        log.info(
            "Registered load balancer name=%s namespace=%s id=%s address=%s",
            isvc.name,
            isvc.namespace,
            registration.id,
            registration.address,
        )
        self._registered[isvc.uid] = registration
        self._checked_epoch[isvc.uid] = epoch
        verb = "Registered" if known is None else "Registered again"
        note = f"{verb} {target} with the load balancer as {registration.id} at {registration.address}{note}"
        return LoadBalancerState("registered", registration), note

    def _ensure_released(
        self, isvc: InferenceService, obj: Obj, key: str, *, recorded: bool
    ) -> tuple[LoadBalancerState, str]:
        """Registration disabled: release whatever the balancer holds. Status may lack the
        record (its write was deferred, or the last register failed midway), so the balancer
        itself is asked once per resync; a release is cheap and idempotent."""
        try:
            remembered = self._registered.pop(isvc.uid, None) is not None
            if recorded or remembered or (self._check_due(isvc.uid) and self.lb.lookup(key) is not None):
                self._release(obj, key)
        except LoadBalancerError as err:
            message = f"releasing the load balancer record of {key} failed: {err}; retrying with backoff"
            log.warning("Failed to release load balancer key=%s error=%s", key, err)
            self.backend.record_event(obj, type="Warning", reason=EventReason.LB_FAILED, message=message)
            return LoadBalancerState("failed", message=message), ""
        self._checked_epoch[isvc.uid] = self._resync_epoch
        return LoadBalancerState("disabled"), ""

    def _release(self, obj: Obj, key: str) -> None:
        self.lb.release(key)
        log.info("Released load balancer key=%s", key)
        self.backend.record_event(
            obj, type="Normal", reason=EventReason.LB_RELEASED, message=f"Released the load balancer record of {key}"
        )

    def _finalize(self, obj: Obj) -> Result:
        """Deletion branch: release the load balancer, then (only then) drop our finalizer."""
        if not has_finalizer(obj):
            return Result()
        meta = obj["metadata"]
        key = key_of(meta["namespace"], meta["name"])
        self._registered.pop(meta.get("uid", ""), None)
        self._deferred_since.pop(meta.get("uid", ""), None)
        self._checked_epoch.pop(meta.get("uid", ""), None)
        self._pods_read.pop(meta.get("uid", ""), None)
        try:
            if NAME_RULE.check(meta["name"]):
                self._release(obj, key)
            else:  # no Service can have this name, so no version of the operator registered it
                log.info(
                    "Skipped release, name cannot have a record name=%s namespace=%s", meta["name"], meta["namespace"]
                )
        except LoadBalancerError as err:
            message = (
                f"releasing the load balancer record of {key} failed: {err}; the finalizer stays "
                "until the release succeeds, retrying with backoff"
            )
            log.warning("Failed to release load balancer key=%s error=%s", key, err)
            self.backend.record_event(obj, type="Warning", reason=EventReason.LB_FAILED, message=message)
            self._write_terminating_status(obj, message)
            raise
        self._patch_finalizers(obj, [f for f in meta.get("finalizers") or [] if f != FINALIZER])
        log.info("Removed finalizer name=%s namespace=%s", meta["name"], meta["namespace"])
        return Result()

    # -- status -----------------------------------------------------------------------------

    def _now(self) -> str:
        return format_timestamp(self.clock.wall())

    def _write_status(self, obj: Obj, status: Obj) -> Obj:
        previous = obj.get("status") or {}
        if status == previous:
            return obj
        meta = obj["metadata"]
        written = self.backend.update_status(
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
        self._announce_transitions(obj, previous, status)
        return written

    def _announce_transitions(self, obj: Obj, previous: Obj, status: Obj) -> None:
        """Events for the transitions a person cares about: ready, degraded, failed."""
        old: dict[str, dict[str, Any]] = {c["type"]: c for c in previous.get("conditions") or []}
        new: dict[str, dict[str, Any]] = {c["type"]: c for c in status.get("conditions") or []}
        name = obj["metadata"]["name"]

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

        if c := flipped(CT.READY, "True"):
            self._event(obj, "Normal", EventReason.READY, f"InferenceService {name} is ready: {c['message']}")
        if c := flipped(CT.DEGRADED, "True"):
            self._event(obj, "Warning", EventReason.DEGRADED, f"InferenceService {name} is degraded: {c['message']}")
        if c := flipped(CT.PROGRESSING, "False", Reason.PROGRESS_DEADLINE_EXCEEDED):
            self._event(obj, "Warning", EventReason.FAILED, f"InferenceService {name} failed: {c['message']}")
        if c := flipped(CT.READY, "False", Reason.INVALID_SPEC):
            self._event(obj, "Warning", EventReason.INVALID_SPEC, f"Invalid spec: {c['message']}")
        for reason in (Reason.CHILD_CONFLICT, Reason.CHILD_REJECTED, Reason.CHILD_FORBIDDEN, Reason.API_UNAVAILABLE):
            if c := flipped(CT.READY, "False", reason):
                self._event(obj, "Warning", reason, f"InferenceService {name} is stalled: {c['message']}")

    def _event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        meta = obj["metadata"]
        level = logging.WARNING if type_ == "Warning" else logging.INFO
        log.log(level, "%s name=%s namespace=%s message=%r", reason, meta["name"], meta["namespace"], message)
        self.backend.record_event(obj, type=type_, reason=reason, message=message)

    def _report_invalid_spec(self, obj: Obj, message: str) -> Result:
        generation = int(obj["metadata"].get("generation") or 1)
        status = invalid_spec_status(obj.get("status") or {}, generation=generation, message=message, now=self._now())
        self._write_status(obj, status)
        # Nothing to retry: only a new spec can fix it, and a spec change wakes us anyway.
        return Result()

    def _write_terminating_status(self, obj: Obj, message: str) -> None:
        conds = [
            Cond(CT.READY, "False", Reason.TERMINATING, message),
            Cond(CT.LOAD_BALANCER_READY, "False", Reason.LOAD_BALANCER_FAILED, message),
        ]
        generation = int(obj["metadata"].get("generation") or 1)
        self._write_status(
            obj,
            override_status(
                obj.get("status") or {}, conds, generation=generation, phase=Phase.TERMINATING, now=self._now()
            ),
        )

    def _next(self, status: Obj, view: DeploymentView) -> Result:
        """Poll only for what no event will announce: a moving rollout becoming stuck. Pods
        becoming ready, a rollout finishing or passing its deadline all change the
        Deployment's status, whose watch event wakes us; resyncs do the rest."""
        if status.get("phase") in (Phase.READY, Phase.FAILED):
            return Result()
        stuck_in = self._stuck_in(view)
        return Result(requeue_after=stuck_in + STUCK_MARGIN) if stuck_in is not None else Result()


def _legacy_entry(entry: Obj) -> bool:
    return entry.get("manager") == FIELD_MANAGER and entry.get("operation") == "Update" and not entry.get("subresource")


def _child_condition(kind: str) -> str:
    return CT.SERVICE_READY if kind == SERVICE else CT.DEPLOYMENT_READY


def _controller_of(obj: Obj) -> str:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return f"its controller is {ref.get('kind')} {ref.get('name')} (uid {ref.get('uid')})"
    return "it has no controller"


def _condition_true(obj: Obj, type_: str) -> bool:
    return is_true((obj.get("status") or {}).get("conditions") or [], type_)
