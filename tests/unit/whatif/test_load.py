"""Loading a snapshot into the simulator: the cluster as it was, converged, before the change.

Covers: an InferenceService's pods go back on the nodes the snapshot shows, where the scheduler
left to itself would spread them; a snapshot whose nodes cannot hold the service says so
instead of pretending; pods of other workloads are created bound, hold their GPUs, run with no
controller and no owner references; the operator sees its service converged (Ready, nothing
left to write); the scheduler's placement is cleared once loaded; an object the API server
refuses is :class:`ManifestRefused` naming the snapshot file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from inference_operator.demo import ManifestRefused
from inference_operator.sim import Simulation
from inference_operator.whatif import read_snapshot
from inference_operator.whatif.load import load_snapshot
from tests.unit.whatif.snapshots import OWNER_LABEL, mid_rollout, node, pod, replicaset, service, write_list


def _nodes_of(sim: Simulation, name: str) -> list[str]:
    pods = sim.api.list("Pod", "default", label_selector=f"{OWNER_LABEL}={name}")
    return sorted(str(p["spec"].get("nodeName")) for p in pods)


def test_a_services_pods_go_back_on_the_nodes_the_snapshot_shows(tmp_path: Path) -> None:
    items = [node("n1"), node("n2"), node("n3"), service("small", gpu=4)]
    packed = write_list(
        tmp_path / "s.yaml", *items, pod("a", node="n2", owner="small"), pod("b", node="n2", owner="small")
    )
    sim = Simulation(node_layout=[])
    lines = load_snapshot(sim, read_snapshot(packed))
    assert _nodes_of(sim, "small") == ["n2", "n2"]
    assert lines == ["default/small: Ready 2/2 on n2 x2, as in the snapshot"]
    assert sim.cluster is not None and sim.cluster.scheduler.placement is None
    free = Simulation(node_layout=[])  # the same snapshot without its pods: the scheduler spreads them
    load_snapshot(free, read_snapshot(write_list(tmp_path / "free.yaml", *items)))
    assert _nodes_of(free, "small") != ["n2", "n2"]


def test_a_placement_the_nodes_cannot_hold_is_said_not_pretended(tmp_path: Path) -> None:
    path = write_list(
        tmp_path / "s.yaml",
        node("n1"),
        node("n2"),
        service("big", gpu=8),
        pod("a", node="n1", owner="big"),
        pod("b", node="n1", owner="big"),  # two 8-GPU pods on one 8-GPU node: not what a cluster can show
    )
    sim = Simulation(node_layout=[])
    (line,) = load_snapshot(sim, read_snapshot(path))
    assert line == "default/big: Ready 2/2 on n1, n2; the snapshot shows its pods on n1 x2"


def test_pods_of_other_workloads_hold_their_gpus_and_run_without_a_controller(tmp_path: Path) -> None:
    path = write_list(
        tmp_path / "s.yaml", node("n1"), node("n2"), service("llama", replicas=1, gpu=8), pod("job", node="n1", gpus=8)
    )
    sim = Simulation(node_layout=[])
    load_snapshot(sim, read_snapshot(path))
    job = sim.api.get("Pod", "default", "job")
    assert job["spec"]["nodeName"] == "n1" and "ownerReferences" not in job["metadata"]
    assert job["status"]["phase"] == "Running"
    assert _nodes_of(sim, "llama") == ["n2"]
    writes, passes = sim.api.writes, sim.reconcile_total
    sim.resync()
    sim.run_until_quiescent()
    assert sim.reconcile_total == passes + 1  # one pass, nothing to do: converged
    assert sim.api.writes == writes


def test_an_object_the_api_server_refuses_names_the_snapshot_file(tmp_path: Path) -> None:
    bad = node("n1")
    bad["spec"] = {"taints": [{"key": "gpu", "effect": "Sometimes"}]}
    path = write_list(tmp_path / "s.yaml", bad)
    with pytest.raises(ManifestRefused, match=r"s\.yaml: Error from server \(Invalid\): error when applying Node"):
        load_snapshot(Simulation(node_layout=[]), read_snapshot(path))


def test_a_rollout_in_progress_is_loaded_where_the_snapshot_caught_it(tmp_path: Path) -> None:
    sim = Simulation(node_layout=[])
    lines = load_snapshot(sim, read_snapshot(mid_rollout(tmp_path / "s.yaml")))
    assert lines == [
        "default/big: Failed (RolloutBlocked) 2/2 on n1, n2 and 1 Pending, as in the snapshot",
        "default/small: Ready 2/2 on n3 x2, as in the snapshot",
    ]
    deployment = sim.api.get("Deployment", "default", "big")
    by_image: dict[str, list[str]] = {}
    for found in sim.api.list("Pod", "default", label_selector=f"{OWNER_LABEL}=big"):
        by_image.setdefault(found["spec"]["containers"][0]["image"], []).append(str(found["spec"].get("nodeName")))
    assert {image: sorted(nodes) for image, nodes in by_image.items()} == {"vllm:1": ["n1", "n2"], "vllm:2": ["None"]}
    adopted = sim.api.get("ReplicaSet", "default", "big-oldhash")
    assert adopted["metadata"]["ownerReferences"][0]["uid"] == deployment["metadata"]["uid"]
    status = sim.api.get("InferenceService", "default", "big")["status"]
    assert "set spec.rollout.strategy to Replace or Auto" in status["conditions"][0]["message"]


def test_a_pod_the_snapshot_shows_pending_does_not_take_the_node_of_a_service_loaded_after_it(tmp_path: Path) -> None:
    path = write_list(
        tmp_path / "s.yaml",
        node("n1"),
        node("n2"),
        service("first", replicas=2, gpu=8),  # two of 8 GPUs: one runs on n1, one waits
        service("second", replicas=2, gpu=4),
        pod("first-1", node="n1", owner="first"),
        pod("first-2", owner="first"),
        pod("second-1", node="n2", owner="second"),
        pod("second-2", node="n2", owner="second"),
    )
    sim = Simulation(node_layout=[])
    lines = load_snapshot(sim, read_snapshot(path))
    assert _nodes_of(sim, "second") == ["n2", "n2"] and _nodes_of(sim, "first") == ["None", "n1"]
    assert lines[0].startswith("default/first: ") and lines[0].endswith("on n1 and 1 Pending, as in the snapshot")
    assert lines[1] == "default/second: Ready 2/2 on n2 x2, as in the snapshot"


def test_an_earlier_templates_pods_never_take_the_nodes_the_current_ones_were_on(tmp_path: Path) -> None:
    old, new = service("big", image="vllm:1", gpu=8), service("big", image="vllm:2", gpu=8, replicas=1)
    path = write_list(
        tmp_path / "s.yaml",
        node("n1"),
        new,
        replicaset(old, template="oldhash", revision=1, replicas=2),  # both its pods lost their node
        replicaset(new, template="newhash", revision=2, replicas=1),
        pod("big-old-1", owner="big", template="oldhash"),
        pod("big-old-2", owner="big", template="oldhash"),
        pod("big-new-1", node="n1", owner="big", template="newhash"),
    )
    sim = Simulation(node_layout=[])
    (line,) = load_snapshot(sim, read_snapshot(path))
    pods = sim.api.list("Pod", "default", label_selector=f"{OWNER_LABEL}=big")
    on_n1 = [p["spec"]["containers"][0]["image"] for p in pods if p["spec"].get("nodeName") == "n1"]
    assert on_n1 == ["vllm:2"]
    # The new pod is ready, so the rollout goes on and the old ReplicaSet's waiting pods go: said.
    assert line == "default/big: Ready 1/1 on n1; the snapshot shows its pods on n1 and 2 Pending"
