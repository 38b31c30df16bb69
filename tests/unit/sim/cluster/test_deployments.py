"""The Deployment controller's arithmetic: fenceposts (surge rounds up, unavailable down, never
both zero), the new ReplicaSet's growth within maxSurge, the old ones' shrinking within
maxUnavailable (unhealthy first, oldest first), scaling events, status and conditions."""

from __future__ import annotations

import pytest

from inference_operator.sim.cluster.deployments import (
    RSView,
    calculate_status,
    deployment_complete,
    deployment_progressing,
    fenceposts,
    new_rs_replicas,
    old_replicasets_scale_down,
    scaling_plan,
    set_condition,
)


def rolling(replicas: int, surge: object = "25%", unavailable: object = "25%") -> dict:
    return {
        "replicas": replicas,
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}},
    }


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (rolling(1), (1, 0)),  # 0.25 rounds up for surge, down for unavailable
        (rolling(4), (1, 1)),
        (rolling(10), (3, 2)),
        (rolling(3, "0%", "0%"), (0, 1)),  # both zero: one may be unavailable
        (rolling(2, 0, 5), (0, 2)),  # never more unavailable than replicas
        (rolling(0), (0, 0)),
        ({"replicas": 3, "strategy": {"type": "Recreate"}}, (0, 0)),
    ],
)
def test_fenceposts_round_surge_up_and_unavailable_down(spec: dict, expected: tuple[int, int]) -> None:
    assert fenceposts(spec) == expected


def test_the_new_replicaset_grows_only_within_max_surge() -> None:
    assert new_rs_replicas(replicas=1, surge=1, all_replicas=1, new_replicas=0, recreate=False) == 1
    assert new_rs_replicas(replicas=4, surge=1, all_replicas=4, new_replicas=0, recreate=False) == 1
    assert new_rs_replicas(replicas=4, surge=1, all_replicas=5, new_replicas=1, recreate=False) == 1
    assert new_rs_replicas(replicas=4, surge=1, all_replicas=2, new_replicas=0, recreate=False) == 3
    assert new_rs_replicas(replicas=4, surge=0, all_replicas=9, new_replicas=0, recreate=True) == 4


def test_a_single_replica_rollout_keeps_the_old_pod_until_the_surge_pod_is_available() -> None:
    old = RSView("old", replicas=1, available=1)
    waiting = RSView("new", replicas=1, available=0)
    assert old_replicasets_scale_down(replicas=1, max_unavailable=0, new=waiting, olds=[old]) == {}
    ready = RSView("new", replicas=1, available=1)
    assert old_replicasets_scale_down(replicas=1, max_unavailable=0, new=ready, olds=[old]) == {"old": 0}


def test_old_replicasets_shrink_within_max_unavailable() -> None:
    new = RSView("new", replicas=1, available=0)
    old = RSView("old", replicas=4, available=4)
    # 5 pods, at least 3 available, 1 new one not yet: one old pod may go.
    assert old_replicasets_scale_down(replicas=4, max_unavailable=1, new=new, olds=[old]) == {"old": 3}
    assert old_replicasets_scale_down(replicas=4, max_unavailable=1, new=RSView("new", 1, available=1), olds=[old]) == {
        "old": 2
    }


def test_unhealthy_old_replicas_go_first_and_oldest_replicasets_before_newer() -> None:
    new = RSView("new", replicas=2, available=2)
    older = RSView("a", replicas=2, available=2, created="2026-01-01T00:00:00Z")
    sick = RSView("b", replicas=2, available=0, created="2026-01-01T00:01:00Z")
    plan = old_replicasets_scale_down(replicas=4, max_unavailable=1, new=new, olds=[sick, older])
    assert plan == {"b": 0, "a": 1}


def test_a_scaling_event_resizes_the_only_active_replicaset() -> None:
    assert scaling_plan(replicas=4, surge=1, new=None, olds=[RSView("old", replicas=2)]) == {"old": 4}
    assert scaling_plan(replicas=2, surge=1, new=RSView("new", replicas=2), olds=[RSView("old", 0)]) == {}


def test_scaling_up_during_a_rollout_grows_the_newest_replicaset() -> None:
    new = RSView("new", replicas=1, created="2026-01-01T00:01:00Z")
    old = RSView("old", replicas=4, created="2026-01-01T00:00:00Z")
    assert scaling_plan(replicas=8, surge=2, new=new, olds=[old]) == {"new": 6}


def test_set_condition_keeps_transition_time_and_ignores_repeats() -> None:
    first = {"type": "Progressing", "status": "True", "reason": "A", "lastTransitionTime": "t0", "lastUpdateTime": "t0"}
    again = {**first, "lastTransitionTime": "t1", "lastUpdateTime": "t1"}
    assert set_condition([first], again) == [first]
    moved = set_condition([first], {**again, "reason": "B"})
    assert moved == [{**again, "reason": "B", "lastTransitionTime": "t0"}]


def test_status_sums_replicasets_and_says_whether_minimum_availability_holds() -> None:
    new = RSView("new", replicas=1, available=0, ready=0, actual=1)
    old = RSView("old", replicas=1, available=1, ready=1, actual=1)
    status = calculate_status(generation=2, replicas=1, max_unavailable=0, new=new, olds=[old], old_status={}, now="t")
    assert {k: v for k, v in status.items() if k != "conditions"} == {
        "observedGeneration": 2,
        "replicas": 2,
        "updatedReplicas": 1,
        "readyReplicas": 1,
        "availableReplicas": 1,
        "unavailableReplicas": 1,
    }
    (available,) = status["conditions"]
    assert (available["status"], available["reason"], available["message"]) == (
        "True",
        "MinimumReplicasAvailable",
        "Deployment has minimum availability.",
    )
    assert not deployment_complete(status, replicas=1, generation=2)
    assert deployment_progressing({"replicas": 1, "updatedReplicas": 0}, status)
