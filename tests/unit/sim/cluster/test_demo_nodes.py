"""``demo -f`` and nodes: the sample of a full GPU pool runs on exactly its node, ends, shows the
Pending pod with kube-scheduler's message and an honest Ready=False (exit code 1); a manifest
without nodes runs on the default two 8-GPU nodes, and a fleet larger than them (five 8-GPU
replicas) shows two pods running, three Pending with the scheduler's words, Ready=False, and
ends; a Node the API server refuses is one line and exit code 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from inference_operator.cli import main

ROOT = Path(__file__).resolve().parents[4]
SIMULATOR_SAMPLES = sorted((ROOT / "deploy" / "samples" / "simulator").glob("*.yaml"))
FULL = (
    "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. no new claims to deallocate, "
    "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
)


def test_the_full_pool_sample_shows_the_pending_pod_and_an_honest_status(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["demo", "-f", str(ROOT / "deploy" / "samples" / "simulator" / "gpu-pool-full.yaml")])
    out = capsys.readouterr().out
    assert code == 1
    assert "phase=Failed ready=1/2" in out
    assert f"1 of 2 replicas ready: 1 pod(s) cannot be scheduled: {FULL}" in out
    pods = [line for line in out.splitlines() if line.startswith("pod ")]
    assert len(pods) == 2
    assert pods[0].endswith("on gpu-node-1: Running")
    assert pods[1].endswith(f"Pending: {FULL}")


BOTH_FULL = (
    "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. no new claims to deallocate, "
    "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
)


def test_a_fleet_larger_than_the_default_nodes_shows_pending_pods_and_an_honest_status_and_ends(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(
        "apiVersion: serving.inference-operator.dev/v1\nkind: InferenceService\nmetadata: {name: fleet}\n"
        "spec: {image: vllm/vllm-openai:v0.7.0, model: m, replicas: 5, gpu: 8}\n"
    )
    code = main(["demo", "-f", str(path)])  # returns: the run ended by itself
    out = capsys.readouterr().out
    assert code == 1
    assert "ready=2/5" in out
    pods = [line for line in out.splitlines() if line.startswith("pod ")]
    assert sorted(line.rsplit(" ", 2)[-2] for line in pods if line.endswith(": Running")) == [
        "sim-node-1:",
        "sim-node-2:",
    ]
    assert len([line for line in pods if line.endswith(f"Pending: {BOTH_FULL}")]) == 3 and len(pods) == 5
    (ready,) = [line for line in out.splitlines() if line.startswith("  Ready=")]
    assert ready.startswith("  Ready=False ") and ready.endswith(f"3 pod(s) cannot be scheduled: {BOTH_FULL}")


def test_every_simulator_sample_is_applied_by_a_test() -> None:
    assert [p.name for p in SIMULATOR_SAMPLES] == [
        "gpu-pool-full.yaml",
        "whatif-snapshot.yaml",  # tests/unit/whatif/test_run.py
        "whatif-upgrade-auto.yaml",
        "whatif-upgrade.yaml",
    ]


def test_a_node_the_api_server_refuses_is_one_line_and_exit_code_two(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nspec:\n  taints: [{key: gpu, effect: Sometimes}]\n---\n"
        "apiVersion: serving.inference-operator.dev/v1\nkind: InferenceService\nmetadata: {name: x}\n"
        "spec: {image: vllm, model: m}\n"
    )
    assert main(["demo", "-f", str(path)]) == 2
    err = capsys.readouterr().err
    assert 'Node "n1" is invalid: metadata.taints[0].effect: Unsupported value: "Sometimes"' in err
    assert len(err.strip().splitlines()) == 1


def test_nodes_alone_are_not_enough(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "nodes.yaml"
    path.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n")
    assert main(["demo", "-f", str(path)]) == 2
    assert "no InferenceService in it (found Node)" in capsys.readouterr().err
