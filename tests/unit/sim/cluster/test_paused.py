"""A paused Deployment (``kubectl rollout pause``) in the simulated cluster, and what the operator
says of it, on the fake clock.

Covers: pausing sets the Deployment's ``Progressing`` condition to Unknown ``DeploymentPaused``
and resuming to Unknown ``DeploymentResumed``, as kube-controller-manager's
``checkPausedConditions`` does; a template change while paused makes no new ReplicaSet, but a
scale still resizes the old one; a paused rollout never passes its progress deadline, however
long it waits, and a resumed one counts its deadline from the resumption; resuming rolls out.
The InferenceService says ``RolloutPaused`` with the command that lets it go on, and goes Ready
once resumed; a paused Deployment with nothing to roll out stays Ready.
"""

from __future__ import annotations

from typing import Any

from inference_operator.api.samples import make_inference_service
from inference_operator.sim.simulation import Simulation

Obj = dict[str, Any]


def serve(sim: Simulation, *, image: str = "vllm:0.6.3", replicas: int = 2) -> None:
    sim.apply(make_inference_service("llama", image=image, model="m", replicas=replicas, gpu=1))
    sim.run_until_quiescent(until=sim.now + 300)


def deployment(sim: Simulation) -> Obj:
    found = sim.get("Deployment", "default", "llama")
    assert found is not None
    return found


def progressing(sim: Simulation) -> Obj:
    return next(c for c in deployment(sim)["status"]["conditions"] if c["type"] == "Progressing")


def ready(sim: Simulation) -> Obj:
    found = sim.get("InferenceService", "default", "llama")
    assert found is not None
    return next(c for c in found["status"]["conditions"] if c["type"] == "Ready")


def pause(sim: Simulation, paused: bool) -> None:
    sim.api.patch("Deployment", "default", "llama", {"spec": {"paused": paused}}, field_manager="kubectl-rollout")
    sim.run_until_quiescent(until=sim.now + 1)


def replicasets(sim: Simulation) -> dict[str, int]:
    return {
        rs["spec"]["template"]["spec"]["containers"][0]["image"]: rs["spec"]["replicas"]
        for rs in sim.api.list("ReplicaSet", "default")
    }


def test_pausing_and_resuming_set_progressing_to_unknown_with_the_real_reasons() -> None:
    sim = Simulation()
    serve(sim)
    watch = sim.api.watch("Deployment", "default")
    pause(sim, True)
    cond = progressing(sim)
    assert (cond["status"], cond["reason"], cond["message"]) == ("Unknown", "DeploymentPaused", "Deployment is paused")
    pause(sim, False)
    seen = [
        (c["status"], c["reason"], c["message"])
        for event in watch.drain()
        for c in (event.object.get("status") or {}).get("conditions") or ()
        if c["type"] == "Progressing"
    ]
    resumed = ("Unknown", "DeploymentResumed", "Deployment is resumed")
    assert resumed in seen
    # Nothing was left to roll out: complete again right after, as the real controller's next sync says.
    assert seen[-1][:2] == ("True", "NewReplicaSetAvailable") and seen.index(resumed) < len(seen) - 1


def test_a_paused_deployment_with_nothing_to_roll_out_stays_ready() -> None:
    sim = Simulation()
    serve(sim)
    pause(sim, True)
    assert ready(sim)["status"] == "True"


def test_a_template_change_while_paused_waits_and_says_so_then_rolls_out_on_resume() -> None:
    sim = Simulation()
    serve(sim)
    pause(sim, True)
    serve(sim, image="vllm:0.7.0")
    assert replicasets(sim) == {"vllm:0.6.3": 2}  # no new ReplicaSet while paused
    cond = ready(sim)
    assert (cond["status"], cond["reason"]) == ("False", "RolloutPaused")
    assert "0 of 2 replicas updated, 2 ready: the Deployment is paused" in cond["message"]
    assert "kubectl rollout resume deployment/llama -n default" in cond["message"]
    pause(sim, False)
    sim.run_until_quiescent(until=sim.now + 300)
    assert replicasets(sim) == {"vllm:0.6.3": 0, "vllm:0.7.0": 2}
    assert ready(sim)["status"] == "True"


def test_a_scale_while_paused_resizes_the_old_replicaset() -> None:
    sim = Simulation()
    serve(sim)
    pause(sim, True)
    serve(sim, image="vllm:0.7.0", replicas=3)
    assert replicasets(sim) == {"vllm:0.6.3": 3}
    assert deployment(sim)["status"]["replicas"] == 3


def test_a_paused_rollout_never_passes_its_progress_deadline() -> None:
    sim = Simulation()
    serve(sim)
    pause(sim, True)
    serve(sim, image="vllm:0.7.0")
    sim.clock.set(sim.now + 4 * 3600)  # far past progressDeadlineSeconds (1800)
    sim.resync()
    sim.run_until_quiescent(until=sim.now + 60)
    assert progressing(sim)["reason"] == "DeploymentPaused"
    assert ready(sim)["reason"] == "RolloutPaused"


def test_a_resumed_rollout_counts_its_deadline_from_the_resumption() -> None:
    sim = Simulation()
    serve(sim)
    pause(sim, True)
    serve(sim, image="vllm:0.7.0")
    sim.clock.set(sim.now + 4 * 3600)  # paused far longer than progressDeadlineSeconds (1800)
    pause(sim, False)
    sim.run_until_quiescent(until=sim.now + 300)
    assert progressing(sim)["reason"] == "NewReplicaSetAvailable"
    assert ready(sim)["status"] == "True"
