"""A thread-safe object cache fed by watch events (Kopf's ``on.event`` handlers).

The reconciler reads only from here (rule 1 reads the full current state, cheaply); Kopf's
watch streams keep it current. Objects are stored as their kind's transform keeps them, each
serialized (``marshal``) and compressed (``zlib``, its fastest level): a parsed object is Python
dicts and strings, four to six times the size of its serialized form, which compresses to less
than half (``bench/cache_memory.py``), and the cache holds every object the operator watches or
reads. A read inflates and decodes the object (a few microseconds to some tens): each reader
gets a copy of its own.

Three sources write here, unordered with respect to each other: watch events, LISTs (the
startup prime, the consistency check) and the answers of our own writes (write-through).
Two rules keep them from undoing each other:

- Never backwards: an object older (lower ``resourceVersion``) than the cached one of that
  name is ignored.
- Deletions are final: a deleted object's uid is remembered (a tombstone, with the
  resourceVersion of the deletion), and no version of it that is not newer comes back, be it
  from a LIST that was answered before the DELETED event arrived or from a write's answer that
  lost the race with the deletion's watch event. Tombstones are bounded in number and age:
  the race they guard against lasts as long as one request, not ten minutes.
"""

from __future__ import annotations

import json
import marshal
import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from inference_operator.api.constants import FIELD_MANAGER
from inference_operator.core.clock import Clock, RealClock
from inference_operator.core.labelindex import LabelIndex, filing
from inference_operator.core.objects import Obj

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
TOMBSTONE_LIMIT = 10_000
TOMBSTONE_SECONDS = 600.0


def _own_apply_entries(fields: list[Any]) -> list[Any]:
    return [
        e for e in fields if isinstance(e, dict) and e.get("manager") == FIELD_MANAGER and e.get("operation") == "Apply"
    ]


def slim(obj: Obj) -> Obj:
    """The object without what the operator never reads: other managers' ``managedFields``
    entries (often half an object's size) and kubectl's last-applied annotation. Our own
    server-side apply entry (manager ``FIELD_MANAGER``, operation ``Apply``) is kept: it says
    which fields the operator owns. Shallow copies only; the input is left alone and the
    kept parts are shared (like controller-runtime's TransformStripManagedFields)."""
    meta = obj.get("metadata")
    if not meta:
        return obj
    fields = meta.get("managedFields")
    kept = _own_apply_entries(fields) if isinstance(fields, list) else []
    fields_change = "managedFields" in meta and not (isinstance(fields, list) and len(kept) == len(fields))
    annotations = meta.get("annotations")
    if not fields_change and not (annotations and LAST_APPLIED in annotations):
        return obj
    meta = {k: v for k, v in meta.items() if k != "managedFields"}
    if kept:
        meta["managedFields"] = kept if fields_change else fields
    if annotations and LAST_APPLIED in annotations:
        meta["annotations"] = {k: v for k, v in annotations.items() if k != LAST_APPLIED}
    return {**obj, "metadata": meta}


def resource_version(obj: Obj) -> int:
    """The object's resourceVersion as a number (0 when absent or not a number)."""
    return _version((obj.get("metadata") or {}).get("resourceVersion"))


def _version(text: object) -> int:
    try:
        return int(str(text or 0))
    except ValueError:
        return 0


