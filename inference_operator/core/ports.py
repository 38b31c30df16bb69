"""The two seams between the reconciler and the world: ``Backend`` and ``LoadBalancerProvider``.

The reconciler is written against these protocols only. The simulator implements them over
the in-process FakeApiServer; the real operator implements them over the kubernetes client
and an HTTP load balancer registry. Tests swap implementations here and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from inference_operator.core.objects import Obj


@dataclass(frozen=True)
class Result:
    """What a reconcile pass asks of the queue (errors are raised, not returned).

    Mirrors controller-runtime's ``reconcile.Result``: ``requeue_after`` wins over ``requeue``;
    ``requeue`` alone brings the key back with the queue's per-key backoff.
    """

    requeue: bool = False
    requeue_after: float | None = None


class Backend(Protocol):
    """Reads come from an informer cache; writes go to the API server.

    Objects returned by ``get`` are shared with the cache and must never be mutated.
    Writes raise the exceptions of ``inference_operator.core.errors``.
    """

    def get(self, kind: str, namespace: str, name: str) -> Obj | None:
        """The cached object, or None when it does not exist."""
        ...

    def read(self, kind: str, namespace: str, name: str) -> Obj | None:
        """The object as the API server has it now (no cache), or None. Rare: before creating
        a child the label-selected cache does not show (is a foreign object in the way?), and
        once per child written by an operator version before server-side apply."""
        ...

    def apply(self, obj: Obj) -> Obj:
        """Server-side apply of ``obj`` with the operator's field manager, forced: creates the
        object if it is absent; otherwise sets the fields ``obj`` has, removes those the operator
        applied before and no longer does (unless another manager owns them too), and leaves
        fields only others own alone. Takes fields from other managers that hold them."""
        ...

    def patch(self, kind: str, namespace: str, name: str, patch: Obj) -> Obj:
        """JSON merge patch (RFC 7386). A ``metadata.resourceVersion`` in the patch is a
        precondition: the write fails with Conflict if the object changed since it was read."""
        ...

    def update_status(self, obj: Obj) -> Obj:
        """Replace the status subresource; ``obj.metadata.resourceVersion`` is a precondition."""
        ...

    def list_pods(self, namespace: str, selector: str) -> list[Obj]:
        """Pods matching a label selector, read on demand (not cached) to explain why a
        Deployment is not ready."""
        ...

    def cached(self, kind: str) -> list[Obj] | None:
        """Every object of ``kind`` (``Node``, ``Pod``) the operator's cache holds, cluster-wide:
        what a rollout counts free GPUs from. None when the operator cannot read that kind
        (namespaced mode cannot read Nodes). Never a request; the objects may be the cache's
        own: never change them."""
        ...

    def cached_owned(self, kind: str, namespace: str, owner: str) -> list[Obj] | None:
        """The cached objects of ``kind`` in ``namespace`` whose owner label names ``owner`` (an
        InferenceService's own pods), by name, found by the cache's index; None when the
        operator cannot read that kind. Never a request; the objects may be the cache's own:
        never change them."""
        ...

    def record_event(self, obj: Obj, *, type: str, reason: str, message: str) -> None:
        """Post a Kubernetes Event about ``obj`` (type is Normal or Warning)."""
        ...


@dataclass(frozen=True)
class Registration:
    """A record at the external load balancer."""

    id: str
    address: str
    target: str


class LoadBalancerError(Exception):
    """The load balancer could not be reached or refused the request; retried with backoff."""


class LoadBalancerProvider(Protocol):
    """An external load balancer. Every call is idempotent: repeating it is harmless."""

    def register(self, key: str, *, target: str) -> Registration:
        """Create or update the record for ``key`` (``namespace/name``) pointing at ``target``."""
        ...

    def release(self, key: str) -> None:
        """Delete the record for ``key``; succeeds when there is none."""
        ...

    def lookup(self, key: str) -> Registration | None:
        """The record for ``key``, or None: one cheap read, to repair a record the balancer lost."""
        ...
