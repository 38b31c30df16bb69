"""What the flight recorder hears of the simulated cluster (inference_operator/sim/cluster/capacity.py).

Covers: a recorder attached to a simulation is first told every node as it is (allocatable as
the scheduler's integers, ready, cordoned, taints); during a template change on a full GPU
pool, replaying the ``node`` and ``pod`` records gives at every step what the cluster held (no
node over its allocatable, the pool full when a new pod waits) and the waiting pod carries the
scheduler's own message, the one stored on the Pod; old pods hold their GPUs while they
terminate and are recorded deleted once; each pod's records follow it from Pending through
bound and Running to ready; an update that moves no capacity fact records nothing, a
deletion of an object never told records nothing; a node's state says not-ready, cordoned and
tainted; no env value or arg of the pod's containers reaches any record; with no tracer (the
default) the cluster records nothing; the records carry no ``key`` (the viewer's objects are
the operator's).
"""

from __future__ import annotations

import itertools
from typing import Any

from inference_operator.api.samples import make_inference_service
from inference_operator.sim.cluster.capacity import CapacityTrace, node_state, pod_state
from inference_operator.sim.cluster.nodes import NodeShape, build_node
from inference_operator.sim.simulation import Simulation
from inference_operator.trace.recorder import NULL_TRACER, Recorder
from inference_operator.trace.sink import ListSink
from tests.shared.rollouts import CHANGE_NOTE, GPUS, NODES, REPLICAS, replay, rollout_records, used

Obj = dict[str, Any]
GPU = "nvidia.com/gpu"


def test_a_recorder_is_first_told_every_node_as_it_is() -> None:
    records, _ = rollout_records()
    first = [r for r in records[1:] if r["type"] != "note"][: len(NODES)]
    assert [r["type"] for r in first] == ["node"] * len(NODES)
    assert [r["node"] for r in first] == [shape.name for shape in NODES]
    for record, shape in zip(first, NODES, strict=True):
        assert record["change"] == "added" and record["ready"] is True and record["unschedulable"] is False
        assert record["allocatable"][GPU] == shape.gpus and record["allocatable"]["pods"] == shape.pods
        assert record["allocatable"]["cpu"] == int(shape.cpu) * 1000, "cpu in millicores, as the scheduler counts"


def test_replaying_a_rollout_on_a_full_pool_never_overfills_a_node_and_shows_the_pool_full_when_a_pod_waits() -> None:
    records, sim = rollout_records()
    steps = replay(records)
    assert steps, "the cluster was recorded"
    for _, nodes, pods in steps:
        for name, node in nodes.items():
            assert used(pods, name) <= node["allocatable"][GPU], f"{name} holds more GPUs than it has"
    change = next(r["seq"] for r in records if r.get("text") == CHANGE_NOTE)
    waiting = [(r, nodes, pods) for r, nodes, pods in steps if r["seq"] > change and "unschedulable" in r]
    assert waiting, "a new pod waited for room during the rollout"
    for record, nodes, pods in waiting:
        assert "nodeName" not in record and record["phase"] == "Pending"
        assert sum(used(pods, n) for n in nodes) == sum(n["allocatable"][GPU] for n in nodes.values()), (
            "a pod waits only while the pool is full"
        )
    stored = sim.api.list("Pod", "default")
    assert stored and all(p["spec"].get("nodeName") for p in stored), "in the end every pod runs"
    final_nodes, final_pods = steps[-1][1], steps[-1][2]
    assert sorted(final_pods) == sorted(f"default/{p['metadata']['name']}" for p in stored)
    assert all(p["ready"] and not p["terminating"] for p in final_pods.values())
    assert sum(used(final_pods, n) for n in final_nodes) == REPLICAS * GPUS


def test_a_waiting_pod_carries_the_schedulers_own_message() -> None:
    sink = ListSink()
    sim = Simulation(
        node_layout=NODES[:1], tracer=lambda clock: Recorder(sink, clock, backend="simulator")
    )  # one node of 8: the second 8-GPU replica never fits
    sim.apply(make_inference_service("big", image="vllm", model="m", replicas=2, gpu=8))
    sim.run_until_quiescent()
    pending = [p for p in sim.api.list("Pod", "default") if not p["spec"].get("nodeName")]
    assert len(pending) == 1
    scheduled = next(c for c in pending[0]["status"]["conditions"] if c["type"] == "PodScheduled")
    last = [r for r in sink.records if r["type"] == "pod" and r["pod"] == f"default/{pending[0]['metadata']['name']}"]
    assert last[-1]["unschedulable"] == scheduled["message"]
    assert "Insufficient nvidia.com/gpu" in last[-1]["unschedulable"]


def test_old_pods_hold_their_gpus_while_terminating_and_are_recorded_deleted_once() -> None:
    records, _ = rollout_records()
    pods = [r for r in records if r["type"] == "pod"]
    old = {r["pod"] for r in pods if r.get("terminating")}
    assert len(old) == REPLICAS, "every old pod terminated"
    for key in old:
        mine = [r for r in pods if r["pod"] == key]
        terminating = next(i for i, r in enumerate(mine) if r.get("terminating"))
        assert mine[terminating].get("nodeName"), "a terminating pod still holds its node"
        assert [r["change"] for r in mine[terminating + 1 :]] == ["deleted"]
        assert set(mine[-1]) == {"seq", "t", "type", "change", "pod"}, "a deletion says only which pod"


