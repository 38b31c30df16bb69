"""A thread-safe object cache fed by watch events (Kopf's ``on.event`` handlers).

The reconciler reads only from here (rule 1 reads the full current state, cheaply); Kopf's
watch streams keep it current. Objects are stored as received and must never be mutated.
"""

from __future__ import annotations

import threading
from typing import Any

Obj = dict[str, Any]


LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def slim(obj: Obj) -> Obj:
    """The object without what the operator never reads: ``managedFields`` (often half an
    object's size) and kubectl's last-applied annotation. Shallow copies only; the input is
    left alone (like controller-runtime's TransformStripManagedFields)."""
    meta = obj.get("metadata")
    if not meta or ("managedFields" not in meta and LAST_APPLIED not in (meta.get("annotations") or {})):
        return obj
    meta = {k: v for k, v in meta.items() if k != "managedFields"}
    annotations = meta.get("annotations")
    if annotations and LAST_APPLIED in annotations:
        meta["annotations"] = {k: v for k, v in annotations.items() if k != LAST_APPLIED}
    return {**obj, "metadata": meta}


def _rv(obj: Obj) -> int:
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


class ObjectCache:
    """Latest known state per (kind, namespace, name)."""

    def __init__(self) -> None:
        self._objects: dict[tuple[str, str, str], Obj] = {}
        self._lock = threading.Lock()

    def apply_event(self, kind: str, event_type: str | None, obj: Obj) -> tuple[Obj | None, Obj]:
        """Store the object from an ADDED/MODIFIED/initial-list event, drop it on DELETED.

        An event older than what is cached (lower resourceVersion, as after a watch restart
        replaying history) is ignored, so the cache never moves backwards. Returns what was
        cached before and the event's object as the cache keeps it (slimmed), so a caller can
        tell what changed without a second lookup.
        """
        obj = slim(obj)
        meta = obj.get("metadata") or {}
        key = (kind, meta.get("namespace") or "", meta.get("name") or "")
        with self._lock:
            current = self._objects.get(key)
            same_object = current is not None and (current.get("metadata") or {}).get("uid") == meta.get("uid")
            if event_type == "DELETED":
                if current is None or same_object:
                    self._objects.pop(key, None)
            elif not (same_object and current is not None and _rv(current) > _rv(obj)):
                self._objects[key] = obj
        return current, obj

    def replace_kind(self, kind: str, namespace: str, items: list[Obj], list_version: str) -> None:
        """Load a fresh LIST: add or refresh its items, and drop cached objects of that kind
        (in that namespace, "" for all) that the list no longer has and that are older than it."""
        for obj in items:
            self.apply_event(kind, None, obj)
        listed = {
            ((o.get("metadata") or {}).get("namespace") or "", (o.get("metadata") or {}).get("name") or "")
            for o in items
        }
        floor = _rv({"metadata": {"resourceVersion": list_version}})
        with self._lock:
            for key in [k for k in self._objects if k[0] == kind and (not namespace or k[1] == namespace)]:
                if (key[1], key[2]) not in listed and _rv(self._objects[key]) < floor:
                    del self._objects[key]

    def get(self, kind: str, namespace: str, name: str) -> Obj | None:
        with self._lock:
            return self._objects.get((kind, namespace, name))

    def keys(self, kind: str) -> list[tuple[str, str]]:
        with self._lock:
            return [(ns, name) for (k, ns, name) in self._objects if k == kind]

    def __len__(self) -> int:
        with self._lock:
            return len(self._objects)
