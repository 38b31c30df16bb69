"""``FakeApiServer.bind`` (``pods/binding``): ``spec.nodeName`` and ``PodScheduled=True`` in one write
and one watch event, ``managedFields`` untouched, an earlier condition of the type replaced in its
place; a bound, deleting or gated pod, a wrong uid and a missing pod refused. The real server's
answers to the same calls are in the conformance checks (``binding/*``)."""

from __future__ import annotations

from typing import Any

import pytest

from inference_operator.core.errors import Conflict, NotFound, ServerError
from inference_operator.sim.apiserver.binding import with_condition
from inference_operator.sim.apiserver.server import FakeApiServer
from inference_operator.sim.clock import FakeClock

Obj = dict[str, Any]


def pod(name: str, **spec: Any) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "server", "image": "vllm"}], **spec},
    }


def test_a_binding_sets_the_node_and_the_condition_in_one_write_and_one_event() -> None:
    api = FakeApiServer()
    created = api.create(pod("p"), field_manager="kube-controller-manager")
    watch = api.watch("Pod", "default")
    writes = api.writes
    api.bind("default", "p", "node-a", uid=created["metadata"]["uid"])
    (event,) = watch.drain()
    assert event.type == "MODIFIED"
    assert event.object["spec"]["nodeName"] == "node-a"
    assert event.object["status"]["conditions"] == [
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}
    ]
    bound = api.get("Pod", "default", "p")
    assert api.writes == writes + 1 and api.writes_by_verb["bind"] == 1
    assert int(bound["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    assert bound["metadata"]["managedFields"] == created["metadata"]["managedFields"]


def test_an_unschedulable_condition_is_replaced_in_its_place_and_loses_its_reason() -> None:
    clock = FakeClock()
    api = FakeApiServer(clock)
    api.create(pod("p"))
    unschedulable = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/1 nodes"}
    ready = {"type": "Ready", "status": "False"}
    conditions = [{**unschedulable, "lastTransitionTime": "2026-01-01T00:00:00Z"}, ready]
    api.patch_status("Pod", "default", "p", {"status": {"conditions": conditions}})
    clock.advance(60)
    api.bind("default", "p", "node-a")
    assert api.get("Pod", "default", "p")["status"]["conditions"] == [
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-01-01T00:01:00Z"},
        ready,
    ]


def test_a_condition_keeps_its_transition_time_while_its_status_stays() -> None:
    old = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "lastTransitionTime": "t0"}]
    again = with_condition(old, {"type": "PodScheduled", "status": "False", "message": "new words"}, now="t1")
    assert again == [{"type": "PodScheduled", "status": "False", "message": "new words", "lastTransitionTime": "t0"}]
    assert with_condition(None, {"type": "Ready", "status": "True"}, now="t1") == [
        {"type": "Ready", "status": "True", "lastTransitionTime": "t1"}
    ]


def test_the_nominated_node_goes_when_the_pod_is_bound() -> None:
    api = FakeApiServer()
    api.create(pod("p"))
    api.patch_status("Pod", "default", "p", {"status": {"nominatedNodeName": "node-b"}})
    api.bind("default", "p", "node-a")
    assert "nominatedNodeName" not in api.get("Pod", "default", "p")["status"]


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ({"nodeName": "node-b"}, 'pod p is already assigned to node "node-b"'),
        ({"schedulingGates": [{"name": "example.com/wait"}]}, "pod p has non-empty .spec.schedulingGates"),
    ],
)
def test_a_bound_or_gated_pod_is_refused_and_left_alone(spec: Obj, words: str) -> None:
    api = FakeApiServer()
    created = api.create(pod("p", **spec))
    with pytest.raises(Conflict) as refused:
        api.bind("default", "p", "node-a")
    assert refused.value.api_message == f'Operation cannot be fulfilled on pods/binding "p": {words}'
    assert api.get("Pod", "default", "p") == created
    assert api.requests[-1].verb == "bind" and api.requests[-1].error == "Conflict"


def test_a_pod_being_deleted_is_not_bound() -> None:
    api = FakeApiServer()
    api.create({**pod("p"), "metadata": {"name": "p", "namespace": "default", "finalizers": ["example.com/hold"]}})
    api.delete("Pod", "default", "p")
    with pytest.raises(Conflict, match="pod p is being deleted, cannot be assigned to a host"):
        api.bind("default", "p", "node-a")


def test_a_wrong_uid_is_a_failed_precondition_and_a_missing_pod_is_not_found() -> None:
    api = FakeApiServer()
    api.create(pod("p"))
    with pytest.raises(Conflict, match="Precondition failed: UID in precondition: other"):
        api.bind("default", "p", "node-a", uid="other")
    assert "nodeName" not in api.get("Pod", "default", "p")["spec"]
    with pytest.raises(NotFound):
        api.bind("default", "missing", "node-a")


def test_a_binding_without_a_node_fails_as_on_the_real_server_and_changes_nothing() -> None:
    api = FakeApiServer()
    created = api.create(pod("p"))
    with pytest.raises(ServerError, match=r"^target\.name: Required value$"):
        api.bind("default", "p", "")
    assert api.get("Pod", "default", "p") == created


def test_a_condition_of_the_same_status_without_a_transition_time_stays_without_one() -> None:
    old = [{"type": "PodScheduled", "status": "True"}]
    assert with_condition(old, {"type": "PodScheduled", "status": "True"}, now="t1") == old
