"""Status computation: honest conditions and a phase derived from them.

Covers: Ready only when rolled out + all replicas ready + Service + load balancer; each
sub-condition's reasons; Degraded only after having been Ready at the same generation (a
scale-up is Progressing, not Degraded); progress deadline → Failed; lastTransitionTime kept
unless the status flips; the same observation always yields the same status; invalid spec;
pod problems in a person's words (unschedulable, image pull, a container the kubelet cannot
create such as runAsNonRoot with a root image, a crash loop naming the container, its exit
code and restarts, also when looked at between back-offs, while the container runs again), and a
server still loading behind its startup probe (Progressing, not a problem).
"""

from __future__ import annotations

from typing import Any

from inference_operator.api.constants import Phase, Reason
from inference_operator.api.models import InferenceService
from inference_operator.api.samples import make_inference_service
from inference_operator.core.ports import Registration
from inference_operator.reconcile.podproblems import pod_problem
from inference_operator.reconcile.status import (
    DeploymentView,
    LoadBalancerState,
    compute_status,
    invalid_spec_status,
)

REG = LoadBalancerState("registered", Registration("lb-1", "http://lb/llama", "llama.default.svc.cluster.local:8000"))
SVC = {"metadata": {"name": "llama"}}


def isvc(replicas: int = 2, generation: int = 1) -> InferenceService:
    obj = make_inference_service("llama", image="vllm", model="m", replicas=replicas)
    obj["metadata"].update(uid="u", generation=generation)
    return InferenceService.from_object(obj)


def dep(
    *, gen: int = 1, observed: int = 1, replicas: int = 2, updated: int = 2, ready: int = 2, deadline: bool = False
) -> dict[str, Any]:
    conditions = (
        [
            {
                "type": "Progressing",
                "status": "False",
                "reason": "ProgressDeadlineExceeded",
                "message": "ReplicaSet timed out",
            }
        ]
        if deadline
        else []
    )
    return {
        "metadata": {"generation": gen},
        "status": {
            "observedGeneration": observed,
            "replicas": replicas,
            "updatedReplicas": updated,
            "readyReplicas": ready,
            "conditions": conditions,
        },
    }


def cond(status: dict[str, Any], type_: str) -> dict[str, Any]:
    return next(c for c in status["conditions"] if c["type"] == type_)


def compute(
    obj: InferenceService,
    deployment: Any,
    previous: Any = None,
    service: Any = SVC,
    lb: LoadBalancerState = REG,
    now: str = "2026-01-01T00:00:00Z",
) -> dict[str, Any]:
    return compute_status(obj, previous or {}, DeploymentView.of(deployment), service, lb, now=now)


def test_ready_when_rolled_out_all_ready_service_exists_and_registered() -> None:
    st = compute(isvc(), dep())
    assert cond(st, "Ready")["status"] == "True" and st["phase"] == Phase.READY
    assert st["readyReplicas"] == 2 and st["observedGeneration"] == 1
    assert st["url"] == "http://lb/llama" and st["loadBalancer"]["id"] == "lb-1"
    assert st["selector"] == "serving.inference-operator.dev/inferenceservice=llama"


def test_not_ready_while_the_deployment_has_not_observed_the_new_spec() -> None:
    st = compute(isvc(), dep(gen=2, observed=1))
    assert cond(st, "Ready")["reason"] == Reason.DEPLOYMENT_NOT_OBSERVED
    assert cond(st, "Progressing")["status"] == "True"


def test_not_ready_while_old_replicas_still_run() -> None:
    st = compute(isvc(), dep(replicas=3, updated=2, ready=3))
    assert cond(st, "DeploymentReady")["reason"] == Reason.ROLLOUT_IN_PROGRESS
    assert "1 old replicas still running" in cond(st, "DeploymentReady")["message"]


