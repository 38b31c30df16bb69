"""A snapshot put into a simulation: the cluster as it was, before the change.

Why this exists: the change must meet the rollout state the cluster is in, and the simplest
honest way to get there is the way the cluster got there. The snapshot's Nodes register, the
pods of other workloads are created bound to their nodes (holding their requests), then the
InferenceServices are applied as a user applied them, and the simulated operator and cluster
make their Deployments, ReplicaSets and pods up to Ready — with the scheduler trying first,
for each new pod of a service, a node the snapshot shows that service's pods on
(:attr:`~inference_operator.sim.cluster.scheduler.Scheduler.placement`), so the service holds
the same GPUs on the same nodes. The operator then sees a service it made itself, and the
change is a template change of a running rollout state, as on the real cluster. A rollout
the snapshot caught in progress is reached the same way: the older ReplicaSets that still
hold replicas are created first, as they are, their pods put back on their nodes, and the
Deployment the operator makes adopts them, as kube-controller-manager adopts a ReplicaSet its
selector matches; its rollout then goes on, or stalls, as it did. Loading the snapshot's
Deployments and pods as they are was the alternative; it would make the operator meet
children whose field ownership was stripped (managedFields cannot be created), a first pass
that may write before the change, and pods the simulated kubelet never started. Pods of
other workloads still waiting are created last, Pending: they compete for what the rollout
frees, as they would.
"""

from __future__ import annotations

import math
from collections import Counter

from inference_operator.api.constants import KIND, OWNER_LABEL
from inference_operator.core.errors import ApiError
from inference_operator.core.objects import Obj, key_of
from inference_operator.demo import ManifestRefused, refusal
from inference_operator.reconcile.reconciler import STUCK_AFTER, STUCK_MARGIN
from inference_operator.sim import Simulation
from inference_operator.sim.apiserver.managedfields import GC_FIELD_MANAGER
from inference_operator.sim.cluster import podstate
from inference_operator.whatif.snapshot import Snapshot, service_of, template_hash

__all__ = ["load_snapshot"]


class _Slots:
    """The nodes a snapshot shows each service's pods on, handed out one pod at a time: a pod of
    an earlier template (a rollout in progress) gets one of its own ReplicaSet's nodes or none,
    never one the current template's pods were on."""

    def __init__(self, snapshot: Snapshot) -> None:
        self._left: dict[tuple[str, str], Counter[str]] = {
            (key, ""): Counter(nodes) for key, nodes in snapshot.placements.items()
        }
        self._left.update({template: Counter(nodes) for template, nodes in snapshot.earlier.items()})
        self._earlier = snapshot.earlier_templates

    def take(self, pod: Obj) -> str | None:
        template = _template_of(pod, self._earlier)
        left = self._left.get(template)
        node = next((n for n in sorted(left) if left[n] > 0), None) if left else None
        if left is not None and node is not None:
            left[node] -= 1
        return node


def _template_of(pod: Obj, earlier: set[tuple[str, str]]) -> tuple[str, str]:
    """(``namespace/name`` of the pod's InferenceService, its earlier template's hash, or "" for
    the current template)."""
    template = (service_of(pod), template_hash(pod))
    return template if template in earlier else (template[0], "")


