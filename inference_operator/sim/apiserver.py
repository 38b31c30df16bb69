"""An in-process stand-in for kube-apiserver, faithful in the semantics operators rely on.

The simulator, the unit tests and the ``demo`` command need an API server that runs offline,
deterministically and in microseconds, yet punishes the same mistakes a real cluster does:

1. optimistic concurrency: a write with a stale ``resourceVersion`` raises :class:`Conflict`;
2. ``metadata.generation`` counts spec changes only (and, for Deployments, annotation changes);
3. the status subresource: ``update_status`` writes only ``status`` and the main endpoint
   ignores it; neither a status write nor a no-op write bumps ``generation``;
4. finalizers and garbage collection: deleting an object with finalizers only marks it
   (``deletionTimestamp``, and ``generation`` + 1); removing the last finalizer removes it, and
   removal cascades through ``ownerReferences`` (background, foreground or orphan).

Plus defaulting (:mod:`.defaults`), server-set ``uid``/``creationTimestamp``, watch events, and
copies everywhere: nothing a caller holds is ever part of the store. Wherever this fake and a
real API server could disagree, the real one is right; the e2e suite is the referee.

Writes are accounted for (``writes``, ``writes_by_verb``, ``requests``) so tests can assert that
a converged object costs zero writes. A no-op write (nothing changed) is still a request, so it
is logged in ``requests`` with ``changed=False``, but it is not a write: like the real API server
it keeps the ``resourceVersion`` and emits no watch event. Garbage-collector work is counted in
``gc_writes``, never in ``writes``: it is not the caller's doing.

Stored objects are never mutated in place: every write stores a new dict (sharing untouched
subtrees with the previous version) plus a frozen copy (:func:`~inference_operator.jsoncopy.freeze`).
Every read, write response and watch event thaws that copy, which is the cheapest way to hand out
an independent object; watch buffers hold the frozen bytes and thaw them when drained.
All public methods take one re-entrant lock; the server is safe to share between threads.
"""

from __future__ import annotations

import threading
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, Literal, NamedTuple

from ..clock import Clock, FakeClock, format_timestamp
from ..errors import AlreadyExists, ApiError, Conflict, Invalid, NotFound
from ..jsoncopy import freeze, merge_patch
from ..jsoncopy import thaw as _thaw
from . import defaults

__all__ = [
    "AlreadyExists",
    "ApiError",
    "ApiRequest",
    "Conflict",
    "FakeApiServer",
    "Invalid",
    "NotFound",
    "Propagation",
    "Watch",
    "WatchEvent",
]

Obj = dict[str, Any]
Objs = list[Obj]  # spelt as an alias: inside the class, ``list`` is the method
Key = tuple[str, str, str]
"""(kind, namespace, name); namespace is ``""`` for cluster-scoped kinds."""
EventType = Literal["ADDED", "MODIFIED", "DELETED"]
Propagation = Literal["Background", "Foreground", "Orphan"]

FOREGROUND_FINALIZER: Final = "foregroundDeletion"
DEFAULT_NAMESPACE: Final = "default"
_SERVER_FIELDS: Final = (
    "uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
)
_OMITEMPTY_METADATA: Final = ("labels", "annotations", "finalizers", "ownerReferences")


class WatchEvent(NamedTuple):
    """One change seen by a watch. ``object`` is the caller's own copy (DELETED: last state)."""

    type: EventType
    object: Obj


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


class Watch:
    """A buffered stream of events for one kind (or all kinds), from creation until :meth:`stop`."""

    def __init__(self, server: FakeApiServer, kind: str | None, namespace: str | None) -> None:
        self.kind = kind
        self.namespace = namespace
        self._server = server
        self._events: deque[tuple[EventType, bytes]] = deque()  # frozen snapshots, thawed on drain
        self._stopped = False

    def matches(self, kind: str, namespace: str) -> bool:
        return (self.kind is None or self.kind == kind) and (self.namespace is None or self.namespace == namespace)

    def pending(self) -> int:
        """How many events are waiting to be drained."""
        with self._server._lock:
            return len(self._events)

    def drain(self) -> list[WatchEvent]:
        """Return the pending events, oldest first, and forget them."""
        with self._server._lock:
            events = list(self._events)
            self._events.clear()
        return [WatchEvent(kind, _thaw_object(blob)) for kind, blob in events]

    def stop(self) -> None:
        """Stop receiving events; pending ones can still be drained."""
        with self._server._lock:
            if not self._stopped:
                self._stopped = True
                self._server._watches.remove(self)

    @property
    def stopped(self) -> bool:
        return self._stopped

    def _offer(self, event: EventType, blob: bytes) -> None:
        self._events.append((event, blob))


