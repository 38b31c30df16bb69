"""A ReplicaSet no controller owns, adopted by the Deployment whose selector matches it, and the
scheduler holding pods it has no place for, in the simulated cluster.

Covers: a Deployment adopts an orphan ReplicaSet its selector matches, with a patch adding its
controller reference (kube-controller-manager's ``ClaimReplicaSets``), whether the ReplicaSet was
there first or came later, and rolls out from it as from one of its own: its next ReplicaSet
has the next revision, it surges one pod and scales the adopted one down as the new pods become
ready. A ReplicaSet whose labels the selector does not match, or that another controller owns,
is left alone. While the scheduler is holding, a pod it was given no node for stays unbound
with no condition written; released, it is scheduled as any pod.
"""

from __future__ import annotations

from typing import Any

from inference_operator.sim.cluster.nodes import NodeShape
from inference_operator.sim.cluster.podstate import condition
from inference_operator.sim.simulation import Simulation

Obj = dict[str, Any]
LABELS = {"app": "web"}


def deployment(image: str) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": dict(LABELS)},
            "template": {"metadata": {"labels": dict(LABELS)}, "spec": {"containers": [{"name": "c", "image": image}]}},
        },
    }


def orphan(name: str, *, labels: dict[str, str], owner: Obj | None = None) -> Obj:
    """A ReplicaSet of an earlier template (image v1, revision 3), as a snapshot holds one."""
    own = {**labels, "pod-template-hash": "old"}
    meta: Obj = {
        "name": name,
        "namespace": "default",
        "labels": own,
        "annotations": {"deployment.kubernetes.io/revision": "3"},
    }
    if owner is not None:
        meta["ownerReferences"] = [owner]
    template = {"metadata": {"labels": own}, "spec": {"containers": [{"name": "c", "image": "v1"}]}}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": meta,
        "spec": {"replicas": 2, "selector": {"matchLabels": own}, "template": template},
    }


def sizes(sim: Simulation) -> dict[str, int]:
    """Each ReplicaSet's replicas by its image."""
    out = {}
    for rs in sim.api.list("ReplicaSet", "default"):
        out[rs["spec"]["template"]["spec"]["containers"][0]["image"]] = rs["spec"]["replicas"]
    return out


def controller_uid(obj: Obj) -> str | None:
    refs = [r for r in obj["metadata"].get("ownerReferences") or () if r.get("controller")]
    return str(refs[0]["uid"]) if refs else None


def test_a_deployment_adopts_an_orphan_its_selector_matches_and_rolls_out_from_it() -> None:
    sim = Simulation(ready_after=5.0)
    sim.api.create(orphan("web-old", labels=LABELS), field_manager="kubectl")
    sim.run_until_quiescent()
    assert len([p for p in sim.api.list("Pod", "default") if condition(p, "Ready")]) == 2
    watch = sim.api.watch("ReplicaSet", "default")
    sim.api.create(deployment("v2"), field_manager="kubectl")
    sim.run_until_quiescent()
    dep = sim.api.get("Deployment", "default", "web")
    old = sim.api.get("ReplicaSet", "default", "web-old")
    assert controller_uid(old) == dep["metadata"]["uid"]
    assert any(e["manager"] == "kube-controller-manager" for e in old["metadata"]["managedFields"])
    assert sizes(sim) == {"v1": 0, "v2": 2}
    (new,) = [rs for rs in sim.api.list("ReplicaSet", "default") if rs["metadata"]["name"] != "web-old"]
    assert new["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "4"
    steps = []
    for event in watch.drain():
        image = event.object["spec"]["template"]["spec"]["containers"][0]["image"]
        steps.append((image, event.object["spec"]["replicas"]))
    # The default rolling update (25%: one surge, none unavailable) from the adopted two.
    assert steps[:1] == [("v1", 2)] and ("v2", 1) in steps and ("v1", 1) in steps
    assert steps.index(("v2", 1)) < steps.index(("v1", 1)) < steps.index(("v2", 2)) < steps.index(("v1", 0))


def test_an_adopted_replicaset_whose_revision_is_no_number_counts_as_none() -> None:
    sim = Simulation(ready_after=5.0)
    odd = orphan("web-odd", labels=LABELS)
    odd["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = "x1"
    sim.api.create(odd, field_manager="kubectl")
    sim.run_until_quiescent()
    sim.api.create(deployment("v2"), field_manager="kubectl")
    sim.run_until_quiescent()
    (new,) = [rs for rs in sim.api.list("ReplicaSet", "default") if rs["metadata"]["name"] != "web-odd"]
    assert new["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    assert sizes(sim) == {"v1": 0, "v2": 2}


def test_an_orphan_that_comes_after_its_deployment_is_adopted_too() -> None:
    sim = Simulation(ready_after=5.0)
    sim.api.create(deployment("v1"), field_manager="kubectl")
    sim.run_until_quiescent()
    sim.api.create(orphan("web-extra", labels=LABELS), field_manager="kubectl")
    sim.run_until_quiescent()
    dep = sim.api.get("Deployment", "default", "web")
    assert controller_uid(sim.api.get("ReplicaSet", "default", "web-extra")) == dep["metadata"]["uid"]


def test_a_replicaset_the_selector_does_not_match_or_another_controller_owns_is_left_alone() -> None:
    sim = Simulation(ready_after=5.0)
    spec = {"containers": [{"name": "c", "image": "v1"}]}
    keeper = sim.api.create(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "keeper", "namespace": "default"}, "spec": spec}
    )
    uid = keeper["metadata"]["uid"]
    other = {"apiVersion": "v1", "kind": "Pod", "name": "keeper", "uid": uid, "controller": True}
    sim.api.create(orphan("elsewhere", labels={"app": "other"}), field_manager="kubectl")
    sim.api.create(orphan("kept", labels=LABELS, owner=other), field_manager="kubectl")
    sim.api.create(deployment("v2"), field_manager="kubectl")
    sim.run_until_quiescent()
    assert controller_uid(sim.api.get("ReplicaSet", "default", "elsewhere")) is None
    assert controller_uid(sim.api.get("ReplicaSet", "default", "kept")) == uid
    assert sim.api.get("ReplicaSet", "default", "kept")["spec"]["replicas"] == 2  # not scaled down either


def test_a_held_pod_waits_unbound_and_silent_until_released() -> None:
    sim = Simulation(node_layout=[NodeShape("n1"), NodeShape("n2")], ready_after=5.0)
    scheduler = sim.cluster.scheduler
    scheduler.placement = lambda pod: "n2" if pod["metadata"]["name"].endswith("-a") else None
    scheduler.holding = True
    for name in ("web-a", "web-b"):
        spec = {"containers": [{"name": "c", "image": "v1"}]}
        sim.api.create(
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}
        )
    sim.run_until_quiescent()
    placed, held = (sim.api.get("Pod", "default", n) for n in ("web-a", "web-b"))
    assert placed["spec"]["nodeName"] == "n2"
    assert "nodeName" not in held["spec"] and condition(held, "PodScheduled") is None
    scheduler.release()
    sim.run_until_quiescent()
    held = sim.api.get("Pod", "default", "web-b")
    assert held["spec"].get("nodeName") in ("n1", "n2") and scheduler.placement is None and not scheduler.holding
