"""Invalid InferenceServices are rejected by the API server itself (schema and CEL rules),
with a message naming the field, and nothing is stored.

Covers: negative replicas, missing image, missing model, too many GPUs, port out of range,
--port/--model in args, duplicate env names, env with both value and valueFrom, a toleration
with Exists and a value, a bad quantity, an unknown field, a bad health path; names that
cannot become a Service (a dot, over 63 characters) are refused saying what is allowed, a
name starting with a digit is accepted (an RFC 1123 label, valid for a Service since 1.36); an
object named so before the rule existed (an upgraded CRD) still gets its status written and can
be deleted (the rule holds on create only).
"""

from __future__ import annotations

from typing import Any

import pytest

from inference_operator.api.crd import crd

from .conftest import Cluster
from .harness import condition, wait_until

BASE: dict[str, Any] = {"image": "vllm/vllm-openai:v0.7.0", "model": "m"}


def manifest(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "serving.inference-operator.dev/v1",
        "kind": "InferenceService",
        "metadata": {"name": "bad"},
        "spec": spec,
    }


@pytest.mark.parametrize(
    ("spec", "field", "words"),
    [
        ({**BASE, "replicas": -1}, "spec.replicas", "greater than or equal to 0"),
        ({"model": "m"}, "spec.image", "Required value"),
        ({"image": "i"}, "spec.model", "Required value"),
        ({**BASE, "gpu": 17}, "spec.gpu", "less than or equal to 16"),
        ({**BASE, "port": 0}, "spec.port", "greater than or equal to 1"),
        ({**BASE, "args": ["--port=9000"]}, "spec.args", "must not set --model or --port"),
        (
            {**BASE, "env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]},
            "spec.env",
            "env names must be unique",
        ),
        (
            {**BASE, "env": [{"name": "A", "value": "1", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]},
            "spec.env[0]",
            "either value or valueFrom",
        ),
        (
            {**BASE, "tolerations": [{"key": "k", "operator": "Exists", "value": "v"}]},
            "spec.tolerations[0]",
            "operator Exists must not set value",
        ),
        ({**BASE, "resources": {"limits": {"memory": "lots"}}}, "spec.resources.limits.memory", "should match"),
        ({**BASE, "serviceAccountName": "admin"}, "serviceAccountName", "unknown field"),
        ({**BASE, "healthPath": "health"}, "spec.healthPath", "should match"),
    ],
    ids=[
        "negative-replicas",
        "missing-image",
        "missing-model",
        "too-many-gpus",
        "port-zero",
        "reserved-args",
        "duplicate-env",
        "env-value-and-source",
        "toleration-exists-value",
        "bad-quantity",
        "unknown-field",
        "bad-health-path",
    ],
)
def test_invalid_objects_are_rejected_naming_the_field(
    cluster: Cluster, namespace: str, spec: dict[str, Any], field: str, words: str
) -> None:
    result = cluster.kubectl.apply(manifest(spec), namespace, check=False)
    assert result.returncode != 0, f"the API server accepted an invalid spec: {spec}"
    assert field in result.stderr and words in result.stderr, result.stderr
    assert cluster.kubectl.get("infsvc", "bad", namespace) is None


@pytest.mark.parametrize("name", ["llama-3.1-8b", "a" * 64], ids=["dotted", "64-characters"])
def test_a_name_that_cannot_become_a_service_is_refused_saying_what_is_allowed(
    cluster: Cluster, namespace: str, name: str
) -> None:
    obj = {**manifest(BASE), "metadata": {"name": name}}
    result = cluster.kubectl.apply(obj, namespace, check=False)
    assert result.returncode != 0, f"the API server accepted the name {name!r}"
    assert "metadata.name must be at most 63 characters of lowercase letters, digits and '-'" in result.stderr
    assert "(no dots)" in result.stderr, result.stderr
    assert cluster.kubectl.get("infsvc", name, namespace) is None


def test_a_name_starting_with_a_digit_is_accepted(cluster: Cluster, namespace: str) -> None:
    obj = {**manifest(BASE), "metadata": {"name": "7b"}}
    assert cluster.kubectl.apply(obj, namespace, check=False).returncode == 0
    assert cluster.kubectl.get("infsvc", "7b", namespace) is not None


def test_an_object_named_before_the_name_rule_existed_is_reported_and_can_be_deleted(
    cluster: Cluster, namespace: str
) -> None:
    """Upgrading the CRD must not trap old objects: the name rule holds on create only."""
    old = crd()
    old["spec"]["versions"][0]["schema"]["openAPIV3Schema"].pop("x-kubernetes-validations")
    try:
        cluster.kubectl.apply(old)
        wait_until(
            lambda: (
                cluster.kubectl.apply(
                    {**manifest(BASE), "metadata": {"name": "llama-3.1-8b"}}, namespace, check=False
                ).returncode
                == 0
            ),
            timeout=30,
            what="the CRD without the name rule to be served",
        )
    finally:
        cluster.kubectl.apply(crd())
    obj = cluster.kubectl.wait_for(
        "infsvc",
        "llama-3.1-8b",
        namespace,
        lambda o: condition(o, "Ready").get("reason") == "InvalidSpec",
        what="the operator's status write on the old object",
        timeout=60,
    )
    assert "metadata.name" in condition(obj, "Ready")["message"]
    cluster.kubectl.run("delete", "infsvc", "llama-3.1-8b", "-n", namespace, "--wait=false")
    cluster.kubectl.wait_gone("infsvc", "llama-3.1-8b", namespace, what="the old object to go", timeout=60)
