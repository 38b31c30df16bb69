"""How a change lands in the fake API server's store: commit, mark for deletion, remove, put.

:mod:`.server` is what requests do (verbs, preconditions, field management, admission); this
is the layer under it that every write path ends in, shared by requests, the garbage collector
and the namespace controller: a new resourceVersion, the stored and frozen copies, the watch
event, the garbage collector's graph and a CRD's schema kept in step. Nothing here validates: by
the time a change gets here, the request has been admitted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from inference_operator.core.clock import Clock
from inference_operator.core.objects import Obj
from inference_operator.sim.apiserver import graceful, strategy
from inference_operator.sim.apiserver.garbage import GarbageCollector, Propagation, deletion_finalizers
from inference_operator.sim.apiserver.keys import Key
from inference_operator.sim.apiserver.kinds import traits_of
from inference_operator.sim.apiserver.sharing import SharedParts
from inference_operator.sim.apiserver.store import ObjectStore
from inference_operator.sim.apiserver.watch import EventType

if TYPE_CHECKING:
    from inference_operator.sim.apiserver.customresources import CustomResources
    from inference_operator.sim.apiserver.namespaces import NamespaceLifecycle


class StoredWrites(ObjectStore):
    """The store's write primitives; :class:`~.server.FakeApiServer` sets up their collaborators."""

    _gc: GarbageCollector
    _namespaces: NamespaceLifecycle
    custom_resources: CustomResources

    def __init__(self, clock: Clock) -> None:
        super().__init__(clock)
        self._shared_parts = SharedParts()

    def _commit(self, key: Key, stored: Obj, candidate: Obj) -> tuple[Obj, bool]:
        """Store ``candidate`` unless it equals ``stored``; remove it if its last finalizer went.
        Returns the version the writer is answered with (:meth:`_copy_of`) and whether it changed."""
        if candidate == stored:
            return stored, False
        meta = candidate["metadata"]
        rv = self._next_resource_version()
        if "deletionTimestamp" in meta and not meta.get("finalizers") and not meta.get("deletionGracePeriodSeconds"):
            # Like the real API server: the update turns into the delete (unless a pod's grace
            # period still runs: its kubelet writes status while it stops). The watch reports the
            # last stored state; the writer gets what it wrote (its resourceVersion unchanged).
            self._remove(key, stored, rv)
            return candidate, True
        candidate["metadata"] = {**meta, "resourceVersion": rv}
        self._put(key, candidate, stored, "MODIFIED")
        if candidate["metadata"].get("ownerReferences") != stored["metadata"].get("ownerReferences"):
            self._gc.check(key)
        return candidate, True

    def _delete(self, key: Key, propagation: Propagation, *, grace: int | None = None) -> tuple[bool, Obj]:
        """(changed, the answer): see :meth:`delete`. A running Pod is only marked (:mod:`.graceful`)."""
        stored = self._stored(key)
        uid = stored["metadata"]["uid"]
        finalizers = deletion_finalizers(key, stored["metadata"], propagation=propagation)
        if key[0] == "Pod" and (seconds := graceful.grace_period(stored, requested=grace)) > 0:
            return self._mark_terminating(key, stored, finalizers, seconds), self._copy_of(key, self._stored(key))
        if not finalizers:
            last = self._remove(key, stored, self._next_resource_version())
            if traits_of(key[0]).returns_deleted_object:
                return True, self._copy_of(key, last)
            return True, strategy.success_status(key, uid)
        changed = self._mark_deleting(key, stored, finalizers)
        answer = self._copy_of(key, self._stored(key))  # the marked object, whatever the collector does next
        self._gc.marked(uid, finalizers)
        return changed, answer

    def _mark_terminating(self, key: Key, stored: Obj, finalizers: Sequence[str], grace: int) -> bool:
        """Mark a running pod with the deadline its kubelet has to stop it (or a shorter one)."""
        old_meta: Obj = stored["metadata"]
        deadline = graceful.shortened_deadline(old_meta, now=self.clock.wall(), grace=grace)
        if deadline is None:
            return False
        meta = {**old_meta, "deletionTimestamp": deadline, "deletionGracePeriodSeconds": grace}
        if finalizers:
            meta["finalizers"] = list(finalizers)
        meta["resourceVersion"] = self._next_resource_version()
        self._put(key, {**stored, "metadata": meta}, stored, "MODIFIED")
        if finalizers:
            self._gc.marked(old_meta["uid"], list(finalizers))
        return True

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

    def _remove(self, key: Key, stored: Obj, rv: str) -> Obj:
        """Remove the object; returns its final state (``stored`` at the delete's resourceVersion)."""
        kind, namespace, name = key
        del self._objects[kind][namespace][name]
        self._frozen.pop(key, None)
        if kind == "CustomResourceDefinition":
            self.custom_resources.forget(stored)
        meta: Obj = stored["metadata"]
        self._gc.forget(key, meta)
        final = {**stored, "metadata": {**meta, "resourceVersion": rv}}
        self._watches.emit("DELETED", kind, namespace, new=final, old=stored)
        self._namespaces.content_removed(key)
        return final

    # --- store ----------------------------------------------------------------------------------

    def _put(self, key: Key, new: Obj, old: Obj | None, event: EventType) -> None:
        """Store ``new`` (its frozen copy is made when first read; its parts equal to stored ones
        shared with them, :mod:`.sharing`), tell the watches and the garbage collector."""
        kind, namespace, name = key
        self._shared_parts.share(kind, new, old)
        self._objects.setdefault(kind, {}).setdefault(namespace, {})[name] = new
        self._frozen.pop(key, None)
        if kind == "CustomResourceDefinition":
            served = self.custom_resources.register(new)  # stored objects are read with its defaults
            self._reread(served, lambda obj: self.custom_resources.defaulted(served, obj))
        self._watches.emit(event, kind, namespace, new=new, old=old)
        self._gc.track(key, old["metadata"] if old is not None else None, new["metadata"])