class FakeApiServer:
    """A generic, in-memory API server keyed by (kind, namespace, name).

    ``clock`` stamps ``creationTimestamp``/``deletionTimestamp`` (a :class:`FakeClock` standing
    at 2026-01-01T00:00:00Z when omitted, for deterministic objects). ``defaulters`` adds
    defaulting for more kinds, such as a CRD's schema defaults, applied on every write.
    """

    def __init__(
        self, clock: Clock | None = None, *, defaulters: Mapping[str, defaults.Defaulter] | None = None
    ) -> None:
        self.clock: Clock = clock if clock is not None else FakeClock()
        self._defaulters = dict(defaulters or {})
        self._lock = threading.RLock()
        self._objects: dict[str, dict[str, dict[str, Obj]]] = {}  # kind → namespace → name → object
        self._frozen: dict[Key, bytes] = {}  # the same objects, frozen: thawing is the cheapest copy
        self._uids: dict[str, Key] = {}
        self._dependents: dict[str, dict[Key, None]] = {}  # owner uid → dependents (ordered set)
        self._watches: list[Watch] = []
        self._gc_queue: deque[Key | str] = deque()  # dependent keys to check, or owner uids to finish
        self._allocator = defaults.Allocator()
        self._resource_version = 0
        self._uid_counter = 0
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
            key = self._key(kind, namespace, name)
            self._stored(key)
            return _thaw_object(self._frozen[key])

    def list(self, kind: str, namespace: str | None = None, *, labels: Mapping[str, str] | None = None) -> Objs:
        """Copies of the objects of ``kind`` (in ``namespace``, with ``labels``), sorted by key.

        ``namespace`` None (or ``""``) lists all namespaces; ``labels`` must all match.
        """
        with self._lock:
            self.reads += 1
            frozen = self._frozen
            return [_thaw_object(frozen[_key_of_stored(obj)]) for obj in self._select(kind, namespace, labels)]

    def list_and_watch(self, kind: str, namespace: str | None = None) -> tuple[Objs, Watch]:
        """List and open a watch atomically: the watch sees exactly the changes after the list."""
        with self._lock:
            items = self.list(kind, namespace)
            return items, self.watch(kind, namespace)

    def watch(self, kind: str | None = None, namespace: str | None = None) -> Watch:
        """Start buffering events for ``kind`` (all kinds if None) from now on."""
        with self._lock:
            watch = Watch(self, kind, namespace or None)
            self._watches.append(watch)
            return watch

    def objects_total(self, kind: str | None = None) -> int:
        with self._lock:
            kinds = [self._objects.get(kind, {})] if kind is not None else list(self._objects.values())
            return sum(len(names) for namespaces in kinds for names in namespaces.values())

    @property
    def resource_version(self) -> str:
        """The latest resourceVersion handed out (the cluster-wide counter)."""
        return str(self._resource_version)

    # --- writes -------------------------------------------------------------------------------

    def create(self, obj: Obj) -> Obj:
        """Store a new object; the server sets uid, resourceVersion, generation and timestamps."""
        with self._lock:
            key = self._key_of(obj)
            try:
                created = self._create(key, obj)
            except ApiError as err:
                self._log("create", key, error=err)
                raise
            self._log("create", key, changed=True)
            self._run_gc()
            return _thaw_object(created)

    def update(self, obj: Obj) -> Obj:
        """Replace an object (PUT). A ``resourceVersion`` in ``obj`` is a precondition."""
        with self._lock:
            key = self._key_of(obj)
            return self._write(
                "update", key, lambda stored: self._replace_main(key, stored, defaults.ingest(key[0], obj)),
                precondition=obj,
            )

    def update_status(self, obj: Obj) -> Obj:
        """Replace only ``status`` (PUT /status); spec and metadata changes are ignored."""
        with self._lock:
            key = self._key_of(obj)
            return self._write("update_status", key, lambda stored: self._replace_status(key, stored, obj),
                               precondition=obj)

    def patch(self, kind: str, namespace: str, name: str, patch: Obj) -> Obj:
        """Apply a JSON merge patch; ``metadata.resourceVersion`` in it is a precondition."""
        with self._lock:
            key = self._key(kind, namespace, name)
            return self._write(
                "patch", key,
                lambda stored: self._replace_main(key, stored, _patched(kind, stored, patch)),
                precondition=patch,
            )

    def patch_status(self, kind: str, namespace: str, name: str, patch: Obj) -> Obj:
        """Apply a JSON merge patch to ``status`` only (PATCH /status)."""
        with self._lock:
            key = self._key(kind, namespace, name)
            return self._write(
                "patch_status", key,
                lambda stored: self._replace_status(key, stored, merge_patch(stored, patch, copy=False)),
                precondition=patch,
            )

    def delete(self, kind: str, namespace: str, name: str, *, propagation: Propagation = "Background") -> None:
        """Delete an object, or only mark it while finalizers remain. Dependents are collected.

        ``Background`` removes the object, then its dependents; ``Foreground`` marks the object
        (finalizer ``foregroundDeletion``) until its dependents are gone; ``Orphan`` strips the
        owner reference from the dependents and leaves them alone.
        """
        with self._lock:
            key = self._key(kind, namespace, name)
            try:
                if propagation not in ("Background", "Foreground", "Orphan"):
                    raise Invalid(f"DeleteOptions.propagationPolicy: Unsupported value: {propagation!r}",
                                  kind=kind, namespace=key[1], name=name)
                changed = self._delete(key, propagation)
            except ApiError as err:
                self._log("delete", key, error=err)
                raise
            self._log("delete", key, changed=changed)
            self._run_gc()

    def reset_counters(self) -> None:
        """Zero ``writes``, ``writes_by_verb``, ``requests``, ``reads`` and ``gc_writes``."""
        with self._lock:
            self.writes = self.reads = self.gc_writes = 0
            self.writes_by_verb.clear()
            self.requests.clear()

    # --- write paths --------------------------------------------------------------------------

    def _write(self, verb: str, key: Key, build: Callable[[Obj], Obj], *, precondition: Mapping[str, Any]) -> Obj:
        try:
            stored = self._stored(key)
            self._check_preconditions(key, stored, precondition)
            candidate: Obj = build(stored)
            result, changed = self._commit(key, stored, candidate)
        except ApiError as err:
            self._log(verb, key, error=err)
            raise
        self._log(verb, key, changed=changed)
        self._run_gc()
        return _thaw_object(result)

    def _create(self, key: Key, obj: Obj) -> bytes:
        kind, namespace, name = key
        if self._lookup(key) is not None:
            raise AlreadyExists(f'{kind} "{name}" already exists in namespace "{namespace}"',
                                kind=kind, namespace=namespace, name=name)
        defaults.validate_name(kind, name)
        traits = defaults.traits_of(kind)
        new = defaults.ingest(kind, obj)
        meta = self._metadata(new, key)
        defaults.validate_metadata(kind, meta)
        for field in _SERVER_FIELDS:
            meta.pop(field, None)
        if traits.status_subresource:
            new.pop("status", None)
            status = defaults.initial_status(kind)
            if status is not None:
                new["status"] = status
        defaults.prepare(kind, new, None, self._allocator, self._defaulters.get(kind))
        self._uid_counter += 1
        meta["uid"] = f"00000000-0000-4000-8000-{self._uid_counter:012x}"
        meta["creationTimestamp"] = self._now()
        if traits.tracks_generation:
            meta["generation"] = 1
        meta["resourceVersion"] = self._next_resource_version()
        blob = self._put(key, new, None, "ADDED")
        if meta.get("ownerReferences"):
            self._gc_queue.append(key)  # an owner may already be gone: the GC collects orphans
        return blob

    def _replace_main(self, key: Key, stored: Obj, candidate: Obj) -> Obj:
        """What PUT / PATCH on the main endpoint would store (before the no-op check)."""
        kind = key[0]
        traits = defaults.traits_of(kind)
        if "apiVersion" in stored:
            candidate["apiVersion"] = stored["apiVersion"]  # the storage version; no conversion here
        candidate["kind"] = kind
        meta = self._metadata(candidate, key)
        old_meta: Obj = stored["metadata"]
        for field in _SERVER_FIELDS:
            if field in old_meta:
                meta[field] = old_meta[field]
            else:
                meta.pop(field, None)
        if traits.status_subresource:
            if "status" in stored:
                candidate["status"] = stored["status"]
            else:
                candidate.pop("status", None)
        defaults.validate_metadata(kind, meta)
        defaults.prepare(kind, candidate, stored, self._allocator, self._defaulters.get(kind))
        if "deletionTimestamp" in old_meta:
            added = [f for f in meta.get("finalizers", ()) if f not in old_meta.get("finalizers", ())]
            if added:
                raise Invalid(
                    f'{kind} "{key[2]}" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added '
                    f"if the object is being deleted, found new finalizers {added!r}",
                    kind=kind, namespace=key[1], name=key[2],
                )
        if traits.tracks_generation and (
            candidate.get("spec") != stored.get("spec")
            or (traits.annotations_bump_generation and meta.get("annotations") != old_meta.get("annotations"))
        ):
            meta["generation"] = old_meta.get("generation", 0) + 1
        return candidate

    def _replace_status(self, key: Key, stored: Obj, source: Mapping[str, Any]) -> Obj:
        kind, namespace, name = key
        if not defaults.traits_of(kind).status_subresource:
            raise NotFound(f"{kind} has no status subresource", kind=kind, namespace=namespace, name=name)
        candidate = dict(stored)
        status = source.get("status")
        if status is None:
            candidate.pop("status", None)
        else:
            candidate["status"] = defaults.ingest_status(kind, status)
        return candidate

    def _commit(self, key: Key, stored: Obj, candidate: Obj) -> tuple[bytes, bool]:
        """Store ``candidate`` unless it equals ``stored``; remove it if its last finalizer went."""
        if candidate == stored:
            return self._frozen[key], False
        meta = candidate["metadata"]
        rv = self._next_resource_version()
        if "deletionTimestamp" in meta and not meta.get("finalizers"):
            # Like the real API server: the update turns into the delete; the object that is
            # reported (and returned) is the last stored state.
            return self._remove(key, stored, rv), True
        candidate["metadata"] = {**meta, "resourceVersion": rv}
        blob = self._put(key, candidate, stored, "MODIFIED")
        if candidate["metadata"].get("ownerReferences") != stored["metadata"].get("ownerReferences"):
            self._gc_queue.append(key)
        return blob, True

    def _delete(self, key: Key, propagation: Propagation) -> bool:
        stored = self._stored(key)
        uid = stored["metadata"]["uid"]
        if propagation == "Orphan":
            for dependent in list(self._dependents.get(uid, ())):
                self._drop_owner_references(dependent, {uid})
        finalizers = list(stored["metadata"].get("finalizers", ()))
        if propagation == "Foreground" and self._dependents.get(uid) and FOREGROUND_FINALIZER not in finalizers:
            finalizers.append(FOREGROUND_FINALIZER)
        if not finalizers:
            self._remove(key, stored, self._next_resource_version())
            return True
        changed = self._mark_deleting(key, stored, finalizers)
        if FOREGROUND_FINALIZER in finalizers:
            self._gc_queue.extend(self._dependents.get(uid, ()))
            self._gc_queue.append(uid)
        return changed

    def _mark_deleting(self, key: Key, stored: Obj, finalizers: Sequence[str]) -> bool:
        old_meta: Obj = stored["metadata"]
        if "deletionTimestamp" in old_meta and list(finalizers) == old_meta.get("finalizers"):
            return False  # already terminating: deleting again changes nothing
        meta = {**old_meta, "finalizers": list(finalizers), "deletionGracePeriodSeconds": 0}
        if "deletionTimestamp" not in old_meta:
            meta["deletionTimestamp"] = self._now()
            if old_meta.get("generation", 0) > 0:
                meta["generation"] = old_meta["generation"] + 1  # as the real API server does
        meta["resourceVersion"] = self._next_resource_version()
        marked = {**stored, "metadata": meta}
        self._put(key, marked, stored, "MODIFIED")
        return True

    def _remove(self, key: Key, stored: Obj, rv: str) -> bytes:
        kind, namespace, name = key
        del self._objects[kind][namespace][name]
        del self._frozen[key]
        meta: Obj = stored["metadata"]
        del self._uids[meta["uid"]]
        for owner_uid in _owner_uids(meta):
            self._unlink(owner_uid, key)
        last = freeze({**stored, "metadata": {**meta, "resourceVersion": rv}})
        self._emit("DELETED", kind, namespace, last)
        self._gc_queue.extend(self._dependents.get(meta["uid"], ()))
        return last

    # --- garbage collection -------------------------------------------------------------------

    def _run_gc(self) -> None:
        """Run the simulated garbage collector until it has nothing left to do."""
        while self._gc_queue:
            item = self._gc_queue.popleft()
            if isinstance(item, str):
                self._finish_foreground(item)
            else:
                self._collect(item)

    def _collect(self, key: Key) -> None:
        """Delete a dependent whose owners are all gone; drop references to the gone ones."""
        dependent = self._lookup(key)
        if dependent is None:
            return
        solid: list[str] = []
        gone: set[str] = set()
        waiting: set[str] = set()
        for uid in _owner_uids(dependent["metadata"]):
            owner_key = self._uids.get(uid)
            owner = self._lookup(owner_key) if owner_key is not None else None
            if owner is None:
                gone.add(uid)
            elif FOREGROUND_FINALIZER in owner["metadata"].get("finalizers", ()):
                waiting.add(uid)
            else:
                solid.append(uid)
        if solid:
            if gone or waiting:
                self._drop_owner_references(key, gone | waiting)
        elif (gone or waiting) and self._delete(key, "Foreground" if waiting else "Background"):
            self.gc_writes += 1

    def _finish_foreground(self, owner_uid: str) -> None:
        """Remove ``foregroundDeletion`` once no dependent blocks its owner any more."""
        owner_key = self._uids.get(owner_uid)
        owner = self._lookup(owner_key) if owner_key is not None else None
        if owner is None or owner_key is None:
            return
        finalizers = owner["metadata"].get("finalizers", [])
        if FOREGROUND_FINALIZER not in finalizers:
            return
        for dependent_key in self._dependents.get(owner_uid, ()):
            dependent = self._lookup(dependent_key)
            refs = dependent["metadata"].get("ownerReferences", ()) if dependent is not None else ()
            if any(ref.get("uid") == owner_uid and ref.get("blockOwnerDeletion") for ref in refs):
                return
        self.gc_writes += 1
        remaining = [f for f in finalizers if f != FOREGROUND_FINALIZER]
        self._commit(owner_key, owner, {**owner, "metadata": {**owner["metadata"], "finalizers": remaining}})

    def _drop_owner_references(self, key: Key, uids: set[str]) -> None:
        stored = self._stored(key)
        meta: Obj = stored["metadata"]
        refs = [ref for ref in meta.get("ownerReferences", ()) if ref.get("uid") not in uids]
        new_meta = {**meta, "ownerReferences": refs}
        if not refs:
            del new_meta["ownerReferences"]
        self.gc_writes += 1
        self._commit(key, stored, {**stored, "metadata": new_meta})

    # --- store and index --------------------------------------------------------------------

    def _put(self, key: Key, new: Obj, old: Obj | None, event: EventType) -> bytes:
        """Store ``new`` (and its frozen copy), maintain the indexes, tell the watches."""
        kind, namespace, name = key
        self._objects.setdefault(kind, {}).setdefault(namespace, {})[name] = new
        blob = self._frozen[key] = freeze(new)
        self._emit(event, kind, namespace, blob)
        new_meta: Obj = new["metadata"]
        self._uids[new_meta["uid"]] = key
        old_refs = old["metadata"].get("ownerReferences") if old is not None else None
        if new_meta.get("ownerReferences") != old_refs:
            self._reindex_owners(key, old, new_meta)
        return blob

    def _reindex_owners(self, key: Key, old: Obj | None, new_meta: Obj) -> None:
        before = _owner_uids(old["metadata"]) if old is not None else set()
        after = _owner_uids(new_meta)
        for uid in sorted(before - after):
            self._unlink(uid, key)
        for uid in sorted(after - before):
            self._dependents.setdefault(uid, {})[key] = None

    def _unlink(self, owner_uid: str, key: Key) -> None:
        dependents = self._dependents.get(owner_uid)
        if dependents is None:
            return
        dependents.pop(key, None)
        if not dependents:
            del self._dependents[owner_uid]
        self._gc_queue.append(owner_uid)  # a foreground-deleting owner may be free to go now

    def _emit(self, event: EventType, kind: str, namespace: str, blob: bytes) -> None:
        for watch in self._watches:
            if watch.matches(kind, namespace):
                watch._offer(event, blob)

    def _select(self, kind: str, namespace: str | None, labels: Mapping[str, str] | None) -> Objs:
        namespaces = self._objects.get(kind, {})
        if not defaults.traits_of(kind).namespaced:
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

    def _lookup(self, key: Key) -> Obj | None:
        kind, namespace, name = key
        return self._objects.get(kind, {}).get(namespace, {}).get(name)

    def _stored(self, key: Key) -> Obj:
        stored = self._lookup(key)
        if stored is None:
            kind, namespace, name = key
            where = f' in namespace "{namespace}"' if namespace else ""
            raise NotFound(f'{kind} "{name}" not found{where}', kind=kind, namespace=namespace, name=name)
        return stored

    # --- helpers ------------------------------------------------------------------------------

    def _key(self, kind: str, namespace: str | None, name: str) -> Key:
        if not defaults.traits_of(kind).namespaced:
            return (kind, "", name)
        return (kind, namespace or DEFAULT_NAMESPACE, name)

    def _key_of(self, obj: Mapping[str, Any]) -> Key:
        kind = obj.get("kind")
        meta = obj.get("metadata")
        name = meta.get("name") if isinstance(meta, Mapping) else None
        if not isinstance(kind, str) or not kind:
            raise Invalid("Object 'Kind' is missing", name=str(name or ""))
        if not isinstance(name, str) or not name:
            raise Invalid(f"{kind}: metadata.name: Required value: name is required", kind=kind)
        return self._key(kind, meta.get("namespace") if isinstance(meta, Mapping) else None, name)

    @staticmethod
    def _metadata(obj: Obj, key: Key) -> Obj:
        """``obj['metadata']``, normalised: identity from the key, empty fields dropped."""
        meta = obj.get("metadata")
        meta = dict(meta) if isinstance(meta, dict) else {}
        meta["name"] = key[2]
        if key[1]:
            meta["namespace"] = key[1]
        else:
            meta.pop("namespace", None)
        for field in _OMITEMPTY_METADATA:
            if field in meta and not meta[field]:
                del meta[field]
        obj["metadata"] = meta
        return meta

    def _check_preconditions(self, key: Key, stored: Obj, sent: Mapping[str, Any]) -> None:
        meta = sent.get("metadata")
        if not isinstance(meta, Mapping):
            return
        kind, namespace, name = key
        stored_meta = stored["metadata"]
        sent_rv = meta.get("resourceVersion")
        if sent_rv not in (None, "") and str(sent_rv) != stored_meta["resourceVersion"]:
            raise Conflict(
                f'Operation cannot be fulfilled on {kind} "{namespace}/{name}": the object has been modified '
                f"(resourceVersion {sent_rv} was sent, the stored one is {stored_meta['resourceVersion']}); "
                "please apply your changes to the latest version and try again",
                kind=kind, namespace=namespace, name=name,
            )
        sent_uid = meta.get("uid")
        if sent_uid not in (None, "") and sent_uid != stored_meta["uid"]:
            raise Conflict(
                f'Precondition failed for {kind} "{namespace}/{name}": UID in object meta: {sent_uid}, '
                f"UID of the stored object: {stored_meta['uid']} (it was deleted and created again)",
                kind=kind, namespace=namespace, name=name,
            )

    def _log(self, verb: str, key: Key, *, changed: bool = False, error: ApiError | None = None) -> None:
        self.requests.append(ApiRequest(verb, key[0], key[1], key[2], changed, error.reason if error else ""))
        if changed:
            self.writes += 1
            self.writes_by_verb[verb] += 1

    def _next_resource_version(self) -> str:
        self._resource_version += 1
        return str(self._resource_version)

    def _now(self) -> str:
        return format_timestamp(self.clock.wall())


def _patched(kind: str, stored: Obj, patch: Obj) -> Obj:
    """The merge-patched object, owned by the caller (shares nothing with either input)."""
    return defaults.ingest(kind, merge_patch(stored, patch, copy=False))


def _thaw_object(blob: bytes) -> Obj:
    obj: Obj = _thaw(blob)
    return obj


def _key_of_stored(obj: Obj) -> Key:
    meta = obj["metadata"]
    return (obj["kind"], meta.get("namespace", ""), meta["name"])


def _owner_uids(meta: Mapping[str, Any]) -> set[str]:
    return {ref["uid"] for ref in meta.get("ownerReferences", ()) if isinstance(ref, Mapping) and ref.get("uid")}
