"""The what-if on a snapshot of the real control plane, checked against what the cluster then does.

Covers: a rollout stalled on a full GPU pool (two 8-GPU replicas on two 8-GPU nodes, a new
image with the default rolling update: the new pod Pending, ``RolloutBlocked``) is snapshotted
as a user would (``kubectl get … -o yaml``: the real server's objects, managedFields, status,
owner references and all); the what-if loads it where the cluster is (both old pods on their
nodes, the new one Pending, the same stall) and predicts that switching the rollout to
``Auto`` replaces one replica at a time and finishes, one replica serving meanwhile. Then the
same change is applied to the cluster, which does just that: the plan the what-if printed is
the plan the operator made there, the old ReplicaSet goes 2 → 1 → 0 while the new one never
has more than one pod ready before the last old one stops, and the service ends Ready on the
new image.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from inference_operator.api.constants import Reason
from inference_operator.cli import main

from ..shared.scenarios.common import NAME, check, created, llama, ready_replicas, ready_with
from ..shared.scenarios.gpu_scenarios import NEW_IMAGE, TWO_NODES, pending, replicasets_seen
from .clusterworld import ClusterWorld
from .conftest import Cluster


def snapshot_of(cluster: Cluster, namespace: str, path: Path) -> str:
    """What ``kubectl get nodes,pods,deployments,replicasets,inferenceservices -o yaml`` prints for
    the cluster's Nodes and the test's namespace, as one List."""
    items = []
    for args in (("nodes",), ("pods,deployments,replicasets,inferenceservices", "-n", namespace)):
        items += yaml.safe_load(cluster.kubectl.run("get", *args, "-o", "yaml").stdout)["items"]
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    return str(path)


def test_a_what_if_on_a_stalled_rollout_predicts_what_switching_it_to_auto_does_on_the_cluster(
    cluster: Cluster, cluster_world: ClusterWorld, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    world = cluster_world
    pool = world.gpu_pool(TWO_NODES)
    created(world, replicas=2, gpu=8, **pool)
    world.apply(llama(replicas=2, gpu=8, image=NEW_IMAGE, **pool))
    world.settle(
        "a new image on the full pool, the default rolling update",
        NAME,
        lambda s: s.stalled_with(Reason.ROLLOUT_BLOCKED) and ready_replicas(s) == 2 and len(pending(s)) == 1,
        what="RolloutBlocked, both old replicas serving, the new pod Pending",
    )
    snapshot = snapshot_of(cluster, world.namespace, tmp_path / "snapshot.yaml")
    auto = llama(replicas=2, gpu=8, image=NEW_IMAGE, rollout={"strategy": "Auto"}, **pool)
    auto["metadata"]["namespace"] = world.namespace
    change = tmp_path / "auto.yaml"
    change.write_text(yaml.safe_dump(auto))

    code = main(["demo", "-f", str(change), "--cluster", snapshot, "--ready-after", "30", "--stop-after", "10"])
    out = capsys.readouterr().out
    key = f"{world.namespace}/{NAME}"
    pool_nodes = ", ".join(f"{world.namespace}-{shape.name}" for shape in TWO_NODES)
    check(
        f"{key}: Failed (RolloutBlocked) 2/2 on {pool_nodes} and 1 Pending, as in the snapshot" in out,
        f"the stall loaded as the snapshot shows it:\n{out}",
    )
    check(code == 0 and "finished: Ready on the new spec at " in out, f"predicted to finish:\n{out}")
    check("serving: lowest 1/2 pods" in out, f"predicted: one replica serving while the other is replaced:\n{out}")
    predicted = re.search(r"rollout: strategy=Auto plan=(\w+) maxSurge=(\d+) maxUnavailable=(\d+)", out)
    check(predicted is not None, f"the plan printed:\n{out}")
    assert predicted is not None

    world.apply(auto)
    s = world.settle(
        "the same change on the cluster",
        NAME,
        lambda s: (
            ready_with(2)(s)
            and pending(s) == []
            and sum(n.get("r2", 0) for n in s.pods_summary()["bound"].values()) == 2
        ),
        what="both replicas on the new image, Ready",
    )
    rollout = ((s.isvc or {}).get("status") or {}).get("rollout") or {}
    made = (rollout.get("plan"), str(rollout.get("maxSurge")), str(rollout.get("maxUnavailable")))
    check(made == predicted.groups(), f"the cluster's plan {rollout} is the what-if's {predicted.groups()}")
    # Replacing: the old ReplicaSet shrinks one pod at a time and the new one grows only into what it frees.
    check(replicasets_seen(world) == ["r1=1 r2=1", "r1=0 r2=1", "r1=0 r2=2"], f"{replicasets_seen(world)}")
