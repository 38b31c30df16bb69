"""What the controllers read off pods: active or not, ready since when, and the ReplicaSet
controller's deletion order (unassigned, pending, not ready, recently ready, newer go first)."""

from __future__ import annotations

from typing import Any

from inference_operator.sim.cluster.podstate import deletion_rank, is_active, ready_since

Obj = dict[str, Any]


def pod(name: str, *, node: str = "", phase: str = "Pending", ready_at: str = "", created: str = "") -> Obj:
    conditions = [{"type": "Ready", "status": "True", "lastTransitionTime": ready_at}] if ready_at else []
    return {
        "metadata": {"name": name, "creationTimestamp": created or "2026-01-01T00:00:00Z"},
        "spec": {"nodeName": node} if node else {},
        "status": {"phase": phase, "conditions": conditions},
    }


def test_terminating_and_finished_pods_are_not_active() -> None:
    assert is_active(pod("a"))
    assert not is_active(pod("a") | {"metadata": {"name": "a", "deletionTimestamp": "2026-01-01T00:00:30Z"}})
    assert not is_active(pod("a", phase="Succeeded"))


def test_ready_since_reads_the_ready_condition() -> None:
    assert ready_since(pod("a")) is None
    assert ready_since(pod("a", node="n", phase="Running", ready_at="2026-01-01T00:00:05Z")) == 1767225605.0


def test_the_least_valuable_pods_are_deleted_first() -> None:
    pods = [
        pod("ready-long", node="n", phase="Running", ready_at="2026-01-01T00:00:05Z"),
        pod("ready-recent", node="n", phase="Running", ready_at="2026-01-01T00:10:00Z"),
        pod("running", node="n", phase="Running"),
        pod("pending-bound", node="n"),
        pod("unassigned"),
        pod("new-unassigned", created="2026-01-01T00:20:00Z"),
    ]
    order = [p["metadata"]["name"] for p in sorted(pods, key=deletion_rank)]
    assert order == ["new-unassigned", "unassigned", "pending-bound", "running", "ready-recent", "ready-long"]
