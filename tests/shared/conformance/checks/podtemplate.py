"""Validation of the pod template, for every field the operator writes into a Deployment from the
spec: resources, tolerations, node selectors, env, args, container ports, probes, the container
itself; and of the Service's ports and type, including a NodePort Service put back to ClusterIP.

Each check creates one Deployment (or Service) whose pod template differs from a valid one in one
place. Refused: the code, the reason and the ``field: error type`` pairs are compared. Accepted:
the pod spec as stored (defaults and canonical quantities included).
"""

from __future__ import annotations

import copy
from typing import Any

from ..objects import deployment, service
from ..recorder import Api
from ..registry import check

Obj = dict[str, Any]
STORED = ["spec.template.spec"]


def _register(name: str, pod: Obj, container: Obj) -> None:
    """The check ``podtemplate/<name>``: the valid Deployment with ``pod`` merged into its pod spec
    and ``container`` into its container (a key set to None is removed)."""

    def run(api: Api) -> None:
        manifest = deployment("d")
        spec = manifest["spec"]["template"]["spec"]
        for key, value in copy.deepcopy(container).items():
            if value is None:
                spec["containers"][0].pop(key, None)
            else:
                spec["containers"][0][key] = value
        spec.update(copy.deepcopy(pod))
        api.create(manifest, keep=STORED)

    check(f"podtemplate/{name}")(run)


def _container(check_name: str, /, **fields: Any) -> None:
    _register(check_name, {}, fields)


def _pod(check_name: str, /, **fields: Any) -> None:
    _register(check_name, fields, {})


GPU = "nvidia.com/gpu"

# -- resources: quantities, signs, requests <= limits, extended resources ----------------------
_container(
    "resources-valid-canonical-quantities",
    resources={"limits": {"cpu": 0.5, "memory": "1Gi"}, "requests": {"cpu": "250m", "memory": "1e3"}},
)
_container(
    "resources-limits-alone-stay-alone-in-a-template", resources={"limits": {"cpu": "2", "memory": "4Gi", GPU: 1}}
)
_container("resources-cpu-request-above-limit", resources={"limits": {"cpu": "1"}, "requests": {"cpu": "2"}})
_container(
    "resources-memory-request-above-limit", resources={"limits": {"memory": "1Gi"}, "requests": {"memory": "2Gi"}}
)
_container("resources-negative-cpu-limit", resources={"limits": {"cpu": "-1"}})
_container("resources-negative-memory-request", resources={"requests": {"memory": "-1Mi"}})
_container("resources-negative-integer-cpu-request", resources={"requests": {"cpu": -1}})
_container("resources-malformed-quantity", resources={"limits": {"cpu": "1x"}})
_container("resources-gpu-fraction", resources={"limits": {GPU: "0.5"}})
_container("resources-gpu-requests-differ-from-limits", resources={"limits": {GPU: 1}, "requests": {GPU: 2}})
_container("resources-gpu-request-without-limit", resources={"requests": {GPU: 1}})
_container("resources-gpu-zero", resources={"limits": {GPU: 0}})
_container("resources-unknown-standard-name", resources={"limits": {"cpus": "1"}})
_container("resources-zero-cpu-request-with-limit", resources={"limits": {"cpu": "1"}, "requests": {"cpu": "0"}})
_container("resources-ephemeral-storage", resources={"limits": {"ephemeral-storage": "10Gi"}})

