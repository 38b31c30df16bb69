"""Pure builders of the children an InferenceService owns: a Deployment and a Service.

No I/O here: given the parsed InferenceService, return the manifest the operator wants to
exist. The reconciler compares only these fields with the live object (see ``compare.py``),
so everything emitted must be in the form the API server stores it (no empty lists or maps).
"""

from __future__ import annotations

from typing import Any

from inference_operator.api.constants import (
    API_VERSION,
    DEPLOYMENT,
    DEPLOYMENT_API_VERSION,
    GPU_RESOURCE,
    KIND,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    NAME_LABEL,
    OWNER_LABEL,
    SERVICE,
    SERVICE_API_VERSION,
)
from inference_operator.api.models import InferenceService, InferenceServiceSpec

CONTAINER_NAME = "server"
PORT_NAME = "http"
SHM_VOLUME = "dshm"
READINESS_PERIOD_SECONDS = 10
STARTUP_PERIOD_SECONDS = 10
# A 70B model can take tens of minutes to download and load; the startup probe must not kill it.
STARTUP_FAILURE_THRESHOLD = 180
POD_SECURITY_RESTRICTED = "Restricted"


def selector_labels(name: str) -> dict[str, str]:
    """The labels that select an InferenceService's pods; immutable once the Deployment exists."""
    return {OWNER_LABEL: name}


def selector_string(name: str) -> str:
    return ",".join(f"{k}={v}" for k, v in selector_labels(name).items())


def child_labels(name: str) -> dict[str, str]:
    return {OWNER_LABEL: name, MANAGED_BY_LABEL: MANAGED_BY, NAME_LABEL: name}


def owner_reference(isvc: InferenceService) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "name": isvc.name,
        "uid": isvc.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _child_metadata(isvc: InferenceService) -> dict[str, Any]:
    return {
        "name": isvc.name,
        "namespace": isvc.namespace,
        "labels": child_labels(isvc.name),
        "ownerReferences": [owner_reference(isvc)],
    }


def _resources(spec: InferenceServiceSpec) -> dict[str, Any]:
    out: dict[str, dict[str, Any]] = {}
    if spec.resources is not None:
        if spec.resources.requests:
            out["requests"] = {str(k): v for k, v in spec.resources.requests.items()}
        if spec.resources.limits:
            out["limits"] = {str(k): v for k, v in spec.resources.limits.items()}
    if spec.gpu:
        out.setdefault("limits", {})[GPU_RESOURCE] = str(spec.gpu)
    return out


def _env(spec: InferenceServiceSpec) -> list[dict[str, Any]]:
    return [e.model_dump(exclude_none=True) for e in spec.env]


def _probe(spec: InferenceServiceSpec, *, period: int, failure_threshold: int) -> dict[str, Any]:
    return {
        "httpGet": {"path": spec.healthPath, "port": PORT_NAME, "scheme": "HTTP"},
        "periodSeconds": period,
        "failureThreshold": failure_threshold,
    }


def server_container(spec: InferenceServiceSpec) -> dict[str, Any]:
    """The inference server container, with a restricted security context."""
    container: dict[str, Any] = {
        "name": CONTAINER_NAME,
        "image": spec.image,
        "args": ["--model", spec.model, "--port", str(spec.port), *spec.args],
        "ports": [{"name": PORT_NAME, "containerPort": spec.port, "protocol": "TCP"}],
        "readinessProbe": _probe(spec, period=READINESS_PERIOD_SECONDS, failure_threshold=3),
        "startupProbe": _probe(spec, period=STARTUP_PERIOD_SECONDS, failure_threshold=STARTUP_FAILURE_THRESHOLD),
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        # Tensor-parallel workers exchange data through shared memory; the default 64 MiB is too small.
        "volumeMounts": [{"name": SHM_VOLUME, "mountPath": "/dev/shm"}],
    }
    if env := _env(spec):
        container["env"] = env
    if resources := _resources(spec):
        container["resources"] = resources
    return container


