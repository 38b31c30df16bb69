"""What the scenarios share: their registry, the manifests a user applies, the conditions a step
waits for, and the first step most of them begin with.

Each scenario acts as a user would, waits for what a user would wait for (``settle``), and checks
the outcome it expects itself, so two backends agreeing on a wrong outcome still fail. A step's
condition pins down the state it waits for (a stall *and* the pods that run despite it): both
worlds end a step as soon as it holds, so whatever it leaves open would be timing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from inference_operator.api.constants import DEPLOYMENT, KIND, SERVICE, Reason

from .observe import Snapshot
from .world import World

Obj = dict[str, Any]
Scenario = Callable[[World], None]
NAME: Final = "llama"
READY: Final = f"True/{Reason.READY}"
SCENARIOS: dict[str, Scenario] = {}
NEEDS_NODES: set[str] = set()
"""Scenarios that bring a GPU pool: on the simulator they need the simulated cluster (Nodes, a
scheduler, ReplicaSets and Pods), not the timer model of a Deployment controller."""

SIMULATOR_GAPS: Final[dict[str, str]] = {}
"""Scenarios whose simulator run is known to fail its own expectations, with the reason; the tests
mark them strict xfail, so the entry must go as soon as the simulator is fixed."""

BACKEND_DIFFERENCES: Final[dict[str, str]] = {}
"""Scenarios that meet their own expectations on both backends but are known to take different
paths there, with the reason; the e2e comparison is a strict xfail for them (the entry must go
as soon as the two agree)."""


ANY_PLACEMENT: Final[dict[str, str]] = {
    "gpu-rollout-auto-spare": "three identical nodes for two replicas: which node kube-scheduler leaves empty, and "
    "which old pod the ReplicaSet's scale-down picks, are ties it breaks at random; the simulator breaks them "
    "by name",
    "gpu-rollout-auto-switch": "four identical nodes for two replicas and two training pods: where each lands is a "
    "tie kube-scheduler breaks at random; the simulator breaks it by name",
    "gpu-freed-node-to-the-longest-waiting": "two identical nodes: which one the first replica lands on is a tie "
    "kube-scheduler breaks at random; the simulator breaks it by name",
}
"""Scenarios whose pods may land on any of several identical nodes, with the reason: they are
compared with the bound pods counted per node, node names left out (``placement_blind``)."""


def placement_blind(observation: list[Obj]) -> list[Obj]:
    """The observed steps with each step's bound pods as a sorted list of per-node counts."""
    steps = []
    for step in observation:
        pods = ((step.get("scheduling") or {}).get("pods")) or {}
        if "bound" in pods:
            counts = sorted((pods["bound"] or {}).values(), key=lambda n: sorted(n.items()))
            step = {**step, "scheduling": {**step["scheduling"], "pods": {**pods, "bound": counts}}}
        steps.append(step)
    return steps


def scenario(name: str, *, nodes: bool = False) -> Callable[[Scenario], Scenario]:
    """Register a scenario; ``nodes``: it brings a GPU pool (:data:`NEEDS_NODES`)."""

    def register(run: Scenario) -> Scenario:
        SCENARIOS[name] = run
        if nodes:
            NEEDS_NODES.add(name)
        return run

    return register


def llama(*, name: str = NAME, replicas: int = 2, image: str = "vllm/vllm-openai:v0.6.3", **spec: Any) -> Obj:
    """The InferenceService a user applies (no namespace: the world puts it in its own)."""
    return {
        "apiVersion": "serving.inference-operator.dev/v1",
        "kind": KIND,
        "metadata": {"name": name},
        "spec": {"image": image, "model": "meta-llama/Llama-3.1-8B", "replicas": replicas, "gpu": 1, **spec},
    }


def foreign_service(name: str) -> Obj:
    """What ``kubectl create service clusterip NAME --tcp=80:8080`` makes: not the operator's."""
    return {
        "apiVersion": "v1",
        "kind": SERVICE,
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "type": "ClusterIP",
            "selector": {"app": name},
            "ports": [{"name": "80-8080", "port": 80, "protocol": "TCP", "targetPort": 8080}],
        },
    }


def ready_with(replicas: int) -> Callable[[Snapshot], bool]:
    """Ready for the current generation, every replica ready, the record held and in status."""
    return lambda s: s.settled_ready and ready_replicas(s) == replicas and s.registered


def ready_replicas(s: Snapshot) -> int | None:
    return ((s.isvc or {}).get("status") or {}).get("readyReplicas")


def deployment_of(s: Snapshot) -> Obj:
    dep = s.children()[DEPLOYMENT]
    if dep is None:
        raise AssertionError("the Deployment does not exist")
    return dep


def ready_message(s: Snapshot) -> str:
    for cond in ((s.isvc or {}).get("status") or {}).get("conditions") or []:
        if cond["type"] == "Ready":
            return str(cond["message"])
    return ""


def check(ok: bool, what: str) -> None:
    if not ok:
        raise AssertionError(what)


def created(world: World, *, replicas: int = 2, **spec: Any) -> Snapshot:
    """The shared first step: applied, then Ready with every replica."""
    check(world.apply(llama(replicas=replicas, **spec)) is None, "the InferenceService was refused")
    s = world.settle("created", NAME, ready_with(replicas), what=f"Ready with {replicas} replicas")
    step = world.observation.steps[-1]
    check(step.transitions == [READY], f"Ready=True (a first Progressing is dropped), got {step.transitions}")
    check(step.lb_calls == {"register": 1}, f"registered once, got {step.lb_calls}")
    dep, svc = s.children()[DEPLOYMENT], s.children()[SERVICE]
    check(dep is not None and dep["replicas"] == replicas, f"Deployment with {replicas} replicas, got {dep}")
    check(svc is not None and svc["selector"] == {"serving.inference-operator.dev/inferenceservice": NAME}, str(svc))
    for child in (dep, svc):
        check(child is not None and child["ownerReferences"][0]["uid"] == "<owner>", f"owned: {child}")
    return s
