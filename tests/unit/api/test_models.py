"""API models and the CRD generated from them.

Covers: defaults, bounds, required fields, cross-field rules, validation messages naming the
field path (podSecurity only Baseline or Restricted, runAsUser never root, sharedMemory a positive
quantity), no
privilege-escalating fields in the spec, the generated CRD (structural schema:
no $ref / null / propertyNames; defaults; CEL rules; status and scale subresources; printer
columns; short name and category) and the drift check against deploy/crds/.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from inference_operator.api.crd import crd, crd_yaml
from inference_operator.api.models import InferenceServiceSpec, SpecError, parse_spec

ROOT = Path(__file__).resolve().parents[3]
CRD_FILE = ROOT / "deploy" / "crds" / "serving.inference-operator.dev_inferenceservices.yaml"
BASE = {"image": "vllm:0.7.0", "model": "Llama-3"}


def error_of(spec: Any) -> str:
    with pytest.raises(SpecError) as info:
        parse_spec(spec)
    return info.value.message


def test_defaults_fill_in_what_the_user_left_out() -> None:
    spec = parse_spec(BASE)
    assert (spec.replicas, spec.port, spec.gpu, spec.healthPath) == (1, 8000, 0, "/health")
    assert spec.loadBalancer.enabled is True
    assert spec.podSecurity is None and spec.runAsUser is None  # None: Baseline
    assert spec.args == [] and spec.env == [] and spec.nodeSelector == {} and spec.tolerations == []


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"model": "m"}, "spec.image: Required value"),
        ({"image": "i"}, "spec.model: Required value"),
        ({**BASE, "image": ""}, 'spec.image: Invalid value: "": spec.image in body should be at least 1 chars long'),
        (
            {**BASE, "replicas": -1},
            "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0",
        ),
        ({**BASE, "gpu": 17}, "spec.gpu: Invalid value: 17: spec.gpu in body should be less than or equal to 16"),
        (
            {**BASE, "port": 70000},
            "spec.port: Invalid value: 70000: spec.port in body should be less than or equal to 65535",
        ),
        (
            {**BASE, "replicas": "two"},
            'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"',
        ),
        (
            {**BASE, "healthPath": "health"},
            "spec.healthPath: Invalid value: \"health\": spec.healthPath in body should match '^/'",
        ),
        (
            {**BASE, "resources": {"limits": {"memory": "lots"}}},
            "spec.resources.limits.memory: 'lots' is not a valid quantity",
        ),
        ({**BASE, "resources": {"limits": {"nvidia.com/gpu": 1}}}, "spec.resources.limits.nvidia.com/gpu"),
        ({**BASE, "args": ["--port=9000"]}, "spec.args: args must not set --model or --port"),
        ({**BASE, "args": ["--model", "x"]}, "spec.args: args must not set --model or --port"),
        (
            {**BASE, "env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]},
            "spec.env: env names must be unique",
        ),
        (
            {**BASE, "env": [{"name": "A", "value": "1", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]},
            "spec.env[0]: set either value or valueFrom, not both",
        ),
        (
            {**BASE, "env": [{"name": "A", "valueFrom": {}}]},
            "spec.env[0].valueFrom: set exactly one of secretKeyRef or configMapKeyRef",
        ),
        (
            {**BASE, "tolerations": [{"key": "k", "operator": "Exists", "value": "v"}]},
            "spec.tolerations[0]: a toleration with operator Exists must not set value",
        ),
        ({**BASE, "serviceAccountName": "admin"}, "spec.serviceAccountName: field not declared in schema"),
        ({**BASE, "hostNetwork": True}, "spec.hostNetwork: field not declared in schema"),
        (
            {**BASE, "podSecurity": "Privileged"},
            'spec.podSecurity: Unsupported value: "Privileged": supported values: "Baseline", "Restricted"',
        ),
        (
            {**BASE, "runAsUser": 0},
            "spec.runAsUser: Invalid value: 0: spec.runAsUser in body should be greater than or equal to 1",
        ),
        (
            {**BASE, "runAsUser": 2**31},
            "spec.runAsUser: Invalid value: 2147483648: spec.runAsUser in body should be less than or equal to "
            "2147483647",
        ),
        ({**BASE, "sharedMemory": "0Gi"}, "spec.sharedMemory: sharedMemory must be more than 0"),
        ({**BASE, "sharedMemory": "-1Gi"}, "spec.sharedMemory: '-1Gi' is not a valid quantity"),
        ({**BASE, "sharedMemory": "lots"}, "spec.sharedMemory: 'lots' is not a valid quantity"),
        ("not-a-map", "spec: must be an object"),
    ],
)
def test_invalid_specs_are_rejected_with_the_field_named(spec: Any, expected: str) -> None:
    assert expected in error_of(spec)


def test_every_problem_is_reported_at_once() -> None:
    message = error_of({"image": "", "replicas": -2})
    assert "spec.image" in message and "spec.model" in message and "spec.replicas" in message


def test_spec_exposes_no_way_to_escalate_privilege() -> None:
    forbidden = {
        "serviceAccountName",
        "hostPath",
        "privileged",
        "hostNetwork",
        "hostPID",
        "securityContext",
        "podSpec",
        "volumes",
        "command",
    }
    assert not forbidden & set(InferenceServiceSpec.model_fields)


def walk(node: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    out = []
    if isinstance(node, dict):
        out.append((path, node))
        for k, v in node.items():
            out.extend(walk(v, f"{path}.{k}"))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out.extend(walk(v, f"{path}[{i}]"))
    return out


def schema() -> dict[str, Any]:
    s: dict[str, Any] = crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return s


def test_crd_schema_is_structural() -> None:
    for path, node in walk(schema()):
        assert "$ref" not in node and "$defs" not in node and "propertyNames" not in node, path
        assert node.get("type") != "null" and "title" not in node, path
        if "anyOf" in node:
            assert node.get("x-kubernetes-int-or-string") is True, path
            assert node["anyOf"] == [{"type": "integer"}, {"type": "string"}], path


def test_crd_schema_carries_defaults_bounds_and_required_fields() -> None:
    spec = schema()["properties"]["spec"]
    assert spec["required"] == ["image", "model"]
    props = spec["properties"]
    assert props["replicas"] == {**props["replicas"], "default": 1, "minimum": 0}
    assert props["gpu"]["maximum"] == 16 and props["port"]["default"] == 8000
    assert props["loadBalancer"]["default"] == {}
    assert props["loadBalancer"]["properties"]["enabled"]["default"] is True
    assert set(props["resources"]["properties"]["limits"]["properties"]) == {"cpu", "memory", "ephemeral-storage"}


def test_crd_schema_has_cel_rules_for_cross_field_constraints() -> None:
    rules = [r["rule"] for _, node in walk(schema()) for r in node.get("x-kubernetes-validations", [])]
    assert any("--port" in r for r in rules)
    assert any("exists_one" in r for r in rules)
    assert any("valueFrom" in r for r in rules)
    assert any("Exists" in r for r in rules)


def test_crd_has_status_and_scale_subresources() -> None:
    version = crd()["spec"]["versions"][0]
    assert version["subresources"] == {
        "status": {},
        "scale": {
            "specReplicasPath": ".spec.replicas",
            "statusReplicasPath": ".status.replicas",
            "labelSelectorPath": ".status.selector",
        },
    }
    assert version["served"] and version["storage"]


def test_crd_prints_ready_replicas_model_phase_and_rollout_columns() -> None:
    columns = crd()["spec"]["versions"][0]["additionalPrinterColumns"]
    assert [c["name"] for c in columns if "priority" not in c] == [
        "Ready",
        "Replicas",
        "Available",
        "Model",
        "Phase",
        "Rollout",
        "Age",
    ]
    assert next(c for c in columns if c["name"] == "Rollout")["jsonPath"] == ".status.rollout.plan"
    assert [c["name"] for c in columns if c.get("priority") == 1] == ["URL", "Image"]


def test_crd_names_short_name_and_category() -> None:
    names = crd()["spec"]["names"]
    assert names["shortNames"] == ["infsvc"] and names["categories"] == ["inference"]
    assert crd()["metadata"]["name"] == "inferenceservices.serving.inference-operator.dev"


def test_status_conditions_are_a_map_list_keyed_by_type() -> None:
    conditions = schema()["properties"]["status"]["properties"]["conditions"]
    assert conditions["x-kubernetes-list-type"] == "map"
    assert conditions["x-kubernetes-list-map-keys"] == ["type"]
    assert "type" in conditions["items"]["required"]


def test_checked_in_crd_matches_the_models() -> None:
    assert CRD_FILE.read_text() == crd_yaml(), "deploy/crds is stale: run `make crd`"
    assert yaml.safe_load(CRD_FILE.read_text()) == crd()


def test_the_name_rule_holds_on_create_only_so_old_objects_can_still_be_written() -> None:
    schema = crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    (rule,) = schema["x-kubernetes-validations"]
    assert rule["optionalOldSelf"] is True and rule["rule"].startswith("oldSelf.hasValue() || (")
    assert rule["message"].startswith("metadata.name must be at most 63 characters")
