"""The chart's security options, statically (`helm template`, no cluster), and deploy/'s twins.

Covers (security review): ``image.digest`` renders ``repository@sha256:…``, a digest put
in ``image.tag`` or a malformed digest fails naming the field; the pod and container security
contexts are values (restricted by default, OpenShift can null the fixed user); the optional
NetworkPolicy selects the operator pod, lets in only ``ingressFrom`` on the health and metrics
ports and lets out only the API server, DNS and ``egressTo``; the optional NetworkPolicy of the
inference pods (deploy/optional/inference-networkpolicy.yaml, rendered per namespace: the listed
ones, else the watched ones, never none) selects the pods the operator builds and lets only the
named peers reach their server port, and is refused without peers; the ClusterRoles for people
aggregate into view/edit/admin with exactly deploy/rbac/user_roles.yaml's rules, in cluster mode
only; the image allow-list policy is off by default, lists the prefixes in its CEL variable, is
bound to the watched namespaces in namespaced mode, refuses to render with no prefix, and has
the shape of deploy/optional/image-allowlist.yaml; `kubectl kustomize deploy/rbac/namespaced`
puts the Role and RoleBinding in the watched namespace and leaves the subject in the operator's;
the registry's bearer token reaches the operator from a Secret (secretKeyRef) and its CA bundle
from a mounted ConfigMap, neither by default, and a CA bundle without an https URL is refused.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import Any

import yaml

from inference_operator.api.models import InferenceService
from inference_operator.api.samples import make_inference_service
from inference_operator.reconcile.builders import desired_deployment

from .chartkit import DEPLOY, Obj, Render, find_helm, only

DIGEST = "sha256:" + "ab" * 32


def kinds(objects: list[Obj], kind: str) -> list[Obj]:
    return [o for o in objects if o["kind"] == kind]


def test_a_digest_pins_the_image_and_a_digest_in_the_tag_is_refused(
    render: Render, template: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    image = only(render({"image": {"repository": "reg.example/op", "tag": "1.2", "digest": DIGEST}}), "Deployment")
    assert image["spec"]["template"]["spec"]["containers"][0]["image"] == f"reg.example/op@{DIGEST}"
    in_tag = template({"image": {"tag": DIGEST}})
    assert in_tag.returncode != 0 and "image.digest" in in_tag.stderr
    malformed = template({"image": {"digest": "sha256:abc"}})
    assert malformed.returncode != 0 and "/image/digest" in malformed.stderr


def test_security_contexts_are_values_and_openshift_can_drop_the_fixed_user(render: Render) -> None:
    openshift = {"podSecurityContext": {"runAsUser": None, "runAsGroup": None, "fsGroup": None}}
    pod = only(render(openshift), "Deployment")["spec"]["template"]["spec"]
    assert pod["securityContext"] == {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    container = only(render({"securityContext": {"runAsUser": 12345}}), "Deployment")["spec"]["template"]["spec"][
        "containers"
    ][0]
    assert container["securityContext"]["runAsUser"] == 12345
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}


def test_the_network_policy_is_off_by_default_and_narrow_when_on(render: Render) -> None:
    assert not kinds(render(), "NetworkPolicy")
    peer = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
    registry = {"to": [{"ipBlock": {"cidr": "10.9.0.10/32"}}], "ports": [{"port": 8443, "protocol": "TCP"}]}
    values: dict[str, Any] = {
        "networkPolicy": {
            "enabled": True,
            "ingressFrom": [peer],
            "apiServer": {"cidrs": ["10.0.0.1/32"], "ports": [6443]},
            "egressTo": [registry],
        }
    }
    objects = render(values)
    policy = only(objects, "NetworkPolicy")
    pod_labels = only(objects, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= pod_labels.items()
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"]
    (ingress,) = policy["spec"]["ingress"]
    assert ingress["from"] == [peer] and [p["port"] for p in ingress["ports"]] == ["health", "metrics"]
    api, dns, extra = policy["spec"]["egress"]
    assert api == {"to": [{"ipBlock": {"cidr": "10.0.0.1/32"}}], "ports": [{"port": 6443, "protocol": "TCP"}]}
    assert {(p["port"], p["protocol"]) for p in dns["ports"]} == {(53, "UDP"), (53, "TCP")}
    assert extra == registry
    closed = only(render({"networkPolicy": {"enabled": True, "dns": False}}), "NetworkPolicy")
    assert closed["spec"]["ingress"] == [] and len(closed["spec"]["egress"]) == 1


def test_the_inference_network_policy_is_off_by_default_and_admits_only_the_named_peers_to_the_server_port(
    render: Render, template: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    assert not kinds(render(), "NetworkPolicy")
    shipped = yaml.safe_load((DEPLOY / "optional" / "inference-networkpolicy.yaml").read_text())
    peers = shipped["spec"]["ingress"][0]["from"]
    on = {"enabled": True, "namespaces": ["models", "team-b"], "from": peers}
    policies = kinds(render({"inferenceNetworkPolicy": on}), "NetworkPolicy")
    assert [p["metadata"]["namespace"] for p in policies] == ["models", "team-b"]
    assert all(p["spec"] == shipped["spec"] for p in policies), "the chart renders deploy/optional's policy"
    # It selects the pods the operator builds, and opens their server port alone, whatever spec.port is.
    pod = desired_deployment(
        InferenceService.from_object(make_inference_service("llama", image="vllm:0.7.0", model="m", port=9000))
    )["spec"]["template"]
    assert shipped["spec"]["podSelector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    (server_port,) = pod["spec"]["containers"][0]["ports"]
    assert shipped["spec"]["ingress"][0]["ports"] == [{"port": server_port["name"], "protocol": "TCP"}]
    assert shipped["spec"]["policyTypes"] == ["Ingress"]
    # Namespaced mode: the watched namespaces unless told otherwise.
    scoped = render({"watchNamespaces": ["a", "b"], "inferenceNetworkPolicy": {"enabled": True, "from": peers}})
    assert [p["metadata"]["namespace"] for p in kinds(scoped, "NetworkPolicy")] == ["a", "b"]
    nowhere = template({"inferenceNetworkPolicy": {"enabled": True, "from": peers}})
    assert nowhere.returncode != 0 and "inferenceNetworkPolicy.namespaces" in nowhere.stderr
    no_one = template({"inferenceNetworkPolicy": {"enabled": True, "namespaces": ["models"]}})
    assert no_one.returncode != 0 and "inferenceNetworkPolicy.from" in no_one.stderr


def test_user_roles_aggregate_into_view_edit_and_admin_in_cluster_mode_only(render: Render) -> None:
    shipped = {
        d["metadata"]["name"].rsplit("-", 1)[1]: d
        for d in yaml.safe_load_all((DEPLOY / "rbac/user_roles.yaml").read_text())
    }
    rendered = {
        r["metadata"]["name"].rsplit("-", 1)[1]: r
        for r in kinds(render(), "ClusterRole")
        if "aggregate-to-view" in str(r["metadata"]["labels"]) or "aggregate-to-edit" in str(r["metadata"]["labels"])
    }
    assert set(rendered) == set(shipped) == {"view", "edit"}
    for role in ("view", "edit"):
        assert rendered[role]["rules"] == shipped[role]["rules"]
        aggregation = {k: v for k, v in rendered[role]["metadata"]["labels"].items() if k.startswith("rbac.")}
        assert aggregation == {k: v for k, v in shipped[role]["metadata"]["labels"].items() if k.startswith("rbac.")}
    assert not {"create", "delete"} & {v for rule in shipped["view"]["rules"] for v in rule["verbs"]}
    namespaced = render({"watchNamespaces": ["models"]})
    assert not [r for r in kinds(namespaced, "ClusterRole")]
    assert not [r for r in kinds(render({"rbac": {"userRoles": False}}), "ClusterRole") if "aggregate" in str(r)]


def test_the_image_allow_list_is_off_by_default_and_lists_the_prefixes(
    render: Render, template: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    def allow_list(objects: list[Obj]) -> list[Obj]:
        return [o for o in objects if o["metadata"]["name"].endswith("-image-allowlist")]

    assert not allow_list(render())
    prefixes = ["registry.example.com/inference/", "ghcr.io/team/"]
    objects = allow_list(render({"imagePolicy": {"enabled": True, "allowedPrefixes": prefixes}}))
    policy, binding = only(objects, "ValidatingAdmissionPolicy"), only(objects, "ValidatingAdmissionPolicyBinding")
    (variable,) = policy["spec"]["variables"]
    assert variable == {"name": "allowedPrefixes", "expression": "['registry.example.com/inference/', 'ghcr.io/team/']"}
    assert binding["spec"]["policyName"] == policy["metadata"]["name"]
    assert binding["spec"]["validationActions"] == ["Deny"] and "matchResources" not in binding["spec"]
    shipped = list(yaml.safe_load_all((DEPLOY / "optional/image-allowlist.yaml").read_text()))
    assert policy["spec"]["matchConstraints"] == shipped[0]["spec"]["matchConstraints"]
    assert policy["spec"]["failurePolicy"] == shipped[0]["spec"]["failurePolicy"] == "Fail"
    scoped = allow_list(
        render({"imagePolicy": {"enabled": True, "allowedPrefixes": prefixes}, "watchNamespaces": ["a", "b"]})
    )
    selector = only(scoped, "ValidatingAdmissionPolicyBinding")["spec"]["matchResources"]["namespaceSelector"]
    assert selector["matchExpressions"][0]["values"] == ["a", "b"]
    empty = template({"imagePolicy": {"enabled": True}})
    assert empty.returncode != 0 and "imagePolicy.allowedPrefixes" in empty.stderr
    quote = template({"imagePolicy": {"enabled": True, "allowedPrefixes": ["it's/"]}})
    assert quote.returncode != 0 and "allowedPrefixes" in quote.stderr
    # "registry.example.com" would let "registry.example.com.evil.io/x" through: a prefix ends in "/".
    bare = template({"imagePolicy": {"enabled": True, "allowedPrefixes": ["registry.example.com"]}})
    assert bare.returncode != 0 and "allowedPrefixes" in bare.stderr


def test_the_namespaced_rbac_kustomization_sets_the_watched_namespace() -> None:
    kubectl = find_helm().parent / "kubectl"
    built = subprocess.run(
        [str(kubectl), "kustomize", str(DEPLOY / "rbac/namespaced")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    role, binding = (only(list(yaml.safe_load_all(built)), kind) for kind in ("Role", "RoleBinding"))
    assert role["metadata"]["namespace"] == binding["metadata"]["namespace"] == "models"
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "inference-operator", "namespace": "inference-operator"}
    ]


def test_the_registry_token_comes_from_a_secret_and_the_ca_from_a_configmap(
    render: Render, template: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    values = {
        "loadBalancer": {
            "provider": "http",
            "url": "https://lb.example:8443",
            "tokenSecret": {"name": "lb-token", "key": "bearer"},
            "caBundle": {"configMap": "lb-ca", "key": "bundle.pem"},
        }
    }
    pod = only(render(values), "Deployment")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    env = {e["name"]: e for e in container["env"]}
    assert env["INFERENCE_OPERATOR_LB_TOKEN"]["valueFrom"] == {"secretKeyRef": {"name": "lb-token", "key": "bearer"}}
    assert env["INFERENCE_OPERATOR_LB_CA_FILE"]["value"] == "/etc/inference-operator/lb-ca/bundle.pem"
    mount = next(m for m in container["volumeMounts"] if m["name"] == "lb-ca")
    assert mount == {"name": "lb-ca", "mountPath": "/etc/inference-operator/lb-ca", "readOnly": True}
    volume = next(v for v in pod["volumes"] if v["name"] == "lb-ca")
    assert volume["configMap"] == {"name": "lb-ca", "items": [{"key": "bundle.pem", "path": "bundle.pem"}]}
    default_env = {e["name"] for e in only(render(), "Deployment")["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert not {"INFERENCE_OPERATOR_LB_TOKEN", "INFERENCE_OPERATOR_LB_CA_FILE"} & default_env
    plain = template(
        {"loadBalancer": {"provider": "http", "url": "http://lb:9090", "caBundle": {"configMap": "lb-ca"}}}
    )
    assert plain.returncode != 0 and "loadBalancer.caBundle.configMap" in plain.stderr
