"""kube-scheduler 1.36's filters and words: tolerations (Exists/Equal, effects, PreferNoSchedule
ignored), node selectors, cordons, readiness, resource fit with extended resources and the pod
count, and FitError messages byte for byte (histogram order, DRA's and preemption's parts)."""

from __future__ import annotations

from inference_operator.core.nodefit import NodeStatus, filter_node, tolerates
from inference_operator.core.resources import pod_requests
from inference_operator.sim.cluster.fit import choose_node, feasible_nodes_to_find, fit_error
from inference_operator.sim.cluster.nodes import NodeShape, build_node

NOW = "2026-01-01T00:00:00Z"
GPU8 = {"containers": [{"name": "s", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}


def check(pod_spec: dict, shape: NodeShape, *, used: dict | None = None, pods: int = 0) -> NodeStatus | None:
    node = build_node(shape, now=NOW)
    return filter_node(pod_spec, pod_requests(pod_spec), node, requested=used or {}, pods_on_node=pods)


def test_tolerations_match_by_effect_key_operator_and_value() -> None:
    taint = {"key": "gpu", "value": "h100", "effect": "NoSchedule"}
    assert tolerates([{"key": "gpu", "operator": "Exists"}], taint)
    assert tolerates([{"operator": "Exists"}], taint)  # no key: every taint
    assert tolerates([{"key": "gpu", "value": "h100", "effect": "NoSchedule"}], taint)
    assert not tolerates([{"key": "gpu", "value": "a100"}], taint)
    assert not tolerates([{"key": "gpu", "operator": "Exists", "effect": "NoExecute"}], taint)
    assert not tolerates([], taint)


def test_a_pod_fits_a_node_with_room_and_limits_count_as_requests() -> None:
    assert pod_requests(GPU8) == {"nvidia.com/gpu": 8}
    assert check(GPU8, NodeShape("a")) is None


def test_held_gpus_leave_the_surge_pod_short_but_preemption_could_help() -> None:
    assert check(GPU8, NodeShape("a"), used={"nvidia.com/gpu": 8}) == NodeStatus(
        ("Insufficient nvidia.com/gpu",), resolvable=True
    )


def test_asking_more_than_a_whole_node_is_unresolvable() -> None:
    spec = {"containers": [{"name": "s", "resources": {"requests": {"nvidia.com/gpu": "16", "cpu": "200"}}}]}
    assert check(spec, NodeShape("a")) == NodeStatus(("Insufficient cpu", "Insufficient nvidia.com/gpu"), False)


def test_a_full_node_reports_too_many_pods() -> None:
    assert check({"containers": [{"name": "s"}]}, NodeShape("a", pods=2), pods=2) == NodeStatus(
        ("Too many pods",), True
    )


def test_first_failing_filter_wins_cordon_then_taints_then_selector() -> None:
    cordoned = NodeShape("a", unschedulable=True, taints=[{"key": "x", "effect": "NoSchedule"}])
    assert check(GPU8, cordoned) == NodeStatus(("node(s) were unschedulable",), False)
    tainted = NodeShape("a", taints=[{"key": "x", "effect": "NoExecute"}])
    selective = {**GPU8, "nodeSelector": {"pool": "h100"}}
    assert check(selective, tainted) == NodeStatus(("node(s) had untolerated taint(s)",), False)
    assert check(selective, NodeShape("a")) == NodeStatus(("node(s) didn't match Pod's node affinity/selector",), False)
    assert check(selective, NodeShape("a", labels={"pool": "h100"})) is None


def test_prefer_no_schedule_taints_do_not_filter() -> None:
    assert check(GPU8, NodeShape("a", taints=[{"key": "x", "effect": "PreferNoSchedule"}])) is None


def test_a_not_ready_node_filters_through_its_lifecycle_taint_unless_tolerated() -> None:
    down = NodeShape("a", ready=False)
    assert check(GPU8, down) == NodeStatus(("node(s) had untolerated taint(s)",), False)
    tolerant = {**GPU8, "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists"}]}
    assert check(tolerant, down) is None


def test_node_affinity_in_and_not_in() -> None:
    term = {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["h100", "a100"]}]}
    spec = {
        **GPU8,
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}},
    }
    assert check(spec, NodeShape("a", labels={"pool": "a100"})) is None
    assert check(spec, NodeShape("a", labels={"pool": "l4"})) is not None


def test_fit_error_message_is_kube_scheduler_1_36s_byte_for_byte() -> None:
    selector = NodeStatus(("node(s) didn't match Pod's node affinity/selector",), resolvable=False)
    short = NodeStatus(("Insufficient nvidia.com/gpu",), resolvable=True)
    assert fit_error([short, selector, short]) == (
        "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
        "2 Insufficient nvidia.com/gpu. no new claims to deallocate, preemption: 0/3 nodes are available: "
        "1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod."
    )


def test_fit_error_counts_every_reason_of_a_node_and_sorts_the_histogram_as_strings() -> None:
    both = NodeStatus(("Insufficient cpu", "Insufficient nvidia.com/gpu"), resolvable=False)
    taint = NodeStatus(("node(s) had untolerated taint(s)",), resolvable=False)
    assert fit_error([both] * 10 + [taint] * 2) == (
        "0/12 nodes are available: 10 Insufficient cpu, 10 Insufficient nvidia.com/gpu, "
        "2 node(s) had untolerated taint(s). no new claims to deallocate, preemption: 0/12 nodes are available: "
        "12 Preemption is not helpful for scheduling."
    )


def test_one_full_node_message() -> None:
    assert fit_error([NodeStatus(("Insufficient nvidia.com/gpu",), True)]) == (
        "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. no new claims to deallocate, "
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )


def test_no_nodes_at_all() -> None:
    assert fit_error([]) == "no nodes available to schedule pods"


def test_the_least_allocated_node_is_chosen_ties_by_pod_count_then_name() -> None:
    a, b = build_node(NodeShape("a"), now=NOW), build_node(NodeShape("b"), now=NOW)
    assert choose_node([b, a], {"nvidia.com/gpu": 4}, {}, {})["metadata"]["name"] == "a"
    assert choose_node([a, b], {"nvidia.com/gpu": 4}, {"a": {"nvidia.com/gpu": 4}}, {})["metadata"]["name"] == "b"
    assert choose_node([a, b], {}, {}, {"a": 1})["metadata"]["name"] == "b"  # spread pods without requests


def test_past_a_hundred_nodes_the_search_stops_after_an_adaptive_share_fits() -> None:
    assert [feasible_nodes_to_find(n) for n in (3, 99, 100, 250, 1000, 5000)] == [3, 99, 100, 120, 420, 500]
