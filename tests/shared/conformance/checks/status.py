"""The status subresource per kind (what a write through /status keeps besides status, what the
main endpoint does with status) and the generation rules per kind: which writes move
``metadata.generation`` (spec changes; for Deployments annotations too) and which never do."""

from __future__ import annotations

from ..objects import configmap, deployment, service
from ..recorder import Api
from ..registry import check
from .common import full_isvc, unfinalize, without_rv

_META = ["metadata.labels", "metadata.annotations", "metadata.finalizers", "metadata.generation"]


def _touched(obj: dict, **top: object) -> dict:
    """``obj`` with a new label, annotation and finalizer and ``top`` (spec, status …) replaced."""
    meta = obj["metadata"]
    return {
        **obj,
        **top,
        "metadata": {
            **meta,
            "labels": {**meta.get("labels", {}), "added": "by-status"},
            "annotations": {**meta.get("annotations", {}), "added": "by-status"},
            "finalizers": [*meta.get("finalizers", []), "example.com/by-status"],
        },
    }


@check("status/configmap-has-no-status-subresource")
def configmap_status(api: Api) -> None:
    first = api.create(configmap("a", {"k": "1"}))
    api.update({**first, "status": {"x": "y"}}, subresource="status")
    api.patch("ConfigMap", "a", {"status": {"x": "y"}}, subresource="status")


@check("status/deployment-status-write-keeps-which-metadata")
def deployment_status_meta(api: Api) -> None:
    first = api.create(deployment("d"))
    body = _touched(first, spec={**first["spec"], "replicas": 5}, status={"observedGeneration": 1})
    # no resourceVersion: the controller-manager writes this Deployment's status too
    api.update(without_rv(body), subresource="status", keep=[*_META, "spec.replicas"])
    api.get("Deployment", "d", keep=[*_META, "spec.replicas"])
    api.patch("Deployment", "d", {"metadata": {"finalizers": None}}, keep=["metadata.finalizers"])


@check("status/service-status-write-keeps-which-metadata")
def service_status_meta(api: Api) -> None:
    first = api.create(service("s"))
    body = _touched(first, spec={**first["spec"], "ports": [{"name": "http", "port": 81}]}, status={"loadBalancer": {}})
    api.update(body, subresource="status", keep=[*_META, "spec.ports"])
    api.patch("Service", "s", {"metadata": {"finalizers": None}}, keep=["metadata.finalizers"])


@check("status/custom-resource-status-write-keeps-no-metadata")
def isvc_status_meta(api: Api) -> None:
    first = api.create(full_isvc("a"))
    body = _touched(first, spec={**first["spec"], "replicas": 4}, status={"phase": "Pending"})
    api.update(body, subresource="status", keep=[*_META, "spec.replicas", "status"])
    unfinalize(api, "InferenceService", "a")


@check("status/custom-resource-status-merge-patch-keeps-no-metadata")
def isvc_status_patch_meta(api: Api) -> None:
    api.create(full_isvc("a"))
    patch = {"metadata": {"labels": {"x": "y"}, "annotations": {"x": "y"}}, "spec": {"replicas": 4}, "status": {}}
    patch["status"] = {"phase": "Pending", "replicas": 0}
    api.patch("InferenceService", "a", patch, subresource="status", keep=[*_META, "spec.replicas", "status"])
    api.patch("InferenceService", "a", {"status": {"replicas": None}}, subresource="status", keep=["status"])
    unfinalize(api, "InferenceService", "a")


@check("status/deployment-status-merge-patch-keeps-which-metadata")
def deployment_status_patch_meta(api: Api) -> None:
    api.create(deployment("d"))
    patch = {"metadata": {"labels": {"x": "y"}, "annotations": {"x": "y"}}, "spec": {"replicas": 4}}
    api.patch("Deployment", "d", patch, subresource="status", keep=[*_META, "spec.replicas"])


@check("status/main-endpoint-ignores-status-of-a-custom-resource")
def isvc_main_status(api: Api) -> None:
    first = api.create({**full_isvc("a"), "status": {"phase": "Ready"}}, keep=["status"])
    api.update({**first, "status": {"phase": "Ready"}}, keep=["status", "metadata.resourceVersion"])
    api.patch("InferenceService", "a", {"status": {"phase": "Ready"}}, keep=["status"])
    unfinalize(api, "InferenceService", "a")


