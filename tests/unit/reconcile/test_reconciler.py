"""The reconciler on the simulator: convergence, idempotence, deletion, drift, failures.

Covers: create converges (finalizer, children, load balancer, Ready); a converged object
costs zero writes per pass; a stale cache gives Conflict, then success after a re-read;
drift on the Deployment (replicas, image) and a deleted Service are repaired; deletion
releases the load balancer before the finalizer goes, children are garbage-collected; a
release failing twice keeps the finalizer with growing backoff, then completes; an invalid
spec written past admission gives Ready=False/InvalidSpec with no child and no hot loop; a
storm of 1,000 events for one key gives one reconcile; a foreign child with our name is not
touched; disabling the load balancer releases it; the reconciler never mutates the cache; a pod
diagnosis that found nothing is asked again at the next resync; one that found a server still
starting is asked again soon (a crash loop then shows, though the Deployment never moved); new
words of the scheduler for a pending pod (a node joined) reach status at once, with one LIST,
though the Deployment never moved, and words that did not change cost no LIST; a LIST behind the
Pod cache is looked at again once, within seconds; one that keeps disagreeing is not polled.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from inference_operator.api.constants import (
    DEPLOYMENT,
    FINALIZER,
    KIND,
    OWNER_LABEL,
    SERVICE,
    EventReason,
    Phase,
    Reason,
)
from inference_operator.api.samples import make_inference_service
from inference_operator.core.clock import format_timestamp
from inference_operator.core.errors import Conflict
from inference_operator.core.jsoncopy import deep_copy
from inference_operator.sim import Simulation
from inference_operator.sim.cluster.nodes import NodeShape, build_node

from .pastadmission import past_admission

NS, NAME, KEY = "default", "llama", "default/llama"


def llama(*, image: str = "vllm:0.6.3", replicas: int = 2, **spec: Any) -> dict[str, Any]:
    return make_inference_service(NAME, image=image, model="Llama-3", replicas=replicas, **spec)


def converged(**spec: Any) -> Simulation:
    sim = Simulation(ready_after=5.0)
    sim.apply(llama(**spec))
    sim.run_until_quiescent()
    return sim


def isvc(sim: Simulation) -> dict[str, Any]:
    obj = sim.get(KIND, NS, NAME)
    assert obj is not None
    return obj


def cond(sim: Simulation, type_: str) -> dict[str, Any]:
    return next(c for c in isvc(sim)["status"]["conditions"] if c["type"] == type_)


def image_of(sim: Simulation) -> str:
    dep = sim.get(DEPLOYMENT, NS, NAME)
    assert dep is not None
    return str(dep["spec"]["template"]["spec"]["containers"][0]["image"])


def test_create_converges_to_ready_with_children_finalizer_and_load_balancer() -> None:
    sim = converged()
    obj = isvc(sim)
    assert obj["metadata"]["finalizers"] == [FINALIZER]
    assert obj["status"]["phase"] == Phase.READY and obj["status"]["readyReplicas"] == 2
    assert cond(sim, "Ready")["status"] == "True"
    assert sim.get(DEPLOYMENT, NS, NAME) is not None and sim.get(SERVICE, NS, NAME) is not None
    assert list(sim.lb.registrations) == [KEY] and sim.lb.register_calls == [KEY]
    assert obj["status"]["url"] == sim.lb.registrations[KEY].address
    assert sim.now == 5.0


def test_a_new_object_converges_in_five_writes() -> None:
    sim = converged()
    # finalizer, Service, Deployment, status while rolling out, status when Ready
    assert sim.backend.writes == 5
    assert sim.lb.register_calls == [KEY]
    created, ready = sim.events
    assert (created.reason, ready.reason) == (EventReason.CREATED, EventReason.READY)
    assert created.message.startswith("Created Deployment llama and Service llama; registered llama.default.svc")


def test_status_says_so_when_the_deployment_controller_never_answers() -> None:
    sim = Simulation(deployment_controller=False)
    sim.apply(llama())
    sim.run_until_quiescent(until=20.0)
    assert "status" not in isvc(sim) or not isvc(sim)["status"], "held while the controller may still answer"
    sim.run_until_quiescent(until=40.0)
    ready = cond(sim, "Ready")
    assert (ready["status"], ready["reason"]) == ("False", Reason.DEPLOYMENT_NOT_OBSERVED)
    assert isvc(sim)["status"]["phase"] == Phase.PENDING


def test_a_converged_object_costs_zero_writes_per_pass() -> None:
    sim = converged()
    writes = sim.api.writes
    for _ in range(3):
        sim.reconciler.reconcile(NS, NAME)
    sim.controller.enqueue(KEY)
    assert sim.run_until_quiescent() == 1
    assert sim.api.writes == writes
    assert sim.lb.register_calls == [KEY]


def test_a_stale_cache_conflicts_then_succeeds_after_a_reread() -> None:
    sim = Simulation()
    sim.apply(llama())
    sim.pump()
    sim.api.patch(KIND, NS, NAME, {"metadata": {"labels": {"team": "ml"}}})  # cache not pumped: stale
    with pytest.raises(Conflict):
        sim.reconciler.reconcile(NS, NAME)
    sim.controller.enqueue(KEY)
    assert sim.controller.step()  # the same Conflict, through the queue
    assert sim.controller.queue.num_requeues(KEY) == 1
    sim.run_until_quiescent()
    assert isvc(sim)["status"]["phase"] == Phase.READY
    assert sim.controller.reconcile_errors_total == 1


def test_scale_and_upgrade_patch_the_deployment_and_observe_generation_two() -> None:
    sim = converged()
    sim.apply(llama(replicas=4, image="vllm:0.7.0"))
    runs = sim.run_until_quiescent()
    obj = isvc(sim)
    assert obj["metadata"]["generation"] == 2 and obj["status"]["observedGeneration"] == 2
    assert image_of(sim) == "vllm:0.7.0" and obj["status"]["readyReplicas"] == 4
    # 25% maxSurge and maxUnavailable of 4 replicas: one pod each way, so two rounds of pod
    # starts (ready_after 5 s each) after the rollout began at 5 s.
    assert runs > 1 and sim.timeline[-1].time == 5.0 + 2 * 5.0, "ready two pod starts after the rollout began"
    assert any(e.reason == EventReason.PATCHED and "image" in e.message for e in sim.events)


def test_old_ready_pods_stay_ready_during_a_rollout() -> None:
    sim = converged()
    sim.apply(llama(replicas=4, image="vllm:0.7.0"))
    sim.run_until_quiescent(until=7.0)
    status = isvc(sim)["status"]
    assert status["readyReplicas"] == 2 and status["phase"] == Phase.PROGRESSING
    assert cond(sim, "Ready")["status"] == "False" and cond(sim, "Progressing")["status"] == "True"


def test_drift_on_deployment_replicas_and_image_is_repaired() -> None:
    sim = converged(replicas=3)
    sim.api.patch(DEPLOYMENT, NS, NAME, {"spec": {"replicas": 99}})
    sim.run_until_quiescent()
    dep = sim.get(DEPLOYMENT, NS, NAME)
    assert dep is not None and dep["spec"]["replicas"] == 3
    dep["spec"]["template"]["spec"]["containers"][0]["image"] = "evil:latest"
    sim.api.update(dep)
    sim.run_until_quiescent()
    assert image_of(sim) == "vllm:0.6.3"
    assert isvc(sim)["status"]["phase"] == Phase.READY


def test_a_deleted_service_is_recreated() -> None:
    sim = converged()
    old_uid = sim.api.get(SERVICE, NS, NAME)["metadata"]["uid"]
    sim.delete(SERVICE, NS, NAME)
    sim.run_until_quiescent()
    svc = sim.get(SERVICE, NS, NAME)
    assert svc is not None and svc["metadata"]["uid"] != old_uid
    assert any(e.reason == EventReason.RECREATED and "Service" in e.message for e in sim.events)
    assert cond(sim, "Ready")["status"] == "True"


def test_delete_releases_the_load_balancer_then_children_are_collected() -> None:
    sim = converged()
    sim.delete(KIND, NS, NAME)
    sim.run_until_quiescent()
    assert sim.get(KIND, NS, NAME) is None
    assert sim.get(DEPLOYMENT, NS, NAME) is None and sim.get(SERVICE, NS, NAME) is None
    assert sim.lb.release_calls == [KEY] and not sim.lb.registrations


def test_a_failing_release_keeps_the_finalizer_and_backs_off_until_it_succeeds() -> None:
    sim = converged()
    sim.lb.fail_next_releases(2)
    sim.delete(KIND, NS, NAME)
    start = sim.now
    sim.run_until_quiescent(until=start)  # first attempt only
    obj = isvc(sim)
    assert obj["metadata"]["deletionTimestamp"] and obj["metadata"]["finalizers"] == [FINALIZER]
    assert obj["status"]["phase"] == Phase.TERMINATING
    assert "finalizer stays" in cond(sim, "LoadBalancerReady")["message"]
    assert sim.get(DEPLOYMENT, NS, NAME) is not None
    sim.run_until_quiescent()
    assert sim.get(KIND, NS, NAME) is None and not sim.lb.registrations
    assert sim.lb.release_calls == [KEY, KEY, KEY]
    attempts = [e.time for e in sim.timeline if "release" in e.text]
    gaps = [b - a for a, b in itertools.pairwise(attempts)]
    assert gaps == pytest.approx([0.005, 0.010]), "backoff doubles between attempts"


def test_an_invalid_spec_past_admission_is_reported_without_touching_children() -> None:
    sim = Simulation()
    bad = llama(replicas=-3)
    bad["spec"]["gpu"] = 99
    with past_admission(sim.api):  # stored before the CRD had these bounds
        sim.apply(bad)
    runs = sim.run_until_quiescent(max_steps=50)
    obj = isvc(sim)
    ready = cond(sim, "Ready")
    assert (ready["status"], ready["reason"]) == ("False", Reason.INVALID_SPEC)
    assert "spec.replicas" in ready["message"] and "spec.gpu" in ready["message"]
    assert obj["status"]["phase"] == Phase.FAILED and obj["status"]["observedGeneration"] == 1
    assert sim.get(DEPLOYMENT, NS, NAME) is None and sim.get(SERVICE, NS, NAME) is None
    assert runs <= 3, "no hot loop"
    assert [e.reason for e in sim.events] == [EventReason.INVALID_SPEC]
    sim.apply(llama())  # fixed
    sim.run_until_quiescent()
    assert isvc(sim)["status"]["phase"] == Phase.READY


def test_an_event_storm_for_one_key_gives_one_reconcile() -> None:
    sim = converged()
    for i in range(1000):
        sim.api.patch(KIND, NS, NAME, {"metadata": {"annotations": {"touch": str(i)}}})
    assert sim.run_until_quiescent() == 1


def test_a_child_controlled_by_someone_else_is_not_touched() -> None:
    sim = Simulation()
    foreign = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": NAME, "namespace": NS},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "x"}},
            "template": {
                "metadata": {"labels": {"app": "x"}},
                "spec": {"containers": [{"name": "c", "image": "theirs"}]},
            },
        },
    }
    sim.api.create(foreign)
    sim.apply(llama())
    sim.run_until_quiescent(until=1.0)
    assert image_of(sim) == "theirs"
    assert cond(sim, "Ready")["reason"] == Reason.CHILD_CONFLICT
    assert "not controlled by this InferenceService" in cond(sim, "Ready")["message"]
    sim.delete(DEPLOYMENT, NS, NAME)
    sim.run_until_quiescent()
    assert image_of(sim) == "vllm:0.6.3" and isvc(sim)["status"]["phase"] == Phase.READY


def test_disabling_the_load_balancer_releases_it_and_stays_ready() -> None:
    sim = converged()
    sim.apply(llama(loadBalancer={"enabled": False}))
    sim.run_until_quiescent()
    assert not sim.lb.registrations and sim.lb.release_calls == [KEY]
    assert cond(sim, "LoadBalancerReady")["reason"] == Reason.LOAD_BALANCER_DISABLED
    assert isvc(sim)["status"]["phase"] == Phase.READY and "loadBalancer" not in isvc(sim)["status"]


def test_a_failing_registration_is_reported_and_retried() -> None:
    sim = Simulation()
    sim.lb.fail_next_registers(1)
    sim.apply(llama())
    sim.run_until_quiescent()
    assert list(sim.lb.registrations) == [KEY] and len(sim.lb.register_calls) == 2
    assert any(e.reason == EventReason.LB_FAILED for e in sim.events)
    assert isvc(sim)["status"]["phase"] == Phase.READY


def test_unschedulable_pods_are_explained_then_fail_after_the_progress_deadline() -> None:
    sim = Simulation(gpus_per_node=8, nodes=2)
    sim.apply(llama(gpu=16, progressDeadlineSeconds=60))
    sim.run_until_quiescent(until=30.0)
    assert isvc(sim)["status"]["phase"] == Phase.PENDING
    ready = cond(sim, "Ready")
    assert ready["reason"] == Reason.PODS_UNSCHEDULABLE
    assert "2 pod(s) cannot be scheduled: 0/2 nodes are available: 2 Insufficient nvidia.com/gpu" in ready["message"]
    sim.run_until_quiescent()
    assert isvc(sim)["status"]["phase"] == Phase.FAILED
    assert cond(sim, "Progressing")["reason"] == Reason.PROGRESS_DEADLINE_EXCEEDED
    assert "rollout made no progress for 60s" in cond(sim, "Ready")["message"]
    assert "Insufficient nvidia.com/gpu" in cond(sim, "Ready")["message"]
    assert [e.reason for e in sim.events].count(EventReason.FAILED) == 1


def test_the_reconciler_never_mutates_the_cache() -> None:
    sim = Simulation()
    sim.apply(llama())
    sim.pump()
    cached = sim.informers[KIND].get(NS, NAME)
    snapshot = deep_copy(cached)
    sim.reconciler.reconcile(NS, NAME)
    assert cached == snapshot


def test_a_missing_inference_service_is_nothing_to_do() -> None:
    sim = Simulation()
    assert sim.reconciler.reconcile(NS, "ghost").requeue_after is None
    assert sim.api.writes == 0


def test_a_pod_diagnosis_that_found_nothing_is_asked_again_at_the_next_resync() -> None:
    sim = Simulation(ready_after=100_000.0)  # the pods never become ready here
    waiting: dict[str, Any] = {"reason": "ContainerCreating"}
    pod = {"metadata": {"name": "p"}, "status": {"containerStatuses": [{"image": "i", "state": {"waiting": waiting}}]}}
    sim.backend.pods_source = lambda _ns, _selector: [pod]
    sim.apply(llama())
    sim.run_until_quiescent(until=60.0)
    assert cond(sim, "DeploymentReady")["reason"] != Reason.IMAGE_PULL_FAILED
    waiting.update(reason="ImagePullBackOff", message="pull access denied")  # the Deployment's status stays
    sim.run_until_quiescent(until=120.0)
    assert cond(sim, "DeploymentReady")["reason"] != Reason.IMAGE_PULL_FAILED, "no LIST without a reason"
    sim.resync()
    sim.run_until_quiescent(until=180.0)
    assert cond(sim, "DeploymentReady")["reason"] == Reason.IMAGE_PULL_FAILED


def test_a_server_still_starting_is_looked_at_again_and_a_crash_loop_then_shows_without_a_resync() -> None:
    sim = Simulation(ready_after=100_000.0)  # the pods never become ready here
    container: dict[str, Any] = {"name": "server", "ready": False, "started": False, "state": {"running": {}}}
    pod = {"metadata": {"name": "p"}, "status": {"containerStatuses": [container]}}
    sim.backend.pods_source = lambda _ns, _selector: [pod]
    sim.apply(llama())
    sim.run_until_quiescent(until=60.0)
    assert cond(sim, "Ready")["reason"] == Reason.SERVER_STARTING
    assert isvc(sim)["status"]["phase"] == Phase.PROGRESSING
    # It crashes instead of finishing its load: the Deployment's status does not move.
    container.update(restartCount=1, lastState={"terminated": {"exitCode": 3, "reason": "Error"}})
    sim.run_until_quiescent(until=100.0)
    assert cond(sim, "Ready")["reason"] == Reason.SERVER_STARTING  # once: it may come up this time
    assert "running again after exiting with code 3 (Error)" in cond(sim, "Ready")["message"]
    container.update(restartCount=2)
    sim.run_until_quiescent(until=140.0)
    assert cond(sim, "Ready")["reason"] == Reason.CRASH_LOOPING
    assert "container server exited with code 3 (Error), restarted 2 times" in cond(sim, "Ready")["message"]
    assert isvc(sim)["status"]["phase"] == Phase.PENDING


def pool_full_with_one_pending() -> tuple[Simulation, list[str]]:
    """Three replicas of 8 GPUs on two nodes of 8, settled: one pod Pending, diagnosed; and the
    LISTs of pods the operator sends from now on."""
    sim = Simulation(gpus_per_node=8, nodes=2)
    lists: list[str] = []
    source = sim.backend.pods_source
    sim.backend.pods_source = lambda ns, selector: lists.append(selector) or source(ns, selector)
    sim.apply(llama(replicas=3, gpu=8))
    sim.run_until_quiescent(until=60.0)
    words = "1 pod(s) cannot be scheduled: 0/2 nodes are available: 2 Insufficient nvidia.com/gpu"
    assert words in cond(sim, "Ready")["message"]
    lists.clear()
    return sim, lists


def a_small_node_joins(sim: Simulation) -> None:
    """A node the pending pod fits no better: the scheduler's words change, nothing else does."""
    small = build_node(NodeShape("small", gpus=4), now=format_timestamp(sim.clock.wall()))
    sim.api.create(small, field_manager="kubelet")


