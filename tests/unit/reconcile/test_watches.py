"""Which keys a watch event wakes: one rule, declared beside the reconciler, on both backends.

Covers: the InferenceService's own events queue its key, except an update of status alone; a
child's events queue its controlling InferenceService, and an update that re-points the
controller reference queues the old owner and then the new one; a child controlled by another
kind, or by nobody, queues nothing; the declaration lists the primary kind first and selects
children by the owner label. On the real-cluster manager (Kopf's events into the cache) and on
the simulator (informers) the same events queue the same keys in the same order; and on the
simulator, end to end, the InferenceService whose Deployment was taken by another one is
reconciled at once and says so in status, with no resync.
"""

from __future__ import annotations

from typing import Any

import pytest

from inference_operator.api.constants import DEPLOYMENT, KIND, OWNER_LABEL, SERVICE, Reason
from inference_operator.api.samples import make_inference_service
from inference_operator.core.handler import EnqueueForObject, EnqueueForOwner, WatchEvent
from inference_operator.core.objects import changed_beyond_status
from inference_operator.kube.config import OperatorConfig
from inference_operator.kube.manager import OperatorRuntime
from inference_operator.reconcile.watches import WATCHES, watch_of
from inference_operator.sim import Simulation
from inference_operator.sim.clock import FakeClock

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
