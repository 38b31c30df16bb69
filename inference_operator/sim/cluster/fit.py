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
from collections.abc import Callable, Mapping, Sequence
from typing import Final

from inference_operator.core.nodefit import NodeStatus, allocatable
from inference_operator.core.objects import Obj
from inference_operator.core.resources import Resources

__all__ = [
    "NO_NODES",
    "choose_node",
    "feasible_nodes_to_find",
    "fit_error",
    "node_score",
    "scored_resources",
]


NO_VICTIMS: Final = "No preemption victims found for incoming pod"
NOT_HELPFUL: Final = "Preemption is not helpful for scheduling"
NO_CLAIMS: Final = "no new claims to deallocate"
NO_NODES: Final = "no nodes available to schedule pods"
_AVAILABLE: Final = "0/{} nodes are available:"


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
    candidates: Sequence[Obj],
    requests: Resources,
    used: Mapping[str, Resources],
    pods: Mapping[str, int],
    *,
    capacity_of: Callable[[Obj], Resources] = allocatable,
) -> Obj:
    """The least allocated of the nodes that fit (mean fraction of cpu, memory and the
    resources the pod asks for, after placing it); ties go to the node with fewer pods (the
    real scheduler counts pods without requests as 100m cpu and 200Mi), then by name.
    ``capacity_of`` is a node's allocatable (the scheduler passes the one it parsed once per
    version of the node: parsing every candidate's quantities for every pod was a tenth of
    the scheduler's time)."""
    names = scored_resources(requests)

    def score(node: Obj) -> tuple[float, int, str]:
        name = str(node["metadata"]["name"])
        return node_score(name, capacity_of(node), used.get(name, {}), pods.get(name, 0), requests, names)

    return min(candidates, key=score)


def scored_resources(requests: Resources) -> list[str]:
    """The resources a pod's placement is scored on: cpu, memory and whatever it asks for."""
    return sorted({"cpu", "memory", *requests} - {"pods"})


def node_score(
    name: str, capacity: Resources, held: Resources, pods_on_node: int, requests: Resources, names: Sequence[str]
) -> tuple[float, int, str]:
    """:func:`choose_node`'s key for one node (lowest wins): the mean allocated fraction of the
    ``names`` resources after placing the pod, then the pods on the node, then its name."""
    fractions = [(held.get(r, 0) + requests.get(r, 0)) / capacity[r] for r in names if capacity.get(r, 0) > 0]
    return (sum(fractions) / len(fractions) if fractions else 0.0, pods_on_node, name)
