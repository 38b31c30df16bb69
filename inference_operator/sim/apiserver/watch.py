"""Watches on the fake API server: buffered event streams, and the fan-out that fills them.

A watch is the one thing the fake API server hands out that outlives the call: informers hold it
and drain it whenever the simulation says so. It therefore has its own small API (``drain``,
``pending``, ``stop``), kept apart from :mod:`.server`, which only needs to offer each change
to whoever is watching (:meth:`Broadcaster.emit`).

A watch may carry a label selector (:mod:`.selectors`); it then sees an object the way the real
API server's watch cache shows it: ``ADDED`` when a change makes the object match, ``DELETED``
(with the new state) when a change makes it stop matching, nothing while it matches neither
before nor after.

Events are buffered as frozen snapshots (:func:`~inference_operator.core.jsoncopy.freeze`) and thawed
when drained, so every receiver gets its own copy and none can touch the store. A watch shares
the server's lock: the server is safe to share between threads, and so are its watches.

A watch may also carry a ``transform`` (an informer's cache transform, as client-go's
``SetTransform``: the informers drop the managedFields entries the operator never reads). It
is applied once per event for all watches sharing that transform, and those watches share
its result, which is not a copy: it shares its subtrees with the stored version. The
receivers of a transform are informer caches, whose objects are read-only by contract, and
the store never changes a version once stored (every write stores a new dict), so what the
caches hold is an immutable snapshot without the cost of one: copying each event's object
into the caches was a tenth of a simulation's CPU, and all informers of a kind, and the
store, now hold one tree between them. Watches without a transform get their own copy each.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Mapping
from typing import Literal, NamedTuple

from inference_operator.core.jsoncopy import freeze, thaw
from inference_operator.core.objects import Obj
from inference_operator.sim.apiserver.selectors import Selector

__all__ = ["Broadcaster", "EventType", "Watch", "WatchEvent"]

EventType = Literal["ADDED", "MODIFIED", "DELETED"]
Transform = Callable[[Obj], Obj]
"""What a watch's receiver keeps of an object: must return a new object (or ``obj`` itself,
unchanged), never modify its argument."""


class WatchEvent(NamedTuple):
    """One change seen by a watch. ``object`` is the caller's own copy (DELETED: last state)."""

    type: EventType
    object: Obj


class Watch:
    """A buffered stream of events for one kind (or all kinds), from creation until :meth:`stop`."""

    def __init__(
        self,
        broadcaster: Broadcaster,
        kind: str | None,
        namespace: str | None,
        selector: Selector | None = None,
        transform: Transform | None = None,
    ) -> None:
        self.kind = kind
        self.namespace = namespace
        self.selector = selector or Selector()
        self.transform = transform
        self._broadcaster = broadcaster
        self._events: deque[tuple[EventType, bytes | Obj]] = deque()  # frozen snapshots, thawed on
        # drain; or, with a transform, its result, shared by the watches of that transform
        self._stopped = False

    def matches(self, kind: str, namespace: str) -> bool:
        return (self.kind is None or self.kind == kind) and (self.namespace is None or self.namespace == namespace)

    def pending(self) -> int:
        """How many events are waiting to be drained."""
        with self._broadcaster.lock:
            return len(self._events)

    def idle(self) -> bool:
        """No event is waiting (without the lock: an event appended meanwhile is the next look's,
        as if it came after this one)."""
        return not self._events

    def drain(self) -> list[WatchEvent]:
        """Return the pending events, oldest first, and forget them."""
        if not self._events:  # the common case in a simulation's every step: not worth the lock
            return []  # (an event appended meanwhile is the next drain's, as if it came after this one)
        with self._broadcaster.lock:
            events = list(self._events)
            self._events.clear()
        return [WatchEvent(kind, thaw(item) if isinstance(item, bytes) else item) for kind, item in events]

    def stop(self) -> None:
        """Stop receiving events; pending ones can still be drained."""
        with self._broadcaster.lock:
            if not self._stopped:
                self._stopped = True
                self._broadcaster._close(self)

    @property
    def stopped(self) -> bool:
        return self._stopped

    def _offer(self, event: EventType, blob: bytes | Obj, new: Obj, old: Obj | None) -> None:
        """One change: ``new`` is the object now (DELETED: its last state), ``old`` the version
        before a MODIFIED. A selector's leave is DELETED with the old state at the new version."""
        if self.selector:
            matches_now = self.selector.matches(_labels(new))
            if event == "DELETED":
                if not matches_now:
                    return
            else:
                matched_before = event == "MODIFIED" and old is not None and self.selector.matches(_labels(old))
                if not matches_now and not matched_before:
                    return  # outside the selector before and after
                if matches_now and not matched_before:
                    event = "ADDED"  # it entered the selector
                elif not matches_now and old is not None:  # it left: its old state, at the new version
                    rv = new["metadata"]["resourceVersion"]
                    left = {**old, "metadata": {**old["metadata"], "resourceVersion": rv}}
                    event = "DELETED"
                    blob = self.transform(left) if self.transform else freeze(left)
        self._events.append((event, blob))


class Broadcaster:
    """The open watches of one API server; offers each change to the watches it matches.

    ``lock`` is the server's own: the server holds it while it emits, watches take it to drain.
    """

    def __init__(self, lock: threading.RLock) -> None:
        self.lock = lock
        self._watches: list[Watch] = []

    def open(
        self,
        kind: str | None,
        namespace: str | None,
        selector: Selector | None = None,
        transform: Transform | None = None,
    ) -> Watch:
        """A new watch that receives every event emitted from now on for ``kind`` in ``namespace``
        (for objects ``selector`` matches), each object passed through ``transform`` if given."""
        with self.lock:
            watch = Watch(self, kind, namespace, selector, transform)
            self._watches.append(watch)
            return watch

    def _close(self, watch: Watch) -> None:
        with self.lock:
            self._watches.remove(watch)

    def emit(self, event: EventType, kind: str, namespace: str, *, new: Obj, old: Obj | None) -> None:
        """Offer one change to every matching watch: ``new`` is the object now (or its last
        state), ``old`` the stored version before it. Call with ``lock`` held."""
        transformed: dict[Transform, Obj] = {}
        blob: bytes | None = None  # ``new`` frozen, for the watches without a transform
        for watch in self._watches:
            if watch.matches(kind, namespace):
                transform = watch.transform
                if transform is None:
                    if blob is None:
                        blob = freeze(new)
                    watch._offer(event, blob, new, old)
                    continue
                shared = transformed.get(transform)
                if shared is None:  # shares the stored version's subtrees: read-only, like the store
                    shared = transformed[transform] = transform(new)
                watch._offer(event, shared, new, old)


def _labels(obj: Obj) -> Mapping[str, str]:
    labels = obj["metadata"].get("labels")
    return labels if isinstance(labels, dict) else {}
