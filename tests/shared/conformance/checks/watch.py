"""Watch event sequences: which writes make events, of what type, carrying which state.

A watch is opened before the writes and asked for exactly the events the writes should make, so
a missing event shows as "only n of m events came" and an extra one as a wrong event in place
(never by waiting for something not to happen). Events of the controller-manager's own objects
(``kube-root-ca.crt``) are left out by the transport.
"""

from __future__ import annotations

from ..objects import configmap, isvc
from ..recorder import Api
from ..registry import check
from ..transports import Request

HOLD = "conformance.example/hold"
KEEP = ("metadata.name", "metadata.resourceVersion", "metadata.labels", "metadata.finalizers", "data")


@check("watch/no-op-update-makes-no-event")
def watch_noop(api: Api) -> None:
    handle = api.watch("ConfigMap")
    first = api.create(configmap("w", {"k": "1"}))
    same = api.update(first, keep=("metadata.resourceVersion",))
    api.update({**same, "data": {"k": "2"}}, keep=("metadata.resourceVersion",))
    api.events(handle, 2, keep=KEEP)


@check("watch/delete-without-finalizers-is-one-deleted-event")
def watch_delete_plain(api: Api) -> None:
    api.create(configmap("w", {"k": "1"}, labels={"app": "w"}))
    handle = api.watch("ConfigMap")
    api.delete("ConfigMap", "w")
    api.events(handle, 1, keep=(*KEEP, "metadata.deletionTimestamp"))


@check("watch/delete-with-finalizer-is-modified-then-deleted")
def watch_delete_finalizer(api: Api) -> None:
    api.create(configmap("w", {"k": "1"}, finalizers=[HOLD]))
    handle = api.watch("ConfigMap")
    api.delete("ConfigMap", "w")
    api.patch("ConfigMap", "w", {"metadata": {"finalizers": None}}, keep=())
    api.events(handle, 2, keep=(*KEEP, "metadata.deletionTimestamp", "metadata.deletionGracePeriodSeconds"))


@check("watch/deleted-carries-the-last-state")
def watch_deleted_last_state(api: Api) -> None:
    first = api.create(configmap("w", {"k": "1"}))
    api.update({**first, "data": {"k": "2"}, "metadata": {**first["metadata"], "labels": {"last": "yes"}}})
    handle = api.watch("ConfigMap")
    api.delete("ConfigMap", "w")
    api.events(handle, 1)


@check("watch/status-write-is-modified")
def watch_status(api: Api) -> None:
    created = api.create(isvc("s"), keep=("metadata.generation",))
    handle = api.watch("InferenceService")
    status = {"observedGeneration": 1, "conditions": []}
    api.update({**created, "status": status}, subresource="status", keep=("status", "metadata.generation"))
    api.events(handle, 1, keep=("metadata.name", "metadata.resourceVersion", "metadata.generation", "status"))
    api.patch("InferenceService", "s", {"metadata": {"finalizers": None}}, keep=())
    api.delete("InferenceService", "s")


@check("watch/namespace-scoped-sees-only-its-namespace")
def watch_namespace(api: Api) -> None:
    other = f"{api.ns}-other"
    api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}}, keep=("metadata.name",))
    try:
        handle = api.watch("ConfigMap")
        api.create(configmap("elsewhere", namespace=other), keep=("metadata.namespace",))
        api.create(configmap("here"), keep=("metadata.namespace",))
        api.events(handle, 1, keep=("metadata.name", "metadata.namespace"))
    finally:  # not recorded: what deleting a namespace answers is the namespaces area's
        api.transport.request(Request("delete", "Namespace", name=other))


@check("watch/label-selector-enter-and-leave")
def watch_selector(api: Api) -> None:
    handle = api.watch("ConfigMap", selector="app=a")
    api.create(configmap("never", labels={"app": "b"}))
    api.create(configmap("x", labels={"app": "b"}))
    api.patch("ConfigMap", "x", {"metadata": {"labels": {"app": "a"}}}, keep=("metadata.labels",))
    api.patch("ConfigMap", "x", {"data": {"k": "1"}}, keep=("data",))
    api.patch("ConfigMap", "x", {"metadata": {"labels": {"app": "c"}}}, keep=("metadata.labels",))
    api.create(configmap("y", labels={"app": "a"}))
    api.delete("ConfigMap", "y")
    api.events(handle, 5, keep=("metadata.name", "metadata.labels", "data"))


@check("watch/garbage-collection-shows-as-deleted")
def watch_gc(api: Api) -> None:
    handle = api.watch("ConfigMap")
    owner = api.create(configmap("owner"))
    api.create(
        configmap(
            "dependent",
            ownerReferences=[
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
            ],
        )
    )
    api.delete("ConfigMap", "owner")
    api.wait_gone("ConfigMap", "dependent")
    api.events(handle, 4, keep=("metadata.name",))


@check("watch/each-write-is-one-modified-in-order")
def watch_writes(api: Api) -> None:
    handle = api.watch("ConfigMap")
    api.create(configmap("w", {"k": "0"}))
    for value in ("1", "2", "3"):
        api.patch("ConfigMap", "w", {"data": {"k": value}}, keep=("metadata.resourceVersion",))
    api.events(handle, 4, keep=("metadata.resourceVersion", "data"))


@check("watch/orphan-delete-sequence")
def watch_orphan(api: Api) -> None:
    handle = api.watch("ConfigMap")
    owner = api.create(configmap("owner"), keep=())
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
    api.create(configmap("dependent", ownerReferences=[ref]), keep=())
    api.delete("ConfigMap", "owner", propagation="Orphan")
    api.wait_gone("ConfigMap", "owner")
    api.events(handle, 5, keep=("metadata.name", "metadata.finalizers", "metadata.ownerReferences"))


@check("watch/foreground-delete-sequence")
def watch_foreground(api: Api) -> None:
    handle = api.watch("ConfigMap")
    owner = api.create(configmap("owner"), keep=())
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
    api.create(configmap("dependent", ownerReferences=[{**ref, "blockOwnerDeletion": True}]), keep=())
    api.delete("ConfigMap", "owner", propagation="Foreground")
    api.wait_gone("ConfigMap", "owner")
    api.events(handle, 5, keep=("metadata.name", "metadata.finalizers"))


@check("watch/apply-by-a-second-manager-of-the-same-value-is-modified")
def watch_second_manager(api: Api) -> None:
    handle = api.watch("ConfigMap")
    api.apply(configmap("a", {"x": "1"}), manager="alice", keep=("metadata.resourceVersion",))
    api.apply(configmap("a", {"x": "1"}), manager="bob", keep=("metadata.resourceVersion",))
    api.apply(configmap("a", {"x": "1"}), manager="bob", keep=("metadata.resourceVersion",))
    api.events(handle, 2, keep=("metadata.resourceVersion", "metadata.managedFields"))