def test_each_pod_is_followed_from_pending_through_bound_and_running_to_ready() -> None:
    records, _ = rollout_records()
    by_pod: dict[str, list[Obj]] = {}
    for r in records:
        if r["type"] == "pod" and r["change"] != "deleted":
            by_pod.setdefault(r["pod"], []).append(r)
    assert len(by_pod) == 2 * REPLICAS
    for key, mine in by_pod.items():
        assert mine[0]["change"] == "added" and mine[0]["phase"] == "Pending" and "nodeName" not in mine[0]
        assert all(r["change"] == "changed" for r in mine[1:])
        assert mine[0]["requests"] == {GPU: GPUS} and mine[0]["owner"].startswith("ReplicaSet/llama-")
        bound = next(i for i, r in enumerate(mine) if r.get("nodeName"))
        running = next(i for i, r in enumerate(mine) if r["phase"] == "Running")
        ready = next(i for i, r in enumerate(mine) if r["ready"])
        assert bound <= running < ready, key
        for before, after in itertools.pairwise(mine):
            assert {k: v for k, v in before.items() if k not in ("seq", "t", "change")} != {
                k: v for k, v in after.items() if k not in ("seq", "t", "change")
            }, "each record is a real change"


class Told:
    """A tracer that keeps what it is told of the cluster."""

    enabled = True

    def __init__(self) -> None:
        self.told: list[tuple[str, str, str, Obj]] = []

    def cluster(self, kind: str, name: str, *, change: str, state: Obj) -> None:
        self.told.append((kind, name, change, state))


def pod(**status: Any) -> Obj:
    return {
        "metadata": {"namespace": "default", "name": "p", "labels": {"a": "1"}},
        "spec": {
            "containers": [
                {
                    "name": "server",
                    "image": "vllm",
                    "args": ["--api-key", "sk-top-secret"],
                    "env": [{"name": "HF_TOKEN", "value": "hf-top-secret"}],
                    "resources": {"limits": {GPU: "2"}, "requests": {"cpu": "500m"}},
                }
            ]
        },
        "status": {"phase": "Pending", **status},
    }


def test_an_update_that_moves_no_capacity_fact_records_nothing() -> None:
    tracer, capacity = Told(), CapacityTrace()
    before = pod()
    capacity.pod(tracer, None, before)  # type: ignore[arg-type]
    relabelled = {**before, "metadata": {**before["metadata"], "labels": {"a": "2"}}}
    capacity.pod(tracer, before, relabelled)  # type: ignore[arg-type]
    assert [t[2] for t in tracer.told] == ["added"]
    capacity.pod(tracer, relabelled, pod(phase="Running"))  # type: ignore[arg-type]
    assert [t[2] for t in tracer.told] == ["added", "changed"]
    capacity.pod(tracer, relabelled, None)  # type: ignore[arg-type]
    capacity.pod(tracer, relabelled, None)  # type: ignore[arg-type]
    assert [t[2] for t in tracer.told] == ["added", "changed", "deleted"], "deleted once"
    node = build_node(NodeShape("n"), now="2026-01-01T00:00:00Z")
    capacity.node(tracer, None, None)  # type: ignore[arg-type]
    capacity.node(tracer, node, None)  # type: ignore[arg-type]
    assert len(tracer.told) == 3, "a deletion of a node never told records nothing"


def test_a_pods_state_has_its_requests_and_never_its_env_or_args() -> None:
    state = pod_state(pod())
    assert state["requests"] == {"cpu": 500, GPU: 2}
    text = repr(state)
    assert "secret" not in text and "HF_TOKEN" not in text and "args" not in text and "env" not in text
    backoff = {"name": "server", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}
    crashing = pod_state(pod(phase="Running", containerStatuses=[backoff]))
    assert crashing["waiting"] == "CrashLoopBackOff"


def test_a_nodes_state_says_not_ready_cordoned_and_tainted() -> None:
    shape = NodeShape(
        "n", gpus=4, ready=False, unschedulable=True, taints=({"key": "gpu", "value": "h100", "effect": "NoSchedule"},)
    )
    state = node_state(build_node(shape, now="2026-01-01T00:00:00Z"))
    assert state["ready"] is False and state["unschedulable"] is True
    assert state["taints"] == ["gpu=h100:NoSchedule"] and state["allocatable"][GPU] == 4
    assert "taints" not in node_state(build_node(NodeShape("m"), now="2026-01-01T00:00:00Z"))


def test_without_a_tracer_the_cluster_records_nothing_and_records_carry_no_key() -> None:
    sim = Simulation()
    assert sim.cluster.tracer is NULL_TRACER
    records, _ = rollout_records()
    assert all("key" not in r for r in records if r["type"] in ("node", "pod"))
    assert records[0]["version"] == 2
