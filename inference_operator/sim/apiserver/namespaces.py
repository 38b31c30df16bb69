"""Namespaces in the fake API server: what a new one looks like, who may create in it, how it goes.

On a real cluster a namespace is more than a name in an object's key. The API server fills it
in (``spec.finalizers: [kubernetes]``, ``status.phase: Active``, the ``kubernetes.io/metadata.name``
label, which always names it); the ``NamespaceLifecycle`` admission plugin refuses to create
anything in a namespace that does not exist (404) or is being deleted (403) and refuses to
delete ``default``, ``kube-system`` and ``kube-public`` (403); deleting a namespace only marks
it ``Terminating`` and the namespace controller then deletes everything in it and removes the
namespace once it is empty (objects with finalizers keep it waiting). A fake that treats a
namespace as a string lets a simulation put objects where a real cluster would answer 404, and
lets a test believe a namespace's content survives the namespace.

The fake starts with the four namespaces every cluster has, and runs the namespace controller's
work synchronously within the DELETE (as its garbage collector runs within each request): when
the call returns, the content is gone, and so is the namespace unless some object in it still
has finalizers; it goes when the last such object does. :class:`NamespaceLifecycle` is that
admission plugin and that controller; it reaches the store through the server's own write paths,
so its writes bump resourceVersions and emit watch events like any other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, Literal, Protocol

from inference_operator.core.errors import Forbidden, NotFound
from inference_operator.core.objects import Obj
from inference_operator.sim.apiserver.keys import DEFAULT_NAMESPACE, Key, namespace_key
from inference_operator.sim.apiserver.kinds import traits_of
from inference_operator.sim.apiserver.managedfields import BadRequest

__all__ = [
    "BUILT_IN_NAMESPACES",
    "IMMORTAL_NAMESPACES",
    "KUBERNETES_FINALIZER",
    "METADATA_NAME_LABEL",
    "NamespaceLifecycle",
    "Storage",
    "complete_create",
    "prepare",
]

EventType = Literal["ADDED", "MODIFIED", "DELETED"]

BUILT_IN_NAMESPACES: Final = ("default", "kube-node-lease", "kube-public", "kube-system")
"""The namespaces kube-apiserver creates itself."""
IMMORTAL_NAMESPACES: Final = frozenset({"default", "kube-public", "kube-system"})
"""Namespaces the ``NamespaceLifecycle`` plugin refuses to delete (``kube-node-lease`` is not one)."""
KUBERNETES_FINALIZER: Final = "kubernetes"
"""The ``spec.finalizers`` entry the namespace controller removes once the namespace is empty."""
METADATA_NAME_LABEL: Final = "kubernetes.io/metadata.name"
"""A label every namespace carries, always equal to its name (writes cannot change it)."""


def prepare(kind: str, candidate: Obj, stored: Obj | None) -> None:
    """The scheme's defaulting of a Namespace, and its update strategy (``stored`` None: a create).

    The ``kubernetes.io/metadata.name`` label is set to the name on every write; on update
    ``spec`` (only finalizers, changed through ``/finalize``) and ``status`` stay as stored.
    Other kinds are left alone.
    """
    if kind != "Namespace":
        return
    meta = candidate["metadata"]
    meta["labels"] = {**(meta.get("labels") or {}), METADATA_NAME_LABEL: meta["name"]}
    if stored is None:
        return
    if "spec" in stored:
        candidate["spec"] = stored["spec"]
    else:
        candidate.pop("spec", None)


def complete_create(kind: str, new: Obj) -> None:
    """The create strategy of a Namespace: ``Active``, and ``kubernetes`` in ``spec.finalizers``.

    It runs after the field manager, so nobody owns what it sets (as on the real server).
    """
    if kind != "Namespace":
        return
    spec = new.get("spec")
    spec = dict(spec) if isinstance(spec, dict) else {}
    finalizers = list(spec.get("finalizers") or ())
    if KUBERNETES_FINALIZER not in finalizers:
        finalizers.append(KUBERNETES_FINALIZER)
    new["spec"] = {**spec, "finalizers": finalizers}
    new["status"] = {"phase": "Active"}


def is_terminating(namespace: Obj) -> bool:
    return "deletionTimestamp" in namespace["metadata"]


class Storage(Protocol):
    """What the namespace controller needs of the store it works on.

    The stored objects as they are (it only reads them; no copy, no read counted), the keys of a
    namespace's content, the timestamp and resourceVersion its writes carry, and the tally its
    writes count in: they are the controller-manager's, so ``gc_writes``, never ``writes``.
    """

    def lookup(self, key: Key, /) -> Obj | None: ...

    def contents(self, namespace: str, /) -> tuple[Key, ...]: ...

    def now(self) -> str: ...

    def next_resource_version(self) -> str: ...

    def count_controller_writes(self, count: int, /) -> None: ...


class NamespaceLifecycle:
    """The ``NamespaceLifecycle`` admission plugin and the namespace controller of one fake server.

    It reads through ``store`` (a :class:`Storage`) and writes through the server's own paths:
    ``put`` (store a new version, emit its event), ``remove`` (remove a stored object) and
    ``delete`` (delete one object, Background).
    """

    def __init__(
        self,
        *,
        store: Storage,
        put: Callable[[Key, Obj, Obj, EventType], object],
        remove: Callable[[Key, Obj, str], object],
        delete: Callable[[Key], bool],
    ) -> None:
        self._store = store
        self._put = put
        self._remove = remove
        self._delete = delete

    # --- admission ----------------------------------------------------------------------------

    def admit_create(self, obj: Obj, *, path_namespace: str | None) -> Obj:
        """``obj`` as created in the request path's namespace, if the namespace admits it.

        :class:`BadRequest` if the object names another namespace than the path, :class:`NotFound`
        if the namespace does not exist, :class:`Forbidden` if it is terminating. Cluster-scoped
        kinds are not checked (a namespace they name is dropped later).
        """
        kind = str(obj.get("kind") or "")
        meta = obj.get("metadata")
        if not traits_of(kind).namespaced or not isinstance(meta, dict):
            return obj
        own = meta.get("namespace")
        if path_namespace and own and own != path_namespace:
            raise BadRequest(
                "the namespace of the provided object does not match the namespace sent on the request", kind=kind
            )
        if path_namespace and not own:
            obj = {**obj, "metadata": {**meta, "namespace": path_namespace}}
        namespace, name = str(own or path_namespace or DEFAULT_NAMESPACE), str(meta.get("name") or "")
        stored = self._store.lookup(namespace_key(namespace))
        if stored is None:
            raise NotFound(f'namespaces "{namespace}" not found', kind="Namespace", name=namespace)
        if is_terminating(stored):
            raise Forbidden(
                f'{kind} "{name}" is forbidden: unable to create new content in namespace {namespace} '
                "because it is being terminated",
                kind=kind,
                namespace=namespace,
                name=name,
            )
        return obj

    @staticmethod
    def built_in() -> list[Obj]:
        """The namespaces a fresh server holds, as kube-apiserver creates them."""
        return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}} for name in BUILT_IN_NAMESPACES]

    # --- the namespace controller -------------------------------------------------------------

    def delete(self, stored: Obj) -> tuple[Obj, bool]:
        """Delete the namespace ``stored``: mark it, delete its content, remove it once empty.

        Returns what the real DELETE answers (the namespace, marked ``Terminating``) and whether
        the request changed it (a second DELETE does not).
        """
        name: str = stored["metadata"]["name"]
        if name in IMMORTAL_NAMESPACES:
            raise Forbidden(
                f'namespaces "{name}" is forbidden: this namespace may not be deleted', kind="Namespace", name=name
            )
        key = namespace_key(name)
        answer = stored
        if not is_terminating(stored):
            now, rv = self._store.now(), self._store.next_resource_version()
            meta = {**stored["metadata"], "deletionTimestamp": now, "resourceVersion": rv}
            answer = {**stored, "metadata": meta, "status": {**stored.get("status", {}), "phase": "Terminating"}}
            self._put(key, answer, stored, "MODIFIED")
        for content in self._store.contents(name):
            if self._store.lookup(content) is not None:
                deleted = self._delete(content)  # first: removing the last one may count the namespace's removal
                self._store.count_controller_writes(int(deleted))
        self._finalize(name)
        return answer, answer is not stored

    def content_removed(self, key: Key) -> None:
        """A namespaced object is gone: its terminating namespace goes too once empty."""
        if key[1]:
            self._finalize(key[1])

    def _finalize(self, name: str) -> None:
        """Remove ``kubernetes`` from a terminating, empty namespace's finalizers; remove it if none remain."""
        key = namespace_key(name)
        stored = self._store.lookup(key)
        if stored is None or not is_terminating(stored) or self._store.contents(name):
            return
        finalizers = stored.get("spec", {}).get("finalizers", [])
        remaining = [f for f in finalizers if f != KUBERNETES_FINALIZER]
        if remaining or stored["metadata"].get("finalizers"):
            if remaining != finalizers:
                meta = {**stored["metadata"], "resourceVersion": self._store.next_resource_version()}
                self._put(
                    key,
                    {**stored, "metadata": meta, "spec": {**stored["spec"], "finalizers": remaining}},
                    stored,
                    "MODIFIED",
                )
                self._store.count_controller_writes(1)
            return
        self._remove(key, stored, self._store.next_resource_version())
        self._store.count_controller_writes(1)