def test_not_ready_without_service_or_load_balancer() -> None:
    assert (
        cond(compute(isvc(), dep(), service=None, lb=LoadBalancerState("waiting")), "Ready")["reason"]
        == Reason.SERVICE_MISSING
    )
    failed = LoadBalancerState("failed", message="registry down")
    st = compute(isvc(), dep(), lb=failed)
    assert cond(st, "Ready")["status"] == "False" and cond(st, "Ready")["message"] == "registry down"
    assert cond(st, "LoadBalancerReady")["reason"] == Reason.LOAD_BALANCER_FAILED


def test_disabled_load_balancer_does_not_block_ready() -> None:
    st = compute(isvc(), dep(), lb=LoadBalancerState("disabled"))
    assert cond(st, "Ready")["status"] == "True"
    assert st["url"] == "http://llama.default.svc.cluster.local:8000" and "loadBalancer" not in st


def test_fresh_object_with_no_ready_pod_is_pending_then_progressing() -> None:
    assert compute(isvc(), dep(ready=0, replicas=2, updated=2))["phase"] == Phase.PENDING
    assert compute(isvc(), dep(ready=1, replicas=2, updated=2))["phase"] == Phase.PROGRESSING


def test_scale_up_after_ready_is_progressing_not_degraded() -> None:
    ready_before = compute(isvc(2, generation=1), dep())
    st = compute(isvc(4, generation=2), dep(gen=2, observed=2, replicas=4, updated=4, ready=2), ready_before)
    assert st["phase"] == Phase.PROGRESSING and cond(st, "Degraded")["status"] == "False"


def test_fewer_ready_replicas_at_the_same_generation_is_degraded() -> None:
    ready_before = compute(isvc(), dep())
    st = compute(isvc(), dep(ready=1), ready_before)
    assert st["phase"] == Phase.DEGRADED
    assert cond(st, "Degraded")["reason"] == Reason.FEWER_READY_REPLICAS
    again = compute(isvc(), dep(ready=0), st)
    assert again["phase"] == Phase.DEGRADED
    recovered = compute(isvc(), dep(), again)
    assert recovered["phase"] == Phase.READY and cond(recovered, "Degraded")["status"] == "False"


def test_a_pod_lost_before_its_replacement_exists_is_degraded_not_a_rollout() -> None:
    """A node removed: the pod garbage collector deleted its pod, the ReplicaSet has not made
    the replacement yet, so the Deployment counts 1 updated replica of 2 and no old one."""
    ready_before = compute(isvc(), dep())
    gap = compute(isvc(), dep(replicas=1, updated=1, ready=1), ready_before)
    assert gap["phase"] == Phase.DEGRADED and cond(gap, "Degraded")["status"] == "True"
    replaced = compute(isvc(), dep(replicas=2, updated=2, ready=1), gap)
    assert replaced["phase"] == Phase.DEGRADED, "the latch holds until every replica is ready again"
    assert compute(isvc(), dep(), replaced)["phase"] == Phase.READY
    rolling = compute(isvc(), dep(replicas=3, updated=1, ready=2), ready_before)
    assert cond(rolling, "Degraded")["status"] == "False", "old pods left: a rollout, not a loss"


def test_progress_deadline_exceeded_is_failed() -> None:
    st = compute(isvc(), dep(ready=0, updated=0, deadline=True))
    assert st["phase"] == Phase.FAILED
    assert cond(st, "Progressing") | {} == {
        **cond(st, "Progressing"),
        "status": "False",
        "reason": Reason.PROGRESS_DEADLINE_EXCEEDED,
    }
    assert "ReplicaSet timed out" in cond(st, "Ready")["message"]


def test_scaled_to_zero_is_ready() -> None:
    st = compute(isvc(replicas=0), dep(replicas=0, updated=0, ready=0))
    assert cond(st, "Ready")["status"] == "True" and cond(st, "DeploymentReady")["reason"] == Reason.SCALED_TO_ZERO


