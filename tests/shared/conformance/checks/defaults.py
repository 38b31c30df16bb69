"""Defaulting and shape of the built-in kinds the operator writes (Deployment, Service) and of
ConfigMaps and Secrets: every default of a created object, volume modes, unknown fields and
empty maps dropped, the annotation size limit, Secret stringData, and what list items carry."""

from __future__ import annotations

from typing import Any

from inference_operator.api.models import InferenceService
from inference_operator.reconcile.builders import desired_deployment, desired_service

from ..objects import configmap, deployment, secret, service
from ..recorder import Api
from ..registry import check
from .common import full_isvc, unfinalize

Obj = dict[str, Any]


def _pod(obj: Obj) -> Obj:
    pod: Obj = obj["spec"]["template"]["spec"]
    return pod


@check("defaults/deployment-minimal-create-answer")
def deployment_minimal(api: Api) -> None:
    api.create(deployment("d", replicas=1))


@check("defaults/deployment-pod-template-defaults")
def deployment_full(api: Api) -> None:
    manifest = deployment("d", image="registry.local/server")
    pod = _pod(manifest)
    pod["containers"][0].update(
        {
            "ports": [{"name": "http", "containerPort": 8000}],
            "env": [
                {"name": "A", "value": "b"},
                {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
            ],
            "resources": {"limits": {"cpu": 0.5, "memory": "1024Mi"}, "requests": {"cpu": "250m"}},
            "readinessProbe": {"httpGet": {"port": 8000}},
            "livenessProbe": {"tcpSocket": {"port": "http"}},
            "startupProbe": {"exec": {"command": ["true"]}},
            "lifecycle": {"preStop": {"sleep": {"seconds": 1}}},
        }
    )
    pod["initContainers"] = [{"name": "init", "image": "busybox:1.36"}]
    pod["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists"}]
    pod["affinity"] = {}
    api.create(manifest)


@check("defaults/deployment-volume-modes")
def deployment_volumes(api: Api) -> None:
    manifest = deployment("d")
    _pod(manifest)["volumes"] = [
        {"name": "cm", "configMap": {"name": "c"}},
        {"name": "cm-items", "configMap": {"name": "c", "items": [{"key": "k", "path": "p"}]}},
        {"name": "sec", "secret": {"secretName": "s"}},
        {"name": "own-mode", "secret": {"secretName": "s", "defaultMode": 256}},
        {"name": "proj", "projected": {"sources": [{"configMap": {"name": "c"}}]}},
        {"name": "down", "downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
        {"name": "scratch", "emptyDir": {}},
        {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}},
    ]
    api.create(manifest, keep=["spec.template.spec.volumes"])


@check("defaults/emptydir-size-limits-stored-canonical")
def emptydir_size_limits(api: Api) -> None:
    """An emptyDir's sizeLimit is a Quantity, stored in canonical form (the operator's /dev/shm
    from spec.sharedMemory: 2048Mi comes back 2Gi, and the drift check must not see a change)."""
    manifest = deployment("d")
    _pod(manifest)["volumes"] = [
        {"name": "binary", "emptyDir": {"medium": "Memory", "sizeLimit": "2048Mi"}},
        {"name": "fraction", "emptyDir": {"medium": "Memory", "sizeLimit": "1.5Gi"}},
        {"name": "integer", "emptyDir": {"sizeLimit": 1073741824}},
        {"name": "decimal", "emptyDir": {"sizeLimit": "2000M"}},
    ]
    api.create(manifest, keep=["spec.template.spec.volumes"])


@check("defaults/deployment-strategies")
def deployment_strategies(api: Api) -> None:
    recreate = deployment("r")
    recreate["spec"]["strategy"] = {"type": "Recreate"}
    api.create(recreate, keep=["spec.strategy"])
    rolling = deployment("u")
    rolling["spec"]["strategy"] = {"rollingUpdate": {"maxSurge": 1}}
    api.create(rolling, keep=["spec.strategy"])


@check("defaults/operator-deployment-as-created")
def operator_deployment(api: Api) -> None:
    owner = api.create(
        full_isvc("a", gpu=1, env=[{"name": "A", "value": "b"}], resources={"requests": {"cpu": "2", "memory": "8Gi"}})
    )
    api.create(desired_deployment(InferenceService.from_object(owner)))
    unfinalize(api, "InferenceService", "a")


@check("defaults/operator-service-as-created")
def operator_service(api: Api) -> None:
    owner = api.create(full_isvc("a"))
    api.create(desired_service(InferenceService.from_object(owner)))
    unfinalize(api, "InferenceService", "a")


@check("defaults/operator-children-as-applied")
def operator_children_applied(api: Api) -> None:
    owner = api.create(full_isvc("a", replicas=2))
    parsed = InferenceService.from_object(owner)
    api.apply(desired_deployment(parsed), manager="inference-operator", force=True)
    api.apply(desired_service(parsed), manager="inference-operator", force=True)
    unfinalize(api, "InferenceService", "a")


@check("defaults/service-minimal-create-answer")
def service_minimal(api: Api) -> None:
    api.create(service("s"))


