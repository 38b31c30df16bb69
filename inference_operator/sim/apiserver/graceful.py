"""Graceful deletion of Pods: how long a deleted pod may keep running, as the pod strategy says.

A deleted pod does not vanish: the API server marks it (``deletionTimestamp`` = now + the grace
period, ``deletionGracePeriodSeconds``) and the kubelet, once the containers have stopped,
deletes it again with a grace period of 0, which removes it. Until then it is on its node and
holds its GPUs: the heart of a rollout that deadlocks on a full pool. ``CheckGracefulDelete``
of ``pkg/registry/core/pod/strategy.go`` decides the period: the request's, else the pod's
``terminationGracePeriodSeconds`` (30 by default); 0 for a pod never bound to a node or already
finished (nothing runs that could be stopped).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Final

from inference_operator.core.clock import format_timestamp, parse_timestamp

__all__ = ["DEFAULT_GRACE_SECONDS", "grace_period", "shortened_deadline"]

DEFAULT_GRACE_SECONDS: Final = 30


def grace_period(pod: Mapping[str, Any], *, requested: int | None) -> int:
    """Seconds the pod may take to stop, for a DELETE asking ``requested`` (None: the pod's own)."""
    spec = pod.get("spec") or {}
    phase = (pod.get("status") or {}).get("phase")
    if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
        return 0
    if requested is not None:
        return max(int(requested), 0)
    return int(spec.get("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS))


def shortened_deadline(meta: Mapping[str, Any], *, now: datetime.datetime, grace: int) -> str | None:
    """The new ``deletionTimestamp`` when a DELETE shortens a pod's grace period (None: it does not)."""
    deadline = format_timestamp(now + datetime.timedelta(seconds=grace))
    current = meta.get("deletionTimestamp")
    if current is not None and parse_timestamp(str(current)) <= parse_timestamp(deadline):
        return None
    return deadline
