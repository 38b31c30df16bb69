"""The fake API server's store: objects by key, their frozen copies, reads, and the request log.

Split from :mod:`.server` so that module is about what requests do (verbs, strategy, field
management, deletion, garbage collection) while this one is about where objects live and how
they are handed out: every read thaws a frozen copy, so nothing a caller holds is ever part of
the store. Subclassed by :class:`~.server.FakeApiServer`, which owns the lock discipline of
writes; reads here take the same re-entrant lock.
"""

from __future__ import annotations

import datetime
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import NamedTuple

from inference_operator.core.clock import Clock, format_timestamp
from inference_operator.core.errors import ApiError, NotFound
from inference_operator.core.jsoncopy import freeze
from inference_operator.core.jsoncopy import thaw as _thaw
from inference_operator.core.objects import Obj
from inference_operator.sim.apiserver.keys import Key, key_for, key_of_stored
from inference_operator.sim.apiserver.kinds import traits_of
from inference_operator.sim.apiserver.selectors import parse_field_selector, parse_label_selector
from inference_operator.sim.apiserver.watch import Broadcaster, Transform, Watch

__all__ = ["ApiRequest", "ControllerAccess", "ObjectStore", "thaw_object"]

Objs = list[Obj]  # spelt as an alias: inside the class, ``list`` is the method

FROZEN_KEPT = 4096
"""Frozen copies kept at most (the oldest dropped first): most are read once, as a write's answer."""


class ApiRequest(NamedTuple):
    """One mutating request, as logged in :attr:`FakeApiServer.requests`."""

    verb: str
    kind: str
    namespace: str
    name: str
    changed: bool = True
    """False for a no-op write and for a failed request."""
    error: str = ""
    """The failure's reason (``"Conflict"``, ``"NotFound"`` …), empty on success."""


