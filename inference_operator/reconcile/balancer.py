"""The load balancer step of a pass: register, check, release — level-triggered too.

Status is a record, not the truth about the balancer: it may have been restored from a backup
or restarted empty. So beside registering once the Service exists, this step looks each record
up once per resync (never per event) and registers again what the balancer lost, and with
registration disabled it releases whatever the balancer still holds. Registration follows what
can serve: nothing is registered before the Deployment exists, and a record is released when
the Deployment is refused for a reason only a person can fix (a Service with no pods behind it
must not receive traffic); status says so. Its per-uid memory holds
registrations whose status write is still pending, and which resync last checked each object.
No lock: the workqueue never hands one key to two workers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from inference_operator.api.constants import EventReason
from inference_operator.api.models import InferenceService
from inference_operator.core.objects import Obj, key_of
from inference_operator.core.ports import LoadBalancerError, LoadBalancerProvider, Registration
from inference_operator.core.text import bounded_text
from inference_operator.reconcile.builders import service_address
from inference_operator.reconcile.status import LoadBalancerState

__all__ = ["LB_RECHECK_SECONDS", "BalancerSync"]

log = logging.getLogger(__name__)

LB_RECHECK_SECONDS = 30.0  # when a balancer record could not be checked, ask again this much later
MAX_ERROR = 2048
"""Characters of a provider's error kept in status, Events and logs: any provider's, not only
the HTTP client's (which cuts the registry's own words shorter, see ``lb.answers``)."""


def describe(err: LoadBalancerError) -> str:
    """A provider's error on one line and at most :data:`MAX_ERROR` characters."""
    return bounded_text(str(err), MAX_ERROR)


class BalancerSync:
    """Keeps one object's record at the load balancer in step with its spec and Service.

    ``record(obj, type=, reason=, message=)`` posts an Event (the reconciler's backend).
    """

    def __init__(self, lb: LoadBalancerProvider, record: Callable[..., None]) -> None:
        self.lb = lb
        self._record = record
        # Registrations not yet recorded in status (their pass deferred its status write, or
        # it failed); the status is the durable record, this only saves calls.
        self._registered: dict[str, Registration] = {}
        # Objects whose record could not be released (uids): status no longer names the record
        # once the failed pass is written, so this is what makes the next pass try again.
        self._unreleased: set[str] = set()
        self._resync_epoch = 0
        self._checked_epoch: dict[str, int] = {}

    @property
    def resync_epoch(self) -> int:
        """Counts resyncs: what was checked under an older epoch is checked again."""
        return self._resync_epoch

    def forget(self, uid: str) -> None:
        self._registered.pop(uid, None)
        self._checked_epoch.pop(uid, None)
        self._unreleased.discard(uid)

    def begin_resync(self) -> None:
        """A resync started: each object's next pass checks its load balancer record once.

        Status is a record, not the truth about the balancer: it may have been restored from a
        backup or restarted empty. One cheap lookup per object per resync (never per event)
        finds a lost or wrong record, which the pass then registers again.
        """
        self._resync_epoch += 1

    def _check_due(self, uid: str) -> bool:
        return self._checked_epoch.get(uid) != self._resync_epoch

    def ensure(
        self,
        isvc: InferenceService,
        obj: Obj,
        service: Obj | None,
        *,
        deployment: bool = True,
        refused: str | None = None,
    ) -> tuple[LoadBalancerState, str]:
        """Register once the Service and the Deployment exist; returns the outcome and a note for
        the Event. ``refused``: why the Deployment cannot be written (release any record)."""
        epoch = self._resync_epoch  # read first: a resync starting meanwhile still gets its check
        key = key_of(isvc.namespace, isvc.name)
        previous = (obj.get("status") or {}).get("loadBalancer") or {}
        if not isvc.spec.loadBalancer.enabled:
            return self._released(isvc, obj, key, recorded=bool(previous))
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
        if refused is not None:
            return self._withheld(isvc, obj, key, known=known is not None or bool(previous), why=refused)
        if service is None or not deployment:
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
                    describe(err),
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
            message = f"registering {key} with the load balancer failed: {describe(err)}; retrying with backoff"
            log.warning(
                "Failed to register load balancer name=%s namespace=%s error=%s",
                isvc.name,
                isvc.namespace,
                describe(err),
            )
            self._record(obj, type="Warning", reason=EventReason.LB_FAILED, message=message)
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

    def _withheld(
        self, isvc: InferenceService, obj: Obj, key: str, *, known: bool, why: str
    ) -> tuple[LoadBalancerState, str]:
        """The Deployment is refused: no pods can serve, so the balancer must not route here."""
        message = f"not registered with the load balancer while the Deployment cannot be written: {why}"
        self._registered.pop(isvc.uid, None)
        if known:
            try:
                self.release(obj, key)
            except LoadBalancerError as err:
                failed = f"releasing the load balancer record of {key} failed: {err}; retrying with backoff"
                log.warning("Failed to release load balancer key=%s error=%s", key, err)
                self._record(obj, type="Warning", reason=EventReason.LB_FAILED, message=failed)
                return LoadBalancerState("failed", message=failed), ""
            log.info(
                "Withdrew load balancer record, the Deployment is refused name=%s namespace=%s",
                isvc.name,
                isvc.namespace,
            )
        return LoadBalancerState("withheld", message=message), ""

    def _released(self, isvc: InferenceService, obj: Obj, key: str, *, recorded: bool) -> tuple[LoadBalancerState, str]:
        """Registration disabled: release whatever the balancer holds. Status may lack the
        record (its write was deferred, or the last register failed midway), so the balancer
        itself is asked once per resync; a release is cheap and idempotent. A record known to
        exist that cannot be released fails the step, and is tried again until it goes; a
        balancer that cannot answer whether it holds one is no evidence of a record: the object
        stays as it is and the balancer is asked again :data:`LB_RECHECK_SECONDS` later."""
        uid = isvc.uid
        known = recorded or self._registered.pop(uid, None) is not None or uid in self._unreleased
        if not known and self._check_due(uid):
            try:
                known = self.lb.lookup(key) is not None
            except LoadBalancerError as err:
                log.warning(
                    "Failed to check for a load balancer record of a service with registration disabled, "
                    "checking again in %gs name=%s namespace=%s error=%s",
                    LB_RECHECK_SECONDS,
                    isvc.name,
                    isvc.namespace,
                    describe(err),
                )
                return LoadBalancerState("disabled", recheck=True), ""
        if known:
            try:
                self.release(obj, key)
            except LoadBalancerError as err:
                self._unreleased.add(uid)
                message = f"releasing the load balancer record of {key} failed: {describe(err)}; retrying with backoff"
                log.warning("Failed to release load balancer key=%s error=%s", key, describe(err))
                self._record(obj, type="Warning", reason=EventReason.LB_FAILED, message=message)
                return LoadBalancerState("failed", message=message), ""
            self._unreleased.discard(uid)
        self._checked_epoch[uid] = self._resync_epoch
        return LoadBalancerState("disabled"), ""

    def release(self, obj: Obj, key: str) -> None:
        self.lb.release(key)
        log.info("Released load balancer key=%s", key)
        self._record(
            obj, type="Normal", reason=EventReason.LB_RELEASED, message=f"Released the load balancer record of {key}"
        )
