"""Refused child applies are retried with backoff, not at full cost on every pass.

A child the API server refuses for a reason only a person can fix (422 Invalid, a webhook's
denial, 403) is refused again, word for word, until the spec or what refuses it changes. Before
this, every pass — each rate-limited retry and each resync — read the child from the API server
and sent the apply again: about 20 requests per 30 s per such object with a 5 s resync. Now the
refusal is remembered with the exact object that was refused: the same object is sent again only
after a backoff (``FIRST_RETRY`` doubling, at most ``MAX_RETRY``), and the pass meanwhile reports
the remembered refusal (status does not change, so it costs no write either). A different
desired object (the spec changed) is sent at once; so is anything after the operator restarts.
Transient refusals (409, 408, 429, 5xx) are not remembered: the queue's own backoff handles them.
No lock: the workqueue never hands one key to two workers.
"""

from __future__ import annotations

from dataclasses import dataclass

from inference_operator.api.constants import ConditionType as CT
from inference_operator.api.constants import Reason
from inference_operator.core.clock import Clock
from inference_operator.core.jsoncopy import deep_copy
from inference_operator.core.objects import Obj
from inference_operator.reconcile.stalls import Blocked

__all__ = ["FIRST_RETRY", "MAX_RETRY", "RefusedApplies", "refused_deployment"]

FIRST_RETRY = 10.0  # seconds before the same refused object is sent again
MAX_RETRY = 300.0


@dataclass
class _Refusal:
    desired: Obj
    blocked: Blocked
    retry_at: float
    delay: float


class RefusedApplies:
    """Per (uid, kind): the object last refused, why, and when it may be sent again."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._refused: dict[tuple[str, str], _Refusal] = {}
        self.withheld = 0
        """Applies not sent because the same object was refused moments ago (for tests and figures)."""

    def still_refused(self, *, uid: str, kind: str, desired: Obj) -> Blocked | None:
        """The remembered refusal if ``desired`` is the very object refused and its retry is not due."""
        found = self._refused.get((uid, kind))
        if found is None or found.desired != desired or self.clock.now() >= found.retry_at:
            return None
        self.withheld += 1
        return found.blocked

    def refused(self, *, uid: str, kind: str, desired: Obj, blocked: Blocked) -> None:
        """The API server refused ``desired``: remember it if only a person can fix that."""
        if blocked.condition.reason not in Reason.NEEDS_ACTION:
            self._refused.pop((uid, kind), None)
            return
        previous = self._refused.get((uid, kind))
        same = previous is not None and previous.desired == desired
        delay = min(MAX_RETRY, previous.delay * 2) if same and previous is not None else FIRST_RETRY
        self._refused[(uid, kind)] = _Refusal(deep_copy(desired), blocked, self.clock.now() + delay, delay)

    def accepted(self, *, uid: str, kind: str) -> None:
        self._refused.pop((uid, kind), None)

    def forget(self, uid: str) -> None:
        for key in [k for k in self._refused if k[0] == uid]:
            del self._refused[key]


def refused_deployment(blocked: list[Blocked]) -> str | None:
    """Why the Deployment cannot be had, when only a person can fix it (its condition's
    message); None when it was written, or its failure is expected to pass."""
    for b in blocked:
        if b.condition.type == CT.DEPLOYMENT_READY and b.condition.reason in Reason.NEEDS_ACTION:
            return b.condition.message
    return None
