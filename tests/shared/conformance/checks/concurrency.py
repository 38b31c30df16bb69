"""Optimistic concurrency: which writes need a resourceVersion, which ones it guards, and what a
stale or foreign one answers, per kind (ConfigMaps and InferenceServices for strict sequences:
the controller-manager also writes Deployments)."""

from __future__ import annotations

from typing import Any

from ..objects import configmap, deployment, secret, service
from ..recorder import Api
from ..registry import check
from .common import full_isvc, unfinalize, without_rv

Obj = dict[str, Any]


@check("concurrency/secret-update-without-resource-version-is-unconditional")
def secret_unconditional(api: Api) -> None:
    first = api.create(secret("s", {"k": "1"}))
    api.update(without_rv(first, data={"k": "Mg=="}))


@check("concurrency/deployment-update-without-resource-version-is-unconditional")
def deployment_unconditional(api: Api) -> None:
    first = api.create(deployment("d"))
    api.update(without_rv(first, spec={**first["spec"], "replicas": 2}), keep=["spec.replicas", "metadata.generation"])


@check("concurrency/service-update-without-resource-version-is-unconditional")
def service_unconditional(api: Api) -> None:
    first = api.create(service("s"))
    body = without_rv(first)
    body["metadata"]["labels"] = {"changed": "yes"}
    api.update(body)


@check("concurrency/custom-resource-status-update-without-resource-version-is-422")
def isvc_status_unconditional(api: Api) -> None:
    first = api.create(full_isvc("a"))
    api.update(without_rv(first, status={"phase": "Pending"}), subresource="status")
    unfinalize(api, "InferenceService", "a")


@check("concurrency/custom-resource-update-with-resource-version-succeeds")
def isvc_conditional(api: Api) -> None:
    first = api.create(full_isvc("a"))
    api.update({**first, "spec": {**first["spec"], "replicas": 2}})
    unfinalize(api, "InferenceService", "a")


@check("concurrency/custom-resource-update-with-stale-resource-version-is-409")
def isvc_stale(api: Api) -> None:
    first = api.create(full_isvc("a"))
    api.update({**first, "spec": {**first["spec"], "replicas": 2}})
    api.update({**first, "spec": {**first["spec"], "replicas": 3}})
    unfinalize(api, "InferenceService", "a")


@check("concurrency/custom-resource-status-update-with-stale-resource-version-is-409")
def isvc_status_stale(api: Api) -> None:
    first = api.create(full_isvc("a"))
    api.update({**first, "status": {"phase": "Pending"}}, subresource="status")
    api.update({**first, "status": {"phase": "Ready"}}, subresource="status")
    unfinalize(api, "InferenceService", "a")


@check("concurrency/create-with-resource-version-is-refused")
def create_with_rv(api: Api) -> None:
    api.create(configmap("a", resourceVersion="12345"))
    api.get("ConfigMap", "a")


@check("concurrency/custom-resource-create-with-resource-version-is-refused")
def isvc_create_with_rv(api: Api) -> None:
    manifest = full_isvc("a")
    manifest["metadata"]["resourceVersion"] = "7"
    api.create(manifest)
    api.get("InferenceService", "a")


@check("concurrency/merge-patch-changing-uid-is-refused")
def patch_uid(api: Api) -> None:
    api.create(configmap("a", {"k": "1"}))
    api.patch("ConfigMap", "a", {"metadata": {"uid": "00000000-0000-4000-8000-00000000beef"}, "data": {"k": "2"}})
    api.get("ConfigMap", "a", keep=["data"])


@check("concurrency/custom-resource-merge-patch-changing-uid-is-refused")
def isvc_patch_uid(api: Api) -> None:
    api.create(full_isvc("a"))
    api.patch("InferenceService", "a", {"metadata": {"uid": "00000000-0000-4000-8000-00000000beef"}})
    unfinalize(api, "InferenceService", "a")


@check("concurrency/merge-patch-with-stale-resource-version-is-409")
def patch_stale(api: Api) -> None:
    first = api.create(configmap("a", {"k": "1"}))
    api.update({**first, "data": {"k": "2"}})
    stale = {"metadata": {"resourceVersion": first["metadata"]["resourceVersion"]}, "data": {"k": "3"}}
    api.patch("ConfigMap", "a", stale)
    api.get("ConfigMap", "a", keep=["data"])


