"""The finalizer admission policy (deploy/admission) on a real API server.

Covers: the API server itself adds the operator's finalizer to a new InferenceService (asked with
a server-side dry run: no operator involved) and keeps the finalizers a user set; with the policy
a new object converges without the operator ever patching the InferenceService (Deployment,
Service and status writes only, counted in the audit log); an object whose finalizer was taken
away gets it back from the operator, as on a cluster without the policy.

The session's `crd` fixture installs the policy, as `kubectl apply -k deploy/` and the Helm chart do.
"""

from __future__ import annotations

import json

from .conftest import Cluster
from .harness import FINALIZER, OperatorProcess, finalizers_on_create, probe_object
from .workloads import TIMEOUT, llama, wait_ready


def test_the_api_server_adds_the_finalizer_on_create(cluster: Cluster, namespace: str) -> None:
    assert finalizers_on_create(cluster.kubectl, probe_object(namespace)) == [FINALIZER]


def test_the_policy_keeps_the_finalizers_a_user_set(cluster: Cluster, namespace: str) -> None:
    obj = probe_object(namespace)
    obj["metadata"]["finalizers"] = ["example.com/backup"]
    assert finalizers_on_create(cluster.kubectl, obj) == ["example.com/backup", FINALIZER]
    obj["metadata"]["finalizers"] = [FINALIZER, "example.com/backup"]
    assert finalizers_on_create(cluster.kubectl, obj) == [FINALIZER, "example.com/backup"], "no duplicate"


def test_a_new_object_converges_without_a_patch_of_the_inference_service(
    cluster: Cluster, namespace: str, operator: OperatorProcess
) -> None:
    mark = cluster.audit.mark() if cluster.audit else 0
    cluster.kubectl.apply(llama("guarded", replicas=1), namespace)
    wait_ready(cluster, "guarded", namespace)
    operator.wait_idle(reconciles_at_least=operator.stats()["reconcile_total"])
    assert f"Added finalizer name=guarded namespace={namespace}" not in operator.log_tail(500)
    if cluster.audit:
        # One Deployment, one Service, then status writes only (one per change the
        # Deployment controller reports while the pods start).
        writes = cluster.audit.operator_writes_since(mark)
        done = [" ".join(w.split()[:2]) for w in writes if w.endswith(f" {namespace}/guarded")]
        assert done[:2] == ["patch deployments/", "patch services/"], done
        assert set(done[2:]) == {"update inferenceservices/status"}, done


def test_the_operator_puts_back_a_finalizer_that_was_taken_away(
    cluster: Cluster, namespace: str, operator: OperatorProcess
) -> None:
    cluster.kubectl.apply(llama("stripped", replicas=1), namespace)
    wait_ready(cluster, "stripped", namespace)
    patch = [{"op": "remove", "path": "/metadata/finalizers"}]
    cluster.kubectl.run("patch", "infsvc", "stripped", "-n", namespace, "--type=json", "-p", json.dumps(patch))
    obj = cluster.kubectl.wait_for(
        "infsvc",
        "stripped",
        namespace,
        lambda o: o["metadata"].get("finalizers") == [FINALIZER],
        what="the operator to add its finalizer again",
        timeout=TIMEOUT,
    )
    assert obj["status"]["phase"] == "Ready"
