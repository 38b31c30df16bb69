"""Pure builders of the Deployment and Service.

Covers: owner reference (controller, blockOwnerDeletion), labels, selector, GPU limits,
container port and args from model/port/args, probes on the health path with a generous
startup budget, env / nodeSelector / tolerations / resources passed through, the restricted
security context, ``podSecurity``: Baseline leaves the pod's security context out (existing
templates unchanged), Restricted adds a non-root user and the RuntimeDefault seccomp profile,
``runAsUser`` sets the user id; /dev/shm is a memory-backed emptyDir, limited to
``sharedMemory`` when set and without a limit of its own otherwise (the template as it always was);
no empty fields emitted, the Service shape and the URL.
"""

from __future__ import annotations

from typing import Any

from inference_operator.api.constants import FINALIZER, GPU_RESOURCE, OWNER_LABEL
from inference_operator.api.models import InferenceService
from inference_operator.api.samples import make_inference_service
from inference_operator.reconcile.builders import (
    STARTUP_FAILURE_THRESHOLD,
    STARTUP_PERIOD_SECONDS,
    desired_deployment,
    desired_service,
    service_url,
)


def isvc(**spec: Any) -> InferenceService:
    obj = make_inference_service("llama", image="vllm:0.7.0", model="meta/Llama-3", namespace="ml", **spec)
    obj["metadata"].update(uid="uid-1", generation=3, finalizers=[FINALIZER])
    return InferenceService.from_object(obj)


def container(dep: dict[str, Any]) -> dict[str, Any]:
    c: dict[str, Any] = dep["spec"]["template"]["spec"]["containers"][0]
    return c


def test_children_are_controlled_by_the_inference_service() -> None:
    for child in (desired_deployment(isvc()), desired_service(isvc())):
        (ref,) = child["metadata"]["ownerReferences"]
        assert ref == {
            "apiVersion": "serving.inference-operator.dev/v1",
            "kind": "InferenceService",
            "name": "llama",
            "uid": "uid-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
        assert child["metadata"]["name"] == "llama" and child["metadata"]["namespace"] == "ml"


def test_children_carry_the_owner_and_standard_labels() -> None:
    labels = desired_deployment(isvc())["metadata"]["labels"]
    assert labels == {
        OWNER_LABEL: "llama",
        "app.kubernetes.io/managed-by": "inference-operator",
        "app.kubernetes.io/name": "llama",
    }
    dep = desired_deployment(isvc())
    assert dep["spec"]["selector"] == {"matchLabels": {OWNER_LABEL: "llama"}}
    assert dep["spec"]["template"]["metadata"]["labels"][OWNER_LABEL] == "llama"
    assert desired_service(isvc())["spec"]["selector"] == {OWNER_LABEL: "llama"}


def test_gpu_count_becomes_an_nvidia_gpu_limit() -> None:
    assert container(desired_deployment(isvc(gpu=4)))["resources"]["limits"][GPU_RESOURCE] == "4"
    assert "resources" not in container(desired_deployment(isvc(gpu=0)))


def test_model_and_port_become_server_arguments_before_user_args() -> None:
    c = container(desired_deployment(isvc(port=9000, args=["--max-model-len", "8192"])))
    assert c["args"] == ["--model", "meta/Llama-3", "--port", "9000", "--max-model-len", "8192"]
    assert c["ports"] == [{"name": "http", "containerPort": 9000, "protocol": "TCP"}]


def test_probes_use_the_health_path_and_allow_long_model_loads() -> None:
    c = container(desired_deployment(isvc(healthPath="/v2/health/ready")))
    assert c["readinessProbe"]["httpGet"] == {"path": "/v2/health/ready", "port": "http", "scheme": "HTTP"}
    startup = c["startupProbe"]
    assert startup["httpGet"]["path"] == "/v2/health/ready"
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 30 * 60
    assert (startup["periodSeconds"], startup["failureThreshold"]) == (
        STARTUP_PERIOD_SECONDS,
        STARTUP_FAILURE_THRESHOLD,
    )


def test_env_node_selector_tolerations_and_resources_pass_through() -> None:
    spec = {
        "env": [
            {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}},
            {"name": "VLLM_LOGGING_LEVEL", "value": "DEBUG"},
        ],
        "nodeSelector": {"nvidia.com/gpu.product": "H100"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "resources": {"requests": {"cpu": 4, "memory": "32Gi"}, "limits": {"memory": "64Gi"}},
        "gpu": 1,
    }
    dep = desired_deployment(isvc(**spec))
    pod, c = dep["spec"]["template"]["spec"], container(dep)
    assert c["env"] == [
        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}},
        {"name": "VLLM_LOGGING_LEVEL", "value": "DEBUG"},
    ]
    assert pod["nodeSelector"] == {"nvidia.com/gpu.product": "H100"}
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert c["resources"] == {"requests": {"cpu": 4, "memory": "32Gi"}, "limits": {"memory": "64Gi", GPU_RESOURCE: "1"}}


