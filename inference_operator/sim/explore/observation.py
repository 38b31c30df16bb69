"""What the explorer saw once the cluster settled: the input of every invariant.

An :class:`Observation` is the settled cluster (the Simulation itself: API server, balancer)
plus what only the settling could count: reconciles and Warning Events per object, the
operator's writes in the extra passes, the keys still failing, what the finalizer monitor saw.
:class:`ForeignMark` is one thing another actor put on an object, to check it is still there.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from inference_operator.core.objects import Obj, key_of
from inference_operator.sim.backend import Event
from inference_operator.sim.faults import LbCall, WriteCall
from inference_operator.sim.simulation import Simulation

__all__ = ["ForeignMark", "Observation", "warning_counts"]


@dataclass(frozen=True)
class ForeignMark:
    """Something another actor put on an object, which the operator must leave alone.

    ``what``: ``label`` / ``annotation`` (key and value), ``container`` (its name),
    ``owner_reference`` (the uid), ``spec`` (a foreign object's whole spec).
    """

    kind: str
    name: str
    uid: str
    what: str
    key: str
    value: Any = None

    def present_on(self, obj: Obj) -> bool:
        meta = obj.get("metadata") or {}
        if self.what == "label":
            return bool((meta.get("labels") or {}).get(self.key) == self.value)
        if self.what == "annotation":
            return bool((meta.get("annotations") or {}).get(self.key) == self.value)
        if self.what == "owner_reference":
            return any(ref.get("uid") == self.key for ref in meta.get("ownerReferences") or [])
        if self.what == "container":
            pod = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
            return any(c.get("name") == self.key for c in pod.get("containers") or [])
        if self.what == "spec":
            return bool(obj.get("spec") == self.value)
        return True


@dataclass
class Observation:
    """The settled cluster, and what was counted on the way there."""

    sim: Simulation
    reconciles: Counter[str]
    """Reconcile passes per key while settling (and in the extra pass)."""
    warnings: Counter[tuple[str, str, str]]
    """Warning Events posted while settling, per (key, reason, message)."""
    pass_calls: list[WriteCall]
    """The operator's API writes during one more pass over the settled system."""
    pass_lb: list[LbCall]
    """The operator's balancer calls during that pass."""
    failing: dict[str, str]
    """Keys whose latest pass raised (still retrying with backoff), with the error."""
    second_pass_calls: list[WriteCall] = field(default_factory=list)
    """The API writes of a second such pass: a key that keeps failing may catch up on what
    changed since its last retry in the first one, never in both (unless faults are still
    armed: then the world is still changing)."""
    failing_before_pass: dict[str, str] = field(default_factory=dict)
    """``failing`` as it was before the extra passes."""
    status_blocked: bool = False
    """Injected faults still refuse the operator's writes to InferenceServices: no status can be
    written, so none can be asked to explain anything (that needs the next settle)."""
    faults_pending: bool = False
    """Injected faults that will run out were still armed after settling (an outage longer than
    the backoff could get through): the world has not stopped changing."""
    finalizer_violations: list[str] = field(default_factory=list)
    marks: list[ForeignMark] = field(default_factory=list)
    ran_out: bool = False
    """Settling hit its step budget."""
    unavailable_violations: list[str] = field(default_factory=list)
    """What the step-by-step watch of rollouts saw since the previous settle: a Replace or Auto
    object with fewer pods available than its maxUnavailable allows (:mod:`.rollouts`)."""
    restarts: int = 0
    """Operator restarts since the previous settle: each starts with a fresh workqueue, so
    backoff starts over (as in client-go) and the reconcile bound applies per process."""


def warning_counts(events: Iterable[Event], *, ttl: float) -> Counter[tuple[str, str, str]]:
    """Warning Events per (key, reason, message): the most posted within one ``ttl`` (one
    posted more than ``ttl`` after the same one counts afresh: that one has expired by then)."""
    counts: Counter[tuple[str, str, str]] = Counter()
    run: Counter[tuple[str, str, str]] = Counter()
    last: dict[tuple[str, str, str], float] = {}
    for event in events:
        if event.type != "Warning":
            continue
        key = (key_of(event.namespace, event.name), event.reason, event.message)
        if key in last and event.time - last[key] >= ttl:
            run[key] = 0
        run[key] += 1
        last[key] = event.time
        counts[key] = max(counts[key], run[key])
    return counts
