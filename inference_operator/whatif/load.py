"""A snapshot put into a simulation: the cluster as it was, converged, before the change.

Why this exists: the change must meet the rollout state the cluster is in, and the simplest
honest way to get there is the way the cluster got there. The snapshot's Nodes register, the
pods of other workloads are created bound to their nodes (holding their requests), then the
InferenceServices are applied as a user applied them, and the simulated operator and cluster
make their Deployments, ReplicaSets and pods up to Ready — with the scheduler trying first,
for each new pod of a service, a node the snapshot shows that service's pods on
(:attr:`~inference_operator.sim.cluster.scheduler.Scheduler.placement`), so the service holds
the same GPUs on the same nodes. The operator then sees a service it made itself, converged,
and the change is a template change of a running rollout state, as on the real cluster.
Loading the snapshot's Deployments and pods as they are was the alternative; it would make
the operator meet children whose field ownership was stripped (managedFields cannot be
created), a first pass that may write before the change, and pods the simulated kubelet
never started. Pods of other workloads still waiting are created last, Pending: they compete
for what the rollout frees, as they would.
"""

from __future__ import annotations

from collections import Counter

from inference_operator.api.constants import KIND, OWNER_LABEL
from inference_operator.core.errors import ApiError
from inference_operator.core.objects import Obj, key_of
from inference_operator.demo import ManifestRefused, refusal
from inference_operator.sim import Simulation
from inference_operator.sim.cluster import podstate
from inference_operator.whatif.snapshot import Snapshot

__all__ = ["load_snapshot"]


class _Slots:
    """The nodes a snapshot shows each service's pods on, handed out one pod at a time."""

    def __init__(self, placements: dict[str, Counter[str]]) -> None:
        self._left = {key: Counter(nodes) for key, nodes in placements.items()}

    def take(self, pod: Obj) -> str | None:
        meta = pod["metadata"]
        left = self._left.get(key_of(meta["namespace"], str((meta.get("labels") or {}).get(OWNER_LABEL) or "")))
        node = next((n for n in sorted(left) if left[n] > 0), None) if left else None
        if left is not None and node is not None:
            left[node] -= 1
        return node


def load_snapshot(sim: Simulation, snapshot: Snapshot) -> list[str]:
    """Load ``snapshot`` into ``sim`` (a simulated cluster without nodes) and run it until the
    services converged; returns lines saying how the loaded state compares with the snapshot.

    :class:`ManifestRefused` naming the snapshot file when the API server refuses an object."""
    cluster = sim.cluster
    for namespace in snapshot.namespaces:
        if sim.get("Namespace", "", namespace) is None:
            sim.api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    for node in snapshot.nodes:
        _create(sim, node, snapshot.source, manager="kubelet")
    for pod in snapshot.bound:
        _create(sim, pod, snapshot.source, manager="kubectl")
    cluster.scheduler.placement = _Slots(snapshot.placements).take
    try:
        for service in snapshot.services:
            try:
                sim.apply(service)
            except ApiError as err:
                raise ManifestRefused(refusal(err, service, snapshot.source)) from None
        sim.run_until_quiescent()
    finally:
        cluster.scheduler.placement = None
    for pod in snapshot.waiting:
        _create(sim, pod, snapshot.source, manager="kubectl")
    sim.run_until_quiescent(until=sim.now)
    return [
        *(_compared(sim, service, snapshot) for service in snapshot.services),
        *(_waited(sim, pod) for pod in snapshot.waiting),
    ]


def _waited(sim: Simulation, pod: Obj) -> str:
    """One line: a pod the snapshot shows waiting, and whether the simulated scheduler placed it."""
    meta = pod["metadata"]
    now = sim.get("Pod", meta["namespace"], meta["name"]) or {}
    node = (now.get("spec") or {}).get("nodeName")
    key = key_of(meta["namespace"], meta["name"])
    if node:
        return f"{key}: Pending in the snapshot, bound to {node} at once here (what kept it waiting is not modelled)"
    scheduled = podstate.condition(now, "PodScheduled") or {}
    return f"{key}: Pending, as in the snapshot: {scheduled.get('message') or 'not scheduled yet'}"


def _create(sim: Simulation, obj: Obj, source: str, *, manager: str) -> None:
    try:
        sim.api.create(obj, field_manager=manager)
    except ApiError as err:
        raise ManifestRefused(refusal(err, obj, source)) from None


def _compared(sim: Simulation, service: Obj, snapshot: Snapshot) -> str:
    """One line: the service as loaded (phase, ready, nodes), and where it differs from the snapshot."""
    meta = service["metadata"]
    key = key_of(meta["namespace"], meta["name"])
    status = (sim.get(KIND, meta["namespace"], meta["name"]) or {}).get("status") or {}
    pods = sim.api.list("Pod", meta["namespace"], label_selector=f"{OWNER_LABEL}={meta['name']}")
    nodes = Counter(str(p["spec"]["nodeName"]) for p in pods if (p.get("spec") or {}).get("nodeName"))
    line = (
        f"{key}: {status.get('phase')} {status.get('readyReplicas') or 0}/{service['spec'].get('replicas', 1)} "
        f"on {_placed(nodes)}"
    )
    wanted = snapshot.placements.get(key, Counter())
    if nodes == wanted:
        return line + ", as in the snapshot"
    return line + f"; the snapshot shows its pods on {_placed(wanted)}"


def _placed(nodes: Counter[str]) -> str:
    return ", ".join(f"{n} x{c}" if c > 1 else n for n, c in sorted(nodes.items()) if c) or "no node"
