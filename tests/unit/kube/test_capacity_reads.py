"""The real-cluster runtime's Node and Pod cache, what a rollout counts free GPUs from.

Covers:
- Slimming keeps what the count reads: the free GPUs, the replicas that fit and the stall
  found from slimmed Nodes and Pods (taken from the simulated cluster, pending pods included)
  are those found from the full objects; what it never reads (managedFields, env, volumes,
  container statuses, images) is gone.
- Cluster mode primes Nodes and unfinished Pods (the field selector) with the watched kinds;
  their watch events fill the cache and wake no pass (but below); ``Backend.cached`` answers
  them; the consistency check covers them and enqueues nothing for a vanished Pod of no service.
- Pods are found by their owner label (``Backend.cached_owned``), by name, through the prime,
  watch events (a label changed moves a pod, an older event changes nothing, a delete drops
  it) and the consistency check's drops; a Pod event wakes only the service whose pod's
  scheduler's words changed (given, changed, or gone with the pod, also when the consistency
  check finds it gone).
- Namespaced mode and ``READ_CAPACITY=false`` list no Node or Pod and answer None (the count
  is then unknown: status says Nodes cannot be read). A bad ``READ_CAPACITY`` names the
  variable.
- A stopped stream (``kube/streams.py``, tested there) fails liveness, naming it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import kopf
import pytest

from inference_operator.api.constants import OWNER_LABEL
from inference_operator.kube.config import ConfigError, OperatorConfig
from inference_operator.kube.manager import OperatorRuntime
from inference_operator.kube.slimming import slim_node, slim_pod
from inference_operator.operator import liveness
from inference_operator.reconcile.capacity import count_capacity
from inference_operator.reconcile.podproblems import unschedulable_message
from inference_operator.reconcile.rolloutpods import detect_stall
from inference_operator.reconcile.watches import LIVE_PODS
from inference_operator.sim.clock import FakeClock
from inference_operator.sim.simulation import Simulation

from .fakes import FakeClient, Obj


class SelectorClient(FakeClient):
    """Records each LIST's kind and field selector."""

    def __init__(self) -> None:
        super().__init__()
        self.selectors: list[tuple[str, str | None]] = []

    def iter_pages(self, kind: str, namespace: str, **kwargs: Any) -> Iterator[tuple[list[Obj], str]]:
        self.selectors.append((kind, kwargs.get("field_selector")))
        yield from super().iter_pages(kind, namespace, **kwargs)


def runtime(client: FakeClient, clock: FakeClock | None = None, **config: Any) -> OperatorRuntime:
    config.setdefault("workers", 1)
    config.setdefault("leader_election", False)
    return OperatorRuntime(OperatorConfig(**config), client, clock=clock or FakeClock(), watch_check_period=0)  # type: ignore[arg-type]


def node(name: str = "n1", rv: str = "1") -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": rv, "labels": {"pool": "a"}},
        "status": {"allocatable": {"nvidia.com/gpu": "8", "cpu": "96", "memory": "1Ti", "pods": "110"}},
    }


def pod(name: str = "p1", rv: str = "1", gpu: int = 2) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "other",
            "uid": f"uid-{name}",
            "resourceVersion": rv,
            "labels": {"app": "trainer"},
            "managedFields": [{"manager": "kubelet", "operation": "Update", "fieldsV1": {"f:status": {}}}],
            "annotations": {"note": "x" * 500},
        },
        "spec": {
            "nodeName": "n1",
            "containers": [
                {
                    "name": "train",
                    "image": "trainer:1",
                    "env": [{"name": "TOKEN", "value": "secret"}],
                    "resources": {"requests": {"nvidia.com/gpu": str(gpu)}, "limits": {"nvidia.com/gpu": str(gpu)}},
                }
            ],
            "volumes": [{"name": "data", "emptyDir": {}}],
        },
        "status": {"phase": "Running", "containerStatuses": [{"name": "train", "ready": True}]},
    }


# -- slimming -----------------------------------------------------------------------------------


def _cluster_with_a_stall() -> tuple[Simulation, Obj]:
    """Two full 8-GPU nodes, a foreign pod holding 2 GPUs, and a template change that cannot
    be placed (the default surge asks for a pod no node can take)."""
    sim = Simulation(gpus_per_node=8, nodes=2, termination_seconds=5.0)
    spec = {"image": "vllm:1", "model": "m", "replicas": 2, "gpu": 7}
    sim.apply(
        {
            "apiVersion": "serving.inference-operator.dev/v1",
            "kind": "InferenceService",
            "metadata": {"name": "llm", "namespace": "default"},
            "spec": spec,
        }
    )
    sim.run_until_quiescent(until=sim.clock.now() + 60)
    sim.apply(
        {
            "apiVersion": "serving.inference-operator.dev/v1",
            "kind": "InferenceService",
            "metadata": {"name": "llm", "namespace": "default"},
            "spec": {**spec, "image": "vllm:2"},
        }
    )
    sim.run_until_quiescent(until=sim.clock.now() + 60)
    template = sim.api.get("Deployment", "default", "llm")["spec"]["template"]
    return sim, template