NEW_WORDS = "1 pod(s) cannot be scheduled: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu"


def test_new_scheduler_words_for_a_pending_pod_reach_status_at_once_though_the_deployment_stays_put() -> None:
    sim, lists = pool_full_with_one_pending()
    sim.controller.enqueue(KEY)  # a pass with the same words: the diagnosis holds, no LIST
    sim.run_until_quiescent(until=120.0)
    assert sim.reconciles_by_key[KEY] and lists == []
    deployment = sim.get(DEPLOYMENT, NS, NAME)["metadata"]["resourceVersion"]  # type: ignore[index]
    passes = sim.reconciles_by_key[KEY]
    a_small_node_joins(sim)
    sim.run_until_quiescent(until=sim.now + 1.0)
    assert sim.get(DEPLOYMENT, NS, NAME)["metadata"]["resourceVersion"] == deployment  # type: ignore[index]
    assert NEW_WORDS in cond(sim, "Ready")["message"], "status says what the scheduler says now"
    assert len(lists) == 1 and sim.reconciles_by_key[KEY] == passes + 1


def test_a_list_behind_the_pod_cache_is_looked_at_again_once_then_left_to_events() -> None:
    sim, lists = pool_full_with_one_pending()
    answers = [sim.cluster.pods(NS, f"{OWNER_LABEL}={NAME}")]  # what another API server still says, once
    sim.backend.pods_source = lambda ns, selector: (
        lists.append(selector) or (answers.pop() if answers else sim.cluster.pods(ns, selector))
    )
    a_small_node_joins(sim)
    sim.run_until_quiescent(until=sim.now + 1.0)
    assert NEW_WORDS not in cond(sim, "Ready")["message"] and len(lists) == 1, "the LIST was behind"
    sim.run_until_quiescent(until=sim.now + 10.0)
    assert NEW_WORDS in cond(sim, "Ready")["message"] and len(lists) == 2, "looked again, within 5 s"
    passes = sim.reconciles_by_key[KEY]
    sim.run_until_quiescent(until=sim.now + 120.0)
    assert sim.reconciles_by_key[KEY] == passes and len(lists) == 2, "settled: no polling"


def test_a_list_that_keeps_disagreeing_with_the_pod_cache_is_not_polled() -> None:
    sim, lists = pool_full_with_one_pending()
    stale = sim.cluster.pods(NS, f"{OWNER_LABEL}={NAME}")
    sim.backend.pods_source = lambda _ns, selector: lists.append(selector) or stale
    a_small_node_joins(sim)
    sim.run_until_quiescent(until=sim.now + 600.0)
    assert len(lists) == 2, "the LIST, then one look again"
