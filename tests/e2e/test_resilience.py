"""What happens when things go wrong, on a real control plane.

Covers: the operator stopped while an InferenceService is deleted → it stays Terminating
(finalizer, children kept); operator back → load balancer released once, object gone. The
registry failing → deletion waits with the finalizer in place and says why, completes after
recovery, nothing leaked. Pods that cannot be scheduled (more GPUs than any node has) →
Ready=False in words a person understands, then phase Failed past the progress deadline.
"""

from __future__ import annotations

from inference_operator.lb.registry import RegistryServer

from .conftest import Cluster
from .harness import FINALIZER, OperatorProcess, condition, wait_until
from .workloads import TIMEOUT, llama, wait_ready


def test_deletion_waits_for_a_stopped_operator_then_completes(
    cluster: Cluster, namespace: str, operator: OperatorProcess, registry: RegistryServer
) -> None:
    cluster.kubectl.apply(llama("llama"), namespace)
    wait_ready(cluster, "llama", namespace)
    operator.stop()
    cluster.kubectl.run("delete", "infsvc", "llama", "-n", namespace, "--wait=false")
    obj = cluster.kubectl.wait_for(
        "infsvc",
        "llama",
        namespace,
        lambda o: bool(o["metadata"].get("deletionTimestamp")),
        timeout=30,
        what="the InferenceService to be marked for deletion",
    )
    assert obj["metadata"]["finalizers"] == [FINALIZER]
    assert cluster.kubectl.get("deployment", "llama", namespace) is not None
    assert f"{namespace}/llama" in registry.registrations()
    operator.start()
    cluster.kubectl.wait_gone(
        "infsvc", "llama", namespace, timeout=TIMEOUT, what="the InferenceService to be gone once the operator is back"
    )
    assert registry.stats()["release_calls"].get(f"{namespace}/llama") == 1
    assert f"{namespace}/llama" not in registry.registrations()


def test_a_failing_registry_holds_the_finalizer_until_it_recovers(
    cluster: Cluster, namespace: str, registry: RegistryServer
) -> None:
    cluster.kubectl.apply(llama("llama"), namespace)
    wait_ready(cluster, "llama", namespace)
    key = f"{namespace}/llama"
    registry.set_faults(fail_releases=1000)
    try:
        cluster.kubectl.run("delete", "infsvc", "llama", "-n", namespace, "--wait=false")
        wait_until(
            lambda: registry.stats()["release_calls"].get(key, 0) >= 3,
            timeout=TIMEOUT,
            what="the operator to retry the release",
        )
        obj = cluster.kubectl.get("infsvc", "llama", namespace)
        assert obj is not None and obj["metadata"]["finalizers"] == [FINALIZER]
        lb = wait_until(
            lambda: (
                condition(cluster.kubectl.get("infsvc", "llama", namespace), "LoadBalancerReady").get("reason")
                == "LoadBalancerFailed"
                and cluster.kubectl.get("infsvc", "llama", namespace)
            ),
            timeout=TIMEOUT,
            what="status to explain the failing release",
        )
        assert lb["status"]["phase"] == "Terminating"
        assert "finalizer stays" in condition(lb, "LoadBalancerReady")["message"]
    finally:
        registry.set_faults()
    cluster.kubectl.wait_gone(
        "infsvc", "llama", namespace, timeout=TIMEOUT, what="the deletion to complete after the registry recovered"
    )
    assert key not in registry.registrations()


def test_unschedulable_pods_are_explained_and_fail_past_the_deadline(cluster: Cluster, namespace: str) -> None:
    too_big = cluster.gpus_per_node * 2
    cluster.kubectl.apply(llama("huge", replicas=1, gpu=too_big, progressDeadlineSeconds=10), namespace)
    obj = cluster.kubectl.wait_for(
        "infsvc",
        "huge",
        namespace,
        lambda o: condition(o, "Ready").get("reason") in ("PodsUnschedulable", "ProgressDeadlineExceeded"),
        timeout=TIMEOUT,
        what="status to say the pods cannot be scheduled",
    )
    ready = condition(obj, "Ready")
    assert ready["status"] == "False"
    assert "cannot be scheduled" in ready["message"] and "Insufficient nvidia.com/gpu" in ready["message"]
    failed = cluster.kubectl.wait_for(
        "infsvc",
        "huge",
        namespace,
        lambda o: o["status"].get("phase") == "Failed",
        timeout=TIMEOUT,
        what="phase Failed after the progress deadline",
    )
    assert condition(failed, "Progressing")["reason"] == "ProgressDeadlineExceeded"
    assert "Insufficient nvidia.com/gpu" in condition(failed, "Ready")["message"]
