"""The unhappy path on a real control plane: every stall explained, external state repaired.

Covers: a same-named Service someone else made (invisible to the operator's label-selected
watch) gives Ready=False/ChildConflict naming it and is left untouched, and deleting it lets
the object converge; a ResourceQuota that forbids Services gives Ready=False/ChildForbidden
quoting the API server's "exceeded quota" with exactly one Warning Event, and lifting the quota
lets it converge; pods the namespace's Pod Security level refuses at admission give
Ready=False/PodsRefused quoting the API server, and lifting the level lets it converge; a record
the load balancer lost is registered again within a resync.
"""

from __future__ import annotations

from typing import Any

from inference_operator.lb.http import HttpLoadBalancer
from inference_operator.lb.registry import RegistryServer

from .conftest import RESYNC_SECONDS, Cluster
from .harness import condition, is_ready, wait_until

TIMEOUT = 90


def llama(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "serving.inference-operator.dev/v1",
        "kind": "InferenceService",
        "metadata": {"name": name},
        "spec": {"image": "vllm/vllm-openai:v0.7.0", "model": "m", "replicas": 1},
    }


def stalled_with(reason: str) -> Any:
    return lambda obj: condition(obj, "Ready").get("reason") == reason


def test_a_same_named_foreign_service_is_reported_and_left_alone(cluster: Cluster, namespace: str) -> None:
    cluster.kubectl.run("create", "service", "clusterip", "llama", "--tcp=80:8080", "-n", namespace)
    cluster.kubectl.apply(llama("llama"), namespace)
    obj = cluster.kubectl.wait_for(
        "infsvc", "llama", namespace, stalled_with("ChildConflict"), what="Ready=False/ChildConflict", timeout=TIMEOUT
    )
    ready = condition(obj, "Ready")
    assert ready["status"] == "False" and obj["status"]["phase"] == "Failed"
    assert (
        f"Service {namespace}/llama already exists but is not controlled by this InferenceService" in ready["message"]
    )
    foreign = cluster.kubectl.get("service", "llama", namespace)
    assert foreign is not None and not foreign["metadata"].get("ownerReferences")
    assert foreign["spec"]["ports"][0]["port"] == 80, "the foreign Service was not touched"
    cluster.kubectl.run("delete", "service", "llama", "-n", namespace)
    cluster.kubectl.wait_for("infsvc", "llama", namespace, is_ready, what="Ready after the conflict", timeout=TIMEOUT)


def test_a_quota_forbidding_services_is_reported_once_and_lifting_it_converges(
    cluster: Cluster, namespace: str
) -> None:
    cluster.kubectl.run("create", "quota", "no-services", "--hard=services=0", "-n", namespace)
    wait_until(
        lambda: (q := cluster.kubectl.get("quota", "no-services", namespace)) and (q.get("status") or {}).get("hard"),
        timeout=30,
        what="the quota controller to fill in the quota's status",
    )
    cluster.kubectl.apply(llama("llama"), namespace)
    obj = cluster.kubectl.wait_for(
        "infsvc", "llama", namespace, stalled_with("ChildForbidden"), what="Ready=False/ChildForbidden", timeout=TIMEOUT
    )
    message = condition(obj, "Ready")["message"]
    assert message.startswith(f"cannot create Service {namespace}/llama: the API server answered 403 Forbidden: ")
    assert "exceeded quota: no-services" in message
    assert cluster.kubectl.get("deployment", "llama", namespace) is not None, "the Deployment is still written"
    events = cluster.kubectl.json(
        "get", "events", "-n", namespace, "--field-selector", "involvedObject.name=llama,reason=ChildForbidden"
    )["items"]
    assert len(events) == 1 and events[0]["type"] == "Warning", events
    cluster.kubectl.run("delete", "quota", "no-services", "-n", namespace)
    cluster.kubectl.wait_for("infsvc", "llama", namespace, is_ready, what="Ready after the quota", timeout=TIMEOUT)


def test_pods_a_restricted_namespace_refuses_are_reported_with_the_api_servers_words(
    cluster: Cluster, namespace: str
) -> None:
    # The server container drops every capability and escalates nothing, but it does not
    # promise a non-root user (vLLM's own image runs as root): the restricted standard refuses
    # the pods at admission, so there is no pod to ask, only the Deployment's ReplicaFailure.
    cluster.kubectl.run("label", "namespace", namespace, "pod-security.kubernetes.io/enforce=restricted")
    cluster.kubectl.apply(llama("llama"), namespace)
    obj = cluster.kubectl.wait_for(
        "infsvc", "llama", namespace, stalled_with("PodsRefused"), what="Ready=False/PodsRefused", timeout=TIMEOUT
    )
    message = condition(obj, "Ready")["message"]
    assert message.startswith("0 of 1 replicas ready; the API server refuses the pods: ")
    assert 'violates PodSecurity "restricted:latest"' in message and "runAsNonRoot" in message
    assert obj["status"]["phase"] == "Failed"
    cluster.kubectl.run("label", "namespace", namespace, "pod-security.kubernetes.io/enforce-")
    cluster.kubectl.wait_for(
        "infsvc", "llama", namespace, is_ready, what="Ready when pods are allowed", timeout=TIMEOUT
    )


def test_a_record_the_load_balancer_lost_is_registered_again_within_a_resync(
    cluster: Cluster, namespace: str, registry: RegistryServer
) -> None:
    cluster.kubectl.apply(llama("llama"), namespace)
    obj = cluster.kubectl.wait_for("infsvc", "llama", namespace, is_ready, what="Ready", timeout=TIMEOUT)
    key = f"{namespace}/llama"
    balancer = HttpLoadBalancer(registry.url)
    before = balancer.lookup(key)
    assert before is not None and obj["status"]["loadBalancer"]["id"] == before.id
    balancer.release(key)  # the balancer forgets, behind the operator's back
    again = wait_until(
        lambda: balancer.lookup(key), timeout=RESYNC_SECONDS * 3 + 10, what="the record to be registered again"
    )
    assert again.target == before.target
    cluster.kubectl.wait_for(
        "infsvc",
        "llama",
        namespace,
        lambda o: is_ready(o) and o["status"]["loadBalancer"]["id"] == again.id,
        what="status to name the new record",
        timeout=TIMEOUT,
    )
