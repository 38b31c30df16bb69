"""Create, read, conflict and delete on the plainest kinds: the ground every other area stands on."""

from __future__ import annotations

from ..objects import configmap, isvc, owner_ref
from ..recorder import Api
from ..registry import check


@check("create/configmap-server-fields")
def create_configmap(api: Api) -> None:
    api.create(configmap("a", {"k": "v"}, labels={"app": "a"}))
    api.get("ConfigMap", "a")


@check("create/duplicate-is-409-already-exists")
def create_twice(api: Api) -> None:
    api.create(configmap("a"))
    api.create(configmap("a", {"other": "data"}))


@check("get/missing-is-404")
def get_missing(api: Api) -> None:
    api.get("ConfigMap", "nothing-here")


@check("update/stale-resource-version-is-409")
def stale_update(api: Api) -> None:
    first = api.create(configmap("a", {"k": "1"}))
    api.update({**first, "data": {"k": "2"}})
    api.update({**first, "data": {"k": "3"}})


@check("update/configmap-without-resource-version-is-unconditional")
def configmap_unconditional(api: Api) -> None:
    first = api.create(configmap("a", {"k": "1"}))
    body = {**first, "data": {"k": "2"}}
    body["metadata"] = {k: v for k, v in first["metadata"].items() if k != "resourceVersion"}
    api.update(body)


@check("update/custom-resource-without-resource-version-is-422")
def isvc_unconditional(api: Api) -> None:
    first = api.create(isvc("a"))
    body = {**first, "spec": {**first["spec"], "replicas": 3}}
    body["metadata"] = {k: v for k, v in first["metadata"].items() if k != "resourceVersion"}
    api.update(body)


@check("update/no-op-keeps-resource-version")
def noop_update(api: Api) -> None:
    first = api.create(configmap("a", {"k": "1"}))
    api.update(first)


@check("watch/added-modified-deleted")
def watch_sequence(api: Api) -> None:
    handle = api.watch("ConfigMap")
    first = api.create(configmap("w", {"k": "1"}))
    api.update({**first, "data": {"k": "2"}})
    api.delete("ConfigMap", "w")
    api.events(handle, 3)


@check("gc/background-removes-dependent")
def gc_background(api: Api) -> None:
    owner = api.create(configmap("owner"))
    api.create(configmap("dependent", ownerReferences=[owner_ref(owner)]))
    api.delete("ConfigMap", "owner")
    api.wait_gone("ConfigMap", "dependent")
