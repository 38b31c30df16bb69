"""Least-privilege RBAC and a conventional, non-root Dockerfile (static checks, no cluster).

Covers: RBAC has no wildcards, no Secrets, no escalate/bind/impersonate, no delete, only the
kinds the operator manages or reads; the namespaced Role grants the same namespaced rules as
the ClusterRole; the kustomization lists files that exist; the operator Deployment runs as
the ServiceAccount with a PSS-restricted security context; the Dockerfile is multi-stage,
non-root numeric USER, no ADD of URLs, no build tools in the final stage, entrypoint
`kopf run -m inference_operator.operator`; requirements.lock pins the runtime dependencies.
The build backend is pinned; the image carries OCI labels and its build context admits only
what the Dockerfile copies (.dockerignore); the ClusterRoles for people (deploy/rbac/user_roles.yaml)
touch InferenceServices only, aggregate into view/edit/admin and are in the kustomization; the
leader-election Role reads and renews only the Lease the operator Deployment names.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
RBAC = ROOT / "deploy" / "rbac"
ALLOWED = {
    ("serving.inference-operator.dev", "inferenceservices"): {"list", "watch", "patch"},
    ("serving.inference-operator.dev", "inferenceservices/status"): {"update"},
    ("serving.inference-operator.dev", "inferenceservices/finalizers"): {"update"},
    ("apps", "deployments"): {"get", "list", "watch", "create", "patch"},
    ("", "services"): {"get", "list", "watch", "create", "patch"},
    ("", "pods"): {"list", "watch"},
    ("", "nodes"): {"list", "watch"},
    ("", "events"): {"create", "patch"},
}
CLUSTER_ONLY = {
    ("", "nodes"): {"list", "watch"},  # the rollouts' GPU count: every Node ...
    ("", "pods"): {"watch"},  # ... and every unfinished Pod, watched (namespaced: listed to diagnose)
}


def load(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(path.read_text())
    return doc


def grants(rules: list[dict[str, Any]]) -> dict[tuple[str, str], set[str]]:
    out: dict[tuple[str, str], set[str]] = {}
    for rule in rules:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                out.setdefault((group, resource), set()).update(rule["verbs"])
    return out


def all_rules() -> list[dict[str, Any]]:
    return load(RBAC / "cluster_role.yaml")["rules"] + load(RBAC / "namespaced" / "role.yaml")["rules"]


def test_rbac_has_no_wildcards_and_no_dangerous_verbs() -> None:
    for rule in all_rules():
        for field in ("apiGroups", "resources", "verbs"):
            assert "*" not in rule[field], rule
        assert not {"escalate", "bind", "impersonate", "delete", "deletecollection"} & set(rule["verbs"]), rule
        assert "resourceNames" not in rule or rule["resourceNames"], rule


def test_rbac_never_touches_secrets_or_unmanaged_kinds() -> None:
    for (group, resource), verbs in grants(all_rules()).items():
        assert resource not in ("secrets", "configmaps", "serviceaccounts", "roles", "clusterroles"), resource
        assert (group, resource) in ALLOWED, f"unexpected grant on {group}/{resource}"
        assert verbs <= ALLOWED[(group, resource)], f"{group}/{resource}: {verbs - ALLOWED[(group, resource)]}"


def test_namespaced_role_grants_the_namespaced_part_of_the_cluster_role() -> None:
    cluster = grants(load(RBAC / "cluster_role.yaml")["rules"])
    namespaced = grants(load(RBAC / "namespaced" / "role.yaml")["rules"])
    without = {k: v - CLUSTER_ONLY.get(k, set()) for k, v in cluster.items()}
    assert namespaced == {k: v for k, v in without.items() if v}


def test_bindings_point_at_the_service_account() -> None:
    sa = load(RBAC / "service_account.yaml")["metadata"]
    for binding in (load(RBAC / "cluster_role_binding.yaml"), load(RBAC / "namespaced" / "role_binding.yaml")):
        (subject,) = binding["subjects"]
        assert (subject["kind"], subject["name"], subject["namespace"]) == (
            "ServiceAccount",
            sa["name"],
            sa["namespace"],
        )


def test_kustomization_lists_existing_files_including_crds_rbac_and_operator() -> None:
    kustomization = load(ROOT / "deploy" / "kustomization.yaml")
    resources = kustomization["resources"]
    assert all((ROOT / "deploy" / r).is_file() for r in resources)
    assert any(r.startswith("crds/") for r in resources) and "rbac/cluster_role.yaml" in resources
    assert "operator/deployment.yaml" in resources


def test_operator_deployment_is_pss_restricted_and_uses_the_service_account() -> None:
    dep = load(ROOT / "deploy" / "operator" / "deployment.yaml")
    pod = dep["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "inference-operator"
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] >= 1000
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (container,) = pod["containers"]
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert dep["spec"]["replicas"] == 2 and dep["spec"]["strategy"]["type"] == "RollingUpdate"
    env = {e["name"]: e for e in container["env"]}
    assert env["POD_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    assert env["POD_NAMESPACE"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}


def dockerfile() -> str:
    return (ROOT / "Dockerfile").read_text()


def stages() -> list[str]:
    return re.split(r"^FROM ", dockerfile(), flags=re.M)[1:]


def test_dockerfile_is_multi_stage_with_a_slim_base() -> None:
    assert len(stages()) >= 2
    assert "slim" in dockerfile()


def test_dockerfile_final_stage_runs_as_a_numeric_non_root_user() -> None:
    final = stages()[-1]
    users = re.findall(r"^USER\s+(\S+)", final, flags=re.M)
    assert users, "the final stage sets no USER"
    uid = users[-1].split(":")[0]
    assert uid.isdigit() and int(uid) != 0


def test_dockerfile_adds_no_urls_and_installs_no_build_tools_in_the_final_stage() -> None:
    assert not re.search(r"^ADD\s+https?://", dockerfile(), flags=re.M | re.I)
    final = stages()[-1]
    assert not re.search(r"apt-get install|apk add|gcc|build-essential", final)
    assert "--no-index" in final, "the final stage installs only the wheels built earlier"


def test_dockerfile_entrypoint_is_kopf_run_of_the_operator_module() -> None:
    entrypoint = re.findall(r"^ENTRYPOINT\s+(.+)$", dockerfile(), flags=re.M)[-1]
    assert yaml.safe_load(entrypoint) == ["kopf", "run", "-m", "inference_operator.operator"]


def test_requirements_lock_pins_the_runtime_dependencies_with_hashes() -> None:
    text = (ROOT / "requirements.lock").read_text()
    entries = re.findall(r"^([A-Za-z0-9_.\-]+)==(\S+) \\\n((?:    --hash=sha256:[0-9a-f]{64}(?: \\)?\n)+)", text, re.M)
    pins = {name: version for name, version, _ in entries}
    for name in ("kopf", "urllib3", "pydantic", "pyyaml", "prometheus-client"):
        assert name in pins and re.match(r"^\d+(\.\d+)+", pins[name]), name
    requirement_lines = [line for line in text.splitlines() if line and not line.startswith(("#", " "))]
    assert len(requirement_lines) == len(entries), "every pin carries at least one sha256"
    assert "--require-hashes" in dockerfile() and "-r requirements.lock" in dockerfile()


def test_the_build_backend_is_pinned() -> None:
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    assert requires and all(re.match(r"^[A-Za-z0-9_.\-]+==\d+(\.\d+)+$", r) for r in requires), requires


def test_the_image_carries_oci_labels_and_its_build_context_is_only_what_it_needs() -> None:
    labels = dict(re.findall(r'(org\.opencontainers\.image\.[a-z]+)="([^"]*)"', dockerfile()))
    assert {"title", "version", "revision", "licenses"} <= {k.rsplit(".", 1)[1] for k in labels}
    ignore = (ROOT / ".dockerignore").read_text().splitlines()
    assert "*" in ignore  # everything out, then only what the Dockerfile copies back in
    copied = set(re.findall(r"^COPY (?!--from)(.+?) \./", dockerfile(), re.MULTILINE))
    assert copied, "no COPY found in the Dockerfile"
    allowed = {line.removeprefix("!").rstrip("/") for line in ignore if line.startswith("!")}
    assert {name.rstrip("/") for entry in copied for name in entry.split()} <= allowed


def test_user_roles_only_read_or_write_inference_services_and_aggregate_into_the_built_in_roles() -> None:
    roles = {d["metadata"]["name"]: d for d in yaml.safe_load_all((RBAC / "user_roles.yaml").read_text())}
    for role in roles.values():
        for rule in role["rules"]:
            assert rule["apiGroups"] == ["serving.inference-operator.dev"]
            assert all(r.startswith("inferenceservices") for r in rule["resources"])
    view, edit = roles["inference-operator-view"], roles["inference-operator-edit"]
    assert view["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-view"] == "true"
    assert {v for r in view["rules"] for v in r["verbs"]} == {"get", "list", "watch"}
    assert edit["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-edit"] == "true"
    assert edit["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-admin"] == "true"
    assert "rbac/user_roles.yaml" in load(ROOT / "deploy" / "kustomization.yaml")["resources"]


def test_leader_election_may_only_create_leases_and_read_and_renew_its_own_in_the_operators_namespace() -> None:
    role, binding = yaml.safe_load_all((RBAC / "leader_election.yaml").read_text())
    sa = load(RBAC / "service_account.yaml")["metadata"]
    assert role["kind"] == "Role" and role["metadata"]["namespace"] == sa["namespace"]
    # create cannot be limited by name (RBAC never matches resourceNames on a create)
    assert role["rules"] == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": ["inference-operator"],
            "verbs": ["get", "update"],
        },
    ]
    assert binding["kind"] == "RoleBinding" and binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": sa["name"], "namespace": sa["namespace"]}]
    assert "rbac/leader_election.yaml" in load(ROOT / "deploy" / "kustomization.yaml")["resources"]


def test_the_lease_role_names_the_lease_the_operator_deployment_passes() -> None:
    role, _ = yaml.safe_load_all((RBAC / "leader_election.yaml").read_text())
    (named,) = [rule["resourceNames"] for rule in role["rules"] if "resourceNames" in rule]
    container = load(ROOT / "deploy" / "operator" / "deployment.yaml")["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert named == [env["INFERENCE_OPERATOR_LEASE_NAME"]]