def test_server_container_runs_with_a_restricted_security_context() -> None:
    dep = desired_deployment(isvc())
    assert container(dep)["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    pod = dep["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False
    assert "serviceAccountName" not in pod and "hostNetwork" not in pod
    assert all("hostPath" not in v for v in pod["volumes"])


def test_baseline_pod_security_leaves_the_pod_template_as_it_always_was() -> None:
    pod = desired_deployment(isvc())["spec"]["template"]["spec"]
    assert "securityContext" not in pod
    assert desired_deployment(isvc(podSecurity="Baseline")) == desired_deployment(isvc())


def test_restricted_pod_security_asks_for_a_non_root_user_and_the_default_seccomp_profile() -> None:
    dep = desired_deployment(isvc(podSecurity="Restricted"))
    assert dep["spec"]["template"]["spec"]["securityContext"] == {
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert container(dep)["securityContext"]["allowPrivilegeEscalation"] is False
    assert container(dep)["securityContext"]["capabilities"] == {"drop": ["ALL"]}


def test_run_as_user_sets_the_pods_user_id_with_either_pod_security_level() -> None:
    restricted = desired_deployment(isvc(podSecurity="Restricted", runAsUser=1000))["spec"]["template"]["spec"]
    assert restricted["securityContext"]["runAsUser"] == 1000
    assert restricted["securityContext"]["runAsNonRoot"] is True
    baseline = desired_deployment(isvc(runAsUser=1000))["spec"]["template"]["spec"]
    assert baseline["securityContext"] == {"runAsUser": 1000}


def test_shared_memory_is_a_memory_backed_dev_shm_limited_to_spec_shared_memory() -> None:
    dep = desired_deployment(isvc(sharedMemory="16Gi"))
    assert dep["spec"]["template"]["spec"]["volumes"] == [
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}}
    ]
    assert container(dep)["volumeMounts"] == [{"name": "dshm", "mountPath": "/dev/shm"}]


def test_without_shared_memory_dev_shm_has_no_limit_of_its_own_as_it_always_had() -> None:
    (volume,) = desired_deployment(isvc())["spec"]["template"]["spec"]["volumes"]
    assert volume == {"name": "dshm", "emptyDir": {"medium": "Memory"}}


def test_builders_emit_no_empty_lists_or_maps() -> None:
    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            assert node or path.endswith("securityContext"), f"empty map at {path}"
            for k, v in node.items():
                walk(v, f"{path}.{k}")
        elif isinstance(node, list):
            assert node, f"empty list at {path}"
            for i, v in enumerate(node):
                walk(v, f"{path}[{i}]")

    walk(desired_deployment(isvc()), "deployment")
    walk(desired_service(isvc()), "service")


def test_service_targets_the_named_container_port() -> None:
    svc = desired_service(isvc(port=9000))
    assert svc["spec"]["type"] == "ClusterIP"
    assert svc["spec"]["ports"] == [{"name": "http", "port": 9000, "targetPort": "http", "protocol": "TCP"}]
    assert service_url(isvc(port=9000)) == "http://llama.ml.svc.cluster.local:9000"


def test_builders_are_pure() -> None:
    one = isvc(gpu=2, args=["--x"])
    assert desired_deployment(one) == desired_deployment(one)
    first = desired_deployment(one)
    first["spec"]["template"]["spec"]["containers"][0]["args"].append("--mutated")
    assert "--mutated" not in desired_deployment(one)["spec"]["template"]["spec"]["containers"][0]["args"]
