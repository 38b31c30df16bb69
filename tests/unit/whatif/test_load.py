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
from tests.unit.whatif.snapshots import OWNER_LABEL, node, pod, service, write_list


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
