"""``demo -f CHANGE --cluster SNAPSHOT`` prints the rollout a change would do on a cluster's state.

Covers: the sample upgrade on the sample full pool never finishes (the new pod Pending with the
scheduler's words, RolloutBlocked, exit code 1) while the old pods and the other workloads'
pods keep running; the same upgrade with ``rollout.strategy: Auto`` replaces one replica at a
time and is Ready after two stop-and-start cycles (``--ready-after``, ``--stop-after``), one
replica serving meanwhile; a pod of another workload waiting in the snapshot takes the GPUs a
replacing rollout frees and the rollout is stuck, which the output says; an InferenceService
the snapshot lacks is created on the loaded cluster; ``--trace`` writes a trace the viewer reads;
time 0 is the change; the README's what-if example is what its command prints.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from inference_operator.cli import main
from tests.unit.whatif.snapshots import ROOT, SAMPLES, mid_rollout, node, pod, service, write_change, write_list

SNAPSHOT = str(SAMPLES / "whatif-snapshot.yaml")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["demo", *argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out


def section(out: str, key: str) -> str:
    """The lines printed for one InferenceService of the change."""
    return out.split(f"\n{key}:\n", 1)[1].split("\npods at the end:", 1)[0]


def test_the_upgrade_sample_never_finishes_on_the_full_pool_and_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "-f", str(SAMPLES / "whatif-upgrade.yaml"), "--cluster", SNAPSHOT)
    assert code == 1
    assert "default/llama-70b: Ready 2/2 on gpu-a, gpu-b, as in the snapshot" in out
    mine = section(out, "default/llama-70b")
    pending = re.search(r"pods that went Pending: 1\n    default/llama-70b-\S+ from 0 s still at 3600 s: (.*)", mine)
    assert pending is not None, mine
    assert pending.group(1).startswith("0/4 nodes are available: 1 node(s) didn't match Pod's node affinity/selector")
    assert "serving: 2/2 pods or more throughout" in mine
    assert "finished: no, not Ready on the new spec within 3600 s" in mine
    assert "Ready=False RolloutBlocked: " in mine and "set spec.rollout.strategy to Replace or Auto" in mine
    assert "rollout: strategy=Surge plan=Blocked maxSurge=1 maxUnavailable=0" in mine
    end = out.split("pods at the end:\n", 1)[1].splitlines()
    assert "pod finetune-0-7kq2w on gpu-c: Running" in end and "pod coredns-7c65d6cfc9-8vqhn on cpu-1: Running" in end
    assert sorted(line.split(" on ")[1] for line in end if " on gpu-" in line and "llama" in line) == [
        "gpu-a: Running",
        "gpu-b: Running",
    ]


@pytest.mark.parametrize(("ready_after", "stop_after"), [(120, 20), (30, 5)])
def test_the_same_upgrade_with_auto_replaces_one_replica_at_a_time_and_finishes(
    capsys: pytest.CaptureFixture[str], ready_after: int, stop_after: int
) -> None:
    code, out = run(
        capsys,
        *("-f", str(SAMPLES / "whatif-upgrade-auto.yaml"), "--cluster", SNAPSHOT),
        *("--ready-after", str(ready_after), "--stop-after", str(stop_after)),
    )
    assert code == 0, out
    mine = section(out, "default/llama-70b")
    took = 2 * (stop_after + ready_after)  # each replica: the old pod stops, then the new one starts
    assert f"finished: Ready on the new spec at {took} s" in mine
    assert f"serving: lowest 1/2 pods, for {took} s (first at 0 s); fewer than 2 for {took} s in all" in mine
    assert "rollout: strategy=Auto plan=Replace maxSurge=0 maxUnavailable=1" in mine
    waits = re.findall(r"from (\d+) s until (\d+) s: 0/4 nodes are available", mine)
    assert [(int(a), int(b)) for a, b in waits] == [(0, stop_after), (stop_after + ready_after, took - ready_after)]


def test_a_waiting_pod_of_another_workload_can_take_the_gpus_a_rollout_frees(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    small = service("small", gpu=4)
    snapshot = write_list(
        tmp_path / "snapshot.yaml",
        node("n1"),
        node("n2"),
        small,
        pod("small-a", node="n2", owner="small"),
        pod("small-b", node="n2", owner="small"),
        pod("job-1", namespace="batch", node="n1", gpus=8),
        pod("job-2", namespace="batch", gpus=4),
    )
    change = write_change(tmp_path / "change.yaml", service("small", image="vllm:2", rollout={"strategy": "Replace"}))
    code, out = run(capsys, "-f", change, "--cluster", snapshot, "--horizon", "600")
    assert code == 1
    assert "batch/job-2: Pending, as in the snapshot: 0/2 nodes are available: 2 Insufficient nvidia.com/gpu" in out
    assert re.search(r"other pods that waited for room:\n    batch/job-2 from 0 s until 30 s: ", out), out
    assert "pod job-2 on n2: Running" in out
    assert "finished: no, not Ready on the new spec within 600 s" in section(out, "default/small")


def test_an_inference_service_the_snapshot_lacks_is_created_on_the_loaded_cluster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snapshot = write_list(tmp_path / "snapshot.yaml", node("n1"), pod("job-1", namespace="batch", node="n1", gpus=6))
    change = write_change(tmp_path / "change.yaml", service("fresh", replicas=1, gpu=2))
    code, out = run(capsys, "-f", change, "--cluster", snapshot, "--ready-after", "7")
    assert code == 0, out
    mine = section(out, "default/fresh")
    assert "pods that went Pending: none" in mine and "finished: Ready on the new spec at 7 s" in mine
    assert "serving: lowest 0/1 pods, for 7 s (first at 0 s)" in mine


def test_the_trace_of_a_what_if_is_written_for_the_viewer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "whatif.jsonl"
    code, _ = run(capsys, "-f", str(SAMPLES / "whatif-upgrade-auto.yaml"), "--cluster", SNAPSHOT, "--trace", str(trace))
    assert code == 0
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    notes = [r.get("text") for r in records if r.get("type") == "note"]
    assert any("what-if: kubectl apply -f" in str(n) for n in notes), notes
    assert main(["trace", "view", str(trace), "-o", str(tmp_path / "v.html")]) == 0


def test_the_readmes_what_if_example_is_what_its_command_prints(capsys: pytest.CaptureFixture[str]) -> None:
    readme = (ROOT / "README.md").read_text()
    block = readme.split("<!-- what-if example:", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    command, shown = block.split("\n", 1)
    argv = command.removeprefix("$ inference-operator demo ").split()
    code, out = run(capsys, *argv)
    assert code == 0
    assert out == shown


def test_switching_a_stalled_rollout_to_auto_replaces_the_old_pods_it_was_stuck_behind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snapshot = mid_rollout(tmp_path / "s.yaml")
    auto = write_change(tmp_path / "auto.yaml", service("big", image="vllm:2", gpu=8, rollout={"strategy": "Auto"}))
    code, out = run(capsys, "-f", auto, "--cluster", snapshot, "--ready-after", "60", "--stop-after", "10")
    assert "default/big: Failed (RolloutBlocked) 2/2 on n1, n2 and 1 Pending, as in the snapshot" in out
    big = section(out, "default/big")
    assert code == 0
    # The old pods hold every GPU the new ones need: one stops (10 s), a new one starts (60 s), twice.
    assert "serving: lowest 1/2 pods, for 140 s (first at 0 s)" in big
    assert "finished: Ready on the new spec at 140 s" in big
    assert "plan=Replace maxSurge=0 maxUnavailable=1" in big
    # The same spec applied again (the default rolling update) stays where it is.
    again = write_change(tmp_path / "again.yaml", service("big", image="vllm:2", gpu=8))
    code, out = run(capsys, "-f", again, "--cluster", snapshot, "--horizon", "600")
    assert code == 1 and "finished: no, not Ready on the new spec within 600 s" in section(out, "default/big")


def test_the_simulated_operators_log_lines_stay_out_of_the_report(tmp_path: Path) -> None:
    small = [pod(f"small-{i}", node="n2", owner="small") for i in range(4)]
    snapshot = write_list(
        tmp_path / "s.yaml",
        node("n1"),
        node("n2"),
        service("big", gpu=8, replicas=1),
        service("small", replicas=5, gpu=2),  # one pod more than n2 holds: it passes its progress deadline
        pod("big-1", node="n1", owner="big"),
        *small,
        pod("small-4", owner="small"),
    )
    change = write_change(tmp_path / "c.yaml", service("big", gpu=8, replicas=1, image="vllm:2"))
    # A process of its own: pytest's log capture would stand in for the last-resort handler.
    done = subprocess.run(
        [sys.executable, "-m", "inference_operator", "demo", "-f", change, "--cluster", snapshot],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 1 and "pod small-" in done.stdout
    assert done.stderr == ""
