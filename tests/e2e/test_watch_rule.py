"""The watch rule on a real cluster: which InferenceService a child's watch event wakes.

Covers: when a Deployment's controller reference is re-pointed from one InferenceService to
another, the old owner is reconciled at once — with resync off, only the watch event can wake it
— and reports the conflict in status, as it does on the simulator
(tests/unit/reconcile/test_watches.py runs the same change there). And when the scheduler's
words for a pending pod change while its Deployment stays put (here another writer changes
them, as kube-scheduler does when it tries the pod again after the pool changed), the operator's
Pod watch wakes the service at once and status quotes the new words
(tests/unit/reconcile/test_reconciler.py shows the same on the simulator, with a node joining).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from inference_operator.api.constants import OWNER_LABEL

from .conftest import Cluster
from .harness import OperatorProcess, condition, wait_until
from .workloads import llama, wait_ready

CONFLICT_TIMEOUT = 30.0
"""Far shorter than any periodic pass could explain: resync is off and a Ready object is not requeued."""


@pytest.fixture()
def without_resync(operator: OperatorProcess) -> Iterator[OperatorProcess]:
    """The suite's operator restarted with resync off, then put back as it was."""
    saved = list(operator.extra_args)
    at = saved.index("--resync-period")
    operator.stop()
    operator.extra_args = [*saved[: at + 1], "0", *saved[at + 2 :]]
    operator.start()
    try:
        yield operator
    finally:
        operator.stop()
        operator.extra_args = saved
        operator.start()


def idle(operator: OperatorProcess) -> None:
    """Wait until the operator has nothing queued or delayed: from then on only a watch event
    can wake a pass (resync is off, and a requeue asked for earlier would wake one by itself)."""
    wait_until(
        lambda: (st := operator.stats())["workqueue_depth"] == 0 and st["workqueue_waiting"] == 0,
        timeout=60,
        what="the operator to have nothing queued or delayed",
    )


def test_the_owner_whose_deployment_was_taken_is_reconciled_at_once_and_says_so(
    cluster: Cluster, namespace: str, without_resync: OperatorProcess
) -> None:
    for name in ("a", "b"):
        cluster.kubectl.apply(llama(name, replicas=1), namespace)
    for name in ("a", "b"):
        wait_ready(cluster, name, namespace)
    idle(without_resync)  # a requeue asked for while the rollout went on would wake "a" by itself
    b = cluster.kubectl.get("infsvc", "b", namespace)
    assert b is not None
    reference = {
        "apiVersion": "serving.inference-operator.dev/v1",
        "kind": "InferenceService",
        "name": "b",
        "uid": b["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    patch = json.dumps({"metadata": {"ownerReferences": [reference]}})
    cluster.kubectl.run("patch", "deployment", "a", "-n", namespace, "--type=merge", "-p", patch)

    def conflict_reported() -> bool:
        a = cluster.kubectl.get("infsvc", "a", namespace)
        cond = condition(a, "DeploymentReady") if a else None
        return bool(cond and cond["status"] == "False" and cond["reason"] == "ChildConflict")

    wait_until(conflict_reported, timeout=CONFLICT_TIMEOUT, what="InferenceService a to report its Deployment taken")
    a = cluster.kubectl.get("infsvc", "a", namespace)
    assert a is not None and a["status"]["phase"] != "Ready"
    assert "not controlled by this InferenceService" in condition(a, "DeploymentReady")["message"]


def pod_words(cluster: Cluster, namespace: str, name: str) -> tuple[str, str] | None:
    """The name of the service's one pending pod and the scheduler's words for it, once given."""
    listed = json.loads(
        cluster.kubectl.run("get", "pods", "-n", namespace, "-l", f"{OWNER_LABEL}={name}", "-o", "json").stdout
    )
    for pod in listed.get("items") or []:
        for c in (pod.get("status") or {}).get("conditions") or []:
            if c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable":
                return pod["metadata"]["name"], str(c.get("message") or "")
    return None


def test_new_scheduler_words_for_a_pending_pod_reach_status_at_once(
    cluster: Cluster, namespace: str, without_resync: OperatorProcess
) -> None:
    # No node has the label: only a node's labels changing would make kube-scheduler try the pod
    # again (its queueing hints), so the words it gave stay put unless someone else changes them.
    cluster.kubectl.apply(llama("w", replicas=1, nodeSelector={"inference-operator.dev/nowhere": "x"}), namespace)

    def quoted(words: str) -> bool:
        found = cluster.kubectl.get("infsvc", "w", namespace)
        ready = condition(found, "Ready") if found else None
        return bool(ready and ready["reason"] == "PodsUnschedulable" and ready["message"].endswith(words))

    first = wait_until(lambda: pod_words(cluster, namespace, "w"), timeout=60, what="the pod's scheduler's words")
    pod, words = first
    wait_until(lambda: quoted(f"1 pod(s) cannot be scheduled: {words}"), timeout=60, what="status to quote them")
    idle(without_resync)
    deployment = cluster.kubectl.get("deployment", "w", namespace)
    assert deployment is not None
    new = f"{words} (and again, later)"
    scheduled = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": new}
    patch = json.dumps({"status": {"conditions": [scheduled]}})
    cluster.kubectl.run("patch", "pod", pod, "-n", namespace, "--subresource=status", "--type=merge", "-p", patch)
    wait_until(lambda: quoted(f"1 pod(s) cannot be scheduled: {new}"), timeout=CONFLICT_TIMEOUT, what="the new words")
    after = cluster.kubectl.get("deployment", "w", namespace)
    assert after is not None
    assert after["metadata"]["resourceVersion"] == deployment["metadata"]["resourceVersion"], "only the words moved"