# -- tolerations ---------------------------------------------------------------------------------
_pod(
    "tolerations-valid-equal",
    tolerations=[{"key": "pool", "operator": "Equal", "value": "h100", "effect": "NoSchedule"}],
)
_pod("tolerations-valid-exists-everything", tolerations=[{"operator": "Exists"}])
_pod(
    "tolerations-valid-noexecute-seconds",
    tolerations=[{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}],
)
_pod("tolerations-default-operator-is-equal", tolerations=[{"key": "k", "value": "v"}])
_pod("tolerations-equal-without-key", tolerations=[{"operator": "Equal", "value": "v"}])
_pod("tolerations-exists-with-value", tolerations=[{"key": "k", "operator": "Exists", "value": "v"}])
_pod(
    "tolerations-seconds-on-noschedule",
    tolerations=[{"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}],
)
_pod("tolerations-seconds-without-effect", tolerations=[{"key": "k", "operator": "Exists", "tolerationSeconds": 5}])
_pod(
    "tolerations-negative-seconds",
    tolerations=[{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": -5}],
)
_pod("tolerations-unknown-operator", tolerations=[{"key": "k", "operator": "In", "value": "v"}])
_pod("tolerations-unknown-effect", tolerations=[{"key": "k", "operator": "Exists", "effect": "Sometimes"}])
_pod("tolerations-key-not-a-label-key", tolerations=[{"key": "bad key", "operator": "Exists"}])
_pod("tolerations-value-not-a-label-value", tolerations=[{"key": "k", "operator": "Equal", "value": "has space"}])
_pod("tolerations-prefixed-key", tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])

# -- node selector -------------------------------------------------------------------------------
_pod("nodeselector-valid", nodeSelector={"pool": "h100", "kubernetes.io/hostname": "node-1", "empty": ""})
_pod("nodeselector-key-with-space", nodeSelector={"bad key": "v"})
_pod("nodeselector-key-bad-prefix", nodeSelector={"Bad_Prefix/x": "v"})
_pod("nodeselector-key-too-long", nodeSelector={"k" * 64: "v"})
_pod("nodeselector-value-with-space", nodeSelector={"pool": "has space"})
_pod("nodeselector-value-too-long", nodeSelector={"pool": "v" * 64})
_pod("nodeselector-value-bad-edge", nodeSelector={"pool": "-h100"})

# -- env -----------------------------------------------------------------------------------------
_container(
    "env-valid-sources",
    env=[
        {"name": "A", "value": "b"},
        {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
        {"name": "CM", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k.v_1-2"}}},
        {"name": "S", "valueFrom": {"secretKeyRef": {"name": "s", "key": "token", "optional": True}}},
    ],
)
_container("env-name-empty", env=[{"name": "", "value": "v"}])
_container("env-name-with-equals", env=[{"name": "A=B", "value": "v"}])
_container("env-name-starting-with-digit", env=[{"name": "1A", "value": "v"}])
_container("env-name-with-space", env=[{"name": "A B", "value": "v"}])
_container("env-duplicate-names", env=[{"name": "A", "value": "1"}, {"name": "A", "value": "2"}])
_container(
    "env-value-and-value-from",
    env=[{"name": "A", "value": "v", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
)
_container(
    "env-two-sources",
    env=[
        {
            "name": "A",
            "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}, "secretKeyRef": {"name": "s", "key": "k"}},
        }
    ],
)
_container("env-empty-value-from", env=[{"name": "A", "valueFrom": {}}])
_container(
    "env-configmap-key-invalid", env=[{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "bad key!"}}}]
)
_container("env-configmap-key-missing", env=[{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "c"}}}])
_container("env-configmap-name-missing", env=[{"name": "A", "valueFrom": {"configMapKeyRef": {"key": "k"}}}])
_container("env-secret-key-invalid", env=[{"name": "A", "valueFrom": {"secretKeyRef": {"name": "s", "key": "a/b"}}}])
_container(
    "env-secret-name-invalid", env=[{"name": "A", "valueFrom": {"secretKeyRef": {"name": "Bad_Name", "key": "k"}}}]
)
_container(
    "env-field-path-unsupported", env=[{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "spec.containers"}}}]
)
_container(
    "env-field-path-label", env=[{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}}]
)
_container(
    "env-resource-unsupported",
    env=[{"name": "A", "valueFrom": {"resourceFieldRef": {"resource": "limits.nvidia.com/gpu"}}}],
)

# -- args and command ----------------------------------------------------------------------------
_container("args-valid-with-empty-and-unicode", args=["--model", "", "--served-model-name", "llama-3 — 8b"])
_container("args-and-command", command=["python", "-m", "server"], args=["--port", "8000"])