def shared_memory_volume(spec: InferenceServiceSpec) -> dict[str, Any]:
    """/dev/shm: memory-backed, limited to ``spec.sharedMemory`` when set (unset: no limit of its
    own, as before the field existed, so an existing Deployment does not roll)."""
    empty_dir: dict[str, Any] = {"medium": "Memory"}
    if spec.sharedMemory is not None:
        empty_dir["sizeLimit"] = spec.sharedMemory
    return {"name": SHM_VOLUME, "emptyDir": empty_dir}


def pod_security_context(spec: InferenceServiceSpec) -> dict[str, Any]:
    """The pod's security context: empty for Baseline (the template of every existing object
    stays as it was, so nothing rolls), the restricted standard's non-root user and seccomp
    profile for Restricted. The container's own context already drops everything else."""
    context: dict[str, Any] = {}
    if spec.podSecurity == POD_SECURITY_RESTRICTED:
        context["runAsNonRoot"] = True
        context["seccompProfile"] = {"type": "RuntimeDefault"}
    if spec.runAsUser is not None:
        context["runAsUser"] = spec.runAsUser
    return context


def pod_template(isvc: InferenceService) -> dict[str, Any]:
    """The pod template of the Deployment: what a change of it rolls out."""
    spec = isvc.spec
    pod_spec: dict[str, Any] = {
        "containers": [server_container(spec)],
        # The server needs no Kubernetes API access; don't hand it a token.
        "automountServiceAccountToken": False,
        # Service env vars like VLLM_PORT=tcp://… collide with the server's own settings.
        "enableServiceLinks": False,
        "volumes": [shared_memory_volume(spec)],
    }
    if security := pod_security_context(spec):
        pod_spec["securityContext"] = security
    if spec.nodeSelector:
        pod_spec["nodeSelector"] = dict(spec.nodeSelector)
    if spec.tolerations:
        pod_spec["tolerations"] = [t.model_dump(exclude_none=True) for t in spec.tolerations]
    return {"metadata": {"labels": child_labels(isvc.name)}, "spec": pod_spec}


def desired_deployment(
    isvc: InferenceService,
    *,
    template: dict[str, Any] | None = None,
    strategy: dict[str, Any] | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The Deployment that runs the inference server replicas; ``template`` is
    :func:`pod_template` when the caller has it already, ``strategy`` and ``annotations`` the
    rollout plan's (none: the Deployment's default strategy)."""
    spec = isvc.spec
    metadata = _child_metadata(isvc)
    if annotations:
        metadata["annotations"] = dict(annotations)
    deployment_spec: dict[str, Any] = {
        "replicas": spec.replicas,
        "selector": {"matchLabels": selector_labels(isvc.name)},
        "progressDeadlineSeconds": spec.progressDeadlineSeconds,
        "template": pod_template(isvc) if template is None else template,
    }
    if strategy is not None:
        deployment_spec["strategy"] = strategy
    return {
        "apiVersion": DEPLOYMENT_API_VERSION,
        "kind": DEPLOYMENT,
        "metadata": metadata,
        "spec": deployment_spec,
    }


def desired_service(isvc: InferenceService) -> dict[str, Any]:
    """The ClusterIP Service in front of the server pods."""
    return {
        "apiVersion": SERVICE_API_VERSION,
        "kind": SERVICE,
        "metadata": _child_metadata(isvc),
        "spec": {
            "type": "ClusterIP",
            "selector": selector_labels(isvc.name),
            "ports": [{"name": PORT_NAME, "port": isvc.spec.port, "targetPort": PORT_NAME, "protocol": "TCP"}],
        },
    }


def service_address(isvc: InferenceService) -> str:
    """``host:port`` of the Service inside the cluster: what the load balancer forwards to."""
    return f"{isvc.name}.{isvc.namespace}.svc.cluster.local:{isvc.spec.port}"


def service_url(isvc: InferenceService) -> str:
    return f"http://{service_address(isvc)}"
