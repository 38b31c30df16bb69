"""The finalizer admission policy shipped in deploy/admission, statically (the e2e suite runs it).

Covers: it names the operator's own finalizer, API group and plural (the constants, not copies
that could drift); it matches CREATE only (never the update that removes a finalizer, never a
delete); it can never block a create (failurePolicy Ignore); it is skipped when the finalizer
is already there and otherwise adds it without dropping finalizers a user set; its binding
points at it; the kustomization installs it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from inference_operator.api.constants import FINALIZER, GROUP, PLURAL

ROOT = Path(__file__).resolve().parents[2]
POLICY_FILE = ROOT / "deploy" / "admission" / "finalizer-policy.yaml"


def shipped() -> dict[str, dict[str, Any]]:
    return {doc["kind"]: doc for doc in yaml.safe_load_all(POLICY_FILE.read_text()) if doc}


def test_the_policy_matches_creates_of_inference_services_only() -> None:
    spec = shipped()["MutatingAdmissionPolicy"]["spec"]
    [rule] = spec["matchConstraints"]["resourceRules"]
    assert rule == {"apiGroups": [GROUP], "apiVersions": ["*"], "operations": ["CREATE"], "resources": [PLURAL]}


def test_the_policy_never_blocks_a_create() -> None:
    spec = shipped()["MutatingAdmissionPolicy"]["spec"]
    assert spec["failurePolicy"] == "Ignore"
    assert spec["reinvocationPolicy"] == "Never"


def test_the_policy_is_skipped_when_the_finalizer_is_there_and_appends_it_otherwise() -> None:
    spec = shipped()["MutatingAdmissionPolicy"]["spec"]
    [condition] = spec["matchConditions"]
    assert f'f == "{FINALIZER}"' in condition["expression"]
    [mutation] = spec["mutations"]
    assert mutation["patchType"] == "JSONPatch"
    expression = mutation["jsonPatch"]["expression"]
    # Appends to an existing list (keeping the user's finalizers), or creates the list.
    assert f'path: "/metadata/finalizers/-", value: "{FINALIZER}"' in expression
    assert f'path: "/metadata/finalizers", value: ["{FINALIZER}"]' in expression


def test_the_binding_points_at_the_policy_and_the_kustomization_installs_both() -> None:
    docs = shipped()
    assert docs["MutatingAdmissionPolicyBinding"]["spec"] == {
        "policyName": docs["MutatingAdmissionPolicy"]["metadata"]["name"]
    }
    resources = yaml.safe_load((ROOT / "deploy" / "kustomization.yaml").read_text())["resources"]
    assert "admission/finalizer-policy.yaml" in resources
    assert resources.index("admission/finalizer-policy.yaml") < resources.index("operator/deployment.yaml")
