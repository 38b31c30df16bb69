"""Reading a snapshot: what it holds is sorted into what the simulator loads, and bad ones are refused.

Covers: what the server set and cannot be created again is stripped (uid, resourceVersion,
generation, managedFields, status of InferenceServices, owner references of other workloads'
pods, a Node's addresses) and said; an InferenceService's pods become the nodes it ran on, not
pods; Deployments, ReplicaSets, finished pods, pods on nodes the snapshot lacks and kinds the
simulator does not model are left out, each said on one line; a bad snapshot or change (not a
file, not YAML, no Node, an item that is no object, a wrong apiVersion, no namespace, labels
that are not strings, an invalid InferenceService, a Node or pod the API server refuses, a Node
in the change, flags without ``--cluster``) is one line on stderr naming the file, the object
and the field, exit code 2.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml

from inference_operator.cli import main
from inference_operator.whatif import read_snapshot
from tests.unit.whatif.snapshots import SAMPLES, mid_rollout, node, pod, replicaset, service, write_change, write_list


def test_what_cannot_be_created_again_is_stripped_and_said(tmp_path: Path) -> None:
    path = write_list(
        tmp_path / "s.yaml",
        node("n1"),
        service("llama"),
        pod("llama-1", node="n1", owner="llama"),
        pod("job-1", namespace="batch", node="n1", gpus=2),
    )
    snapshot = read_snapshot(path)
    (isvc,) = snapshot.services
    assert set(isvc) == {"apiVersion", "kind", "metadata", "spec"}
    assert set(isvc["metadata"]) == {"name", "namespace"}
    (loaded_node,) = snapshot.nodes
    assert "uid" not in loaded_node["metadata"] and "addresses" not in loaded_node["status"]
    assert loaded_node["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    (job,) = snapshot.bound
    assert set(job["metadata"]) == {"name", "namespace"} and set(job["spec"]) == {"nodeName", "containers"}
    assert job["spec"]["containers"] == [{"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]
    assert snapshot.placements == {"default/llama": Counter({"n1": 1})}
    assert any("owner references dropped (1 Job)" in line for line in snapshot.notes), snapshot.notes


def test_what_is_not_loaded_is_said_one_line_per_reason(tmp_path: Path) -> None:
    done = pod("done", namespace="batch", node="n1")
    done["status"] = {"phase": "Succeeded"}
    path = write_list(
        tmp_path / "s.yaml",
        node("n1"),
        done,
        pod("lost", namespace="batch", node="gone-node"),
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "batch"}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "batch"}},
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "namespace": "batch"}},
    )
    snapshot = read_snapshot(path)
    assert not snapshot.bound and not snapshot.waiting and not snapshot.services
    notes = "\n".join(snapshot.notes)
    assert "not loaded: 1 Deployment (made again for InferenceServices" in notes
    assert "not loaded: 1 finished pod(s)" in notes
    assert "not loaded: 1 pod(s) of other workloads bound to nodes not in the snapshot" in notes
    assert "skipped, kinds the simulator does not model: 1 Service (v1), 1 StatefulSet (apps/v1)" in notes


def test_the_sample_snapshot_loads_every_node_and_the_other_workloads_running_pods() -> None:
    snapshot = read_snapshot(str(SAMPLES / "whatif-snapshot.yaml"))
    assert [n["metadata"]["name"] for n in snapshot.nodes] == ["cpu-1", "gpu-a", "gpu-b", "gpu-c"]
    assert sorted(p["metadata"]["name"] for p in snapshot.bound) == ["coredns-7c65d6cfc9-8vqhn", "finetune-0-7kq2w"]
    assert snapshot.placements == {"default/llama-70b": Counter({"gpu-a": 1, "gpu-b": 1})}


def _bad(tmp_path: Path) -> dict[str, str]:
    """Files named after what is wrong with them."""
    change = write_change(tmp_path / "change.yaml", service("llama"))
    n1 = node("n1")
    files = {
        "change": change,
        "notyaml": str(tmp_path / "notyaml.yaml"),
        "nonode": write_list(tmp_path / "nonode.yaml", service("llama")),
        "item": write_list(tmp_path / "item.yaml", n1, "just text"),  # type: ignore[arg-type]
        "version": write_list(tmp_path / "version.yaml", {**n1, "apiVersion": "v2"}),
        "namespace": write_list(tmp_path / "namespace.yaml", n1, {**pod("p"), "metadata": {"name": "p"}}),
        "labels": write_list(tmp_path / "labels.yaml", {**n1, "metadata": {"name": "n1", "labels": {"gpu": 8}}}),
        "spec": write_list(tmp_path / "spec.yaml", n1, service("llama", replicas=-1)),
        "taint": write_list(
            tmp_path / "taint.yaml", {**n1, "spec": {"taints": [{"key": "gpu", "effect": "Sometimes"}]}}
        ),
        "resources": write_list(tmp_path / "resources.yaml", n1, _pod_asking(node="n1", gpus="lots")),
        "nodechange": write_list(tmp_path / "nodechange.yaml", n1, service("llama")),
        "ok": write_list(tmp_path / "ok.yaml", n1),
    }
    (tmp_path / "notyaml.yaml").write_text("items: [\n")
    return files


def _pod_asking(*, node: str, gpus: str) -> dict[str, object]:
    bad = pod("hungry", namespace="batch", node=node)
    bad["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": gpus}}  # type: ignore[index]
    return bad


CASES = [
    (["--cluster", "{d}/missing.yaml"], "{d}/missing.yaml: "),
    (["--cluster", "{d}/notyaml.yaml"], "{d}/notyaml.yaml: line 2: not valid YAML"),
    (["--cluster", "{d}/nonode.yaml"], "{d}/nonode.yaml: no Node in it"),
    (["--cluster", "{d}/item.yaml"], "{d}/item.yaml: document 1 item 1: is a string, not an object with apiVersion"),
    (["--cluster", "{d}/version.yaml"], "{d}/version.yaml: Node n1: apiVersion v2 is not one the what-if reads"),
    (["--cluster", "{d}/namespace.yaml"], "{d}/namespace.yaml: Pod p: metadata.namespace is required"),
    (["--cluster", "{d}/labels.yaml"], "{d}/labels.yaml: Node n1: metadata.labels must map keys to strings"),
    (["--cluster", "{d}/spec.yaml"], "{d}/spec.yaml: InferenceService default/llama: invalid: spec.replicas"),
    (["--cluster", "{d}/taint.yaml"], 'Node "n1" is invalid: metadata.taints[0].effect: Unsupported value'),
    (
        ["--cluster", "{d}/resources.yaml"],
        "{d}/resources.yaml: Pod batch/hungry: spec.containers[0].resources.limits.nvidia.com/gpu: 'lots' is not a",
    ),
]


@pytest.mark.parametrize(("argv", "expected"), CASES, ids=[c[1].split(": ", 1)[-1][:40] for c in CASES])
def test_a_bad_snapshot_is_one_line_naming_it_and_exit_code_two(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    files = _bad(tmp_path)
    code = main(["demo", "-f", files["change"], *[a.format(d=tmp_path) for a in argv]])
    out, err = capsys.readouterr()
    assert code == 2 and out == "", out
    assert len(err.splitlines()) == 1 and err.startswith("error: ") and "Traceback" not in err, err
    assert expected.format(d=tmp_path) in err, err


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["-f", "{d}/nodechange.yaml", "--cluster", "{d}/ok.yaml"], "with --cluster the nodes are the snapshot's"),
        (["--cluster", "{d}/nonode.yaml"], "--cluster SNAPSHOT needs -f CHANGE"),
        (["-f", "{d}/change.yaml", "--horizon", "60"], "--horizon is for what-if runs"),
        (["-f", "{d}/change.yaml", "--stop-after", "5"], "--stop-after is for what-if runs"),
        (["-f", "{d}/change.yaml", "--cluster", "{d}/nonode.yaml", "--horizon", "0"], "--horizon: '0': must be"),
    ],
)
def test_a_bad_what_if_command_is_one_line_and_exit_code_two(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    _bad(tmp_path)
    code = main(["demo", *[a.format(d=tmp_path) for a in argv]])
    out, err = capsys.readouterr()
    assert code == 2 and out == "", out
    assert len(err.splitlines()) == 1 and expected in err, err


def test_an_earlier_replicaset_of_a_rollout_in_progress_is_kept_with_its_pods_nodes(tmp_path: Path) -> None:
    snapshot = read_snapshot(mid_rollout(tmp_path / "s.yaml"))
    (rs,) = snapshot.replicasets  # the older of big's two; small's only one and big's newest are made again
    assert rs["metadata"]["name"] == "big-oldhash" and set(rs["metadata"]) == {
        "name",
        "namespace",
        "labels",
        "annotations",
    }
    assert rs["metadata"]["annotations"] == {"deployment.kubernetes.io/revision": "1"}
    assert set(rs["spec"]) == {"replicas", "selector", "template"} and rs["spec"]["replicas"] == 2
    assert rs["spec"]["template"]["spec"]["containers"][0]["image"] == "vllm:1"
    assert snapshot.earlier == {("default/big", "oldhash"): Counter({"n1": 1, "n2": 1})}
    assert snapshot.placements == {"default/small": Counter({"n3": 2})}
    assert snapshot.unplaced == Counter({"default/big": 1})
    notes = "\n".join(snapshot.notes)
    assert "rollouts in progress: ReplicaSets of an earlier template still holding replicas" in notes
    assert "default/big-oldhash (2 replicas)" in notes
    assert "not loaded: 2 ReplicaSets (made again" in notes


def test_a_terminating_pod_is_left_out_and_said(tmp_path: Path) -> None:
    going, job = pod("llama-old", node="n2", owner="llama"), pod("job-old", namespace="batch", node="n2", gpus=8)
    for obj in (going, job):
        obj["metadata"]["deletionTimestamp"] = "2026-12-07T05:00:00Z"
    path = write_list(
        tmp_path / "s.yaml",
        node("n1"),
        node("n2"),
        service("llama"),
        pod("llama-1", node="n1", owner="llama"),
        going,
        job,
    )
    snapshot = read_snapshot(path)
    assert snapshot.placements == {"default/llama": Counter({"n1": 1})} and not snapshot.bound
    assert "not loaded: 2 terminating pod(s)" in "\n".join(snapshot.notes)


def test_a_replicaset_with_no_number_for_revision_or_of_no_deployment_of_the_service_is_read_safely(
    tmp_path: Path,
) -> None:
    old, new = service("big", image="vllm:1", gpu=8), service("big", image="vllm:2", gpu=8)
    odd = replicaset(old, template="oddhash", revision=1, replicas=2)
    odd["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = "x1"  # sorts as 0: the oldest
    stray = replicaset(old, template="strayhash", revision=9, replicas=2)
    stray["metadata"]["ownerReferences"][0]["name"] = "someone-else"  # not the service's Deployment
    path = write_list(
        tmp_path / "s.yaml", node("n1"), new, odd, stray, replicaset(new, template="newhash", revision=2, replicas=1)
    )
    (rs,) = read_snapshot(path).replicasets
    assert rs["metadata"]["name"] == "big-oddhash" and "annotations" not in rs["metadata"]


def test_a_snapshots_replicaset_the_api_server_refuses_is_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = yaml.safe_load(Path(mid_rollout(tmp_path / "s.yaml")).read_text())["items"]
    (old,) = [o for o in items if o["kind"] == "ReplicaSet" and o["metadata"]["name"] == "big-oldhash"]
    del old["spec"]["template"]["spec"]["containers"][0]["name"]  # the kubelet had nothing to call it
    bad = write_list(tmp_path / "bad.yaml", *items)
    change = write_change(tmp_path / "c.yaml", service("big", image="vllm:2", gpu=8, rollout={"strategy": "Auto"}))
    assert main(["demo", "-f", change, "--cluster", bad]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"error: {bad}: ") and "spec.template.spec.containers[0].name: Required value" in err, err