def test_slimmed_nodes_and_pods_count_what_the_full_objects_count() -> None:
    sim, template = _cluster_with_a_stall()
    nodes, pods = sim.api.list("Node"), sim.api.list("Pod")
    assert any(unschedulable_message(p) for p in pods), "the scenario has a pending pod"
    slim_nodes, slim_pods = [slim_node(n) for n in nodes], [slim_pod(p) for p in pods]
    for limit in (1, 2, 5):
        assert count_capacity(template["spec"], nodes=slim_nodes, pods=slim_pods, limit=limit) == count_capacity(
            template["spec"], nodes=nodes, pods=pods, limit=limit
        )
    full_stall = detect_stall(gpu=7, old_pods=2, pods=pods)
    assert full_stall is not None
    assert detect_stall(gpu=7, old_pods=2, pods=slim_pods) == full_stall
    # The newest template is the group created last, whatever its pod-template-hash sorts as:
    # the same pods with each other's hash still give the stall.
    hashes = sorted({p["metadata"]["labels"]["pod-template-hash"] for p in pods})
    assert len(hashes) == 2
    swapped = [
        slim_pod(_with_hash(p, hashes[1 - hashes.index(p["metadata"]["labels"]["pod-template-hash"])])) for p in pods
    ]
    assert detect_stall(gpu=7, old_pods=2, pods=swapped) == full_stall
    assert [unschedulable_message(p) for p in slim_pods] == [unschedulable_message(p) for p in pods]


def _with_hash(pod: Obj, template: str) -> Obj:
    labels = {**pod["metadata"]["labels"], "pod-template-hash": template}
    return {**pod, "metadata": {**pod["metadata"], "labels": labels}}


def test_slimming_drops_what_the_count_never_reads() -> None:
    full = pod()
    slim = slim_pod(full)
    text = json.dumps(slim)
    for absent in ("managedFields", "annotations", "env", "secret", "volumes", "containerStatuses"):
        assert absent not in text, absent
    resources = full["spec"]["containers"][0]["resources"]
    assert slim["spec"]["containers"] == [{"name": "train", "image": "trainer:1", "resources": resources}]
    assert slim["metadata"]["labels"] == {"app": "trainer"} and slim["spec"]["nodeName"] == "n1"
    assert len(text) < len(json.dumps(full)) / 3
    assert full["metadata"]["managedFields"], "the input is left alone"
    node_text = json.dumps(slim_node({**node(), "status": {**node()["status"], "images": [{"names": ["x" * 900]}]}}))
    assert "images" not in node_text and "nvidia.com/gpu" in node_text


# -- the runtime --------------------------------------------------------------------------------


def test_cluster_mode_primes_nodes_and_unfinished_pods_beside_the_watched_kinds() -> None:
    client = SelectorClient()
    client.objects = {"Node": [node()], "Pod": [pod()]}
    rt = runtime(client)
    rt.prime_cache()
    assert ("Node", None) in client.selectors and ("Pod", LIVE_PODS) in client.selectors
    assert [n["metadata"]["name"] for n in rt.backend.cached("Node") or []] == ["n1"]
    (cached,) = rt.backend.cached("Pod") or []
    assert "managedFields" not in cached["metadata"], "slimmed on the way in"
    assert rt.probe()["cached_pods"] == 1 and rt.probe()["cached_nodes"] == 1


def owned(name: str, owner: str, rv: str, words: str | None = None) -> Obj:
    labelled = pod(name, rv=rv)
    labelled["metadata"] = {**labelled["metadata"], "namespace": "ns", "labels": {OWNER_LABEL: owner}}
    if words is not None:
        scheduled = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": words}
        labelled["spec"] = {k: v for k, v in labelled["spec"].items() if k != "nodeName"}
        labelled["status"] = {"phase": "Pending", "conditions": [scheduled]}
    return labelled


