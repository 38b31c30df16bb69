"""GPU pools a scenario brings, and what the scenario observes of their scheduling.

A GPU scenario needs nodes of its own shape on both backends, and on the shared e2e control
plane they must stay out of every other test's way. So each scenario's nodes form a *pool*:
every node carries the label :data:`POOL_LABEL` and the ``NoSchedule`` taint :data:`POOL_TAINT`,
both valued with the pool's id (the scenario's namespace on the cluster), and the scenario's
InferenceService asks for exactly that pool (:func:`placement`: a node selector and a
toleration). No other pod tolerates the taint, no scenario pod lands anywhere else, and the
world deletes the nodes afterwards. The cluster's other nodes are part of the picture all the
same: kube-scheduler counts every node in its message (``0/4 nodes are available: …``), so the
simulator is given a layout mirroring them (:func:`shape_of_node`) before the pool is added.

What is observed, per step, beyond what every scenario observes (``observe.py``):

- ``replicaSets``: the sequence of the Deployment's ReplicaSets' ``spec.replicas``, one token
  per change (``r1=2 r2=1``, by revision), consecutive repeats collapsed. Each write of the
  Deployment controller changes one ReplicaSet, and what it writes next depends only on what it
  has observed, so the sequence is the same on both backends however fast pods start;
- ``pods``: at the end of the step, the pods bound, counted per node (its name within the pool)
  and revision, and the pods Pending, each with its revision and the scheduler's message, byte
  for byte. Terminating pods are left out: how long one lingers after its deletion is the
  kubelet's pace (kwok deletes at once), not the scheduler's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from inference_operator.api.constants import GPU_RESOURCE
from inference_operator.sim.cluster.nodes import NodeShape

Obj = dict[str, Any]
POOL_LABEL: Final = "scenarios.inference-operator.dev/pool"
POOL_TAINT: Final = "scenarios.inference-operator.dev/pool"
REVISION: Final = "deployment.kubernetes.io/revision"


def pool_node(shape: NodeShape, *, pool: str, name: str) -> NodeShape:
    """``shape`` as a member of ``pool``: named ``name``, with the pool's label and taint."""
    taint = {"key": POOL_TAINT, "value": pool, "effect": "NoSchedule"}
    return replace(shape, name=name, labels={**shape.labels, POOL_LABEL: pool}, taints=[*shape.taints, taint])


def placement(pool: str) -> Obj:
    """The spec fields that put an InferenceService's pods on ``pool`` and nowhere else."""
    toleration = {"key": POOL_TAINT, "operator": "Equal", "value": pool, "effect": "NoSchedule"}
    return {"nodeSelector": {POOL_LABEL: pool}, "tolerations": [toleration]}


def shape_of_node(node: Obj) -> NodeShape:
    """The :class:`NodeShape` of a stored Node: what the scheduler reads of it."""
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    spec = node.get("spec") or {}
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (node.get("status") or {}).get("conditions") or []
    )
    return NodeShape(
        name=node["metadata"]["name"],
        cpu=str(allocatable.get("cpu", "0")),
        memory=str(allocatable.get("memory", "0")),
        gpus=int(allocatable.get(GPU_RESOURCE, 0)),
        pods=int(allocatable.get("pods", 0)),
        labels=dict(node["metadata"].get("labels") or {}),
        taints=[{k: str(v) for k, v in t.items() if k in ("key", "value", "effect")} for t in spec.get("taints") or []],
        ready=ready,
        unschedulable=bool(spec.get("unschedulable")),
    )


def _revision(rs: Obj) -> str:
    return "r" + str((rs["metadata"].get("annotations") or {}).get(REVISION, "?"))


def replicaset_token(replicasets: Iterable[Obj]) -> str:
    """``r1=2 r2=1``: each ReplicaSet's ``spec.replicas``, by revision."""
    ordered = sorted(replicasets, key=lambda rs: (len(_revision(rs)), _revision(rs)))
    return " ".join(f"{_revision(rs)}={rs['spec'].get('replicas', 1)}" for rs in ordered)


class ReplicaSetSequence:
    """Folds watch events of a namespace's ReplicaSets into the tokens of their replica counts."""

    def __init__(self) -> None:
        self._live: dict[str, Obj] = {}
        self._last: str | None = None

    def take(self, events: Iterable[tuple[str, Obj]]) -> list[str]:
        """The tokens these events (``ADDED``/``MODIFIED``/``DELETED``, in order) show, collapsed
        against each other and against the last token of the previous call."""
        out: list[str] = []
        for kind, rs in events:
            name = rs["metadata"]["name"]
            if kind == "DELETED":
                self._live.pop(name, None)
            else:
                self._live[name] = rs
            token = replicaset_token(self._live.values())
            if token != self._last:
                out.append(token)
                self._last = token
        return out


def pods_summary(pods: Sequence[Obj], replicasets: Sequence[Obj], *, node_names: Mapping[str, str]) -> Obj:
    """Bound pods per node and revision, Pending pods with the scheduler's words (see above);
    ``node_names`` maps a node's stored name to its name in the pool."""
    revision_of = {rs["metadata"]["name"]: _revision(rs) for rs in replicasets}
    bound: dict[str, dict[str, int]] = {}
    pending: list[Obj] = []
    for pod in pods:
        if pod["metadata"].get("deletionTimestamp"):
            continue
        owner = next((r["name"] for r in pod["metadata"].get("ownerReferences") or [] if r.get("controller")), "")
        revision = revision_of.get(owner, "r?")
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            per_node = bound.setdefault(node_names.get(node, node), {})
            per_node[revision] = per_node.get(revision, 0) + 1
            continue
        message = None
        for cond in (pod.get("status") or {}).get("conditions") or []:
            if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
                message = cond.get("message")
        pending.append({"revision": revision, "message": message})
    pending.sort(key=lambda p: (p["revision"], str(p["message"])))
    return {"bound": {node: bound[node] for node in sorted(bound)}, "pending": pending}
