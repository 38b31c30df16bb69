"""The simulator's implementation of the reconciler's seams, plus the timeline recorder.

``FakeBackend`` reads from the shared informer caches and writes to the FakeApiServer, like
the real backend reads from Kopf-fed caches and writes to kube-apiserver. ``Timeline`` turns
the operator's writes into the human-readable lines the demo prints.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from inference_operator.api.constants import DEPLOYMENT, FIELD_MANAGER, FINALIZER, KIND, MANAGED_BY
from inference_operator.control.events import EventCorrelator, build_event
from inference_operator.core.clock import Clock
from inference_operator.core.errors import NotFound
from inference_operator.core.objects import Obj
from inference_operator.core.ports import LoadBalancerProvider, Registration
from inference_operator.sim.apiserver.server import FakeApiServer
from inference_operator.sim.informer import SharedInformer


@dataclass(frozen=True)
class TimelineEntry:
    time: float
    text: str

    def __str__(self) -> str:
        return f"[{self.time:6.1f}s] {self.text}"


@dataclass(frozen=True)
class Event:
    """A Kubernetes Event as the simulator keeps it."""

    time: float
    namespace: str
    name: str
    type: str
    reason: str
    message: str
    count: int = 1
    """How often it happened: a repeat bumps the count of the first Event (client-go's dedup)."""


@dataclass
class Timeline:
    """What the operator did, when: children created or patched, status changes, LB calls."""

    clock: Clock
    entries: list[TimelineEntry] = field(default_factory=list)
    _last_status: dict[str, str] = field(default_factory=dict)

    def add(self, text: str) -> None:
        self.entries.append(TimelineEntry(self.clock.now(), text))

    def status(self, obj: Obj) -> None:
        """Record a status line, only when its summary differs from the last one shown."""
        meta, status = obj["metadata"], obj.get("status") or {}
        line = (
            f"status gen={meta.get('generation')} ready={status.get('readyReplicas', 0)}/"
            f"{obj['spec'].get('replicas', 1)} observedGen={status.get('observedGeneration')}"
        )
        key = f"{meta['namespace']}/{meta['name']}"
        if self._last_status.get(key) != line:
            self._last_status[key] = line
            self.add(line)

    def clear(self) -> None:
        self.entries.clear()


def _describe(obj: Obj) -> str:
    if obj["kind"] == DEPLOYMENT:
        container = obj["spec"]["template"]["spec"]["containers"][0]
        return (
            f"{obj['kind']} {obj['metadata']['name']} (image={container['image']}, replicas={obj['spec']['replicas']})"
        )
    return f"{obj['kind']} {obj['metadata']['name']}"


class FakeBackend:
    """``Backend`` over the FakeApiServer and the simulation's shared informers."""

    def __init__(
        self,
        api: FakeApiServer,
        informers: dict[str, SharedInformer],
        clock: Clock,
        timeline: Timeline,
        *,
        pods: Callable[[str, str], list[Obj]] = lambda _namespace, _selector: [],
        events: list[Event] | None = None,
        capacity: dict[str, SharedInformer] | None = None,
    ) -> None:
        """``pods`` answers :meth:`list_pods` (namespace, label selector); ``events`` are the Events
        recorded so far (API objects: they outlive an operator process)."""
        self.api = api
        self.informers = informers
        self.clock = clock
        self.timeline = timeline
        self.events: list[Event] = events if events is not None else []
        self._event_index: dict[str, int] = {}  # an Event object's name → its place in ``events``
        self._event_serial = 0
        self.correlator = EventCorrelator(clock)
        self.writes = 0  # mutating requests the operator sent (Events excluded)
        self.pods_source = pods
        self.capacity_informers: dict[str, SharedInformer] = dict(capacity or {})

    def get(self, kind: str, namespace: str, name: str) -> Obj | None:
        return self.informers[kind].get(namespace, name)

    def read(self, kind: str, namespace: str, name: str) -> Obj | None:
        try:
            return self.api.get(kind, namespace, name)
        except NotFound:
            return None

    def apply(self, obj: Obj) -> Obj:
        meta = obj["metadata"]
        existed = self.read(obj["kind"], meta["namespace"], meta["name"]) is not None
        applied = self.api.apply(obj, field_manager=FIELD_MANAGER, force=True)
        self.writes += 1
        self.timeline.add(f"{'patched' if existed else 'created'} {_describe(applied)}")
        return applied

    def patch(self, kind: str, namespace: str, name: str, patch: Obj) -> Obj:
        before = self.informers[kind].get(namespace, name)
        patched = self.api.patch(kind, namespace, name, patch)
        self.writes += 1
        if kind == KIND:
            had = FINALIZER in ((before or {}).get("metadata", {}).get("finalizers") or [])
            has = FINALIZER in (patch.get("metadata", {}).get("finalizers") or [])
            if had != has and "finalizers" in patch.get("metadata", {}):
                self.timeline.add(f"{'added' if has else 'removed'} finalizer on {kind} {name}")
        else:
            self.timeline.add(f"patched {_describe(patched)}")
        return patched

    def update_status(self, obj: Obj) -> Obj:
        written = self.api.update_status(obj)
        self.writes += 1
        if written["kind"] == KIND:
            self.timeline.status(written)
        return written

    def list_pods(self, namespace: str, selector: str) -> list[Obj]:
        return self.pods_source(namespace, selector)

    def cached(self, kind: str) -> list[Obj] | None:
        informer = self.capacity_informers.get(kind)
        if informer is None:
            return None
        informer.start()  # the first read of a kind lists it and starts its watch; idempotent
        return informer.list()

    def cached_owned(self, kind: str, namespace: str, owner: str) -> list[Obj] | None:
        informer = self.capacity_informers.get(kind)
        if informer is None:
            return None
        informer.start()
        return informer.labelled(namespace, owner)

    def record_event(self, obj: Obj, *, type: str, reason: str, message: str) -> None:
        """Record an Event the way the real backend posts one: correlated first (repeats
        counted on the first Event, similar ones combined, a flood per object dropped)."""
        meta = obj["metadata"]
        self._event_serial += 1
        name = f"{meta['name']}.{self._event_serial:016x}"
        event = build_event(obj, type=type, reason=reason, message=message, name=name, now="", component=MANAGED_BY)
        correlated = self.correlator.correlate(event)
        if correlated is None:
            return
        sent = correlated.event
        at = self._event_index.get(sent["metadata"]["name"])
        if correlated.patch is not None and at is not None:
            seen = self.events[at]
            count = int(correlated.patch.get("count") or seen.count + 1)
            self.events[at] = replace(seen, count=count, message=sent["message"])
            return
        self._event_index[sent["metadata"]["name"]] = len(self.events)
        self.events.append(
            Event(
                self.clock.now(), meta.get("namespace", "default"), meta["name"], type, sent["reason"], sent["message"]
            )
        )


class RecordingLoadBalancer:
    """Wraps a LoadBalancerProvider to put its calls on the timeline."""

    def __init__(self, inner: LoadBalancerProvider, timeline: Timeline) -> None:
        self.inner = inner
        self.timeline = timeline

    def register(self, key: str, *, target: str) -> Registration:
        try:
            reg = self.inner.register(key, target=target)
        except Exception as err:
            self.timeline.add(f"load balancer registration of {key} failed: {err}")
            raise
        self.timeline.add(f"registered load balancer {key} -> {reg.address}")
        return reg

    def lookup(self, key: str) -> Registration | None:
        return self.inner.lookup(key)  # a read: not worth a line on the timeline

    def release(self, key: str) -> None:
        try:
            self.inner.release(key)
        except Exception as err:
            self.timeline.add(f"load balancer release of {key} failed: {err}")
            raise
        self.timeline.add(f"released load balancer {key}")