@check("defaults/service-types")
def service_types(api: Api) -> None:
    for kind in ("NodePort", "LoadBalancer"):
        manifest = service(kind.lower())
        manifest["spec"]["type"] = kind
        api.create(manifest)
    headless = service("headless")
    headless["spec"]["clusterIP"] = "None"
    api.create(headless)
    affinity = service("affinity")
    affinity["spec"]["sessionAffinity"] = "ClientIP"
    api.create(affinity, keep=["spec"])


@check("defaults/service-named-target-port-and-udp")
def service_ports(api: Api) -> None:
    manifest = service("s")
    manifest["spec"]["ports"] = [
        {"name": "http", "port": 80, "targetPort": "http"},
        {"name": "dns", "port": 53, "protocol": "UDP"},
    ]
    api.create(manifest, keep=["spec.ports"])


@check("defaults/empty-maps-are-dropped")
def empty_maps(api: Api) -> None:
    api.create({**configmap("a", labels={}), "data": {}, "binaryData": {}})
    manifest = configmap("b", annotations={})
    manifest["metadata"]["labels"] = {}
    manifest["metadata"]["finalizers"] = []
    manifest["metadata"]["ownerReferences"] = []
    api.create(manifest)
    api.create({**secret("s"), "data": {}, "stringData": {}})


@check("defaults/unknown-fields-are-dropped-from-built-in-kinds")
def unknown_fields(api: Api) -> None:
    api.create({**configmap("a", {"k": "v"}), "extra": {"x": 1}})
    manifest = deployment("d")
    manifest["spec"]["extra"] = True
    manifest["metadata"]["extra"] = "x"
    _pod(manifest)["containers"][0]["extra"] = 1
    api.create(manifest, keep=["spec", "metadata.extra"])
    svc = service("s")
    svc["spec"]["ports"][0]["extra"] = "x"
    api.create(svc, keep=["spec.ports"])


@check("defaults/annotation-total-size-limit")
def annotation_limit(api: Api) -> None:
    under = "x" * (256 * 1024 - 10)
    api.create(configmap("fits", annotations={"a": under[: 128 * 1024], "b": under[128 * 1024 :]}), keep=[])
    api.create(configmap("too-big", annotations={"a": "x" * (128 * 1024), "b": "y" * (128 * 1024)}))
    api.create(configmap("key-too", annotations={"k" * 64: "v"}))
    api.patch("ConfigMap", "fits", {"metadata": {"annotations": {"c": "z" * 64}}})


@check("defaults/secret-string-data-is-merged-into-data")
def secret_string_data(api: Api) -> None:
    api.create({**secret("s", {"user": "admin", "pass": "pw"}), "data": {"pass": "b2xk", "other": "eA=="}})
    first = api.get("Secret", "s")
    api.update({**first, "stringData": {"user": "root"}})
    api.patch("Secret", "s", {"stringData": {"new": "value"}})


@check("defaults/secret-types")
def secret_types(api: Api) -> None:
    api.create(secret("plain"), keep=["type", "data"])
    api.create(
        {**secret("tls"), "type": "kubernetes.io/tls", "data": {"tls.crt": "eA==", "tls.key": "eA=="}}, keep=["type"]
    )
    api.create({**secret("tls-missing"), "type": "kubernetes.io/tls"})
    api.create({**secret("bad"), "data": {"k": "not base64!"}})
    first = api.create({**secret("immutable", {"k": "v"}), "immutable": True}, keep=["immutable"])
    api.update({**first, "data": {"k": "dw=="}})


@check("defaults/list-items-of-built-in-kinds-carry-no-kind")
def list_items(api: Api) -> None:
    api.create(configmap("a", {"k": "v"}))
    api.create(service("s"))
    api.create(deployment("d"))
    api.create(secret("x", {"k": "v"}))
    api.list("ConfigMap")
    api.list("Service")
    api.list("Deployment")
    api.list("Secret")


@check("defaults/list-items-of-a-custom-resource-carry-kind")
def list_isvc(api: Api) -> None:
    api.create(full_isvc("a"))
    api.list("InferenceService")
    unfinalize(api, "InferenceService", "a")


@check("defaults/configmap-data-and-binary-data")
def configmap_data(api: Api) -> None:
    api.create({**configmap("a", {"k": "v"}), "binaryData": {"b": "AAE="}})
    api.create({**configmap("b", {"k": "v"}), "binaryData": {"k": "AAE="}})
    api.create(configmap("c", {"bad key!": "v"}))
    first = api.create({**configmap("d", {"k": "v"}), "immutable": True}, keep=["immutable"])
    api.update({**first, "data": {"k": "w"}})


@check("defaults/unknown-fields-deep-in-a-pod-template")
def unknown_fields_deep(api: Api) -> None:
    manifest = deployment("d")
    container = _pod(manifest)["containers"][0]
    container["readinessProbe"] = {"httpGet": {"port": 8000, "extra": "x"}, "extra": 1}
    container["securityContext"] = {"runAsNonRoot": True, "extra": True}
    api.create(
        manifest,
        keep=["spec.template.spec.containers.0.readinessProbe", "spec.template.spec.containers.0.securityContext"],
    )
