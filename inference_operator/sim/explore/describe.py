"""The settled world in a few lines, for the report of a broken invariant.

A shrunk sequence says how the cluster got there; this says where it is: each InferenceService
with its generations and Ready condition, the children, the balancer's records, each node
(GPUs held of allocatable, taints) and each pod (where it runs or why it does not).
"""

from __future__ import annotations

from inference_operator.api.constants import DEPLOYMENT, GPU_RESOURCE, KIND, SERVICE
from inference_operator.core.nodefit import allocatable
from inference_operator.core.objects import Obj
from inference_operator.core.resources import pod_requests
from inference_operator.sim.cluster import podstate
from inference_operator.sim.simulation import Simulation

__all__ = ["describe"]


def describe(sim: Simulation) -> str:
    lines = [f"t={sim.now:.1f}s restarts={sim.restarts}"]
    for obj in sim.api.list(KIND):
        status = obj.get("status") or {}
        ready: Obj = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), {})
        meta = obj["metadata"]
        lines.append(
            f"  {KIND} {meta['name']} gen={meta.get('generation')} observed={status.get('observedGeneration')} "
            f"deleting={bool(meta.get('deletionTimestamp'))} "
            f"Ready={ready.get('status')}/{ready.get('reason')}: {ready.get('message')!r}"
        )
    for kind in (DEPLOYMENT, SERVICE):
        names = [o["metadata"]["name"] for o in sim.api.list(kind)]
        lines.append(f"  {kind}s: {names}")
    lines.append(f"  balancer: { {k: (r.id, r.target) for k, r in sim.lb.registrations.items()} }")
    lines.extend(_cluster(sim))
    return "\n".join(lines)


def _cluster(sim: Simulation) -> list[str]:
    pods = sim.api.list("Pod")
    held: dict[str, int] = {}
    for pod in pods:
        if podstate.node_of(pod) and not podstate.is_terminal(pod):
            on = podstate.node_of(pod)
            held[on] = held.get(on, 0) + pod_requests(pod.get("spec") or {}).get(GPU_RESOURCE, 0)
    lines = []
    for node in sim.api.list("Node"):
        name = str(node["metadata"]["name"])
        taints = [f"{t.get('key')}:{t.get('effect')}" for t in (node.get("spec") or {}).get("taints") or []]
        gpus = allocatable(node).get(GPU_RESOURCE, 0)
        lines.append(f"  Node {name}: {held.get(name, 0)}/{gpus} GPUs held, taints {taints}")
    for pod in pods:
        scheduled = podstate.condition(pod, "PodScheduled") or {}
        where = podstate.node_of(pod) or f"unscheduled: {str(scheduled.get('message') or '')[:100]!r}"
        terminating = " terminating" if podstate.is_terminating(pod) else ""
        phase = (pod.get("status") or {}).get("phase")
        lines.append(f"  Pod {pod['metadata']['name']} {phase}{terminating} ready={podstate.is_ready(pod)} {where}")
    return lines
