"""The fake API server's garbage collector: who owns whom, and what goes when an owner goes.

In Kubernetes the API server does not delete an owner's dependents; the garbage-collector
controller does, following ``ownerReferences``. It keeps a graph from owner uid to dependents
and, once an owner is gone, deletes its dependents (``Background``); or it deletes them first
and only then lets the owner go (``Foreground``, via the ``foregroundDeletion`` finalizer); or
it strips the reference and leaves them alone (``Orphan``). A dependent created for an owner
that is already gone is collected as well. Like the real collector, an owner is looked up by what
the reference names (kind, name, and the dependent's namespace for a namespaced owner) and must
have the reference's uid: a reference to another kind, name or namespace than the uid's object
names an absent owner.

The fake runs that controller synchronously at the end of every request, so a test sees the
cascade finished when the call returns. It is a separate controller with its own state (the
graph and a work queue), so it lives apart from :mod:`.server`: the server reports every
change to it and hands it the server's own write paths, so its writes bump resourceVersions and
emit watch events like any other. Its writes are counted apart (``FakeApiServer.gc_writes``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from inference_operator.core.errors import Invalid
from inference_operator.core.objects import Obj
from inference_operator.sim.apiserver.keys import Key, key_for

__all__ = [
    "FOREGROUND_FINALIZER",
    "ORPHAN_FINALIZER",
    "POLICY_FINALIZERS",
    "GarbageCollector",
    "Propagation",
    "deletion_finalizers",
]

Propagation = Literal["Background", "Foreground", "Orphan"]

FOREGROUND_FINALIZER: Final = "foregroundDeletion"
ORPHAN_FINALIZER: Final = "orphan"
POLICY_FINALIZERS: Final[Mapping[str, str]] = {"Foreground": FOREGROUND_FINALIZER, "Orphan": ORPHAN_FINALIZER}
"""The finalizer the API server adds on a delete with each propagation policy; the collector removes it."""


@dataclass(frozen=True)
class _Orphaning:
    """Queued: strip an owner's references from its dependents, then take its ``orphan`` finalizer."""

    owner_uid: str


def deletion_finalizers(key: Key, meta: Mapping[str, Any], *, propagation: str) -> list[str]:
    """The finalizers an object has once a delete with ``propagation`` marked it: its own, plus the
    policy's (added whether or not it has dependents, as by the real API server). :class:`Invalid`
    for a policy the API server does not know."""
    if propagation not in ("Background", "Foreground", "Orphan"):
        kind, namespace, name = key
        raise Invalid(
            f'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "{propagation}": '
            'supported values: "Foreground", "Background", "Orphan"',
            kind=kind,
            namespace=namespace,
            name=name,
        )
    finalizers = list(meta.get("finalizers", ()))
    policy = POLICY_FINALIZERS.get(propagation)
    if policy is not None and policy not in finalizers:
        finalizers.append(policy)
    return finalizers


