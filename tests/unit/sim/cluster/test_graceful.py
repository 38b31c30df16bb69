"""Graceful pod deletion in the fake API server: a bound pod is marked for its grace period and
keeps its place (status writes included) until deleted again with 0; an unbound pod goes at once;
a shorter grace period moves the deadline, a longer one does not."""

from __future__ import annotations

import pytest

from inference_operator.core.errors import NotFound
from inference_operator.sim.apiserver.server import FakeApiServer


def pod(name: str, node: str = "") -> dict:
    spec: dict = {"containers": [{"name": "s", "image": "i"}], "terminationGracePeriodSeconds": 45}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def test_a_bound_pod_is_marked_for_its_grace_period_then_removed_with_zero() -> None:
    api = FakeApiServer()
    api.create(pod("p", node="n1"))
    marked = api.delete("Pod", "default", "p")
    assert marked["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:45Z"
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 45
    written = api.update_status({**marked, "status": {"phase": "Running"}})  # the kubelet still reports
    assert written["status"]["phase"] == "Running"
    api.delete("Pod", "default", "p", grace_period_seconds=0)
    with pytest.raises(NotFound):
        api.get("Pod", "default", "p")


def test_an_unbound_pod_is_removed_at_once() -> None:
    api = FakeApiServer()
    api.create(pod("p"))
    api.delete("Pod", "default", "p")
    with pytest.raises(NotFound):
        api.get("Pod", "default", "p")


def test_a_shorter_grace_period_moves_the_deadline_a_longer_one_does_not() -> None:
    api = FakeApiServer()
    api.create(pod("p", node="n1"))
    api.delete("Pod", "default", "p")
    api.delete("Pod", "default", "p", grace_period_seconds=60)
    assert api.get("Pod", "default", "p")["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:45Z"
    api.delete("Pod", "default", "p", grace_period_seconds=5)
    assert api.get("Pod", "default", "p")["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:05Z"
