"""Event aggregation, deduplication and spam filtering, as client-go's EventCorrelator does it.

Why it exists: a load balancer outage over 1,000 InferenceServices makes every failing pass
of every object record a Warning. Posted one by one that is ten thousand Events within
seconds: writes the API server stores in etcd, and a ``kubectl describe`` nobody can read.
client-go's event recorder has three defences, reproduced here as one pure piece (no I/O,
the clock injected), so the real backend and the simulator can share it:

1. **Aggregation** (client-go's EventAggregator): Events about one object with the same type
   and reason but different messages are *similar*. Once 10 distinct messages were seen
   within 10 minutes, further new messages become one Event whose message reads
   ``(combined from similar events): <latest message>``.
2. **Deduplication** (client-go's eventLogger): an Event identical to one already recorded
   (same object, type, reason and message; or the same combined Event) is not created again:
   the existing Event is PATCHed with ``count`` + 1, a new ``lastTimestamp`` and message.
3. **Spam filter** (client-go's EventSourceObjectSpamFilter): a token bucket per object
   (burst 25, one token back every 5 minutes) drops whatever is left; drops are counted.

As in client-go the steps run in that order and the filter comes last, so a dropped repeat
still counts: the next PATCH that gets through carries the true number of occurrences. And as
in client-go, a PATCH can find its Event gone (never created because the first one was
dropped or failed to post, or expired by the API server's Event TTL): the caller then creates
``Correlated.event``, which is always the complete Event. One difference: a dedup record also
expires after ``dedup_window`` without a repeat (default one hour, the API server's default
``--event-ttl``), after which a repeat starts a new Event instead of patching a gone one.
All state is bounded: least recently used keys are forgotten past ``max_keys`` (client-go
keeps 4096; the default here is 16,384, room for 1,000 objects with 10 messages each, a few
megabytes).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from inference_operator.core.clock import Clock
from inference_operator.core.objects import Obj

__all__ = ["COMBINED_PREFIX", "MESSAGE_LIMIT", "Correlated", "EventCorrelator", "build_event"]

COMBINED_PREFIX = "(combined from similar events): "
MESSAGE_LIMIT = 1024
V = TypeVar("V")


@dataclass(frozen=True)
class Correlated:
    """What to send for one recorded Event.

    ``patch`` is None: create ``event``. Otherwise merge-patch the existing Event named
    ``event["metadata"]["name"]`` with ``patch``, and create ``event`` if it is not found.
    """

    event: Obj
    patch: Obj | None = None


def build_event(obj: Obj, *, type: str, reason: str, message: str, name: str, now: str, component: str) -> Obj:
    """A core/v1 Event about ``obj``, as both backends record it (before correlation)."""
    meta = obj["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": meta.get("namespace", "default")},
        "involvedObject": {
            "apiVersion": obj.get("apiVersion"),
            "kind": obj.get("kind"),
            "name": meta["name"],
            "namespace": meta.get("namespace", "default"),
            "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
        },
        "type": type,
        "reason": reason,
        "message": message[:MESSAGE_LIMIT],
        "source": {"component": component},
        "reportingComponent": component,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }


class _Lru(Generic[V]):
    """A dict that forgets its least recently used keys beyond ``limit`` (no lock of its own)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._items: OrderedDict[str, V] = OrderedDict()

    def get(self, key: str) -> V | None:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def put(self, key: str, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.limit:
            self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


@dataclass
class _Similar:
    messages: set[str] = field(default_factory=set)
    last_seen: float = 0.0


@dataclass
class _Posted:
    name: str
    first_timestamp: Any
    count: int
    last_seen: float


@dataclass
class _Bucket:
    tokens: float
    last: float


def _object_key(event: Obj) -> str:
    involved = event.get("involvedObject") or {}
    source = event.get("source") or {}
    parts = (
        source.get("component"),
        source.get("host"),
        involved.get("apiVersion"),
        involved.get("kind"),
        involved.get("namespace"),
        involved.get("name"),
        involved.get("uid"),
    )
    return "\x00".join(str(p or "") for p in parts)


class EventCorrelator:
    """Decides, for each Event about to be recorded, whether to create, patch or drop it.

    Thread-safe: reconcile workers record Events concurrently. ``correlate`` never mutates
    its argument; the Events it returns are new dicts sharing the input's nested values.
    """

    def __init__(
        self,
        clock: Clock,
        *,
        similar_limit: int = 10,
        similar_window: float = 600.0,
        dedup_window: float = 3600.0,
        burst: int = 25,
        refill_seconds: float = 300.0,
        max_keys: int = 16_384,
    ) -> None:
        if similar_limit < 1 or burst < 1 or refill_seconds <= 0 or max_keys < 1:
            raise ValueError("similar_limit, burst, refill_seconds and max_keys must be positive")
        self.clock = clock
        self.similar_limit = similar_limit
        self.similar_window = similar_window
        self.dedup_window = dedup_window
        self.burst = burst
        self.refill_seconds = refill_seconds
        self._similar: _Lru[_Similar] = _Lru(max_keys)
        self._posted: _Lru[_Posted] = _Lru(max_keys)
        self._buckets: _Lru[_Bucket] = _Lru(max_keys)
        self._lock = threading.Lock()
        self.deduplicated = 0
        """Events sent as a PATCH of an existing Event (count bumped) instead of a new one."""
        self.aggregated = 0
        """Events folded into a "(combined from similar events)" Event."""
        self.spam_dropped = 0
        """Events dropped by the per-object spam filter."""

    def correlate(self, event: Obj) -> Correlated | None:
        """The Event to create or patch, or None when the spam filter drops it."""
        now = self.clock.now()
        with self._lock:
            event, key = self._aggregate(event, now)
            result = self._observe(event, key, now)
            if not self._accept(_object_key(event), now):
                self.spam_dropped += 1
                return None
            if result.patch is not None:
                self.deduplicated += 1
            return result

    def remembered(self) -> int:
        """How many keys the three steps remember in all (bounded by 3 x ``max_keys``)."""
        with self._lock:
            return len(self._similar) + len(self._posted) + len(self._buckets)

    # -- the three steps, called with the lock held ----------------------------------------------

    def _aggregate(self, event: Obj, now: float) -> tuple[Obj, str]:
        """Return the event (or a combined one) and the key under which identical ones dedup."""
        similar_key = "\x00".join((_object_key(event), str(event.get("type")), str(event.get("reason"))))
        message = str(event.get("message") or "")
        record = self._similar.get(similar_key)
        if record is None or now - record.last_seen > self.similar_window:
            record = _Similar()
        record.last_seen = now
        record.messages.add(message)
        self._similar.put(similar_key, record)
        if len(record.messages) < self.similar_limit:
            return event, similar_key + "\x00" + message
        # Never grow the set beyond the limit: forget one message, so the next new one is
        # combined too, while a repeat of a remembered one still dedups on its own Event.
        record.messages.discard(message)
        self.aggregated += 1
        combined = {**event, "message": (COMBINED_PREFIX + message)[:MESSAGE_LIMIT]}
        return combined, similar_key

    def _observe(self, event: Obj, key: str, now: float) -> Correlated:
        last = self._posted.get(key)
        if last is None or now - last.last_seen > self.dedup_window:
            self._posted.put(
                key,
                _Posted(
                    name=event["metadata"]["name"],
                    first_timestamp=event.get("firstTimestamp"),
                    count=int(event.get("count") or 1),
                    last_seen=now,
                ),
            )
            return Correlated(event)
        last.count += 1
        last.last_seen = now
        repeated = {
            **event,
            "metadata": {**event["metadata"], "name": last.name},
            "firstTimestamp": last.first_timestamp,
            "count": last.count,
        }
        patch = {"count": last.count, "lastTimestamp": event.get("lastTimestamp"), "message": event.get("message")}
        return Correlated(repeated, patch)

    def _accept(self, key: str, now: float) -> bool:
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = _Bucket(tokens=float(self.burst), last=now)
        elif now > bucket.last:
            bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.last) / self.refill_seconds)
            bucket.last = now
        self._buckets.put(key, bucket)
        if bucket.tokens < 1.0:
            return False
        bucket.tokens -= 1.0
        return True
