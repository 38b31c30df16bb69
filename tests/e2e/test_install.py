"""Installing the operator the two ways a user would, on a real control plane.

Covers: `helm install` of charts/inference-operator into a fresh namespace that enforces the
"restricted" Pod Security Standard (so the API server itself checks the pod) — the CRD is
Established (Helm skips it: the `crd` fixture already applied it), the cluster-wide RBAC, the
roles for people, the leader-election Role, a PodDisruptionBudget and the finalizer admission
policy exist, the operator Deployment becomes Available with its two replicas; `helm upgrade
--set workers=2` rolls the Deployment (new template env, a new ReplicaSet, the old one scaled to
zero, both pods replaced);
`helm uninstall` leaves nothing of the release behind, in the namespace or cluster-scoped, except
the CRD, which Helm keeps by design and the rest of the suite needs. Namespaced mode: Role +
RoleBinding in each watched namespace, the leader-election Role in the release namespace, no
cluster-scoped RBAC, a policy binding limited to the
watched namespaces, all gone after uninstall. `kubectl apply -k deploy/`: namespace, CRD,
admission policy, RBAC and Deployment, which becomes Available; then everything it created but
the CRD and the policy is deleted (`kubectl delete -k` would delete those too, and the rest of the
suite needs them).

The operator pods created here never run: on the local control plane kwok marks every pod bound
to its fake nodes Running and Ready without pulling the image (which does not exist). So these
tests check the install, RBAC and rollout machinery, not the operator's behaviour — the operator
of the rest of the suite runs as a local process.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from .conftest import Cluster
from .harness import ROOT, condition, wait_until
from .helm import (
    ADMISSION_KINDS,
    CHART,
    CLUSTER_KINDS,
    CLUSTER_RBAC_KINDS,
    TIMEOUT,
    Helm,
    Obj,
    helm_for,
    names,
    wait_available,
    wait_release_gone,
)

CRD_NAME = "inferenceservices.serving.inference-operator.dev"
KUSTOMIZE_NAMESPACE = "inference-operator"
# What `kubectl apply -k deploy/` shares with the rest of the suite (the `crd` fixture applied
# the same objects): the test leaves them in place.
SUITE_KINDS = ("CustomResourceDefinition", "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding")


@pytest.fixture()
def helm(cluster: Cluster, tmp_path: Path) -> Helm:
    return helm_for(cluster, tmp_path)


@pytest.fixture()
def make_namespace(cluster: Cluster) -> Iterator[Callable[..., str]]:
    """Fresh namespaces that enforce the restricted Pod Security Standard; deleted after the test."""
    created: list[str] = []

    def make(prefix: str) -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:6]}"
        cluster.kubectl.apply(
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {
                    "name": name,
                    "labels": {
                        "pod-security.kubernetes.io/enforce": "restricted",
                        "pod-security.kubernetes.io/enforce-version": "latest",
                    },
                },
            }
        )
        created.append(name)
        return name

    yield make
    for name in created:
        cluster.kubectl.run("delete", "namespace", name, "--wait=false", "--ignore-not-found", check=False)


def crd_established(cluster: Cluster) -> bool:
    crd = cluster.kubectl.json("get", "crd", CRD_NAME)
    return condition(crd, "Established").get("status") == "True"


def release_pods(cluster: Cluster, release: str, namespace: str) -> list[Obj]:
    pods: list[Obj] = cluster.kubectl.json(
        "get", "pods", "-n", namespace, "-l", f"app.kubernetes.io/instance={release}"
    )["items"]
    return pods


# Helm -----------------------------------------------------------------------------------------


def test_helm_install_upgrade_and_uninstall_in_cluster_mode(
    cluster: Cluster, crd: None, helm: Helm, make_namespace: Callable[..., str]
) -> None:
    namespace = make_namespace("helm")
    release = f"io-{uuid.uuid4().hex[:6]}"
    fullname = f"{release}-inference-operator"

    installed = helm.run("install", release, str(CHART), "--namespace", namespace)
    assert "STATUS: deployed" in installed.stdout
    assert f"kubectl -n {namespace} rollout status deployment/{fullname}" in installed.stdout, "NOTES.txt"
    assert wait_until(lambda: crd_established(cluster), timeout=TIMEOUT, what=f"CRD {CRD_NAME} to be Established")
    dep = wait_available(cluster, fullname, namespace, env={"INFERENCE_OPERATOR_WORKERS": "8"})
    container = dep["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["kopf", "run", "-m", "inference_operator.operator"]
    assert "--all-namespaces" in container["args"]
    assert names(cluster, "clusterrole,clusterrolebinding", selector=f"app.kubernetes.io/instance={release}") == [
        f"clusterrole.rbac.authorization.k8s.io/{fullname}",
        f"clusterrole.rbac.authorization.k8s.io/{fullname}-edit",
        f"clusterrole.rbac.authorization.k8s.io/{fullname}-view",
        f"clusterrolebinding.rbac.authorization.k8s.io/{fullname}",
    ]
    assert names(cluster, "roles,rolebindings", namespace=namespace) == [
        f"role.rbac.authorization.k8s.io/{fullname}-leader-election",
        f"rolebinding.rbac.authorization.k8s.io/{fullname}-leader-election",
    ]
    assert names(cluster, "poddisruptionbudgets", namespace=namespace) == [f"poddisruptionbudget.policy/{fullname}"]
    assert names(cluster, ADMISSION_KINDS, selector=f"app.kubernetes.io/instance={release}") == [
        f"mutatingadmissionpolicy.admissionregistration.k8s.io/{fullname}-finalizer",
        f"mutatingadmissionpolicybinding.admissionregistration.k8s.io/{fullname}-finalizer",
    ]
    pods = wait_until(
        lambda: (found := release_pods(cluster, release, namespace)) and len(found) == 2 and found,
        timeout=TIMEOUT,
        what="the leader and the standby",
    )
    for pod in pods:
        assert pod["spec"]["nodeName"].startswith("kwok-node-"), "kwok only marks pods on its fake nodes Ready"
        assert condition(pod, "Ready").get("status") == "True"

    helm.run("upgrade", release, str(CHART), "--namespace", namespace, "--reuse-values", "--set", "workers=2")
    upgraded = wait_available(cluster, fullname, namespace, env={"INFERENCE_OPERATOR_WORKERS": "2"})
    assert upgraded["metadata"]["generation"] == dep["metadata"]["generation"] + 1
    replica_sets = cluster.kubectl.json(
        "get", "replicasets", "-n", namespace, "-l", f"app.kubernetes.io/instance={release}"
    )["items"]
    assert sorted(rs["spec"]["replicas"] for rs in replica_sets) == [0, 2], "the upgrade made a new ReplicaSet"
    old = {pod["metadata"]["uid"] for pod in pods}
    new_pods = wait_until(
        lambda: (
            (found := release_pods(cluster, release, namespace))
            and len(found) == 2
            and not old & {p["metadata"]["uid"] for p in found}
            and found
        ),
        timeout=TIMEOUT,
        what="both old operator pods to be replaced (RollingUpdate)",
    )
    for new_pod in new_pods:
        assert {"name": "INFERENCE_OPERATOR_WORKERS", "value": "2"} in new_pod["spec"]["containers"][0]["env"]

    helm.run("uninstall", release, "--namespace", namespace)
    wait_release_gone(cluster, release, [namespace])
    assert not names(cluster, CLUSTER_KINDS, selector=f"app.kubernetes.io/instance={release}")
    assert crd_established(cluster), "helm uninstall must keep the CRD (crds/ is install-only)"


def test_helm_namespaced_mode_grants_roles_in_the_watched_namespaces_only(
    cluster: Cluster, crd: None, helm: Helm, make_namespace: Callable[..., str]
) -> None:
    namespace = make_namespace("helm")
    watched = [make_namespace("team"), make_namespace("team")]
    release = f"io-{uuid.uuid4().hex[:6]}"
    fullname = f"{release}-inference-operator"

    helm.run(
        "install", release, str(CHART), "--namespace", namespace, "--set", f"watchNamespaces={{{','.join(watched)}}}"
    )
    dep = wait_available(cluster, fullname, namespace, env={"INFERENCE_OPERATOR_NAMESPACES": ",".join(watched)})
    assert [a for a in dep["spec"]["template"]["spec"]["containers"][0]["args"] if "namespace" in a] == [
        f"--namespace={ns}" for ns in watched
    ]
    for ns in watched:
        assert names(cluster, "roles,rolebindings", namespace=ns) == [
            f"role.rbac.authorization.k8s.io/{fullname}",
            f"rolebinding.rbac.authorization.k8s.io/{fullname}",
        ]
    assert not names(cluster, CLUSTER_RBAC_KINDS, selector=f"app.kubernetes.io/instance={release}")
    assert names(cluster, "roles,rolebindings", namespace=namespace) == [  # the Lease's, in its own namespace
        f"role.rbac.authorization.k8s.io/{fullname}-leader-election",
        f"rolebinding.rbac.authorization.k8s.io/{fullname}-leader-election",
    ]
    binding = cluster.kubectl.json("get", "mutatingadmissionpolicybinding", f"{fullname}-finalizer")
    [selector] = binding["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"]
    assert selector == {"key": "kubernetes.io/metadata.name", "operator": "In", "values": watched}

    helm.run("uninstall", release, "--namespace", namespace)
    wait_release_gone(cluster, release, [namespace, *watched])
    assert crd_established(cluster)


# kustomize ------------------------------------------------------------------------------------


def test_kubectl_apply_k_deploy_installs_the_operator(cluster: Cluster, crd: None) -> None:
    if cluster.kubectl.get("namespace", KUSTOMIZE_NAMESPACE, "default") is not None:
        pytest.fail(
            f"namespace {KUSTOMIZE_NAMESPACE} already exists in this cluster; this test installs deploy/ there "
            "and deletes it afterwards, so it refuses to touch an existing install"
        )
    rendered = [doc for doc in yaml.safe_load_all(cluster.kubectl.run("kustomize", str(ROOT / "deploy")).stdout) if doc]
    kinds = sorted(doc["kind"] for doc in rendered)
    assert kinds == sorted(
        [
            "Namespace",
            "CustomResourceDefinition",
            "MutatingAdmissionPolicy",
            "MutatingAdmissionPolicyBinding",
            "ValidatingAdmissionPolicy",  # confinement: Deployments
            "ValidatingAdmissionPolicyBinding",
            "ValidatingAdmissionPolicy",  # confinement: Services
            "ValidatingAdmissionPolicyBinding",
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",
            "RoleBinding",
            "ClusterRole",
            "ClusterRole",
            "Deployment",
            "PodDisruptionBudget",
        ]
    )
    created = [doc for doc in rendered if doc["kind"] not in SUITE_KINDS]
    try:
        cluster.kubectl.run("apply", "-k", str(ROOT / "deploy"))
        assert crd_established(cluster)
        namespace = cluster.kubectl.get("namespace", KUSTOMIZE_NAMESPACE, "default") or {}
        assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
        dep = wait_available(cluster, "inference-operator", KUSTOMIZE_NAMESPACE)
        assert dep["spec"]["template"]["spec"]["serviceAccountName"] == "inference-operator"
    finally:
        cluster.kubectl.run(
            "delete", "-f", "-", "--ignore-not-found", "--wait=false", stdin=yaml.safe_dump_all(created)
        )
    wait_until(
        lambda: (
            not any(
                cluster.kubectl.run(
                    "get",
                    doc["kind"],
                    doc["metadata"]["name"],
                    *_namespace_args(doc),
                    "--ignore-not-found",
                    "-o",
                    "name",
                ).stdout.strip()
                for doc in created
            )
        ),
        timeout=TIMEOUT,
        what=f"what `kubectl apply -k deploy/` made but the CRD and policy to be deleted ({KUSTOMIZE_NAMESPACE} too)",
    )
    assert crd_established(cluster), "the CRD stays: the rest of the suite uses it"


def _namespace_args(doc: Obj) -> list[str]:
    namespace = doc["metadata"].get("namespace")
    return ["-n", namespace] if namespace else []
