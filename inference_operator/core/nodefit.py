"""What a pod asks of a node and whether a node can give it: kube-scheduler's filters, pure.

Two readers need the same answers: the simulated scheduler, which places pods, and the
operator, which counts before a rollout how many more replicas the nodes could hold. The
filters are those of kube-scheduler's default profile that matter for GPU serving, in its
order (a node's first failing filter gives its reasons): NodeUnschedulable, TaintToleration,
NodeAffinity (``nodeSelector`` and required node affinity), NodeResourcesFit. A Node's
scheduling taints include the ones the node lifecycle controller adds to a node that is not
Ready or is cordoned, so an object read from any API server is judged the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from inference_operator.core.objects import Obj
from inference_operator.core.resources import Resources, amounts

__all__ = [
    "NOT_READY_TAINT",
    "SELECTOR_MISMATCH",
    "TOO_MANY_PODS",
    "UNREACHABLE_TAINT",
    "UNSCHEDULABLE",
    "UNSCHEDULABLE_TAINT",
    "UNTOLERATED_TAINT",
    "NodeStatus",
    "allocatable",
    "filter_node",
    "is_ready",
    "matches_node_selector",
    "requirement_holds",
    "scheduling_taints",
    "tolerates",
]

NOT_READY_TAINT: Final = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT: Final = "node.kubernetes.io/unreachable"
UNSCHEDULABLE_TAINT: Final = "node.kubernetes.io/unschedulable"
UNSCHEDULABLE: Final = "node(s) were unschedulable"
UNTOLERATED_TAINT: Final = "node(s) had untolerated taint(s)"
SELECTOR_MISMATCH: Final = "node(s) didn't match Pod's node affinity/selector"
TOO_MANY_PODS: Final = "Too many pods"
_BLOCKING_EFFECTS: Final = ("NoSchedule", "NoExecute")


def allocatable(node: Obj) -> Resources:
    """What the scheduler may place on ``node`` (its ``status.allocatable``, as integers)."""
    status = node.get("status") or {}
    return amounts(status.get("allocatable") or status.get("capacity"))


def is_ready(node: Obj) -> bool:
    for condition in (node.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False


def _ready_status(node: Obj) -> str:
    for condition in (node.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Ready":
            return str(condition.get("status") or "Unknown")
    return "Unknown"


def scheduling_taints(node: Obj) -> list[Obj]:
    """The node's taints as the scheduler meets them on a real cluster.

    The node lifecycle controller taints a node whose Ready condition is False
    (``not-ready``) or Unknown (``unreachable``), and a cordoned one (``unschedulable``), with
    effect NoSchedule; those taints are added here when the stored node lacks them.
    """
    taints = [t for t in (node.get("spec") or {}).get("taints") or () if isinstance(t, dict)]
    present = {(t.get("key"), t.get("effect")) for t in taints}
    added: list[Obj] = []
    ready = _ready_status(node)
    if ready != "True":
        added.append({"key": NOT_READY_TAINT if ready == "False" else UNREACHABLE_TAINT, "effect": "NoSchedule"})
    if (node.get("spec") or {}).get("unschedulable"):
        added.append({"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"})
    return taints + [t for t in added if (t["key"], t["effect"]) not in present]


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


def matches_node_selector(pod_spec: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """``nodeSelector`` and required node affinity (its terms ORed, expressions ANDed)."""
    if any(labels.get(k) != v for k, v in (pod_spec.get("nodeSelector") or {}).items()):
        return False
    required = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if not required:
        return True
    return any(
        all(requirement_holds(e, labels) for e in term.get("matchExpressions") or ())
        for term in required.get("nodeSelectorTerms") or ()
    )


def requirement_holds(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """Whether ``labels`` meet one requirement of a node selector term or a label selector
    (``In``, ``NotIn``, ``Exists``, ``DoesNotExist``; a node selector's ``Gt`` and ``Lt`` too)."""
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
    if not matches_node_selector(pod_spec, (node.get("metadata") or {}).get("labels") or {}):
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
