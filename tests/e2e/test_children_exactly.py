"""Children are exactly the spec on a real API server (server-side apply), and what others add stays.

Covers: gpu 1 -> 0 removes the nvidia.com/gpu limit and removing nodeSelector and env removes
them from the Deployment (the real server's managedFields agree with the operator's field
sets); a sidecar injected into the pod template by a mutating admission policy on every write
and an annotation added with kubectl are kept, with zero operator writes over two resyncs, and
the operator's own change still lands; a Deployment an operator version before server-side
apply created (a POST, owned through an Update entry) is adopted and then loses removed fields.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from inference_operator.api.constants import FIELD_MANAGER
from inference_operator.api.models import InferenceService
from inference_operator.reconcile.builders import desired_deployment, desired_service

from .conftest import Cluster
from .harness import OperatorProcess, is_ready, wait_until

TIMEOUT = 90


def llama(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "serving.inference-operator.dev/v1",
        "kind": "InferenceService",
        "metadata": {"name": "llama"},
        "spec": {"image": "vllm/vllm-openai:v0.7.0", "model": "m", "replicas": 1, **spec},
    }


def converge(cluster: Cluster, namespace: str, **spec: Any) -> dict[str, Any]:
    cluster.kubectl.apply(llama(**spec), namespace)
    generation = cluster.kubectl.get("infsvc", "llama", namespace)["metadata"]["generation"]  # type: ignore[index]
    cluster.kubectl.wait_for(
        "infsvc",
        "llama",
        namespace,
        lambda o: is_ready(o) and o["status"]["observedGeneration"] == generation,
        what=f"generation {generation} to be Ready",
        timeout=TIMEOUT,
    )
    dep = cluster.kubectl.get("deployment", "llama", namespace)
    assert dep is not None
    return dep


def pod_spec(dep: dict[str, Any]) -> dict[str, Any]:
    return dict(dep["spec"]["template"]["spec"])


def server(dep: dict[str, Any]) -> dict[str, Any]:
    return dict(next(c for c in pod_spec(dep)["containers"] if c["name"] == "server"))


def test_removed_fields_disappear_from_the_deployment(cluster: Cluster, namespace: str) -> None:
    dep = converge(
        cluster, namespace, gpu=1, nodeSelector={"kubernetes.io/os": "linux"}, env=[{"name": "A", "value": "1"}]
    )
    assert server(dep)["resources"]["limits"] == {"nvidia.com/gpu": "1"} and server(dep)["env"]
    assert pod_spec(dep)["nodeSelector"] == {"kubernetes.io/os": "linux"}
    dep = converge(cluster, namespace, gpu=0, port=9000)
    assert "nvidia.com/gpu" not in (server(dep).get("resources") or {}).get("limits", {})
    assert [p["containerPort"] for p in server(dep)["ports"]] == [9000]
    service = cluster.kubectl.get("service", "llama", namespace)
    assert service is not None and [p["port"] for p in service["spec"]["ports"]] == [9000]
    assert "nodeSelector" not in pod_spec(dep) and "env" not in server(dep)


@pytest.fixture
def sidecar_policy(cluster: Cluster, namespace: str) -> Iterator[None]:
    """A MutatingAdmissionPolicy that injects a `proxy` container into Deployments of the test's
    namespace on every create and update, like a service mesh's webhook."""
    name = f"inject-proxy-{uuid.uuid4().hex[:6]}"
    cluster.kubectl.run("label", "namespace", namespace, f"inject={name}")
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "reinvocationPolicy": "Never",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": ["apps"],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["deployments"],
                    }
                ]
            },
            "matchConditions": [
                {
                    "name": "no-proxy-yet",
                    "expression": "!object.spec.template.spec.containers.exists(c, c.name == 'proxy')",
                }
            ],
            "mutations": [
                {
                    "patchType": "JSONPatch",
                    "jsonPatch": {
                        "expression": "[JSONPatch{op: 'add', path: '/spec/template/spec/containers/-', "
                        "value: {'name': 'proxy', 'image': 'envoy:1.30'}}]"
                    },
                }
            ],
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {
            "policyName": name,
            "matchResources": {"namespaceSelector": {"matchLabels": {"inject": name}}},
        },
    }
    cluster.kubectl.apply(policy)
    cluster.kubectl.apply(binding)
    try:
        yield
    finally:
        cluster.kubectl.run("delete", "mutatingadmissionpolicybinding", name, check=False)
        cluster.kubectl.run("delete", "mutatingadmissionpolicy", name, check=False)


