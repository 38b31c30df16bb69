"""Whether a status write may wait for the Deployment controller to catch up.

The Deployment controller always writes status after a spec change, and that event wakes the
reconciler again within milliseconds; writing "not observed yet" first would cost one more
write per object and say nothing a person can act on.
"""

from __future__ import annotations

from inference_operator.api.constants import ConditionType as CT
from inference_operator.core.clock import Clock
from inference_operator.core.conditions import is_true
from inference_operator.core.objects import Obj
from inference_operator.reconcile.status import DeploymentView, LoadBalancerState

DEFER_LIMIT = 30.0  # seconds a status write may wait for the Deployment controller


class StatusDeferral:
    """When each object's status write was first held (by uid); one worker per key at a time."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._since: dict[str, float] = {}

    def forget(self, uid: str) -> None:
        self._since.pop(uid, None)

    def hold(self, uid: str, previous: Obj, view: DeploymentView, lb: LoadBalancerState) -> bool:
        """Hold the status write while the Deployment controller has not yet observed the
        Deployment's current spec, as long as the current status claims nothing untrue.

        The Deployment controller always writes status after a spec change, and that event
        wakes us again within milliseconds; writing "not observed yet" first would cost one
        more write per object and say nothing a person can act on. Never deferred: a status
        that still says Ready=True (it would be stale), a load balancer failure, or a wait
        longer than ``DEFER_LIMIT`` (the controller-manager may be down: then say so).
        """
        if view.observed or lb.state == "failed" or is_true(previous.get("conditions") or [], CT.READY):
            self._since.pop(uid, None)
            return False
        now = self.clock.now()
        if now - self._since.setdefault(uid, now) < DEFER_LIMIT:
            return True
        del self._since[uid]
        return False