def test_a_services_pods_are_found_by_owner_label_through_every_change() -> None:
    client = FakeClient()
    client.objects = {"Pod": [owned("b", "a", "1"), owned("a", "a", "2"), owned("c", "other", "3")]}
    rt = runtime(client)
    rt.prime_cache()

    def found(owner: str) -> list[str]:
        return [p["metadata"]["name"] for p in rt.backend.cached_owned("Pod", "ns", owner) or []]

    assert (found("a"), found("other"), found("none")) == (["a", "b"], ["c"], [])
    assert rt.backend.cached_owned("Pod", "elsewhere", "a") == []
    rt.on_event("Pod", "MODIFIED", owned("b", "other", "4"))  # re-labelled
    rt.on_event("Pod", "MODIFIED", owned("a", "other", "1"))  # older than the cache: ignored
    assert (found("a"), found("other")) == (["a"], ["b", "c"])
    rt.on_event("Pod", "DELETED", owned("a", "a", "5"))
    assert found("a") == [] and rt.queue.try_get() is None
    rt.cache.drop_missing("Pod", "", ["uid-b"], "10")  # the consistency check: c is gone
    assert (found("other"), [p["metadata"]["name"] for p in rt.backend.cached("Pod") or []]) == (["b"], ["b"])
    rt.on_event("Pod", "MODIFIED", owned("b", "other", "11", words="0/2 nodes are available"))
    assert drain(rt) == ["ns/other"], "the scheduler's words for its pod changed"
    rt.on_event("Pod", "MODIFIED", owned("b", "other", "12", words="0/2 nodes are available"))
    assert drain(rt) == [], "the same words"
    rt.on_event("Pod", "DELETED", owned("b", "other", "13", words="0/2 nodes are available"))
    assert drain(rt) == ["ns/other"] and found("other") == [], "a pending pod gone takes its words along"


def drain(rt: OperatorRuntime) -> list[str]:
    keys = []
    while (key := rt.queue.try_get()) is not None:
        keys.append(key)
        rt.queue.done(key)
    return keys


def test_node_and_pod_events_fill_the_cache_and_wake_no_pass() -> None:
    rt = runtime(FakeClient())
    rt.on_event("Pod", "ADDED", pod("p1"))
    rt.on_event("Pod", "ADDED", pod("p2", gpu=4))
    rt.on_event("Node", "MODIFIED", node())
    assert rt.queue.try_get() is None, "nothing reconciles on a Pod or Node event"
    assert sorted(p["metadata"]["name"] for p in rt.backend.cached("Pod") or []) == ["p1", "p2"]
    rt.on_event("Pod", "DELETED", pod("p1", rv="2"))
    assert [p["metadata"]["name"] for p in rt.backend.cached("Pod") or []] == ["p2"]
    assert rt.queue.try_get() is None


@pytest.mark.parametrize("config", [{"namespaces": ("team-a",)}, {"read_capacity": False}])
def test_without_capacity_reads_no_node_or_pod_is_listed_and_none_is_known(config: dict[str, Any]) -> None:
    client = SelectorClient()
    client.objects = {"Node": [node()], "Pod": [pod()]}
    rt = runtime(client, **config)
    rt.prime_cache()
    assert not {kind for kind, _ in client.selectors} & {"Node", "Pod"}
    assert rt.backend.cached("Node") is None and rt.backend.cached("Pod") is None


def test_a_pod_that_vanished_while_the_watch_was_down_is_dropped_and_wakes_nothing() -> None:
    clock = FakeClock()
    client = FakeClient()
    client.objects = {"Pod": [pod("p1"), pod("p2")]}
    client.version = "10"
    rt = runtime(client, clock, resync_seconds=0)
    rt.prime_cache()
    client.objects["Pod"] = [pod("p2")]
    client.version = "20"
    rt.on_event("Pod", None, pod("p2"))  # Kopf re-listed after the watch came back
    clock.advance(5)
    rt.housekeeping()
    assert [p["metadata"]["name"] for p in rt.backend.cached("Pod") or []] == ["p2"]
    assert rt.queue.try_get() is None
    assert rt.probe()["cache_consistency_drops"] == 1


def test_a_bad_read_capacity_value_names_the_variable() -> None:
    assert OperatorConfig.from_env({"INFERENCE_OPERATOR_READ_CAPACITY": "false"}).reads_capacity is False
    assert OperatorConfig.from_env({}).reads_capacity is True
    assert OperatorConfig.from_env({"INFERENCE_OPERATOR_NAMESPACES": "a"}).reads_capacity is False
    with pytest.raises(ConfigError, match="INFERENCE_OPERATOR_READ_CAPACITY"):
        OperatorConfig.from_env({"INFERENCE_OPERATOR_READ_CAPACITY": "maybe"})


def test_a_stopped_node_or_pod_stream_fails_liveness_naming_it() -> None:
    rt = runtime(FakeClient())
    assert rt.health() == []
    rt.streams_health = lambda: ["the watch of pods stopped"]
    assert rt.health() == ["the watch of pods stopped"]
    with pytest.raises(kopf.PermanentError, match="Unhealthy: the watch of pods stopped"):
        liveness(rt)