@check("concurrency/merge-patch-with-matching-resource-version-succeeds")
def patch_matching(api: Api) -> None:
    first = api.create(configmap("a", {"k": "1"}))
    matching = {"metadata": {"resourceVersion": first["metadata"]["resourceVersion"]}, "data": {"k": "2"}}
    api.patch("ConfigMap", "a", matching)


@check("concurrency/custom-resource-merge-patch-needs-no-resource-version")
def isvc_patch_unconditional(api: Api) -> None:
    api.create(full_isvc("a"))
    api.patch("InferenceService", "a", {"spec": {"replicas": 2}}, keep=["spec.replicas", "metadata.generation"])
    unfinalize(api, "InferenceService", "a")


@check("concurrency/status-merge-patch-with-stale-resource-version-is-409")
def status_patch_stale(api: Api) -> None:
    first = api.create(full_isvc("a"))
    api.patch("InferenceService", "a", {"status": {"phase": "Pending"}}, subresource="status")
    stale = {"metadata": {"resourceVersion": first["metadata"]["resourceVersion"]}, "status": {"phase": "Ready"}}
    api.patch("InferenceService", "a", stale, subresource="status")
    unfinalize(api, "InferenceService", "a")


@check("concurrency/update-with-foreign-uid-is-409")
def update_foreign_uid(api: Api) -> None:
    first = api.create(configmap("a", {"k": "1"}))
    body = {**first, "data": {"k": "2"}}
    body["metadata"] = {**first["metadata"], "uid": "00000000-0000-4000-8000-00000000beef"}
    api.update(body)


@check("concurrency/update-of-a-missing-object-is-404")
def update_missing(api: Api) -> None:
    api.update(configmap("nothing", {"k": "1"}))
    api.update(full_isvc("nothing"))
    api.patch("ConfigMap", "nothing", {"data": {"k": "1"}})


@check("concurrency/resource-version-moves-on-every-change-only")
def rv_sequence(api: Api) -> None:
    first = api.create(configmap("a", {"k": "1"}))
    second = api.update({**first, "data": {"k": "2"}})
    api.patch("ConfigMap", "a", {"data": {"k": "2"}})
    api.patch("ConfigMap", "a", {"data": {"k": "3"}})
    api.update(second)


@check("concurrency/apply-needs-no-resource-version-but-honours-a-stale-one")
def apply_rv(api: Api) -> None:
    first = api.apply(configmap("a", {"k": "1"}), manager="kubectl", keep=["data", "metadata.resourceVersion"])
    api.apply(configmap("a", {"k": "2"}), manager="kubectl", keep=["data", "metadata.resourceVersion"])
    stale = configmap("a", {"k": "3"}, resourceVersion=first["metadata"]["resourceVersion"])
    api.apply(stale, manager="kubectl")


@check("concurrency/custom-resource-apply-needs-no-resource-version")
def isvc_apply(api: Api) -> None:
    api.apply(full_isvc("a"), manager="kubectl", keep=["spec", "metadata.generation"])
    api.apply(full_isvc("a", replicas=3), manager="kubectl", keep=["spec", "metadata.generation"])
    unfinalize(api, "InferenceService", "a")


@check("concurrency/apply-with-a-foreign-uid-is-422")
def apply_foreign_uid(api: Api) -> None:
    api.apply(configmap("a", {"k": "1"}), manager="kubectl", keep=["data"])
    api.apply(configmap("a", {"k": "2"}, uid="00000000-0000-4000-8000-00000000beef"), manager="kubectl")
    api.get("ConfigMap", "a", keep=["data"])


@check("concurrency/built-in-status-update-without-resource-version-is-unconditional")
def builtin_status_unconditional(api: Api) -> None:
    svc = api.create(service("s"))
    manifest = deployment("d")
    api.create(manifest, keep=["metadata.generation"])
    api.update(without_rv(svc, status={"loadBalancer": {}}), subresource="status", keep=["status"])
    api.update(without_rv(manifest, status={"observedGeneration": 1}), subresource="status", keep=["metadata.name"])


@check("concurrency/an-empty-resource-version-counts-as-none")
def empty_rv(api: Api) -> None:
    first = api.create(full_isvc("a"))
    api.update({**first, "metadata": {**first["metadata"], "resourceVersion": ""}})
    config = api.create(configmap("c", {"k": "1"}))
    api.update({**config, "metadata": {**config["metadata"], "resourceVersion": ""}, "data": {"k": "2"}}, keep=["data"])
    unfinalize(api, "InferenceService", "a")
