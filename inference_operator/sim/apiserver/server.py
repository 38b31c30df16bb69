"""An in-process stand-in for kube-apiserver, faithful in the semantics operators rely on.

The simulator, the unit tests and the ``demo`` command need an API server that runs offline,
deterministically and in microseconds, yet punishes the same mistakes a real cluster does:

1. optimistic concurrency: a write with a stale ``resourceVersion`` raises :class:`Conflict`
   (and a custom resource's PUT without one is :class:`Invalid`);
2. ``metadata.generation`` counts spec changes only (and, for Deployments, annotation changes);
3. the status subresource: ``update_status`` writes ``status`` (and, for Go-typed kinds,
   metadata) but never spec, and the main endpoint ignores status; neither a status write
   nor a no-op write bumps ``generation``;
4. finalizers and garbage collection: deleting an object with finalizers only marks it
   (``deletionTimestamp``, and ``generation`` + 1); removing the last finalizer removes it, and
   removal cascades through ``ownerReferences`` (background, foreground or orphan).

Plus server-side apply (:meth:`FakeApiServer.apply`, what a PATCH with ``application/apply-patch+yaml``
does): the applied configuration is merged into the live object (list-map items by key, atomic
lists and maps replaced, granular maps merged); what the field manager applied before and no
longer applies is removed unless another manager still owns it; a field another manager owns that
the apply would change raises :class:`Conflict` with the real message, unless ``force`` takes it
over; an apply that changes nothing is a no-op; an apply to a missing object creates it. Every
write keeps ``metadata.managedFields`` as the real server does (:mod:`.managedfields`): an
``Apply`` entry per applier, an ``Update`` entry per (field manager, apiVersion, subresource) for
every other write, owning what the request set or changed (on create, scheme defaults too, but
not what the registry allocates). Plus defaulting (:mod:`.defaults`), server-set
``uid``/``creationTimestamp``, watch events, and copies everywhere: nothing a caller holds is ever
part of the store. Wherever this fake and a real API server could disagree, the real one is right;
the e2e suite is the referee.

This module is what requests do (the path they share on the way to the store is
:mod:`.writepath`); the package's docstring maps the rest.

Writes are accounted for (``writes``, ``writes_by_verb``, ``requests``) so tests can assert that
a converged object costs zero writes. A no-op write (nothing changed) is still a request, so it
is logged in ``requests`` with ``changed=False``, but it is not a write: like the real API server
it keeps the ``resourceVersion`` and emits no watch event. Garbage-collector work is counted in
``gc_writes``, never in ``writes``: it is not the caller's doing.

Stored objects are never mutated in place: every write stores a new dict (sharing untouched
subtrees with the previous version); its frozen copy (:func:`~inference_operator.core.jsoncopy.freeze`)
is made when that version is first read or answered with. Every read and write response thaws
that copy, which is the cheapest way to hand out an independent object; watch buffers hold frozen
bytes and thaw them when drained, or, for informers, their transform's result, which shares the
stored version's subtrees (read-only, as informer caches are). A caller that drops a
write's answer says so (``answer=False``) and no copy is made for it.
All public methods take one re-entrant lock; the server is safe to share between threads.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping

from inference_operator.core.clock import Clock
from inference_operator.core.errors import AlreadyExists, ApiError, Conflict, Invalid, NotFound, ServerError
from inference_operator.core.jsoncopy import freeze, merge_patch
from inference_operator.core.objects import Obj
from inference_operator.sim.apiserver import binding, defaults, keys, managedfields, strategy
from inference_operator.sim.apiserver.customresources import CustomResources
from inference_operator.sim.apiserver.garbage import GarbageCollector, Propagation
from inference_operator.sim.apiserver.keys import Key
from inference_operator.sim.apiserver.managedfields import DEFAULT_FIELD_MANAGER, BadRequest
from inference_operator.sim.apiserver.namespaces import NamespaceLifecycle
from inference_operator.sim.apiserver.store import ApiRequest, ControllerAccess, thaw_object
from inference_operator.sim.apiserver.target import (
    Target,
    body_for_create,
    check_apply_body,
    check_patch,
    check_update_body,
    patch_body,
    patch_preconditions,
)
from inference_operator.sim.apiserver.watch import Watch, WatchEvent
from inference_operator.sim.apiserver.writepath import WritePath
from inference_operator.sim.clock import FakeClock
from inference_operator.ssa.managedentries import set_managed_fields

__all__ = [
    "DEFAULT_FIELD_MANAGER",
    "AlreadyExists",
    "ApiError",
    "ApiRequest",
    "BadRequest",
    "Conflict",
    "FakeApiServer",
    "Invalid",
    "NotFound",
    "Propagation",
    "Watch",
    "WatchEvent",
]


class FakeApiServer(WritePath):
    """A generic, in-memory API server keyed by (kind, namespace, name).

    ``clock`` stamps ``creationTimestamp``/``deletionTimestamp`` (a :class:`FakeClock` standing
    at 2026-01-01T00:00:00Z when omitted, for deterministic objects). ``defaulters`` adds
    defaulting for more kinds, such as a CRD's schema defaults, applied on every write.
    """

    def __init__(
        self, clock: Clock | None = None, *, defaulters: Mapping[str, defaults.Defaulter] | None = None
    ) -> None:
        super().__init__(clock if clock is not None else FakeClock())
        self._defaulters = dict(defaulters or {})
        self._gc = GarbageCollector(
            lookup=self._lookup,
            stored=self._stored,
            delete=self._collect,
            commit=self._commit_for_gc,
        )
        self.on_collected: Callable[[Key, str], None] | None = None
        """Told each object the garbage collector deleted, with the delete's resourceVersion (the trace)."""
        self._allocator = defaults.Allocator()
        self._uid_counter = 0
        self.custom_resources = CustomResources()
        """The schemas of the CustomResourceDefinitions stored here, applied to writes of their kinds."""
        self._names = random.Random(0)  # generateName: random-looking, yet the same in every run
        self._namespaces = NamespaceLifecycle(
            store=ControllerAccess(self),
            put=self._put,
            remove=self._remove,
            delete=lambda key: self._delete(key, "Background")[0],
        )
        for namespace in self._namespaces.built_in():
            self._create(keys.key_of(namespace), namespace, manager="kube-apiserver")

    # --- writes -------------------------------------------------------------------------------

    def create(
        self,
        obj: Obj,
        *,
        namespace: str | None = None,
        field_manager: str = DEFAULT_FIELD_MANAGER,
        target: Target | None = None,
        answer: bool = True,
    ) -> Obj:
        """Store a new object; the server sets uid, resourceVersion, generation and timestamps.

        ``field_manager`` (every write takes one) names the ``Update`` entry in ``managedFields``;
        like the real server, a request that names none is recorded as ``unknown``. ``namespace``
        is the request path's, if any (the object's own must then be empty or the same);
        ``target`` is what the request's URL names, when there is one (:mod:`.target`: the body
        must agree). Every write answers with a copy of the written object; ``answer=False``
        (a caller that drops it: the simulated controllers) saves that copy, and gets ``{}``.
        """
        with self._lock:
            if target is not None:
                obj = body_for_create(target, obj)
            obj = self._namespaces.admit_create(obj, path_namespace=namespace)
            named = strategy.with_generated_name(
                obj, taken=lambda k: self._lookup(k) is not None, draw=self._names.choice
            )
            key = keys.key_of(named)
            try:
                managedfields.validate_field_manager(field_manager, kind=key[0], apply=False)
                strategy.check_create(key, obj)
                created = self._create(key, obj, manager=field_manager)
            except ApiError as err:
                self._log("create", key, error=err)
                raise
            self._log("create", key, changed=True)
            self.gc_writes += self._gc.run()
            return self._copy_of(key, created) if answer else {}

    def update(self, obj: Obj, *, field_manager: str = DEFAULT_FIELD_MANAGER, target: Target | None = None) -> Obj:
        """Replace an object (PUT). A ``resourceVersion`` in ``obj`` is a precondition (custom resources need one)."""
        with self._lock:
            if target is not None:
                obj = check_update_body(target, obj)
            key = keys.key_of(obj)
            return self._write(
                "update",
                key,
                lambda stored: (self._prepare_update(key, stored, defaults.ingest(key[0], obj)), obj),
                precondition=obj,
                manager=field_manager,
            )

    def update_status(
        self, obj: Obj, *, field_manager: str = DEFAULT_FIELD_MANAGER, target: Target | None = None, answer: bool = True
    ) -> Obj:
        """Replace ``status`` (PUT /status); spec is never changed (see :func:`.strategy.prepare_status_update`)."""
        with self._lock:
            if target is not None:
                obj = check_update_body(target, obj)
            key = keys.key_of(obj)
            return self._write(
                "update_status",
                key,
                lambda stored: (self._prepare_status_update(key, stored, obj), obj),
                precondition=obj,
                manager=field_manager,
                subresource="status",
                answer=answer,
            )

    def patch(
        self, kind: str, namespace: str, name: str, patch: Obj, *, field_manager: str = DEFAULT_FIELD_MANAGER
    ) -> Obj:
        """Apply a JSON merge patch; ``metadata.resourceVersion`` in it is a precondition."""
        with self._lock:
            key = keys.key_for(kind, namespace, name)
            url = Target("", *key)
            patch = patch_body(url, patch)

            def build(stored: Obj) -> tuple[Obj, Obj]:
                patched = merge_patch(stored, patch, copy=False)
                check_patch(url, stored=stored, patched=patched)
                return self._prepare_update(key, stored, defaults.ingest(kind, patched)), patched

            return self._write("patch", key, build, precondition=patch_preconditions(patch), manager=field_manager)

    def patch_status(
        self,
        kind: str,
        namespace: str,
        name: str,
        patch: Obj,
        *,
        field_manager: str = DEFAULT_FIELD_MANAGER,
        answer: bool = True,
    ) -> Obj:
        """Apply a JSON merge patch to ``status`` only (PATCH /status)."""
        with self._lock:
            key = keys.key_for(kind, namespace, name)
            url = Target("", *key)
            patch = patch_body(url, patch)

            def build(stored: Obj) -> tuple[Obj, Obj]:
                patched = merge_patch(stored, patch, copy=False)
                check_patch(url, stored=stored, patched=patched)
                return self._prepare_status_update(key, stored, patched), patched

            checked = patch_preconditions(patch)
            return self._write(
                "patch_status",
                key,
                build,
                precondition=checked,
                manager=field_manager,
                subresource="status",
                answer=answer,
            )

    def bind(self, namespace: str, name: str, node: str, *, uid: str = "") -> None:
        """Bind a pod to ``node`` (``POST pods/<name>/binding``, what kube-scheduler sends, with the
        pod's ``uid`` as a precondition): ``spec.nodeName`` and ``PodScheduled=True`` in one write
        that bypasses the field manager (:mod:`.binding`). :class:`Conflict` when the pod is bound
        already, being deleted or gated; :class:`ServerError` without a node, as the real server
        answers (500, "target.name: Required value")."""
        with self._lock:
            key = keys.key_for("Pod", namespace, name)
            try:
                if not node:  # ValidatePodBinding, before the pod is read; its errors come back as a 500
                    raise ServerError("target.name: Required value", kind="Pod", namespace=namespace, name=name)
                stored = self._stored(key)
                changed = self._commit(key, stored, binding.bound(stored, node, uid=uid, now=self._now()))[1]
            except ApiError as err:
                self._log("bind", key, error=err)
                raise
            self._log("bind", key, changed=changed)

    def apply(self, obj: Obj, *, field_manager: str, force: bool = False, target: Target | None = None) -> Obj:
        """Server-side apply (PATCH ``application/apply-patch+yaml``): create or merge ``obj``.

        ``obj`` is the applied configuration: everything ``field_manager`` wants set, nothing
        else. A missing object is created (a ``resourceVersion`` is then ignored, as by the real
        server); otherwise a ``resourceVersion`` in ``obj`` is a precondition. :class:`Conflict`
        when it would change a field another manager owns, unless ``force``.
        """
        with self._lock:
            if target is not None:
                obj = check_apply_body(target, obj)
            key = keys.key_of(obj)
            try:
                managedfields.validate_field_manager(field_manager, kind=key[0], apply=True)
                self.custom_resources.check_applied(key[0], obj)
                stored = self._lookup(key)
                if stored is None:  # created, as the real server does (a resourceVersion is ignored)
                    self._namespaces.admit_create(obj, path_namespace=None)
                    applied = managedfields.apply(key[0], None, obj, manager=field_manager, force=force, now=self._now)
                    result, changed = self._create(key, applied.merged, applied=applied), True
                else:
                    strategy.check_preconditions(key, stored, obj, write="apply")
                    applied = managedfields.apply(
                        key[0], stored, obj, manager=field_manager, force=force, now=self._now
                    )
                    candidate = self._prepare_update(key, stored, defaults.ingest(key[0], applied.merged))
                    set_managed_fields(candidate, applied.managed_fields)
                    managedfields.settle_timestamps(stored, candidate)
                    result, changed = self._commit(key, stored, candidate)
            except ApiError as err:
                self._log("apply", key, error=err)
                raise
            self._log("apply", key, changed=changed)
            self.gc_writes += self._gc.run()
            return self._copy_of(key, result)

    def delete(
        self,
        kind: str,
        namespace: str,
        name: str,
        *,
        propagation: Propagation = "Background",
        grace_period_seconds: int | None = None,
    ) -> Obj:
        """Delete an object, or only mark it while finalizers remain. Dependents are collected.

        ``Background`` removes the object, then its dependents; ``Foreground`` marks the object
        (finalizer ``foregroundDeletion``) until its dependents are gone; ``Orphan`` marks it
        (finalizer ``orphan``) until the owner reference is stripped from the dependents. A
        Namespace goes with its content (:mod:`.namespaces`). The answer is the real server's:
        the object while it is only marked (also when it already was; a Namespace marked
        ``Terminating``), the deleted object for kinds that return it (Services), else a success
        ``Status``. A Pod running on a node is marked for its grace period (``grace_period_seconds``,
        else its own) and removed by a later delete with 0 (:mod:`.graceful`).
        """
        with self._lock:
            key = keys.key_for(kind, namespace, name)
            try:
                if kind == "Namespace":
                    marked, changed = self._namespaces.delete(self._stored(key))
                    answer = thaw_object(freeze(marked))
                else:
                    changed, answer = self._delete(key, propagation, grace=grace_period_seconds)
            except ApiError as err:
                self._log("delete", key, error=err)
                raise
            self._log("delete", key, changed=changed)
            self.gc_writes += self._gc.run()
            return answer
