"""The write path every request of the fake API server goes through: admission to the store.

:mod:`.server` is what each verb does with its request (create, update, patch, apply, delete);
this is what they share once the stored object and the candidate are known: the field manager's
``Update`` entry in ``managedFields`` (:mod:`.managedfields`), decoding, the strategy and the
custom resource's schema (:mod:`.strategy`, :mod:`.customresources`), a create's server-set
metadata, and the commit (:class:`~.storedwrites.StoredWrites`). The garbage collector's own
writes come through here too, recorded as kube-controller-manager's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from inference_operator.core.errors import AlreadyExists, ApiError
from inference_operator.core.objects import Obj
from inference_operator.sim.apiserver import defaults, managedfields, namespaces, strategy
from inference_operator.sim.apiserver.garbage import Propagation
from inference_operator.sim.apiserver.keys import Key
from inference_operator.sim.apiserver.kinds import traits_of
from inference_operator.sim.apiserver.managedfields import GC_FIELD_MANAGER
from inference_operator.sim.apiserver.storedwrites import StoredWrites
from inference_operator.ssa.managedentries import set_managed_fields

__all__ = ["WritePath"]


class WritePath(StoredWrites):
    """The shared write path; :class:`~.server.FakeApiServer` sets up its collaborators."""

    _defaulters: dict[str, defaults.Defaulter]
    _allocator: defaults.Allocator
    _uid_counter: int
    on_collected: Callable[[Key, str], None] | None

    # --- write paths --------------------------------------------------------------------------

    def _write(
        self,
        verb: str,
        key: Key,
        build: Callable[[Obj], tuple[Obj, Obj]],
        *,
        precondition: Mapping[str, Any],
        manager: str,
        subresource: str = "",
        answer: bool = True,
    ) -> Obj:
        """One Update-type write: ``build`` turns the stored object into (candidate, request)."""
        try:
            managedfields.validate_field_manager(manager, kind=key[0], apply=False)
            stored = self._stored(key)
            write = "patch" if verb.startswith("patch") else "update"
            strategy.check_preconditions(key, stored, precondition, write=write)
            candidate, request = build(stored)
            self._track(key, stored, candidate, request=request, manager=manager, subresource=subresource)
            result, changed = self._commit(key, stored, candidate)
        except ApiError as err:
            self._log(verb, key, error=err)
            raise
        self._log(verb, key, changed=changed)
        self.gc_writes += self._gc.run()
        return self._copy_of(key, result) if answer else {}

    def _track(
        self,
        key: Key,
        stored: Obj | None,
        candidate: Obj,
        *,
        request: Mapping[str, Any],
        manager: str,
        subresource: str,
    ) -> None:
        """Record ``manager``'s Update in ``candidate``'s managedFields (``stored`` None: a create)."""
        fields = managedfields.track_update(
            key[0], stored, candidate, request=request, manager=manager, subresource=subresource, now=self._now
        )
        set_managed_fields(candidate, fields)
        if stored is not None:
            managedfields.settle_timestamps(stored, candidate)

    def _collect(self, key: Key, propagation: Propagation) -> bool:
        changed = self._delete(key, propagation)[0]
        if changed and self.on_collected is not None:
            self.on_collected(key, str(self._resource_version))
        return changed

    def _commit_for_gc(self, key: Key, stored: Obj, candidate: Obj) -> tuple[Obj, bool]:
        """The garbage collector's writes, recorded as the kube-controller-manager's (it only removes)."""
        self._track(key, stored, candidate, request=candidate, manager=GC_FIELD_MANAGER, subresource="")
        return self._commit(key, stored, candidate)

    def _create(self, key: Key, obj: Obj, *, manager: str = "", applied: managedfields.Applied | None = None) -> Obj:
        kind, namespace, name = key
        if self._lookup(key) is not None:
            raise AlreadyExists(
                f'{kind} "{name}" already exists in namespace "{namespace}"', kind=kind, namespace=namespace, name=name
            )
        decoded = self.custom_resources.decode(kind, obj)
        with self.custom_resources.reporting_with(kind, decoded):
            new = strategy.prepare_create(key, decoded, allocator=self._allocator, defaulter=self._defaulters.get(kind))
        self.custom_resources.validate(kind, new, None)
        if applied is not None:
            set_managed_fields(new, applied.managed_fields)
        else:
            self._track(key, None, new, request=obj, manager=manager, subresource="")
        namespaces.complete_create(kind, new)
        meta: Obj = new["metadata"]
        self._uid_counter += 1
        meta["uid"] = f"00000000-0000-4000-8000-{self._uid_counter:012x}"
        meta["creationTimestamp"] = self._now()
        if traits_of(kind).tracks_generation:
            meta["generation"] = 1
        meta["resourceVersion"] = self._next_resource_version()
        self._put(key, new, None, "ADDED")
        if meta.get("ownerReferences"):
            self._gc.check(key)  # an owner may already be gone: the GC collects orphans
        return new

    def _prepare_update(self, key: Key, stored: Obj, candidate: Obj) -> Obj:
        defaulter = self._defaulters.get(key[0])
        decoded = self.custom_resources.decode(key[0], candidate, copy=False)  # ingested: the server's own
        new = strategy.prepare_update(key, stored, decoded, allocator=self._allocator, defaulter=defaulter)
        self.custom_resources.validate(key[0], new, stored)
        return new

    def _prepare_status_update(self, key: Key, stored: Obj, source: Obj) -> Obj:
        decoded = self.custom_resources.decode(key[0], source, status_only=True)
        new = strategy.prepare_status_update(key, stored, decoded, ingested=decoded is not source)
        self.custom_resources.validate(key[0], new, stored, status=True)
        return new
