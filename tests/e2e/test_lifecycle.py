"""The seed's four scenarios on a real control plane, plus every sample manifest.

Covers: the CRD is Established and every sample in deploy/samples reaches Ready; create →
Ready with readyReplicas; scale + upgrade → Deployment image and replicas patched,
observedGeneration 2, Ready again; delete → load balancer released exactly once (checked in
the registry), CR gone, Deployment and Service collected by the real garbage collector;
drift → `kubectl scale deployment --replicas=99` corrected, a deleted Service recreated.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from inference_operator.lb.registry import RegistryServer

from .conftest import Cluster
from .harness import FINALIZER, ROOT, condition, is_ready, wait_until
from .workloads import TIMEOUT, llama, wait_ready

SAMPLES = sorted((ROOT / "deploy" / "samples").glob("*.yaml"))


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.name for s in SAMPLES])
def test_every_sample_becomes_ready(cluster: Cluster, namespace: str, sample: Path) -> None:
    name = yaml.safe_load(sample.read_text())["metadata"]["name"]
    cluster.kubectl.run("apply", "-n", namespace, "-f", str(sample))
    obj = wait_ready(cluster, name, namespace)
    assert obj["status"]["phase"] == "Ready"
    assert obj["status"]["readyReplicas"] == obj["spec"]["replicas"]


def test_create_becomes_ready_with_children_and_a_registration(
    cluster: Cluster, namespace: str, registry: RegistryServer
) -> None:
    cluster.kubectl.apply(llama("llama"), namespace)
    obj = wait_ready(cluster, "llama", namespace)
    assert obj["status"]["readyReplicas"] == 2 and obj["status"]["phase"] == "Ready"
    assert obj["metadata"]["finalizers"] == [FINALIZER]
    dep = cluster.kubectl.get("deployment", "llama", namespace)
    svc = cluster.kubectl.get("service", "llama", namespace)
    assert dep is not None and svc is not None
    for child in (dep, svc):
        (ref,) = child["metadata"]["ownerReferences"]
        assert ref["uid"] == obj["metadata"]["uid"] and ref["controller"] and ref["blockOwnerDeletion"]
    key = f"{namespace}/llama"
    assert key in registry.registrations()
    assert obj["status"]["loadBalancer"]["id"] == registry.registrations()[key].id
    assert condition(obj, "LoadBalancerReady")["status"] == "True"
    table = cluster.kubectl.run("get", "infsvc", "llama", "-n", namespace).stdout
    assert table.split("\n")[0].split() == [
        "NAME",
        "READY",
        "REPLICAS",
        "AVAILABLE",
        "MODEL",
        "PHASE",
        "ROLLOUT",
        "AGE",
    ]


def test_a_replace_rollout_is_written_as_the_real_api_accepts_it_and_finishes(cluster: Cluster, namespace: str) -> None:
    cluster.kubectl.apply(llama("llama", rollout={"strategy": "Replace"}), namespace)
    obj = wait_ready(cluster, "llama", namespace)
    assert obj["status"]["rollout"]["plan"] == "Replace"
    dep = cluster.kubectl.get("deployment", "llama", namespace)
    assert dep is not None and dep["spec"]["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1},
    }
    cluster.kubectl.apply(llama("llama", image="vllm/vllm-openai:v0.7.0", rollout={"strategy": "Replace"}), namespace)
    cluster.kubectl.wait_for(
        "infsvc",
        "llama",
        namespace,
        lambda o: is_ready(o) and o["status"].get("observedGeneration") == 2,
        what="the Replace rollout to finish",
        timeout=TIMEOUT,
    )
    row = cluster.kubectl.run("get", "infsvc", "llama", "-n", namespace).stdout.split("\n")[1].split()
    assert row[6] == "Replace"


def test_scale_and_upgrade_patch_the_deployment_and_become_ready_again(cluster: Cluster, namespace: str) -> None:
    cluster.kubectl.apply(llama("llama"), namespace)
    wait_ready(cluster, "llama", namespace)
    cluster.kubectl.apply(llama("llama", replicas=4, image="vllm/vllm-openai:v0.7.0"), namespace)
    obj = cluster.kubectl.wait_for(
        "infsvc",
        "llama",
        namespace,
        lambda o: o["status"].get("observedGeneration") == 2 and is_ready(o),
        timeout=TIMEOUT,
        what="generation 2 to be Ready",
    )
    assert obj["status"]["readyReplicas"] == 4
    dep = cluster.kubectl.get("deployment", "llama", namespace)
    assert dep is not None and dep["spec"]["replicas"] == 4
    assert dep["spec"]["template"]["spec"]["containers"][0]["image"] == "vllm/vllm-openai:v0.7.0"


def test_scale_subresource_drives_replicas(cluster: Cluster, namespace: str) -> None:
    cluster.kubectl.apply(llama("llama", replicas=1), namespace)
    wait_ready(cluster, "llama", namespace)
    cluster.kubectl.run("scale", "infsvc", "llama", "-n", namespace, "--replicas=3")
    cluster.kubectl.wait_for(
        "deployment",
        "llama",
        namespace,
        lambda d: d["spec"]["replicas"] == 3,
        what="the Deployment to follow kubectl scale",
        timeout=TIMEOUT,
    )
    obj = wait_ready(cluster, "llama", namespace)
    assert obj["status"]["selector"] == "serving.inference-operator.dev/inferenceservice=llama"


def test_delete_releases_the_load_balancer_once_and_children_are_collected(
    cluster: Cluster, namespace: str, registry: RegistryServer
) -> None:
    cluster.kubectl.apply(llama("llama"), namespace)
    wait_ready(cluster, "llama", namespace)
    key = f"{namespace}/llama"
    cluster.kubectl.run("delete", "infsvc", "llama", "-n", namespace, "--wait=false")
    cluster.kubectl.wait_gone("infsvc", "llama", namespace, timeout=TIMEOUT, what="the InferenceService to be gone")
    wait_until(
        lambda: (
            cluster.kubectl.get("deployment", "llama", namespace) is None
            and cluster.kubectl.get("service", "llama", namespace) is None
        ),
        timeout=TIMEOUT,
        what="the garbage collector to delete the Deployment and Service",
    )
    assert registry.stats()["release_calls"].get(key) == 1
    assert key not in registry.registrations()


def test_drift_is_corrected_and_a_deleted_service_recreated(cluster: Cluster, namespace: str) -> None:
    cluster.kubectl.apply(llama("llama", replicas=3), namespace)
    wait_ready(cluster, "llama", namespace)
    cluster.kubectl.run("scale", "deployment", "llama", "-n", namespace, "--replicas=99")
    cluster.kubectl.wait_for(
        "deployment",
        "llama",
        namespace,
        lambda d: d["spec"]["replicas"] == 3,
        what="replicas to be corrected back to 3",
        timeout=TIMEOUT,
    )
    old_uid = (cluster.kubectl.get("service", "llama", namespace) or {})["metadata"]["uid"]
    cluster.kubectl.run("delete", "service", "llama", "-n", namespace)
    svc = cluster.kubectl.wait_for(
        "service",
        "llama",
        namespace,
        lambda s: bool(s["metadata"]["uid"] != old_uid),
        timeout=TIMEOUT,
        what="the Service to be recreated",
    )
    assert svc["spec"]["selector"] == {"serving.inference-operator.dev/inferenceservice": "llama"}
    wait_ready(cluster, "llama", namespace)
