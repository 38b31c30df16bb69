"""Whether a pod fits a node, and kube-scheduler's words when it fits none: pure functions.

The operator's pod diagnosis puts the scheduler's message into status, so on the simulator it
must read the same text as on a real cluster. Reasons, their order and the message layout are
those of kube-scheduler 1.36 (``k8s.io/kubernetes`` v1.36.5, ``pkg/scheduler``):

- the default profile's filters run in order and a node's first failing filter gives its
  reasons: NodeUnschedulable ("node(s) were unschedulable"), TaintToleration ("node(s) had
  untolerated taint(s)": 1.36 no longer names the taint), NodeAffinity ("node(s) didn't
  match Pod's node affinity/selector"), NodeResourcesFit (one reason per short resource: "Too many
  pods", "Insufficient cpu", "Insufficient memory", "Insufficient <extended resource>");
- ``FitError.Error``: ``0/<nodes> nodes are available: <count> <reason>, …`` with the histogram
  sorted as strings, then a period, then the PostFilter plugins' messages joined by ", ":
  DynamicResources ("no new claims to deallocate", for a pod without resource claims) before
  DefaultPreemption ("preemption: " and the same layout over the nodes where preemption was
  tried: "No preemption victims found for incoming pod" where only resources were short, as
  every pod here has the same priority, "Preemption is not helpful for scheduling" elsewhere);
- a shortage is "unresolvable" (preemption cannot help) when the pod asks for more than the
  node's whole allocatable; taints, cordons and selectors always are.

Past 100 nodes, filtering stops once enough nodes fit (``numFeasibleNodesToFind``), starting
where the previous pod's search stopped, as the real scheduler does. Scoring is simplified:
among the nodes that fit, the least allocated one wins (the default profile's NodeResourcesFit
strategy), ties going to the one with fewer pods, then to the first by name instead of at random.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from inference_operator.core.objects import Obj
from inference_operator.sim.cluster.nodes import UNSCHEDULABLE_TAINT, allocatable, scheduling_taints
from inference_operator.sim.cluster.resources import Resources

__all__ = [
    "NO_NODES",
    "NodeStatus",
    "choose_node",
    "feasible_nodes_to_find",
    "filter_node",
    "fit_error",
    "tolerates",
]


UNSCHEDULABLE: Final = "node(s) were unschedulable"
UNTOLERATED_TAINT: Final = "node(s) had untolerated taint(s)"
SELECTOR_MISMATCH: Final = "node(s) didn't match Pod's node affinity/selector"
TOO_MANY_PODS: Final = "Too many pods"
NO_VICTIMS: Final = "No preemption victims found for incoming pod"
NOT_HELPFUL: Final = "Preemption is not helpful for scheduling"
NO_CLAIMS: Final = "no new claims to deallocate"
NO_NODES: Final = "no nodes available to schedule pods"
_AVAILABLE: Final = "0/{} nodes are available:"
_BLOCKING_EFFECTS: Final = ("NoSchedule", "NoExecute")


@dataclass(frozen=True)
class NodeStatus:
    """Why a pod does not fit one node; ``resolvable``: preemption could make room there."""

    reasons: tuple[str, ...]
    resolvable: bool


def tolerates(tolerations: Iterable[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    """``v1.Toleration.ToleratesTaint`` for any of ``tolerations``: effect, key, then value."""
    for toleration in tolerations:
        effect = toleration.get("effect") or ""
        if effect and effect != taint.get("effect"):
            continue
        key = toleration.get("key") or ""
        if key and key != taint.get("key"):
            continue
        operator = toleration.get("operator") or "Equal"
        if operator == "Exists" or (
            operator == "Equal" and (toleration.get("value") or "") == (taint.get("value") or "")
        ):
            return True
    return False


def _matches_selector(pod_spec: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """``nodeSelector`` and required node affinity (its terms ORed, expressions ANDed)."""
    if any(labels.get(k) != v for k, v in (pod_spec.get("nodeSelector") or {}).items()):
        return False
    required = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if not required:
        return True
    return any(
        all(_expression_holds(e, labels) for e in term.get("matchExpressions") or ())
        for term in required.get("nodeSelectorTerms") or ()
    )


def _expression_holds(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, operator, values = expression.get("key", ""), expression.get("operator"), expression.get("values") or []
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    if operator in ("Gt", "Lt") and key in labels and len(values) == 1:
        try:
            have, want = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > want if operator == "Gt" else have < want
    return False


def filter_node(
    pod_spec: Mapping[str, Any],
    requests: Resources,
    node: Obj,
    *,
    requested: Resources,
    pods_on_node: int,
    capacity: Resources | None = None,
    taints: Sequence[Obj] | None = None,
) -> NodeStatus | None:
    """None if the pod fits ``node`` (already holding ``requested`` in ``pods_on_node`` pods).

    ``capacity`` and ``taints`` are :func:`.nodes.allocatable` and :func:`.nodes.scheduling_taints`
    of ``node``, when the caller keeps them (the scheduler's node cache); else they are read here.
    """
    tolerations = pod_spec.get("tolerations") or ()
    spec = node.get("spec") or {}
    if spec.get("unschedulable") and not tolerates(tolerations, {"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"}):
        return NodeStatus((UNSCHEDULABLE,), resolvable=False)
    for taint in scheduling_taints(node) if taints is None else taints:
        if taint.get("effect") in _BLOCKING_EFFECTS and not tolerates(tolerations, taint):
            return NodeStatus((UNTOLERATED_TAINT,), resolvable=False)
    if not _matches_selector(pod_spec, (node.get("metadata") or {}).get("labels") or {}):
        return NodeStatus((SELECTOR_MISMATCH,), resolvable=False)
    have = allocatable(node) if capacity is None else capacity
    return _resource_fit(requests, have, requested=requested, pods_on_node=pods_on_node)


def _resource_fit(
    requests: Resources, capacity: Resources, *, requested: Resources, pods_on_node: int
) -> NodeStatus | None:
    """NodeResourcesFit: pods first, then cpu, memory, ephemeral storage, extended resources."""
    reasons: list[str] = []
    unresolvable = False
    if pods_on_node + 1 > capacity.get("pods", 0):
        reasons.append(TOO_MANY_PODS)
    native = ("cpu", "memory", "ephemeral-storage")
    ordered: list[str] = [r for r in native if r in requests]
    ordered += sorted(r for r in requests if r not in native and r != "pods")
    for resource in ordered:
        want = requests[resource]
        if want <= 0:
            continue
        have = capacity.get(resource, 0)
        if want > have - requested.get(resource, 0):
            reasons.append(f"Insufficient {resource}")
            unresolvable = unresolvable or want > have
    if not reasons:
        return None
    return NodeStatus(tuple(reasons), resolvable=not unresolvable)


def _histogram(counts: Counter[str]) -> str:
    return ", ".join(sorted(f"{count} {reason}" for reason, count in counts.items()))


def fit_error(statuses: Sequence[NodeStatus]) -> str:
    """The message of a pod no node fits (one status per node; none: no nodes at all)."""
    if not statuses:
        return NO_NODES
    total = len(statuses)
    reasons: Counter[str] = Counter(reason for status in statuses for reason in status.reasons)
    preemption: Counter[str] = Counter(NO_VICTIMS if status.resolvable else NOT_HELPFUL for status in statuses)
    return (
        f"{_AVAILABLE.format(total)} {_histogram(reasons)}. {NO_CLAIMS}, "
        f"preemption: {_AVAILABLE.format(total)} {_histogram(preemption)}."
    )


def feasible_nodes_to_find(total: int) -> int:
    """``numFeasibleNodesToFind``: past 100 nodes, filtering stops after an adaptive share of
    them fit (50% less 1% per 125 nodes, at least 5%, at least 100 nodes)."""
    if total < 100:
        return total
    percentage = max(50 - total // 125, 5)
    return max(total * percentage // 100, 100)


def choose_node(
    candidates: Sequence[Obj], requests: Resources, used: Mapping[str, Resources], pods: Mapping[str, int]
) -> Obj:
    """The least allocated of the nodes that fit (mean fraction of cpu, memory and the
    resources the pod asks for, after placing it); ties go to the node with fewer pods (the
    real scheduler counts pods without requests as 100m cpu and 200Mi), then by name."""

    def score(node: Obj) -> tuple[float, int, str]:
        name = str(node["metadata"]["name"])
        capacity = allocatable(node)
        held = used.get(name, {})
        names = {"cpu", "memory", *requests} - {"pods"}
        fractions = [
            (held.get(r, 0) + requests.get(r, 0)) / capacity[r] for r in sorted(names) if capacity.get(r, 0) > 0
        ]
        return (sum(fractions) / len(fractions) if fractions else 0.0, pods.get(name, 0), name)

    return min(candidates, key=score)
