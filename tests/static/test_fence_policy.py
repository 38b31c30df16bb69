"""The strict fence (deploy/admission/fence-policy.yaml), statically: its CEL evaluated as the API
server would. Opt-in (off in the chart and left out of deploy/'s kustomization): see the README's
high-availability section for why.

Covers: its parameter is the operator's own Lease (paramKind coordination.k8s.io/v1 Lease; the
binding names the Lease the shipped operator elects on, in its namespace, and lets writes through
while it is missing: the API server looks the parameter up before matchConditions, so Deny would
refuse every user's writes of those kinds), it fails closed and denies; it matches the shipped
ServiceAccount only, and every kind the operator's client writes but the Lease (Deployments,
Services, InferenceServices and their status, Events), on create, update and delete; a write from
the pod that holds the Lease passes;
one from another pod, from a token bound to no pod (no pod-name extra, or no extra at all), or
while the Lease names no holder is refused, with a message that names the replica and the holder;
the chart renders it when enabled for its own ServiceAccount, Lease and namespace, and not by
default, with leader election off, or before Kubernetes 1.32; the chart carries an exact copy and the
kustomization leaves it out (opt-in).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import celpy
import pytest
import yaml
from celpy import celtypes
from celpy.adapter import json_to_cel

from inference_operator.kube.client import KINDS

from .chartkit import FULLNAME, RELEASE_NAMESPACE, Render

ROOT = Path(__file__).resolve().parents[2]
POLICY_FILE = ROOT / "deploy" / "admission" / "fence-policy.yaml"
POD_NAME = "authentication.kubernetes.io/pod-name"
Obj = dict[str, Any]


def shipped() -> dict[str, Obj]:
    return {d["kind"]: d for d in yaml.safe_load_all(POLICY_FILE.read_text()) if d}


def policy() -> Obj:
    spec: Obj = shipped()["ValidatingAdmissionPolicy"]["spec"]
    return spec


def evaluate(expression: str, activation: dict[str, Any]) -> Any:
    env = celpy.Environment()
    return env.program(env.compile(expression)).evaluate(activation)


def lease(holder: str | None) -> Obj:
    spec = {"leaseDurationSeconds": 15} if holder is None else {"holderIdentity": holder, "leaseDurationSeconds": 15}
    return {"metadata": {"name": "inference-operator", "namespace": "inference-operator"}, "spec": spec}


def user(extra: dict[str, list[str]] | None) -> Obj:
    info: Obj = {"username": "system:serviceaccount:inference-operator:inference-operator"}
    if extra is not None:
        info["extra"] = extra
    return info


def decide(user_info: Obj, params: Obj) -> tuple[bool, str]:
    """(allowed, message) for a write by ``user_info`` with ``params`` as the Lease."""
    spec = policy()
    activation: dict[str, Any] = {
        "request": json_to_cel({"operation": "UPDATE", "userInfo": user_info}),
        "params": json_to_cel(params),
    }
    variables = celtypes.MapType({})
    for variable in spec["variables"]:
        value = evaluate(variable["expression"], {**activation, "variables": variables})
        variables = celtypes.MapType({**variables, celtypes.StringType(variable["name"]): value})
    activation["variables"] = variables
    [validation] = spec["validations"]
    allowed = bool(evaluate(validation["expression"], activation))
    return allowed, "" if allowed else str(evaluate(validation["messageExpression"], activation))


def test_its_parameter_is_the_shipped_operators_own_lease_and_a_missing_lease_blocks_nobody() -> None:
    spec = policy()
    assert spec["paramKind"] == {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease"}
    assert spec["failurePolicy"] == "Fail"
    binding = shipped()["ValidatingAdmissionPolicyBinding"]["spec"]
    assert binding["policyName"] == shipped()["ValidatingAdmissionPolicy"]["metadata"]["name"]
    assert binding["validationActions"] == ["Deny"]
    account = yaml.safe_load((ROOT / "deploy" / "rbac" / "service_account.yaml").read_text())["metadata"]
    deployment = yaml.safe_load((ROOT / "deploy" / "operator" / "deployment.yaml").read_text())
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    lease_name = next(e["value"] for e in container["env"] if e["name"] == "INFERENCE_OPERATOR_LEASE_NAME")
    assert binding["paramRef"] == {
        "name": lease_name,
        "namespace": account["namespace"],
        "parameterNotFoundAction": "Allow",
    }


def test_it_matches_the_shipped_service_account_only() -> None:
    account = yaml.safe_load((ROOT / "deploy" / "rbac" / "service_account.yaml").read_text())["metadata"]
    [condition] = policy()["matchConditions"]
    operator = f"system:serviceaccount:{account['namespace']}:{account['name']}"
    assert evaluate(condition["expression"], {"request": json_to_cel({"userInfo": {"username": operator}})})
    for other in ("system:serviceaccount:kube-system:deployment-controller", "kubernetes-admin"):
        assert not evaluate(condition["expression"], {"request": json_to_cel({"userInfo": {"username": other}})})


def test_it_matches_every_kind_the_operators_client_writes_but_the_lease() -> None:
    rules = policy()["matchConstraints"]["resourceRules"]
    written = {"InferenceService", "Deployment", "Service", "Event"}
    assert written | {"Pod", "Node", "Lease"} == set(KINDS), "a new kind: does the operator write it?"
    for kind in written:
        info = KINDS[kind]
        group = "" if info.prefix == "/api/v1" else info.prefix.split("/")[2]
        resources = [info.plural, f"{info.plural}/status"] if kind == "InferenceService" else [info.plural]
        for resource in resources:
            assert any(
                group in r["apiGroups"]
                and resource in r["resources"]
                and r["apiVersions"] == ["*"]
                and set(r["operations"]) == {"CREATE", "UPDATE", "DELETE"}
                for r in rules
            ), f"{kind}: {resource} in group {group!r} is not fenced"
    assert not any("leases" in r["resources"] for r in rules), "the election itself must not be fenced"


def test_a_write_from_the_pod_that_holds_the_lease_passes() -> None:
    assert decide(user({POD_NAME: ["operator-7d9f-abcde"]}), lease("operator-7d9f-abcde")) == (True, "")


REFUSED = [
    (
        "another pod",
        user({POD_NAME: ["operator-7d9f-zzzzz"]}),
        lease("operator-7d9f-abcde"),
        "replica operator-7d9f-zzzzz does not hold the leader Lease inference-operator (its holder is "
        "operator-7d9f-abcde)",
    ),
    ("no holder", user({POD_NAME: ["operator-7d9f-abcde"]}), lease(None), "(its holder is nobody)"),
    (
        "a token bound to no pod",
        user({"authentication.kubernetes.io/credential-id": ["JTI=1"]}),
        lease("operator-7d9f-abcde"),
        "names no pod",
    ),
    ("a token with no extra", user(None), lease("operator-7d9f-abcde"), "names no pod"),
    ("an empty pod name", user({POD_NAME: [""]}), lease(""), "names no pod"),
]


@pytest.mark.parametrize(("what", "user_info", "params", "words"), REFUSED, ids=[r[0] for r in REFUSED])
def test_a_write_from_any_other_replica_or_token_is_refused_with_who_holds_the_lease(
    what: str, user_info: Obj, params: Obj, words: str
) -> None:
    allowed, message = decide(user_info, params)
    assert not allowed
    assert words in message, message


ON: Final = {"fencePolicy": {"enabled": True}}


def test_the_chart_renders_it_for_its_own_service_account_lease_and_namespace(render: Render) -> None:
    rendered = {(o["kind"], o["metadata"]["name"]): o for o in render(ON) if o["metadata"]["name"].endswith("-fence")}
    policy_spec = rendered["ValidatingAdmissionPolicy", f"{FULLNAME}-fence"]["spec"]
    expected = yaml.safe_load(
        yaml.safe_dump(policy()).replace(
            "system:serviceaccount:inference-operator:inference-operator",
            f"system:serviceaccount:{RELEASE_NAMESPACE}:{FULLNAME}",
        )
    )
    assert policy_spec == expected
    binding = rendered["ValidatingAdmissionPolicyBinding", f"{FULLNAME}-fence"]["spec"]
    assert binding["policyName"] == f"{FULLNAME}-fence"
    assert binding["paramRef"] == {"name": FULLNAME, "namespace": RELEASE_NAMESPACE, "parameterNotFoundAction": "Allow"}
    named = render({**ON, "leaderElection": {"leaseName": "my-lease"}})
    [named_binding] = [o for o in named if o["kind"] == "ValidatingAdmissionPolicyBinding" and "-fence" in str(o)]
    assert named_binding["spec"]["paramRef"]["name"] == "my-lease"


@pytest.mark.parametrize(
    ("values", "kube_version"),
    [
        ({}, "1.36.0"),
        ({"fencePolicy": {"enabled": True}, "replicas": 1, "leaderElection": {"enabled": False}}, "1.36.0"),
        ({"fencePolicy": {"enabled": True}}, "1.31.0"),
    ],
    ids=["off by default", "no leader election", "before 1.32"],
)
def test_no_fence_policy_by_default_without_election_or_before_1_32(
    render: Render, values: Obj, kube_version: str
) -> None:
    assert [o for o in render(ON) if o["metadata"]["name"].endswith("-fence")]
    assert not [o for o in render(values, kube_version) if o["metadata"]["name"].endswith("-fence")]


def test_the_chart_carries_an_exact_copy_and_the_kustomization_leaves_it_out() -> None:
    copy_in_chart = ROOT / "charts" / "inference-operator" / "files" / "fence-policy.yaml"
    assert copy_in_chart.read_bytes() == POLICY_FILE.read_bytes(), "copy deploy/admission/fence-policy.yaml"
    resources = yaml.safe_load((ROOT / "deploy" / "kustomization.yaml").read_text())["resources"]
    assert "admission/fence-policy.yaml" not in resources  # opt-in: kubectl apply -f it
