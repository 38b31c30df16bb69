"""A list+watch cache of one kind, so the control loop reads memory instead of the API server.

This is client-go's SharedInformer in miniature, for the simulator: :meth:`SharedInformer.start`
lists the kind (filling the cache and firing add handlers) and opens a watch in the same atomic
step, so no change falls between the two; :meth:`SharedInformer.pump` then applies whatever the
watch buffered and fires the handlers. Nothing runs in the background: the simulation decides
when events are delivered, which keeps every run deterministic.

For fault injection (the explorer) it can also be paused (informer lag: events wait in the
watch), have its buffered events dropped or reordered, and re-list: the cache is replaced by a
fresh LIST in one step and a new watch opened, as client-go does after a watch expired.

The informer is generic: mapping a Deployment event to its owning InferenceService key is the
controller's business (it registers a handler that does it).

Objects in the cache, and the objects passed to handlers, are the cache's own and READ-ONLY:
callers must never mutate them (copy first, e.g. with :func:`inference_operator.core.jsoncopy.deep_copy`).
Handing out references rather than copies is what makes a cache read cost nothing, exactly as
in client-go, where mutating a cached object is the classic informer bug.

The cache is slimmed, as the real operator's is (``kube/cache.py``, like controller-runtime's
``TransformStripManagedFields``): of ``metadata.managedFields`` only the operator's own apply
entry stays, the one its drift check reads (which fields it owns); the other managers' entries
are often half an object's size. The transform runs inside the watch
(:mod:`~inference_operator.sim.apiserver.watch`), and its result is not a copy: informers of one
kind share it, and it shares its subtrees with the API server's stored version, which is never
changed once stored. Read-only is therefore the store's integrity, not only the cache's.
Whoever needs the full entries reads the API server (``Backend.read``), as on a real cluster.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from inference_operator.api.constants import FIELD_MANAGER
from inference_operator.core.labelindex import LabelIndex
from inference_operator.core.objects import Obj
from inference_operator.sim.apiserver.server import FakeApiServer, Watch, WatchEvent
from inference_operator.sim.apiserver.watch import Transform

__all__ = ["AddHandler", "DeleteHandler", "SharedInformer", "UpdateHandler", "slim"]

Objs = list[Obj]  # an alias: inside the class, ``list`` is the method
AddHandler = Callable[[Obj], None]
UpdateHandler = Callable[[Obj, Obj], None]
DeleteHandler = Callable[[Obj], None]


def slim(obj: Obj) -> Obj:
    """The object with only the operator's own apply entry in ``managedFields`` (the default
    cache transform). Shallow: the input is left alone, the kept parts are shared."""
    meta = obj.get("metadata")
    fields = meta.get("managedFields") if isinstance(meta, dict) else None
    if fields is None:
        return obj
    kept = [e for e in fields if e.get("manager") == FIELD_MANAGER and e.get("operation") == "Apply"]
    if len(kept) == len(fields):
        return obj
    meta = {k: v for k, v in meta.items() if k != "managedFields"}  # type: ignore[union-attr]
    if kept:
        meta["managedFields"] = kept
    return {**obj, "metadata": meta}


@dataclass(frozen=True)
class _Handlers:
    on_add: AddHandler | None
    on_update: UpdateHandler | None
    on_delete: DeleteHandler | None


class SharedInformer:
    """A cache of one kind (optionally one namespace), kept current from a watch.

    Event handling, per watch event:

    - ``ADDED`` → cache it, ``on_add(obj)`` (``on_update`` if the key was already cached);
    - ``MODIFIED`` → cache it, ``on_update(old, new)`` (``on_add`` if the key was not cached).
      ``on_update`` is called even when ``resourceVersion`` did not change, as for a client-go
      resync: handlers must not assume ``old`` and ``new`` differ;
    - ``DELETED`` → drop it from the cache, ``on_delete(last_state)``.
    """

    def __init__(
        self,
        api: FakeApiServer,
        kind: str,
        *,
        namespace: str | None = None,
        label: str | None = None,
        transform: Transform | None = slim,
        index_label: str | None = None,
    ) -> None:
        self.api = api
        self.transform = transform
        """What the cache keeps of each object (None: all of it)."""
        self.kind = kind
        self.namespace = namespace
        self.label = label
        """Only objects carrying this label key (a server-side ``labelSelector=<key>``): like a
        filtered watch, an object that loses the label is DELETED here, one that gains it ADDED."""
        self._cache: dict[tuple[str, str], Obj] = {}
        self._index: LabelIndex[Obj] | None = LabelIndex(index_label) if index_label is not None else None
        """The cached objects by namespace and ``index_label``'s value (:meth:`labelled`)."""
        self._handlers: list[_Handlers] = []
        self._watch: Watch | None = None
        self._backlog: deque[WatchEvent] = deque()  # drained but not yet handled
        self._lock = threading.RLock()
        self._synced = False
        self._paused = False
        self.changes = 0
        """How many times the cache changed (an event applied, a list): a version of its contents,
        for whoever keeps something worked out from them."""

    @property
    def has_synced(self) -> bool:
        """True once the initial list has filled the cache."""
        return self._synced

    def add_event_handler(
        self,
        on_add: AddHandler | None = None,
        on_update: UpdateHandler | None = None,
        on_delete: DeleteHandler | None = None,
    ) -> None:
        """Register handlers. Added after :meth:`start`, ``on_add`` is replayed for the cache."""
        handlers = _Handlers(on_add, on_update, on_delete)
        with self._lock:
            self._handlers.append(handlers)
            if self._synced and on_add is not None:
                for obj in list(self._cache.values()):
                    on_add(obj)

    def start(self) -> None:
        """List the kind into the cache (firing ``on_add``) and start watching. Idempotent."""
        with self._lock:
            if self._watch is not None:
                return
            items, self._watch = self.api.list_and_watch(self.kind, self.namespace, transform=self.transform)
            items = [obj for obj in items if self._selects(obj)]
            for obj in items:
                self._cache[_key(obj)] = obj
            self._reindex()
            self.changes += 1
            self._synced = True
            for obj in items:
                for handlers in list(self._handlers):
                    if handlers.on_add is not None:
                        handlers.on_add(obj)

    def stop(self) -> None:
        """Stop watching; the cache keeps its last contents."""
        with self._lock:
            if self._watch is not None:
                self._watch.stop()

    def pump(self) -> int:
        """Apply the buffered watch events to the cache and call the handlers; return how many.

        If a handler raises, the events after it stay queued for the next ``pump`` and the
        exception propagates: nothing is lost or applied twice.
        """
        watch = self._watch
        if watch is not None and watch.idle() and not self._backlog:
            return 0  # what most pumps find (the simulation pumps every informer every step)
        with self._lock:
            if self._watch is None or self._paused:
                return 0
            events = self._watch.drain()
            if not events and not self._backlog:
                return 0
            self._backlog.extend(events)
            handled = 0
            while self._backlog:
                event = self._backlog.popleft()
                handled += 1
                self._handle(event)
            return handled

    # -- perturbations (fault injection) ------------------------------------------------------

    def pause(self) -> None:
        """Stop delivering events (informer lag): they wait in the watch until :meth:`resume`."""
        self._paused = True

    def resume(self) -> None:
        self._paused = False

    def pending(self) -> int:
        """Events received but not yet applied to the cache."""
        with self._lock:
            return len(self._backlog) + (self._watch.pending() if self._watch is not None else 0)

    def perturb(self, change: Callable[[Sequence[WatchEvent]], Sequence[WatchEvent]]) -> int:
        """Replace the events not yet applied by ``change(events)`` (drop some, reorder them …);
        returns how many were pending. Only a :meth:`relist` makes the cache right again."""
        with self._lock:
            if self._watch is not None:
                self._backlog.extend(self._watch.drain())
            events = list(self._backlog)
            self._backlog = deque(change(events))
            return len(events)

    def relist(self) -> int:
        """Replace the cache with a fresh LIST and watch anew, atomically; returns the objects listed.

        Buffered events are discarded (the list is newer). Handlers see the difference, as with
        client-go's Replace: ``on_delete`` for cached objects that are gone, ``on_add`` for new ones,
        ``on_update(old, new)`` for every other one (even unchanged, like a resync).
        """
        with self._lock:
            if self._watch is not None:
                self._watch.stop()
            self._backlog.clear()
            items, self._watch = self.api.list_and_watch(self.kind, self.namespace, transform=self.transform)
            items = [obj for obj in items if self._selects(obj)]
            old_cache = self._cache
            fresh = {_key(obj): obj for obj in items}
            # Keep the first-seen order for objects that stay; new ones go at the end.
            self._cache = {key: fresh[key] for key in old_cache if key in fresh}
            self._cache.update((key, obj) for key, obj in fresh.items() if key not in self._cache)
            self._reindex()
            self.changes += 1
            self._synced = True
            for key, old in old_cache.items():
                if key not in fresh:
                    self._notify_delete(old)
            for key, obj in fresh.items():
                self._notify(old_cache.get(key), obj)
            return len(items)

    def resync(self) -> int:
        """Call ``on_update(obj, obj)`` for every cached object, like a client-go resync."""
        with self._lock:
            objects = list(self._cache.values())
            for obj in objects:
                for handlers in list(self._handlers):
                    if handlers.on_update is not None:
                        handlers.on_update(obj, obj)
            return len(objects)

    def get(self, namespace: str, name: str) -> Obj | None:
        """The cached object (READ-ONLY, never mutate it), or None when it is not cached."""
        return self._cache.get((namespace, name))

    def list(self, namespace: str | None = None) -> Objs:
        """The cached objects (READ-ONLY), in the order they were first seen."""
        with self._lock:
            if namespace is None:
                return list(self._cache.values())
            return [obj for (ns, _), obj in self._cache.items() if ns == namespace]

    def labelled(self, namespace: str, value: str) -> Objs | None:
        """The cached objects in ``namespace`` whose ``index_label`` is ``value``, by name
        (READ-ONLY); None when the informer was made without ``index_label``."""
        with self._lock:
            return self._index.get(namespace, value) if self._index is not None else None

    def __len__(self) -> int:
        return len(self._cache)

    def _selects(self, obj: Obj) -> bool:
        return self.label is None or self.label in ((obj.get("metadata") or {}).get("labels") or {})

    def _handle(self, event: WatchEvent) -> None:
        self.changes += 1
        obj = event.object
        key = _key(obj)
        if not self._selects(obj):
            if key not in self._cache:
                return  # never selected: a filtered watch does not mention it
            event = WatchEvent("DELETED", obj)  # it stopped matching the selector
        if event.type == "DELETED":
            gone = self._cache.pop(key, None)
            if self._index is not None:
                self._index.replaced(gone, None)
            self._notify_delete(obj)
            return
        old = self._cache.get(key)
        self._cache[key] = obj
        if self._index is not None:
            self._index.replaced(old, obj)
        self._notify(old, obj)

    def _reindex(self) -> None:
        if self._index is not None:
            self._index.clear()
            for obj in self._cache.values():
                self._index.replaced(None, obj)

    def _notify(self, old: Obj | None, new: Obj) -> None:
        """``on_add(new)`` if nothing was cached before, else ``on_update(old, new)``."""
        for handlers in list(self._handlers):
            if old is None:
                if handlers.on_add is not None:
                    handlers.on_add(new)
            elif handlers.on_update is not None:
                handlers.on_update(old, new)

    def _notify_delete(self, last: Obj) -> None:
        for handlers in list(self._handlers):
            if handlers.on_delete is not None:
                handlers.on_delete(last)


def _key(obj: Obj) -> tuple[str, str]:
    meta = obj["metadata"]
    return (meta.get("namespace", ""), meta["name"])