class GarbageCollector:
    """The owner → dependents graph of one API server, and the collection work still to do.

    The server's write paths come in as callables: ``lookup`` (the stored object, or None),
    ``stored`` (the same, or :class:`~inference_operator.core.errors.NotFound`), ``delete`` (with a
    propagation policy; True if anything changed) and ``commit`` (store a changed object).
    :meth:`orphan` and :meth:`run` return how many writes they made, for ``gc_writes``.
    """

    def __init__(
        self,
        *,
        lookup: Callable[[Key], Obj | None],
        stored: Callable[[Key], Obj],
        delete: Callable[[Key, Propagation], bool],
        commit: Callable[[Key, Obj, Obj], object],
    ) -> None:
        self._lookup = lookup
        self._stored = stored
        self._delete = delete
        self._commit = commit
        self._keys: dict[str, Key] = {}  # uid → key, for every stored object
        self._dependents: dict[str, dict[Key, None]] = {}  # owner uid → dependents (ordered set)
        self._queue: deque[Key | str | _Orphaning] = deque()  # dependents to check, owners to finish

    # --- the graph, kept current by the server -------------------------------------------------

    def track(self, key: Key, old_meta: Obj | None, new_meta: Obj) -> None:
        """``key`` is now stored with ``new_meta``; ``old_meta`` is its previous version's, if any."""
        self._keys[new_meta["uid"]] = key
        old_refs = old_meta.get("ownerReferences") if old_meta is not None else None
        if new_meta.get("ownerReferences") != old_refs:
            self._reindex_owners(key, old_meta, new_meta)

    def forget(self, key: Key, meta: Obj) -> None:
        """``key`` (last ``meta``) is gone: its owners may finish deleting, its dependents are collected."""
        del self._keys[meta["uid"]]
        for owner_uid in _owner_uids(meta):
            self._unlink(owner_uid, key)
        self._queue.extend(self._dependents.get(meta["uid"], ()))

    def check(self, key: Key) -> None:
        """Collect ``key`` on the next :meth:`run` if its owners are gone (they may be already)."""
        self._queue.append(key)

    def has_dependents(self, owner_uid: str) -> bool:
        return bool(self._dependents.get(owner_uid))

    # --- propagation ---------------------------------------------------------------------------

    def marked(self, owner_uid: str, finalizers: list[str]) -> None:
        """An object was marked for deletion with ``finalizers``: do the policy finalizers' work."""
        if FOREGROUND_FINALIZER in finalizers:
            self.await_dependents(owner_uid)
        if ORPHAN_FINALIZER in finalizers:
            self._queue.append(_Orphaning(owner_uid))

    def await_dependents(self, owner_uid: str) -> None:
        """The owner is marked ``foregroundDeletion``: collect its dependents, then let it go."""
        self._queue.extend(self._dependents.get(owner_uid, ()))
        self._queue.append(owner_uid)

    def run(self) -> int:
        """Collect until there is nothing left to do."""
        writes = 0
        while self._queue:
            item = self._queue.popleft()
            if isinstance(item, str):
                writes += self._finish_foreground(item)
            elif isinstance(item, _Orphaning):
                writes += self._orphan(item.owner_uid)
            else:
                writes += self._collect(item)
        return writes

    def _collect(self, key: Key) -> int:
        """Delete a dependent whose owners are all gone; drop references to the gone ones."""
        dependent = self._lookup(key)
        if dependent is None:
            return 0
        solid: list[str] = []
        gone: set[str] = set()
        waiting: set[str] = set()
        for ref in _owner_refs(dependent["metadata"]):
            uid = ref["uid"]
            owner = self._lookup(key_for(str(ref.get("kind", "")), key[1], str(ref.get("name", ""))))
            if owner is None or owner["metadata"]["uid"] != uid:  # looked up by what the reference names
                gone.add(uid)
            elif FOREGROUND_FINALIZER in owner["metadata"].get("finalizers", ()):
                waiting.add(uid)
            else:
                solid.append(uid)
        if solid:
            if gone or waiting:
                self._drop_owner_references(key, gone | waiting)
                return 1
            return 0
        # Like the real collector: a dependent of a foreground-deleting owner is itself deleted in the
        # foreground only when it has dependents of its own.
        foreground = bool(waiting) and self.has_dependents(dependent["metadata"]["uid"])
        if (gone or waiting) and self._delete(key, "Foreground" if foreground else "Background"):
            return 1
        return 0

    def _orphan(self, owner_uid: str) -> int:
        """Strip the owner's references from its dependents, then remove its ``orphan`` finalizer."""
        dependents = list(self._dependents.get(owner_uid, ()))
        for dependent in dependents:
            self._drop_owner_references(dependent, {owner_uid})
        owner_key = self._keys.get(owner_uid)
        owner = self._lookup(owner_key) if owner_key is not None else None
        if owner is None or owner_key is None or ORPHAN_FINALIZER not in owner["metadata"].get("finalizers", ()):
            return len(dependents)
        remaining = [f for f in owner["metadata"]["finalizers"] if f != ORPHAN_FINALIZER]
        self._commit(owner_key, owner, {**owner, "metadata": {**owner["metadata"], "finalizers": remaining}})
        return len(dependents) + 1

    def _finish_foreground(self, owner_uid: str) -> int:
        """Remove ``foregroundDeletion`` once no dependent blocks its owner any more."""
        owner_key = self._keys.get(owner_uid)
        owner = self._lookup(owner_key) if owner_key is not None else None
        if owner is None or owner_key is None:
            return 0
        finalizers = owner["metadata"].get("finalizers", [])
        if FOREGROUND_FINALIZER not in finalizers:
            return 0
        for dependent_key in self._dependents.get(owner_uid, ()):
            dependent = self._lookup(dependent_key)
            refs = dependent["metadata"].get("ownerReferences", ()) if dependent is not None else ()
            if any(ref.get("uid") == owner_uid and ref.get("blockOwnerDeletion") for ref in refs):
                return 0
        remaining = [f for f in finalizers if f != FOREGROUND_FINALIZER]
        self._commit(owner_key, owner, {**owner, "metadata": {**owner["metadata"], "finalizers": remaining}})
        return 1

    def _drop_owner_references(self, key: Key, uids: set[str]) -> None:
        stored = self._stored(key)
        meta: Obj = stored["metadata"]
        refs = [ref for ref in meta.get("ownerReferences", ()) if ref.get("uid") not in uids]
        new_meta = {**meta, "ownerReferences": refs}
        if not refs:
            del new_meta["ownerReferences"]
        self._commit(key, stored, {**stored, "metadata": new_meta})

    # --- index maintenance ---------------------------------------------------------------------

    def _reindex_owners(self, key: Key, old_meta: Obj | None, new_meta: Obj) -> None:
        before = _owner_uids(old_meta) if old_meta is not None else set()
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
        self._queue.append(owner_uid)  # a foreground-deleting owner may be free to go now


def _owner_refs(meta: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [ref for ref in meta.get("ownerReferences", ()) if isinstance(ref, Mapping) and ref.get("uid")]


def _owner_uids(meta: Mapping[str, Any]) -> set[str]:
    return {ref["uid"] for ref in _owner_refs(meta)}