def _uid(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


class _Stored:
    """One cached object: its identity and version, where its kind's index files it, and the
    object itself, serialized."""

    __slots__ = ("blob", "filed", "uid", "version")

    def __init__(self, obj: Obj, label: str | None, uid: str, version: int) -> None:
        self.uid = uid
        self.version = version
        self.filed = filing(obj, label) if label is not None else None
        self.blob = _encode(obj)

    def object(self) -> Obj:
        """A copy of the object, the reader's own (objects come parsed from JSON, so no part of
        one is shared by two places in it, and none is in the copy)."""
        return marshal.loads(zlib.decompress(self.blob))  # type: ignore[no-any-return]


def _encode(obj: Obj) -> bytes:
    try:
        serialized = marshal.dumps(obj)
    except ValueError:  # not plain JSON types (a Mapping that is no dict, say): through JSON
        serialized = marshal.dumps(json.loads(json.dumps(obj, default=dict)))
    return zlib.compress(serialized, 1)


def _is_version(stored: _Stored | None, uid: str, version: int) -> bool:
    """``stored`` is that very version of the object (a version it names: 0, none or no number,
    is no version, and is stored again)."""
    return stored is not None and version > 0 and stored.uid == uid and stored.version == version


def _decoded(stored: _Stored | None) -> Obj | None:
    return stored.object() if stored is not None else None


class ObjectCache:
    """Latest known state per (kind, namespace, name)."""

    def __init__(
        self,
        clock: Clock | None = None,
        *,
        tombstone_limit: int = TOMBSTONE_LIMIT,
        tombstone_seconds: float = TOMBSTONE_SECONDS,
        transforms: Mapping[str, Callable[[Obj], Obj]] | None = None,
        indexes: Mapping[str, str] | None = None,
    ) -> None:
        """``transforms``: per kind, what is kept of an object (default: ``slim``); ``indexes``:
        per kind, a label its objects are also found by (:meth:`labelled`)."""
        self._objects: dict[str, dict[tuple[str, str], _Stored]] = {}
        self._indexes: dict[str, LabelIndex[_Stored]] = {
            kind: LabelIndex(label) for kind, label in (indexes or {}).items()
        }
        self._transforms = dict(transforms or {})
        self._lock = threading.Lock()
        self._clock = clock or RealClock()
        self._tombstone_limit = tombstone_limit
        self._tombstone_seconds = tombstone_seconds
        self._tombstones: OrderedDict[str, tuple[int, float]] = OrderedDict()  # uid -> (version, when)

    def apply_event(
        self, kind: str, event_type: str | None, obj: Obj, *, answer: bool = True
    ) -> tuple[Obj | None, Obj | None]:
        """Store the object from an ADDED/MODIFIED/initial-list event, drop it on DELETED.

        An event older than what is cached (lower resourceVersion, as after a watch restart
        replaying history), or about an object already deleted, is ignored, so the cache never
        moves backwards. Returns the object as the cache held it for that name before the
        event, and after it (``obj`` slimmed, sharing parts with ``obj``): the same object twice
        when nothing changed, ``after`` None once deleted; for a re-list of the version held,
        two equal objects (an update, as client-go's Replace calls it). ``answer`` False: two
        Nones, and nothing is decoded.
        """
        if event_type == "DELETED":  # only its name, uid and version are read: nothing to keep
            return self._store(kind, event_type, obj, answer=answer)
        return self._store(kind, event_type, self.slimmed(kind, obj), answer=answer)

    def _store(
        self, kind: str, event_type: str | None, obj: Obj, *, answer: bool = True
    ) -> tuple[Obj | None, Obj | None]:
        meta = obj.get("metadata") or {}
        key = (meta.get("namespace") or "", meta.get("name") or "")
        uid, version = _uid(obj), resource_version(obj)
        deleted = event_type == "DELETED"
        with self._lock:
            objects = self._objects.setdefault(kind, {})
            held = objects.get(key)
        # Encoded outside the lock; nothing to encode for a deletion or for the version held.
        fresh = None if deleted or _is_version(held, uid, version) else self._stored(kind, obj, uid, version)
        with self._lock:
            current = objects.get(key)  # as it is now: another thread may have stored meanwhile
            if not deleted and _is_version(current, uid, version):
                # Re-listed as it is held: still an update, as client-go's Replace calls it.
                return (dict(obj), obj) if answer else (None, None)
            changed = self._change_locked(kind, key, current, deleted, uid, version, fresh, obj)
        if not answer:
            return None, None
        before = _decoded(current)  # outside the lock: a stored entry never changes
        if not changed:
            return before, before
        return before, None if deleted else obj

    def _change_locked(
        self,
        kind: str,
        key: tuple[str, str],
        current: _Stored | None,
        deleted: bool,
        uid: str,
        version: int,
        fresh: _Stored | None,
        obj: Obj,
    ) -> bool:
        """Drop or store ``obj`` in place of ``current``; False when the event changes nothing."""
        objects = self._objects[kind]
        if deleted:
            if uid:
                self._bury_locked(uid, version)
            if current is not None and current.uid != uid:
                return False  # a same-named successor stays
            objects.pop(key, None)
            self._reindex_locked(kind, current, None)
            return True
        if self._buried_locked(uid, version) or (current is not None and current.version > version):
            # Deleted already, or older than what we hold: the same object's past, or a
            # same-named predecessor (names are unique at any one time, so a newer version of
            # the name wins).
            return False
        stored = fresh or self._stored(kind, obj, uid, version)
        objects[key] = stored
        self._reindex_locked(kind, current, stored)
        return True

    def _stored(self, kind: str, obj: Obj, uid: str, version: int) -> _Stored:
        index = self._indexes.get(kind)
        return _Stored(obj, index.label if index is not None else None, uid, version)

    def _reindex_locked(self, kind: str, old: _Stored | None, new: _Stored | None) -> None:
        index = self._indexes.get(kind)
        if index is not None:
            index.moved(old.filed if old is not None else None, new.filed if new is not None else None, new)

    def slimmed(self, kind: str, obj: Obj) -> Obj:
        """``obj`` as this cache keeps it: what the kind's transform keeps (parts of ``obj``
        shared, never changed)."""
        return self._transforms.get(kind, slim)(obj)

    def replace_kind(self, kind: str, namespace: str, items: list[Obj], list_version: str) -> list[Obj]:
        """Load a fresh LIST: add or refresh its items, and drop cached objects of that kind (in
        that namespace, "" for all) that the list no longer has and that are older than it.
        Returns the dropped objects."""
        return self.drop_missing(kind, namespace, self.store_listed(kind, items), list_version)

    def store_listed(self, kind: str, items: Iterable[Obj]) -> list[str]:
        """Add or refresh the items of (a page of) a LIST, each as its kind's transform keeps
        it; returns their uids, for :meth:`drop_missing` once the LIST is complete."""
        uids = []
        for obj in items:
            self.apply_event(kind, None, obj, answer=False)
            uids.append(_uid(obj))
        return uids

    def drop_missing(self, kind: str, namespace: str, listed_uids: Iterable[str], list_version: str) -> list[Obj]:
        """Drop cached objects of ``kind`` (in ``namespace``, "" for all) that a LIST answered at
        ``list_version`` does not have, unless they are newer than the list. Nothing is added.

        An object older than the list and missing from it was deleted by then, whether or not
        its DELETED event ever reached us (a watch that was down when it happened and re-listed
        afterwards never says). Returns the dropped objects."""
        present = set(listed_uids)
        floor = _version(list_version)
        dropped: list[_Stored] = []
        with self._lock:
            objects = self._objects.get(kind, {})
            for key, cached in list(objects.items()):
                if namespace and key[0] != namespace:
                    continue
                if cached.uid not in present and cached.version < floor:
                    del objects[key]
                    self._reindex_locked(kind, cached, None)
                    if cached.uid:
                        self._bury_locked(cached.uid, floor)
                    dropped.append(cached)
        return [stored.object() for stored in dropped]

    def get(self, kind: str, namespace: str, name: str) -> Obj | None:
        """The cached object (a copy: the caller's own), or None."""
        with self._lock:
            stored = self._objects.get(kind, {}).get((namespace, name))
        return _decoded(stored)

    def version(self, kind: str, namespace: str, name: str) -> tuple[str, int] | None:
        """The cached object's uid and resourceVersion (nothing decoded), or None."""
        with self._lock:
            stored = self._objects.get(kind, {}).get((namespace, name))
        return (stored.uid, stored.version) if stored is not None else None

    def keys(self, kind: str) -> list[tuple[str, str]]:
        with self._lock:
            return list(self._objects.get(kind, {}))

    def objects(self, kind: str) -> list[Obj]:
        """Every cached object of ``kind`` (copies: the caller's own)."""
        with self._lock:
            stored = list(self._objects.get(kind, {}).values())
        return [entry.object() for entry in stored]

    def labelled(self, kind: str, namespace: str, value: str) -> list[Obj] | None:
        """The cached objects of ``kind`` in ``namespace`` whose indexed label is ``value``, by
        name (copies); None when ``kind`` has no index."""
        index = self._indexes.get(kind)
        if index is None:
            return None
        with self._lock:
            stored = index.get(namespace, value)
        return [entry.object() for entry in stored]

    def count(self, kind: str) -> int:
        with self._lock:
            return len(self._objects.get(kind, {}))

    def deleted(self, uid: str, version: int) -> bool:
        """True when the watch (or a check) saw ``uid`` deleted at ``version`` or later."""
        with self._lock:
            return self._buried_locked(uid, version)

    def tombstones(self) -> int:
        with self._lock:
            self._expire_locked(self._clock.now())
            return len(self._tombstones)

    def __len__(self) -> int:
        with self._lock:
            return sum(len(objects) for objects in self._objects.values())

    # -- tombstones -------------------------------------------------------------------------------

    def _bury_locked(self, uid: str, version: int) -> None:
        now = self._clock.now()
        previous = self._tombstones.pop(uid, None)
        self._tombstones[uid] = (max(version, previous[0] if previous else 0), now)
        self._expire_locked(now)
        while len(self._tombstones) > self._tombstone_limit:
            self._tombstones.popitem(last=False)

    def _buried_locked(self, uid: str, version: int) -> bool:
        """True when ``uid`` was deleted and ``version`` is not newer than the deletion."""
        if not uid:
            return False
        tombstone = self._tombstones.get(uid)
        if tombstone is None:
            return False
        if self._clock.now() - tombstone[1] > self._tombstone_seconds:
            self._expire_locked(self._clock.now())
            return False
        return version <= tombstone[0]

    def _expire_locked(self, now: float) -> None:
        while self._tombstones:
            uid, (_, when) = next(iter(self._tombstones.items()))
            if now - when <= self._tombstone_seconds:
                return
            del self._tombstones[uid]
