"""The watch rule on a real cluster: which InferenceService a child's watch event wakes.

Covers: when a Deployment's controller reference is re-pointed from one InferenceService to
another, the old owner is reconciled at once — with resync off, only the watch event can wake it
— and reports the conflict in status, as it does on the simulator
(tests/unit/reconcile/test_watches.py runs the same change there).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

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


def test_the_owner_whose_deployment_was_taken_is_reconciled_at_once_and_says_so(
    cluster: Cluster, namespace: str, without_resync: OperatorProcess
) -> None:
    for name in ("a", "b"):
        cluster.kubectl.apply(llama(name, replicas=1), namespace)
    for name in ("a", "b"):
        wait_ready(cluster, name, namespace)
    # Nothing queued, nothing delayed (a requeue asked for while the rollout went on would
    # otherwise wake "a" by itself): from here on only a watch event can.
    wait_until(
        lambda: (st := without_resync.stats())["workqueue_depth"] == 0 and st["workqueue_waiting"] == 0,
        timeout=60,
        what="the operator to have nothing queued or delayed",
    )
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
