"""The operator confined by admission (deploy/admission/confinement-policy.yaml), on a real API server.

Covers: with the operator's own token, a Deployment it does not own can be neither patched nor
taken over by adding the owner label (while a child whose label was removed is healed: see
test_children_exactly.py), and a Deployment that looks like one of its children but
mounts a Secret, runs as another ServiceAccount or is not owned by an InferenceService cannot be
created, each refused with the policy's message; a Service of type NodePort is refused; the
same requests by an administrator pass (the policy binds the operator's identity only); and
the operator, confined, still converges an InferenceService.

The session's `crd` fixture installs the policy for the suite operator's ServiceAccount.
"""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from .conftest import Cluster
from .harness import Kubectl, OperatorProcess, wait_until
from .workloads import llama, wait_ready

Obj = dict[str, Any]
OWNER = {
    "apiVersion": "serving.inference-operator.dev/v1",
    "kind": "InferenceService",
    "name": "lookalike",
    "uid": "00000000-0000-0000-0000-000000000001",
    "controller": True,
}
LABELS = {
    "serving.inference-operator.dev/inferenceservice": "lookalike",
    "app.kubernetes.io/managed-by": "inference-operator",
}


def lookalike(namespace: str) -> Obj:
    """A Deployment as the operator builds one, with the owner reference of an InferenceService."""
    pod = {
        "automountServiceAccountToken": False,
        "containers": [
            {
                "name": "server",
                "image": "vllm/vllm-openai:v0.6.3",
                "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
            }
        ],
        "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "lookalike", "namespace": namespace, "labels": dict(LABELS), "ownerReferences": [OWNER]},
        "spec": {
            "selector": {"matchLabels": {"app": "lookalike"}},
            "template": {"metadata": {"labels": {"app": "lookalike"}}, "spec": pod},
        },
    }


@pytest.fixture()
def as_operator(cluster: Cluster, operator_kubeconfig: Path) -> Kubectl:
    return Kubectl(operator_kubeconfig, cluster.kubectl.env)


def refused(kubectl: Kubectl, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return kubectl.run(*args, stdin=stdin, check=False)


def wait_enforced(as_operator: Kubectl, namespace: str) -> None:
    """Policies take effect once the API server's informer has them: a moment after the apply."""
    secret = lookalike(namespace)
    secret["spec"]["template"]["spec"]["volumes"].append({"name": "s", "secret": {"secretName": "any"}})
    wait_until(
        lambda: (
            "emptyDir volumes only"
            in refused(as_operator, "create", "--dry-run=server", "-f", "-", stdin=json.dumps(secret)).stderr
        ),
        timeout=30,
        what="the confinement policy to take effect",
    )


def test_the_operator_cannot_patch_or_take_over_a_deployment_it_does_not_own(
    cluster: Cluster, namespace: str, as_operator: Kubectl
) -> None:
    wait_enforced(as_operator, namespace)
    cluster.kubectl.run("create", "deployment", "foreign", "--image=nginx", "-n", namespace)
    patch = refused(
        as_operator, "patch", "deployment", "foreign", "-n", namespace, "--type=merge", "-p", '{"spec":{"replicas":3}}'
    )
    assert (
        patch.returncode != 0
        and "may only write Deployments that carry its owner and managed-by labels" in patch.stderr
    )
    takeover = json.dumps({"metadata": {"labels": LABELS}})
    grab = refused(as_operator, "patch", "deployment", "foreign", "-n", namespace, "--type=merge", "-p", takeover)
    assert grab.returncode != 0 and "may not take over a Deployment it did not create" in grab.stderr
    assert (
        cluster.kubectl.run(
            "patch", "deployment", "foreign", "-n", namespace, "--type=merge", "-p", takeover
        ).returncode
        == 0
    )


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (
            lambda d: d["spec"]["template"]["spec"]["volumes"].append({"name": "s", "secret": {"secretName": "x"}}),
            "emptyDir volumes only",
        ),
        (lambda d: d["spec"]["template"]["spec"].update(serviceAccountName="admin"), "no ServiceAccount of their own"),
        (lambda d: d["spec"]["template"]["spec"].update(hostNetwork=True), "host's network"),
        (lambda d: d["metadata"].pop("ownerReferences"), "controlled by an InferenceService"),
    ],
)
def test_the_operator_cannot_create_a_deployment_it_could_not_have_built(
    cluster: Cluster, namespace: str, as_operator: Kubectl, change: Any, words: str
) -> None:
    wait_enforced(as_operator, namespace)
    assert (
        refused(as_operator, "create", "--dry-run=server", "-f", "-", stdin=json.dumps(lookalike(namespace))).returncode
        == 0
    )
    bad = copy.deepcopy(lookalike(namespace))
    change(bad)
    answer = refused(as_operator, "create", "--dry-run=server", "-f", "-", stdin=json.dumps(bad))
    assert answer.returncode != 0 and words in answer.stderr, answer.stderr
    assert refused(cluster.kubectl, "create", "--dry-run=server", "-f", "-", stdin=json.dumps(bad)).returncode == 0


def test_the_operator_cannot_create_a_node_port_service(namespace: str, as_operator: Kubectl) -> None:
    wait_enforced(as_operator, namespace)
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "lookalike", "namespace": namespace, "labels": LABELS, "ownerReferences": [OWNER]},
        "spec": {"type": "NodePort", "ports": [{"port": 80}]},
    }
    answer = refused(as_operator, "create", "--dry-run=server", "-f", "-", stdin=json.dumps(service))
    assert answer.returncode != 0 and "ClusterIP Services without external IPs" in answer.stderr


def test_the_confined_operator_still_converges(
    cluster: Cluster, namespace: str, as_operator: Kubectl, operator: OperatorProcess
) -> None:
    wait_enforced(as_operator, namespace)
    cluster.kubectl.apply(llama("confined", replicas=1), namespace)
    wait_ready(cluster, "confined", namespace)
