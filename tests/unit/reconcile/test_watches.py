"""Which keys a watch event wakes: one rule, declared beside the reconciler, on both backends.

Covers: the InferenceService's own events queue its key, except an update of status alone; a
child's events queue its controlling InferenceService, and an update that re-points the
controller reference queues the old owner and then the new one; a child controlled by another
kind, or by nobody, queues nothing; the declaration lists the primary kind first and selects
children by the owner label. On the real-cluster manager (Kopf's events into the cache) and on
the simulator (informers) the same events queue the same keys in the same order; and on the
simulator, end to end, the InferenceService whose Deployment was taken by another one is
reconciled at once and says so in status, with no resync. A pod, which the reconciler only
reads, wakes the InferenceService its owner label names when, and only when, the scheduler's
words for it change (given, changed, gone: a pod deleted or finished has none left); the manager and the simulator
queue the same keys for the same pod changes; Nodes wake nothing.
"""

from __future__ import annotations

from typing import Any

import pytest

from inference_operator.api.constants import DEPLOYMENT, KIND, OWNER_LABEL, SERVICE, Reason
from inference_operator.api.samples import make_inference_service
from inference_operator.core.clock import format_timestamp
from inference_operator.core.handler import EnqueueForObject, EnqueueForOwner, WatchEvent
from inference_operator.core.objects import changed_beyond_status
from inference_operator.kube.config import OperatorConfig
from inference_operator.kube.manager import OperatorRuntime
from inference_operator.reconcile.watches import CAPACITY_READS, WATCHES, read_of, watch_of
from inference_operator.sim import Simulation
from inference_operator.sim.clock import FakeClock
from inference_operator.sim.cluster.nodes import NodeShape, build_node

Obj = dict[str, Any]
GROUP_VERSION = "serving.inference-operator.dev/v1"


def isvc(name: str, *, rv: str, generation: int = 1, status: Obj | None = None) -> Obj:
    return {
        "apiVersion": GROUP_VERSION,
        "kind": KIND,
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"u-{name}",
            "resourceVersion": rv,
            "generation": generation,
        },
        "spec": {"image": "i", "model": "m"},
        **({"status": status} if status else {}),
    }


def deployment(*, rv: str, owner: str | None, owner_kind: str = KIND, name: str = "a") -> Obj:
    refs = (
        [{"apiVersion": GROUP_VERSION, "kind": owner_kind, "name": owner, "uid": f"u-{owner}", "controller": True}]
        if owner
        else []
    )
    return {
        "apiVersion": "apps/v1",
        "kind": DEPLOYMENT,
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"d-{name}",
            "resourceVersion": rv,
            "labels": {OWNER_LABEL: name},
            "ownerReferences": refs,
        },
    }


OWN = EnqueueForObject(changed=changed_beyond_status)
OWNED = EnqueueForOwner(owner_group="serving.inference-operator.dev", owner_kind=KIND)


def test_the_primary_kind_queues_its_own_key_but_not_for_a_status_only_update() -> None:
    before, status_only = isvc("a", rv="1"), isvc("a", rv="2", status={"phase": "Ready"})
    assert OWN.keys(WatchEvent("create", old=None, new=before)) == ("ns/a",)
    assert OWN.keys(WatchEvent("update", old=before, new=status_only)) == ()
    assert OWN.keys(WatchEvent("update", old=before, new=isvc("a", rv="3", generation=2))) == ("ns/a",)
    assert OWN.keys(WatchEvent("delete", old=before, new=None)) == ("ns/a",)


def test_a_re_pointed_child_queues_its_old_owner_then_its_new_one() -> None:
    old, new = deployment(rv="1", owner="a"), deployment(rv="2", owner="b")
    assert OWNED.keys(WatchEvent("update", old=old, new=new)) == ("ns/a", "ns/b")
    assert OWNED.keys(WatchEvent("update", old=old, new=deployment(rv="2", owner="a"))) == ("ns/a",)
    assert OWNED.keys(WatchEvent("update", old=old, new=deployment(rv="2", owner=None))) == ("ns/a",)
    assert OWNED.keys(WatchEvent("delete", old=new, new=None)) == ("ns/b",)


def test_a_child_controlled_by_another_kind_or_by_nobody_queues_nothing() -> None:
    assert OWNED.keys(WatchEvent("create", old=None, new=deployment(rv="1", owner=None))) == ()
    foreign = deployment(rv="1", owner="a", owner_kind="ConfigMap")
    assert OWNED.keys(WatchEvent("create", old=None, new=foreign)) == ()


def test_the_declaration_lists_the_primary_kind_first_and_selects_children_by_the_owner_label() -> None:
    assert [w.kind for w in WATCHES] == [KIND, DEPLOYMENT, SERVICE]
    assert watch_of(KIND).label_selector is None
    assert watch_of(DEPLOYMENT).label_selector == watch_of(SERVICE).label_selector == OWNER_LABEL
    assert (watch_of(SERVICE).group, watch_of(SERVICE).version) == ("", "v1")
    with pytest.raises(KeyError, match="does not watch Pod"):
        watch_of("Pod")


