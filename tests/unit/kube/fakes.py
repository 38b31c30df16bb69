"""Stand-ins for the kube backend's API seams, shared by the kube tests: a KubeClient whose
LISTs answer from a dict and whose writes are recorded or fail, and an in-memory Lease store.

Used by test_manager.py, test_election.py and test_election_runtime.py (no test module imports
another).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

from inference_operator.core.errors import Conflict, NotFound
from inference_operator.core.jsoncopy import deep_copy

Obj = dict[str, Any]
KIND = "InferenceService"


def isvc(name: str = "a", rv: str = "1", uid: str = "u1", **meta: Any) -> Obj:
    return {
        "apiVersion": "serving.inference-operator.dev/v1",
        "kind": KIND,
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv, "uid": uid, **meta},
        "spec": {"image": "i", "model": "m"},
    }


class FakeClient:
    """Stands in for KubeClient: LISTs answer from ``objects``; writes are recorded or fail."""

    def __init__(self) -> None:
        self.objects: dict[str, list[Obj]] = {}
        self.version = "100"
        self.lists: list[tuple[str, bool]] = []  # (kind, metadata_only)
        self.list_error: BaseException | None = None
        self.before_list: Callable[[str], None] = lambda kind: None
        self.created: list[Obj] = []
        self.patched: list[tuple[str, str, Obj]] = []
        self.failures: list[BaseException] = []  # raised by the next writes, in order
        self.write_error: BaseException | None = None  # raised by every write
        self.missing_events: set[str] = set()
        self.lock = threading.Lock()

    def iter_pages(self, kind: str, namespace: str, **kwargs: Any) -> Iterator[tuple[list[Obj], str]]:
        self.lists.append((kind, bool(kwargs.get("metadata_only"))))
        if self.list_error is not None:
            raise self.list_error
        self.before_list(kind)
        items = [o for o in self.objects.get(kind, []) if not namespace or o["metadata"]["namespace"] == namespace]
        if kwargs.get("metadata_only"):
            items = [{"metadata": o["metadata"]} for o in items]
        yield items, self.version

    def _write(self) -> None:
        with self.lock:
            if self.write_error is not None:
                raise self.write_error
            if self.failures:
                raise self.failures.pop(0)

    def create(self, obj: Obj) -> Obj:
        self._write()
        self.created.append(obj)
        return obj

    def patch(self, kind: str, namespace: str, name: str, patch: Obj, **_: Any) -> Obj:
        self._write()
        if kind == "Event" and name in self.missing_events:
            raise NotFound(f"patch Event {namespace}/{name}: HTTP 404: not found")
        self.patched.append((kind, name, patch))
        return {"kind": kind, "metadata": {"name": name, "namespace": namespace}}

    def update_status(self, obj: Obj) -> Obj:
        self._write()
        return obj

    def list_objects(self, *args: Any, **kwargs: Any) -> list[Obj]:
        return []


class Leases:
    """Leases by (namespace, name) with resourceVersion checks; ``fail`` makes calls raise."""

    def __init__(self) -> None:
        self.items: dict[tuple[str, str], Obj] = {}
        self.version = 0
        self.fail: dict[str, Exception] = {}  # identity of the caller (by store view) -> error
        self.stale: dict[str, Obj] = {}  # identity -> what its next get answers (read before a race)

    def view(self, identity: str) -> LeaseView:
        return LeaseView(self, identity)

    def delete(self, namespace: str = "ops", name: str = "inference-operator") -> None:
        """``kubectl delete lease``: the next create gets a new uid."""
        del self.items[(namespace, name)]

    def set_holder(self, holder: str, namespace: str = "ops", name: str = "inference-operator") -> None:
        """``kubectl edit lease``: another holder written by hand (a new resourceVersion)."""
        self.version += 1
        lease = self.items[(namespace, name)]
        lease["spec"]["holderIdentity"] = holder
        lease["metadata"]["resourceVersion"] = str(self.version)


class LeaseView:
    def __init__(self, leases: Leases, identity: str) -> None:
        self.leases, self.identity = leases, identity

    def _check(self) -> None:
        if self.identity in self.leases.fail:
            raise self.leases.fail[self.identity]

    def get_lease(self, namespace: str, name: str) -> Obj | None:
        self._check()
        if self.identity in self.leases.stale:
            return self.leases.stale.pop(self.identity)
        found = self.leases.items.get((namespace, name))
        return deep_copy(found) if found else None

    def create_lease(self, lease: Obj) -> Obj:
        self._check()
        key = (lease["metadata"]["namespace"], lease["metadata"]["name"])
        if key in self.leases.items:
            raise Conflict("already exists")
        return self._store(key, lease)

    def replace_lease(self, lease: Obj) -> Obj:
        self._check()
        key = (lease["metadata"]["namespace"], lease["metadata"]["name"])
        if key not in self.leases.items:
            raise NotFound(f"leases.coordination.k8s.io {key[1]!r} not found")
        if self.leases.items[key]["metadata"]["resourceVersion"] != lease["metadata"].get("resourceVersion"):
            raise Conflict("the object has been modified")
        return self._store(key, lease)

    def _store(self, key: tuple[str, str], lease: Obj) -> Obj:
        self.leases.version += 1
        stored = deep_copy(lease)
        stored["metadata"]["resourceVersion"] = str(self.leases.version)
        old = self.leases.items.get(key)
        stored["metadata"]["uid"] = old["metadata"]["uid"] if old else f"lease-uid-{self.leases.version}"
        self.leases.items[key] = stored
        return deep_copy(stored)
