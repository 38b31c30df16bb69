"""The e2e operator runs with a ServiceAccount token bound to the shipped ClusterRole, and
that identity can do what the operator needs and nothing more (`kubectl auth can-i`).

Covers: it may watch and patch InferenceServices, write their status and finalizers, create
and patch Deployments and Services, list and watch Pods and Nodes (the rollouts' GPU count; never
get a Node), create Events; it may not read Secrets or
ConfigMaps, delete anything, create Pods, touch RBAC, or impersonate; the whole scenario suite
runs under this identity (the `operator` fixture uses it).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import OPERATOR_NAMESPACE, Cluster

ALLOWED = [
    ("watch", "inferenceservices.serving.inference-operator.dev"),
    ("patch", "inferenceservices.serving.inference-operator.dev"),
    ("update", "inferenceservices.serving.inference-operator.dev/status"),
    ("update", "inferenceservices.serving.inference-operator.dev/finalizers"),
    ("create", "deployments.apps"),
    ("patch", "services"),
    ("list", "pods"),
    ("watch", "pods"),
    ("list", "nodes"),
    ("watch", "nodes"),
    ("create", "events"),
    ("patch", "events"),
    ("get", "services"),
    ("get", "deployments.apps"),
]
DENIED = [
    ("get", "secrets"),
    ("list", "secrets"),
    ("get", "configmaps"),
    ("delete", "deployments.apps"),
    ("delete", "services"),
    ("delete", "inferenceservices.serving.inference-operator.dev"),
    ("create", "pods"),
    ("create", "inferenceservices.serving.inference-operator.dev"),
    ("create", "rolebindings.rbac.authorization.k8s.io"),
    ("escalate", "clusterroles.rbac.authorization.k8s.io"),
    ("bind", "clusterroles.rbac.authorization.k8s.io"),
    ("impersonate", "users"),
    ("get", "nodes"),
    ("patch", "nodes"),
    ("get", "pods"),
    # granted until the RBAC usage check (test_rbac_usage.py) showed nothing used them
    ("update", "inferenceservices.serving.inference-operator.dev"),
    ("get", "inferenceservices.serving.inference-operator.dev"),
    ("patch", "inferenceservices.serving.inference-operator.dev/status"),
    ("list", "namespaces"),
]


def can_i(cluster: Cluster, kubeconfig: Path, verb: str, resource: str) -> bool:
    """``kubectl auth can-i``; ``resource/sub`` asks about the subresource (``resource/name`` would
    ask about an object named ``sub``)."""
    resource, _, subresource = resource.partition("/")
    extra = (f"--subresource={subresource}",) if subresource else ()
    result = cluster.kubectl.run(
        "--kubeconfig", str(kubeconfig), "auth", "can-i", verb, resource, *extra, "-n", "default", check=False
    )
    answer = result.stdout.strip()
    assert answer in ("yes", "no"), result.stderr
    return answer == "yes"


@pytest.mark.parametrize(
    ("verb", "resource"),
    ALLOWED,
    ids=[f"{v}-{r.split('.')[0]}{'-' + r.rpartition('/')[2] if '/' in r else ''}" for v, r in ALLOWED],
)
def test_the_operator_identity_may_do_what_it_needs(
    cluster: Cluster, crd: None, operator_kubeconfig: Path, verb: str, resource: str
) -> None:
    assert can_i(cluster, operator_kubeconfig, verb, resource)


@pytest.mark.parametrize(
    ("verb", "resource"),
    DENIED,
    ids=[f"{v}-{r.split('.')[0]}{'-' + r.rpartition('/')[2] if '/' in r else ''}" for v, r in DENIED],
)
def test_the_operator_identity_may_not_do_anything_else(
    cluster: Cluster, crd: None, operator_kubeconfig: Path, verb: str, resource: str
) -> None:
    assert not can_i(cluster, operator_kubeconfig, verb, resource)


def test_the_operator_identity_is_a_service_account_not_admin(cluster: Cluster, operator_kubeconfig: Path) -> None:
    who = cluster.kubectl.run(
        "--kubeconfig", str(operator_kubeconfig), "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"
    ).stdout
    assert who == "system:serviceaccount:io-e2e-system:inference-operator"


def test_the_operator_identity_may_use_leases_in_its_own_namespace_only(
    cluster: Cluster, operator_kubeconfig: Path
) -> None:
    def lease(verb: str, namespace: str) -> bool:
        args = ("auth", "can-i", verb, "leases.coordination.k8s.io", "-n", namespace)
        return cluster.kubectl.run("--kubeconfig", str(operator_kubeconfig), *args, check=False).stdout.strip() == "yes"

    assert all(lease(verb, OPERATOR_NAMESPACE) for verb in ("get", "create", "update"))
    assert not lease("delete", OPERATOR_NAMESPACE)
    assert not any(lease(verb, "default") for verb in ("get", "create", "update"))