@check("status/main-endpoint-ignores-status-of-a-service")
def service_main_status(api: Api) -> None:
    ingress = {"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}]}}
    first = api.create({**service("s"), "status": ingress}, keep=["status"])
    api.update({**first, "status": ingress}, keep=["status"])
    api.patch("Service", "s", {"status": ingress}, keep=["status"])


@check("status/main-endpoint-ignores-status-of-a-deployment")
def deployment_main_status(api: Api) -> None:
    first = api.create({**deployment("d"), "status": {"replicas": 3}}, keep=["metadata.generation"])
    # a patch, not a PUT: the controller-manager annotates the Deployment meanwhile (a PUT of the
    # created object would take that annotation away, and annotations move a Deployment's generation)
    api.patch("Deployment", first["metadata"]["name"], {"status": {"replicas": 3}}, keep=["metadata.generation"])


@check("status/load-balancer-ingress-on-a-cluster-ip-service-is-422")
def clusterip_ingress(api: Api) -> None:
    first = api.create(service("s"))
    api.update({**first, "status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}]}}}, subresource="status")


@check("status/load-balancer-ingress-on-a-load-balancer-service")
def lb_ingress(api: Api) -> None:
    manifest = service("s")
    manifest["spec"]["type"] = "LoadBalancer"
    first = api.create(manifest, keep=["spec.type", "status"])
    status = {"loadBalancer": {"ingress": [{"ip": "203.0.113.7", "ipMode": "VIP"}]}}
    api.update({**first, "status": status}, subresource="status", keep=["status"])
    api.patch(
        "Service",
        "s",
        {"status": {"loadBalancer": {"ingress": [{"hostname": "lb.example.com"}]}}},
        subresource="status",
        keep=["status"],
    )


@check("status/status-write-never-bumps-generation")
def status_generation(api: Api) -> None:
    first = api.create(full_isvc("a"))
    second = api.update(
        {**first, "status": {"phase": "Pending"}},
        subresource="status",
        keep=["metadata.generation", "metadata.resourceVersion"],
    )
    api.update(
        {**second, "status": {"phase": "Pending"}},
        subresource="status",
        keep=["metadata.generation", "metadata.resourceVersion"],
    )
    unfinalize(api, "InferenceService", "a")


@check("status/generation-of-a-custom-resource")
def isvc_generation(api: Api) -> None:
    keep = ["metadata.generation", "metadata.resourceVersion"]
    api.create(full_isvc("a"), keep=keep)
    api.patch("InferenceService", "a", {"spec": {"replicas": 2}}, keep=keep)
    api.patch("InferenceService", "a", {"spec": {"replicas": 2}}, keep=keep)
    api.patch("InferenceService", "a", {"metadata": {"labels": {"x": "y"}}}, keep=keep)
    api.patch("InferenceService", "a", {"metadata": {"annotations": {"x": "y"}}}, keep=keep)
    api.patch("InferenceService", "a", {"metadata": {"finalizers": None}}, keep=keep)


@check("status/generation-of-a-deployment")
def deployment_generation(api: Api) -> None:
    keep = ["metadata.generation"]
    api.create(deployment("d"), keep=keep)
    api.patch("Deployment", "d", {"spec": {"replicas": 2}}, keep=keep)
    api.patch("Deployment", "d", {"spec": {"replicas": 2}}, keep=keep)
    api.patch("Deployment", "d", {"metadata": {"labels": {"x": "y"}}}, keep=keep)
    api.patch("Deployment", "d", {"metadata": {"annotations": {"x": "y"}}}, keep=keep)
    api.patch("Deployment", "d", {"metadata": {"finalizers": ["example.com/f"]}}, keep=keep)
    api.patch("Deployment", "d", {"metadata": {"finalizers": None}}, keep=keep)
    api.patch("Deployment", "d", {"spec": {"template": {"metadata": {"annotations": {"x": "y"}}}}}, keep=keep)


@check("status/generation-of-a-service-and-a-configmap")
def service_generation(api: Api) -> None:
    keep = ["metadata.generation"]
    api.create(service("s"), keep=keep)
    api.patch("Service", "s", {"spec": {"ports": [{"name": "http", "port": 81}]}}, keep=keep)
    api.create(configmap("c", {"k": "1"}), keep=keep)
    api.patch("ConfigMap", "c", {"data": {"k": "2"}}, keep=keep)


@check("status/service-status-write-keeps-owner-references-and-refuses-finalizers-while-terminating")
def service_status_owner_refs(api: Api) -> None:
    owner = api.create(configmap("owner"))
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
    first = api.create(service("s", finalizers=["example.com/hold"]))
    body = {**first, "metadata": {**first["metadata"], "ownerReferences": [ref]}}
    api.update(body, subresource="status", keep=["metadata.ownerReferences"])
    api.delete("Service", "s")
    marked = api.get("Service", "s")
    late = {**marked, "metadata": {**marked["metadata"], "finalizers": ["example.com/hold", "example.com/late"]}}
    api.update(late, subresource="status")
    api.patch("Service", "s", {"metadata": {"finalizers": None}}, keep=())