# -- container ports -----------------------------------------------------------------------------
_container(
    "ports-valid",
    ports=[{"name": "http", "containerPort": 8000}, {"name": "metrics", "containerPort": 9090, "protocol": "TCP"}],
)
_container("ports-zero", ports=[{"containerPort": 0}])
_container("ports-too-high", ports=[{"containerPort": 70000}])
_container("ports-name-too-long", ports=[{"name": "a-very-long-port-name", "containerPort": 8000}])
_container("ports-name-uppercase", ports=[{"name": "HTTP", "containerPort": 8000}])
_container("ports-name-only-digits", ports=[{"name": "8000", "containerPort": 8000}])
_container(
    "ports-duplicate-names", ports=[{"name": "http", "containerPort": 8000}, {"name": "http", "containerPort": 8001}]
)
_container("ports-duplicate-numbers", ports=[{"containerPort": 8000}, {"containerPort": 8000}])
_container("ports-unknown-protocol", ports=[{"containerPort": 8000, "protocol": "HTTP"}])

# -- probes --------------------------------------------------------------------------------------
_container(
    "probes-valid",
    readinessProbe={"httpGet": {"path": "/health", "port": "http"}},
    ports=[{"name": "http", "containerPort": 8000}],
    startupProbe={"httpGet": {"path": "/health", "port": 8000}, "failureThreshold": 60, "periodSeconds": 10},
)
_container("probes-no-handler", readinessProbe={"periodSeconds": 5})
_container("probes-two-handlers", readinessProbe={"httpGet": {"port": 8000}, "tcpSocket": {"port": 8000}})
_container("probes-http-port-zero", readinessProbe={"httpGet": {"port": 0}})
_container("probes-http-port-bad-name", readinessProbe={"httpGet": {"port": "Not_A_Name"}})
_container("probes-negative-period", readinessProbe={"httpGet": {"port": 8000}, "periodSeconds": -1})
_container("probes-liveness-success-threshold", livenessProbe={"tcpSocket": {"port": 8000}, "successThreshold": 2})
_container("probes-startup-success-threshold", startupProbe={"tcpSocket": {"port": 8000}, "successThreshold": 2})
_container("probes-negative-initial-delay", livenessProbe={"tcpSocket": {"port": 8000}, "initialDelaySeconds": -1})
_container("probes-http-path-relative", readinessProbe={"httpGet": {"path": "health", "port": 8000}})

# -- the container itself ------------------------------------------------------------------------
_container("container-name-uppercase", name="Server")
_container("container-image-with-spaces", image=" registry.local/server:1 ")
_container("container-image-missing", image=None)
_pod("container-duplicate-names", containers=[{"name": "s", "image": "i"}, {"name": "s", "image": "j"}])


# -- the Service ---------------------------------------------------------------------------------
@check("podtemplate/service-node-port-back-to-cluster-ip-drops-it")
def service_node_port_back(api: Api) -> None:
    manifest = service("s")
    manifest["spec"]["type"] = "NodePort"
    api.create(manifest, keep=[])
    api.patch("Service", "s", {"spec": {"type": "ClusterIP"}}, keep=["spec.ports", "spec.type"])
    api.get("Service", "s", keep=["spec.ports"])


@check("podtemplate/service-node-port-on-cluster-ip")
def service_node_port_on_cluster_ip(api: Api) -> None:
    manifest = service("s")
    manifest["spec"]["ports"][0]["nodePort"] = 30123
    api.create(manifest, keep=["spec.ports"])


@check("podtemplate/service-target-port-zero")
def service_target_port_zero(api: Api) -> None:
    manifest = service("s")
    manifest["spec"]["ports"][0]["targetPort"] = 0
    api.create(manifest, keep=["spec.ports"])


@check("podtemplate/service-target-port-bad-name")
def service_target_port_bad_name(api: Api) -> None:
    manifest = service("s")
    manifest["spec"]["ports"][0]["targetPort"] = "Not_A_Name"
    api.create(manifest, keep=["spec.ports"])