def load_snapshot(sim: Simulation, snapshot: Snapshot) -> list[str]:
    """Load ``snapshot`` into ``sim`` (a simulated cluster without nodes) and run it until the
    services' pods are back and ready (a rollout in progress goes on, or stalls, as it would);
    returns lines saying how the loaded state compares with the snapshot.

    While the services' pods are put back, one the snapshot shows on no node waits (the
    scheduler holds it) until all the others are back: else it could take a node the snapshot
    shows another service's pods on, by being created first. Then, at the same moment (no time
    passes while it waits without the scheduler's words), it is placed where there is room, or
    left Pending.

    :class:`ManifestRefused` naming the snapshot file when the API server refuses an object."""
    cluster = sim.cluster
    for namespace in snapshot.namespaces:
        if sim.get("Namespace", "", namespace) is None:
            sim.api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    for node in snapshot.nodes:
        _create(sim, node, snapshot.source, manager="kubelet")
    for pod in snapshot.bound:
        _create(sim, pod, snapshot.source, manager="kubectl")
    cluster.scheduler.placement = _Slots(snapshot).take
    cluster.scheduler.holding = True
    try:
        for replicaset in snapshot.replicasets:  # ready before their Deployment adopts them, as they were
            _create(sim, replicaset, snapshot.source, manager=GC_FIELD_MANAGER)
        sim.run_until_quiescent()
        for service in snapshot.services:
            try:
                sim.apply(service)
            except ApiError as err:
                raise ManifestRefused(refusal(err, service, snapshot.source)) from None
        sim.run_until_quiescent(until=sim.now)  # every pod put back on its node, at this one moment
    finally:
        cluster.scheduler.release()
    _until_ready(sim)  # the pods held: placed where there is room now, or left Pending
    for pod in snapshot.waiting:
        _create(sim, pod, snapshot.source, manager="kubectl")
    sim.run_until_quiescent(until=sim.now)
    return [
        *(_compared(sim, service, snapshot) for service in snapshot.services),
        *(_waited(sim, pod) for pod in snapshot.waiting),
    ]


def _until_ready(sim: Simulation) -> None:
    """Run until the pods bound now are ready and the operator would call a rollout that made
    no progress since stuck, and say why; not beyond: a rollout stalled in the snapshot stalls
    here too, and its progress deadline is not made to pass before the change (the snapshot
    cannot say how long it had been stalled: here, just that long)."""
    wait = sim.cluster.kubelet.start_seconds + STUCK_AFTER.total_seconds() + STUCK_MARGIN
    sim.run_until_quiescent(until=math.ceil(sim.now + wait))  # a whole second: timestamps have no fraction


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
    """One line: the service as loaded (phase, ready, nodes, pods on none), and where it differs
    from the snapshot, template by template (an earlier ReplicaSet's pods, the current one's)."""
    meta = service["metadata"]
    key = key_of(meta["namespace"], meta["name"])
    status = (sim.get(KIND, meta["namespace"], meta["name"]) or {}).get("status") or {}
    pods = sim.api.list("Pod", meta["namespace"], label_selector=f"{OWNER_LABEL}={meta['name']}")
    earlier = snapshot.earlier_templates
    placed: dict[tuple[str, str], Counter[str]] = {}
    waiting = 0
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            placed.setdefault(_template_of(pod, earlier), Counter())[str(node)] += 1
        elif podstate.is_active(pod):
            waiting += 1
    wanted = {(key, ""): snapshot.placements.get(key, Counter())}
    wanted.update({template: nodes for template, nodes in snapshot.earlier.items() if template[0] == key})
    ready: Obj = next((c for c in status.get("conditions") or () if c.get("type") == "Ready"), {})
    why = f" ({ready.get('reason')})" if ready.get("status") == "False" and ready.get("reason") else ""
    line = (
        f"{key}: {status.get('phase')}{why} {status.get('readyReplicas') or 0}/{service['spec'].get('replicas', 1)} "
        f"on {_placed(sum(placed.values(), Counter()), waiting)}"
    )
    same = all(placed.get(t, Counter()) == +n for t, n in wanted.items()) and set(placed) <= set(wanted)
    if same and waiting == snapshot.unplaced[key]:
        return line + ", as in the snapshot"
    return line + f"; the snapshot shows its pods on {_placed(sum(wanted.values(), Counter()), snapshot.unplaced[key])}"


def _placed(nodes: Counter[str], waiting: int = 0) -> str:
    placed = ", ".join(f"{n} x{c}" if c > 1 else n for n, c in sorted(nodes.items()) if c) or "no node"
    return f"{placed} and {waiting} Pending" if waiting else placed