class ObjectStore:
    """Objects keyed by (kind, namespace, name), with reads, watches and request accounting."""

    def __init__(self, clock: Clock) -> None:
        self.clock: Clock = clock
        self._lock = threading.RLock()
        self._objects: dict[str, dict[str, dict[str, Obj]]] = {}  # kind → namespace → name → object
        self._frozen: dict[Key, bytes] = {}  # frozen copies of stored objects, made on the first read
        # of each version (thawing is the cheapest copy); a version nobody reads is never frozen,
        # and only the last FROZEN_KEPT are kept
        self._watches = Broadcaster(self._lock)
        self._resource_version = 0
        self._last_wall: datetime.datetime | None = None
        self._last_now = ""
        self.writes = 0
        """Successful mutating requests that changed something."""
        self.writes_by_verb: Counter[str] = Counter()
        self.requests: list[ApiRequest] = []
        """Every mutating request, including no-ops and failures (see :class:`ApiRequest`)."""
        self.reads = 0
        """``get`` and ``list`` calls (an operator should read its informer cache instead)."""
        self.gc_writes = 0
        """Writes done by the simulated garbage collector (cascading deletes, orphaning)."""

    # --- reads --------------------------------------------------------------------------------

    def get(self, kind: str, namespace: str, name: str) -> Obj:
        """A copy of the object; :class:`NotFound` if there is none."""
        with self._lock:
            self.reads += 1
            key = key_for(kind, namespace, name)
            return thaw_object(self._blob(key, self._stored(key)))

    def list(
        self,
        kind: str,
        namespace: str | None = None,
        *,
        labels: Mapping[str, str] | None = None,
        label_selector: str = "",
        field_selector: str = "",
    ) -> Objs:
        """Copies of the objects of ``kind`` (in ``namespace``, with ``labels``), sorted by key.

        ``namespace`` None (or ``""``) lists all namespaces; ``labels`` must all match, and so must
        ``label_selector`` and ``field_selector`` (strings in the API's syntax: ``app in (a,b),!canary``,
        ``metadata.name=x``); a malformed one is :class:`~.managedfields.BadRequest`, as for real.
        As in the real server's lists, items of built-in kinds carry no ``kind`` and ``apiVersion``
        (only the list does); a custom resource's items keep theirs.
        """
        selector = parse_label_selector(label_selector)
        fields = parse_field_selector(field_selector)
        with self._lock:
            self.reads += 1
            items = self._copies(kind, namespace, labels)
            if selector or field_selector:
                items = [o for o in items if selector.matches(o["metadata"].get("labels") or {}) and fields(o)]
            if traits_of(kind).built_in:
                for item in items:
                    item.pop("apiVersion", None)
                    item.pop("kind", None)
            return items

    def list_and_watch(
        self, kind: str, namespace: str | None = None, *, transform: Transform | None = None
    ) -> tuple[Objs, Watch]:
        """List and open a watch atomically: the watch sees exactly the changes after the list.

        This is an informer's list: its items carry ``kind`` and ``apiVersion``, which clients
        (Kopf, client-go's dynamic informers) fill in from the list's own. ``transform``: the
        informer's cache transform, applied to the items and to every event; its results are
        not copies but share the stored versions' subtrees, read-only (see :mod:`.watch`).
        """
        with self._lock:
            self.reads += 1
            if transform is not None:
                items = [transform(obj) for obj in self._select(kind, namespace, None)]
            else:
                items = self._copies(kind, namespace, None)
            return items, self.watch(kind, namespace, transform=transform)

    def watch(
        self,
        kind: str | None = None,
        namespace: str | None = None,
        *,
        label_selector: str = "",
        transform: Transform | None = None,
    ) -> Watch:
        """Start buffering events for ``kind`` (all kinds if None) from now on; ``label_selector``
        (the API's syntax) narrows it as on a real server; ``transform`` is applied to each
        event's object before it is buffered."""
        selector = parse_label_selector(label_selector)
        with self._lock:
            return self._watches.open(kind, namespace or None, selector, transform)

    def objects_total(self, kind: str | None = None) -> int:
        with self._lock:
            kinds = [self._objects.get(kind, {})] if kind is not None else list(self._objects.values())
            return sum(len(names) for namespaces in kinds for names in namespaces.values())

    @property
    def resource_version(self) -> str:
        """The latest resourceVersion handed out (the cluster-wide counter)."""
        return str(self._resource_version)

    def reset_counters(self) -> None:
        """Zero ``writes``, ``writes_by_verb``, ``requests``, ``reads`` and ``gc_writes``."""
        with self._lock:
            self.writes = self.reads = self.gc_writes = 0
            self.writes_by_verb.clear()
            self.requests.clear()

    # --- store -------------------------------------------------------------------------------------

    def _copies(self, kind: str, namespace: str | None, labels: Mapping[str, str] | None) -> Objs:
        return [thaw_object(self._blob(key_of_stored(obj), obj)) for obj in self._select(kind, namespace, labels)]

    def _blob(self, key: Key, stored: Obj) -> bytes:
        """The frozen copy of ``stored``, the object stored at ``key``: made once per version.

        Freezing when a version is first read rather than when it is written is the same
        snapshot, because stored objects are never modified in place; most versions written by
        the simulated controllers are replaced before anyone reads them."""
        blob = self._frozen.get(key)
        if blob is None:
            if len(self._frozen) >= FROZEN_KEPT:
                del self._frozen[next(iter(self._frozen))]  # the oldest: made again if read again
            blob = self._frozen[key] = freeze(stored)
        return blob

    def _copy_of(self, key: Key, obj: Obj) -> Obj:
        """A caller's own copy of ``obj``, a version stored at ``key`` (still stored or not)."""
        if self._lookup(key) is obj:
            return thaw_object(self._blob(key, obj))
        return thaw_object(freeze(obj))

    def _select(self, kind: str, namespace: str | None, labels: Mapping[str, str] | None) -> Objs:
        namespaces = self._objects.get(kind, {})
        if not traits_of(kind).namespaced:
            namespace = None
        if namespace:  # None or "" means all namespaces, as in client-go
            chosen: Iterable[tuple[str, dict[str, Obj]]] = [(namespace, namespaces.get(namespace, {}))]
        else:
            chosen = sorted(namespaces.items())
        result = [obj for _, names in chosen for _, obj in sorted(names.items())]
        if labels:
            wanted = labels.items()
            result = [obj for obj in result if wanted <= obj["metadata"].get("labels", {}).items()]
        return result

    def _reread(self, kind: str, read: Callable[[Obj], Obj | None]) -> None:
        """Replace each stored object of ``kind`` by ``read(obj)`` where that returns one, keeping
        its resourceVersion and telling no watch: what a change in how the server reads its
        storage (a CRD's new defaults) looks like from outside."""
        for namespace, names in self._objects.get(kind, {}).items():
            for name, obj in names.items():
                new = read(obj)
                if new is not None:
                    names[name] = new
                    self._frozen.pop((kind, namespace, name), None)

    def _lookup(self, key: Key) -> Obj | None:
        kind, namespace, name = key
        return self._objects.get(kind, {}).get(namespace, {}).get(name)

    def _contents(self, namespace: str) -> tuple[Key, ...]:
        """The keys of the objects stored in ``namespace``."""
        return tuple(
            (kind, namespace, name) for kind, spaces in self._objects.items() for name in spaces.get(namespace, ())
        )

    def _stored(self, key: Key) -> Obj:
        stored = self._lookup(key)
        if stored is None:
            kind, namespace, name = key
            where = f' in namespace "{namespace}"' if namespace else ""
            raise NotFound(f'{kind} "{name}" not found{where}', kind=kind, namespace=namespace, name=name)
        return stored

    # --- accounting -----------------------------------------------------------------------------

    def _log(self, verb: str, key: Key, *, changed: bool = False, error: ApiError | None = None) -> None:
        self.requests.append(ApiRequest(verb, key[0], key[1], key[2], changed, error.reason if error else ""))
        if changed:
            self.writes += 1
            self.writes_by_verb[verb] += 1

    def _next_resource_version(self) -> str:
        self._resource_version += 1
        return str(self._resource_version)

    def _now(self) -> str:
        wall = self.clock.wall()
        if wall != self._last_wall:  # formatting is the slow part, and many writes share a second
            self._last_wall, self._last_now = wall, format_timestamp(wall)
        return self._last_now


class ControllerAccess:
    """The store as the fake's own controllers reach it: stored objects as they are (not copies,
    no read counted), the timestamp and resourceVersion of a write, and the tally of the
    controller-manager's writes (``gc_writes``). The namespace controller's
    :class:`~.namespaces.Storage`; kept apart from :class:`ObjectStore`'s own methods, whose
    reads are the API's (copies, counted)."""

    def __init__(self, store: ObjectStore) -> None:
        self._store = store

    def lookup(self, key: Key, /) -> Obj | None:
        return self._store._lookup(key)

    def contents(self, namespace: str, /) -> tuple[Key, ...]:
        return self._store._contents(namespace)

    def now(self) -> str:
        return self._store._now()

    def next_resource_version(self) -> str:
        return self._store._next_resource_version()

    def count_controller_writes(self, count: int, /) -> None:
        self._store.gc_writes += count


def thaw_object(blob: bytes) -> Obj:
    obj: Obj = _thaw(blob)
    return obj
