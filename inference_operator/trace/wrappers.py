"""The operator's writes, told to a tracer: wrappers of the ``Backend`` and ``LoadBalancerProvider`` seams.

Both backends' reconcilers write through these when tracing is on (and through the bare
seams when it is off: nothing in between, nothing to pay). Each write becomes one ``write``
record with its result: the resourceVersion the API server returned (the watch event with
that version names this write as its cause), or the error (a Conflict, a 422 …), whose
backoff the workqueue's next ``enqueue`` record shows. Reads are not recorded: the reconciler's
``observe`` phase says what it read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from inference_operator.core.objects import Obj, key_of, obj_key
from inference_operator.core.ports import Backend, LoadBalancerProvider, Registration
from inference_operator.trace.recorder import Tracer

T = TypeVar("T")


def _rv(obj: Any) -> str | None:
    if isinstance(obj, dict):
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        return str(rv) if rv else None
    return None


class TracingBackend:
    """A ``Backend`` that records each write it passes on, with what it sent and got back."""

    def __init__(self, inner: Backend, tracer: Tracer) -> None:
        self.inner = inner
        self.tracer = tracer

    def _write(self, verb: str, kind: str, key: str, detail: Obj, call: Callable[[], Obj]) -> Obj:
        try:
            written = call()
        except Exception as err:
            self.tracer.write(verb, kind, key, rv=None, error=err, detail=detail)
            raise
        self.tracer.write(verb, kind, key, rv=_rv(written), error=None, detail=detail)
        return written

    def get(self, kind: str, namespace: str, name: str) -> Obj | None:
        return self.inner.get(kind, namespace, name)

    def read(self, kind: str, namespace: str, name: str) -> Obj | None:
        return self.inner.read(kind, namespace, name)

    def apply(self, obj: Obj) -> Obj:
        return self._write("apply", obj["kind"], obj_key(obj), {}, lambda: self.inner.apply(obj))

    def patch(self, kind: str, namespace: str, name: str, patch: Obj) -> Obj:
        sent = (patch.get("metadata") or {}).get("resourceVersion")
        detail: Obj = {"patch": patch}
        if sent:
            detail["precondition"] = str(sent)
        return self._write(
            "patch", kind, key_of(namespace, name), detail, lambda: self.inner.patch(kind, namespace, name, patch)
        )

    def update_status(self, obj: Obj) -> Obj:
        detail: Obj = {"precondition": str(obj["metadata"].get("resourceVersion") or "")}  # status: the status phase
        return self._write("update_status", obj["kind"], obj_key(obj), detail, lambda: self.inner.update_status(obj))

    def list_pods(self, namespace: str, selector: str) -> list[Obj]:
        return self.inner.list_pods(namespace, selector)

    def cached(self, kind: str) -> list[Obj] | None:
        return self.inner.cached(kind)

    def cached_owned(self, kind: str, namespace: str, owner: str) -> list[Obj] | None:
        return self.inner.cached_owned(kind, namespace, owner)

    def record_event(self, obj: Obj, *, type: str, reason: str, message: str) -> None:
        self.inner.record_event(obj, type=type, reason=reason, message=message)


class TracingLoadBalancer:
    """A ``LoadBalancerProvider`` whose register and release calls become ``write`` records
    (kind ``LoadBalancer``); lookups are reads, not recorded."""

    def __init__(self, inner: LoadBalancerProvider, tracer: Tracer) -> None:
        self.inner = inner
        self.tracer = tracer

    def _call(self, verb: str, key: str, detail: Obj, call: Callable[[], T]) -> T:
        try:
            result = call()
        except Exception as err:
            self.tracer.write(verb, "LoadBalancer", key, rv=None, error=err, detail=detail)
            raise
        if isinstance(result, Registration):
            detail = {**detail, "registration": result.id, "address": result.address}
        self.tracer.write(verb, "LoadBalancer", key, rv=None, error=None, detail=detail)
        return result

    def register(self, key: str, *, target: str) -> Registration:
        return self._call("register", key, {"target": target}, lambda: self.inner.register(key, target=target))

    def release(self, key: str) -> None:
        self._call("release", key, {}, lambda: self.inner.release(key))

    def lookup(self, key: str) -> Registration | None:
        return self.inner.lookup(key)