def test_an_injected_sidecar_and_a_foreign_annotation_cost_no_writes(
    cluster: Cluster, namespace: str, operator: OperatorProcess, sidecar_policy: None
) -> None:
    attempts = iter(range(1000))

    def injected() -> bool:  # a fresh Deployment per attempt: a policy applies to new writes only
        name = f"probe-{next(attempts)}"
        cluster.kubectl.run("create", "deployment", name, "--image=x", "-n", namespace)
        dep = cluster.kubectl.get("deployment", name, namespace)
        return dep is not None and "proxy" in [c["name"] for c in pod_spec(dep)["containers"]]

    wait_until(injected, timeout=30, what="the sidecar policy to take effect")
    dep = converge(cluster, namespace)
    assert [c["name"] for c in pod_spec(dep)["containers"]] == ["server", "proxy"]
    # A Deployment's annotations count as spec (its generation moves): once the Deployment
    # controller has observed it, Ready again, the system is converged.
    cluster.kubectl.run("annotate", "deployment", "llama", "team=ml", "-n", namespace)
    cluster.kubectl.wait_for(
        "deployment",
        "llama",
        namespace,
        lambda d: d["status"].get("observedGeneration") == d["metadata"]["generation"],
        what="the Deployment controller to observe the annotation",
        timeout=TIMEOUT,
    )
    operator.wait_idle(reconciles_at_least=operator.stats()["reconcile_total"] + 1, timeout=30)
    cluster.kubectl.wait_for("infsvc", "llama", namespace, is_ready, what="Ready again", timeout=TIMEOUT)
    assert cluster.audit is not None, "the local control plane keeps an audit log"
    mark = cluster.audit.mark()
    operator.wait_idle(reconciles_at_least=operator.stats()["reconcile_total"] + 3, timeout=30)
    resyncs = operator.stats()["reconcile_total"]
    operator.wait_idle(reconciles_at_least=resyncs + 3, timeout=30)  # at least one more resync pass
    writes = [w for w in cluster.audit.operator_writes_since(mark) if w.endswith(f" {namespace}/llama")]
    assert writes == [], f"the operator fought over fields it does not own: {writes}"
    dep = converge(cluster, namespace, image="vllm/vllm-openai:v0.8.0")
    assert server(dep)["image"] == "vllm/vllm-openai:v0.8.0"
    assert [c["name"] for c in pod_spec(dep)["containers"]] == ["server", "proxy"]
    assert dep["metadata"]["annotations"]["team"] == "ml"


def test_a_child_made_before_server_side_apply_is_adopted_and_loses_removed_fields(
    cluster: Cluster, namespace: str, operator: OperatorProcess
) -> None:
    operator.stop()  # the older operator version is gone; its child stays
    try:
        cluster.kubectl.apply(llama(gpu=1), namespace)
        obj = cluster.kubectl.get("infsvc", "llama", namespace)
        assert obj is not None
        old = InferenceService.from_object(obj)
        for child in (desired_deployment(old), desired_service(old)):  # POSTs: owned through Update entries
            cluster.kubectl.run("create", "--field-manager", FIELD_MANAGER, "-f", "-", stdin=json.dumps(child))
    finally:
        operator.start()
    dep = converge(cluster, namespace, gpu=1)
    dep = cluster.kubectl.json("get", "deployment", "llama", "-n", namespace, "--show-managed-fields")
    ours = [e["operation"] for e in dep["metadata"]["managedFields"] if e["manager"] == FIELD_MANAGER]
    assert ours == ["Apply"], dep["metadata"]["managedFields"]
    dep = converge(cluster, namespace, gpu=0, port=9000)
    assert "nvidia.com/gpu" not in (server(dep).get("resources") or {}).get("limits", {})
    assert [p["containerPort"] for p in server(dep)["ports"]] == [9000]
    service = cluster.kubectl.get("service", "llama", namespace)
    assert service is not None and [p["port"] for p in service["spec"]["ports"]] == [9000]


def test_a_child_whose_owner_label_was_taken_off_gets_it_back(cluster: Cluster, namespace: str) -> None:
    converge(cluster, namespace)
    label = "serving.inference-operator.dev/inferenceservice"
    cluster.kubectl.run("label", "deployment", "llama", f"{label}-", "-n", namespace)
    cluster.kubectl.wait_for(
        "deployment",
        "llama",
        namespace,
        lambda d: d["metadata"].get("labels", {}).get(label) == "llama",
        what="the owner label to be put back (the label-selected watch reported the child as deleted)",
        timeout=TIMEOUT,
    )
