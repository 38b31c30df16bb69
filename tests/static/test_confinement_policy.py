"""The confinement admission policy (deploy/admission/confinement-policy.yaml), statically; the e2e
suite runs it on a real API server (tests/e2e/test_confinement.py).

Covers: it binds the ServiceAccount deploy/rbac ships and matches creates and updates of
Deployments and Services only, failing closed; every validation holds for the children the
operator builds (its CEL evaluated here against ``desired_deployment`` and ``desired_service``
of a rich spec, so a builder change that the policy would refuse fails here first) and fails
for what the operator never builds; the chart renders the same policies for its own
ServiceAccount and names, and none when disabled; the kustomization
installs it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from inference_operator.api.models import InferenceService
from inference_operator.api.samples import make_inference_service
from inference_operator.reconcile.builders import desired_deployment, desired_service

from .chartkit import FULLNAME, RELEASE_NAMESPACE, Render
from .policykit import failing

ROOT = Path(__file__).resolve().parents[2]
POLICY_FILE = ROOT / "deploy" / "admission" / "confinement-policy.yaml"
Obj = dict[str, Any]


def shipped() -> list[Obj]:
    return [d for d in yaml.safe_load_all(POLICY_FILE.read_text()) if d]


def policy(resource: str) -> Obj:
    (found,) = [
        d
        for d in shipped()
        if d["kind"] == "ValidatingAdmissionPolicy"
        and d["spec"]["matchConstraints"]["resourceRules"][0]["resources"] == [resource]
    ]
    return found


def isvc() -> InferenceService:
    obj = make_inference_service(
        "llama",
        image="vllm/vllm-openai:v0.7.0",
        model="m",
        replicas=2,
        gpu=8,
        env=[{"name": "KEY", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}}],
        nodeSelector={"pool": "h100"},
        tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        podSecurity="Restricted",
        runAsUser=1000,
        sharedMemory="16Gi",  # /dev/shm with a size limit: still an emptyDir
    )
    obj["spec"]["rollout"] = {"strategy": "Replace"}
    obj["metadata"]["uid"] = "u1"
    return InferenceService.from_object(obj)


def test_it_binds_the_shipped_service_account_and_matches_deployments_and_services_only() -> None:
    account = yaml.safe_load((ROOT / "deploy" / "rbac" / "service_account.yaml").read_text())["metadata"]
    user = f'"system:serviceaccount:{account["namespace"]}:{account["name"]}"'
    for resource, group in (("deployments", "apps"), ("services", "")):
        spec = policy(resource)["spec"]
        assert spec["failurePolicy"] == "Fail"
        [condition] = spec["matchConditions"]
        assert condition["expression"] == f"request.userInfo.username == {user}"
        [rule] = spec["matchConstraints"]["resourceRules"]
        assert rule == {
            "apiGroups": [group],
            "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE"],
            "resources": [resource],
        }
    bindings = {
        d["spec"]["policyName"]: d["spec"] for d in shipped() if d["kind"] == "ValidatingAdmissionPolicyBinding"
    }
    assert set(bindings) == {policy(r)["metadata"]["name"] for r in ("deployments", "services")}
    assert all(b["validationActions"] == ["Deny"] for b in bindings.values())


def test_the_children_the_operator_builds_pass_the_policy_on_create_and_update() -> None:
    deployment, service = desired_deployment(isvc()), desired_service(isvc())
    assert failing(policy("deployments")["spec"], deployment) == []
    assert failing(policy("deployments")["spec"], deployment, old=deployment) == []
    assert failing(policy("services")["spec"], service) == []
    assert failing(policy("services")["spec"], service, old=service) == []


def _pod(d: Obj) -> Obj:
    pod: Obj = d["spec"]["template"]["spec"]
    return pod


BREAKS: list[tuple[str, Callable[[Obj], None], str]] = [
    ("no owner label", lambda d: d["metadata"]["labels"].clear(), "owner and managed-by labels"),
    ("no owner reference", lambda d: d["metadata"].pop("ownerReferences"), "controlled by an InferenceService"),
    ("a token", lambda d: _pod(d).update(automountServiceAccountToken=True), "no service account token"),
    ("another account", lambda d: _pod(d).update(serviceAccountName="admin"), "no ServiceAccount of their own"),
    ("host network", lambda d: _pod(d).update(hostNetwork=True), "host's network"),
    ("a Secret volume", lambda d: _pod(d)["volumes"].append({"name": "s", "secret": {"secretName": "x"}}), "emptyDir"),
    ("a host path", lambda d: _pod(d)["volumes"].append({"name": "h", "hostPath": {"path": "/"}}), "emptyDir"),
    ("privileged", lambda d: _pod(d)["containers"][0]["securityContext"].update(privileged=True), "not privileged"),
    (
        "a capability",
        lambda d: _pod(d)["containers"][0]["securityContext"]["capabilities"].update(add=["NET_ADMIN"]),
        "add no capabilities",
    ),
    ("a host port", lambda d: _pod(d)["containers"][0]["ports"][0].update(hostPort=8000), "no host ports"),
]


@pytest.mark.parametrize(("what", "change", "words"), BREAKS, ids=[b[0] for b in BREAKS])
def test_what_the_operator_never_builds_is_refused(what: str, change: Callable[[Obj], None], words: str) -> None:
    bad = copy.deepcopy(desired_deployment(isvc()))
    change(bad)
    messages = failing(policy("deployments")["spec"], bad)
    assert any(words in m for m in messages), messages


def test_a_deployment_not_its_child_cannot_be_taken_over_but_a_child_that_lost_its_label_is_healed() -> None:
    child = desired_deployment(isvc())
    unlabelled = copy.deepcopy(child)
    unlabelled["metadata"]["labels"] = {"app": "llama"}
    assert failing(policy("deployments")["spec"], child, old=unlabelled) == []  # still controlled by the service
    foreign = copy.deepcopy(unlabelled)
    del foreign["metadata"]["ownerReferences"]
    [message] = failing(policy("deployments")["spec"], child, old=foreign)
    assert message.startswith("the operator may not take over a Deployment it did not create")


def test_a_node_port_service_is_refused() -> None:
    service = desired_service(isvc())
    service["spec"]["type"] = "NodePort"
    assert failing(policy("services")["spec"], service) == [
        "the operator's Services are ClusterIP Services without external IPs"
    ]


def test_the_chart_renders_the_same_policies_for_its_own_service_account(render: Render) -> None:
    objects = render()
    rendered = {
        (o["kind"], o["metadata"]["name"]): o for o in objects if o["kind"].startswith("ValidatingAdmissionPolicy")
    }
    user = f"system:serviceaccount:{RELEASE_NAMESPACE}:{FULLNAME}"
    for doc in shipped():
        name = doc["metadata"]["name"].replace("inference-operator-confine-", f"{FULLNAME}-confine-")
        expected = yaml.safe_load(
            yaml.safe_dump(doc["spec"])
            .replace("system:serviceaccount:inference-operator:inference-operator", user)
            .replace("inference-operator-confine-", f"{FULLNAME}-confine-")
        )
        assert rendered[doc["kind"], name]["spec"] == expected


def test_no_confinement_policy_when_disabled(render: Render) -> None:
    assert [o for o in render() if "-confine-" in o["metadata"]["name"]]
    assert not [o for o in render({"confinementPolicy": {"enabled": False}}) if "-confine-" in o["metadata"]["name"]]


def test_the_chart_carries_an_exact_copy_and_the_kustomization_installs_it() -> None:
    copy_in_chart = ROOT / "charts" / "inference-operator" / "files" / "confinement-policy.yaml"
    assert copy_in_chart.read_bytes() == POLICY_FILE.read_bytes(), "copy deploy/admission/confinement-policy.yaml"
    resources = yaml.safe_load((ROOT / "deploy" / "kustomization.yaml").read_text())["resources"]
    assert resources.index("admission/confinement-policy.yaml") < resources.index("operator/deployment.yaml")
