"""What a what-if measures while the change rolls out: ready pods over time, Pending pods, the end.

Why this exists: the operator's timeline says what it wrote, not what the users of a service
felt. :class:`RolloutWatch` looks at the simulated cluster after every instant the simulation
acts at (:func:`run_watched` drives it so) and keeps, per InferenceService of the change, the
count of its pods serving (bound, Ready, not terminating: what its Service routes to), when the
InferenceService was Ready on its new generation, and every pod of the cluster that waited
unscheduled, with the scheduler's words, from when until when.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from inference_operator.api.constants import KIND, OWNER_LABEL
from inference_operator.core.objects import Obj, key_of
from inference_operator.sim import Simulation

__all__ = ["Capacity", "PendingPod", "RolloutWatch", "run_watched"]


@dataclass
class PendingPod:
    """A pod the scheduler could not place, from ``since`` until ``until`` (None: still waiting)."""

    name: str
    owner: str
    since: float
    message: str
    until: float | None = None


@dataclass
class Capacity:
    """One InferenceService's serving pods over time: ``(time, ready)`` at each change of the count."""

    wanted: int
    samples: list[tuple[float, int]] = field(default_factory=list)
    ready_at: float | None = None
    """When it was first Ready on the change's generation."""
    verdicts: list[tuple[float, str]] = field(default_factory=list)
    """``(time, "Ready=False RolloutBlocked")`` at each change of its Ready condition."""

    def lowest(self, *, end: float) -> tuple[int, float, float]:
        """The lowest count, how long it lasted in all, and when it first began."""
        low = min(count for _, count in self.samples)
        spans = self._spans(end=end)
        return low, sum(b - a for a, b, n in spans if n == low), next(a for a, _, n in spans if n == low)

    def below(self, *, end: float) -> float:
        """Seconds with fewer than ``wanted`` pods serving."""
        return sum(b - a for a, b, n in self._spans(end=end) if n < self.wanted)

    def _spans(self, *, end: float) -> list[tuple[float, float, int]]:
        times = [t for t, _ in self.samples[1:]] + [end]
        return [(t, after, n) for (t, n), after in zip(self.samples, times, strict=True)]


class RolloutWatch:
    """Samples ``services`` (``namespace/name`` keys) and the cluster's Pending pods; time 0 is ``start``."""

    def __init__(self, sim: Simulation, *, services: dict[str, int], start: float) -> None:
        self.sim = sim
        self.start = start
        self.capacity = {key: Capacity(wanted) for key, wanted in services.items()}
        self.pending: list[PendingPod] = []
        self._waiting: dict[str, PendingPod] = {}

    def look(self) -> None:
        """Record the cluster as it is now."""
        now = self.sim.now - self.start
        serving = dict.fromkeys(self.capacity, 0)
        unscheduled: dict[str, tuple[str, str]] = {}
        for pod in self.sim.api.list("Pod"):
            meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
            owner = key_of(meta["namespace"], str((meta.get("labels") or {}).get(OWNER_LABEL) or ""))
            if "deletionTimestamp" in meta:  # stopping: no longer routed to, even while it holds its GPUs
                continue
            conditions = {c.get("type"): c for c in status.get("conditions") or ()}
            if owner in serving and spec.get("nodeName") and (conditions.get("Ready") or {}).get("status") == "True":
                serving[owner] += 1
            scheduled = conditions.get("PodScheduled") or {}
            if not spec.get("nodeName") and scheduled.get("reason") == "Unschedulable":
                unscheduled[key_of(meta["namespace"], meta["name"])] = (owner, str(scheduled.get("message") or ""))
        for key, count in serving.items():
            samples = self.capacity[key].samples
            if not samples or samples[-1][1] != count:
                samples.append((now, count))
            self._judge(key, now)
        for key, (owner, message) in unscheduled.items():
            if key not in self._waiting:
                self._waiting[key] = PendingPod(key, owner.rstrip("/"), now, message)
                self.pending.append(self._waiting[key])
            self._waiting[key].message = message
        for key in [k for k in self._waiting if k not in unscheduled]:
            self._waiting.pop(key).until = now

    def _judge(self, key: str, now: float) -> None:
        """Note the InferenceService's Ready condition, and when it is first Ready on its generation."""
        capacity = self.capacity[key]
        namespace, _, name = key.partition("/")
        obj = self.sim.get(KIND, namespace, name) or {}
        status = obj.get("status") or {}
        ready: Obj = next((c for c in status.get("conditions") or () if c.get("type") == "Ready"), {})
        current = status.get("observedGeneration") == (obj.get("metadata") or {}).get("generation")
        verdict = f"Ready={ready.get('status')} {ready.get('reason')}" if ready else "no status yet"
        if current and (not capacity.verdicts or capacity.verdicts[-1][1] != verdict):
            capacity.verdicts.append((now, verdict))
        if capacity.ready_at is None and current and ready.get("status") == "True":
            capacity.ready_at = now


def run_watched(sim: Simulation, watch: RolloutWatch, *, until: float) -> None:
    """Run the simulation until nothing is left to do or the clock reaches ``until``, letting
    ``watch`` look after each instant the simulation acted at."""
    watch.look()
    while True:
        sim.run_until_quiescent(until=sim.now)
        watch.look()
        due = sim.next_due()
        if due is None or due > until or _only_stalled(sim):
            break
        sim.clock.set(max(due, sim.now))


def _only_stalled(sim: Simulation) -> bool:
    """Nothing but keys retried at the slowest backoff is left: as run_until_quiescent ends."""
    controllers = [*sim.cluster.controllers, sim.controller]
    return all(c.queue.waiting_len() <= len(c.stalled()) for c in controllers)