def pod(*, rv: str, owner: str | None = "a", words: str | None = None, **status: Any) -> Obj:
    conditions = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": words}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "a-1",
            "namespace": "ns",
            "uid": "p-1",
            "resourceVersion": rv,
            "labels": {OWNER_LABEL: owner} if owner else {"app": "x"},
        },
        "status": {"phase": "Pending", **({"conditions": conditions} if words else {}), **status},
    }


def test_a_pod_wakes_the_service_its_owner_label_names_only_when_the_schedulers_words_change() -> None:
    rule = read_of("Pod").handler
    assert rule is not None and read_of("Node").handler is None
    waiting = pod(rv="2", words="0/2 nodes are available")
    update = lambda old, new: rule.keys(WatchEvent("update", old=old, new=new))  # noqa: E731
    assert update(pod(rv="1"), waiting) == ("ns/a",), "the scheduler gave its words"
    assert update(waiting, pod(rv="3", words="0/3 nodes are available")) == ("ns/a",), "new words"
    assert update(waiting, pod(rv="3", words="0/2 nodes are available", nominatedNodeName="n")) == ()
    assert update(pod(rv="1"), pod(rv="2", phase="Running")) == (), "nothing the diagnosis reads changed"
    deleting = {**waiting, "metadata": {**waiting["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    assert update(waiting, deleting) == ("ns/a",), "a pod being deleted is no longer counted"
    assert update(waiting, pod(rv="3", words="0/2 nodes are available", phase="Failed")) == ("ns/a",)
    assert update(pod(rv="1", owner=None), pod(rv="2", owner=None, words="0/2")) == (), "not a service's pod"
    assert rule.keys(WatchEvent("create", old=None, new=pod(rv="1"))) == ()
    assert rule.keys(WatchEvent("create", old=None, new=waiting)) == ("ns/a",), "listed with words"
    assert rule.keys(WatchEvent("delete", old=waiting, new=None)) == ("ns/a",), "its words went with it"
    assert rule.keys(WatchEvent("delete", old=pod(rv="1"), new=None)) == ()
    assert [r.kind for r in CAPACITY_READS] == ["Node", "Pod"] and read_of("Pod").index_label == OWNER_LABEL
    with pytest.raises(KeyError, match="does not read Service"):
        read_of(SERVICE)


def test_the_manager_queues_both_owners_when_a_deployment_is_re_pointed() -> None:
    rt = OperatorRuntime(OperatorConfig(), client=object(), clock=FakeClock())  # type: ignore[arg-type]
    rt.on_event(DEPLOYMENT, None, deployment(rv="1", owner="a"))
    assert drain(rt.queue) == ["ns/a"]
    rt.on_event(DEPLOYMENT, "MODIFIED", deployment(rv="2", owner="b"))
    assert drain(rt.queue) == ["ns/a", "ns/b"], "the old owner must learn at once that its Deployment was taken"
    rt.on_event(DEPLOYMENT, "MODIFIED", deployment(rv="1", owner="a"))  # older than the cache: ignored
    assert drain(rt.queue) == []


def drain(queue: Any) -> list[str]:
    keys = []
    while (key := queue.try_get()) is not None:
        keys.append(key)
        queue.done(key)
    return keys


def owned_by(sim: Simulation, name: str) -> list[Obj]:
    uid = sim.get(KIND, "ns", name)["metadata"]["uid"]  # type: ignore[index]
    return [{"apiVersion": GROUP_VERSION, "kind": KIND, "name": name, "uid": uid, "controller": True}]


def test_the_manager_and_the_simulator_queue_the_same_keys_for_the_same_changes() -> None:
    """The simulator's informers see the changes; the manager is handed the very same events."""
    rt = OperatorRuntime(OperatorConfig(), client=object(), clock=FakeClock())  # type: ignore[arg-type]
    sim = Simulation(deployment_controller=False)
    delivered: list[tuple[str, str, Obj]] = []
    for watch in WATCHES:
        sim.informers[watch.kind].add_event_handler(
            on_add=lambda obj, kind=watch.kind: delivered.append((kind, "ADDED", obj)),
            on_update=lambda _old, new, kind=watch.kind: delivered.append((kind, "MODIFIED", new)),
            on_delete=lambda obj, kind=watch.kind: delivered.append((kind, "DELETED", obj)),
        )
    sim.api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})
    dep = {"apiVersion": "apps/v1", "kind": DEPLOYMENT, "metadata": {"name": "a", "namespace": "ns"}}
    template = {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    spec = {"selector": {"matchLabels": {"app": "a"}}, "template": template}
    changes = [
        lambda: sim.apply(make_inference_service("a", image="i", model="m", namespace="ns")),
        lambda: sim.apply(make_inference_service("b", image="i", model="m", namespace="ns")),
        lambda: sim.api.update_status({**sim.api.get(KIND, "ns", "a"), "status": {"phase": "Ready"}}),
        lambda: sim.apply(make_inference_service("a", image="i2", model="m", namespace="ns")),
        lambda: sim.api.create(
            {
                **dep,
                "metadata": {**dep["metadata"], "labels": {OWNER_LABEL: "a"}, "ownerReferences": owned_by(sim, "a")},
                "spec": spec,
            }
        ),
        lambda: sim.api.patch(DEPLOYMENT, "ns", "a", {"metadata": {"ownerReferences": owned_by(sim, "b")}}),
        lambda: sim.api.patch(DEPLOYMENT, "ns", "a", {"metadata": {"labels": {"touched": "yes"}}}),
        lambda: sim.api.delete(DEPLOYMENT, "ns", "a"),
        lambda: sim.api.delete(KIND, "ns", "b"),
    ]
    expected = [["ns/a"], ["ns/b"], [], ["ns/a"], ["ns/a"], ["ns/a", "ns/b"], ["ns/b"], ["ns/b"], ["ns/b"]]
    for change, keys in zip(changes, expected, strict=True):
        seen = len(delivered)
        change()
        sim.pump()
        on_simulator = drain(sim.controller.queue)
        for kind, event_type, obj in delivered[seen:]:
            rt.on_event(kind, event_type, obj)
        assert drain(rt.queue) == on_simulator == keys


def test_on_the_simulator_the_owner_whose_deployment_was_taken_is_reconciled_at_once() -> None:
    sim = Simulation()
    for name in ("a", "b"):
        sim.apply(make_inference_service(name, image="vllm:0.7.0", model="m"))
    sim.run_until_quiescent()
    b_uid = sim.get(KIND, "default", "b")["metadata"]["uid"]  # type: ignore[index]
    passes_before = sim.reconciles_by_key["default/a"]
    sim.api.patch(
        DEPLOYMENT,
        "default",
        "a",
        {
            "metadata": {
                "ownerReferences": [
                    {"apiVersion": GROUP_VERSION, "kind": KIND, "name": "b", "uid": b_uid, "controller": True}
                ]
            }
        },
    )
    sim.run_until_quiescent()  # no resync: only the watch event can wake "a"
    assert sim.reconciles_by_key["default/a"] > passes_before
    status = sim.get(KIND, "default", "a")["status"]  # type: ignore[index]
    condition = next(c for c in status["conditions"] if c["type"] == "DeploymentReady")
    assert (condition["status"], condition["reason"]) == ("False", Reason.CHILD_CONFLICT)
    assert "not controlled by this InferenceService" in condition["message"]


def test_the_manager_and_the_simulator_wake_the_same_service_for_the_same_pod_changes() -> None:
    """A pending pod's words change as the pool changes: both backends queue its service then,
    and only then. The manager is handed the very events the simulator's Pod informer saw."""
    rt = OperatorRuntime(OperatorConfig(), client=object(), clock=FakeClock())  # type: ignore[arg-type]
    sim = Simulation(gpus_per_node=8, nodes=2)
    sim.apply(make_inference_service("a", image="i", model="m", replicas=3, gpu=8))
    sim.run_until_quiescent(until=60.0)
    pods = sim.capacity_informers["Pod"]
    pods.start()
    for listed in pods.list():
        rt.on_event("Pod", None, listed)
    delivered: list[tuple[str, Obj]] = []
    pods.add_event_handler(
        on_add=lambda obj: delivered.append(("ADDED", obj)),
        on_update=lambda _old, new: delivered.append(("MODIFIED", new)),
        on_delete=lambda obj: delivered.append(("DELETED", obj)),
    )
    assert drain(rt.queue) == ["default/a"], "the manager listed a pod with words: a pass, as at a start"
    assert drain(sim.controller.queue) == []
    now = format_timestamp(sim.clock.wall())
    changes = [
        lambda: sim.api.create(build_node(NodeShape("small", gpus=4), now=now), field_manager="kubelet"),
        lambda: sim.api.patch("Node", "", "small", {"metadata": {"labels": {"touched": "yes"}}}),
        lambda: sim.api.delete("Node", "", "small"),
    ]
    expected = [["default/a"], [], ["default/a"]]  # "0/3 nodes …", the same again, "0/2 nodes …"
    for change, keys in zip(changes, expected, strict=True):
        seen = len(delivered)
        change()
        sim.pump()
        while sim.cluster.scheduler_controller.step():  # the scheduler tries the pending pod again
            sim.pump()
        for event_type, obj in delivered[seen:]:
            rt.on_event("Pod", event_type, obj)
        assert drain(rt.queue) == drain(sim.controller.queue) == keys
