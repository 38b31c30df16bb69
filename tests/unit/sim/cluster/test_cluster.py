"""The simulated cluster end to end (``Simulation()``'s default nodes or a ``node_layout``): Deployments
become ReplicaSets and Pods with owner references and the pod-template-hash, pods are scheduled,
started and made ready, old pods hold their GPUs while they terminate, pending pods are retried
when room appears, crash loops show, and the rolling update that deadlocks on a full GPU pool
is reported with kube-scheduler's words; a kubelet acts on a pod when it is bound, when its
start is due and when its spec or metadata change, not on a change of its status alone (its own
report most often); a completed rollout leaves no wait that moves the clock,
and a fleet larger than the default nodes stays Pending, fails at its progress deadline and the
run ends there. Time is the fake clock throughout."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from inference_operator.api.samples import make_inference_service
from inference_operator.sim.cluster.nodes import NodeShape, build_node
from inference_operator.sim.simulation import Simulation

Obj = dict[str, Any]
FULL_NODE = (
    "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. no new claims to deallocate, "
    "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
)
BOTH_NODES_FULL = (
    "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. no new claims to deallocate, "
    "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
)


def pods(sim: Simulation) -> list[Obj]:
    return sim.api.list("Pod", "default")


def condition(obj: Obj, type_: str) -> Obj:
    return next(c for c in obj["status"]["conditions"] if c["type"] == type_)


def isvc(sim: Simulation) -> Obj:
    found = sim.get("InferenceService", "default", "llama")
    assert found is not None
    return found


def serve(sim: Simulation, *, image: str = "vllm:0.6.3", replicas: int = 1, gpu: int = 8) -> None:
    sim.apply(make_inference_service("llama", image=image, model="Llama-3", replicas=replicas, gpu=gpu))


def deployment(name: str, *, replicas: int, gpu: int, image: str = "vllm", strategy: Obj | None = None) -> Obj:
    spec: Obj = {
        "replicas": replicas,
        "selector": {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {
                "containers": [
                    {"name": "server", "image": image, "resources": {"limits": {"nvidia.com/gpu": str(gpu)}}}
                ]
            },
        },
    }
    if strategy is not None:
        spec["strategy"] = strategy
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def test_the_default_cluster_has_two_eight_gpu_nodes_and_runs_an_inference_service() -> None:
    sim = Simulation()
    assert [n["status"]["allocatable"]["nvidia.com/gpu"] for n in sim.api.list("Node")] == ["8", "8"]
    serve(sim, replicas=2, gpu=4)
    sim.run_until_quiescent(until=60)
    assert isvc(sim)["status"]["phase"] == "Ready"
    (rs,) = sim.api.list("ReplicaSet", "default")
    dep = sim.get("Deployment", "default", "llama")
    assert dep is not None
    assert rs["metadata"]["ownerReferences"][0]["uid"] == dep["metadata"]["uid"]
    template_hash = rs["metadata"]["labels"]["pod-template-hash"]
    assert rs["metadata"]["name"] == f"llama-{template_hash}"
    assert len(pods(sim)) == 2
    for pod in pods(sim):
        assert pod["metadata"]["name"].startswith(f"llama-{template_hash}-")
        assert pod["metadata"]["labels"]["pod-template-hash"] == template_hash
        assert pod["metadata"]["ownerReferences"][0]["uid"] == rs["metadata"]["uid"]
        assert condition(pod, "Ready")["status"] == "True"
    assert {p["spec"]["nodeName"] for p in pods(sim)} == {"sim-node-1", "sim-node-2"}  # spread


def test_a_rolling_update_on_a_full_gpu_pool_deadlocks_and_status_says_why() -> None:
    sim = Simulation(node_layout=[NodeShape("gpu-node-1", gpus=8)])
    serve(sim)
    sim.run_until_quiescent(until=60)
    assert isvc(sim)["status"]["phase"] == "Ready"
    serve(sim, image="vllm:0.7.0")  # default RollingUpdate: 25% of 1 surges 1, 0 may be unavailable
    sim.run_until_quiescent(until=sim.now + 120)
    (pending,) = [p for p in pods(sim) if not p["spec"].get("nodeName")]
    scheduled = condition(pending, "PodScheduled")
    assert (scheduled["status"], scheduled["reason"], scheduled["message"]) == ("False", "Unschedulable", FULL_NODE)
    ready = condition(isvc(sim), "Ready")
    assert ready["status"] == "False"
    assert ready["reason"] == "RolloutBlocked"  # a stall the operator names, not a rollout "in progress"
    assert (
        f"1 new pod(s) cannot be scheduled, each needs 8 nvidia.com/gpu and old pods hold them: {FULL_NODE}"
        in (ready["message"])
    )
    assert ready["message"].endswith("set spec.rollout.strategy to Replace or Auto to stop old pods first")
    assert isvc(sim)["status"]["phase"] == "Failed"  # it needs a person: waiting will never end it
    sim.run_until_quiescent(until=sim.now + 2000)  # past progressDeadlineSeconds
    assert condition(isvc(sim), "Ready")["reason"] == "RolloutBlocked"
    dep = sim.get("Deployment", "default", "llama")
    assert dep is not None
    progressing = condition(dep, "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("False", "ProgressDeadlineExceeded")
    assert len([p for p in pods(sim) if p["spec"].get("nodeName")]) == 1  # the old pod still serves


def test_two_replicas_of_four_gpus_on_a_full_pool_deadlock_too() -> None:
    sim = Simulation(node_layout=[NodeShape("gpu-node-1", gpus=8)])
    serve(sim, replicas=2, gpu=4)
    sim.run_until_quiescent(until=60)
    serve(sim, image="vllm:0.7.0", replicas=2, gpu=4)  # 25% of 2: surge 1, unavailable 0
    sim.run_until_quiescent(until=sim.now + 120)
    pending = [p for p in pods(sim) if not p["spec"].get("nodeName")]
    assert [condition(p, "PodScheduled")["message"] for p in pending] == [FULL_NODE]
    assert condition(isvc(sim), "Ready")["status"] == "False"


def test_a_rolling_update_with_room_replaces_the_pod_and_the_old_one_holds_its_gpus_while_stopping() -> None:
    sim = Simulation(node_layout=[NodeShape("a"), NodeShape("b")], termination_seconds=20)
    serve(sim)
    sim.run_until_quiescent(until=60)
    (old,) = pods(sim)
    serve(sim, image="vllm:0.7.0")
    sim.run_until_quiescent(until=sim.now + 7)  # the new pod is ready after 5 s; the old one stops
    terminating = sim.get("Pod", "default", old["metadata"]["name"])
    assert terminating is not None and "deletionTimestamp" in terminating["metadata"]
    held = sim.cluster.scheduler.used
    assert held[old["spec"]["nodeName"]]["nvidia.com/gpu"] == 8
    sim.run_until_quiescent(until=sim.now + 60)
    assert sim.get("Pod", "default", old["metadata"]["name"]) is None
    assert len(pods(sim)) == 1
    assert isvc(sim)["status"]["phase"] == "Ready"
    assert len(sim.api.list("ReplicaSet", "default")) == 2  # the old one kept at 0 for rollbacks


def test_recreate_waits_for_the_old_pods_to_be_gone_then_starts_the_new_ones() -> None:
    sim = Simulation(node_layout=[NodeShape("a", gpus=8)], termination_seconds=30)
    sim.apply(deployment("batch", replicas=1, gpu=8, strategy={"type": "Recreate"}))
    sim.run_until_quiescent(until=60)
    sim.apply(deployment("batch", replicas=1, gpu=8, image="vllm:2", strategy={"type": "Recreate"}))
    sim.run_until_quiescent(until=sim.now + 10)
    assert [p["spec"]["containers"][0]["image"] for p in pods(sim)] == ["vllm"]  # old one still stopping
    sim.run_until_quiescent(until=sim.now + 60)
    assert [p["spec"]["containers"][0]["image"] for p in pods(sim)] == ["vllm:2"]
    dep = sim.get("Deployment", "default", "batch")
    assert dep is not None and condition(dep, "Progressing")["reason"] == "NewReplicaSetAvailable"


def test_a_pending_pod_is_scheduled_when_a_node_is_added() -> None:
    sim = Simulation(node_layout=[NodeShape("a", gpus=8)])
    serve(sim, replicas=2)
    sim.run_until_quiescent(until=120)
    assert condition(isvc(sim), "Ready")["status"] == "False"
    assert "1 pod(s) cannot be scheduled: " + FULL_NODE in condition(isvc(sim), "Ready")["message"]
    sim.api.create(build_node(NodeShape("b", gpus=8), now="2026-01-01T00:02:00Z"))
    sim.run_until_quiescent(until=sim.now + 60)
    assert isvc(sim)["status"]["phase"] == "Ready"
    assert sorted(p["spec"]["nodeName"] for p in pods(sim)) == ["a", "b"]


def test_the_scheduler_binds_with_one_write_and_owns_only_its_unschedulable_words() -> None:
    sim = Simulation(node_layout=[NodeShape("a", gpus=8)])
    serve(sim, replicas=2)
    sim.run_until_quiescent(until=120)
    (waiting,) = [p for p in pods(sim) if not p["spec"].get("nodeName")]
    owners = {(e["manager"], e.get("subresource", "")) for e in waiting["metadata"]["managedFields"]}
    assert ("kube-scheduler", "status") in owners
    watch = sim.api.watch("Pod", "default")
    sim.api.create(build_node(NodeShape("b", gpus=8), now="2026-01-01T00:02:00Z"))
    sim.run_until_quiescent(until=sim.now + 60)
    name = waiting["metadata"]["name"]
    seen = [e.object for e in watch.drain() if e.object["metadata"]["name"] == name]
    first_bound = next(p for p in seen if p["spec"].get("nodeName"))
    assert condition(first_bound, "PodScheduled")["status"] == "True"  # bound and scheduled in one event
    assert "reason" not in condition(first_bound, "PodScheduled")
    assert sim.api.writes_by_verb["bind"] == 2
    assert not [r for r in sim.api.requests if r.kind == "Pod" and r.verb == "patch"]
    for bound in pods(sim):
        assert "default-scheduler" not in {e["manager"] for e in bound["metadata"]["managedFields"]}


def test_a_pending_pod_is_scheduled_when_another_pod_frees_the_gpus() -> None:
    sim = Simulation(node_layout=[NodeShape("a", gpus=8)], termination_seconds=10)
    sim.apply(deployment("first", replicas=1, gpu=8))
    sim.run_until_quiescent(until=30)
    sim.apply(deployment("second", replicas=1, gpu=8))
    sim.run_until_quiescent(until=60)
    (waiting,) = [p for p in pods(sim) if not p["spec"].get("nodeName")]
    sim.delete("Deployment", "default", "first")
    sim.run_until_quiescent(until=sim.now + 60)
    bound = sim.get("Pod", "default", waiting["metadata"]["name"])
    assert bound is not None and bound["spec"]["nodeName"] == "a"


def test_the_gpus_a_pod_frees_go_to_the_pod_that_has_waited_longest_not_the_first_by_name() -> None:
    sim = Simulation(node_layout=[NodeShape("a", gpus=8)], termination_seconds=10)
    sim.apply(deployment("holder", replicas=1, gpu=8))
    sim.run_until_quiescent(until=30)
    for name in ("zeta", "alpha"):  # zeta waits first; alpha, which sorts first, waits later
        sim.apply(deployment(name, replicas=1, gpu=8))
        sim.run_until_quiescent(until=sim.now + 30)
    sim.delete("Deployment", "default", "holder")
    sim.run_until_quiescent(until=sim.now + 60)
    placed = {p["metadata"]["name"].split("-")[0]: p["spec"].get("nodeName") for p in pods(sim)}
    assert placed == {"zeta": "a", "alpha": None}


def test_a_kubelet_acts_on_a_pods_binding_start_and_metadata_not_on_a_status_change_alone() -> None:
    sim = Simulation()
    serve(sim, replicas=2, gpu=4)
    sim.run_until_quiescent(until=60)
    kubelet = sim.cluster.kubelet_controller
    assert isvc(sim)["status"]["phase"] == "Ready" and kubelet.reconcile_total == 4  # bound, started; each pod
    pod = pods(sim)[0]["metadata"]["name"]
    sim.api.patch_status("Pod", "default", pod, {"status": {"message": "noted"}}, field_manager="someone")
    sim.run_until_quiescent(until=120)
    assert kubelet.reconcile_total == 4
    sim.api.patch("Pod", "default", pod, {"metadata": {"labels": {"audited": "yes"}}})
    sim.run_until_quiescent(until=180)
    assert kubelet.reconcile_total == 5


def test_deleting_the_inference_service_collects_replicasets_and_pods() -> None:
    sim = Simulation(termination_seconds=5)
    serve(sim, replicas=2, gpu=1)
    sim.run_until_quiescent(until=60)
    sim.delete("InferenceService", "default", "llama")
    sim.run_until_quiescent(until=sim.now + 60)
    assert sim.api.list("ReplicaSet", "default") == [] and pods(sim) == []


def test_crash_pods_makes_an_inference_service_degraded_on_the_cluster() -> None:
    sim = Simulation()
    serve(sim, replicas=2, gpu=1)
    sim.run_until_quiescent(until=60)
    sim.cluster.crash_pods("default", "llama", 1)
    sim.run_until_quiescent(until=sim.now + 3600)
    assert isvc(sim)["status"]["phase"] == "Degraded"
    waiting = [
        cs["state"]["waiting"]["reason"]
        for p in pods(sim)
        for cs in p["status"]["containerStatuses"]
        if "waiting" in cs["state"]
    ]
    assert waiting == ["CrashLoopBackOff"]


SAMPLES = sorted((Path(__file__).resolve().parents[4] / "deploy" / "samples").glob("*.yaml"))


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.name for s in SAMPLES])
def test_every_sample_manifest_becomes_ready_on_the_default_nodes(sample: Path) -> None:
    manifest = yaml.safe_load(sample.read_text())
    sim = Simulation()
    sim.apply(manifest)
    sim.run_until_quiescent(until=4000)
    found = sim.get("InferenceService", "default", manifest["metadata"]["name"])
    assert found is not None and found["status"]["phase"] == "Ready", found and found["status"]


def test_a_converged_cluster_writes_nothing_more_and_retries_change_nothing() -> None:
    sim = Simulation(node_layout=[NodeShape("a", gpus=8)])
    serve(sim, replicas=2)  # one replica fits, one stays Pending
    sim.run_until_quiescent(until=4000)
    writes = sim.api.writes
    sim.cluster.scheduler.retry_pending()
    sim.resync()
    sim.run_until_quiescent(until=sim.now + 10)
    assert sim.api.writes == writes


def test_scaling_beyond_capacity_leaves_one_pod_pending_with_the_schedulers_words() -> None:
    sim = Simulation()  # two nodes of 8 GPUs
    serve(sim, replicas=2)
    sim.run_until_quiescent(until=60)
    serve(sim, replicas=3)  # a scaling event: the only ReplicaSet grows, no new one
    sim.run_until_quiescent(until=sim.now + 120)
    assert len(sim.api.list("ReplicaSet", "default")) == 1
    (pending,) = [p for p in pods(sim) if not p["spec"].get("nodeName")]
    assert condition(pending, "PodScheduled")["message"] == BOTH_NODES_FULL
    assert condition(isvc(sim), "Ready")["status"] == "False"


def test_a_completed_rollout_leaves_no_wait_that_moves_the_clock() -> None:
    sim = Simulation(ready_after=5.0)
    serve(sim, replicas=2, gpu=1)
    sim.run_until_quiescent()  # no bound: the run must end when the pods are ready
    assert isvc(sim)["status"]["phase"] == "Ready"
    assert sim.now == 5.0 and sim.next_due() is None  # no progress-deadline check left waiting
    serve(sim, image="vllm:0.7.0", replicas=2, gpu=1)
    sim.run_until_quiescent()
    assert isvc(sim)["status"]["phase"] == "Ready"
    assert sim.now < 60 and sim.next_due() is None


def test_a_fleet_larger_than_the_default_nodes_stays_pending_and_the_run_ends_at_the_deadline() -> None:
    sim = Simulation(ready_after=5.0)  # two nodes of 8 GPUs: two of five 8-GPU replicas fit
    serve(sim, replicas=5, gpu=8)
    sim.run_until_quiescent()  # no bound: it must end by itself
    running = [p for p in pods(sim) if p["spec"].get("nodeName")]
    pending = [p for p in pods(sim) if not p["spec"].get("nodeName")]
    assert len(running) == 2 and len(pending) == 3
    assert {condition(p, "PodScheduled")["message"] for p in pending} == {BOTH_NODES_FULL}
    ready = condition(isvc(sim), "Ready")
    assert ready["status"] == "False" and ready["reason"] == "ProgressDeadlineExceeded"
    assert ready["message"].endswith(f"2 of 5 replicas ready: 3 pod(s) cannot be scheduled: {BOTH_NODES_FULL}")
    dep = sim.get("Deployment", "default", "llama")
    assert dep is not None
    deadline = dep["spec"]["progressDeadlineSeconds"]
    last_progress = 5.0  # the two pods that fit became ready
    assert last_progress + deadline < sim.now <= last_progress + deadline + 1  # ended at the deadline


def test_a_pod_that_fits_only_one_full_node_names_both_reasons() -> None:
    layout = [NodeShape("h100", labels={"pool": "h100"}), NodeShape("l4", labels={"pool": "l4"})]
    sim = Simulation(node_layout=layout)
    sim.apply(
        make_inference_service("llama", image="vllm", model="m", replicas=2, gpu=8, nodeSelector={"pool": "h100"})
    )
    sim.run_until_quiescent(until=120)
    (pending,) = [p for p in pods(sim) if not p["spec"].get("nodeName")]
    assert condition(pending, "PodScheduled")["message"] == (
        "0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) didn't match Pod's node affinity/selector. "
        "no new claims to deallocate, preemption: 0/2 nodes are available: 1 No preemption victims found for incoming "
        "pod, 1 Preemption is not helpful for scheduling."
    )
    assert {p["spec"].get("nodeName") for p in pods(sim)} == {"h100", None}


def test_scaling_to_zero_completes_and_a_status_without_zeros_is_read_as_zeros() -> None:
    sim = Simulation(termination_seconds=1)
    serve(sim, replicas=2, gpu=1)
    sim.run_until_quiescent(until=60)
    serve(sim, replicas=0, gpu=1)
    sim.run_until_quiescent(until=sim.now + 60)
    dep = sim.get("Deployment", "default", "llama")
    assert dep is not None and "replicas" not in dep["status"]  # omitempty, as a real one
    assert condition(dep, "Progressing")["reason"] == "NewReplicaSetAvailable"
    assert pods(sim) == []
    assert isvc(sim)["status"]["phase"] == "Ready"


def test_with_the_controller_manager_down_no_replicaset_appears() -> None:
    sim = Simulation(deployment_controller=False)
    serve(sim, replicas=1, gpu=1)
    sim.run_until_quiescent(until=60)
    assert sim.api.list("ReplicaSet", "default") == [] and pods(sim) == []
    assert condition(isvc(sim), "Ready")["status"] == "False"


def test_a_restarted_operator_reads_the_stored_pods_again() -> None:
    sim = Simulation(node_layout=[NodeShape("a", gpus=8)])
    serve(sim, replicas=2)
    sim.run_until_quiescent(until=120)
    sim.restart_operator()
    sim.resync()
    sim.run_until_quiescent(until=sim.now + 60)
    assert f"1 pod(s) cannot be scheduled: {FULL_NODE}" in condition(isvc(sim), "Ready")["message"]


def test_min_ready_seconds_delays_availability_and_the_old_pod_waits_for_it() -> None:
    sim = Simulation(node_layout=[NodeShape("a"), NodeShape("b")], termination_seconds=1)
    manifest = deployment("batch", replicas=1, gpu=8)
    manifest["spec"]["minReadySeconds"] = 20
    sim.apply(manifest)
    sim.run_until_quiescent(until=10)  # ready at 5 s, available only at 25 s
    dep = sim.get("Deployment", "default", "batch")
    assert dep is not None and dep["status"].get("readyReplicas") == 1 and "availableReplicas" not in dep["status"]
    sim.run_until_quiescent(until=30)
    dep = sim.get("Deployment", "default", "batch")
    assert dep is not None and dep["status"]["availableReplicas"] == 1
    changed = deployment("batch", replicas=1, gpu=8, image="vllm:2")
    changed["spec"]["minReadySeconds"] = 20
    sim.apply(changed)
    sim.run_until_quiescent(until=sim.now + 15)  # the new pod is ready but not yet available
    assert sorted(p["spec"]["containers"][0]["image"] for p in pods(sim)) == ["vllm", "vllm:2"]
    sim.run_until_quiescent(until=sim.now + 30)
    assert [p["spec"]["containers"][0]["image"] for p in pods(sim)] == ["vllm:2"]


def _placements(
    *, remember: bool, monkeypatch: pytest.MonkeyPatch, plain_nodes: int, replicas: int, steps_before_a_node_comes: int
) -> tuple[dict[str, str], list[str]]:
    """A burst of unlike pods on unlike nodes (taints, labels, sizes; one too big for any
    node), a node added during it, then a Deployment removed: where each pod went, and the
    scheduler's words on each.
    ``remember=False`` makes every pod look unlike every other, so nothing kept is used."""
    from inference_operator.sim.cluster import scheduler

    if not remember:
        monkeypatch.setattr(scheduler, "_shape", lambda spec, requests: b"")
    nodes = [NodeShape(f"n{i:03d}", gpus=2 + i % 3) for i in range(plain_nodes)]
    nodes += [NodeShape("tainted", gpus=8, taints=[{"key": "dedicated", "value": "x", "effect": "NoSchedule"}])]
    nodes += [NodeShape("labelled", gpus=4, labels={"pool": "a"})]
    sim = Simulation(node_layout=nodes, termination_seconds=5)
    for i in range(9):
        manifest = deployment(f"d{i}", replicas=replicas, gpu=1 + i % 3)
        spec = manifest["spec"]["template"]["spec"]
        if i % 4 == 1:
            spec["tolerations"] = [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]
        if i % 4 == 2:
            spec["nodeSelector"] = {"pool": "a"}
        sim.apply(manifest)
    sim.apply(deployment("huge", replicas=1, gpu=16))
    for _ in range(steps_before_a_node_comes):  # part of the burst placed, then a node added
        sim.step()
    sim.api.create(build_node(NodeShape("late", gpus=2), now="2026-01-01T00:00:00Z"))
    sim.run_until_quiescent(until=60)
    sim.delete("Deployment", "default", "d0")
    sim.run_until_quiescent(until=sim.now + 60)
    placed = {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in pods(sim)}
    words = sorted(
        f"{p['metadata']['name']}: {c.get('message', '')}"
        for p in pods(sim)
        for c in p["status"].get("conditions", [])
        if c.get("reason")
    )
    return placed, words


@pytest.mark.parametrize(
    ("plain_nodes", "replicas", "steps"),
    [(12, 3, 40), (130, 30, 400)],
    ids=["every-node-filtered", "past-100-nodes-the-search-stops-and-goes-round"],
)
def test_remembered_verdicts_and_scores_place_every_pod_where_working_them_out_does(
    monkeypatch: pytest.MonkeyPatch, plain_nodes: int, replicas: int, steps: int
) -> None:
    kwargs = {"plain_nodes": plain_nodes, "replicas": replicas, "steps_before_a_node_comes": steps}
    remembered = _placements(remember=True, monkeypatch=monkeypatch, **kwargs)
    worked_out = _placements(remember=False, monkeypatch=monkeypatch, **kwargs)
    assert remembered == worked_out
    placed = [node for node in remembered[0].values() if node]
    assert len(placed) > 10 and remembered[1]  # placed, and some not
    assert "late" in placed  # the node added during the burst took pods
    if plain_nodes > 100:  # the search went round: more nodes used than one search looks at
        assert len(set(placed)) > 100, len(set(placed))
        assert any(f"0/{plain_nodes + 3} nodes are available" in words for words in remembered[1])


@pytest.mark.parametrize("race", ["bound", "deleted"])
def test_a_pod_bound_or_deleted_by_someone_else_first_leaves_the_scheduler_converged(race: str) -> None:
    sim = Simulation()
    bind = sim.api.bind
    raced: list[str] = []

    def first(namespace: str, name: str, node: str, *, uid: str = "") -> None:
        if not raced:  # someone else gets there between the scheduler's read and its binding
            raced.append(name)
            if race == "bound":
                bind(namespace, name, "sim-node-2", uid=uid)
            else:
                sim.api.delete("Pod", namespace, name)
        bind(namespace, name, node, uid=uid)

    sim.api.bind = first  # type: ignore[method-assign]
    serve(sim, gpu=1)
    sim.run_until_quiescent()
    assert raced and isvc(sim)["status"]["phase"] == "Ready"
    (running,) = pods(sim)
    assert running["spec"]["nodeName"] and sim.cluster.scheduler.count[running["spec"]["nodeName"]] == 1