def test_last_transition_time_moves_only_when_status_flips() -> None:
    first = compute(isvc(), dep(ready=0), now="2026-01-01T00:00:00Z")
    second = compute(isvc(), dep(ready=1), first, now="2026-01-01T00:00:05Z")
    assert cond(second, "Ready")["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    third = compute(isvc(), dep(), second, now="2026-01-01T00:00:10Z")
    assert cond(third, "Ready")["lastTransitionTime"] == "2026-01-01T00:00:10Z"
    assert cond(third, "Ready")["observedGeneration"] == 1


def test_same_observation_gives_the_same_status() -> None:
    first = compute(isvc(), dep(), now="2026-01-01T00:00:00Z")
    assert compute(isvc(), dep(), first, now="2026-01-01T01:00:00Z") == first


def test_invalid_spec_status_keeps_other_conditions_and_fails() -> None:
    ok = compute(isvc(), dep())
    st = invalid_spec_status(ok, generation=2, message="spec.replicas: bad", now="2026-01-01T00:01:00Z")
    assert st["phase"] == Phase.FAILED and st["observedGeneration"] == 2
    assert cond(st, "Ready") | {} == {
        **cond(st, "Ready"),
        "status": "False",
        "reason": Reason.INVALID_SPEC,
        "message": "spec.replicas: bad",
    }
    assert cond(st, "DeploymentReady") == cond(ok, "DeploymentReady")


def pod(**status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p"}, "status": status}


def test_pods_the_api_server_refuses_are_named_with_its_words_and_need_a_person() -> None:
    refused = dep(ready=0, updated=0, replicas=0)
    refused["status"]["conditions"].append(
        {
            "type": "ReplicaFailure",
            "status": "True",
            "reason": "FailedCreate",
            "message": 'pods "llama-1" is forbidden: violates PodSecurity "restricted:latest": runAsNonRoot != true',
        }
    )
    st = compute(isvc(), refused)
    assert cond(st, "DeploymentReady")["reason"] == Reason.PODS_REFUSED
    assert cond(st, "Ready")["reason"] == Reason.PODS_REFUSED
    assert cond(st, "Ready")["message"] == (
        '0 of 2 replicas ready; the API server refuses the pods: pods "llama-1" is forbidden: '
        'violates PodSecurity "restricted:latest": runAsNonRoot != true'
    )
    assert st["phase"] == Phase.FAILED
    refused["status"]["conditions"][-1]["status"] = "False"  # the cause was fixed
    assert cond(compute(isvc(), refused), "Ready")["reason"] != Reason.PODS_REFUSED


def test_pod_problems_name_the_cause_unschedulable_first() -> None:
    unschedulable = pod(
        conditions=[
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.",
            }
        ]
    )
    pulling = pod(
        containerStatuses=[
            {
                "image": "vllm:nope",
                "state": {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image vllm:nope"}},
            }
        ]
    )
    crashing = pod(
        containerStatuses=[
            {
                "name": "server",
                "restartCount": 2,
                "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}},
            }
        ]
    )
    problem = pod_problem([pulling, unschedulable, crashing])
    assert problem is not None and problem.reason == Reason.PODS_UNSCHEDULABLE
    assert problem.message == "1 pod(s) cannot be scheduled: 0/2 nodes are available: 2 Insufficient nvidia.com/gpu."
    problem = pod_problem([crashing, pulling])
    assert problem is not None and problem.reason == Reason.IMAGE_PULL_FAILED and "vllm:nope" in problem.message
    problem = pod_problem([crashing])
    assert problem is not None and problem.reason == Reason.CRASH_LOOPING
    assert problem.message == "1 pod(s) keep crashing: container server exited with code 1 (Error), restarted 2 times"
    assert pod_problem([pod(phase="Running")]) is None


def test_a_container_the_kubelet_cannot_create_is_explained_in_the_kubelets_words() -> None:
    message = 'container has runAsNonRoot and image will run as root (pod: "a-1_apps(u)", container: server)'
    refused = pod(
        containerStatuses=[
            {"name": "server", "state": {"waiting": {"reason": "CreateContainerConfigError", "message": message}}}
        ]
    )
    crashing = pod(containerStatuses=[{"name": "server", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}])
    problem = pod_problem([crashing, refused])
    assert problem is not None and problem.reason == Reason.CONTAINER_CONFIG_ERROR
    assert problem.message == f"1 pod(s) cannot start: container server: {message}"
    st = compute_status(
        isvc(), {}, DeploymentView.of(dep(ready=0)), SVC, REG, now="2026-01-01T00:00:00Z", problem=problem
    )
    assert cond(st, "Ready")["status"] == "False"
    assert cond(st, "Ready")["message"] == f"0 of 2 replicas ready; 1 pod(s) cannot start: container server: {message}"


def test_a_pod_problem_explains_a_deployment_that_is_not_ready() -> None:
    problem = pod_problem([pod(containerStatuses=[{"state": {"waiting": {"reason": "ErrImagePull", "message": "x"}}}])])
    st = compute(isvc(), dep(ready=0))
    assert cond(st, "Ready")["reason"] == Reason.REPLICAS_UNAVAILABLE
    st = compute_status(
        isvc(), {}, DeploymentView.of(dep(ready=0)), SVC, REG, now="2026-01-01T00:00:00Z", problem=problem
    )
    assert cond(st, "Ready")["reason"] == Reason.IMAGE_PULL_FAILED
    assert cond(st, "Ready")["message"].startswith("0 of 2 replicas ready; 1 pod(s) cannot pull the image")


def test_a_crash_loop_looked_at_between_back_offs_is_still_a_crash_loop() -> None:
    # The kubelet runs the container again after each back-off: a look at that moment sees it
    # running, not ready, restarted after a failed exit. The diagnosis is kept while the
    # Deployment stays put (a crash loop never moves it), so it must not read as "no problem".
    between = pod(
        containerStatuses=[
            {
                "name": "server",
                "ready": False,
                "started": False,
                "restartCount": 1,
                "state": {"running": {"startedAt": "2026-01-01T00:00:10Z"}},
                "lastState": {"terminated": {"exitCode": 3, "reason": "Error"}},
            }
        ]
    )
    problem = pod_problem([between])
    # After one failed exit, loading again behind its startup probe, it may yet come up.
    assert problem is not None and problem.reason == Reason.SERVER_STARTING
    assert problem.message == (
        "1 pod(s) still starting: container server is running again after exiting with code 3 (Error), "
        "its startup probe has not passed yet (the server is loading the model)"
    )
    between["status"]["containerStatuses"][0]["restartCount"] = 2  # a second failure: a loop
    problem = pod_problem([between])
    assert problem is not None and problem.reason == Reason.CRASH_LOOPING
    assert problem.message == "1 pod(s) keep crashing: container server exited with code 3 (Error), restarted 2 times"
    between["status"]["containerStatuses"][0].update(restartCount=1, started=True)  # no startup probe left
    problem = pod_problem([between])
    assert problem is not None and problem.reason == Reason.CRASH_LOOPING
    recovered = pod(
        containerStatuses=[
            {
                "name": "server",
                "ready": True,
                "started": True,
                "restartCount": 1,
                "state": {"running": {}},
                "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}},
            }
        ]
    )
    assert pod_problem([recovered]) is None


def test_a_server_loading_behind_its_startup_probe_is_progressing_and_says_so() -> None:
    loading = pod(
        containerStatuses=[
            {"name": "server", "ready": False, "started": False, "restartCount": 0, "state": {"running": {}}}
        ]
    )
    problem = pod_problem([loading])
    assert problem is not None and problem.reason == Reason.SERVER_STARTING
    st = compute_status(
        isvc(replicas=1), {}, DeploymentView.of(dep(ready=0, replicas=1, updated=1)), SVC, REG, now="t", problem=problem
    )
    assert cond(st, "Ready")["status"] == "False" and cond(st, "Ready")["reason"] == Reason.SERVER_STARTING
    assert cond(st, "Ready")["message"] == (
        "0 of 1 replicas ready; 1 pod(s) still starting: container server is running, "
        "its startup probe has not passed yet (the server is loading the model)"
    )
    assert cond(st, "Progressing")["status"] == "True"
    assert st["phase"] == Phase.PROGRESSING
    # Without a look at the pods (young rollout), nothing is running yet as far as status knows.
    assert compute(isvc(replicas=1), dep(ready=0, replicas=1, updated=1))["phase"] == Phase.PENDING
