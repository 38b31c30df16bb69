"""The demo's four scenarios (``inference_operator.demo``), written against a World: create →
Ready; scale + upgrade; delete → released once, children collected; drift (the Deployment scaled
by hand, the Service deleted by hand)."""

from __future__ import annotations

from inference_operator.api.constants import KIND, SERVICE, Phase

from .common import NAME, READY, check, created, deployment_of, llama, ready_with, scenario
from .observe import DELETED, PROGRESSING
from .world import World


@scenario("create")
def create(world: World) -> None:
    s = created(world, replicas=2)
    check(s.isvc is not None and s.isvc["status"]["phase"] == Phase.READY, "phase Ready")


@scenario("scale-upgrade")
def scale_upgrade(world: World) -> None:
    created(world, replicas=2)
    world.apply(llama(replicas=4, image="vllm/vllm-openai:v0.7.0"))
    s = world.settle("scaled to 4 and upgraded", NAME, ready_with(4), what="generation 2 Ready with 4 replicas")
    dep = deployment_of(s)
    check(dep["image"] == "vllm/vllm-openai:v0.7.0" and dep["replicas"] == 4, f"Deployment patched, got {dep}")
    check(s.isvc is not None and s.isvc["status"]["observedGeneration"] == 2, "observedGeneration 2")
    step = world.observation.steps[-1]
    check(step.transitions == [PROGRESSING, READY], f"un-Ready while rolling out, got {step.transitions}")
    check(step.lb_calls == {}, f"no load balancer call, got {step.lb_calls}")


@scenario("delete")
def delete(world: World) -> None:
    created(world, replicas=2)
    world.delete(KIND, NAME)
    world.settle("deleted", NAME, lambda s: s.gone and not s.registered, what="the object and its children gone")
    step = world.observation.steps[-1]
    check(step.transitions == [DELETED], f"deleted without a status change, got {step.transitions}")
    check(step.lb_calls == {"release": 1}, f"released exactly once, got {step.lb_calls}")


@scenario("drift")
def drift(world: World) -> None:
    created(world, replicas=3)
    world.scale_deployment(NAME, 99)
    s = world.settle(
        "Deployment scaled to 99 by hand",
        NAME,
        lambda s: s.deployment is not None and s.deployment["spec"]["replicas"] == 3 and ready_with(3)(s),
        what="replicas corrected back to 3",
    )
    old_uid = (s.service or {})["metadata"]["uid"]
    world.delete(SERVICE, NAME)
    s = world.settle(
        "Service deleted by hand",
        NAME,
        lambda s: s.service is not None and s.service["metadata"]["uid"] != old_uid and ready_with(3)(s),
        what="the Service recreated",
    )
    check(world.observation.steps[-1].lb_calls == {}, "the record outlives its Service being recreated")
